"""Migrations 0002-0009 (issue 22): queue items' three foreign keys become a subject kind + id,
MetricReview rows become human Score rows, and a queue's sample per cent a 0..1 rate; both
ways. Subjects are made with today's factories (their tables do not change here), the old rows
with the historical models of queues 0001."""

import importlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from apps.queues.models import QueueItem, ReviewQueue
from apps.scores.models import Score
from apps.scores.vocabulary import JudgeStatus, Reason, ScoreSource, SubjectKind
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import UserFactory
from tests.rag.factories import TraceEvaluationFactory

from .factories import machine_score, reviewable_result

BEFORE = [("queues", "0001_initial")]


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target or executor.loader.graph.leaf_nodes())
    return executor.loader.project_state(target).apps if target else None


# transaction=True: migrating back and forth alters tables, which SQLite's schema editor refuses
# inside the atomic block the plain db fixture wraps a test in.
@pytest.mark.django_db(transaction=True)
def test_items_and_metric_reviews_move_to_subjects_and_scores_and_back(monkeypatch):
    # Batches of one review: the chunking is what a large table goes through, exercised here.
    monkeypatch.setattr(importlib.import_module("apps.queues.migrations.0005_metric_reviews_to_scores"), "BATCH", 1)
    result, agentic, rag = reviewable_result(), AgentEvaluationFactory(), TraceEvaluationFactory()
    reviewer = UserFactory(username="rita")
    # The judges' own rows (what apps.agentic stores after issue 22; apps.rag's factory stores its
    # own, here re-judged as skipped for a missing input); none for context_recall.
    machine_score(agentic, "task_adherence", value=0.9)
    Score.objects.filter(subject_kind=SubjectKind.RAG_EVALUATION, subject_id=rag.pk, key="context_recall").delete()
    machine_score(rag, "faithfulness", value=None, status=JudgeStatus.SKIPPED, reason=Reason.MISSING)
    machine_rows = Score.objects.machine().count()
    try:
        old = _migrate(BEFORE)
        Queue, Item, Review = (old.get_model("queues", name) for name in ("ReviewQueue", "QueueItem", "MetricReview"))
        runs_q, agentic_q, rag_q = (
            Queue.objects.create(name=kind, kind=kind, sample_percent=percent)
            for kind, percent in (("run_result", 25), ("agentic_evaluation", 0), ("rag_evaluation", 100))
        )
        Item.objects.create(queue=runs_q, result_id=result.pk, origin="hand")
        Item.objects.create(queue=agentic_q, agent_evaluation_id=agentic.pk, done_at="2026-01-01T00:00:00Z")
        Item.objects.create(queue=rag_q, rag_evaluation_id=rag.pk)
        # Two reviews of one metric (the newer in force), and RAG reviews with and without a judge row.
        Review.objects.create(
            agent_evaluation_id=agentic.pk,
            metric="task_adherence",
            score=0.2,
            judge_score=0.9,
            note="older",
            reviewer_id=reviewer.pk,
            created_at="2026-01-01T00:00:00Z",
        )
        Review.objects.create(
            agent_evaluation_id=agentic.pk,
            metric="task_adherence",
            score=0.3,
            judge_score=0.9,
            note="newer",
            reviewer_id=reviewer.pk,
            created_at="2026-01-02T00:00:00Z",
        )
        Review.objects.create(rag_evaluation_id=rag.pk, metric="faithfulness", passed=False, judge_status="missing")
        Review.objects.create(rag_evaluation_id=rag.pk, metric="context_recall", passed=True, judge_score=1.0)
    finally:
        _migrate(None)

    assert sorted(QueueItem.objects.values_list("queue__name", "subject_kind", "subject_id", "origin")) == [
        ("agentic_evaluation", "agentic_evaluation", agentic.pk, "rule"),
        ("rag_evaluation", "rag_evaluation", rag.pk, "rule"),
        ("run_result", "run_result", result.pk, "hand"),
    ]
    assert dict(ReviewQueue.objects.values_list("name", "sample_rate")) == {
        "run_result": 0.25,
        "agentic_evaluation": 0.0,
        "rag_evaluation": 1.0,
    }
    humans = Score.objects.human().order_by("created_at", "id")
    assert [
        (h.subject_kind, h.subject_id, h.kind, h.key, h.value, h.passed, h.reasoning, h.author_id) for h in humans
    ] == [
        (SubjectKind.AGENTIC_EVALUATION, agentic.pk, "metric", "task_adherence", 0.2, None, "older", reviewer.pk),
        (SubjectKind.AGENTIC_EVALUATION, agentic.pk, "metric", "task_adherence", 0.3, None, "newer", reviewer.pk),
        (SubjectKind.RAG_EVALUATION, rag.pk, "metric", "faithfulness", None, False, "", None),
        (SubjectKind.RAG_EVALUATION, rag.pk, "metric", "context_recall", None, True, "", None),
    ]
    # The judge's copied score is not carried: the judges' own rows are the only machine rows still.
    assert Score.objects.machine().count() == machine_rows
    assert all(h.source == ScoreSource.HUMAN and h.status == JudgeStatus.OK for h in humans)

    try:
        old = _migrate(BEFORE)
        Item, Review = old.get_model("queues", "QueueItem"), old.get_model("queues", "MetricReview")
        assert dict(old.get_model("queues", "ReviewQueue").objects.values_list("name", "sample_percent")) == {
            "run_result": 25.0,
            "agentic_evaluation": 0.0,
            "rag_evaluation": 100.0,
        }
        assert list(
            Item.objects.order_by("queue__name").values_list("result_id", "agent_evaluation_id", "rag_evaluation_id")
        ) == [(None, agentic.pk, None), (None, None, rag.pk), (result.pk, None, None)]
        rebuilt = [
            (
                r.agent_evaluation_id,
                r.rag_evaluation_id,
                r.metric,
                r.score,
                r.passed,
                r.judge_score,
                r.judge_status,
                r.note,
                r.reviewer_id,
            )
            for r in Review.objects.order_by("created_at", "id")
        ]
        assert rebuilt == [
            (agentic.pk, None, "task_adherence", 0.2, None, 0.9, "ok", "older", reviewer.pk),
            (agentic.pk, None, "task_adherence", 0.3, None, 0.9, "ok", "newer", reviewer.pk),
            # The judge's row said skipped for a missing input: the old word for it comes back.
            (None, rag.pk, "faithfulness", None, False, None, "missing", "", None),
            # No judge row to read: nothing to compare with, said as such.
            (None, rag.pk, "context_recall", None, True, None, "skipped", "", None),
        ]
        # The human rows went back into the old table, so going forward again does not double them.
        assert not Score.objects.human().exists()
    finally:
        _migrate(None)
    assert Score.objects.human().count() == 4
