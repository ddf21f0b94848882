"""Test set and question set reads. A test set at a version, in the contract's TestSet shape, is
read with the shared selectors of apps.core.versioning (head_data, version_get, version_data,
head_list_data); its version list by the views apps.core.versioning.api.version_views makes."""

from apps.core.selectors import object_get
from apps.core.versioning.selectors import version_get

from .filters import DatasetFilter, TestSetFilter
from .models import Dataset, TestSet


def testset_get(test_set_id, *, project) -> TestSet:
    """The test set of `project`; another project's is NotFoundError, as one that does not exist."""
    return object_get(TestSet.objects.filter(project=project).select_related("bot"), test_set_id)


def testset_list(*, project, filters: dict | None = None):
    """The test sets of `project` the filters choose (TestSetFilter: agent_id), with their bot."""
    return TestSetFilter(filters or {}, TestSet.objects.filter(project=project).of_bot(), project=project).qs


def testset_version_items(test_set_id, version: int | None, *, project) -> tuple[int, list[dict]]:
    """For the run engine: (version number, that version's items in the contract's item shape)."""
    found = version_get(testset_get(test_set_id, project=project), version)
    return found.version, [dict(item) for item in found.snapshot["items"]]


def dataset_get(dataset_id, *, project) -> Dataset:
    """The question set of `project`; another project's is NotFoundError, as one that does not exist."""
    return object_get(Dataset.objects.filter(project=project).select_related("bot"), dataset_id)


def dataset_list(*, project, filters: dict | None = None):
    """The question sets of `project` the filters choose (DatasetFilter: agent_id), with their bot
    and questions."""
    rows = Dataset.objects.filter(project=project).of_bot().prefetch_related("questions")
    return DatasetFilter(filters or {}, rows, project=project).qs


def dataset_data(dataset: Dataset) -> dict:
    return {
        "dataset_id": str(dataset.pk),
        "name": dataset.name,
        "description": dataset.description,
        "agent_id": dataset.bot.agent_id if dataset.bot else None,
        "questions": [
            {"question_id": str(q.question_id), "question": q.question, "expected_answer": q.expected_answer}
            for q in dataset.questions.all()
        ],
        "created_at": dataset.created_at,
        "updated_at": dataset.updated_at,
    }


def dataset_questions(dataset_id, *, project) -> list[dict]:
    """For the run engine: the questions of a V1 question set of `project`, in order."""
    return dataset_data(dataset_get(dataset_id, project=project))["questions"]
