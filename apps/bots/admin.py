from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from apps.core.admin.scoping import ProjectScopedAdmin
from apps.core.admin.utils import CollapsibleStackedInline
from apps.core.audit.registry import audit_recorded_by_caller

from .models import Bot, BotTool, KnowledgeBase, KnowledgeDocument
from .selectors import bot_endpoint_refusal
from .services import bot_audit_change, bot_state, secret_survives_change


class BotForm(forms.ModelForm):
    """The secret is write-only here too: the field never shows the stored value; leaving it blank
    keeps it (unless the adapter or endpoint URL changes: see secret_survives_change), and "clear
    secret" removes it."""

    secret = forms.CharField(
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False),
        help_text="Write-only. Leave blank to keep the stored secret; changing the adapter or "
        "endpoint URL drops it unless you enter it again.",
    )
    clear_secret = forms.BooleanField(required=False, help_text="Remove the stored secret.")

    class Meta:
        model = Bot
        fields = [
            "agent_id",
            "name",
            "organization_id",
            "organization_name",
            "adapter",
            "endpoint_url",
            "secret",
            "system_prompt",
            "llm_provider",
            "llm_model",
            "llm_parameters",
            "harness_context",
        ]

    def clean_agent_id(self):
        agent_id = self.cleaned_data["agent_id"].strip().lower()
        if len(agent_id) != 24 or any(c not in "0123456789abcdef" for c in agent_id):
            raise forms.ValidationError("The bot id (agent_id) is 24 hexadecimal characters.")
        return agent_id

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("adapter") == Bot.Adapter.HTTP and not cleaned.get("endpoint_url"):
            self.add_error("endpoint_url", "The http adapter needs an endpoint URL.")
        return cleaned

    def save(self, commit=True):
        bot = super().save(commit=False)
        new_secret = self.cleaned_data.get("secret")
        if self.cleaned_data.get("clear_secret"):
            bot.secret = ""
        elif new_secret:
            bot.secret = new_secret
        elif not secret_survives_change(
            old_adapter=self.initial.get("adapter", ""),
            old_endpoint_url=self.initial.get("endpoint_url", ""),
            new_adapter=bot.adapter,
            new_endpoint_url=bot.endpoint_url,
        ):
            bot.secret = ""
        if commit:
            bot.save()
        return bot


class BotToolForm(forms.ModelForm):
    type = forms.ChoiceField(required=False)

    class Meta:
        model = BotTool
        fields = ["position", "name", "tool_name", "type", "description", "output_instructions"]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 3, "cols": 60}),
            "output_instructions": forms.Textarea(attrs={"rows": 2, "cols": 60}),
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [("", "—"), *BotTool.Type.choices]
        current = self.instance.type if self.instance.pk else ""
        if current and current not in BotTool.Type.values:
            choices.append((current, current))
        self.fields["type"].choices = choices


class BotToolInline(CollapsibleStackedInline):
    """Stacked and collapsed to one line per tool: tabular, the description text areas made the bot
    page twice the window's width."""

    model = BotTool
    form = BotToolForm
    extra = 0
    ordering = ["position", "id"]


class KnowledgeBaseInline(admin.TabularInline):
    model = KnowledgeBase
    extra = 0
    fields = ["position", "name", "type", "documents_link"]
    readonly_fields = ["documents_link"]
    ordering = ["position", "id"]

    @admin.display(description="documents")
    def documents_link(self, obj):
        if obj.pk is None or not KnowledgeBase.objects.filter(pk=obj.pk).exists():
            return "—"
        url = reverse("admin:bots_knowledgebase_change", args=[obj.pk])
        return format_html('<a href="{}">{} documents</a>', url, obj.documents.count())


@admin.register(Bot)
class BotAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    form = BotForm
    inlines = [BotToolInline, KnowledgeBaseInline]
    list_display = [
        "name",
        "agent_id",
        "organization_name",
        "adapter",
        "llm_model",
        "tool_total",
        "kb_total",
        "has_secret",
    ]
    list_filter = ["adapter", "llm_provider"]
    search_fields = ["name", "agent_id", "organization_name"]
    readonly_fields = ["created_at", "updated_at", "secret_status"]
    fieldsets = [
        (None, {"fields": ["agent_id", "name", "organization_id", "organization_name"]}),
        ("How evalsite reaches it", {"fields": ["adapter", "endpoint_url", "secret_status", "secret", "clear_secret"]}),
        ("Model", {"fields": ["system_prompt", "llm_provider", "llm_model", "llm_parameters", "harness_context"]}),
        ("Dates", {"fields": ["created_at", "updated_at"]}),
    ]

    def save_model(self, request, obj, form, change):
        # One audit event for the bot and its inline tools and knowledge bases, as through the API:
        # the state before is read here, the event written once the inlines are saved too.
        request._bot_before = bot_state(Bot.objects.get(pk=obj.pk)) if change else None
        with audit_recorded_by_caller(Bot):
            super().save_model(request, obj, form, change)
        # Saved all the same: the address may be allowed later (EVALSITE_OUTBOUND_ALLOW) or be meant
        # for another deployment; but whoever typed it learns now that runs would not reach it.
        refusal = bot_endpoint_refusal(obj)
        if refusal:
            messages.warning(
                request,
                f"Runs cannot call this bot at {obj.endpoint_url}: {refusal}. Use a public "
                "address, or add the host to EVALSITE_OUTBOUND_ALLOW where evalsite runs.",
            )

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        bot_audit_change(form.instance, request._bot_before)

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(tool_count=Count("tools", distinct=True), kb_count=Count("knowledge_bases", distinct=True))
        )

    @admin.display(description="tools", ordering="tool_count")
    def tool_total(self, obj):
        return obj.tool_count

    @admin.display(description="knowledge bases", ordering="kb_count")
    def kb_total(self, obj):
        return obj.kb_count

    @admin.display(description="secret set", boolean=True)
    def has_secret(self, obj):
        return obj.has_secret

    @admin.display(description="stored secret")
    def secret_status(self, obj):
        return "set (hidden)" if obj and obj.has_secret else "none"


class KnowledgeDocumentInline(admin.StackedInline):
    model = KnowledgeDocument
    extra = 0
    fields = ["position", "title", "text"]
    ordering = ["position", "id"]


@admin.register(KnowledgeBase)
class KnowledgeBaseAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    project_path = "bot__project"

    list_display = ["name", "bot", "type", "document_total"]
    list_select_related = ["bot"]
    search_fields = ["name", "bot__name", "documents__title"]
    inlines = [KnowledgeDocumentInline]
    fields = ["bot", "name", "type", "position"]

    def save_model(self, request, obj, form, change):
        # A knowledge base is part of its bot's configuration: its change is an event of the bot (of
        # both bots when it moves), written once its documents are saved too.
        bots = {obj.bot_id}
        if change:
            bots.add(KnowledgeBase.objects.filter(pk=obj.pk).values_list("bot_id", flat=True).get())
        request._bots_before = {bot.pk: (bot, bot_state(bot)) for bot in Bot.objects.filter(pk__in=bots)}
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        for bot, before in request._bots_before.values():
            bot_audit_change(bot, before)

    def delete_model(self, request, obj):
        bot = obj.bot
        before = bot_state(bot)
        super().delete_model(request, obj)
        bot_audit_change(bot, before)

    def delete_queryset(self, request, queryset):
        befores = [(bot, bot_state(bot)) for bot in Bot.objects.filter(pk__in=queryset.values("bot_id"))]
        super().delete_queryset(request, queryset)
        for bot, before in befores:
            bot_audit_change(bot, before)

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(document_count=Count("documents"))

    @admin.display(description="documents", ordering="document_count")
    def document_total(self, obj):
        return obj.document_count
