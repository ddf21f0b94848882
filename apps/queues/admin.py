from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin.scoping import ProjectScopedAdmin
from apps.core.models import ProjectRole

from . import services
from .models import ReviewQueue


@admin.register(ReviewQueue)
class ReviewQueueAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """Queues are worked in the console; the admin lists them and edits their rule (reviewers and up)."""

    change_role = ProjectRole.REVIEWER

    list_display = ("name", "kind", "progress", "console_link", "created_at")
    list_filter = ("kind",)
    search_fields = ("name",)
    readonly_fields = ("created_by", "created_at")
    actions = ["fill"]

    def get_readonly_fields(self, request, obj=None):
        # Items hold targets of the queue's kind (queue_update refuses the change the same way).
        return (*self.readonly_fields, "kind") if obj is not None else self.readonly_fields

    @admin.action(description="Fill the selected queues by their rule", permissions=["change"])
    def fill(self, request, queryset):
        entered = sum(services.queue_fill(queue=queue) for queue in queryset)
        self.message_user(request, f"{entered} item(s) entered.")

    def get_queryset(self, request):
        return super().get_queryset(request).with_progress()

    @admin.display(description="done")
    def progress(self, obj):
        return f"{obj.done}/{obj.total}"

    @admin.display(description="console")
    def console_link(self, obj):
        return format_html('<a href="{}">open</a>', reverse("console:queue", args=[obj.pk]))
