"""Announcements by e-mail: the message (`message.py`) and its sending over SMTP (`smtp.py`)."""
