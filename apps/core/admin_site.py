"""The admin site, and who may enter it: staff, as in Django, and every member of a project,
whether or not they are staff. Roles are per project and come from a person's memberships (by hand
or from single sign-on, which never makes anyone staff), so a person enters with their role and the
pages decide what it lets them do there: the project-scoped ones (apps.core.admin.scoping) follow
the role in the session's project; every other page still needs Django's model permissions, which
nobody holds without a superuser granting them. The staff flag is one for all projects: deriving it
from a role in one would reach into all of them (a staff user in no project keeps every scope of
`default`), so it is left to superusers.

Registered through `apps.core.admin_apps.AdminConfig` (INSTALLED_APPS), which makes it `admin.site`."""

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError

from apps.core.models import Membership
from apps.core.projects.resolution import request_access


def admin_site_admits(request) -> bool:
    """Whether `request`'s person may enter the admin: an active staff user, or an active member of a
    project (a superuser is both). The role in the session's project is resolved once per request."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated or not user.is_active:
        return False
    return user.is_staff or request_access(request).role is not None


class MemberAuthenticationForm(AdminAuthenticationForm):
    """The admin's password form, which lets in who may enter the site (Django's: staff only)."""

    def confirm_login_allowed(self, user):
        if not user.is_active or not (user.is_staff or Membership.objects.filter(user=user).exists()):
            raise ValidationError(
                self.error_messages["invalid_login"], code="invalid_login", params={"username": self.username_field}
            )


class EvalsiteAdminSite(admin.AdminSite):
    login_form = MemberAuthenticationForm

    def has_permission(self, request):
        return admin_site_admits(request)
