"""Agentic metrics move from nine columns of AgentEvaluation to Score rows (subject_kind
agentic_evaluation, kind metric, key the metric's name), and agenteval_online_once reads the new
has_error flag instead of the three status columns. 0006 then drops the columns.

Reversible: the reverse writes each evaluation's Score rows back into the columns (0006's reverse
has re-added them empty) and deletes the rows."""

from django.db import migrations, models
from django.db.models import Q

import apps.agentic.models

METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")
SUBJECT_KIND = "agentic_evaluation"
BATCH = 2000


def _source(judge: str) -> str:
    return "llm" if judge.startswith("openai:") else "code"


def columns_to_scores(apps, schema_editor):
    Evaluation = apps.get_model("agentic", "AgentEvaluation")
    Score = apps.get_model("scores", "Score")
    columns = [f"{name}{part}" for name in METRICS for part in ("", "_reasoning", "_status")]
    rows = (Evaluation.objects.order_by("pk").values("pk", "judge", "created_at", *columns)
            .iterator(chunk_size=BATCH))
    batch = []
    for ev in rows:
        for position, name in enumerate(METRICS):
            batch.append(Score(
                subject_kind=SUBJECT_KIND, subject_id=ev["pk"], kind="metric", key=name, position=position,
                source=_source(ev["judge"]), status=ev[f"{name}_status"], value=ev[name],
                reasoning=ev[f"{name}_reasoning"], judge=ev["judge"], created_at=ev["created_at"]))
        if len(batch) >= BATCH:
            Score.objects.bulk_create(batch)
            batch.clear()
    Score.objects.bulk_create(batch)
    errored = Q()
    for name in METRICS:
        errored |= Q(**{f"{name}_status": "error"})
    Evaluation.objects.filter(errored).update(has_error=True)


def _update_postgresql(schema_editor, Evaluation, pending):
    """One UPDATE … FROM unnest(arrays) for a batch: bulk_update's CASE WHEN per row and column cost
    about 1 ms of Python each (100,000 evaluations took 340 s back, bench/migrate_scores.py). A metric
    an evaluation has no row of keeps the column's value, as the bulk_update path does."""
    quote = schema_editor.quote_name
    column = {f: quote(Evaluation._meta.get_field(f).column) for name in METRICS
              for f in (name, f"{name}_reasoning", f"{name}_status")}
    ids = list(pending)
    arrays, names, types, sets = [ids], ["id"], ["bigint"], []
    for name in METRICS:
        present = [name in pending[pk] for pk in ids]
        arrays += [present, *([pending[pk].get(f) for pk in ids] for f in (name, f"{name}_reasoning", f"{name}_status"))]
        names += [f"{name}_set", name, f"{name}_reasoning", f"{name}_status"]
        types += ["boolean", "double precision", "text", "text"]
        sets += [f"{column[f]} = CASE WHEN v.{name}_set THEN v.{f} ELSE e.{column[f]} END"
                 for f in (name, f"{name}_reasoning", f"{name}_status")]
    unnest = ", ".join(f"%s::{t}[]" for t in types)
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(Evaluation._meta.db_table)} AS e SET {', '.join(sets)} "
            f"FROM unnest({unnest}) AS v({', '.join(names)}) WHERE e.{quote(Evaluation._meta.pk.column)} = v.id",
            arrays)


def scores_to_columns(apps, schema_editor):
    Evaluation = apps.get_model("agentic", "AgentEvaluation")
    Score = apps.get_model("scores", "Score")
    # The judge's rows only: a person's (source human) is a review, which queues 0005's reverse makes
    # a MetricReview again; in the columns it would pass for the judge's score.
    machine = Score.objects.filter(subject_kind=SUBJECT_KIND, kind="metric").exclude(source="human")
    scores = (machine.filter(key__in=METRICS)
              .order_by("subject_id", "position", "id").values("subject_id", "key", "value", "reasoning", "status")
              .iterator(chunk_size=BATCH))
    fields = [f"{name}{part}" for name in METRICS for part in ("", "_reasoning", "_status")]
    pending: dict[int, dict] = {}

    def flush():
        if schema_editor.connection.vendor == "postgresql":
            _update_postgresql(schema_editor, Evaluation, pending)
            pending.clear()
            return
        evaluations = Evaluation.objects.in_bulk(list(pending))
        for pk, values in pending.items():
            for field, value in values.items():
                setattr(evaluations[pk], field, value)
        Evaluation.objects.bulk_update(evaluations.values(), fields, batch_size=500)
        pending.clear()

    for score in scores:
        if len(pending) >= BATCH and score["subject_id"] not in pending:
            flush()
        name = score["key"]
        pending.setdefault(score["subject_id"], {}).update({
            name: score["value"], f"{name}_reasoning": score["reasoning"], f"{name}_status": score["status"]})
    flush()
    machine.delete()


class Migration(migrations.Migration):

    dependencies = [
        ("agentic", "0004_rollup_metric_coverage"),
        ("scores", "0001_initial"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="agentevaluation", name="agenteval_online_once"),
        migrations.AddField(model_name="agentevaluation", name="has_error", field=models.BooleanField(default=False)),
        migrations.AddField(model_name="agentevaluation", name="metric_scores",
                            field=apps.agentic.models.MetricScoresJoin()),
        migrations.RunPython(columns_to_scores, scores_to_columns),
        migrations.AddConstraint(
            model_name="agentevaluation",
            constraint=models.UniqueConstraint(condition=Q(("has_error", False), ("rule__isnull", False)),
                                               fields=("trace", "judge", "fingerprint"), name="agenteval_online_once"),
        ),
    ]
