"""The console's project page: the session project's members and its retention and redaction
settings, for its admins (and superusers), who change them here or with PATCH /api/v1/projects/{slug}
and /members. The same services and the same validation as the API; every change is audited (the
audit registry records Project and Membership saves)."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from pydantic import ValidationError

from apps.core.errors import DomainError
from apps.core.models import SCOPE_ADMIN, ProjectRole
from apps.core.projects import selectors, services
from apps.core.projects.resolution import project_of
from apps.core.projects.schemas import REDACTION_DETECTORS, ProjectChanges

from ..context import console_context
from .common import scope_required

ROLES = [(role.value, role.label) for role in ProjectRole]


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=ROLES, initial=ProjectRole.VIEWER)


class SettingsForm(forms.Form):
    retention_days = forms.IntegerField(
        required=False, min_value=1, label="Keep traces and evaluations (days)", help_text="empty: forever"
    )
    run_retention_days = forms.IntegerField(
        required=False, min_value=1, label="Keep runs (days)", help_text="empty: forever"
    )
    redaction_enabled = forms.BooleanField(required=False, label="Redact before storing")
    detectors = forms.MultipleChoiceField(
        required=False, choices=[(d, d) for d in REDACTION_DETECTORS], widget=forms.CheckboxSelectMultiple
    )
    custom_patterns = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="one regular expression per line"
    )
    phone_regions = forms.CharField(required=False, help_text="ISO codes, e.g. US GB (empty: US GB)")

    @classmethod
    def of(cls, project) -> "SettingsForm":
        redaction = project.redaction or {}
        return cls(
            initial={
                "retention_days": project.retention_days,
                "run_retention_days": project.run_retention_days,
                "redaction_enabled": redaction.get("enabled", False),
                "detectors": redaction.get("detectors", []),
                "custom_patterns": "\n".join(redaction.get("custom_patterns", [])),
                "phone_regions": " ".join(redaction.get("phone_regions", [])),
            }
        )

    def changes(self) -> ProjectChanges:
        """The form as the API's body; ValidationError says what the services refuse."""
        data = self.cleaned_data
        redaction = {
            "enabled": data["redaction_enabled"],
            "detectors": data["detectors"],
            "custom_patterns": [line.strip() for line in data["custom_patterns"].splitlines() if line.strip()],
        }
        if data["phone_regions"].strip():
            redaction["phone_regions"] = data["phone_regions"].upper().split()
        return ProjectChanges.model_validate(
            {
                "retention_days": data["retention_days"],
                "run_retention_days": data["run_retention_days"],
                "redaction": redaction,
            }
        )


def _errors(exc: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" if e["loc"] else e["msg"] for e in exc.errors()]


def _page(request, project, *, settings_form=None, member_form=None, status=200):
    return render(
        request,
        "console/project.html",
        console_context(
            request,
            title=f"Project {project.name}",
            project=project,
            members=selectors.members_of(project=project).select_related("user"),
            roles=ROLES,
            settings_form=settings_form or SettingsForm.of(project),
            member_form=member_form or MemberForm(),
        ),
        status=status,
    )


@login_required
@scope_required(SCOPE_ADMIN)
@require_http_methods(["GET", "POST"])
def project_page(request):
    """GET shows; POST saves the retention and redaction settings."""
    project = project_of(request)
    if request.method == "GET":
        return _page(request, project)
    form = SettingsForm(request.POST)
    if form.is_valid():
        try:
            services.project_update(project=project, changes=form.changes())
        except ValidationError as exc:
            for message in _errors(exc):
                form.add_error(None, message)
        else:
            messages.success(request, "Settings saved.")
            return redirect("console:project")
    return _page(request, project, settings_form=form, status=422)


@login_required
@scope_required(SCOPE_ADMIN)
@require_POST
def project_member_set(request):
    """Adds a member, or changes a member's role (POST username, role)."""
    project = project_of(request)
    form = MemberForm(request.POST)
    if form.is_valid():
        try:
            _, created = services.membership_set(
                project=project, username=form.cleaned_data["username"], role=form.cleaned_data["role"]
            )
        except DomainError as exc:
            form.add_error("username", str(exc.detail))
        else:
            verb = "added as" if created else "is now"
            messages.success(request, f"{form.cleaned_data['username']} {verb} {form.cleaned_data['role']}.")
            return redirect("console:project")
    return _page(request, project, member_form=form, status=422)


@login_required
@scope_required(SCOPE_ADMIN)
@require_POST
def project_member_remove(request):
    project = project_of(request)
    username = request.POST.get("username", "")
    try:
        services.membership_remove(project=project, username=username)
    except DomainError as exc:
        messages.error(request, str(exc.detail))
    else:
        messages.success(request, f"{username} is no longer a member of {project.name}.")
    return redirect("console:project")
