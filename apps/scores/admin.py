from django.contrib import admin
from django.http import HttpRequest

from .models import Score


@admin.register(Score)
class ScoreAdmin(admin.ModelAdmin):
    """Read-only: scores are written by the judges and by reviews, never edited by hand."""

    list_display = (
        "id",
        "subject_kind",
        "subject_id",
        "kind",
        "short_key",
        "source",
        "status",
        "reason",
        "passed",
        "value",
        "judge",
        "created_at",
    )
    list_filter = ("subject_kind", "kind", "source", "status", "reason")
    search_fields = ("key",)
    list_select_related = ("author",)
    show_full_result_count = False

    @admin.display(description="key")
    def short_key(self, obj: Score) -> str:
        return obj.key[:80]

    def has_view_permission(self, request: HttpRequest, obj: Score | None = None) -> bool:
        # A score names its subject by kind and id, and the subject's project is in the apps above
        # this one: the list cannot be limited to one project, so only superusers (who see every
        # project) read it. Each subject's own admin page shows its scores.
        return request.user.is_superuser

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Score | None = None) -> bool:
        return False
