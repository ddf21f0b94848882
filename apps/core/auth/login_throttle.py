"""The client address that login throttling (django-axes, see settings) counts failures against."""

from django.conf import settings


def client_address(request) -> str:
    """The connection's address; behind EVALSITE_TRUSTED_PROXY_COUNT reverse proxies, the address
    the outermost of them saw (X-Forwarded-For: each proxy appends the address it got the request
    from, so that entry is the count'th from the right; entries left of it are the client's say-so)."""
    proxies = settings.EVALSITE_TRUSTED_PROXY_COUNT
    remote = request.META.get("REMOTE_ADDR", "") or ""
    if proxies <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < proxies:
        return remote
    return forwarded[-proxies]
