"""Rubric reads: current and historical versions in the contract's Rubric shape."""

import uuid

from django.db.models import Q

from apps.core.errors import NotFoundError

from .models import Rubric, RubricVersion


def _uuid(value, what: str):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFoundError(f"No {what} {value}") from None


def rubric_get(rubric_id) -> Rubric:
    rubric = Rubric.objects.select_related("agent").filter(pk=_uuid(rubric_id, "rubric")).first()
    if rubric is None:
        raise NotFoundError(f"No rubric {rubric_id}")
    return rubric


def rubric_list(*, agent_id: str | None = None):
    rubrics = Rubric.objects.select_related("agent")
    if agent_id is not None:
        rubrics = rubrics.filter(agent__agent_id=agent_id)
    return rubrics


def rubric_version_get(rubric: Rubric, version: int | None = None) -> RubricVersion:
    number = rubric.current_version if version is None else version
    found = RubricVersion.objects.filter(rubric=rubric, version=number).first()
    if found is None:
        raise NotFoundError(f"Rubric {rubric.pk} has no version {version}")
    return found


def rubric_version_data(rubric: Rubric, version: RubricVersion, *, with_history: bool = False) -> dict:
    """A version in the contract's Rubric shape: updated_at is when that version was published."""
    data = {**version.snapshot, "version": version.version, "created_at": rubric.created_at,
            "updated_at": version.created_at}
    if with_history:
        data["changelog"] = version.changelog
        data["author"] = version.author
    return data


def rubric_data(rubric: Rubric) -> dict:
    return rubric_version_data(rubric, rubric_version_get(rubric))


def rubric_list_data(rubrics) -> list[dict]:
    """Current versions of many rubrics in two queries."""
    rubrics = list(rubrics)
    wanted = Q(pk__in=[])
    for rubric in rubrics:
        wanted |= Q(rubric_id=rubric.pk, version=rubric.current_version)
    versions = {v.rubric_id: v for v in RubricVersion.objects.filter(wanted)} if rubrics else {}
    return [rubric_version_data(rubric, versions[rubric.pk]) for rubric in rubrics if rubric.pk in versions]


def rubric_versions(rubric: Rubric) -> list[dict]:
    return [
        {"rubric_id": str(rubric.pk), "version": v.version, "changelog": v.changelog, "author": v.author,
         "rule_count": len(v.snapshot.get("rules", [])), "created_at": v.created_at}
        for v in RubricVersion.objects.filter(rubric=rubric).order_by("-version")
    ]


def rubric_version_snapshot(rubric_id, version: int | None) -> tuple[int, dict]:
    """For the run engine: (version number, the rubric at that version in the contract's shape)."""
    rubric = rubric_get(rubric_id)
    found = rubric_version_get(rubric, version)
    data = rubric_version_data(rubric, found)
    data["created_at"] = data["created_at"].isoformat()
    data["updated_at"] = data["updated_at"].isoformat()
    return found.version, data
