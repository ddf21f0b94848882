"""What every reviewer page's template needs from the admin's base layout (templates/console/base.html).

In core because pages of lower apps (the metrics-query page in nlquery) are drawn in the console's
layout too, and nothing may import the console (it sits above every app, see .importlinter)."""

from django.contrib import admin

from apps.core.admin_site import admin_site_admits
from apps.core.auth.permissions import scopes_of


def layout_context(request, *, title: str, **extra) -> dict:
    scopes = scopes_of(request)
    return {
        "title": title,
        "site_header": admin.site.site_header,
        "site_title": admin.site.site_title,
        "site_url": None,
        # admin/base.html shows the user links only when this is set; every console page needs a login.
        "has_permission": request.user.is_authenticated,
        "is_nav_sidebar_enabled": False,
        # Links into the admin, for whoever may enter it (staff, or a project's member: their role
        # there decides the rest, as here).
        "can_edit": admin_site_admits(request),
        # Forms shown only to users whose scopes allow them (the views refuse them otherwise).
        "can_evaluate": "evaluate" in scopes,
        "can_review": "review" in scopes,
        # The audit page: the project's admins (and superusers) only, as GET /api/v1/audit.
        "can_audit": "admin" in scopes,
        **extra,
    }
