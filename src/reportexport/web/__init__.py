"""The HTTP side: the JSON API and the dashboard, sharing their dependencies and problem answers."""
