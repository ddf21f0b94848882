"""The claims the test provider sends: profile and e-mail from the user, and a `groups` claim (the
names of the user's Django groups here) for the `groups` scope, as Okta does."""

from django.utils.translation import gettext_lazy as _
from oidc_provider.lib.claims import ScopeClaims


def userinfo(claims, user):
    claims["preferred_username"] = user.username
    claims["email"] = user.email
    claims["given_name"] = user.first_name
    claims["family_name"] = user.last_name
    return claims


class GroupsScopeClaims(ScopeClaims):
    info_groups = (_("Groups"), _("The groups you belong to."))

    def scope_groups(self):
        return {"groups": sorted(self.user.groups.values_list("name", flat=True))}
