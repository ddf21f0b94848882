"""Every run verdict becomes a Score row, and every VerdictReview a human Score row; backwards, the
rows become the JSON columns and reviews again (0012 then drops, or restores, the old columns).

Self-contained on purpose: a migration runs against the historical models, so it must not follow
later changes to the code that stores verdicts today (apps.runs.judging.types.Verdict.to_score).

- criteria_scores[i] -> kind criterion, key the criterion's text, position i, detail {"kind": ...};
- rubric_scores[i] -> kind rule, key the rule id, severity, scope, detail {"rule_name": ...};
- scores["correctness"] (V1) -> kind correctness; the comment's fields to passed/status/judge/reasoning,
  or detail {"error": ...} for a bot failure, and detail {"comment": ...} where those do not rebuild it;
- a verdict's status "skipped" whose reasoning starts "needs an LLM judge" gets reason needs_llm_judge;
- VerdictReview -> source human, same subject/kind/key, note -> reasoning, reviewer -> author,
  detail {"reviewer_name", "review_id"}. The judge's verdict the review copied is not kept: it is the
  machine row of the same subject and key, from which the reverse rebuilds it.

A result with no criteria list (criteria_scores null) has criteria_passed null, and one with no
rubric list rubric_passed null: that is how the reverse tells a null list from an empty one.
"""

import json
import uuid

from django.db import migrations

CHUNK = 1000
RUN_RESULT = "run_result"
NEEDS_LLM = "needs an LLM judge"


def _source(judge):
    return "llm" if (judge or "").startswith("openai:") else "code"


def _reason(status, reasoning):
    return "needs_llm_judge" if status == "skipped" and (reasoning or "").startswith(NEEDS_LLM) else ""


def _verdict_row(Score, result, kind, position, data):
    status = data.get("status") or "ok"
    reasoning = data.get("reasoning") or ""
    rule = kind == "rule"
    return Score(
        subject_kind=RUN_RESULT, subject_id=result.pk, parent_id=result.run_id, attempt=result.attempt, kind=kind,
        key=(data.get("rule_id") if rule else data.get("criterion")) or "", position=position,
        source=_source(data.get("judge")), status=status, reason=_reason(status, reasoning),
        passed=data.get("passed"), value=data.get("score"), reasoning=reasoning, judge=data.get("judge") or "",
        fingerprint=data.get("fingerprint"), usage=data.get("usage") or None,
        severity=(data.get("severity") or "") if rule else "", scope=(data.get("component_scope") or "") if rule else "",
        detail={"rule_name": data.get("rule_name", "")} if rule else {"kind": data.get("kind")},
        created_at=result.finished_at or result.created_at)


def _comment(passed, status, judge, reasoning):
    return json.dumps({"passed": passed, "status": status, "judge": judge, "reasoning": reasoning})


def _correctness_row(Score, result, entry):
    comment = entry.get("comment")
    try:
        parsed = json.loads(comment) if isinstance(comment, str) else None
    except ValueError:
        parsed = None
    parsed = parsed if isinstance(parsed, dict) else {}
    row = Score(subject_kind=RUN_RESULT, subject_id=result.pk, parent_id=result.run_id, attempt=result.attempt,
                kind="correctness", key="correctness", value=entry.get("score"), source="code",
                created_at=result.finished_at or result.created_at)
    if "error" in parsed:
        row.status, row.detail = "error", {"error": parsed["error"]}
        rebuilt = json.dumps({"error": parsed["error"]})
    else:
        row.status = parsed.get("status") or "ok"
        row.passed, row.judge, row.reasoning = parsed.get("passed"), parsed.get("judge") or "", parsed.get("reasoning") or ""
        row.source, row.reason = _source(row.judge), _reason(row.status, row.reasoning)
        rebuilt = _comment(row.passed, row.status, row.judge, row.reasoning)
    if rebuilt != comment:
        row.detail = {**(row.detail or {}), "comment": comment}
    return row


def forwards(apps, schema_editor):
    Score = apps.get_model("scores", "Score")
    EvaluationResult = apps.get_model("runs", "EvaluationResult")
    VerdictReview = apps.get_model("runs", "VerdictReview")
    results = (EvaluationResult.objects.order_by("pk")
               .only("pk", "run_id", "attempt", "finished_at", "created_at", "criteria_scores", "rubric_scores",
                     "scores"))
    last = 0
    while True:
        chunk = list(results.filter(pk__gt=last)[:CHUNK])
        if not chunk:
            break
        last = chunk[-1].pk
        rows = []
        for result in chunk:
            for position, data in enumerate(result.criteria_scores or []):
                rows.append(_verdict_row(Score, result, "criterion", position, data))
            for position, data in enumerate(result.rubric_scores or []):
                rows.append(_verdict_row(Score, result, "rule", position, data))
            if isinstance(result.scores, dict) and result.scores.get("correctness") is not None:
                rows.append(_correctness_row(Score, result, result.scores["correctness"]))
        Score.objects.bulk_create(rows, batch_size=2000)
    reviews = VerdictReview.objects.select_related("result").order_by("created_at", "id")
    Score.objects.bulk_create(
        (Score(subject_kind=RUN_RESULT, subject_id=review.result_id, parent_id=review.result.run_id,
               attempt=review.result.attempt, kind=review.kind, key=review.key, source="human", status="ok",
               passed=review.passed, reasoning=review.note, author_id=review.reviewer_id,
               detail={"reviewer_name": review.reviewer_name, "review_id": str(review.review_id)},
               created_at=review.created_at)
         for review in reviews.iterator(chunk_size=CHUNK)), batch_size=2000)


def _verdict_json(score):
    detail = score.detail or {}
    common = {"passed": score.passed, "score": score.value, "reasoning": score.reasoning, "status": score.status,
              "judge": score.judge, **({"usage": score.usage} if score.usage else {}),
              **({"fingerprint": score.fingerprint} if score.fingerprint is not None else {})}
    if score.kind == "rule":
        return {"rule_id": score.key, "rule_name": detail.get("rule_name", ""), "severity": score.severity or None,
                **common, "component_scope": score.scope or None}
    return {"criterion": score.key, **common, "kind": detail.get("kind")}


def _correctness_json(score):
    detail = score.detail or {}
    if "comment" in detail:
        comment = detail["comment"]
    elif "error" in detail:
        comment = json.dumps({"error": detail["error"]})
    else:
        comment = _comment(score.passed, score.status, score.judge, score.reasoning)
    return {"correctness": {"score": score.value, "comment": comment}}


def _update_postgresql(schema_editor, EvaluationResult, chunk):
    """The chunk's three JSON columns in one UPDATE … FROM unnest(arrays): bulk_update's CASE WHEN
    per row and column costs about a millisecond of Python each (bench/migrate_scores.py)."""
    quote = schema_editor.quote_name
    columns = [quote(EvaluationResult._meta.get_field(f).column) for f in ("criteria_scores", "rubric_scores", "scores")]
    arrays = [[r.pk for r in chunk]] + [
        [None if getattr(r, f) is None else json.dumps(getattr(r, f)) for r in chunk]
        for f in ("criteria_scores", "rubric_scores", "scores")]
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {quote(EvaluationResult._meta.db_table)} AS r SET "
            f"{columns[0]} = v.c, {columns[1]} = v.rb, {columns[2]} = v.s "
            f"FROM unnest(%s::bigint[], %s::jsonb[], %s::jsonb[], %s::jsonb[]) AS v(id, c, rb, s) "
            f"WHERE r.{quote(EvaluationResult._meta.pk.column)} = v.id",
            arrays)


def backwards(apps, schema_editor):
    Score = apps.get_model("scores", "Score")
    EvaluationResult = apps.get_model("runs", "EvaluationResult")
    VerdictReview = apps.get_model("runs", "VerdictReview")
    scores = Score.objects.filter(subject_kind=RUN_RESULT)
    machine = scores.exclude(source="human")
    results = EvaluationResult.objects.order_by("pk").only("pk", "criteria_passed", "rubric_passed")
    last = 0
    while True:
        chunk = list(results.filter(pk__gt=last)[:CHUNK])
        if not chunk:
            break
        last = chunk[-1].pk
        rows = {}
        for score in machine.filter(subject_id__in=[r.pk for r in chunk]).order_by("subject_id", "kind", "position", "id"):
            rows.setdefault(score.subject_id, []).append(score)
        for result in chunk:
            mine = rows.get(result.pk, [])
            result.criteria_scores = (None if result.criteria_passed is None and not any(s.kind == "criterion" for s in mine)
                                      else [_verdict_json(s) for s in mine if s.kind == "criterion"])
            result.rubric_scores = (None if result.rubric_passed is None and not any(s.kind == "rule" for s in mine)
                                    else [_verdict_json(s) for s in mine if s.kind == "rule"])
            correctness = next((s for s in mine if s.kind == "correctness"), None)
            result.scores = None if correctness is None else _correctness_json(correctness)
        if schema_editor.connection.vendor == "postgresql":
            _update_postgresql(schema_editor, EvaluationResult, chunk)
        else:
            EvaluationResult.objects.bulk_update(chunk, ["criteria_scores", "rubric_scores", "scores"],
                                                 batch_size=CHUNK)
    humans = list(scores.filter(source="human").order_by("created_at", "id"))
    judged = {}
    for score in machine.filter(subject_id__in={h.subject_id for h in humans}).order_by("created_at", "id"):
        judged[(score.subject_id, score.kind, score.key)] = score
    created = []
    for human in humans:
        detail = human.detail or {}
        judge = judged.get((human.subject_id, human.kind, human.key))
        review = VerdictReview.objects.create(
            review_id=uuid.UUID(detail["review_id"]) if detail.get("review_id") else uuid.uuid4(),
            result_id=human.subject_id, kind=human.kind, key=human.key, passed=bool(human.passed),
            note=human.reasoning, reviewer_id=human.author_id, reviewer_name=detail.get("reviewer_name", ""),
            judge_status=judge.status if judge else "ok", judge=judge.judge if judge else "",
            judge_passed=bool(judge.passed) if judge is not None and judge.status == "ok" else None)
        created.append((review.pk, human.created_at))
    # created_at is auto_now_add: set it back to when the review was given.
    for pk, created_at in created:
        VerdictReview.objects.filter(pk=pk).update(created_at=created_at)
    scores.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0010_run_digest'),
        ('scores', '0001_initial'),
    ]

    operations = [
        migrations.RunPython(forwards, backwards),
    ]
