"""The run engine: the only code that writes EvaluationRun and EvaluationResult rows.

Concurrency: a run never has more than `concurrency` items queued or running, across all workers.
The limit lives in the database, not in Celery: items are handed to the queue only by
`run_dispatch`, which counts the run's in-flight items under the run's row lock and queues just
enough pending ones to fill the free slots. Every finished item dispatches again.

Failure: a running item refreshes its heartbeat between turns and verdicts, and a keep-alive
thread refreshes it while one long step (a bot turn, a judge call with its retries) is under way.
The reaper (`runs_reap`, a beat task and a check on read) re-queues items whose heartbeat went
stale (their worker died) up to MAX_ATTEMPTS, then fails them with the reason; and it dispatches
again any running run with nothing in flight (its worker died between an item's commit and the
next dispatch), which also completes a run whose items are all done. A run never stays `running`.
A result is written once: the final UPDATE only matches a row that is not done yet.
"""

import functools
import json
import logging
import threading
import time
import uuid
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Exists, F, OuterRef, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from apps.bots.selectors import bot_config_snapshot
from apps.core.audit.services import audit_record, fields_set
from apps.core.errors import ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from apps.core.llm.client import get_llm_client, llm_configured
from apps.core.llm.quotas import judge_model_check
from apps.core.llm.usage import usage_scope
from apps.core.models import project_pk
from apps.core.pricing import PriceBook
from apps.core.retention import expired_ids, rows_delete_quietly
from apps.scores.services import human_score_record, scores_store, subjects_forget
from apps.scores.vocabulary import JudgeStatus, SubjectKind
from apps.testsets import services as testset_services

from . import display, sources, tasks
from .aggregates import compute_digest
from .costs import ItemCost, item_cost
from .executor import ItemOutcome, JudgeChoice, RunOptions, execute_question, execute_test_item
from .judging.aggregate import FAILED, PASSED, UNASSESSED, assessed, coverage, stored_outcome
from .judging.fingerprint import distinct_judges, judges_hash
from .judging.types import CRITERION, JUDGE_HEURISTIC, RULE, Verdict, correctness_to_score
from .models import EvaluationResult, EvaluationRun
from .schemas import MAX_CONCURRENCY, MAX_REPEATS, RunCreateIn  # noqa: F401 - the bounds, for the launch forms
from .selectors import item_figures, run_comparison_prepare, run_get, run_previous_find

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = 3

State = EvaluationResult.State
Status = EvaluationRun.Status


class RunCancelled(Exception):
    pass


def _enqueue(result_ids: list[int]) -> None:
    for result_id in result_ids:
        tasks.execute_result.delay(result_id)


def _judge_choice(judge_model: str | None) -> JudgeChoice:
    """The judge for a new run: "heuristic", a model name, or None for the configured default."""
    if judge_model in ("heuristic", JUDGE_HEURISTIC):
        return JudgeChoice()
    if not llm_configured():
        if judge_model:
            raise InvalidInputError(f"judge_model {judge_model!r} needs an LLM: set OPENAI_API_KEY or OPENAI_BASE_URL")
        return JudgeChoice()
    if judge_model:
        judge_model_check(model=judge_model)
    return JudgeChoice(client=get_llm_client(model=judge_model or None))


def _attempts_check(attempts: int) -> None:
    """Every attempt is a result row, a bot conversation and its judge calls: one launch may not
    ask for more than the platform allows."""
    limit = settings.EVALSITE_MAX_RUN_ATTEMPTS
    if attempts > limit:
        raise InvalidInputError(
            f"This run would make {attempts} attempts (items x repeats); the limit is {limit} "
            f"(EVALSITE_MAX_RUN_ATTEMPTS). Use fewer repeats or a smaller test set."
        )


# What the audit trail says a launched run was given.
AUDITED = (
    "agent_id",
    "test_set_id",
    "test_set_version",
    "dataset_id",
    "rubric_id",
    "rubric_version",
    "judge",
    "repeats",
    "label",
)


@transaction.atomic
def run_create(*, data: RunCreateIn, project, created_by=None, api_key=None) -> EvaluationRun:
    """Create a pending run pinned to the versions it will use, with one result row per item and
    attempt (`repeats` attempts of every item), and queue its start once the transaction commits.
    The bot is edited in place, so its configuration as it stands now is snapshot on the run
    (bot_snapshot). The platform LLM calls of its workers are billed to `api_key` (KeyUsageDay).

    `data` is validated (bounds, choices, types). Checked here: how its fields go together (exactly
    one of a test set and a question set, no rubric version without a rubric: the API answers these
    in the service's words, a string detail, as it always has), and what needs the database (the bot,
    the versions, the run's size, the judge model allowed). The bot, test set (or question set) and
    rubric are read in `project`, the run's: an id of another project is NotFoundError (a 404)."""
    agent_id, test_set_id, dataset_id = data.agent_id, data.test_set_id, data.dataset_id
    rubric_id, rubric_version, repeats = data.rubric_id, data.rubric_version, data.repeats
    if (test_set_id is None) == (dataset_id is None):
        raise InvalidInputError("Give exactly one of test_set_id (V2) or dataset_id (V1).")
    if rubric_id is None and rubric_version is not None:
        raise InvalidInputError("rubric_version needs a rubric_id")
    bot = sources.bot_spec(agent_id, project=project)
    judge = _judge_choice(data.judge_model)
    test_set_version = data.test_set_version

    if test_set_id is not None:
        test_set_version, items = sources.testset_items(test_set_id, test_set_version, project=project)
        rows = [(item["item_id"], item.get("name", ""), item["type"], item) for item in items]
    else:
        questions = sources.question_set_items(dataset_id, project=project)
        rows = [(q["question_id"], q["question"][:255], "question", q) for q in questions]
    if not rows:
        raise InvalidInputError("The test set has no items to run.")
    _attempts_check(len(rows) * repeats)
    if rubric_id is not None:
        if dataset_id is not None:
            raise InvalidInputError("Rubrics apply to test-set (V2) runs, not V1 question sets.")
        rubric_version, _ = sources.rubric_snapshot(rubric_id, rubric_version, project=project)

    run = EvaluationRun.objects.create(
        project_id=project_pk(project),
        agent_id=agent_id,
        dataset_id=dataset_id,
        test_set_id=test_set_id,
        test_set_version=test_set_version,
        rubric_id=rubric_id,
        rubric_version=rubric_version,
        concurrency=data.concurrency,
        component_scope_filter=data.component_scope_filter,
        component_ids_filter=data.component_ids_filter or [],
        bot_llm_provider=bot.llm_provider,
        bot_llm_model=bot.llm_model,
        judge=judge.label,
        total=len(rows) * repeats,
        repeats=repeats,
        label=data.label.strip(),
        bot_snapshot=bot_config_snapshot(bot),
        rule_judges=sources.rule_judges(rubric_id) if rubric_id is not None else {},
        created_by=created_by,
        api_key=api_key,
    )
    EvaluationResult.objects.bulk_create(
        [
            EvaluationResult(
                run=run,
                position=n,
                attempt=attempt,
                test_case_id=case_id,
                item_name=name,
                item_type=item_type,
                item=item,
                input=dict(item.get("inputs") or {}) if item_type != "question" else {"message": item["question"]},
            )
            for attempt in range(1, repeats + 1)
            for n, (case_id, name, item_type, item) in enumerate(rows)
        ],
        batch_size=2000,
    )
    transaction.on_commit(lambda: tasks.start_run.delay(run.pk))
    audit_record(
        action="launch", obj=run, object_type="run", object_id=str(run.run_id), changes=fields_set(run, AUDITED)
    )
    return run


def run_rerun(*, run: EvaluationRun, label: str | None = None, created_by=None) -> EvaluationRun:
    """The same test set and rubric versions, judge and settings again: the run to compare against.
    The bot is snapshot anew, so the comparison shows what changed in it since. In the run's project."""
    data = RunCreateIn.of(
        agent_id=run.agent_id,
        test_set_id=run.test_set_id,
        test_set_version=run.test_set_version,
        dataset_id=run.dataset_id,
        rubric_id=run.rubric_id,
        rubric_version=run.rubric_version,
        concurrency=run.concurrency,
        component_scope_filter=run.component_scope_filter,
        component_ids_filter=run.component_ids_filter or None,
        judge_model=JudgeChoice.model_of(run.judge) or JUDGE_HEURISTIC,
        label=label,
        repeats=run.repeats,
    )
    return run_create(data=data, project=run.project_id, created_by=created_by)


def run_start(*, run_pk: int) -> None:
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().filter(pk=run_pk).first()
        if run is None or run.status != Status.PENDING:
            return
        run.status = Status.RUNNING
        run.started_at = timezone.now()
        run.save(update_fields=["status", "started_at"])
    run_dispatch(run_pk=run_pk)


def run_dispatch(*, run_pk: int) -> list[int]:
    """Queue pending items into the run's free slots. Returns the queued result ids."""
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().filter(pk=run_pk).first()
        if run is None or run.status != Status.RUNNING:
            return []
        in_flight = run.results.in_flight().count()
        free = run.concurrency - in_flight
        if free <= 0:
            return []
        # Attempt by attempt: a run cancelled part way has whole first attempts rather than every
        # attempt of its first items.
        claimed = list(
            run.results.filter(state=State.PENDING).order_by("attempt", "position").values_list("pk", flat=True)[:free]
        )
        if claimed:
            EvaluationResult.objects.filter(pk__in=claimed).update(state=State.QUEUED, heartbeat_at=timezone.now())
            transaction.on_commit(lambda: _enqueue(claimed))
        elif in_flight == 0:
            _finalize(run)
        return claimed


def _claim_for_execution(result_pk: int) -> EvaluationResult | None:
    """Move a queued item to running. A redelivered task finds it done (or alive elsewhere) and stops."""
    stale_before = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS)
    with transaction.atomic():
        result = EvaluationResult.objects.select_for_update().select_related("run").filter(pk=result_pk).first()
        if result is None or result.state in (State.DONE, State.PENDING):
            return None
        if result.state == State.RUNNING and result.heartbeat_at and result.heartbeat_at > stale_before:
            return None
        if result.run.status != Status.RUNNING:
            return None
        result.state = State.RUNNING
        result.attempts += 1
        result.heartbeat_at = timezone.now()
        result.save(update_fields=["state", "attempts", "heartbeat_at"])
        return result


# A beat is two queries; items call it after every turn and verdict, so it writes at most this
# often. Far below any sane heartbeat timeout, and a cancel is still seen within this delay.
HEARTBEAT_MIN_INTERVAL_SECONDS = 1.0


def _heartbeat(result: EvaluationResult):
    last = time.monotonic()  # the claim has just written a heartbeat

    def beat():
        nonlocal last
        now = time.monotonic()
        if now - last < HEARTBEAT_MIN_INTERVAL_SECONDS:
            return
        last = now
        EvaluationResult.objects.filter(pk=result.pk, state=State.RUNNING).update(heartbeat_at=timezone.now())
        if EvaluationRun.objects.filter(pk=result.run_id, status=Status.CANCELLED).exists():
            raise RunCancelled()

    return beat


class _KeepAlive:
    """Refreshes a running item's heartbeat from a side thread while the item works.

    Why a thread rather than a start-up check of the timeout against the worst-case step: one
    `openai` bot turn may take MAX_TOOL_ROUNDS LLM calls of 3 attempts each, with backoffs and
    Retry-After waits, about 10 minutes with the default timeouts, far past the 5-minute default
    heartbeat; and that bound moves whenever an adapter or the LLM retry policy changes. The thread
    lives in the worker process, so it dies with it: a dead worker still goes stale and is reaped,
    while a slow but living one never is. A step that hangs is bounded by the adapters' own
    timeouts, not by the heartbeat.
    """

    def __init__(self, result_pk: int):
        self.result_pk = result_pk
        # Several beats per timeout, so one slow UPDATE (a locked SQLite file) does not lose the item.
        self.interval = max(0.2, settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS / 4)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{result_pk}", daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    EvaluationResult.objects.filter(pk=self.result_pk, state=State.RUNNING).update(
                        heartbeat_at=timezone.now()
                    )
                except Exception:  # a missed beat is retried next interval; the item itself goes on
                    logger.warning("heartbeat of result %s failed", self.result_pk, exc_info=True)
        finally:
            # Django opened a connection for this thread; nothing else will close it.
            connection.close()


def result_execute(*, result_pk: int) -> None:
    result = _claim_for_execution(result_pk)
    if result is None:
        return
    run = result.run
    with usage_scope(api_key_id=run.api_key_id), _KeepAlive(result.pk):
        _execute_claimed(result, run)
    run_dispatch(run_pk=run.pk)


@functools.lru_cache(maxsize=64)
def _run_rubric(run_id: uuid.UUID, rubric_id: uuid.UUID, version: int, project_id: int) -> dict:
    """The rubric version a run pinned, read once per run per worker process instead of per item
    (two queries an item). Versions are immutable; the run id is in the key because a rubric id can
    be deleted and created again with other content, and a run id never comes back."""
    return sources.rubric_snapshot(rubric_id, version, project=project_id)[1]


def _execute_claimed(result: EvaluationResult, run: EvaluationRun) -> None:
    try:
        bot = sources.bot_spec(run.agent_id, project=run.project_id)
        options = RunOptions(
            scope_filter=run.component_scope_filter,
            ids_filter=run.component_ids_filter or None,
            judge=JudgeChoice.from_label(run.judge),
            rubric_version=run.rubric_version,
            heartbeat=_heartbeat(result),
            judge_concurrency=settings.EVALSITE_JUDGE_CONCURRENCY_PER_ITEM,
            rule_judges=run.rule_judges or {},
        )
        # Every attempt is its own conversation: a bot that keeps state per conversation id must not
        # answer a repeat from the first attempt's memory. Attempt 1 keeps the id runs always had.
        conversation_id = f"{run.run_id}:{result.test_case_id}" + (f":{result.attempt}" if result.attempt > 1 else "")
        if result.item_type == "question":
            outcome = execute_question(question=result.item, bot=bot, options=options, conversation_id=conversation_id)
        else:
            rubric = (
                _run_rubric(run.run_id, run.rubric_id, run.rubric_version, run.project_id) if run.rubric_id else None
            )
            outcome = execute_test_item(
                item=result.item, bot=bot, rubric=rubric, options=options, conversation_id=conversation_id
            )
    except RunCancelled:
        EvaluationResult.objects.filter(pk=result.pk, state=State.RUNNING).update(state=State.PENDING)
        return
    except Exception as exc:  # an engine fault must fail this item visibly, never hang the run
        logger.exception("item %s of run %s failed", result.test_case_id, run.run_id)
        _record(result, passed=False, error=f"Evaluation error: {type(exc).__name__}: {exc}", output={"messages": []})
    else:
        cost = _item_cost(run, outcome)
        _record(
            result,
            passed=outcome.passed,
            cost=cost,
            bot_usage=outcome.bot_usage or None,
            error=outcome.error,
            output=outcome.output,
            input=outcome.input,
            scores=outcome.scores,
            criteria_scores=outcome.criteria_scores,
            criteria_passed=outcome.criteria_passed,
            rubric_scores=outcome.rubric_scores,
            rubric_passed=outcome.rubric_passed,
            duration_ms=outcome.duration_ms,
            langsmith_run_id=outcome.external_trace_id,
        )


def _item_cost(run: EvaluationRun, outcome: ItemOutcome) -> ItemCost:
    """Priced on the day the item finishes, with the bot's configured model for a turn whose
    adapter did not say which model answered."""
    verdicts = Verdict.list_from_json(outcome.criteria_scores, kind=CRITERION)
    verdicts += Verdict.list_from_json(outcome.rubric_scores, kind=RULE)
    if outcome.question_verdict is not None:
        verdicts.append(outcome.question_verdict)
    return item_cost(
        book=PriceBook.load(),
        on=timezone.now().date(),
        bot_turns=outcome.bot_usage,
        bot_model=run.bot_llm_model,
        verdicts=verdicts,
    )


def _counted(verdicts: list[Verdict]) -> tuple[int, int]:
    return sum(1 for v in verdicts if v.counts_as_passed), len(verdicts)


def _rules_counted(verdicts: list[Verdict]) -> tuple[int, int, int]:
    """(passed, total, skipped) of rule verdicts; skipped ones are outside passed and total."""
    passed, total = _counted(assessed(verdicts))
    return passed, total, len(verdicts) - total


def _verdict_rows(result: EvaluationResult, criteria: list[Verdict], rules: list[Verdict], scores: dict | None):
    """The item's verdicts as the Score rows that store them, in the judge's order."""
    where = {"result_pk": result.pk, "run_pk": result.run_id, "attempt": result.attempt}
    rows = [v.to_score(position=n, **where) for n, v in enumerate(criteria)]
    rows += [v.to_score(position=n, **where) for n, v in enumerate(rules)]
    correctness = correctness_to_score(scores, **where)
    return rows + ([correctness] if correctness is not None else [])


def _record(
    result: EvaluationResult,
    *,
    passed: bool,
    criteria_scores: list[dict] | None = None,
    rubric_scores: list[dict] | None = None,
    scores: dict | None = None,
    cost: ItemCost | None = None,
    **fields,
) -> bool:
    """Write the item's outcome and its verdicts (Score rows, in the same transaction) once, and add
    it to the run's running totals. The outcome follows from the verdicts (fail-closed: see
    aggregate.item_outcome); `passed` is true only for passed."""
    criteria = Verdict.list_from_json(criteria_scores, kind=CRITERION)
    rules = Verdict.list_from_json(rubric_scores, kind=RULE)
    outcome = stored_outcome(passed=passed, criteria=criteria_scores, rules=rubric_scores)
    passed = outcome == PASSED
    fields["fingerprint"] = judges_hash(distinct_judges(v.fingerprint for v in criteria + rules))
    if criteria_scores is None:
        # criteria_passed null says "no criteria list" once the list is rows (models.EvaluationResult).
        fields["criteria_passed"] = None
    if rubric_scores is None:
        fields["rubric_passed"] = None
    finished_at = timezone.now()
    cost = cost or ItemCost()
    fields.update(bot_cost=cost.bot, judge_cost=cost.judge, unpriced_calls=cost.unpriced_calls)
    with transaction.atomic():
        written = (
            EvaluationResult.objects.filter(pk=result.pk)
            .exclude(state=State.DONE)
            .update(state=State.DONE, passed=passed, outcome=outcome, finished_at=finished_at, **fields)
        )
        if not written:
            return False
        rows = _verdict_rows(result, criteria, rules, scores)
        for row in rows:
            row.created_at = finished_at
        scores_store(rows=rows)
        criteria_ok, criteria_n = _counted(criteria)
        rules_ok, rules_n, rules_skipped = _rules_counted(rules)
        counts = coverage(criteria + rules + _question_verdicts(scores))
        EvaluationRun.objects.filter(pk=result.run_id).update(
            completed=F("completed") + 1,
            passed=F("passed") + int(passed),
            failed=F("failed") + int(outcome == FAILED),
            unassessed=F("unassessed") + int(outcome == UNASSESSED),
            criteria_passed=F("criteria_passed") + criteria_ok,
            criteria_total=F("criteria_total") + criteria_n,
            rubric_rules_passed=F("rubric_rules_passed") + rules_ok,
            rubric_rules_total=F("rubric_rules_total") + rules_n,
            rubric_rules_skipped=F("rubric_rules_skipped") + rules_skipped,
            verdicts_scored=F("verdicts_scored") + counts["scored"],
            verdicts_skipped=F("verdicts_skipped") + counts["skipped"],
            verdicts_errored=F("verdicts_errored") + counts["errored"],
            unpriced_calls=F("unpriced_calls") + cost.unpriced_calls,
            # A null total stays null until a priced call comes: null means "nothing priced", not $0.
            **{
                name: Coalesce(F(name), Value(Decimal(0))) + amount
                for name, amount in (("bot_cost", cost.bot), ("judge_cost", cost.judge))
                if amount is not None
            },
        )
        return True


def _question_verdicts(scores: dict | None) -> list[Verdict]:
    """A V1 item's correctness verdict, for the coverage counts (its status is in the stored comment)."""
    comment = ((scores or {}).get("correctness") or {}).get("comment")
    try:
        status = json.loads(comment).get("status", JudgeStatus.OK.value) if comment else None
    except (TypeError, ValueError, AttributeError):
        status = None
    if status is None:
        return []
    return [Verdict(passed=None, score=None, reasoning="", judge="", status=status)]


def _finalize(run: EvaluationRun) -> None:
    """Called under the run's row lock when nothing is pending or in flight."""
    digest = compute_digest(run)
    # Stored, so no reader of the finished run sums its verdicts again (aggregates.run_digests).
    run.digest = digest.to_json()
    if run.rubric_id:
        run.component_scores = digest.component_scores()
    run.refresh_from_db(
        fields=[
            "completed",
            "passed",
            "failed",
            "unassessed",
            "criteria_passed",
            "criteria_total",
            "rubric_rules_passed",
            "rubric_rules_total",
            "rubric_rules_skipped",
            "verdicts_scored",
            "verdicts_skipped",
            "verdicts_errored",
        ]
    )
    _store_item_figures(run, digest)
    run.status = Status.COMPLETED
    run.completed_at = timezone.now()
    run.save(
        update_fields=[
            "status",
            "completed_at",
            "component_scores",
            *ITEM_FIGURE_FIELDS,
            "judge_fingerprints",
            "digest",
        ]
    )
    transaction.on_commit(lambda: tasks.keep_comparison.delay(run.pk))


def run_comparison_keep(*, run_pk: int) -> None:
    """Computes and keeps (models.RunComparison) the comparison of a run that just finished with
    the run its page offers to compare it with (selectors.run_previous_find), so the first look at
    "what changed since last time" reads one row instead of pairing every item of both runs (seconds
    at 100,000 items). Nothing to do when there is no finished earlier run."""
    run = EvaluationRun.objects.filter(pk=run_pk).first()
    if run is None or not run.is_finished:
        return
    previous = run_previous_find(run=run)
    if previous is not None and previous.is_finished:
        run_comparison_prepare(base=previous, head=run)


ITEM_FIGURE_FIELDS = ("items_passed_all", "items_passed_any", "flaky_items")


def _store_item_figures(run: EvaluationRun, digest) -> None:
    """Freeze what readers would otherwise compute from every result: the item-level figures over
    attempts and the run's judge fingerprints."""
    figures = item_figures(run=run)
    for name in ITEM_FIGURE_FIELDS:
        setattr(run, name, figures[name])
    run.judge_fingerprints = digest.judge_fingerprints()


def run_cancel(*, run: EvaluationRun, requested_by=None, admin: bool = True) -> EvaluationRun:
    """Cancels a pending or running run. A request from outside (`admin=False`: the caller lacks the
    admin scope) may cancel only a run `requested_by` started: an `evaluate` key is not licence to
    stop other people's work. Internal callers (the admin site's action, the engine) leave the defaults."""
    if not admin and (requested_by is None or run.created_by_id is None or run.created_by_id != requested_by.pk):
        raise ForbiddenError("Only the person who started this run, or an admin, can cancel it")
    with transaction.atomic():
        run = EvaluationRun.objects.select_for_update().get(pk=run.pk)
        if run.is_finished:
            raise ConflictError(f"Run {run.run_id} is already {run.status}")
        before = run.status
        run.status = Status.CANCELLED
        run.completed_at = timezone.now()
        run.error = "Cancelled"
        run.save(update_fields=["status", "completed_at", "error"])
        audit_record(
            action="cancel",
            obj=run,
            object_type="run",
            object_id=str(run.run_id),
            changes={"status": [before, run.status]},
        )
    return run


def run_recover(*, run_id, project) -> EvaluationRun:
    """A run of `project` for reading (NotFoundError if there is none there). Reading a running run
    also recovers it if its workers died, so it never looks busy forever."""
    run = run_get(run_id=run_id, project=project)
    if run.status == Status.RUNNING and runs_reap(run_pk=run.pk):
        run.refresh_from_db()
    return run


def runs_reap(*, run_pk: int | None = None) -> int:
    """Recover items whose worker died, and runs left with nothing in flight. Returns how many items
    were re-queued or failed plus how many stalled runs were dispatched again."""
    now = timezone.now()
    stale_before = now - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS)
    stale = EvaluationResult.objects.in_flight().filter(heartbeat_at__lt=stale_before, run__status=Status.RUNNING)
    if run_pk is not None:
        stale = stale.filter(run_id=run_pk)
    touched_runs: set[int] = set()
    handled = 0
    for result in stale.select_related(None).only("pk", "run_id", "state", "attempts"):
        if result.state == State.QUEUED:
            # Never picked up (a lost message, or a broker restart): queue it again.
            EvaluationResult.objects.filter(pk=result.pk, state=State.QUEUED).update(heartbeat_at=now)
            _enqueue([result.pk])
        elif result.attempts < MAX_ATTEMPTS:
            EvaluationResult.objects.filter(pk=result.pk, state=State.RUNNING).update(state=State.PENDING)
        else:
            _record(
                result,
                passed=False,
                output={"messages": []},
                error=f"Worker lost: no heartbeat for {settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS} s "
                f"on each of {result.attempts} attempts",
            )
        touched_runs.add(result.run_id)
        handled += 1
    for pk in touched_runs:
        run_dispatch(run_pk=pk)
    # A worker that died after an item's result committed and before its run_dispatch leaves the
    # run with pending items (or none left to finalize) and nothing in flight: no heartbeat can go
    # stale, so only this finds it. run_dispatch counts under the run's lock, so racing a live
    # worker that is about to dispatch the same run queues nothing twice.
    in_flight = EvaluationResult.objects.in_flight().filter(run=OuterRef("pk"))
    stalled = EvaluationRun.objects.filter(~Exists(in_flight), status=Status.RUNNING).exclude(pk__in=touched_runs)
    if run_pk is not None:
        stalled = stalled.filter(pk=run_pk)
    for pk in stalled.values_list("pk", flat=True):
        if run_dispatch(run_pk=pk) or not EvaluationRun.objects.filter(pk=pk, status=Status.RUNNING).exists():
            handled += 1
    # A run whose start message was lost still starts.
    for pk in EvaluationRun.objects.filter(status=Status.PENDING, created_at__lt=stale_before).values_list(
        "pk", flat=True
    ):
        run_start(run_pk=pk)
    return handled


MAX_REVIEW_NOTE = 5000


def verdict_review_create(
    *, result: EvaluationResult, kind: str, key: str, passed: bool, note: str = "", reviewer=None
):
    """Record a reviewer's pass/fail on one criterion or rule verdict of a finished result: a human
    Score of the same subject, kind and key (scores.human_score_record). The judge's verdict is never
    changed, nor copied: agreement pairs the review with it by subject and key."""
    if kind not in (CRITERION, RULE):
        raise InvalidInputError(f"kind must be one of {CRITERION}, {RULE}")
    if len(note) > MAX_REVIEW_NOTE:
        raise InvalidInputError(f"note is longer than {MAX_REVIEW_NOTE} characters")
    if result.state != State.DONE:
        raise ConflictError("This result is not finished yet; review it once its run has judged it.")
    if not any(v.key == key for v in result.verdicts(kind) or []):
        raise InvalidInputError(f"This result has no {kind} verdict {key!r}")
    # review_id: the id the API has always named a review by.
    return human_score_record(
        subject_kind=SubjectKind.RUN_RESULT,
        subject_id=result.pk,
        parent_id=result.run_id,
        attempt=result.attempt,
        kind=kind,
        key=key,
        passed=passed,
        note=note.strip(),
        author=reviewer,
        detail={
            "reviewer_name": reviewer.get_username() if reviewer is not None else "",
            "review_id": str(uuid.uuid4()),
        },
    )


# Runs per retention call: each goes with all its results (a large run has 100,000), so a few at a
# time keep each transaction short.
RUNS_PER_EXPIRY = 5


def runs_expire(project, before, limit: int) -> int:
    """Retention (apps.core.retention, run_retention_days): deletes up to min(limit, RUNS_PER_EXPIRY)
    of the project's finished runs created before `before`, oldest first, with their results, the
    results' Score rows and queue items, and their kept comparisons. A run still going is kept."""
    with transaction.atomic():
        finished = EvaluationRun.objects.filter(project=project, status__in=EvaluationRun.FINISHED)
        runs = expired_ids(finished, before=before, limit=min(limit, RUNS_PER_EXPIRY))
        if not runs:
            return 0
        results = EvaluationResult.objects.filter(run_id__in=runs)
        # As a subquery, not a list: a run's results can outnumber a statement's parameters.
        subjects_forget(subject_kind=SubjectKind.RUN_RESULT, subject_ids=results.values("pk"))
        rows_delete_quietly(results)
        _, deleted = EvaluationRun.objects.filter(pk__in=runs).delete()
        return deleted.get(EvaluationRun._meta.label, 0)


# --- run results as test cases -------------------------------------------------------------------

FROM_RESULT_TAG = "from-run-result"


def _item_from_result(result: EvaluationResult, expected_outcome: str, success_criteria: list[str]) -> dict:
    """A test item (ItemIn's fields) that asks again what the result was asked: its message, or the
    user's turns of its transcript as a scripted scenario; the expected tools of the item it ran."""
    view = display.result_item_view(result=result)
    users = display.user_turns(result.output)[: testset_services.MAX_REPLAYED_TURNS]
    name = f"{(result.item_name or 'Run result')[:200]} (result {str(result.result_id)[:8]})"
    item = {
        "type": "single_turn",
        "name": name,
        "inputs": {"message": view.get("message") or (users[0] if users else "")},
        "expected": {
            "expected_outcome": expected_outcome,
            "success_criteria": success_criteria,
            "should_use_tools": view["expected"].get("should_use_tools", []),
            "should_not_use_tools": view["expected"].get("should_not_use_tools", []),
        },
        "tags": [FROM_RESULT_TAG],
        "priority": view.get("priority") or "medium",
        "source_result_id": str(result.result_id),
    }
    if view["type"] == "scenario" and users:
        item["type"] = "scenario"
        item["inputs"] = {
            "persona": view.get("persona") or testset_services.REPLAY_PERSONA,
            "initial_message": users[0],
            "scripted_turns": users[1:],
            "max_turns": len(users),
        }
    return item


def results_to_test_items(
    *, test_set, requests: list[tuple[EvaluationResult, str, list[str]]], changelog: str = "", author: str = ""
):
    """Publish the next version of `test_set` with one item per run result (`requests`: the result,
    its expected outcome and success criteria), each keeping `source_result_id`. A result of another
    project is not found; one already made into an item of the test set is a 422; nothing is
    published then."""
    for result, _outcome, _criteria in requests:
        if result.run.project_id != test_set.project_id:
            raise NotFoundError(f"No result {result.result_id}")
    return testset_services.testset_items_append(
        test_set=test_set,
        items=[_item_from_result(result, outcome, criteria) for result, outcome, criteria in requests],
        changelog=changelog or f"Added {len(requests)} item{'' if len(requests) == 1 else 's'} from run results",
        author=author,
    )
