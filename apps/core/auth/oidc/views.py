"""The login redirect to the provider, the callback, and the refusal of password logins when
EVALSITE_PASSWORD_LOGIN=0. While SSO is off (no EVALSITE_OIDC_ISSUER) both SSO views answer 404."""

import functools
import logging

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpResponseForbidden, HttpResponseRedirect
from mozilla_django_oidc.views import (  # type: ignore[import-untyped]
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
)

from . import discovery

logger = logging.getLogger(__name__)


def sso_enabled() -> bool:
    return settings.EVALSITE_SSO_ENABLED


def password_login_enabled() -> bool:
    return settings.EVALSITE_PASSWORD_LOGIN


def login_context() -> dict:
    """What a login template needs to show the SSO button and (or instead of) the password form."""
    return {"sso_enabled": sso_enabled(), "password_login": password_login_enabled()}


def refuse_password_post(view):
    """A login view that answers a POST (a password) with 403 while password login is off; the GET
    still renders, with only the SSO button."""

    @functools.wraps(view)
    def guarded(request, *args, **kwargs):
        if request.method == "POST" and not password_login_enabled():
            return HttpResponseForbidden("Password login is off; sign in with single sign-on.")
        return view(request, *args, **kwargs)

    return guarded


@refuse_password_post
def admin_login(request, extra_context=None):
    """The admin's login page with the SSO button, and without the password form while it is off."""
    from django.contrib import admin

    return admin.site.login(request, extra_context={**login_context(), **(extra_context or {})})


class SsoLoginView(OIDCAuthenticationRequestView):
    """Redirects to the provider's authorization endpoint with state, nonce and a PKCE challenge kept
    in the session; `?next=` (a local address only) is where the callback lands."""

    def __init__(self, *args, **kwargs):
        # The parent reads the authorization endpoint from settings; ours comes from discovery.
        super(OIDCAuthenticationRequestView, self).__init__(*args, **kwargs)
        self.OIDC_RP_CLIENT_ID = settings.OIDC_RP_CLIENT_ID

    def get(self, request):
        if not sso_enabled():
            raise Http404("single sign-on is off")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = discovery.provider_metadata().authorization_endpoint
        except discovery.ProviderUnavailable as exc:
            logger.warning("single sign-on unavailable: %s", exc)
            return HttpResponseRedirect(settings.LOGIN_REDIRECT_URL_FAILURE)
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """The provider sends the browser back here with a code and the state. An unknown state (a forged
    or replayed callback, or one from another browser) is a refused login like any other: back to the
    login page, nobody logged in."""

    def login_failure(self):
        # Why, when the backend knows and it is safe to say (a user without any project).
        refusal = getattr(self.request, "sso_refusal", None)
        if refusal:
            return HttpResponseRedirect(f"{settings.LOGIN_URL}?sso={refusal}")
        return super().login_failure()

    def get(self, request):
        if not sso_enabled():
            raise Http404("single sign-on is off")
        try:
            return super().get(request)
        except SuspiciousOperation as exc:
            logger.warning("single sign-on refused: %s", exc)
            return self.login_failure()


sso_login = SsoLoginView.as_view()
sso_callback = SsoCallbackView.as_view()
