"""The ways in: the command line, its remote client, `serve`, the demo data."""
