"""The provider's endpoints and signing keys, from the configured issuer only.

The issuer is operator-configured (EVALSITE_OIDC_ISSUER, like OPENAI_BASE_URL), so these requests do
not go through the outbound guard (apps/core/outbound.py), which exists for addresses that anyone
with an API key can name; an identity provider on the company network (a private address) is the
usual case and the guard would refuse it. mozilla-django-oidc's own calls (token and userinfo, with
`requests`) go to endpoints this discovery document names, so they bypass the guard as well: we trust
the document because it comes from the issuer the operator named, and check that it names that issuer
and, for an https issuer, only https endpoints.

Fetched lazily and cached per process: evalsite starts, and manage.py runs, while the provider is
down; a failed fetch is not cached, so the next login tries again."""

import logging
import threading
import time
from dataclasses import dataclass

import httpx
from django.conf import settings

logger = logging.getLogger(__name__)

METADATA_TTL_SECONDS = 3600
# A token signed with a key we have not seen refetches the key set, at most this often: a provider
# rotating its keys is picked up at once, a stream of forged kids does not become a stream of fetches.
JWKS_REFRESH_MIN_SECONDS = 30
TIMEOUT_SECONDS = 10


class ProviderUnavailable(Exception):
    """The provider's metadata or keys could not be read. The message names the URL and what went
    wrong (status, network error), never a response body."""


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


_lock = threading.Lock()
_metadata: dict[str, tuple[float, ProviderMetadata]] = {}
_jwks: dict[str, tuple[float, dict]] = {}


def _get_json(url: str) -> dict:
    try:
        response = httpx.get(url, timeout=TIMEOUT_SECONDS, follow_redirects=False)
    except httpx.HTTPError as exc:
        raise ProviderUnavailable(f"{url}: {type(exc).__name__}") from None
    if response.status_code != 200:
        raise ProviderUnavailable(f"{url}: HTTP {response.status_code}")
    try:
        document = response.json()
    except ValueError:
        raise ProviderUnavailable(f"{url}: not JSON") from None
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url}: not a JSON object")
    return document


def _parse_metadata(issuer: str, document: dict) -> ProviderMetadata:
    # OpenID Connect Discovery 4.3: the document's issuer must be the one we asked, or tokens it
    # describes could claim any issuer.
    if document.get("issuer", "").rstrip("/") != issuer:
        raise ProviderUnavailable(f"discovery document names issuer {document.get('issuer')!r}, not {issuer!r}")
    fields = {}
    for name in ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri"):
        value = document.get(name)
        if not isinstance(value, str) or not value.startswith(("https://", "http://")):
            raise ProviderUnavailable(f"discovery document has no usable {name}")
        if issuer.startswith("https://") and not value.startswith("https://"):
            raise ProviderUnavailable(f"discovery document's {name} is not https")
        fields[name] = value
    return ProviderMetadata(issuer=issuer, **fields)


def provider_metadata() -> ProviderMetadata:
    issuer = settings.EVALSITE_OIDC_ISSUER
    now = time.monotonic()
    cached = _metadata.get(issuer)
    if cached and now - cached[0] < METADATA_TTL_SECONDS:
        return cached[1]
    with _lock:
        cached = _metadata.get(issuer)
        if cached and now - cached[0] < METADATA_TTL_SECONDS:
            return cached[1]
        metadata = _parse_metadata(issuer, _get_json(f"{issuer}/.well-known/openid-configuration"))
        _metadata[issuer] = (time.monotonic(), metadata)
        return metadata


def signing_keys(*, refresh: bool = False) -> list[dict]:
    """The provider's JSON Web Keys. `refresh` refetches them (a token named a key id we do not
    have), unless they were fetched within JWKS_REFRESH_MIN_SECONDS."""
    uri = provider_metadata().jwks_uri
    cached = _jwks.get(uri)
    if cached and not (refresh and time.monotonic() - cached[0] >= JWKS_REFRESH_MIN_SECONDS):
        if time.monotonic() - cached[0] < METADATA_TTL_SECONDS:
            return cached[1]["keys"]
    with _lock:
        document = _get_json(uri)
        if not isinstance(document.get("keys"), list):
            raise ProviderUnavailable(f"{uri}: no keys")
        _jwks[uri] = (time.monotonic(), document)
        return document["keys"]


def forget() -> None:
    """Drop the cached metadata and keys (tests that start another provider, or change the issuer)."""
    with _lock:
        _metadata.clear()
        _jwks.clear()
