"""Version history pages for versioned heads (rubrics, test sets): the list of versions, a diff
between any two of them and a restore button that publishes an old version as a new one."""

from django.contrib import messages
from django.contrib.admin.utils import construct_change_message
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html

from apps.core.errors import DomainError
from apps.core.versioning import snapshot_diff


class VersionHistoryAdminMixin:
    """Needs `version_model` (with fields version, snapshot, changelog, author, created_at and a
    foreign key named by `version_parent_field`) and `restore_version(obj, version, author)`."""

    version_model = None
    version_parent_field = ""

    def restore_version(self, obj, version: int, author: str):
        raise NotImplementedError

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
        # The inline rows are not saved by the formsets (the publishing service rewrites them), so
        # the log entry describes the parent form only.
        return construct_change_message(form, [], add)

    def get_urls(self):
        info = self.model._meta.app_label, self.model._meta.model_name
        return [
            path("<path:object_id>/versions/", self.admin_site.admin_view(self.versions_view),
                 name="%s_%s_versions" % info),
            path("<path:object_id>/versions/<int:version>/restore/", self.admin_site.admin_view(self.restore_view),
                 name="%s_%s_restore" % info),
        ] + super().get_urls()

    @property
    def _url_prefix(self):
        return f"admin:{self.model._meta.app_label}_{self.model._meta.model_name}"

    def version_history_link(self, obj):
        if obj is None or obj.pk is None or not getattr(obj, "current_version", 0):
            return "—"
        url = reverse(f"{self._url_prefix}_versions", args=[obj.pk])
        return format_html('<a href="{}">Version history, diff and restore</a> (current: v{})', url,
                           obj.current_version)

    version_history_link.short_description = "versions"

    def versions_view(self, request, object_id):
        obj = get_object_or_404(self.model, pk=object_id)
        if not self.has_view_permission(request, obj):
            raise PermissionDenied
        versions = list(self.version_model.objects.filter(**{self.version_parent_field: obj}).order_by("-version"))
        by_number = {v.version: v for v in versions}

        def chosen(name, default):
            try:
                return int(request.GET.get(name, default))
            except (TypeError, ValueError):
                return default

        newest = versions[0].version if versions else 0
        b = chosen("b", newest)
        a = chosen("a", max(newest - 1, 1))
        diff = None
        if a in by_number and b in by_number:
            diff = snapshot_diff(by_number[a].snapshot, by_number[b].snapshot, old_label=f"version {a}",
                                 new_label=f"version {b}")
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "original": obj,
            "title": f"Version history: {obj}",
            "versions": versions,
            "a": a,
            "b": b,
            "diff": diff,
            "missing": [n for n in (a, b) if n not in by_number],
            "can_restore": self.has_change_permission(request, obj),
            "restore_url_name": f"{self._url_prefix}_restore",
            "change_url": reverse(f"{self._url_prefix}_change", args=[obj.pk]),
        }
        return TemplateResponse(request, "admin/versioning/history.html", context)

    def restore_view(self, request, object_id, version):
        obj = get_object_or_404(self.model, pk=object_id)
        if request.method != "POST" or not self.has_change_permission(request, obj):
            raise PermissionDenied
        try:
            restored, published = self.restore_version(obj, version, request.user.get_username())
        except DomainError as exc:
            messages.error(request, exc.detail)
        else:
            if published:
                messages.success(request, f"Version {version} restored as version {restored.current_version}.")
            else:
                messages.info(request, f"Version {version} has the same content as the current version; "
                              "nothing was published.")
        return HttpResponseRedirect(reverse(f"{self._url_prefix}_versions", args=[obj.pk]))
