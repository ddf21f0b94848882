"""What every console page's template needs from the admin's base layout."""

from django.contrib import admin


def console_context(request, *, title: str, **extra) -> dict:
    return {
        "title": title,
        "site_header": admin.site.site_header,
        "site_title": admin.site.site_title,
        "site_url": None,
        # admin/base.html shows the user links only when this is set; every console page needs a login.
        "has_permission": request.user.is_authenticated,
        "is_nav_sidebar_enabled": False,
        "can_edit": request.user.is_staff,
        **extra,
    }
