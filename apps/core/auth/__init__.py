"""Who may do what: API-key and session authentication, scopes, login throttling, single sign-on
(oidc/), and the encryption of credentials evalsite stores."""
