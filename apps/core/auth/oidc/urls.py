from django.urls import path

from .views import sso_callback, sso_login

# Names as mozilla-django-oidc expects them (it reverses "oidc_authentication_callback" to build the
# redirect URI, which must match the one registered at the provider: {site}/oidc/callback/).
urlpatterns = [
    path("authenticate/", sso_login, name="oidc_authentication_init"),
    path("callback/", sso_callback, name="oidc_authentication_callback"),
]
