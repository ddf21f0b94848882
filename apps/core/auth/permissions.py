"""Who may do what: one scope per API method, and the scopes a request carries.

Every API view declares `required_scopes = {"GET": "read", "POST": "configure", …}`, one entry per
method it implements (tests/core/test_scopes.py walks the URLs and fails on a view without one).
The same `scopes_of(request)` answers for API keys, browser sessions (console, admin, browsable API)
and anonymous clients, so a page never offers what the API would refuse.
"""

from django.conf import settings
from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.core.models import DEFAULT_KEY_SCOPES, SCOPE_ADMIN, SCOPE_READ, ApiKey
from apps.core.projects.access import key_scopes
from apps.core.projects.resolution import request_access

# EVALSITE_ALLOW_ANONYMOUS means "a trusted network may use the non-destructive endpoints" and no
# more than it meant before scopes: never configuration, never destruction.
ANONYMOUS_SCOPES = frozenset(DEFAULT_KEY_SCOPES)


def scopes_of(request) -> frozenset[str]:
    """The scopes of a DRF or plain Django request in its project: its API key's (capped by the
    owner's role in the key's project as it is now), a session user's by their role in the project
    they act in (apps.core.projects.access), or the anonymous ones if allowed."""
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiKey):
        return key_scopes(auth)
    if auth is not None:
        return frozenset()  # credentials from an authenticator this module does not know grant nothing
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return request_access(request).scopes
    return ANONYMOUS_SCOPES if settings.EVALSITE_ALLOW_ANONYMOUS else frozenset()


def required_scope(view, method: str) -> str | None:
    """The scope `view` declares for `method`; None when the view does not implement the method
    (DRF then answers 405)."""
    declared = getattr(view, "required_scopes", None)
    method = "GET" if method == "HEAD" else method
    if declared is not None and method in declared:
        return declared[method]
    if method == "OPTIONS":
        return SCOPE_READ
    if not hasattr(view, method.lower()):
        return None
    # An undeclared method fails towards the safe side: reads need read, anything else admin.
    return SCOPE_READ if method in SAFE_METHODS else SCOPE_ADMIN


class ApiAccess(BasePermission):
    """The default for every endpoint: the request's scopes must include the one the view declares
    for the method. Without credentials DRF turns a refusal into 401 (there is a key to send);
    with them it is 403 naming the missing scope."""

    def has_permission(self, request, view):
        granted = scopes_of(request)
        scope = required_scope(view, request.method)
        if scope is None:
            return bool(granted)
        if scope in granted:
            return True
        holder = "API key" if isinstance(request.auth, ApiKey) else "account"
        self.message = f"This {holder} lacks the '{scope}' scope."
        return False
