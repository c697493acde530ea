"""Signed webhooks (Standard Webhooks) sent only to destinations that pass the SSRF guard."""
