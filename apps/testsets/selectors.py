"""Test set and question set reads, in the contract's shapes.

Functions named test_set_* are marked __test__ = False: a test module importing them must not
have pytest collect them as tests."""

import uuid

from django.db.models import Q

from apps.core.errors import NotFoundError

from .models import Dataset, TestSet, TestSetVersion


def _uuid(value, what: str):
    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise NotFoundError(f"No {what} {value}") from None


def test_set_get(test_set_id) -> TestSet:
    test_set = TestSet.objects.select_related("agent").filter(pk=_uuid(test_set_id, "test set")).first()
    if test_set is None:
        raise NotFoundError(f"No test set {test_set_id}")
    return test_set


def test_set_list(*, agent_id: str | None = None):
    test_sets = TestSet.objects.select_related("agent")
    if agent_id is not None:
        test_sets = test_sets.filter(agent__agent_id=agent_id)
    return test_sets


def test_set_version_get(test_set: TestSet, version: int | None = None) -> TestSetVersion:
    number = test_set.current_version if version is None else version
    found = TestSetVersion.objects.filter(test_set=test_set, version=number).first()
    if found is None:
        raise NotFoundError(f"Test set {test_set.pk} has no version {version}")
    return found


def test_set_version_data(test_set: TestSet, version: TestSetVersion, *, with_history: bool = False) -> dict:
    data = {**version.snapshot, "version": version.version, "created_at": test_set.created_at,
            "updated_at": version.created_at}
    if with_history:
        data["changelog"] = version.changelog
        data["author"] = version.author
    return data


def test_set_data(test_set: TestSet) -> dict:
    return test_set_version_data(test_set, test_set_version_get(test_set))


def test_set_list_data(test_sets) -> list[dict]:
    """Current versions of many test sets in two queries."""
    test_sets = list(test_sets)
    wanted = Q(pk__in=[])
    for test_set in test_sets:
        wanted |= Q(test_set_id=test_set.pk, version=test_set.current_version)
    versions = {v.test_set_id: v for v in TestSetVersion.objects.filter(wanted)} if test_sets else {}
    return [test_set_version_data(t, versions[t.pk]) for t in test_sets if t.pk in versions]


def test_set_versions(test_set: TestSet) -> list[dict]:
    return [
        {"test_set_id": str(test_set.pk), "version": v.version, "changelog": v.changelog, "author": v.author,
         "item_count": len(v.snapshot.get("items", [])), "created_at": v.created_at}
        for v in TestSetVersion.objects.filter(test_set=test_set).order_by("-version")
    ]


def test_set_version_items(test_set_id, version: int | None) -> tuple[int, list[dict]]:
    """For the run engine: (version number, that version's items in the contract's item shape)."""
    test_set = test_set_get(test_set_id)
    found = test_set_version_get(test_set, version)
    return found.version, [dict(item) for item in found.snapshot["items"]]


def dataset_get(dataset_id) -> Dataset:
    dataset = Dataset.objects.select_related("agent").filter(pk=_uuid(dataset_id, "dataset")).first()
    if dataset is None:
        raise NotFoundError(f"No dataset {dataset_id}")
    return dataset


def dataset_list(*, agent_id: str | None = None):
    datasets = Dataset.objects.select_related("agent").prefetch_related("questions")
    if agent_id is not None:
        datasets = datasets.filter(agent__agent_id=agent_id)
    return datasets


def dataset_data(dataset: Dataset) -> dict:
    return {
        "dataset_id": str(dataset.pk),
        "name": dataset.name,
        "description": dataset.description,
        "agent_id": dataset.agent.agent_id if dataset.agent else None,
        "questions": [{"question_id": str(q.question_id), "question": q.question,
                       "expected_answer": q.expected_answer} for q in dataset.questions.all()],
        "created_at": dataset.created_at,
        "updated_at": dataset.updated_at,
    }


def dataset_questions(dataset_id) -> list[dict]:
    """For the run engine: the questions of a V1 question set, in order."""
    return dataset_data(dataset_get(dataset_id))["questions"]


for _selector in (test_set_get, test_set_list, test_set_list_data, test_set_version_get, test_set_version_data, test_set_data,
                  test_set_versions, test_set_version_items):
    _selector.__test__ = False
