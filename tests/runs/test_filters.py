"""apps/runs/filters.py: the run lists' and the results API's filters, applied by the selectors."""

import uuid

import pytest

from apps.core.models import Project
from apps.runs import selectors
from apps.runs.models import EvaluationRun
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion

pytestmark = pytest.mark.django_db


def _runs():
    test_set, dataset = uuid.uuid4(), uuid.uuid4()
    a = EvaluationRunFactory(agent_id="a" * 24, test_set_id=test_set, dataset_id=None)
    b = EvaluationRunFactory(agent_id="b" * 24, test_set_id=test_set, dataset_id=None)
    v1 = EvaluationRunFactory(agent_id="a" * 24, test_set_id=None, dataset_id=dataset)
    EvaluationRun.objects.filter(pk=b.pk).update(status=EvaluationRun.Status.FAILED)
    return test_set, dataset, a, b, v1


def test_run_lists_filter_by_bot_status_and_test_set_or_question_set():
    test_set, dataset, a, b, v1 = _runs()

    def pks(**filters):
        return {run.pk for run in selectors.run_named_list(project=Project.objects.default(), filters=filters)}

    assert pks() == {a.pk, b.pk, v1.pk}
    assert pks(agent_id="a" * 24) == {a.pk, v1.pk}
    assert pks(status="failed") == {b.pk}
    assert pks(test_set_id=str(test_set)) == {a.pk, b.pk}
    assert pks(test_set_id=str(dataset)) == {v1.pk}  # the one id box names a question set too
    assert pks(agent_id="a" * 24, test_set_id=str(test_set)) == {a.pk}
    # Blank values are no filter (the console's empty boxes); the API's list takes the same filters.
    assert pks(agent_id="", test_set_id="", status="") == {a.pk, b.pk, v1.pk}
    assert [
        r.pk for r in selectors.run_list(project=Project.objects.default(), filters={"agent_id": "a" * 24}, limit=1)
    ] == [v1.pk]


def test_a_value_that_does_not_validate_chooses_no_run_rather_than_every_run():
    _runs()
    assert (
        list(selectors.run_named_list(project=Project.objects.default(), filters={"test_set_id": "not-a-uuid"})) == []
    )
    assert list(selectors.run_named_list(project=Project.objects.default(), filters={"status": "sleeping"})) == []


def test_the_results_api_list_filters_by_verdict_and_item_type():
    run = EvaluationRunFactory()
    passed = EvaluationResultFactory(run=run, position=0, criteria_scores=[criterion("c", True)])
    failed = EvaluationResultFactory(run=run, position=1, criteria_scores=[criterion("c", False)])
    scenario = EvaluationResultFactory(
        run=run, position=2, item_type="scenario", criteria_scores=[criterion("c", False)]
    )

    def pks(**filters):
        return [r.pk for r in selectors.result_list(run=run, filters=filters)]

    assert pks() == [passed.pk, failed.pk, scenario.pk]
    assert pks(passed=False) == [failed.pk, scenario.pk]
    assert pks(passed=True) == [passed.pk]
    assert pks(item_type="scenario") == [scenario.pk]
    results, has_more = selectors.result_page(run=run, limit=1, offset=0, filters={"passed": False})
    assert [r.pk for r in results] == [failed.pk] and has_more
