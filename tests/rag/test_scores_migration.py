"""Migration rag 0003 moves TRACE metrics from TraceEvaluation.scores / .details and TraceEvaluationTest
rows to Score rows, and back; 0004 drops the old stores. The tests migrate back to 0002 (the old
schema), write old-style rows with the historical models, migrate forward and read them through the
current code, then migrate back and check the old stores came back as they were."""

import json

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.rag.api.schemas import TraceAnswerOut, TraceEvaluationOut
from apps.rag.demo import DEMO_QUERIES
from apps.rag.metrics.evaluate import DETERMINISTIC, score_metrics
from apps.rag.models import TraceEvaluation
from apps.rag.parsing import parse_query
from apps.rag.payload import UNSUPPORTED, missing_parameters
from apps.scores.models import Score
from tests.rag.helpers import post

OLD = [("rag", "0002_alter_traceevaluation_options_and_more")]

SCORED = {
    "method": "ragas:IDBasedContextRecall",
    "found_relevant_count": 1,
    "status": "scored",
    "judge": "deterministic",
}
ERRORED = {
    "method": "ragas:Faithfulness",
    "llm_calls": 1,
    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    "status": "error",
    "reason": "the LLM gave no usable verdict",
    "judge": "openai:gpt-4o-mini",
}
SKIPPED = {
    "method": "exact_match",
    "status": "skipped",
    "normalised_answer": "",
    "reason": "the answer has no word characters to compare",
    "judge": "deterministic",
}
JUDGED = {"method": "ragas:AnswerRelevancy", "llm_calls": 3, "status": "scored", "judge": "openai:gpt-4o-mini"}
# name -> (old test row fields, details), in the requested order.
TESTS = {
    "context_recall": (
        {"status": "scored", "score": 1.0, "method": SCORED["method"], "judge": "deterministic"},
        SCORED,
    ),
    "faithfulness": (
        {"status": "error", "score": None, "method": ERRORED["method"], "judge": "openai:gpt-4o-mini"},
        ERRORED,
    ),
    "answer_accuracy": (
        {"status": "skipped", "score": None, "method": "exact_match", "judge": "deterministic"},
        SKIPPED,
    ),
    "answer_relevancy": (
        {"status": "scored", "score": 0.25, "method": JUDGED["method"], "judge": "openai:gpt-4o-mini"},
        JUDGED,
    ),
    "context_precision": ({"status": "missing", "missing": ["relevant_context_ids"]}, None),
    "bleu": ({"status": "unsupported", "missing": [UNSUPPORTED]}, None),
    "context_utilisation": ({"status": "not_run"}, None),
}


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


def _leaf():
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _old_evaluation(apps):
    Evaluation, Test = apps.get_model("rag", "TraceEvaluation"), apps.get_model("rag", "TraceEvaluationTest")
    evaluation = Evaluation.objects.create(
        query="{}",
        source="json",
        payload={"question": "q"},
        tests=list(TESTS),
        outcome="partial",
        partial=True,
        judge="openai:gpt-4o-mini",
        missing={name: (row.get("missing") or False) for name, (row, _) in TESTS.items()},
        scores={name: row["score"] for name, (row, details) in TESTS.items() if details},
        details={name: details for name, (_, details) in TESTS.items() if details},
    )
    for name, (row, _) in TESTS.items():
        Test.objects.create(evaluation=evaluation, name=name, **row)
    return evaluation.pk


def _old_stores(apps, pk):
    Evaluation, Test = apps.get_model("rag", "TraceEvaluation"), apps.get_model("rag", "TraceEvaluationTest")
    evaluation = Evaluation.objects.get(pk=pk)
    tests = list(
        Test.objects.filter(evaluation_id=pk)
        .order_by("id")
        .values("name", "status", "score", "method", "judge", "missing")
    )
    return evaluation.scores, evaluation.details, tests


# transaction=True: migrating back and forth alters the rag tables, which SQLite's schema editor
# refuses to do inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_old_stores_become_score_rows_and_come_back(api):
    old_apps = _migrate(OLD)
    try:
        pk = _old_evaluation(old_apps)
        before = _old_stores(old_apps, pk)
    finally:
        _leaf()

    rows = {s.key: s for s in Score.objects.filter(subject_kind="rag_evaluation", subject_id=pk)}
    assert [s.key for s in Score.objects.filter(subject_id=pk).order_by("position")] == list(TESTS)
    assert {k: (s.status, s.reason) for k, s in rows.items()} == {
        "context_recall": ("ok", ""),
        "faithfulness": ("error", ""),
        "answer_accuracy": ("skipped", ""),
        "answer_relevancy": ("ok", ""),
        "context_precision": ("skipped", "missing"),
        "bleu": ("skipped", "unsupported"),
        "context_utilisation": ("skipped", "not_run"),
    }
    # Who judged: the two metrics the LLM scored are llm, the rest (and what never ran) code.
    assert {k for k, s in rows.items() if s.source == "llm"} == {"faithfulness", "answer_relevancy"}
    assert rows["answer_relevancy"].value == 0.25 and rows["context_recall"].value == 1.0
    assert rows["faithfulness"].reasoning == "the LLM gave no usable verdict"
    assert rows["faithfulness"].usage == ERRORED["usage"] and rows["faithfulness"].judge == "openai:gpt-4o-mini"
    assert rows["context_precision"].detail == {"missing": ["relevant_context_ids"]}
    assert rows["context_utilisation"].detail is None and rows["context_utilisation"].value is None

    # The history answers what the old stores held.
    scores, details, tests = before
    answer = api.get(f"/api/v1/trace/history/{pk}").json()
    assert answer["evaluation_scores"] == scores and answer["details"] == details
    assert answer["test_results"] == tests

    # A person's score of a metric is a Score too: going back must leave it alone. No pass/fail, so
    # that it is not a review queues 0005's reverse (which runs first, after rag 0003) makes a MetricReview.
    Score.objects.create(
        subject_kind="rag_evaluation", subject_id=pk, kind="metric", key="context_recall", source="human", passed=None
    )
    old_apps = _migrate(OLD)
    try:
        assert _old_stores(old_apps, pk) == before
        assert list(Score.objects.filter(subject_id=pk).values_list("source", flat=True)) == ["human"]
    finally:
        _leaf()
    # Forward again: the rows are back, once.
    assert Score.objects.filter(subject_id=pk).exclude(source="human").count() == len(TESTS)


def _old_store(apps, query: str, partial: bool) -> tuple[int, dict]:
    """What the service stored before 0003 (its _store and _test_row, written out), and the POST
    answer it gave, for one demo query."""
    Evaluation, Test = apps.get_model("rag", "TraceEvaluation"), apps.get_model("rag", "TraceEvaluationTest")
    parsed = parse_query(query, use_llm=False)
    missing = missing_parameters(parsed.payload)
    complete = [name for name, absent in missing.items() if absent is False]
    anything_missing = len(complete) != len(missing)
    scoring = score_metrics(complete if (partial or not anything_missing) else [], parsed.payload, use_llm=False)
    provided = parsed.payload.model_dump(mode="json")
    provided["parsing"] = {"source": parsed.source, "notes": parsed.notes}
    body = {
        "provided_parameters": provided,
        "tests": parsed.payload.tests,
        "missing": missing,
        "evaluation_scores": scoring.scores,
        "details": scoring.details,
    }
    outcome = "missing" if anything_missing and not partial else "partial" if anything_missing else "scored"
    evaluation = Evaluation.objects.create(
        query=query,
        source=parsed.source,
        payload=provided,
        tests=parsed.payload.tests,
        missing=missing,
        scores=scoring.scores,
        details=scoring.details,
        outcome=outcome,
        partial=partial,
        judge=DETERMINISTIC,
        duration_ms=1.0,
    )
    for name, absent in missing.items():
        details = scoring.details.get(name)
        if absent == [UNSUPPORTED]:
            row = {"status": "unsupported", "missing": absent}
        elif absent:
            row = {"status": "missing", "missing": absent}
        elif details is None:
            row = {"status": "not_run"}
        else:
            row = {
                "status": details.get("status", "scored"),
                "score": scoring.scores.get(name),
                "method": details.get("method", ""),
                "judge": details.get("judge", ""),
            }
        Test.objects.create(evaluation=evaluation, name=name, **row)
    return evaluation.pk, body


def _old_history(apps, pk) -> dict:
    """What GET /api/v1/trace/history/<id> answered before 0003 (its evaluation_data, written out)."""
    evaluation = apps.get_model("rag", "TraceEvaluation").objects.get(pk=pk)
    tests = apps.get_model("rag", "TraceEvaluationTest").objects.filter(evaluation_id=pk).order_by("id")
    return {
        "id": evaluation.pk,
        "created_at": evaluation.created_at,
        "source": evaluation.source,
        "outcome": evaluation.outcome,
        "partial": evaluation.partial,
        "judge": evaluation.judge,
        "tests": evaluation.tests,
        "missing": evaluation.missing,
        "evaluation_scores": evaluation.scores,
        "details": evaluation.details,
        "provided_parameters": evaluation.payload,
        "llm_usage": evaluation.llm_usage,
        "duration_ms": evaluation.duration_ms,
        "test_results": [
            {
                "name": t.name,
                "status": t.status,
                "score": t.score,
                "method": t.method,
                "judge": t.judge,
                "missing": t.missing,
            }
            for t in tests
        ],
    }


def _as_json(model, data) -> dict:
    answer = model.model_validate(data).model_dump(mode="json")
    answer.pop("created_at", None)  # rendered by a different encoder; compared as the id's row anyway
    return answer


@pytest.mark.django_db(transaction=True)
def test_demo_answers_are_the_same_before_and_after(api):
    old_apps = _migrate(OLD)
    try:
        stored = [_old_store(old_apps, query, partial) for query, partial in DEMO_QUERIES]
        before = {pk: _as_json(TraceEvaluationOut, _old_history(old_apps, pk)) for pk, _ in stored}
    finally:
        _leaf()

    for pk, _ in stored:
        after = api.get(f"/api/v1/trace/history/{pk}").json()
        after.pop("created_at")
        # Every field and value as before. The per-test objects keep the requested order, as the
        # POST answer gives them (PostgreSQL's jsonb column used to reorder them by key length).
        assert after == before[pk]
        assert list(after["evaluation_scores"]) == [t for t in after["tests"] if t in after["evaluation_scores"]]
    listed = api.get("/api/v1/trace/history").json()["results"]
    assert {r["id"]: {k: v for k, v in r.items() if k != "created_at"} for r in listed} == before

    # The POST answer, now read from the Score rows the request stored, is the old in-memory body
    # to the key order.
    for (query, partial), (_, body) in zip(DEMO_QUERIES, stored, strict=True):
        response = post(api, query, partial="true") if partial else post(api, query)
        assert json.dumps(response.json()) == json.dumps(_as_json(TraceAnswerOut, body))
    assert TraceEvaluation.objects.count() == 2 * len(DEMO_QUERIES)


@pytest.mark.django_db(transaction=True)
def test_the_migration_goes_through_every_batch(monkeypatch):
    import importlib

    migration = importlib.import_module("apps.rag.migrations.0003_metric_scores")
    # Batches of two over five evaluations: the last, short batch is migrated too, each row once.
    monkeypatch.setattr(migration, "BATCH", 2)
    old_apps = _migrate(OLD)
    try:
        pks = [_old_evaluation(old_apps) for _ in range(5)]
    finally:
        _leaf()
    counts = {pk: Score.objects.filter(subject_kind="rag_evaluation", subject_id=pk).count() for pk in pks}
    assert counts == {pk: len(TESTS) for pk in pks}
    old_apps = _migrate(OLD)
    try:
        assert all(_old_stores(old_apps, pk)[0] == _old_stores(old_apps, pks[0])[0] != {} for pk in pks)
        assert not Score.objects.exists()
    finally:
        _leaf()
