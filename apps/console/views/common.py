"""What every console view module needs: the same refusals the API gives, in the console's terms."""

from functools import wraps

from django.http import Http404
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from apps.core.auth.permissions import scopes_of
from apps.core.errors import NotFoundError
from apps.core.projects.resolution import project_of, request_access

from ..access import ACTION_WORDS, may
from ..context import console_context

# What each scope lets a person do in the console, for the page that refuses them.
SCOPE_ACTIONS = {
    "evaluate": "launch, cancel or re-run evaluation runs and evaluate traces",
    "review": "review verdicts and manage review queues",
    "configure": "change bots, rubrics, test sets and evaluation rules",
    "admin": "change evalsite's configuration",
}


def scope_required(scope: str, *, methods: tuple[str, ...] | None = None):
    """The console refuses what the API would refuse the same user (apps.core.auth.permissions): a
    view decorated with this answers a user without `scope` with the 403 page, in the console's
    layout and with a way back, before it runs. With `methods`, only those methods need the scope
    (a page everyone reads whose POST acts). Put it below @login_required, so that an anonymous
    visitor is sent to sign in rather than refused."""

    def decorator(view):
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if (methods is None or request.method in methods) and scope not in scopes_of(request):
                return forbidden(request, scope)
            return view(request, *args, **kwargs)

        return guarded

    return decorator


def role_required(action, *, methods: tuple[str, ...] | None = None):
    """As scope_required, for what a person's role in the session's project decides
    (apps.console.access: REVIEW, EDIT, ADMINISTER): refused, the 403 page, before the view runs."""

    def decorator(view):
        @wraps(view)
        def guarded(request, *args, **kwargs):
            if (methods is None or request.method in methods) and not may(request, action):
                if request_access(request).role is None:
                    # Someone in no project (in `default`): refused by scope, worded as before projects.
                    return forbidden(request, action[1])
                return forbidden(request, action[1], role=action[0].value, action=ACTION_WORDS[action])
            return view(request, *args, **kwargs)

        return guarded

    return decorator


def _way_back(request) -> str:
    """The page the user came from when it is one of ours (and not this one), else the dashboard."""
    referer = request.headers.get("referer", "")
    if (
        referer
        and referer != request.build_absolute_uri()
        and url_has_allowed_host_and_scheme(
            referer, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return referer
    return reverse("console:dashboard")


def forbidden(request, scope: str, *, role: str = "", action: str = ""):
    return render(
        request,
        "console/forbidden.html",
        console_context(
            request,
            title="Not allowed",
            scope=scope,
            role=role,
            project=project_of(request),
            action=action or SCOPE_ACTIONS.get(scope, ""),
            back_url=_way_back(request),
        ),
        status=403,
    )


def found_or_404(read, /, *args, **kwargs):
    """read(*args, **kwargs), a selector or service that raises NotFoundError for an unknown id,
    with that error as the console's 404 page."""
    try:
        return read(*args, **kwargs)
    except NotFoundError as exc:
        raise Http404(exc.detail) from exc
