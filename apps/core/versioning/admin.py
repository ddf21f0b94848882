"""The admin editor of versioned heads (rubrics, test sets). The admin never writes head rows
itself: every save builds the head's content from the forms and publishes it through the app's
service, like the API's PUT. Also the version history pages: the list of versions, a diff between
any two of them and a restore page (showing what a restore would change, and asking to confirm) that
publishes an old version as a new one. The admin's history says which version each save published
and which rows it added, changed or deleted."""

from typing import ClassVar

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from apps.core.admin.fields import pydantic_messages
from apps.core.admin.utils import CollapsibleStackedInline, ModelAdminMixinBase, pretty_json
from apps.core.errors import DomainError

from .diff import snapshot_diff
from .services import version_restore


class VersionedHeadForm(forms.ModelForm):
    """The head's own fields, plus the changelog of the version a save publishes and the version
    the editor started from (a save based on an older one is refused)."""

    changelog = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
        help_text="What this change does; kept with the version it publishes.",
    )
    based_on_version = forms.IntegerField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["based_on_version"].initial = self.instance.current_version

    def clean(self):
        # ModelForm.clean returns its cleaned_data (never None; the stubs allow a None for overrides).
        cleaned = super().clean() or {}
        based_on = cleaned.get("based_on_version")
        if not self.instance._state.adding and based_on is not None:
            current = (
                type(self.instance)
                .objects.filter(pk=self.instance.pk)
                .values_list("current_version", flat=True)
                .first()
            )
            if current is not None and current != based_on:
                raise forms.ValidationError(
                    f"Someone published version {current} while you edited version {based_on}. "
                    "Reload the page and apply your change again."
                )
        return cleaned


class ContentFormSet(forms.BaseInlineFormSet):
    """Validates the whole head (its fields from the parent form plus these rows, in position
    order) with the API's schema, so the admin refuses exactly what the API refuses."""

    # The API's input schema of the head: each app's formset sets it.
    content_schema: ClassVar[type[BaseModel]]
    content: BaseModel | None = None

    def content_data(self, head, rows: list[forms.Form]) -> dict:
        """The head's content in the schema's input shape, from the head and its kept row forms."""
        raise NotImplementedError

    def clean(self):
        super().clean()
        if any(self.errors):
            return
        kept = [f for f in self.forms if f.cleaned_data and not f.cleaned_data.get("DELETE")]
        kept.sort(key=lambda f: (f.cleaned_data.get("position") or 0, self.forms.index(f)))
        try:
            self.content = self.content_schema.model_validate(self.content_data(self.instance, kept))
        except PydanticValidationError as exc:
            raise ValidationError(pydantic_messages(exc)) from None


PUBLISH_FIELDS = {"changelog", "based_on_version"}


def row_changes(formset) -> list[str]:
    """The formset's added, changed and deleted rows, as "added test item X" etc."""
    noun = formset.model._meta.verbose_name
    changes = []
    for row in formset.forms:
        if not row.has_changed() or not hasattr(row, "cleaned_data"):
            continue
        if row.cleaned_data.get("DELETE"):
            if row.instance.pk is not None:
                changes.append(f"deleted {noun} {row.instance}")
        elif row.instance.pk is None:
            changes.append(f"added {noun} {row.instance}")
        else:
            fields = [row[name].label for name in row.changed_data if name != "DELETE"]
            changes.append(f"changed {noun} {row.instance} ({', '.join(fields)})")
    return changes


class VersionHistoryAdminMixin(ModelAdminMixinBase):
    """For a ModelAdmin of a VersionedHead whose form is a VersionedHeadForm and whose inline's
    formset is a ContentFormSet. Needs `create_head` and `publish_head`, the app's services."""

    def create_head(self, *, head, content, changelog: str, author: str):
        raise NotImplementedError

    def publish_head(self, *, head, content, changelog: str, author: str, expected_version: int | None = None):
        raise NotImplementedError

    def before_publish(self, request, content) -> None:
        """Called with the content a save is about to publish, e.g. to warn about it."""

    def version_changes(self, old: dict, new: dict) -> list[str]:
        """What changed between two snapshots, in words (e.g. the rule that changed), shown above
        the JSON diff; the app says it, none by default."""
        return []

    def save_form(self, request, form, change):
        head = form.save(commit=False)
        head._based_on_version = form.cleaned_data.get("based_on_version") if change else None
        head._changelog = form.cleaned_data.get("changelog", "")
        return head

    def save_model(self, request, obj, form, change):
        """Nothing here: the head is written when the version is published, in save_related."""

    def save_related(self, request, form, formsets, change):
        content = next(fs.content for fs in formsets if isinstance(fs, ContentFormSet))
        head = form.instance
        author = request.user.get_username()
        self.before_publish(request, content)
        try:
            if not change:
                created = self.create_head(head=head, content=content, changelog=head._changelog, author=author)
                request._version_published = created.current_version
                return
            saved, published = self.publish_head(
                head=head,
                content=content,
                changelog=head._changelog,
                author=author,
                expected_version=head._based_on_version,
            )
        except DomainError as exc:
            self.publish_failed(request, exc.detail)
            return
        if published:
            request._version_published = saved.current_version
        else:
            messages.info(request, "Nothing changed, so no new version was published.")

    def restore_version(self, obj, version: int, author: str):
        content_schema = next(i.formset.content_schema for i in self.inlines if issubclass(i.formset, ContentFormSet))
        return version_restore(
            head=obj, version=version, author=author, content_schema=content_schema, publish=self.publish_head
        )

    def publish_failed(self, request, detail) -> None:
        """The publishing service refused the save (e.g. a version was published meanwhile): say so,
        and keep the admin from also reporting and logging a save that did not happen."""
        request._version_publish_failed = True
        messages.error(request, f"Not saved: {detail}")

    def message_user(self, request, message, level=messages.INFO, *args, **kwargs):
        if level == messages.SUCCESS and getattr(request, "_version_publish_failed", False):
            return
        super().message_user(request, message, level, *args, **kwargs)

    def log_addition(self, request, obj, message):
        if not getattr(request, "_version_publish_failed", False):
            return super().log_addition(request, obj, message)

    def log_change(self, request, obj, message):
        if not getattr(request, "_version_publish_failed", False):
            return super().log_change(request, obj, message)

    def construct_change_message(self, request, form, formsets, add=False):
        """What the history shows for a save: the version it published and the rows it added,
        changed (with the fields) or deleted. Django's own message cannot say it: the formsets never
        save their rows (the publishing service rewrites them), and the one parent field a publish
        always changes is the changelog, which made every entry read "Changed changelog."."""
        version = getattr(request, "_version_published", None)
        if version is None:
            return "Saved; no new version was published (nothing changed)."
        parts = []
        head_fields = [form[name].label for name in form.changed_data if name not in PUBLISH_FIELDS]
        if head_fields and not add:
            parts.append(f"changed {', '.join(head_fields)}")
        for formset in formsets:
            parts.extend(row_changes(formset))
        prefix = f"Created with version {version}" if add else f"Published version {version}"
        return f"{prefix}: {'; '.join(parts)}." if parts and not add else f"{prefix}."

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        return [
            path(
                "<path:object_id>/versions/",
                self.admin_site.admin_view(self.versions_view),
                name="{}_{}_versions".format(*info),
            ),
            path(
                "<path:object_id>/versions/<int:version>/restore/",
                self.admin_site.admin_view(self.restore_view),
                name="{}_{}_restore".format(*info),
            ),
        ] + super().get_urls()

    @property
    def _url_prefix(self):
        return f"admin:{self.model._meta.app_label}_{self.model._meta.model_name}"

    @admin.display(description="versions")
    def version_history_link(self, obj):
        if obj is None or obj.pk is None or not getattr(obj, "current_version", 0):
            return "—"
        url = reverse(f"{self._url_prefix}_versions", args=[obj.pk])
        return format_html(
            '<a href="{}">Version history, diff and restore</a> (current: v{})', url, obj.current_version
        )

    def versions_view(self, request, object_id):
        obj = get_object_or_404(self.model, pk=object_id)
        if not self.has_view_permission(request, obj):
            raise PermissionDenied
        versions = list(obj.versions.order_by("-version"))
        by_number = {v.version: v for v in versions}

        def chosen(name, default):
            try:
                return int(request.GET.get(name, default))
            except (TypeError, ValueError):
                return default

        newest = versions[0].version if versions else 0
        b = chosen("b", newest)
        a = chosen("a", max(newest - 1, 1))
        diff, changes = None, []
        if a in by_number and b in by_number:
            diff = snapshot_diff(
                by_number[a].snapshot, by_number[b].snapshot, old_label=f"version {a}", new_label=f"version {b}"
            )
            changes = self.version_changes(by_number[a].snapshot, by_number[b].snapshot)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": obj,
            "title": f"Version history: {obj}",
            "versions": versions,
            "a": a,
            "b": b,
            "diff": diff,
            "changes": changes,
            "missing": [n for n in (a, b) if n not in by_number],
            "can_restore": self.has_change_permission(request, obj),
            "restore_url_name": f"{self._url_prefix}_restore",
            "change_url": reverse(f"{self._url_prefix}_change", args=[obj.pk]),
        }
        return TemplateResponse(request, "admin/versioning/history.html", context)

    def restore_view(self, request, object_id, version):
        """GET: what restoring `version` would change, and a button to confirm. POST: publish it."""
        obj = get_object_or_404(self.model, pk=object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        history_url = reverse(f"{self._url_prefix}_versions", args=[obj.pk])
        if request.method != "POST":
            return self.restore_confirm_page(request, obj, version, history_url)
        try:
            restored, published = self.restore_version(obj, version, request.user.get_username())
        except DomainError as exc:
            messages.error(request, exc.detail)
        else:
            if published:
                self.log_change(request, restored, f"Restored version {version} as version {restored.current_version}.")
                messages.success(request, f"Version {version} restored as version {restored.current_version}.")
            else:
                messages.info(
                    request, f"Version {version} has the same content as the current version; nothing was published."
                )
        return HttpResponseRedirect(history_url)

    def restore_confirm_page(self, request, obj, version: int, history_url: str):
        versions = {v.version: v for v in obj.versions.filter(version__in=[version, obj.current_version])}
        if version not in versions:
            raise Http404(f"No version {version}.")
        current = versions.get(obj.current_version)
        diff = snapshot_diff(
            current.snapshot if current else {},
            versions[version].snapshot,
            old_label=f"version {obj.current_version} (current)",
            new_label=f"version {version}",
        )
        changes = self.version_changes(current.snapshot if current else {}, versions[version].snapshot)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": obj,
            "title": f"Restore version {version} of {obj}?",
            "version": versions[version],
            "diff": diff,
            "changes": changes,
            "history_url": history_url,
            "change_url": reverse(f"{self._url_prefix}_change", args=[obj.pk]),
        }
        return TemplateResponse(request, "admin/versioning/restore_confirm.html", context)


class ContentInline(CollapsibleStackedInline):
    """The head's rows in position order, edited inline as collapsible stacked rows (a rubric or test
    set has many; tabular rows made the editors thousands of pixels wide and tall); the app sets
    model, form and formset (a ContentFormSet)."""

    extra = 0
    ordering = ["position", "id"]


class BotListFilter(admin.RelatedFieldListFilter):
    """The `bot` foreign key, titled as the console and the rest of the admin call it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = "bot"


class VersionedHeadAdmin(VersionHistoryAdminMixin, admin.ModelAdmin):
    """The changelist and editor of a head that belongs to a bot (its foreign key `bot`). The app
    names the relation of the head's rows in `rows` (the changelist counts them) and may add fields
    to the head's fieldset (`more_fields`, read-only) and fieldsets of its own (`more_fieldsets`).
    Registering it registers the head's version model too, with SnapshotVersionAdmin."""

    form = VersionedHeadForm
    rows = ""
    more_fields: list[str] = []
    more_fieldsets: list = []
    list_select_related = ["bot"]
    list_filter = [("bot", BotListFilter)]

    def __init__(self, model, admin_site):
        pk = model._meta.pk.name
        # The ignores below: these options depend on the model, known only here. Django reads them off
        # the instance (and its checks do too); django-stubs declares them ClassVar.
        self.list_display = ["name", "bot", "current_version", "row_count", "updated_at"]
        self.readonly_fields = [pk, "current_version", "version_history_link", *self.more_fields]  # type: ignore[misc]
        self.fieldsets = [  # type: ignore[misc]
            (
                None,
                {
                    "fields": [
                        pk,
                        "bot",
                        "name",
                        "description",
                        "current_version",
                        "version_history_link",
                        *self.more_fields,
                    ]
                },
            ),
            *self.more_fieldsets,
            ("Publish", {"fields": ["changelog", "based_on_version"]}),
        ]
        # The count column is titled after the rows it counts (rules, items), so each admin makes its own.
        self.row_count = admin.display(description=self.rows, ordering="row_total")(lambda obj: obj.row_total)
        super().__init__(model, admin_site)
        # Its published versions come with it, read-only.
        if not admin_site.is_registered(model.version_model()):
            admin_site.register(model.version_model(), SnapshotVersionAdmin)

    @admin.display(description="bot", ordering="bot__name")
    def bot(self, obj):
        return obj.bot

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(row_total=Count(self.rows))


class SnapshotVersionAdmin(admin.ModelAdmin):
    """Published versions are immutable: read-only here."""

    exclude = ["snapshot"]

    def __init__(self, model, admin_site):
        head = model.head_field()
        # Per model, as in VersionedHeadAdmin.__init__ (the stubs declare these ClassVar, hence the ignores).
        self.list_display = [head.name, "version", "author", "created_at"]
        self.list_select_related = [head.name]  # type: ignore[misc]
        self.search_fields = [f"{head.name}__name", "changelog"]  # type: ignore[misc]
        self.readonly_fields = [  # type: ignore[misc]
            head.name,
            "version",
            "author",
            "changelog",
            "created_at",
            "snapshot_pretty",
        ]
        super().__init__(model, admin_site)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="snapshot")
    def snapshot_pretty(self, obj):
        return pretty_json(obj.snapshot)
