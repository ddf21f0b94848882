from django import forms
from django.contrib import admin, messages
from django.db.models import Count

from apps.core.audit import admin as audit_admin  # noqa: F401  (registers the audit trail's read-only admin)
from apps.core.errors import InvalidInputError
from apps.core.models import ALL_SCOPES, ApiKey, KeyUsageDay, Membership, Project
from apps.core.pricing.models import ModelPrice
from apps.core.services import api_key_revoke, api_key_scopes_clean, api_key_update


class ApiKeyForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=[(s, s) for s in ALL_SCOPES],
        widget=forms.CheckboxSelectMultiple,
        help_text="capped by the owner's role in the key's project; see Authentication in docs/api.md.",
    )

    class Meta:
        model = ApiKey
        fields = ["name", "scopes"]

    def clean_scopes(self):
        # The service's rule, checked here too so a refusal shows on the form rather than as a 500.
        try:
            return api_key_scopes_clean(
                scopes=self.cleaned_data["scopes"], user=self.instance.user, project=self.instance.project
            )
        except InvalidInputError as exc:
            raise forms.ValidationError(exc.detail) from exc


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = ["prefix", "user", "project", "name", "scopes_display", "created_at", "last_used_at", "revoked_at"]
    list_select_related = ["user", "project"]
    list_filter = ["project", "revoked_at"]
    search_fields = ["user__username", "name", "prefix"]
    readonly_fields = ["user", "project", "prefix", "created_at", "last_used_at", "revoked_at"]
    fields = ["user", "project", "name", "scopes", "prefix", "created_at", "last_used_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request):
        # Keys are created with `manage.py create_api_key`, which shows the secret once.
        return False

    @admin.display(description="scopes")
    def scopes_display(self, obj):
        return ", ".join(obj.scopes or [])

    def save_model(self, request, obj, form, change):
        api_key_update(api_key=obj, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"])

    @admin.action(description="Revoke selected keys")
    def revoke(self, request, queryset):
        for api_key in queryset:
            api_key_revoke(api_key=api_key)
        messages.success(request, f"Revoked {queryset.count()} key(s).")


@admin.register(KeyUsageDay)
class KeyUsageDayAdmin(admin.ModelAdmin):
    """What each key made the platform's LLM spend, per day: read-only, written by apps.core.llm.usage."""

    list_display = ["day", "key_prefix", "key_name", "key_user", "llm_calls", "input_tokens", "output_tokens"]
    list_select_related = ["api_key__user"]
    list_filter = ["day", "api_key"]
    date_hierarchy = "day"
    search_fields = ["api_key__prefix", "api_key__name", "api_key__user__username"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="key", ordering="api_key__prefix")
    def key_prefix(self, obj):
        return f"{obj.api_key.prefix}…"

    @admin.display(description="name", ordering="api_key__name")
    def key_name(self, obj):
        return obj.api_key.name

    @admin.display(description="user", ordering="api_key__user__username")
    def key_user(self, obj):
        return obj.api_key.user


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "member_count", "retention_days", "run_retention_days", "created_at"]
    search_fields = ["name", "slug"]
    # Redaction is validated by the service behind PATCH /api/v1/projects/{slug}; a free-form JSON
    # box here would let a malformed setting through.
    readonly_fields = ["redaction", "created_at"]
    inlines = [MembershipInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(member_count=Count("memberships"))

    @admin.display(description="members", ordering="member_count")
    def member_count(self, obj):
        return obj.member_count


from apps.core.admin import sso  # noqa: E402,F401 (registers the single sign-on admins)


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    """The price table (apps.core.pricing): a price change is a new row with a later valid_from."""

    list_display = ["model", "valid_from", "input_per_mtok", "cached_input_per_mtok", "output_per_mtok", "taken_on"]
    list_filter = ["valid_from"]
    search_fields = ["model"]
    ordering = ["model", "-valid_from"]
