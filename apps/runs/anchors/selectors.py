"""Reads of the judge anchors: which judge is in force and how it would fingerprint its verdicts
(without asking it), the anchor sets of a test set, and what a check found (its report is computed
here from its stored verdicts, once, when it finishes)."""

from django.urls import reverse

from apps.core.llm.client import get_llm_client, llm_configured
from apps.core.llm.fingerprint import judge_fingerprint
from apps.core.selectors import object_get
from apps.rubrics.selectors import rule_judges_of
from apps.scores.agreement import cohen_kappa, kappa_interval
from apps.scores.models import Score
from apps.scores.vocabulary import SubjectKind
from apps.testsets.models import TestSet

from ..executor import HEURISTIC_FINGERPRINT, JudgeChoice
from ..judging import llm
from ..judging.fingerprint import distinct_judges, judge_changes
from ..judging.types import CRITERION, JUDGE_HEURISTIC, RULE, stored_assessed
from ..models import AnchorCheck, AnchorSet

HEURISTIC_NAMES = ("heuristic", JUDGE_HEURISTIC)


def judge_in_force() -> tuple[str, JudgeChoice]:
    """The judge a run created now would get by default: the configured LLM, else the heuristic one."""
    judge = JudgeChoice(get_llm_client()) if llm_configured() else JudgeChoice()
    return judge.label, judge


def _rule_model(judge_label: str, override: dict | None) -> tuple[str | None, str | None]:
    """(LLM model or None for the heuristic judge, instructions) a rule is judged with: the choice
    executor.rule_judge makes, without building a client (an unconfigured LLM is not an error here)."""
    model = (override or {}).get("judge_model")
    chosen = (None if model in HEURISTIC_NAMES else model) if model else JudgeChoice.model_of(judge_label)
    instructions = (override or {}).get("instructions") if chosen is not None else None
    return chosen, instructions or None


def _expected_part(model: str | None, template: str) -> dict:
    if model is None:
        return dict(HEURISTIC_FINGERPRINT)
    return judge_fingerprint(judge="llm", model=model, template=template)


def judge_identity(*, anchor_set: AnchorSet, judge_label: str, rule_judges: dict[str, dict]) -> list[dict]:
    """The distinct judge parts (fingerprint.judge_part) the anchors' verdicts would carry if judged
    now by `judge_label` with `rule_judges`: model, prompt template hash, evalsite's judge version,
    rubric version. Computed from the same templates the LLM judge hashes, without calling it; the
    model a server says answered (server_model) is not known before asking, so it is left out."""
    parts = []
    if anchor_set.has_criteria:
        parts.append(_expected_part(JudgeChoice.model_of(judge_label), llm.criterion_template()))
    for rule_id in anchor_set.rule_ids:
        model, instructions = _rule_model(judge_label, rule_judges.get(rule_id))
        parts.append(
            {**_expected_part(model, llm.rule_template(instructions)), "rubric_version": anchor_set.rubric_version}
        )
    return distinct_judges(parts)


def without_server_model(judges: list[dict]) -> list[dict]:
    """Judge parts as judge_identity gives them: what the server said answered is not predictable."""
    return distinct_judges([{k: v for k, v in part.items() if k != "server_model"} for part in judges])


def identity_in_force(anchor_set: AnchorSet) -> tuple[str, dict[str, dict], list[dict]]:
    """(judge label, rule judges, judge_identity) of the judge in force for `anchor_set`."""
    label, _ = judge_in_force()
    rule_judges = rule_judges_of(anchor_set.rubric_id) if anchor_set.rubric_id else {}
    return label, rule_judges, judge_identity(anchor_set=anchor_set, judge_label=label, rule_judges=rule_judges)


def last_identity(anchor_set: AnchorSet) -> list[dict]:
    """The judge the anchors were last judged by: the newest check's (whatever became of it: a
    failed check is not retried on its own, or a judge that always fails would be asked every few
    minutes), else the reference run's."""
    last = anchor_set.checks.order_by("-created_at", "-id").first()
    return last.judges if last is not None else without_server_model(anchor_set.reference_judges)


def reference_verdicts(anchor_set: AnchorSet) -> dict[int, list[Score]]:
    """Per reference result, its judge's criterion and rule verdicts (the newest machine score of
    each key), in the order they were asked."""
    rows = (
        Score.objects.of(SubjectKind.RUN_RESULT, anchor_set.results)
        .machine()
        .filter(kind__in=(CRITERION, RULE))
        .order_by("subject_id", "kind", "position", "created_at", "id")
    )
    newest: dict[tuple[int, str, str], Score] = {}
    for row in rows:
        newest[(row.subject_id, row.kind, row.key)] = row
    verdicts: dict[int, list[Score]] = {}
    for (subject, _kind, _key), row in newest.items():
        verdicts.setdefault(subject, []).append(row)
    return verdicts


def reference_judges(results: list[int]) -> list[dict]:
    """The distinct judges of the verdicts of `results` (reference results)."""
    rows = Score.objects.of(SubjectKind.RUN_RESULT, results).machine().filter(kind__in=(CRITERION, RULE))
    return distinct_judges(rows.values_list("fingerprint", flat=True))


def anchor_set_get(anchor_id, *, project) -> AnchorSet:
    """The anchor set of `project`; another project's is NotFoundError, as one that does not exist."""
    return object_get(
        AnchorSet.objects.filter(project=project).select_related("reference_run"), anchor_id, field="anchor_id"
    )


def anchor_sets_of(*, test_set_id=None, project) -> list[tuple[AnchorSet, AnchorCheck | None]]:
    """A test set's anchor sets (newest version first), or every one of the project's (newest
    first) without `test_set_id`, each with its newest check."""
    rows = AnchorSet.objects.filter(project=project).select_related("reference_run")
    if test_set_id is None:
        sets = list(rows.order_by("-created_at", "-id"))
    else:
        sets = list(rows.filter(test_set_id=test_set_id).order_by("-test_set_version"))
    newest: dict[int, AnchorCheck] = {}
    for check in AnchorCheck.objects.filter(anchor_set__in=sets).order_by("created_at", "id").defer("verdicts"):
        newest[check.anchor_set_id] = check
    return [(anchor_set, newest.get(anchor_set.pk)) for anchor_set in sets]


def test_set_names(*, project, ids) -> dict:
    """The names of the project's test sets among `ids` (a deleted one is missing)."""
    return dict(TestSet.objects.filter(project=project, pk__in=ids).values_list("pk", "name"))


def check_get(check_id, *, project) -> AnchorCheck:
    """The anchor check of `project`; another project's is NotFoundError."""
    checks = AnchorCheck.objects.filter(anchor_set__project=project).select_related(
        "anchor_set", "anchor_set__reference_run"
    )
    return object_get(checks, check_id, field="check_id")


def _changed(verdict: dict) -> bool:
    """A pass that became a fail or the reverse. A verdict either judge could not give (an error, a
    skip) is unassessed on that side and not a change: a judge server that was down is not drift."""
    before, after = stored_assessed(verdict["before"]), stored_assessed(verdict["after"])
    return before is not None and after is not None and before != after


def check_report(verdicts: list[dict], *, before_judges: list[dict]) -> dict:
    """The drift figures of a finished check over its verdicts (as AnchorCheck keeps them): kappa
    between the reference run's judge and the judge now (each a rater) over the verdicts both
    assessed, with its 95% interval; how many changed, overall and per criterion or rule; and what
    differs between the two judges, in words."""
    pairs = [(stored_assessed(v["before"]), stored_assessed(v["after"])) for v in verdicts]
    both = [(b, a) for b, a in pairs if b is not None and a is not None]
    old, new = [b for b, _ in both], [a for _, a in both]
    per_key: dict[tuple[str, str], dict] = {}
    for verdict, (before, after) in zip(verdicts, pairs, strict=True):
        entry = per_key.setdefault(
            (verdict["kind"], verdict["key"]),
            {"kind": verdict["kind"], "key": verdict["key"], "n": 0, "changed": 0, "unassessed": 0},
        )
        if before is None or after is None:
            entry["unassessed"] += 1
            continue
        entry["n"] += 1
        entry["changed"] += before != after
    after_judges = distinct_judges(v["after"].get("fingerprint") for v in verdicts)
    return {
        "verdicts": len(verdicts),
        "n": len(both),
        "changed": sum(b != a for b, a in both),
        "unassessed": {
            "before": sum(b is None for b, _ in pairs),
            "after": sum(a is None for _, a in pairs),
        },
        "kappa": cohen_kappa(new, old),
        "kappa_ci": kappa_interval(new, old),
        "agreement": round(sum(b == a for b, a in both) / len(both), 4) if both else None,
        "per_key": sorted(per_key.values(), key=lambda e: (-e["changed"], e["kind"], e["key"])),
        "judges": {"before": before_judges, "after": after_judges},
        "judge_changes": judge_changes(before_judges, after_judges),
    }


def changed_verdicts(check: AnchorCheck) -> list[dict]:
    """The verdicts the judge now gives otherwise than the reference run's judge did (pass became
    fail or the reverse), linked to their result pages."""
    return [
        {
            "id": v["result_id"],
            "url": reverse("console:result-detail", args=[v["result_id"]]),
            "kind": v["kind"],
            "key": v["key"],
            "before": v["before"],
            "after": v["after"],
        }
        for v in check.verdicts
        if _changed(v)
    ]
