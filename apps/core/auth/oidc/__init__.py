"""Single sign-on with OpenID Connect (mozilla-django-oidc), configured from the environment
(EVALSITE_OIDC_*; docs/configuration.md):

- `config`    the role map's parser and the highest-role rule, pure functions (settings.py uses the
              parser at start-up, so a bad map stops evalsite with a message naming the entry);
- `discovery` the provider's endpoints and signing keys, fetched from the configured issuer and cached;
- `backend`   the authentication backend: code exchange, id-token verification (RS256 against the
              provider's JWKS, audience, issuer, expiry, nonce), the user and their project roles;
- `services`  the writes at login: the user (by issuer and subject: core.SsoIdentity), the
              SSO-granted memberships;
- `views`     the login redirect and the callback (404 while SSO is off), and the guard that refuses
              password logins when EVALSITE_PASSWORD_LOGIN=0; `urls` mounts them under /oidc/.
"""
