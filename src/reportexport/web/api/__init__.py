"""The HTTP API (FastAPI): saved queries, exports, downloads, problems as RFC 9457."""
