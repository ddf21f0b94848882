"""Rubric reads. A rubric at a version, in the contract's Rubric shape, is read with the shared
selectors of apps.core.versioning (head_data, version_get, version_data, head_list_data); its
version list by the views apps.core.versioning.api.version_views makes."""

from apps.core.selectors import object_get
from apps.core.versioning.selectors import version_data, version_get

from .models import Rubric


def rubric_get(rubric_id) -> Rubric:
    return object_get(Rubric.objects.select_related("agent"), rubric_id)


def rubric_list(*, agent_id: str | None = None):
    return Rubric.objects.of_bot(agent_id)


def rubric_version_snapshot(rubric_id, version: int | None) -> tuple[int, dict]:
    """For the run engine: (version number, the rubric at that version in the contract's shape)."""
    rubric = rubric_get(rubric_id)
    found = version_get(rubric, version)
    data = version_data(rubric, found)
    data["created_at"] = data["created_at"].isoformat()
    data["updated_at"] = data["updated_at"].isoformat()
    return found.version, data
