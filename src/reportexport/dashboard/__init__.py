"""The dashboard: server-rendered pages over the same services as the API.

`routes` (the pages), `live` (the change feed and its event streams), `session` (sessions, CSRF,
flash messages), `ui` (layout, navigation, problem pages, pagination), `forms` (a saved query's
parameters as form controls), `format` (numbers, sizes, moments, values), `pages` (pages other
parts hand to browsers), `docs` (the API documentation, offline); `static/` and `templates/`.
"""
