"""Reads of agentic evaluations, shaped so the database does the work at a million rows."""

from collections.abc import Iterator
from dataclasses import dataclass, fields
from datetime import datetime

from django.db import connection
from django.db.models import F, FilteredRelation, Q, QuerySet

from apps.core.errors import NotFoundError
from apps.core.models import project_pk
from apps.scores.agreement import Agreement, agreement_table, judge_human_pairs
from apps.scores.models import Score
from apps.scores.vocabulary import ScoreKind, ScoreSource, SubjectKind
from apps.traces.models import AgentTrace
from apps.traces.selectors import project_traces

from .filters import EvaluationHistoryFilter
from .judges import AGENTIC_METRICS, JudgeInput, JudgeToolCall
from .models import ROLLUP_COLUMNS, AgentEvaluation, EvaluationRollup, MetricRead, metric_reads_of, metrics_attach
from .scoring import METRIC_PASS, RATINGS

HISTORY_ORDER = ("-created_at", "-id")

EXPORT_FIELDS = (
    "session_id",
    "agent_name",
    "operation",
    "source",
    "task_adherence",
    "task_adherence_reasoning",
    "task_adherence_status",
    "tool_call_accuracy",
    "tool_call_accuracy_reasoning",
    "tool_call_accuracy_status",
    "intent_resolution",
    "intent_resolution_reasoning",
    "intent_resolution_status",
    "overall_score",
    "rating",
    "judge",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "created_at",
)


def with_metric_columns(qs: QuerySet) -> QuerySet:
    """The evaluations with each metric's score, reasoning and status as the flat fields the
    records and the export have always had (task_adherence, task_adherence_reasoning, ...): one
    LEFT JOIN per metric on its Score row, in the same query. The judge's row: a reviewer's human
    Score on a metric sits beside it and would otherwise double the evaluation's rows."""
    joins = {
        f"_{name}_score": FilteredRelation(
            "metric_scores", condition=Q(metric_scores__key=name) & ~Q(metric_scores__source=ScoreSource.HUMAN)
        )
        for name in AGENTIC_METRICS
    }
    columns = {}
    for name in AGENTIC_METRICS:
        columns[name] = F(f"_{name}_score__value")
        columns[f"{name}_reasoning"] = F(f"_{name}_score__reasoning")
        columns[f"{name}_status"] = F(f"_{name}_score__status")
    return qs.annotate(**joins).annotate(**columns)


def judge_input_of_trace(trace: AgentTrace) -> JudgeInput:
    """The trace as a judge sees it; tool calls must be prefetched (or are loaded here)."""
    calls = sorted(trace.tool_calls.all(), key=lambda c: c.seq)
    return JudgeInput(
        query=trace.user_query,
        final_response=trace.final_response,
        tool_calls=tuple(
            JudgeToolCall(c.tool_name, c.tool_args or {}, c.tool_result, c.success, c.error) for c in calls
        ),
        intent=trace.intent_detected,
        resource_type=trace.resource_type,
        operation=trace.operation,
        success=trace.success,
    )


def judge_input_of_evaluation(evaluation: AgentEvaluation) -> JudgeInput | None:
    """What an evaluation judged, to judge it again (an alignment trial): its trace as stored now, or
    a manual evaluation's request. None when neither is left (the trace was deleted)."""
    if evaluation.trace_id is not None:
        return judge_input_of_trace(evaluation.trace)
    body = evaluation.manual_input
    if not body:
        return None
    return JudgeInput(
        query=body.get("user_query") or "",
        final_response=body.get("agent_response"),
        tool_calls=tuple(
            JudgeToolCall(
                c.get("tool_name", ""),
                c.get("tool_args") or {},
                c.get("tool_result"),
                c.get("success", True),
                c.get("error"),
            )
            for c in body.get("tool_calls") or ()
        ),
        intent=body.get("detected_intent"),
        resource_type=body.get("resource_type"),
        operation=body.get("operation"),
        success=body.get("success"),
    )


def project_evaluations(project_id: int | None) -> QuerySet[AgentEvaluation]:
    """The evaluations of a project (`default` when None). Every read of evaluations starts here."""
    return AgentEvaluation.objects.filter(project_id=project_pk(project_id))


def evaluation_list(*, session_id: str, project_id: int | None = None) -> list[AgentEvaluation]:
    """The agentic evaluations of a session, newest first, with the online rule that asked for each."""
    return metrics_attach(
        list(
            project_evaluations(project_id)
            .select_related("rule")
            .filter(session_id=session_id)
            .order_by(*HISTORY_ORDER)
        )
    )


@dataclass(frozen=True, slots=True)
class RuleRef:
    id: int
    name: str


@dataclass(slots=True)
class EvaluationRecord:
    """A history record as the API shows it (HistoryRecordOut reads its attributes): what a page of
    500 makes instead of 500 model instances, from one row of tuples each."""

    id: int
    session_id: str
    agent_name: str
    operation: str | None
    source: str
    overall_score: float | None
    rating: str | None
    judge: str
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    created_at: datetime
    rule: RuleRef | None
    metrics: dict[str, MetricRead]


# The evaluation's own columns a record reads, in its fields' order (the record is built from them
# positionally): what a history record shows (api.schemas.HistoryRecordOut), and no more.
RECORD_FIELDS = tuple(f.name for f in fields(EvaluationRecord) if f.name not in ("rule", "metrics"))


def _records(qs: QuerySet) -> list[EvaluationRecord]:
    """The evaluations of `qs` as records: their own columns in one query, then their metric Score
    rows in a second (a plain scan of score_subject for the page's ids). Joining the three metrics
    into the first query costs more: planning six relations (0.6 ms) and compiling three
    FilteredRelations made a 50-row page 4.3 ms against 2.8 ms so, and a 500-row page no faster. A
    metric without a row reads as skipped, missing (models.metric_reads_of)."""
    rows = list(qs.values_list(*RECORD_FIELDS, "rule_id", "rule__name"))
    if not rows:
        return []
    found = metric_reads_of([row[0] for row in rows])
    own = len(RECORD_FIELDS)
    return [
        EvaluationRecord(
            *row[:own],
            rule=RuleRef(row[own], row[own + 1]) if row[own] is not None else None,
            metrics=found[row[0]],
        )
        for row in rows
    ]


def evaluation_latest_get(*, session_id: str, project_id: int | None = None) -> EvaluationRecord:
    """The session's newest evaluation in the project, as a history record."""
    found = _records(project_evaluations(project_id).filter(session_id=session_id).order_by(*HISTORY_ORDER)[:1])
    if not found:
        raise NotFoundError(f"No evaluation found for session {session_id}")
    return found[0]


@dataclass
class HistoryPage:
    evaluations: list[EvaluationRecord]
    has_more: bool


def evaluation_history(
    *, limit: int, offset: int, filters: dict | None = None, project_id: int | None = None
) -> HistoryPage:
    """Newest first, the evaluations EvaluationHistoryFilter chooses with `filters` (agent_name,
    operation, min_score; an absent one is not applied). A deep offset walks index entries, not
    whole rows; one extra row says whether more follow."""
    qs = project_evaluations(project_id)
    if filters:
        # Only when there is something to filter: the FilterSet's form costs a default page (the
        # one a dashboard polls) about a tenth of its time.
        qs = EvaluationHistoryFilter(filters, qs).qs
    # The page's ids in a subquery (an index-only walk of agenteval_newest or the filter's index),
    # so only the page's rows are read, in the same query.
    ids = qs.order_by(*HISTORY_ORDER).values("id")[offset : offset + limit + 1]
    evaluations = _records(AgentEvaluation.objects.filter(pk__in=ids).order_by(*HISTORY_ORDER))
    return HistoryPage(evaluations=evaluations[:limit], has_more=len(evaluations) > limit)


def evaluation_summary(*, project_id: int | None = None) -> dict:
    """The project's aggregates from the running totals (EvaluationRollup): as exact as a scan of
    every evaluation, at the cost of reading one row per (agent, operation, rating)."""
    project_id = project_pk(project_id)
    names = ("overall", *AGENTIC_METRICS)
    total = 0
    sums = {name: [0, 0.0] for name in names}
    distribution = dict.fromkeys(RATINGS, 0)
    coverage = {name: {"scored": 0, "skipped": 0, "errored": 0} for name in AGENTIC_METRICS}
    groups: dict[str, dict[str, list]] = {"by_agent": {}, "by_operation": {}}
    # A key whose evaluations all expired keeps its row at count 0 (services._rollup_add): not shown.
    # Read as dicts, not model instances: a dashboard polls this, and a project has a row per
    # (agent, operation, rating): 125 for five agents, five operations and the five ratings.
    rows = EvaluationRollup.objects.filter(project_id=project_id, count__gt=0).values(*ROLLUP_COLUMNS)
    for row in rows:
        total += row["count"]
        for name in names:
            sums[name][0] += row[f"{name}_count"]
            sums[name][1] += row[f"{name}_sum"]
        for name in AGENTIC_METRICS:
            coverage[name]["scored"] += row[f"{name}_count"]
            coverage[name]["skipped"] += row[f"{name}_skipped"]
            coverage[name]["errored"] += row[f"{name}_errored"]
        if row["rating"] in distribution:
            distribution[row["rating"]] += row["count"]
        for group, key in (("by_agent", row["agent_name"]), ("by_operation", row["operation"] or "unknown")):
            entry = groups[group].setdefault(key, [0, 0, 0.0])
            entry[0] += row["count"]
            entry[1] += row["overall_count"]
            entry[2] += row["overall_sum"]

    def mean(count: int, value: float) -> float | None:
        return round(value / count, 4) if count else None

    return {
        "total_evaluations": total,
        "average_scores": {**{name: mean(*sums[name]) for name in AGENTIC_METRICS}, "overall": mean(*sums["overall"])},
        "score_distribution": distribution,
        # The denominators of each average: evaluations the judge scored, skipped or errored on.
        "coverage": coverage,
        **{
            group: {
                key: {"count": n, "avg_score": mean(scored, value)} for key, (n, scored, value) in sorted(rows.items())
            }
            for group, rows in groups.items()
        },
    }


def export_record(row: dict) -> dict:
    """An export record (EvaluationRecordOut's fields) from a values() row of evaluation_export_rows:
    the streamed export writes a million of them, so without a model instance per row; the COPY
    path builds the same keys in the same order."""
    record = {name: row[name] for name in EXPORT_FIELDS if name != "created_at"}
    record["timestamp"] = row["created_at"]
    return record


def evaluation_export_rows(chunk_size: int = 2000, *, project_id: int | None = None) -> Iterator[dict]:
    """Every evaluation of the project, newest first, streamed: on PostgreSQL a server-side cursor,
    so memory stays flat however many rows there are."""
    return (
        with_metric_columns(project_evaluations(project_id).order_by(*HISTORY_ORDER))
        .values(*EXPORT_FIELDS)
        .iterator(chunk_size=chunk_size)
    )


EXPORT_BLOCK_BYTES = 256 * 1024


def _export_select(project_id: int) -> tuple[str, list]:
    """The SELECT of evaluation_export_jsonl_postgres (one JSON text per evaluation, newest first)
    and its parameters."""
    quote = connection.ops.quote_name
    metric_columns = {"": "value", "_reasoning": "reasoning", "_status": "status"}
    from_metrics = {name + suffix for name in AGENTIC_METRICS for suffix in metric_columns}
    params: list = []
    aggregates = []
    for name in AGENTIC_METRICS:
        for suffix, column in metric_columns.items():
            aggregates.append(f"max(s.{quote(column)}) FILTER (WHERE s.{quote('key')} = %s) AS {quote(name + suffix)}")
            params.append(name)
    keys = sorted(EXPORT_FIELDS, key=lambda name: name == "created_at")  # timestamp last, as export_record
    columns = [
        ("m" if name in from_metrics else "e", name, "timestamp" if name == "created_at" else name) for name in keys
    ]
    record = ", ".join(f"{table}.{quote(name)} AS {quote(key)}" for table, name, key in columns)
    order = ", ".join(f"e.{quote(name.lstrip('-'))} DESC" for name in HISTORY_ORDER)
    score_table = quote(Score._meta.db_table)
    # A reviewer's human Score row on a metric sits beside the judge's: the record is the judge's.
    # The record is a one-row lateral select whose column names are its keys, written by
    # row_to_json. json_build_object, which takes every key as one more argument to convert on each
    # row, made the million-row export 2-4 s slower in psql (13.0-14.3 s against 10.5-10.7 s), and
    # wrote " : " between key and value where the values() path writes ":".
    select = (
        f"SELECT row_to_json(r)::text FROM {quote(AgentEvaluation._meta.db_table)} e "
        f"LEFT JOIN LATERAL (SELECT {', '.join(aggregates)} FROM {score_table} s "
        "WHERE s.subject_kind = %s AND s.subject_id = e.id AND s.kind = %s AND s.source <> %s) m ON true "
        f"CROSS JOIN LATERAL (SELECT {record}) r "
        f"WHERE e.project_id = %s ORDER BY {order}"
    )
    params += [SubjectKind.AGENTIC_EVALUATION.value, ScoreKind.METRIC.value, ScoreSource.HUMAN.value, project_id]
    return select, params


def evaluation_export_jsonl_postgres(*, project_id: int | None = None) -> Iterator[bytes]:
    """Fenced export fast path (see api.views._stream, the one caller), PostgreSQL only: every
    evaluation as JSON Lines, newest first, in blocks of bytes. The
    database writes each record (row_to_json: keys in EXPORT_FIELDS order, created_at as
    "timestamp", the same records as the values() path) and sends them with COPY, so no Python
    object is made per row and the export runs at the database's pace.

    The metrics come from one LATERAL aggregate per evaluation (one probe of the score_subject index
    for its three rows), not from three joins: with joins PostgreSQL hashes three scans of
    scores_score and sorts every wide row on disk before the first record leaves (1.6 s of a 200,000
    row export before any output, and growing faster than the rows); with the lateral probe it walks
    agenteval_newest in order and streams, as it did when the metrics were columns.

    COPY's CSV mode is used because it leaves backslashes alone (text mode would double those of
    the JSON escapes); it quotes a value only if it holds the delimiter, the quote character or a
    line break, and JSON text holds none of them raw (\x01, \x02 and newlines are escaped)."""
    select, params = _export_select(project_pk(project_id))
    sql = f"COPY ({select}) TO STDOUT WITH (FORMAT csv, DELIMITER E'\\x02', QUOTE E'\\x01')"
    buffer = bytearray()
    with connection.cursor() as cursor, cursor.cursor.copy(sql, params) as copy:
        # COPY hands over one row per message: gathered into larger blocks, the response is written
        # in a few thousand chunks rather than one per row.
        for row in copy:
            buffer += row
            if len(buffer) >= EXPORT_BLOCK_BYTES:
                yield bytes(buffer)
                buffer.clear()
    if buffer:
        yield bytes(buffer)


def evaluation_count(*, project_id: int | None = None) -> int:
    return project_evaluations(project_id).count()


def trace_count(*, project_id: int | None = None) -> int:
    return project_traces(project_id).count()


def evaluations_expired_count(project, before) -> int:
    """How many of the project's agentic evaluations a retention pass would delete now."""
    return AgentEvaluation.objects.filter(project=project, created_at__lt=before).count()


def metric_agreement(*, project_id: int, agent_name: str | None = None) -> list[tuple[str, Agreement]]:
    """How each judge agrees with the reviewers on each agentic metric, over the project's evaluations
    (of one agent, if `agent_name`): (judge, agreement) per metric and judge, a metric's score
    counting as a pass from METRIC_PASS. Two queries: the pairs, then the judge of each reviewed
    evaluation."""
    evaluations = project_evaluations(project_id)
    if agent_name is not None:
        evaluations = evaluations.filter(agent_name=agent_name)
    pairs = list(judge_human_pairs(SubjectKind.AGENTIC_EVALUATION, evaluations.values("pk"), kinds=(ScoreKind.METRIC,)))
    judges = dict(AgentEvaluation.objects.filter(pk__in={p[-1] for p in pairs}).values_list("pk", "judge"))
    by_judge: dict[str, list] = {}
    for pair in pairs:
        by_judge.setdefault(judges.get(pair[-1], ""), []).append(pair)
    return [
        (judge, row)
        for judge, group in sorted(by_judge.items())
        for row in agreement_table(group, threshold=METRIC_PASS)
    ]


def evaluation_links(subject_ids) -> dict[int, dict]:
    """For agreement's disagreements: each evaluation's id, its trace's session id."""
    return {
        pk: {"id": str(pk), "session_id": session_id}
        for pk, session_id in AgentEvaluation.objects.filter(pk__in=subject_ids).values_list("pk", "session_id")
    }
