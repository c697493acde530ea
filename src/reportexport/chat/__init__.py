"""Announcements in chat: the message (`message.py`), sent to a channel's incoming webhook."""
