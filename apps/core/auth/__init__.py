"""Who may do what: API-key and session authentication, scopes, login throttling, and the
encryption of credentials evalsite stores."""
