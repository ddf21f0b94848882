"""CI gate: start a run, optionally wait for it, and fail the build when the pass rate is too low.

    python manage.py evalrun --test-set ID --plan [--detect 0.05] [--power 0.8]
    python manage.py evalrun --agent ID --test-set ID [--rubric ID] [--concurrency N] [--repeats K] [--label TEXT]
                             --wait [--fail-under 0.9 [--confidence 0.95]]
                             [--baseline RUN_ID|latest [--allow-judge-change]] [--max-errors 0.05] [--allow-unassessed]
                             [--max-cost USD [--allow-unpriced]] [--junit PATH] [--json PATH]

--fail-under compares the run's pass rate (passed attempts over finished attempts) with the bar;
with --confidence it compares the lower bound of the pass rate's Wilson interval at that level
instead, so a small or noisy run cannot pass the bar by luck. --repeats runs every item K times
(an item passes only if all its attempts pass; items whose attempts disagree are flaky).
--junit writes one JUnit testcase per item for the CI server; --json the run, its items, the
comparison and the gate's decision. Both are written whatever the outcome, before the exit code.

With --baseline the finished run is compared with the baseline item by item; the build fails on
a significant regression (exact McNemar test p < 0.05 and Tango's 95% interval below 0, over the
items assessed in both runs: the comparison's verdict "worse"), and never compares across a judge change
(a new judge model or prompt moves pass rates by itself) unless --allow-judge-change.

Fail-closed: with --wait it also fails when the judge errored on more than --max-errors of the
verdicts (default 0) or any item is unassessed (a high-severity rule skipped or errored), unless
--allow-unassessed: a run whose judge was down or could not judge is never a green build.

--max-cost fails the build when the run's LLM calls (bot and judge, apps.core.pricing) cost more
than that many USD. It fails closed too: a call of a model the price table has no price for cannot
be proven cheap enough, so any unpriced call fails the gate unless --allow-unpriced (then only the
priced calls are compared with the bar).
"""

import argparse
import time
import uuid
from decimal import Decimal, InvalidOperation

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import DomainError
from apps.core.models import DEFAULT_PROJECT_SLUG, Project
from apps.core.pricing import amount_text
from apps.runs import reports, selectors, services
from apps.runs.api.schemas import ComparisonOut, RunItemList, RunOut, run_answer
from apps.runs.comparison import REGRESSED
from apps.runs.judging.aggregate import UNASSESSED
from apps.runs.schemas import RunCreateIn
from apps.runs.stats import SIGNIFICANCE, VERDICT_WORDS, WORSE, items_needed, wilson_interval
from apps.testsets.selectors import testset_version_items

FAILED_SHOWN = 20
# The repeats --plan prints a line for.
PLAN_REPEATS = (1, 2, 3, 5, 10)


class Command(BaseCommand):
    help = (
        "Run a test set (or V1 question set) against a bot; with --wait, follow it, print a summary with a "
        "console link for each failed item, and exit 1 when the gate fails. The CI gate is documented in "
        "docs/runs.md. Defaults in brackets."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--agent", metavar="AGENT_ID", help="the bot to evaluate: its agent_id (required unless --plan)"
        )
        parser.add_argument(
            "--plan",
            action="store_true",
            help="run nothing: print how many items x repeats the test set needs to detect a drop of --detect "
            "with --power, given the flip rate its newest repeated run measured",
        )
        parser.add_argument(
            "--detect",
            type=float,
            default=0.05,
            metavar="DROP",
            help="with --plan: the drop in pass rate to detect, 0 to 1 [%(default)s]",
        )
        parser.add_argument(
            "--power", type=float, default=0.8, metavar="P", help="with --plan: the power wanted [%(default)s]"
        )
        parser.add_argument(
            "--project",
            default=DEFAULT_PROJECT_SLUG,
            metavar="SLUG",
            help="the project the bot, test set, rubric and baseline are in [%(default)s]",
        )
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--test-set", type=uuid.UUID, metavar="ID", help="the test set to run (its id)")
        source.add_argument("--dataset", type=uuid.UUID, metavar="ID", help="or a V1 question set to run (its id)")
        parser.add_argument(
            "--test-set-version", type=int, metavar="N", help="the test set version to run [its current version]"
        )
        parser.add_argument(
            "--rubric",
            type=uuid.UUID,
            metavar="ID",
            help="the rubric whose rules judge every item [none: success criteria only]",
        )
        parser.add_argument("--rubric-version", type=int, metavar="N", help="the rubric version [its current version]")
        parser.add_argument(
            "--concurrency", type=int, default=3, metavar="N", help="items in flight at once, 1 to 32 [%(default)s]"
        )
        parser.add_argument(
            "--repeats",
            type=int,
            default=1,
            metavar="K",
            help="run every item K times, 1 to 10; an item passes only if every attempt passes [%(default)s]",
        )
        parser.add_argument(
            "--scope",
            dest="component_scope_filter",
            metavar="SCOPE",
            help="judge only rubric rules of this component scope: prompt, knowledge_base, function "
            "or general [all rules]",
        )
        parser.add_argument(
            "--judge-model",
            metavar="MODEL",
            help='"heuristic" for the offline judge, or a model name on the configured LLM server '
            "[the configured judge: an LLM when OPENAI_* is set, else heuristic]",
        )
        parser.add_argument(
            "--label",
            default="",
            metavar="TEXT",
            help="what to call the run, e.g. the commit it tests (at most 200 characters)",
        )
        parser.add_argument(
            "--wait", action="store_true", help="wait for the run to finish, print its summary and apply the gate"
        )
        parser.add_argument(
            "--fail-under",
            type=float,
            metavar="RATE",
            help="with --wait: exit 1 if the pass rate (0 to 1) is below this",
        )
        parser.add_argument(
            "--confidence",
            type=float,
            metavar="LEVEL",
            help="with --fail-under: compare the lower bound of the pass rate's Wilson interval at "
            "this level (e.g. 0.95) instead of the pass rate itself",
        )
        parser.add_argument(
            "--junit", metavar="PATH", help="with --wait: write a JUnit XML report, one testcase per item"
        )
        parser.add_argument(
            "--json", metavar="PATH", help="with --wait: write the run, its items and the comparison as JSON"
        )
        parser.add_argument(
            "--baseline",
            metavar="RUN_ID|latest",
            help='with --wait: compare with this run, or "latest" (the newest earlier completed run '
            "of the test set); exit 1 only on a significant regression",
        )
        parser.add_argument(
            "--allow-judge-change",
            action="store_true",
            help="with --baseline: compare even when the judge's fingerprints differ",
        )
        parser.add_argument(
            "--max-errors",
            type=float,
            default=0.0,
            metavar="FRACTION",
            help="with --wait: exit 1 if the share of errored verdicts is above this, 0 to 1 "
            "[%(default)s: any judge error fails]",
        )
        parser.add_argument(
            "--allow-unassessed",
            action="store_true",
            help="with --wait: do not fail on unassessed items (a criterion or a high-severity "
            "rule the judge could not assess)",
        )
        parser.add_argument(
            "--max-cost",
            type=_usd,
            metavar="USD",
            help="with --wait: exit 1 if the run's LLM calls (bot and judge) cost more than this, or if "
            "any call is unpriced (its model has no price; see --allow-unpriced)",
        )
        parser.add_argument(
            "--allow-unpriced",
            action="store_true",
            help="with --max-cost: compare only the priced calls instead of failing on an unpriced one",
        )
        parser.add_argument(
            "--timeout",
            type=float,
            default=3600,
            metavar="SECONDS",
            help="with --wait: give up after this many seconds [%(default)s]",
        )
        parser.add_argument("--poll", type=float, default=2.0, help=argparse_hidden())

    def handle(self, *args, **o):
        slug = o["project"]
        self.project = (
            Project.objects.default() if slug == DEFAULT_PROJECT_SLUG else Project.objects.filter(slug=slug).first()
        )
        if self.project is None:
            raise CommandError(f"No project {o['project']}")
        if o["plan"]:
            return self._plan(o)
        if not o["agent"]:
            raise CommandError("--agent is required (the bot to evaluate)")
        if o["fail_under"] is not None and not 0 <= o["fail_under"] <= 1:
            raise CommandError("--fail-under is a pass rate between 0 and 1")
        if o["baseline"] and not o["wait"]:
            raise CommandError("--baseline compares the finished run: add --wait")
        if o["max_cost"] is not None and not o["wait"]:
            raise CommandError("--max-cost checks the finished run: add --wait")
        if o["allow_unpriced"] and o["max_cost"] is None:
            raise CommandError("--allow-unpriced sets how --max-cost is checked: add --max-cost")
        if (o["junit"] or o["json"]) and not o["wait"]:
            raise CommandError("--junit and --json report the finished run: add --wait")
        if o["confidence"] is not None:
            if not 0 < o["confidence"] < 1:
                raise CommandError("--confidence is a level between 0 and 1, e.g. 0.95")
            if o["fail_under"] is None:
                raise CommandError("--confidence sets how --fail-under is compared: add --fail-under")
        baseline = self._baseline(o["baseline"]) if o["baseline"] not in (None, "latest") else None
        if not 0 <= o["max_errors"] <= 1:
            raise CommandError("--max-errors is a share of verdicts between 0 and 1")
        try:
            data = RunCreateIn.of(
                agent_id=o["agent"],
                test_set_id=o["test_set"],
                test_set_version=o["test_set_version"],
                dataset_id=o["dataset"],
                rubric_id=o["rubric"],
                rubric_version=o["rubric_version"],
                concurrency=o["concurrency"],
                component_scope_filter=o["component_scope_filter"],
                judge_model=o["judge_model"],
                label=o["label"],
                repeats=o["repeats"],
            )
            run = services.run_create(data=data, project=self.project)
        except DomainError as exc:
            raise CommandError(str(exc.detail)) from exc
        self.stdout.write(
            f"run {run.run_id}: {run.total // run.repeats} items"
            + (f" x {run.repeats} attempts" if run.repeats > 1 else "")
            + f", judge {run.judge}"
        )
        if not o["wait"]:
            return
        deadline = time.monotonic() + o["timeout"]
        last = None
        while True:
            run = selectors.run_get(run_id=run.run_id, project=self.project)
            if run.status == run.Status.RUNNING:
                services.runs_reap(run_pk=run.pk)
            progress = (run.status, run.completed, run.passed, run.failed, run.unassessed)
            if progress != last:
                counted = "attempts" if run.repeats > 1 else "items"
                self.stdout.write(
                    f"  {run.status}: {run.completed}/{run.total} {counted} done, {run.passed} passed, "
                    f"{run.failed} failed" + (f", {run.unassessed} unassessed" if run.unassessed else "")
                )
                last = progress
            if run.is_finished:
                break
            if time.monotonic() > deadline:
                raise CommandError(f"run {run.run_id} did not finish within {o['timeout']:.0f} s")
            time.sleep(o["poll"])
        self._summary(run)
        if run.status != run.Status.COMPLETED:
            reason = f"run {run.run_id} ended {run.status}: {run.error or ''}"
            self._reports(run, None, [reason], o)
            raise CommandError(reason)
        reasons = []
        comparison = None
        if o["baseline"]:
            baseline = baseline or selectors.run_previous_find(run=run, completed_only=True)
            if baseline is None:
                self.stdout.write("no earlier completed run of this test set: nothing to compare with")
            else:
                comparison = self._compare(baseline, run, allow_judge_change=o["allow_judge_change"], reasons=reasons)
        rate = run.pass_rate or 0.0
        if o["fail_under"] is not None and o["confidence"] is not None:
            low, high = wilson_interval(run.passed, run.completed, confidence=o["confidence"]) or (0.0, 0.0)
            self.stdout.write(f"  pass rate {rate:.1%}, {o['confidence']:.0%} interval [{low:.1%}, {high:.1%}]")
            if low < o["fail_under"]:
                reasons.append(
                    f"the pass rate's {o['confidence']:.0%} lower bound {low:.1%} is below {o['fail_under']:.1%}"
                )
        elif o["fail_under"] is not None and rate < o["fail_under"]:
            reasons.append(f"pass rate {rate:.1%} is below {o['fail_under']:.1%}")
        if run.errored_share > o["max_errors"]:
            reasons.append(
                f"{run.verdicts_errored} errored verdicts ({run.errored_share:.1%}) is above --max-errors "
                f"{o['max_errors']:.1%}"
            )
        unassessed_items = selectors.item_outcome_counts(run=run)["unassessed"] if run.unassessed else 0
        if unassessed_items and not o["allow_unassessed"]:
            reasons.append(
                f"{unassessed_items} items unassessed (a high-severity rule skipped or errored; "
                "--allow-unassessed to accept)"
            )
        if o["max_cost"] is not None:
            reasons += _cost_reasons(run, o["max_cost"], allow_unpriced=o["allow_unpriced"])
        self._reports(run, comparison, reasons, o)
        if reasons:
            raise CommandError("; ".join(reasons))

    def _plan(self, o) -> None:
        """--plan: items x repeats needed to detect a drop of --detect with --power (stats.items_needed)."""
        if o["test_set"] is None:
            raise CommandError("--plan plans a test set: give --test-set")
        if not 0 < o["detect"] < 1 or not 0 < o["power"] < 1:
            raise CommandError("--detect is a drop in pass rate and --power a probability, both between 0 and 1")
        try:
            version, items = testset_version_items(o["test_set"], o["test_set_version"], project=self.project)
        except DomainError as exc:
            raise CommandError(str(exc.detail)) from exc
        rate, pairs, measured_by = selectors.test_set_flip_rate(project=self.project, test_set_id=o["test_set"])
        self.stdout.write(f"test set {o['test_set']} version {version}: {len(items)} items")
        if rate is None:
            rate = 0.0
            self.stdout.write(
                "  flip rate: not measured (no completed run of this test set with --repeats 2 or more); "
                "assuming 0, so the figures below are the least it needs: run it once with --repeats 3 to measure"
            )
        else:
            self.stdout.write(
                f"  flip rate {rate:.3f}: {pairs} pairs of attempts judged by the same judge, run {measured_by.run_id}"
            )
        self.stdout.write(
            f"  to detect a drop of {o['detect'] * 100:.1f} points in pass rate with power {o['power']:.0%} "
            f"(two-sided, alpha {SIGNIFICANCE}):"
        )
        enough = None
        for repeats in PLAN_REPEATS:
            needed = items_needed(detect=o["detect"], power=o["power"], flip_rate=rate, repeats=repeats)
            fits = needed <= len(items)
            enough = enough or (repeats if fits else None)
            mark = "  <- this test set has enough" if fits else ""
            self.stdout.write(f"    --repeats {repeats}: {needed} items{mark}")
        if enough is None:
            self.stdout.write(f"  {len(items)} items are not enough even at --repeats {PLAN_REPEATS[-1]}: add items")
        else:
            self.stdout.write(f"  run it with --repeats {enough} or more")

    def _reports(self, run, comparison, reasons: list[str], o) -> None:
        """Write the --junit and --json files, whatever the gate decided."""
        if o["junit"]:
            name = run.label or f"run {run.run_id}"
            named = selectors.run_named_get(run=run)
            test_set = named.test_set_name_value or str(run.test_set_id or run.dataset_id)
            self._write(
                o["junit"],
                reports.junit_xml(
                    run=run, suite_name=name, test_set_name=test_set, allow_unassessed=o["allow_unassessed"]
                ),
            )
        if o["json"]:
            items = selectors.run_item_list(run=run, limit=max(run.total, 1))
            report = reports.json_report(
                run=RunOut.model_validate(run_answer(run)).model_dump(mode="json"),
                items=RunItemList.model_validate(items).model_dump(mode="json")["items"],
                comparison=(ComparisonOut.model_validate(comparison).model_dump(mode="json") if comparison else None),
                gate={"passed": not reasons, "reasons": reasons},
            )
            self._write(o["json"], report.encode())

    def _write(self, path: str, content: bytes) -> None:
        try:
            with open(path, "wb") as out:
                out.write(content)
        except OSError as exc:
            raise CommandError(f"cannot write {path}: {exc.strerror}") from exc
        self.stdout.write(f"wrote {path}")

    def _baseline(self, run_id: str):
        try:
            return selectors.run_get(run_id=uuid.UUID(run_id), project=self.project)
        except ValueError as exc:
            raise CommandError(f'--baseline is a run id or "latest", not {run_id!r}') from exc
        except DomainError as exc:
            raise CommandError(f"baseline: {exc.detail}") from exc

    def _compare(self, baseline, run, *, allow_judge_change: bool, reasons: list[str]) -> dict | None:
        """Print the comparison with the baseline and return it; add a reason to fail (exit 1) on a
        judge change not allowed, or on a significant regression, listing the regressed items."""
        try:
            # Every regressed item is printed (shown=None); the lists it does not print are not built.
            comparison = selectors.run_comparison(base=baseline, head=run, shown=None, listed=(REGRESSED,))
        except DomainError as exc:
            reasons.append(f"baseline {baseline.run_id}: {exc.detail}")
            return None
        if comparison["judge_changed"]:
            changes = "; ".join(comparison["judge_changes"])
            if not allow_judge_change:
                reasons.append(
                    f"the judge changed since baseline {baseline.run_id} ({changes}): pass rates are "
                    "not comparable; rerun the baseline with this judge, or pass --allow-judge-change"
                )
                return comparison
            self.stdout.write(f"warning: the judge changed since the baseline: {changes}")
        statistics = comparison["statistics"]
        changes = statistics["changes"]
        interval = statistics["pass_rate_diff_ci"]
        self.stdout.write(
            f"compared with baseline {baseline.run_id}: {VERDICT_WORDS[statistics['verdict']]}"
            + (
                f" (the test and the interval disagree: {statistics['disagreement']})"
                if statistics["disagreement"]
                else ""
            )
        )
        self.stdout.write(
            f"  {statistics['assessed_items']} of {statistics['paired_items']} paired items assessed in "
            f"both: {changes['both_passed']} both passed, "
            f"{changes['both_failed']} both failed, {changes['pass_to_fail']} pass→fail, "
            f"{changes['fail_to_pass']} fail→pass; McNemar p = {statistics['mcnemar_p']:.3g}"
            + (f"; pass rate difference 95% CI [{interval[0]:+.1%}, {interval[1]:+.1%}] (Tango)" if interval else "")
        )
        for _base, head in comparison["regressions"]:
            self.stdout.write(
                f"  REGRESSED {head['item_name']}" + (f": {head['failure_reason']}" if head["failure_reason"] else "")
            )
            self.stdout.write(f"    {console_url('console:result-detail', head['result_id'])}")
        if statistics["verdict"] == WORSE:
            reasons.append(
                f"significant regression against baseline {baseline.run_id}: "
                f"{changes['pass_to_fail']} items went from pass to fail "
                f"(McNemar p = {statistics['mcnemar_p']:.3g})"
            )
        return comparison

    def _summary(self, run):
        self.stdout.write(f"run {run.run_id} {run.status}")
        items = selectors.item_outcome_counts(run=run)
        # Items by their verdict over attempts; an unassessed item is neither passed nor failed.
        self.stdout.write(
            f"  items       : {items['passed']} passed, {items['failed']} failed, {items['unassessed']} "
            f"unassessed of {items['items']}" + (f" ({items['attempts']} attempts)" if run.repeats > 1 else "")
        )
        if run.repeats > 1:
            self.stdout.write(
                f"  attempts    : {run.passed}/{run.completed} passed"
                + (f" = {run.pass_rate:.1%}" if run.completed else "")
                + f", {run.failed} failed, {run.unassessed} unassessed"
            )
        else:
            self.stdout.write(
                f"  pass rate   : {run.passed}/{run.completed}" + (f" = {run.pass_rate:.1%}" if run.completed else "")
            )
        if run.repeats > 1:
            trials = selectors.run_trial_figures(run=run)
            self.stdout.write(
                f"  repeats     : pass^{run.repeats} {_percent(trials['pass_hat_k'])} "
                "(every attempt passed), "
                f"pass@{run.repeats} {_percent(trials['pass_at_k'])} (some attempt passed), "
                f"{trials['flaky_items']} flaky"
            )
        if run.unassessed:
            self.stdout.write(
                f"  unassessed  : {items['unassessed']} items (neither passed nor failed: the judge "
                "could not assess a criterion or a high-severity rule)"
            )
        cost = run.cost
        self.stdout.write(
            f"  cost        : {_usd_text(cost.total)} (bot {_usd_text(cost.bot)}, judge {_usd_text(cost.judge)})"
            + (f", {cost.unpriced_calls} unpriced calls not included" if cost.unpriced_calls else "")
        )
        cov = run.coverage
        self.stdout.write(f"  verdicts    : {cov['scored']} scored, {cov['skipped']} skipped, {cov['errored']} errored")
        self.stdout.write(f"  criteria    : {run.criteria_passed}/{run.criteria_total} passed")
        if run.rubric_id:
            self.stdout.write(f"  rubric rules: {run.rubric_rules_passed}/{run.rubric_rules_total} passed")
            for scope, score in (run.component_scores or {}).items():
                self.stdout.write(f"    {scope:<15} {score['passed']}/{score['total']} = {score['score']:.0%}")
        failed = selectors.result_list(run=run, filters={"passed": False})
        for result in failed.with_verdicts()[:FAILED_SHOWN]:
            self._failed_result(
                result,
                ("UNASSESSED" if result.outcome == UNASSESSED else "FAILED")
                + (f" (attempt {result.attempt})" if run.repeats > 1 else ""),
            )
        if (more := failed.count() - FAILED_SHOWN) > 0:
            counted = "attempts" if run.repeats > 1 else "items"
            self.stdout.write(
                f"  … and {more} more failed or unassessed {counted}: {console_url('console:run-detail', run.run_id)}"
            )

    def _failed_result(self, result, label: str = "FAILED"):
        """A failed or unassessed item: why (reports.failure_lines) and where to read and review it."""
        self.stdout.write(f"  {label} {result.item_name}")
        for line in reports.failure_lines(result):
            self.stdout.write(f"    {line}")
        self.stdout.write(f"    {console_url('console:result-detail', result.result_id)}")


console_url = reports.console_url


def _usd(text: str) -> Decimal:
    try:
        amount = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"not an amount of USD: {text!r}") from None
    if not amount.is_finite() or amount < 0:
        raise argparse.ArgumentTypeError(f"not an amount of USD: {text!r}")
    return amount


def _usd_text(amount: Decimal | None) -> str:
    return "unpriced" if amount is None else f"${amount_text(amount)}"


def _cost_reasons(run, max_cost: Decimal, *, allow_unpriced: bool) -> list[str]:
    """Fail-closed: an unpriced call could cost anything, so the bar holds only when every call is priced."""
    cost = run.cost
    reasons = []
    if cost.unpriced_calls and not allow_unpriced:
        reasons.append(
            f"{cost.unpriced_calls} LLM calls are unpriced (no price for their model and date): the run's cost "
            f"cannot be checked against --max-cost ${max_cost}; add prices, or --allow-unpriced"
        )
    if cost.total is not None and cost.total > max_cost:
        reasons.append(f"the run cost {_usd_text(cost.total)}, above --max-cost ${max_cost}")
    return reasons


def _percent(share: float | None) -> str:
    return "—" if share is None else f"{share:.1%}"


def argparse_hidden():
    return argparse.SUPPRESS
