import hashlib
import secrets

from django.conf import settings
from django.db import models

API_KEY_PREFIX = "es_"

# What a key (or a session user) may do. Listed from least to most powerful; the order is the one
# forms and messages show.
SCOPE_READ = "read"
SCOPE_INGEST = "ingest"
SCOPE_EVALUATE = "evaluate"
# Human reviews (verdict and metric reviews) and review queues: a reviewer's work, which moves the
# human pass rates and judge agreement everyone else reads, but configures nothing the judges use.
SCOPE_REVIEW = "review"
SCOPE_CONFIGURE = "configure"
SCOPE_ADMIN = "admin"
ALL_SCOPES = (SCOPE_READ, SCOPE_INGEST, SCOPE_EVALUATE, SCOPE_REVIEW, SCOPE_CONFIGURE, SCOPE_ADMIN)
# A new key can record and score work but not change what others evaluate against, nor destroy it;
# nor give a human verdict: an integration is not a person (and the anonymous scopes are these).
DEFAULT_KEY_SCOPES = (SCOPE_READ, SCOPE_INGEST, SCOPE_EVALUATE)
# Destructive calls stay with staff: a non-staff user's key never holds these, whatever was stored.
STAFF_ONLY_SCOPES = frozenset({SCOPE_ADMIN})


def default_key_scopes() -> list[str]:
    return list(DEFAULT_KEY_SCOPES)


def scopes_allowed_for(user) -> frozenset[str]:
    """The most a user's keys or session may hold: everything for staff, all but admin otherwise."""
    return frozenset(ALL_SCOPES) if user.is_staff else frozenset(ALL_SCOPES) - STAFF_ONLY_SCOPES


def hash_api_key(raw_key: str) -> str:
    # Keys are 256-bit random tokens, so a fast unsalted hash is enough and allows an indexed lookup.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def generate_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


DEFAULT_PROJECT_SLUG = "default"


def default_redaction() -> dict:
    return {"enabled": False, "detectors": [], "custom_patterns": []}


class ProjectRole(models.TextChoices):
    """A person's role in one project, from least to most powerful (the order `at_least` compares)."""

    VIEWER = "viewer", "viewer"
    REVIEWER = "reviewer", "reviewer"
    EDITOR = "editor", "editor"
    ADMIN = "admin", "admin"

    @property
    def rank(self) -> int:
        return list(ProjectRole).index(self)

    def at_least(self, other: "ProjectRole | str") -> bool:
        return self.rank >= ProjectRole(other).rank


# The most a key (or a session) holding a role may do in its project: the same work in the console,
# the admin and the API, so a reviewer's key reviews and works queues as the reviewer does.
ROLE_SCOPES: dict[str, frozenset[str]] = {
    ProjectRole.VIEWER: frozenset({SCOPE_READ}),
    ProjectRole.REVIEWER: frozenset({SCOPE_READ, SCOPE_REVIEW}),
    ProjectRole.EDITOR: frozenset({SCOPE_READ, SCOPE_INGEST, SCOPE_EVALUATE, SCOPE_REVIEW, SCOPE_CONFIGURE}),
    ProjectRole.ADMIN: frozenset(ALL_SCOPES),
}


class ProjectQuerySet(models.QuerySet):
    def default(self) -> "Project":
        # Made by migration core.0004; made again if a database was emptied since (a flush).
        project, _ = self.get_or_create(slug=DEFAULT_PROJECT_SLUG, defaults={"name": "Default"})
        return project

    def visible_to(self, user):
        """The projects `user` may see: every one for a superuser, their memberships otherwise."""
        if user.is_superuser:
            return self.all()
        return self.filter(memberships__user=user)


def default_project_id() -> int:
    return Project.objects.default().pk


def project_pk(project: "Project | int | None") -> int:
    """The id of `project`, given as a Project, an id, or None for `default`: callers inside
    evalsite without a request (the contracts' in-process shim, demo data, management commands)
    write into `default`; the API always passes the request's project."""
    if project is None:
        return default_project_id()
    return project.pk if isinstance(project, Project) else int(project)


class Project(models.Model):
    """A team's space: every trace, evaluation, score, key (and, in the apps above, bot, rubric,
    test set, run and queue) belongs to exactly one. Data from before projects is in `default`."""

    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=50, unique=True)
    # Days to keep traces, spans and agentic/RAG evaluations, and runs; null keeps them forever.
    retention_days = models.PositiveIntegerField(null=True, blank=True)
    run_retention_days = models.PositiveIntegerField(null=True, blank=True)
    # {"enabled": bool, "detectors": [...], "custom_patterns": [...]}, written only through
    # apps.core.projects.services, which validates the shape.
    redaction = models.JSONField(default=default_redaction)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProjectQuerySet.as_manager()

    class Meta:
        ordering = ["name", "slug"]

    def __str__(self):
        return self.name


class Membership(models.Model):
    """A user's role in one project."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=ProjectRole.choices, default=ProjectRole.VIEWER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["project", "user"]
        constraints = [models.UniqueConstraint(fields=["project", "user"], name="membership_once_per_project_user")]

    def __str__(self):
        return f"{self.user} in {self.project}: {self.role}"


class ApiKeyQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiKey(models.Model):
    """An API key. Only its hash is stored; the key itself is shown once, when it is created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    # The one project the key acts in: every read and write made with it is scoped to this project.
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True, default="")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    # The first characters of the key, so an owner can tell keys apart without the secret.
    prefix = models.CharField(max_length=12, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # A list of ALL_SCOPES names, written only through the services (which validate it against the
    # owner's staff flag).
    scopes = models.JSONField(default=default_key_scopes)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self):
        return f"{self.prefix}… ({self.user})"

    @property
    def effective_scopes(self) -> frozenset[str]:
        # Capped by the owner as they are now: demoting a staff user takes admin from their keys at
        # once, without anyone having to edit each key. The owner's role in the key's project caps
        # it further (apps.core.projects.access.key_scopes, which the permission check uses).
        return frozenset(self.scopes or ()) & scopes_allowed_for(self.user)


class KeyUsageDay(models.Model):
    """What the platform's LLM spent for one key on one day (UTC): calls and tokens. Written only by
    apps.core.llm.usage, which adds to the row in one upsert."""

    api_key = models.ForeignKey(ApiKey, on_delete=models.CASCADE, related_name="usage_days")
    day = models.DateField()
    llm_calls = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-day", "api_key"]
        verbose_name = "LLM usage per key and day"
        verbose_name_plural = "LLM usage per key and day"
        constraints = [models.UniqueConstraint(fields=["api_key", "day"], name="keyusageday_once_per_key_day")]

    def __str__(self):
        return f"{self.api_key} {self.day}"


class SsoIdentity(models.Model):
    """The provider's stable name for a person, (issuer, subject), tied to one evalsite user. A login
    finds its user through this row only, never by e-mail or username: those can change, or be
    chosen by someone else, at the provider."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login_at = models.DateTimeField(null=True, blank=True)
    # The groups claim of the last login, as sent: what the roles were derived from (admins ask).
    last_groups = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name = "single sign-on identity"
        verbose_name_plural = "single sign-on identities"
        constraints = [models.UniqueConstraint(fields=["issuer", "subject"], name="ssoidentity_once_per_subject")]

    def __str__(self):
        return f"{self.user} ({self.subject} at {self.issuer})"


class SsoMembershipGrant(models.Model):
    """Marks a membership that single sign-on granted from the groups claim (EVALSITE_OIDC_ROLE_MAP),
    with the role it granted. Only marked memberships are changed or removed at a later SSO login;
    one added by hand has no mark, and one whose role someone changed by hand (role no longer equal to
    `role`) loses its mark at the next login: from then on it is a hand-made membership, left alone."""

    membership = models.OneToOneField(Membership, on_delete=models.CASCADE, related_name="sso_grant")
    role = models.CharField(max_length=10, choices=ProjectRole.choices)
    granted_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "membership granted by single sign-on"
        verbose_name_plural = "memberships granted by single sign-on"

    def __str__(self):
        return f"{self.membership} (single sign-on)"


class AuditTrailImmutable(Exception):
    """An attempt to change or delete an audit event (a bug: nothing in the app does)."""


class AuditEventQuerySet(models.QuerySet):
    """The audit trail is append-only: nothing in the app may rewrite or remove an event, so the
    bulk writes refuse (the row's save() and delete() refuse too, and on PostgreSQL and SQLite a
    trigger of migration core.0007 refuses UPDATE and DELETE whoever sends them)."""

    def update(self, **kwargs):
        raise AuditTrailImmutable("Audit events cannot be changed.")

    def delete(self):
        raise AuditTrailImmutable("Audit events cannot be deleted.")

    def newest_first(self):
        return self.order_by("-created_at", "-id")


class AuditEvent(models.Model):
    """One change to configuration or access: who (`actor`), what (`action` on `object_type`
    `object_id`), and the fields before and after (`changes`, secrets redacted). Written only by
    apps.core.audit.services.audit_record.

    The foreign keys are SET_NULL and each has a text copy beside it (`actor`, `project_slug`):
    deleting a user, a key or a project keeps the trail of what they did. Retention never reads it."""

    project = models.ForeignKey(Project, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    project_slug = models.CharField(max_length=50, blank=True, default="")
    # "username", "key:<prefix>" for an API key, or "system" for a task or a management command.
    actor = models.CharField(max_length=200)
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor_key = models.ForeignKey(ApiKey, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    action = models.CharField(max_length=32)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=255, blank=True, default="")
    object_repr = models.CharField(max_length=255, blank=True, default="")
    # {field: [before, after]}; a field named like a secret holds "***" on both sides.
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["project", "-created_at"], name="auditevent_project_newest"),
            models.Index(fields=["object_type", "object_id"], name="auditevent_object"),
        ]

    def __str__(self):
        return f"{self.actor} {self.action} {self.object_type} {self.object_repr or self.object_id}"

    def save(self, *args, **kwargs):
        if not self._state.adding:
            raise AuditTrailImmutable("Audit events cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AuditTrailImmutable("Audit events cannot be deleted.")


# Defined in its own module with the pricing code it serves; imported here so Django registers it.
from apps.core.pricing.models import ModelPrice  # noqa: E402, F401
