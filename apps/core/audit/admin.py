"""The audit trail in the admin: read-only for everyone (no add, change or delete, superusers
included), and a project admin sees only the events of the projects they administer."""

import json

from django.contrib import admin
from django.utils.html import format_html

from apps.core.models import AuditEvent, Membership, ProjectRole


def _administered(user):
    return Membership.objects.filter(user=user, role=ProjectRole.ADMIN).values("project")


FIELDS = (
    "created_at",
    "project_slug",
    "actor",
    "action",
    "object_type",
    "object_id",
    "object_repr",
    "changes_display",
)


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "project_slug", "actor", "action", "object_type", "object_id", "object_repr"]
    list_filter = ["action", "object_type"]
    search_fields = ["actor", "object_id", "object_repr"]
    date_hierarchy = "created_at"
    fields = FIELDS
    readonly_fields = FIELDS
    actions = None

    def get_queryset(self, request):
        events = super().get_queryset(request)
        if request.user.is_superuser:
            return events
        return events.filter(project__in=_administered(request.user))

    def get_list_filter(self, request):
        # The project filter lists every project's name: for superusers only, who may see them all.
        return [*self.list_filter, "project"] if request.user.is_superuser else self.list_filter

    def has_module_permission(self, request):
        return self.has_view_permission(request)

    def has_view_permission(self, request, obj=None):
        user = request.user
        # Whoever is here entered the admin (apps.core.admin_site: staff, or a project's member).
        if not user.is_active:
            return False
        return user.is_superuser or Membership.objects.filter(user=user, role=ProjectRole.ADMIN).exists()

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="changes")
    def changes_display(self, obj):
        return format_html("<pre>{}</pre>", json.dumps(obj.changes, indent=2, ensure_ascii=False))
