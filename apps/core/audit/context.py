"""Who is acting: the request being served (set by AuditContextMiddleware for its duration), or a
named system actor (audit_actor), or "system".

The request is kept, not its user: DRF authenticates inside the view, after every middleware has
run, and copies the user and the API key it found onto the Django request. Reading them when an
event is recorded sees the key that made the change."""

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from apps.core.models import ApiKey

SYSTEM = "system"


@dataclass(frozen=True)
class Actor:
    label: str  # "username", "key:<prefix>", "system", "anonymous" or a system actor's name
    user: Any = None  # the user model's instance
    key: ApiKey | None = None


_request: ContextVar[object | None] = ContextVar("audit_request", default=None)
_system_actor: ContextVar[str | None] = ContextVar("audit_system_actor", default=None)


def actor_of_request(request) -> Actor:
    raw = getattr(request, "_request", request)
    auth = getattr(raw, "auth", None)
    if isinstance(auth, ApiKey):
        return Actor(label=f"key:{auth.prefix}", user=auth.user, key=auth)
    user = getattr(raw, "user", None)
    if user is not None and user.is_authenticated:
        return Actor(label=user.get_username(), user=user)
    return Actor(label="anonymous")


def current_request():
    return _request.get()


def current_actor() -> Actor:
    request = _request.get()
    if request is not None:
        return actor_of_request(request)
    return Actor(label=_system_actor.get() or SYSTEM)


@contextlib.contextmanager
def audit_request(request):
    token = _request.set(request)
    try:
        yield
    finally:
        _request.reset(token)


@contextlib.contextmanager
def audit_actor(name: str):
    """Record what happens inside as done by `name` (e.g. "manage.py create_api_key")."""
    token = _system_actor.set(name)
    try:
        yield
    finally:
        _system_actor.reset(token)


class AuditContextMiddleware:
    """Makes the request the audit trail's actor for the duration of the request. After
    AuthenticationMiddleware, so a console or admin session's user is there."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with audit_request(request):
            return self.get_response(request)
