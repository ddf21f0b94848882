"""The admin, scoped to the session's project (apps.core.projects.resolution.project_of): the
change lists show that project's objects only, another project's object is a 404, foreign-key
choices offer the project's objects only, and what a person may do follows their role there
(apps.core.models.ProjectRole): any role views; editor adds and changes; admin deletes. Every member
enters the admin (apps.core.admin_site), staff or not, and ProjectRoleBackend gives them the Django
model permissions of these pages from their roles, so a person whose role comes from single sign-on
works here as their role allows; permissions a superuser granted by hand still apply too.

In apps.core so that every app's admin uses it, the lowest layers' (traces, agentic, rag) included."""

from django.contrib import admin
from django.db.models import UniqueConstraint
from django.shortcuts import get_object_or_404

from apps.core.admin.utils import ModelAdminMixinBase
from apps.core.models import Membership, ProjectRole
from apps.core.projects.resolution import project_of, request_access


def role_allows(request, role: ProjectRole) -> bool:
    """Whether the person's role in the session's project is `role` or higher. A staff member in
    no project (in `default`) keeps what staff could do before projects."""
    access = request_access(request)
    if access.role is not None:
        return access.role.at_least(role)
    return bool(request.user.is_staff and access.scopes)


class ProjectScopedAdmin(ModelAdminMixinBase):
    """Mix in before admin.ModelAdmin. `project_path` is the lookup from the model to its project
    (`project` for a top-level object, e.g. `rubric__project` for a child); `change_role` the least
    role that adds and changes (editor; reviewer for review queues)."""

    project_path = "project"
    change_role = ProjectRole.EDITOR
    delete_role = ProjectRole.ADMIN

    def get_queryset(self, request):
        return super().get_queryset(request).filter(**{self.project_path: project_of(request)})

    def get_list_filter(self, request):
        # A related filter's choices are every row of the related model: another project's bot
        # names would be listed in the sidebar.
        return [_in_project_filter(entry, self.model) for entry in super().get_list_filter(request)]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        # Only the project's bots (test sets, ...) to choose from: never another project's names.
        related = db_field.related_model
        if _has_project(related):
            kwargs.setdefault("queryset", related._default_manager.filter(project=project_of(request)))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if self.project_path != "project":
            return form
        return _in_project(form, project_of(request))

    def save_model(self, request, obj, form, change):
        # A new top-level object belongs to the session's project.
        if not change and self.project_path == "project" and obj.project_id is None:
            obj.project = project_of(request)
        super().save_model(request, obj, form, change)

    def has_view_permission(self, request, obj=None):
        return super().has_view_permission(request, obj) and request_access(request).scopes != frozenset()

    def has_add_permission(self, request, *args):
        return super().has_add_permission(request, *args) and role_allows(request, self.change_role)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and role_allows(request, self.change_role)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and role_allows(request, self.delete_role)


class ProjectRoleBackend:
    """Django's model permissions for the project-scoped admin pages (and their inlines), from the
    person's roles: any role views; the page's `change_role` adds and changes; its `delete_role`
    deletes. Granted when the role in some project allows it: each page then narrows that to the
    role in the session's project (ProjectScopedAdmin.has_*_permission), so an editor of one project
    who is a viewer of another only reads the other's. Nothing else: traces, evaluations, scores,
    rules, keys, members and users keep needing what a superuser grants. Authenticates nobody."""

    def authenticate(self, request, **credentials):
        return None

    def has_perm(self, user_obj, perm, obj=None) -> bool:
        if not user_obj.is_active or not user_obj.is_authenticated:
            return False
        app_label, _, codename = perm.partition(".")
        action, _, model_name = codename.partition("_")
        roles = _scoped_models().get(f"{app_label}.{model_name}")
        if roles is None:
            return False
        change_role, delete_role = roles
        least = {"view": ProjectRole.VIEWER, "add": change_role, "change": change_role, "delete": delete_role}.get(
            action
        )
        return least is not None and any(role.at_least(least) for role in _roles(user_obj))

    def has_module_perms(self, user_obj, app_label: str) -> bool:
        if not user_obj.is_active or not user_obj.is_authenticated or not _roles(user_obj):
            return False
        return any(label.partition(".")[0] == app_label for label in _scoped_models())


def _roles(user) -> frozenset[ProjectRole]:
    # Kept on the user object for the request, as Django's ModelBackend keeps its permissions
    # (`_perm_cache`): an admin page asks for a permission many times.
    roles = getattr(user, "_evalsite_project_roles", None)
    if roles is None:
        rows = Membership.objects.filter(user=user).values_list("role", flat=True)
        roles = user._evalsite_project_roles = frozenset(ProjectRole(role) for role in rows)
    return roles


def _scoped_models() -> dict[str, tuple[ProjectRole, ProjectRole]]:
    """'app_label.model_name' -> (the least role that adds and changes it, the least that deletes
    it), for the models of ProjectScopedAdmin pages and of their inlines. An inline's rows are part
    of the page's object (a rubric's rules, a bot's tools): whoever changes the object adds, changes
    and deletes them. A model that also has an admin of its own that is not scoped gets nothing."""
    registry = admin.site._registry
    found: dict[str, tuple[ProjectRole, ProjectRole]] = {}
    for model, model_admin in registry.items():
        if not isinstance(model_admin, ProjectScopedAdmin):
            continue
        found[model._meta.label_lower] = (model_admin.change_role, model_admin.delete_role)
        for inline in model_admin.inlines:
            if inline.model in registry and not isinstance(registry[inline.model], ProjectScopedAdmin):
                continue
            found.setdefault(inline.model._meta.label_lower, (model_admin.change_role, model_admin.change_role))
    return found


def _has_project(model) -> bool:
    return any(f.name == "project" for f in model._meta.concrete_fields)


def _in_project_filter(entry, model):
    """`entry` of a list_filter, with the choices of a related filter limited to the session's project."""
    if not (isinstance(entry, tuple) and issubclass(entry[1], admin.RelatedFieldListFilter)):
        return entry
    name, base = entry
    if not _has_project(model._meta.get_field(name).related_model):
        return entry

    def field_choices(self, field, request, model_admin):
        rows = field.related_model._default_manager.filter(project=project_of(request))
        return [(row.pk, str(row)) for row in rows]

    return name, type(f"InProject{base.__name__}", (base,), {"field_choices": field_choices})


def _in_project(form_class, project):
    """`form_class`, whose new instance is of `project` and which checks the model's per-project
    unique constraints (e.g. a bot's agent_id) as a form error. The form has no project field, so
    Django's own constraint validation leaves these to the database (an IntegrityError, a 500)."""
    model = form_class._meta.model
    unique_sets = [
        [name for name in constraint.fields if name != "project"]
        for constraint in model._meta.constraints
        if isinstance(constraint, UniqueConstraint) and "project" in constraint.fields and constraint.condition is None
    ]

    class InProject(form_class):  # type: ignore[valid-type,misc]  # a class made at run time
        def _post_clean(self):
            if self.instance.project_id is None:
                self.instance.project = project
            super()._post_clean()
            for names in unique_sets:
                if not all(name in self.cleaned_data for name in names):
                    continue
                taken = model._default_manager.filter(
                    project=self.instance.project_id, **{name: self.cleaned_data[name] for name in names}
                ).exclude(pk=self.instance.pk)
                if taken.exists():
                    self.add_error(
                        names[0], f"This project already has a {model._meta.verbose_name} with this {names[0]}."
                    )

    InProject.__name__ = form_class.__name__
    return InProject


def scoped_version_admin(version_model, head_field: str, site=admin.site) -> None:
    """Re-register a head's version admin (apps.core.versioning registers it unscoped) with the
    versions of the session's project's heads only."""
    base = type(site._registry[version_model])
    site.unregister(version_model)
    site.register(
        version_model,
        type(f"{version_model.__name__}Admin", (ProjectScopedAdmin, base), {"project_path": f"{head_field}__project"}),
    )


class ScopedHeadViews(ModelAdminMixinBase):
    """For a VersionedHeadAdmin: its history and restore pages read the head by id alone
    (apps.core.versioning.admin); here another project's head is a 404 before they run."""

    def versions_view(self, request, object_id, *args, **kwargs):
        get_object_or_404(self.get_queryset(request), pk=object_id)
        # Mixed in before a VersionedHeadAdmin (apps.core.versioning.admin), which core's admin
        # package may not import, so the checker does not see the view.
        return super().versions_view(request, object_id, *args, **kwargs)  # type: ignore[misc]

    def restore_view(self, request, object_id, *args, **kwargs):
        get_object_or_404(self.get_queryset(request), pk=object_id)
        return super().restore_view(request, object_id, *args, **kwargs)  # type: ignore[misc]
