"""The factories leave the rows the services would: tests build on them, so a factory that drifted
from the services would make every test that uses it check something that cannot happen."""

import pytest

from apps.agentic.models import EvaluationRollup
from apps.agentic.services import evaluation_rollup_rebuild
from apps.rubrics.models import RubricVersion
from apps.testsets.models import TestSetVersion
from apps.traces.models import AgentTrace
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import ApiKeyFactory, client_with_key
from tests.rag.factories import TraceEvaluationFactory
from tests.rubrics.factories import RubricFactory, RubricRuleFactory, RubricVersionFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, criterion, rule
from tests.testsets.factories import ItemFactory, SuiteFactory, SuiteVersionFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


def _content(snapshot: dict) -> dict:
    return {k: v for k, v in snapshot.items() if k != "version"}


def test_a_rubric_is_version_one_of_its_head(api):
    rubric = RubricFactory(rules=[RubricRuleFactory(id="A"), RubricRuleFactory(id="B", severity="high")])
    assert rubric.current_version == 1
    assert list(rubric.rules.values_list("rule_id", flat=True)) == ["A", "B"]
    # What the API serves for the head is exactly what version 1 stored.
    head = api.get(f"/api/v1/rubrics/{rubric.rubric_id}").json()
    version = RubricVersion.objects.get(rubric=rubric, version=1)
    assert version.changelog == "Created"
    assert _content(version.snapshot) == {
        k: v for k, v in head.items() if k not in ("version", "created_at", "updated_at")
    }


def test_a_rubric_version_is_published_by_the_service():
    version = RubricVersionFactory(name="Renamed", changelog="Rename", author="reviewer")
    rubric = version.rubric
    rubric.refresh_from_db()
    assert (version.version, rubric.current_version, rubric.name) == (2, 2, "Renamed")
    assert (version.changelog, version.author, version.snapshot["name"]) == ("Rename", "reviewer", "Renamed")
    # The first version is kept as it was.
    assert RubricVersion.objects.get(rubric=rubric, version=1).snapshot["name"] == "Support rubric"


def test_a_test_set_version_keeps_its_item_ids():
    test_set = SuiteFactory(items=[ItemFactory(name="one"), ItemFactory(name="two")])
    ids = list(test_set.items.values_list("item_id", flat=True))
    version = SuiteVersionFactory(test_set=test_set, name="Renamed")
    assert version.version == 2 and TestSetVersion.objects.filter(test_set=test_set).count() == 2
    assert [item["item_id"] for item in version.snapshot["items"]] == [str(i) for i in ids]


def test_an_api_key_authenticates_with_its_scopes():
    key = ApiKeyFactory(scopes=["read"])
    client = client_with_key(key)
    assert client.get("/api/v1/bots").status_code == 200
    assert client.post("/api/v1/bots", {}, format="json").status_code == 403
    assert not key.user.has_usable_password(), "a key's user signs in with the key only"


def test_tool_calls_are_numbered_and_counted_like_recorded_ones():
    trace = AgentTraceFactory(tool_calls=[{"tool_name": "a"}, {"tool_name": "b"}])
    assert list(trace.tool_calls.values_list("seq", "tool_name")) == [(1, "a"), (2, "b")]
    assert AgentTrace.objects.get(pk=trace.pk).tool_call_count == 2


def test_evaluations_keep_the_running_totals_exact():
    AgentEvaluationFactory()
    AgentEvaluationFactory(tool_call_accuracy=None, tool_call_accuracy_status="skipped")

    def snapshot():
        return sorted(
            (r.agent_name, r.operation, r.rating, r.count, round(r.overall_sum, 6))
            for r in EvaluationRollup.objects.all()
        )

    incremental = snapshot()
    evaluation_rollup_rebuild()
    assert snapshot() == incremental and sum(r[3] for r in incremental) == 2


def test_results_pass_as_the_engine_decides_and_count_in_their_run():
    run = EvaluationRunFactory()
    EvaluationResultFactory(run=run, criteria_scores=[criterion("c", True)], rubric_scores=[rule("R", False, "low")])
    failed = EvaluationResultFactory(
        run=run, criteria_scores=[criterion("c", True)], rubric_scores=[rule("R", False, "high")]
    )
    run.refresh_from_db()
    assert (run.total, run.completed) == (2, 2)
    assert run.results.first().passed is True, "a failed low-severity rule does not fail the item"
    assert (failed.criteria_passed, failed.rubric_passed, failed.passed) == (True, False, False)


def test_a_trace_evaluation_has_a_row_per_test():
    evaluation = TraceEvaluationFactory()
    assert sorted(row.name for row in evaluation.test_results) == sorted(evaluation.tests)
