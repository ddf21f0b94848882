"""What `evalrun` hands to a CI server: why an item did not pass, in lines; a JUnit XML file with
one testcase per item; and a JSON report of the run, its items and the comparison. Read-only."""

import json
from xml.etree import ElementTree as ET

from django.conf import settings
from django.urls import reverse

from .judging.aggregate import FAILED, PASSED, UNASSESSED
from .judging.types import CRITERION, RULE, Verdict
from .models import EvaluationResult, EvaluationRun, iter_with_verdicts
from .selectors import run_item_list

REASON_CHARS = 160


def console_url(name: str, *args) -> str:
    return settings.EVALSITE_BASE_URL + reverse(name, args=args)


def _outcome(verdict: Verdict) -> str:
    return "failed" if verdict.status == "ok" else verdict.status


def _reason(verdict: Verdict) -> str:
    reasoning = " ".join((verdict.reasoning or "").split())
    if len(reasoning) > REASON_CHARS:
        reasoning = reasoning[: REASON_CHARS - 1] + "…"
    return f" — {reasoning}" if reasoning else ""


def failure_lines(result: EvaluationResult) -> list[str]:
    """Why a result did not pass: the bot's or judge's error, each criterion and rule that did not
    pass with the judge's reasoning, high-severity rules skipped, and a count of other skipped
    verdicts (with the heuristic judge most rules are skipped on every item)."""
    lines = [f"error: {result.error}"] if result.error else []
    skipped = 0
    for verdict in Verdict.list_from_json(result.criteria_scores, kind=CRITERION):
        if verdict.status == "skipped":
            skipped += 1
        elif verdict.passed is not True:
            lines.append(f"criterion {_outcome(verdict)}: {verdict.key}" + _reason(verdict))
    for verdict in Verdict.list_from_json(result.rubric_scores, kind=RULE):
        if verdict.status == "skipped" and verdict.severity == "high":
            lines.append(f"rule {verdict.key} (high) skipped" + _reason(verdict))
        elif verdict.status == "skipped":
            skipped += 1
        elif verdict.passed is not True:
            lines.append(
                f"rule {verdict.key} ({verdict.severity or 'no severity'}) {_outcome(verdict)}" + _reason(verdict)
            )
    if skipped:
        lines.append(f"{skipped} skipped (the judge could not assess them)")
    return lines


def _items(run: EvaluationRun) -> list[dict]:
    return run_item_list(run=run, limit=max(run.total, 1))["items"]


def _not_passed_results(run: EvaluationRun) -> dict:
    """Per test case id, its finished attempts that did not pass (verdict columns read only for these)."""
    found: dict = {}
    for result in iter_with_verdicts(run.results.done().exclude(outcome=PASSED).order_by("position", "attempt")):
        found.setdefault(result.test_case_id, []).append(result)
    return found


def junit_xml(*, run: EvaluationRun, suite_name: str, test_set_name: str, allow_unassessed: bool = False) -> bytes:
    """A JUnit XML report: one <testcase> per item (its canonical verdict over attempts), named by
    the item under a classname from the test set's name. A failed
    item is a <failure> listing, per attempt that did not pass, the failed criteria and rules with
    the judge's reasoning; a flaky item's failure has type "flaky" and a flaky property. An
    unassessed item is never a <failure> (nothing showed that the bot failed it): it is an <error>
    of type "unassessed" whose message says the judge could not give a deciding verdict and whose
    text lists which (a CI server shows it as broken, not as a failing test, and the build still
    does not go green), or <skipped> under --allow-unassessed (it does not fail that build, and it
    is still not shown as a pass). An item that never finished (a cancelled run) is an <error> of
    type "not_run"."""
    items = _items(run)
    details = _not_passed_results(run)
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    suite = ET.Element("testsuite", name=suite_name, tests=str(len(items)))
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("run_id", run.run_id),
        ("status", run.status),
        ("judge", run.judge),
        ("repeats", run.repeats),
        ("pass_rate", run.pass_rate),
        ("console", console_url("console:run-detail", run.run_id)),
    ):
        ET.SubElement(properties, "property", name=name, value="" if value is None else str(value))
    total_seconds = 0.0
    durations = _durations(run)
    # The test set, not the run: a CI server follows a testcase's history by classname and name, which
    # must stay the same from one run of the test set to the next.
    classname = "evalsite." + "".join(c if c.isalnum() else "_" for c in test_set_name).strip("_")
    for item in items:
        seconds = durations.get(item["test_case_id"], 0) / 1000
        total_seconds += seconds
        case = ET.SubElement(
            suite,
            "testcase",
            name=item["item_name"] or str(item["test_case_id"]),
            classname=classname,
            time=f"{seconds:.3f}",
        )
        attempts = f"{item['attempts_passed']} of {item['attempts_done']} attempts passed"
        if item["flaky"]:
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", name="flaky", value="true")
        outcome = item["outcome"]
        text = "\n".join(
            f"attempt {r.attempt}: {line}" if run.repeats > 1 else line
            for r in details.get(item["test_case_id"], [])
            for line in failure_lines(r)
        )
        if outcome is None:
            counts["errors"] += 1
            ET.SubElement(case, "error", type="not_run", message=f"not finished: the run ended {run.status}")
        elif outcome == FAILED:
            counts["failures"] += 1
            kind = "flaky" if item["flaky"] else "failed"
            message = (
                f"flaky: {attempts}" if item["flaky"] else ("failed" if run.repeats == 1 else f"failed: {attempts}")
            )
            ET.SubElement(case, "failure", type=kind, message=message).text = text
        elif outcome == UNASSESSED:
            message = (
                "unassessed: the judge could not assess a criterion or a high-severity rule that decides "
                "this item; neither passed nor failed"
            )
            if allow_unassessed:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=message).text = text
            else:
                counts["errors"] += 1
                ET.SubElement(case, "error", type="unassessed", message=message).text = text
        ET.SubElement(case, "system-out").text = "\n".join(
            console_url("console:result-detail", a["result_id"]) for a in item["attempts"]
        )
    suite.set("failures", str(counts["failures"]))
    suite.set("errors", str(counts["errors"]))
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", f"{total_seconds:.3f}")
    root = ET.Element(
        "testsuites",
        name="evalsite",
        tests=str(len(items)),
        failures=str(counts["failures"]),
        errors=str(counts["errors"]),
        skipped=str(counts["skipped"]),
        time=f"{total_seconds:.3f}",
    )
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def _durations(run: EvaluationRun) -> dict:
    """Per test case id, the milliseconds its attempts took, summed."""
    totals: dict = {}
    for case, ms in run.results.done().order_by().values_list("test_case_id", "duration_ms").iterator():
        totals[case] = totals.get(case, 0) + (ms or 0)
    return totals


def json_report(*, run: dict, items: list[dict], comparison: dict | None, gate: dict) -> str:
    """The run (as GET /runs/{id} answers it), its items (as GET /runs/{id}/items), the comparison
    with the baseline (as GET /runs/{a}/compare/{b}) or null, and the gate's decision."""
    return json.dumps(
        {"run": run, "items": items, "comparison": comparison, "gate": gate}, indent=2, ensure_ascii=False, default=str
    )
