"""The audit registrations of apps.core's own rows: projects, memberships and API keys."""

from apps.core.models import ApiKey, Membership, Project

from .registry import audit_register

MEMBER_ACTIONS = {"create": "add_member", "update": "change_role", "delete": "remove_member"}


def _project_action_project(project: Project, kind: str) -> Project | None:
    # Creating and deleting a project are global events (superusers'); a change of its settings
    # (name, retention, redaction) belongs to the project's own trail.
    return project if kind == "update" else None


def _key_action(kind: str, changes: dict, api_key: ApiKey) -> str:
    if kind == "update" and "revoked_at" in changes and changes["revoked_at"][0] is None:
        return "revoke"
    return kind


def register_core_models() -> None:
    audit_register(Project, object_type="project", object_id=lambda p: p.slug, project=_project_action_project)
    audit_register(
        Membership,
        object_type="membership",
        object_id=lambda m: m.user.get_username(),
        action=lambda kind, changes, m: MEMBER_ACTIONS[kind],
    )
    audit_register(ApiKey, object_type="api_key", exclude=("last_used_at",), action=_key_action)
