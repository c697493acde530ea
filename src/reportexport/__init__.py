"""reportexport: asynchronous CSV exports of saved queries on a frozen job lifecycle."""

__version__ = "0.1.0"
