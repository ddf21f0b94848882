"""RAG metrics move from TraceEvaluation.scores / .details (JSON objects) and TraceEvaluationTest rows
to Score rows: subject rag_evaluation, kind metric, key = the test's name, position = its place among
the requested tests. Reversible: the reverse rebuilds the JSON objects and the test rows from the Score
rows and deletes them (a person's scores, source human, stay).

The mapping is written out here rather than imported from apps.rag.scoring, so that this migration
keeps doing what it did when the app's code moves on."""

from collections import defaultdict
from itertools import islice

from django.db import migrations

BATCH = 500
RAG = "rag_evaluation"
METRIC = "metric"
# A test's status as the history answered it -> (Score.status, Score.reason).
STORED = {
    "scored": ("ok", ""),
    "error": ("error", ""),
    "skipped": ("skipped", ""),
    "missing": ("skipped", "missing"),
    "unsupported": ("skipped", "unsupported"),
    "not_run": ("skipped", "not_run"),
}
WORD = {stored: word for word, stored in STORED.items()}
NOT_RAN = ("missing", "unsupported", "not_run")


def _chunks(iterable, size):
    iterator = iter(iterable)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _score_rows(Score, evaluation, tests):
    scores, details = evaluation.scores or {}, evaluation.details or {}
    by_name = {test.name: test for test in tests}
    # The test rows give the requested order; a name only in the JSON (never written so by the
    # service, but possible in hand-made data) follows them rather than being lost.
    names = list(by_name) + [name for name in [*scores, *details] if name not in by_name]
    rows = []
    for position, name in enumerate(dict.fromkeys(names)):
        test = by_name.get(name)
        evidence = details.get(name) if isinstance(details.get(name), dict) else None
        word = test.status if test else (evidence or {}).get("status", "scored")
        status, reason = STORED.get(word, ("error", ""))
        row = Score(subject_kind=RAG, subject_id=evaluation.pk, kind=METRIC, key=name, position=position,
                    source="code", status=status, reason=reason)
        if reason in NOT_RAN:
            row.detail = {"missing": list(test.missing)} if test and test.missing else None
        else:
            row.value = scores.get(name, test.score if test else None)
            row.judge = (test.judge if test else "") or (evidence or {}).get("judge", "")
            row.detail = evidence
            if evidence:
                row.reasoning = evidence.get("reason", "") if isinstance(evidence.get("reason"), str) else ""
                row.usage = evidence.get("usage") if isinstance(evidence.get("usage"), dict) else None
        row.source = "llm" if row.judge.startswith("openai:") else "code"
        rows.append(row)
    return rows


def scores_to_rows(apps, schema_editor):
    TraceEvaluation = apps.get_model("rag", "TraceEvaluation")
    TraceEvaluationTest = apps.get_model("rag", "TraceEvaluationTest")
    Score = apps.get_model("scores", "Score")
    evaluations = TraceEvaluation.objects.order_by("pk").only("pk", "scores", "details")
    for chunk in _chunks(evaluations.iterator(chunk_size=BATCH), BATCH):
        ids = [evaluation.pk for evaluation in chunk]
        # Evaluations stored by code that already wrote both (the release before this migration)
        # have their rows: they are not written twice.
        done = set(Score.objects.filter(subject_kind=RAG, subject_id__in=ids, kind=METRIC)
                   .exclude(source="human").values_list("subject_id", flat=True))
        tests = defaultdict(list)
        for test in TraceEvaluationTest.objects.filter(evaluation_id__in=ids).order_by("evaluation_id", "id"):
            tests[test.evaluation_id].append(test)
        rows = [row for evaluation in chunk if evaluation.pk not in done
                for row in _score_rows(Score, evaluation, tests[evaluation.pk])]
        Score.objects.bulk_create(rows, batch_size=2000)


def rows_to_scores(apps, schema_editor):
    TraceEvaluation = apps.get_model("rag", "TraceEvaluation")
    TraceEvaluationTest = apps.get_model("rag", "TraceEvaluationTest")
    Score = apps.get_model("scores", "Score")
    evaluations = TraceEvaluation.objects.order_by("pk").only("pk")
    for chunk in _chunks(evaluations.iterator(chunk_size=BATCH), BATCH):
        ids = [evaluation.pk for evaluation in chunk]
        machine = (Score.objects.filter(subject_kind=RAG, subject_id__in=ids, kind=METRIC).exclude(source="human")
                   .order_by("subject_id", "position", "id"))
        by_evaluation = defaultdict(list)
        for score in machine:
            by_evaluation[score.subject_id].append(score)
        tests = []
        for evaluation in chunk:
            evaluation.scores, evaluation.details = {}, {}
            for score in by_evaluation[evaluation.pk]:
                detail = score.detail if isinstance(score.detail, dict) else {}
                ran = score.reason not in NOT_RAN
                if ran:
                    evaluation.scores[score.key] = score.value
                    if score.detail is not None:
                        evaluation.details[score.key] = score.detail
                tests.append(TraceEvaluationTest(
                    evaluation_id=evaluation.pk, name=score.key,
                    status=WORD.get((score.status, score.reason), score.status),
                    score=score.value, method=detail.get("method", "") if ran else "", judge=score.judge,
                    missing=[] if ran else detail.get("missing", [])))
        TraceEvaluation.objects.bulk_update(chunk, ["scores", "details"])
        TraceEvaluationTest.objects.filter(evaluation_id__in=ids).delete()
        TraceEvaluationTest.objects.bulk_create(tests, batch_size=2000)
        machine.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("rag", "0002_alter_traceevaluation_options_and_more"),
        ("scores", "0001_initial"),
    ]

    operations = [migrations.RunPython(scores_to_rows, rows_to_scores)]
