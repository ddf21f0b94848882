"""Reads over one run's results beyond its table: a result's neighbours in the table's order (the
result page's previous/next) and every result as export rows (CSV / JSON Lines), read through a
chunked cursor so that a run of any size is exported in bounded memory."""

from collections.abc import Iterator

from .display import final_answer
from .judging.aggregate import verdict_counts
from .judging.types import CRITERION, RULE, Verdict
from .models import EvaluationResult, EvaluationRun, verdict_columns
from .selectors import TABLE_ORDER

EXPORT_CHUNK_ROWS = 1000
EXPORT_COLUMNS = (
    "item",
    "attempt",
    "outcome",
    "passed",
    "criteria_passed",
    "criteria_total",
    "rules_passed",
    "rules_failed",
    "rules_failed_medium_low",
    "rules_not_assessed",
    "duration_ms",
    "answer",
)
_EXPORT_FIELDS = (
    "pk",
    "item_name",
    "test_case_id",
    "attempt",
    "outcome",
    "passed",
    "criteria_passed",
    "rubric_passed",
    "duration_ms",
    "output",
)
# What the keyset conditions read of a result.
_ORDER_FIELDS = tuple(spec.lstrip("-") for spec in TABLE_ORDER)


def _first_after(results, result: EvaluationResult, order: tuple[str, ...]) -> EvaluationResult | None:
    """The first of `results` strictly after `result` in `order` (field names, "-" for descending).
    A keyset read, one query per column at most, the deepest tie first (those rows come first):
    each is a range scan of the index the order has (results_run_done_table for the table's), where
    one query ORing the columns together reads a large run row by row."""
    columns = [(spec.lstrip("-"), spec.startswith("-")) for spec in order]
    for depth in reversed(range(len(columns))):
        equal = {name: getattr(result, name) for name, _ in columns[:depth]}
        name, descending = columns[depth]
        later = {f"{name}__{'lt' if descending else 'gt'}": getattr(result, name)}
        found = results.filter(**equal, **later).order_by(*order).first()
        if found is not None:
            return found
    return None


def _reversed(order: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(spec[1:] if spec.startswith("-") else f"-{spec}" for spec in order)


def result_neighbours(*, result: EvaluationResult) -> tuple[EvaluationResult | None, EvaluationResult | None]:
    """(previous, next) finished results of the result's run in the run page's table order (failed
    first, then test set order); None at either end."""
    results = (
        EvaluationResult.objects.filter(run_id=result.run_id)
        .done()
        .only("result_id", "item_name", "test_case_id", "attempt", "run_id", *_ORDER_FIELDS)
    )
    return _first_after(results, result, _reversed(TABLE_ORDER)), _first_after(results, result, TABLE_ORDER)


def result_export_rows(*, run: EvaluationRun) -> Iterator[dict]:
    """Every finished result of the run as an export row (EXPORT_COLUMNS), in the table's order:
    one query read EXPORT_CHUNK_ROWS at a time (a server-side cursor on PostgreSQL), and one query
    for each chunk's verdicts, so memory stays flat however many results the run has."""
    rows = run.results.done().order_by(*TABLE_ORDER).values(*_EXPORT_FIELDS).iterator(chunk_size=EXPORT_CHUNK_ROWS)
    chunk = []
    for values in rows:
        chunk.append(values)
        if len(chunk) == EXPORT_CHUNK_ROWS:
            # The chunk's verdicts in one query (models.verdict_columns).
            yield from (_export_row(v) for v in verdict_columns(chunk))
            chunk = []
    yield from (_export_row(v) for v in verdict_columns(chunk))


def _export_row(values: dict) -> dict:
    criteria = verdict_counts(Verdict.list_from_json(values["criteria_scores"], kind=CRITERION))
    rules = verdict_counts(Verdict.list_from_json(values["rubric_scores"], kind=RULE))
    return {
        "item": values["item_name"] or str(values["test_case_id"]),
        "attempt": values["attempt"],
        "outcome": values["outcome"],
        "passed": values["passed"],
        "criteria_passed": criteria["passed"],
        "criteria_total": sum(criteria.values()),
        "rules_passed": rules["passed"],
        # As the run page counts them: a failed high-severity rule fails the item, a failed medium or
        # low one does not; both failed.
        "rules_failed": rules["failed"] + rules["warned"],
        "rules_failed_medium_low": rules["warned"],
        "rules_not_assessed": rules["skipped"],
        "duration_ms": values["duration_ms"],
        "answer": final_answer(values["output"]),
    }
