"""The services: the rules every entry point (API, dashboard, command line) goes through."""
