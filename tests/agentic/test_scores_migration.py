"""0005/0006 move the agentic metrics from nine AgentEvaluation columns to Score rows and back.

Each test migrates agentic back to 0004 (columns), forward to the latest migration (rows) and, in a
finally, forward again, so the tests after it find the schema the current models have."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.agentic.demo import load_demo_evaluations
from apps.scores.models import Score

BEFORE = [("agentic", "0004_rollup_metric_coverage")]
METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")
COLUMNS = [f"{name}{part}" for name in METRICS for part in ("", "_reasoning", "_status")]
BASE = "/api/v1/metrics"


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def _columns(apps) -> dict[str, dict]:
    Evaluation = apps.get_model("agentic", "AgentEvaluation")
    return {row.pop("session_id"): row for row in Evaluation.objects.values("session_id", *COLUMNS)}


def _old_row(Evaluation, session_id: str, judge: str, metrics: dict, **extra):
    fields = {}
    for name, (value, status, reasoning) in metrics.items():
        fields.update({name: value, f"{name}_status": status, f"{name}_reasoning": reasoning})
    return Evaluation.objects.create(
        session_id=session_id,
        source="manual",
        agent_name="a",
        judge=judge,
        fingerprint=session_id.ljust(64, "0"),
        overall_score=0.5,
        **fields,
        **extra,
    )


# transaction=True: migrating alters the agentic tables, which SQLite's schema editor refuses to do
# inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_columns_become_score_rows_and_come_back():
    try:
        apps = _migrate(BEFORE)
        Evaluation = apps.get_model("agentic", "AgentEvaluation")
        _old_row(
            Evaluation,
            "heuristic",
            "heuristic:v1",
            {
                "task_adherence": (0.9, "ok", "did it"),
                "tool_call_accuracy": (None, "skipped", "no tools needed"),
                "intent_resolution": (0.25, "ok", "partly"),
            },
        )
        _old_row(
            Evaluation,
            "llm",
            "openai:gpt-4o-mini",
            {
                "task_adherence": (0.5, "ok", "[3/5] half"),
                "tool_call_accuracy": (1.0, "ok", "[5/5] right"),
                "intent_resolution": (None, "error", "timed out"),
            },
        )
        before = _columns(apps)

        apps = _migrate(_latest())
        Evaluation = apps.get_model("agentic", "AgentEvaluation")
        ids = dict(Evaluation.objects.values_list("session_id", "pk"))
        rows = {(s.subject_id, s.key): s for s in Score.objects.filter(subject_kind="agentic_evaluation")}
        # Three rows per evaluation, one per metric, in the metrics' order, nothing else.
        assert len(rows) == 6
        for session, pk in ids.items():
            for position, name in enumerate(METRICS):
                score = rows[(pk, name)]
                assert (score.kind, score.position, score.value, score.status, score.reasoning) == (
                    "metric",
                    position,
                    before[session][name],
                    before[session][f"{name}_status"],
                    before[session][f"{name}_reasoning"],
                )
        assert {rows[(ids["llm"], m)].source for m in METRICS} == {"llm"}
        assert {rows[(ids["heuristic"], m)].source for m in METRICS} == {"code"}
        assert rows[(ids["llm"], "task_adherence")].judge == "openai:gpt-4o-mini"
        # The error that agenteval_online_once leaves out now reads from has_error.
        assert dict(Evaluation.objects.values_list("session_id", "has_error")) == {"heuristic": False, "llm": True}

        apps = _migrate(BEFORE)
        # The columns hold exactly what they held, and the rows that replaced them are gone.
        assert _columns(apps) == before
        assert not Score.objects.filter(subject_kind="agentic_evaluation").exists()
    finally:
        _migrate(_latest())


def _api_answers(client) -> dict:
    history = client.get(f"{BASE}/history?limit=500").json()
    return {
        "history": history,
        "details": {
            r["session_id"]: client.get(f"{BASE}/history/{r['session_id']}").json() for r in history["evaluations"]
        },
        "export": client.get(f"{BASE}/export?format=json").json(),
        "export_jsonl": client.get(f"{BASE}/export?format=jsonl").json(),
        "summary": client.get(f"{BASE}/summary").json(),
    }


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_the_demo_data_the_same_after_the_migration(api, demo_traces):
    assert load_demo_evaluations() == 5
    try:
        served = _api_answers(api)
        # Back to the columns: what they hold for each demo evaluation is what the API served.
        old = _columns(_migrate(BEFORE))
        assert set(old) == {r["session_id"] for r in served["history"]["evaluations"]}
        for record in served["history"]["evaluations"]:
            assert {c: record[c] for c in COLUMNS} == old[record["session_id"]]

        _migrate(_latest())
        after = _api_answers(api)
        # Rebuilt from the old columns into rows, the answers are the same, field for field.
        assert after == served
        for record in after["history"]["evaluations"]:
            assert {c: record[c] for c in COLUMNS} == old[record["session_id"]]
    finally:
        _migrate(_latest())
