"""CI gate: start a run, optionally wait for it, and fail the build when the pass rate is too low.

    python manage.py evalrun --agent ID --test-set ID [--rubric ID] [--concurrency N] --wait [--fail-under 0.9]
"""

import time
import uuid

from django.core.management.base import BaseCommand, CommandError

from apps.core.errors import DomainError
from apps.runs import selectors, services


class Command(BaseCommand):
    help = "Run a test set against a bot; with --wait, print progress and exit 1 below --fail-under."

    def add_arguments(self, parser):
        parser.add_argument("--agent", required=True, help="the bot's agent_id")
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--test-set", type=uuid.UUID, help="test set id (V2)")
        source.add_argument("--dataset", type=uuid.UUID, help="question set id (V1)")
        parser.add_argument("--test-set-version", type=int)
        parser.add_argument("--rubric", type=uuid.UUID)
        parser.add_argument("--rubric-version", type=int)
        parser.add_argument("--concurrency", type=int, default=3)
        parser.add_argument("--scope", dest="component_scope_filter", help="component scope filter")
        parser.add_argument("--judge-model", help='"heuristic", or an LLM model name')
        parser.add_argument("--wait", action="store_true", help="wait for the run to finish")
        parser.add_argument("--fail-under", type=float, help="with --wait: exit 1 if the pass rate is below this")
        parser.add_argument("--timeout", type=float, default=3600, help="with --wait: give up after this many seconds")
        parser.add_argument("--poll", type=float, default=2.0, help=argparse_hidden())

    def handle(self, *args, **o):
        if o["fail_under"] is not None and not 0 <= o["fail_under"] <= 1:
            raise CommandError("--fail-under is a pass rate between 0 and 1")
        try:
            run = services.run_create(
                agent_id=o["agent"], test_set_id=o["test_set"], test_set_version=o["test_set_version"],
                dataset_id=o["dataset"], rubric_id=o["rubric"], rubric_version=o["rubric_version"],
                concurrency=o["concurrency"], component_scope_filter=o["component_scope_filter"],
                judge_model=o["judge_model"],
            )
        except DomainError as exc:
            raise CommandError(str(exc.detail)) from exc
        self.stdout.write(f"run {run.run_id}: {run.total} items, judge {run.judge}")
        if not o["wait"]:
            return
        deadline = time.monotonic() + o["timeout"]
        last = None
        while True:
            run = selectors.run_get(run_id=run.run_id)
            if run.status == run.Status.RUNNING:
                services.runs_reap(run_pk=run.pk)
            progress = (run.status, run.completed, run.passed, run.failed)
            if progress != last:
                self.stdout.write(f"  {run.status}: {run.completed}/{run.total} done, {run.passed} passed, {run.failed} failed")
                last = progress
            if run.is_finished:
                break
            if time.monotonic() > deadline:
                raise CommandError(f"run {run.run_id} did not finish within {o['timeout']:.0f} s")
            time.sleep(o["poll"])
        self._summary(run)
        if run.status != run.Status.COMPLETED:
            raise CommandError(f"run {run.run_id} ended {run.status}: {run.error or ''}")
        rate = run.pass_rate or 0.0
        if o["fail_under"] is not None and rate < o["fail_under"]:
            raise CommandError(f"pass rate {rate:.1%} is below {o['fail_under']:.1%}")

    def _summary(self, run):
        self.stdout.write(f"run {run.run_id} {run.status}")
        self.stdout.write(f"  pass rate   : {run.passed}/{run.completed}" + (f" = {run.pass_rate:.1%}" if run.completed else ""))
        self.stdout.write(f"  criteria    : {run.criteria_passed}/{run.criteria_total} passed")
        if run.rubric_id:
            self.stdout.write(f"  rubric rules: {run.rubric_rules_passed}/{run.rubric_rules_total} passed")
            for scope, score in (run.component_scores or {}).items():
                self.stdout.write(f"    {scope:<15} {score['passed']}/{score['total']} = {score['score']:.0%}")
        for result in selectors.run_results(run=run, passed=False)[:20]:
            self.stdout.write(f"  FAILED {result.item_name}: {result.error or ''}".rstrip())


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS
