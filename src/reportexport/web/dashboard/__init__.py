"""The dashboard: server-rendered pages over the same services as the API.

`routes` (signing in, the exports' pages, the New export form), `schedules` (the schedules'
pages and "Schedule this"), `operators` (the operators' pages), `guards` (who may use a route,
said by its router: signed in, an operator, the session's CSRF token), `live` (the change feed
and its event streams), `session` (sessions, CSRF, flash messages), `ui` (layout, navigation,
problem pages, pagination, redirects with a flash), `forms` (a saved query's parameters as
form controls, and a schedule's part of the form), `format` (numbers, sizes, moments, values),
`pages` (pages other parts hand to browsers), `docs` (the API documentation, offline);
`static/` and `templates/` (`templates/operators/` for the operators' pages).
"""
