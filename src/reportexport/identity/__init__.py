"""The company's identity provider, spoken to over OpenID Connect (see `provider`)."""
