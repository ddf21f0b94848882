from django.contrib import admin, messages

from .models import ApiKey
from .services import api_key_revoke


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "user", "name", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user"]
    list_filter = ["revoked_at"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["prefix", "created_at", "last_used_at", "revoked_at"]
    fields = ["user", "name", "prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        # Keys are created with `manage.py create_api_key`, which shows the secret once.
        return False

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
        messages.success(request, f"Revoked {queryset.count()} key(s).")
