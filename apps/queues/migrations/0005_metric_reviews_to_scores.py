"""MetricReview rows become human Score rows (issue 22): subject agentic_evaluation or
rag_evaluation, kind metric, key the metric, value (agentic, 0..1) or passed (RAG), reasoning the
note, author the reviewer, created_at kept so the newest stays the one in force. The judge's copied
score is not carried over: agreement reads the judge's own Score row of the same subject and key.

Going back rebuilds each MetricReview from its human Score, its judge_score and judge_status read
from the newest machine Score of the same subject and key (none: no score, "skipped"), and removes
the human Score rows it came from, so that going forward again does not count them twice."""

from django.db import migrations

BATCH = 2000
AGENTIC, RAG = "agentic_evaluation", "rag_evaluation"


def _chunks(rows):
    chunk = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= BATCH:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def reviews_to_scores(apps, schema_editor):
    MetricReview, Score = apps.get_model("queues", "MetricReview"), apps.get_model("scores", "Score")
    for chunk in _chunks(MetricReview.objects.order_by("pk").iterator(chunk_size=BATCH)):
        Score.objects.bulk_create([Score(
            subject_kind=AGENTIC if review.agent_evaluation_id else RAG,
            subject_id=review.agent_evaluation_id or review.rag_evaluation_id, kind="metric", key=review.metric,
            source="human", status="ok", passed=review.passed, value=review.score, reasoning=review.note,
            author_id=review.reviewer_id, created_at=review.created_at) for review in chunk])


def _judges(Score, chunk) -> dict:
    """The newest machine score per (subject kind, subject id, key) of the chunk's subjects."""
    newest = {}
    for kind in (AGENTIC, RAG):
        ids = {score.subject_id for score in chunk if score.subject_kind == kind}
        rows = (Score.objects.filter(subject_kind=kind, subject_id__in=ids, kind="metric").exclude(source="human")
                .order_by("created_at", "id"))
        for row in rows:
            newest[(kind, row.subject_id, row.key)] = row
    return newest


def _judge_status(judge, agentic: bool) -> str:
    if judge is None:
        return "skipped"  # no verdict of the judge to compare with
    # RAG rows kept their own status words (missing, unsupported, not_run), now reasons.
    return judge.status if agentic or not judge.reason else judge.reason


def scores_to_reviews(apps, schema_editor):
    MetricReview, Score = apps.get_model("queues", "MetricReview"), apps.get_model("scores", "Score")
    existing = {AGENTIC: apps.get_model("agentic", "AgentEvaluation"), RAG: apps.get_model("rag", "TraceEvaluation")}
    # Only what the old table can hold: an agentic review has a score 0..1, a RAG review a pass/fail.
    humans = (Score.objects.filter(source="human", kind="metric", subject_kind=AGENTIC, value__gte=0, value__lte=1)
              | Score.objects.filter(source="human", kind="metric", subject_kind=RAG, passed__isnull=False))
    for chunk in _chunks(humans.order_by("pk").iterator(chunk_size=BATCH)):
        alive = {kind: set(model.objects.filter(pk__in=[s.subject_id for s in chunk if s.subject_kind == kind])
                           .values_list("pk", flat=True)) for kind, model in existing.items()}
        judges = _judges(Score, chunk)
        reviews = []
        for score in chunk:
            if score.subject_id not in alive[score.subject_kind]:
                continue  # its evaluation is gone: the old foreign key cannot point at it
            judge = judges.get((score.subject_kind, score.subject_id, score.key))
            agentic = score.subject_kind == AGENTIC
            reviews.append(MetricReview(
                agent_evaluation_id=score.subject_id if agentic else None,
                rag_evaluation_id=None if agentic else score.subject_id, metric=score.key,
                score=score.value if agentic else None, passed=None if agentic else score.passed,
                judge_score=judge.value if judge else None,
                judge_status=_judge_status(judge, agentic),
                note=score.reasoning, reviewer_id=score.author_id, created_at=score.created_at))
        MetricReview.objects.bulk_create(reviews)
        Score.objects.filter(pk__in=[score.pk for score in chunk]).delete()


class Migration(migrations.Migration):

    # After the judges' own rows exist (agentic 0005, rag 0003), so that going back this reverse runs
    # first: it reads the judge's score and status from those rows, and agentic 0005's reverse would
    # otherwise take the human rows for the judge's (bench/migrate_scores.py found both at scale).
    dependencies = [
        ("queues", "0004_queue_item_drop_targets"),
        ("scores", "0001_initial"),
        ("agentic", "0005_metric_scores"),
        ("rag", "0003_metric_scores"),
    ]

    operations = [migrations.RunPython(reviews_to_scores, scores_to_reviews)]
