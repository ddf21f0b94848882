"""Single sign-on, read-only: who logged in through the provider (issuer, subject, the groups of
their last login) and which memberships SSO granted (the ones a later login may change or remove)."""

from django.contrib import admin

from apps.core.models import SsoIdentity, SsoMembershipGrant


class ReadOnlyAdmin(admin.ModelAdmin):
    # Written by logins only (apps.core.auth.oidc.services); an edit here would be undone or lie.
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(SsoIdentity)
class SsoIdentityAdmin(ReadOnlyAdmin):
    list_display = ["user", "subject", "issuer", "last_groups", "last_login_at", "created_at"]
    list_select_related = ["user"]
    search_fields = ["user__username", "subject"]


@admin.register(SsoMembershipGrant)
class SsoMembershipGrantAdmin(ReadOnlyAdmin):
    list_display = ["membership", "role", "granted_at"]
    list_select_related = ["membership__user", "membership__project"]
    list_filter = ["role", "membership__project"]
    search_fields = ["membership__user__username"]
