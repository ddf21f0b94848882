"""Metrics are read from Score rows with one query per page, whatever the page's size."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.agentic.models import AgentEvaluation
from apps.scores.models import Score
from tests.agentic.factories import AgentEvaluationFactory

BASE = "/api/v1/metrics"


def _queries(client, url) -> tuple[int, dict]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url)
    assert response.status_code == 200
    return len(captured), response.json()


@pytest.mark.django_db
def test_history_reads_metrics_in_one_query_for_any_page_size(api):
    AgentEvaluationFactory.create_batch(2)
    api.get(f"{BASE}/history")  # the key's first use of the day writes its usage row; not counted
    small, _ = _queries(api, f"{BASE}/history")
    AgentEvaluationFactory.create_batch(
        20, tool_call_accuracy=None, tool_call_accuracy_status="skipped", tool_call_accuracy_reasoning="no tools needed"
    )
    large, body = _queries(api, f"{BASE}/history")
    # Eleven times the rows, the same number of queries: the Score rows come in one prefetch.
    assert small == large
    assert len(body["evaluations"]) == 22
    newest = body["evaluations"][0]
    assert (
        newest["tool_call_accuracy"],
        newest["tool_call_accuracy_status"],
        newest["tool_call_accuracy_reasoning"],
    ) == (None, "skipped", "no tools needed")


@pytest.mark.django_db
def test_a_metric_is_answered_from_its_score_row(api):
    evaluation = AgentEvaluationFactory()
    Score.objects.filter(subject_kind="agentic_evaluation", subject_id=evaluation.pk, key="intent_resolution").update(
        value=0.125, reasoning="edited row", status="ok"
    )
    record = api.get(f"{BASE}/history/{evaluation.session_id}").json()
    # The row is the one truth: there is no column beside it for the answer to come from.
    assert (record["intent_resolution"], record["intent_resolution_reasoning"]) == (0.125, "edited row")
    assert not hasattr(AgentEvaluation, "intent_resolution")


@pytest.mark.django_db
def test_a_batch_of_reused_evaluations_reads_their_metrics_in_one_query(api, demo_traces):
    ids = ["demo_k8s_list_delhi", "demo_vm_create_mumbai", "demo_k8s_delete_failed", "demo_billing_wrong_tool"]
    api.post(f"{BASE}/evaluate/batch", {"session_ids": ids[:1], "judge": "heuristic"}, format="json")
    with CaptureQueriesContext(connection) as one:
        api.post(f"{BASE}/evaluate/batch", {"session_ids": ids[:1], "judge": "heuristic"}, format="json")
    api.post(f"{BASE}/evaluate/batch", {"session_ids": ids, "judge": "heuristic"}, format="json")
    with CaptureQueriesContext(connection) as four:
        response = api.post(f"{BASE}/evaluate/batch", {"session_ids": ids, "judge": "heuristic"}, format="json")
    assert all(r["reused"] for r in response.json()["results"])
    assert len(four) == len(one)


@pytest.mark.django_db
def test_a_reviewers_human_score_leaves_the_judges_metric_and_the_export_rows_alone(api):
    from apps.agentic import selectors
    from apps.scores.services import human_score_record

    evaluation = AgentEvaluationFactory(task_adherence=0.9)
    human_score_record(
        subject_kind="agentic_evaluation", subject_id=evaluation.pk, kind="metric", key="task_adherence", value=0.1
    )
    record = api.get(f"{BASE}/history/{evaluation.session_id}").json()
    assert record["task_adherence"] == 0.9
    assert api.get(f"{BASE}/history").json()["evaluations"][0]["task_adherence"] == 0.9
    # One record per evaluation: the human row is not a second match of the metric's join.
    rows = list(selectors.evaluation_export_rows())
    assert [row["task_adherence"] for row in rows] == [0.9]
    if connection.vendor == "postgresql":
        lines = b"".join(selectors.evaluation_export_jsonl_postgres()).splitlines()
        assert [json.loads(line)["task_adherence"] for line in lines] == [0.9]


@pytest.mark.django_db
def test_a_batch_stores_each_metric_as_the_orm_would(api, demo_traces, monkeypatch):
    """The batch's metric rows (COPY on PostgreSQL) are the rows scores_store writes on SQLite."""
    from apps.agentic import fastpath

    sessions = ["demo_k8s_list_delhi", "demo_vm_create_mumbai", "demo_k8s_delete_failed"]
    fields = [f.attname for f in Score._meta.concrete_fields if f.attname not in ("id", "subject_id", "created_at")]

    def stored():
        before = set(AgentEvaluation.objects.values_list("pk", flat=True))
        body = {"session_ids": sessions, "judge": "heuristic", "force": True}
        assert api.post(f"{BASE}/evaluate/batch", body, format="json").status_code == 200
        new = AgentEvaluation.objects.exclude(pk__in=before)
        session_of = dict(new.values_list("pk", "session_id"))
        rows = Score.objects.filter(subject_kind="agentic_evaluation", subject_id__in=session_of)
        return sorted((session_of[row[0]], *row[1:]) for row in rows.values_list("subject_id", *fields))

    copied = stored()
    monkeypatch.setattr(fastpath, "enabled", lambda: False)
    inserted = stored()
    assert len(copied) == 9
    assert copied == inserted
