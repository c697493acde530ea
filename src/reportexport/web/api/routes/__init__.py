"""The HTTP API's routers, one per area; each handler translates one request into one call."""
