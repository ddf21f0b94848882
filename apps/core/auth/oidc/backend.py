"""mozilla-django-oidc's backend, with what it leaves to the site:

- the endpoints come from the issuer's discovery document (discovery.py), not from settings;
- the id token is verified with RS256 only, against the provider's JWKS, and for this audience
  (our client id), this issuer, an unexpired `exp` and the nonce of this login (the library checks
  neither audience nor issuer);
- the userinfo answer must be about the id token's subject (OpenID Connect Core 5.3.2);
- users are found by (issuer, subject), never by e-mail: an e-mail address is something a user may
  be able to set at the provider, a subject is not (services.sso_user_for_claims);
- every failure is a refused login (the callback redirects to the login page), logged without the
  client secret, the tokens or a response body.

The library's token and userinfo requests use `requests` directly, not the outbound guard
(apps/core/outbound.py): their endpoints come from the operator-configured issuer's discovery
document, which is trusted as OPENAI_BASE_URL is (discovery.py says why and what is checked).
"""

import logging

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.views.decorators.debug import sensitive_variables
from mozilla_django_oidc.auth import OIDCAuthenticationBackend  # type: ignore[import-untyped]

from . import discovery

logger = logging.getLogger(__name__)

# Clocks of the provider and of evalsite may differ by this much.
CLOCK_LEEWAY_SECONDS = 30


class SsoRefused(Exception):
    """A login that must not succeed; the message is safe to log (no secret, token or body)."""


def describe_failure(exc: Exception) -> str:
    if isinstance(exc, requests.HTTPError) and exc.response is not None:
        # The library's message carries the token endpoint's answer; the status says enough.
        return f"the provider answered HTTP {exc.response.status_code}"
    if isinstance(exc, requests.RequestException):
        return f"the provider could not be reached ({type(exc).__name__})"
    if isinstance(exc, jwt.PyJWTError):
        return f"id token refused: {exc}"
    return str(exc) or type(exc).__name__


class OidcBackend(OIDCAuthenticationBackend):
    def __init__(self, *args, **kwargs):
        # The parent reads the endpoints from settings here; ours are properties (discovery).
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.OIDC_RP_CLIENT_SECRET
        self.OIDC_RP_SIGN_ALGO = "RS256"
        self.OIDC_RP_IDP_SIGN_KEY = None
        self.UserModel = get_user_model()

    @property
    def OIDC_OP_TOKEN_ENDPOINT(self):  # noqa: N802 (the library's name)
        return discovery.provider_metadata().token_endpoint

    @property
    def OIDC_OP_USER_ENDPOINT(self):  # noqa: N802
        return discovery.provider_metadata().userinfo_endpoint

    @property
    def OIDC_OP_JWKS_ENDPOINT(self):  # noqa: N802
        return discovery.provider_metadata().jwks_uri

    @sensitive_variables()
    def authenticate(self, request, **kwargs):
        # A password login passes username and password: not ours, even if its URL has ?code=&state=.
        if not settings.EVALSITE_SSO_ENABLED or "password" in kwargs or "nonce" not in kwargs:
            return None
        try:
            return super().authenticate(request, **kwargs)
        except (
            SsoRefused,
            SuspiciousOperation,
            discovery.ProviderUnavailable,
            requests.RequestException,
            jwt.PyJWTError,
            KeyError,
            ValueError,
        ) as exc:
            logger.warning("single sign-on refused: %s", describe_failure(exc))
            return None

    @sensitive_variables()
    def get_token(self, payload):
        return super().get_token(payload)

    def retrieve_matching_jwk(self, token):
        header = jwt.get_unverified_header(token)
        kid = header.get("kid")
        for refresh in (False, True):
            for key in discovery.signing_keys(refresh=refresh):
                if key.get("kty") != "RSA" or key.get("use", "sig") != "sig":
                    continue
                if key.get("alg", "RS256") != "RS256":
                    continue
                # A key set of one key may leave kid out; otherwise the token's kid picks the key.
                if kid is not None and key.get("kid") != kid:
                    continue
                return jwt.PyJWK(key, algorithm="RS256")
        raise SsoRefused("no RS256 signing key of the provider matches the id token's kid")

    def _verify_jws(self, payload, key):
        header = jwt.get_unverified_header(payload)
        if header.get("alg") != "RS256":
            raise SsoRefused(f"id token signed with {header.get('alg')!r}, not RS256")
        return jwt.decode(
            payload,
            key,
            algorithms=["RS256"],
            audience=self.OIDC_RP_CLIENT_ID,
            issuer=discovery.provider_metadata().issuer,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": ["exp", "iat", "iss", "aud", "sub"]},
        )

    def verify_token(self, token, **kwargs):
        # The library lets a token without a nonce through when none was expected; every login here
        # sends one, so a token must carry it (the parent compares them).
        if "nonce" in kwargs and not kwargs["nonce"]:
            raise SsoRefused("login without a nonce")
        return super().verify_token(token, **kwargs)

    def get_userinfo(self, access_token, id_token, payload):
        userinfo = super().get_userinfo(access_token, id_token, payload)
        if not isinstance(userinfo, dict) or userinfo.get("sub") != payload.get("sub"):
            raise SsoRefused("the userinfo answer is about another subject than the id token")
        # The id token's claims under the userinfo ones: some providers put groups only in the token.
        return {**payload, **userinfo}

    def get_user(self, user_id):
        # Each request's session user. The library's version returns inactive users too; Django's
        # ModelBackend does not, so deactivating someone ends their SSO sessions as it ends others.
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None

    def get_or_create_user(self, access_token, id_token, payload):
        from .services import has_project_access, sso_user_for_claims

        claims = self.get_userinfo(access_token, id_token, payload)
        user = sso_user_for_claims(issuer=discovery.provider_metadata().issuer, claims=claims)
        if user.is_active and not has_project_access(user):
            # The user row stays (committed above): a project admin can now add them by username, and
            # their next login goes through. The login page says why this one did not.
            self.request.sso_refusal = "no-project"
            raise SsoRefused(f"{user.username}: no project (no mapped group, no membership added by hand)")
        return user
