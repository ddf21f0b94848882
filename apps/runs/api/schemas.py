import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AliasPath, BaseModel, BeforeValidator, ConfigDict, Field, RootModel

from apps.core.api.attributes import with_attributes
from apps.core.api.responses import absent_if_none
from apps.core.api.schemas import Amount, JudgeFingerprintOut
from apps.core.api.validation import Text
from apps.runs import selectors
from apps.runs.alignment.selectors import changed_items, train_disagreements
from apps.runs.models import EvaluationRun
from apps.runs.schemas import RunCreateIn  # noqa: F401 - the API's request body, shown by the views' extend_schema
from apps.runs.services import MAX_REVIEW_NOTE
from apps.runs.stats import VERDICT_WORDS
from apps.scores.schemas import AgreementOut
from apps.scores.vocabulary import JudgeStatus

LLM_USAGE = (
    "Tokens the LLM judge spent on this verdict; absent for the heuristic judge. A batched judge "
    "(fingerprint judge llm-batch) spends one request on all of an item's verdicts: each carries that "
    "request's tokens and verdicts_in_request, how many verdicts share them."
)


class ComponentScore(BaseModel):
    score: float
    total: int
    passed: int


class BotSnapshotTool(BaseModel):
    tool_name: str
    name: str
    type: str
    description: str


class BotSnapshotDocument(BaseModel):
    knowledge_base: str
    title: str
    sha256: str


class BotSnapshot(BaseModel):
    name: str
    adapter: str
    endpoint_url: str
    system_prompt: str
    llm_provider: str
    llm_model: str
    llm_parameters: dict[str, Any]
    tools: list[BotSnapshotTool]
    documents: list[BotSnapshotDocument]


class JudgeFingerprint(JudgeFingerprintOut):
    rubric_version: int | None = absent_if_none("rule verdicts: the rubric version the rule comes from")


class VerdictFingerprint(JudgeFingerprint):
    criterion: str | None = absent_if_none("criterion verdicts: the criterion's text")


FINGERPRINT = "What judged this verdict; absent on verdicts stored before fingerprints existed."


class Coverage(BaseModel):
    """The denominators of the run's scores: criterion and rule verdicts by what the judge did."""

    scored: int = Field(description="verdicts the judge gave (passed or failed)")
    skipped: int = Field(description="verdicts the judge said it could not give")
    errored: int = Field(description="verdicts the judge failed to give")


def _none_if_empty(value):
    # Runs created before snapshots hold {}: no snapshot.
    return value or None


# The answers read the rows (from_attributes): EvaluationRun, EvaluationResult, the Review of a human
# score, with what an answer works out beside them (a run's trial figures, a result's run, whether a
# review is in force) added by apps.core.api.attributes.with_attributes: run_answer below (the
# views and evalrun's JSON report answer runs alike), the others in the views.


class CostOut(BaseModel):
    """What the LLM calls cost (apps.core.pricing): priced when each item was recorded, at the price
    of that day. An amount sums the priced calls and is null when none was priced; a call of a model
    the price table does not cover is counted in unpriced_calls, never priced at $0."""

    model_config = ConfigDict(from_attributes=True)

    bot: Amount = Field(description="USD the bot under test's LLM calls cost; null when none was priced")
    judge: Amount = Field(description="USD the LLM judge's calls cost; null when none was priced")
    total: Amount = Field(description="bot + judge over the priced calls; null when none was priced")
    currency: Literal["USD"]
    unpriced_calls: int = Field(description="calls whose model (or the call's date) has no price")


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    run_id: uuid.UUID
    label: str = Field(description="what the person who launched the run called it; empty if nothing")
    dataset_id: uuid.UUID | None
    agent_id: str
    status: Literal["pending", "running", "completed", "failed", "cancelled"]
    total: int = Field(description="attempts to run: items x repeats")
    completed: int = Field(description="attempts finished")
    passed: int = Field(description="attempts passed")
    failed: int = Field(description="attempts failed")
    unassessed: int = Field(
        description="attempts a high-severity rule of which was skipped or errored: neither "
        "passed nor failed, never counted as a pass"
    )
    coverage: Coverage
    repeats: int = Field(description="how many times each item runs (attempts 1..repeats)")
    pass_rate: float | None = Field(description="mean pass rate: passed / completed attempts; null before any")
    pass_rate_ci: list[float] | None = Field(
        description="[low, high]: 95% Wilson interval of pass_rate over the attempts; null before any"
    )
    pass_hat_k: float | None = Field(
        description="pass^k: share of judged items every attempt of which passed (the items' canonical verdict)"
    )
    pass_at_k: float | None = Field(description="pass@k: share of judged items some attempt of which passed")
    flaky_items: int = Field(description="items whose attempts disagree (one passed, another failed)")
    concurrency: int
    started_at: datetime | None
    completed_at: datetime | None
    error: str | None
    rubric_id: uuid.UUID | None
    rubric_version: int | None
    test_set_id: uuid.UUID | None
    test_set_version: int | None
    component_scope_filter: str | None
    component_ids_filter: list[str]
    component_scores: dict[str, ComponentScore] | None
    criteria_passed: int
    criteria_total: int
    rubric_rules_passed: int
    rubric_rules_total: int
    rubric_rules_skipped: int
    bot_llm_provider: str
    bot_llm_model: str
    judge: str
    bot_snapshot: Annotated[BotSnapshot | None, BeforeValidator(_none_if_empty)] = Field(
        description="the bot's configuration when the run was created (no secret); null for runs older than snapshots"
    )
    judge_fingerprints: list[JudgeFingerprint] = Field(
        description="the distinct judges of the run's verdicts so far (criterion texts left out)"
    )
    created_at: datetime
    cost: CostOut


def run_answer(run: EvaluationRun, judge_fingerprints: list[dict] | None = None):
    """The run with its trial figures, its component scores so far and its judges, as RunOut reads
    it. judge_fingerprints: the run's, when the caller read them for many runs at once."""
    if judge_fingerprints is None:
        judge_fingerprints = selectors.run_judge_fingerprints(runs=[run])[run.pk]
    return with_attributes(
        run,
        **selectors.run_trial_figures(run=run),
        component_scores=selectors.run_live_component_scores(run=run),
        judge_fingerprints=judge_fingerprints,
    )


class CriterionScore(BaseModel):
    criterion: str
    passed: bool | None
    score: float | None
    reasoning: str
    status: JudgeStatus
    judge: str
    usage: dict[str, int] | None = absent_if_none(LLM_USAGE)
    fingerprint: VerdictFingerprint | None = absent_if_none(FINGERPRINT)
    kind: str


class RubricScore(BaseModel):
    rule_id: str
    rule_name: str
    severity: str
    passed: bool | None
    score: float | None
    reasoning: str
    status: JudgeStatus
    judge: str
    usage: dict[str, int] | None = absent_if_none(LLM_USAGE)
    fingerprint: VerdictFingerprint | None = absent_if_none(FINGERPRINT)
    component_scope: str | None


class ResultOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    result_id: uuid.UUID
    # The run's public id, not the result's run_id column (the run's primary key).
    run_id: uuid.UUID = Field(validation_alias=AliasPath("run", "run_id"))
    test_case_id: uuid.UUID
    langsmith_run_id: str | None
    input: dict[str, Any]
    output: dict[str, Any] | None
    scores: dict[str, Any] | None
    item_name: str
    item_type: str
    attempt: int = Field(
        description="which attempt of the item this is, 1..the run's repeats; in a run's results "
        "list with repeats, the deciding attempt's"
    )
    fingerprint: str = Field(
        description="short hash of the distinct judges of this result's verdicts: equal "
        "hashes, same judge; empty until done or for verdicts without fingerprints"
    )
    criteria_scores: list[CriterionScore] | None
    criteria_passed: bool | None
    rubric_scores: list[RubricScore] | None
    rubric_passed: bool | None
    passed: bool | None = Field(description="true only when outcome is passed")
    outcome: Literal["passed", "failed", "unassessed"] | None = Field(
        description="unassessed: a criterion was skipped, or a high-severity rule skipped or errored, and none "
        "failed; null until done"
    )
    duration_ms: int | None
    error: str | None
    created_at: datetime
    cost: CostOut


class ResultAttemptOut(BaseModel):
    """One finished attempt of an item, in a repeated run's results list; its whole verdicts are at
    GET /results/{result_id}."""

    model_config = ConfigDict(from_attributes=True)

    result_id: uuid.UUID
    attempt: int = Field(description="1..the run's repeats")
    passed: bool | None = Field(description="true only when outcome is passed")
    outcome: Literal["passed", "failed", "unassessed"] | None
    criteria_passed: bool | None
    rubric_passed: bool | None
    fingerprint: str
    duration_ms: int | None
    error: str | None
    created_at: datetime


class RunResultOut(ResultOut):
    """An entry of a run's results list: one per test item. With repeats, the contract's fields are
    the item's deciding attempt's (the first whose outcome is the item's verdict: its first failed
    attempt, else its first unassessed one, else attempt 1), so passed and outcome are the item's
    verdict, and its finished attempts are nested."""

    flaky: bool | None = absent_if_none("with repeats: the item's attempts disagree (one passed, another failed)")
    attempts: list[ResultAttemptOut] | None = absent_if_none(
        "with repeats: the item's finished attempts in attempt order; absent for a run without repeats"
    )


class ReviewIn(BaseModel):
    kind: Literal["criterion", "rule"]
    key: Annotated[
        Text, Field(min_length=1, max_length=1000, description="the criterion's text, or the rule's rule_id")
    ]
    passed: bool = Field(strict=True)
    note: Annotated[Text, Field(max_length=MAX_REVIEW_NOTE)] = ""


class ReviewOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    review_id: uuid.UUID
    result_id: uuid.UUID
    kind: Literal["criterion", "rule"]
    key: str
    passed: bool
    note: str
    judge_passed: bool | None = Field(description="the judge's verdict when reviewed; null if it errored or skipped")
    judge_status: JudgeStatus
    judge: str
    reviewer: str = Field(validation_alias="reviewer_name")
    in_force: bool = Field(description="the newest review of this verdict, the one the human figures use")
    created_at: datetime


class ReviewList(RootModel[list[ReviewOut]]):
    pass


class ResultDetailOut(ResultOut):
    human_passed: bool | None = Field(
        description=(
            "The human verdict: the item's pass logic over its verdicts with the reviews in force applied; "
            "verdicts nobody reviewed keep the judge's. null until a person reviewed a verdict of this result, "
            "and null while the reviewed item stays unassessed (a high-severity rule neither judge nor reviewer "
            "assessed). Never the judge's verdict copied: that is `passed`."
        )
    )
    reviews: list[ReviewOut]


class RunList(RootModel[list[RunOut]]):
    pass


class ResultList(RootModel[list[RunResultOut]]):
    pass


class AttemptOut(BaseModel):
    attempt: int
    result_id: uuid.UUID
    outcome: Literal["passed", "failed", "unassessed"] | None = Field(description="null until the attempt is done")


class RunItemOut(BaseModel):
    test_case_id: uuid.UUID
    position: int
    item_name: str
    item_type: str
    outcome: Literal["passed", "failed", "unassessed"] | None = Field(
        description="the item's canonical verdict: passed only if every attempt passed, failed if any failed, "
        "else unassessed; null until all its attempts are done"
    )
    attempts_done: int
    attempts_passed: int
    pass_rate: float | None = Field(description="attempts passed / attempts done")
    passed_all: bool = Field(description="pass^k for this item: every attempt passed")
    passed_any: bool = Field(description="pass@k for this item: some attempt passed")
    flaky: bool = Field(description="its attempts disagree: one passed, another failed")
    flip_rate: float | None = Field(
        description="share of pairs of its attempts judged with the same judge fingerprint whose verdicts differ "
        "(unassessed attempts left out); null with fewer than two such attempts"
    )
    attempts: list[AttemptOut]


class RunItemList(BaseModel):
    items: list[RunItemOut]
    total: int = Field(description="items matching the filter")
    has_more: bool


class ChangeCounts(BaseModel):
    """Items assessed (passed or failed) in both runs, by their verdict before → after."""

    both_passed: int
    both_failed: int
    pass_to_fail: int
    fail_to_pass: int


class BucketCounts(BaseModel):
    """Every item of either run in exactly one bucket, by its canonical verdict before → after
    (docs/comparison.md); failed never includes unassessed."""

    regressions: int = Field(description="passed → failed")
    fixes: int = Field(description="failed → passed")
    still_failing: int = Field(description="failed → failed")
    unchanged_pass: int = Field(description="passed → passed")
    newly_assessed: int = Field(description="unassessed → passed or failed (not a fix, not a regression)")
    no_longer_assessed: int = Field(description="passed or failed → unassessed")
    still_unassessed: int = Field(description="unassessed → unassessed")
    new_items: int = Field(description="only in the head run")
    dropped: int = Field(description="only in the base run")


def _head(name: str) -> AliasPath:
    return AliasPath("head", name)


def _base(name: str) -> AliasPath:
    return AliasPath("base", name)


# Read from a regressed pair of comparison rows (selectors.run_comparison), as {"base", "head"}.
class RegressionOut(BaseModel):
    test_case_id: uuid.UUID = Field(validation_alias=_head("test_case_id"))
    item_name: str = Field(validation_alias=_head("item_name"))
    item_type: str = Field(validation_alias=_head("item_type"))
    base_result_id: uuid.UUID = Field(validation_alias=_base("result_id"))
    head_result_id: uuid.UUID = Field(validation_alias=_head("result_id"))
    question: str = Field(validation_alias=_head("question"))
    base_answer: str | None = Field(validation_alias=_base("answer"))
    head_answer: str | None = Field(validation_alias=_head("answer"))
    failure_reason: str = Field(
        validation_alias=_head("failure_reason"), description="what fails the item in the head run, first"
    )


def _run_id(run) -> uuid.UUID:
    return run.run_id


def _pairs(pairs) -> list[dict]:
    return [{"base": base, "head": head} for base, head in pairs]


def _statistic(name: str) -> AliasPath:
    return AliasPath("statistics", name)


# Read from what selectors.run_comparison answers: its runs, statistics and counts.
class ComparisonOut(BaseModel):
    base_run_id: Annotated[uuid.UUID, BeforeValidator(_run_id)] = Field(validation_alias="base")
    head_run_id: Annotated[uuid.UUID, BeforeValidator(_run_id)] = Field(validation_alias="head")
    base_pass_rate: float | None = Field(validation_alias=AliasPath("base_figures", "judge_pass_rate"))
    head_pass_rate: float | None = Field(validation_alias=AliasPath("head_figures", "judge_pass_rate"))
    paired_items: int = Field(
        validation_alias=_statistic("paired_items"),
        description="items (by test case id) finished in both runs, assessed or not",
    )
    assessed_items: int = Field(
        validation_alias=_statistic("assessed_items"),
        description="items assessed (passed or failed) in both runs, out of paired_items: "
        "the statistics are over these",
    )
    changes: ChangeCounts = Field(validation_alias=_statistic("changes"))
    buckets: BucketCounts
    mcnemar_p: float = Field(
        validation_alias=_statistic("mcnemar_p"),
        description="exact McNemar test (two-sided binomial on pass→fail vs fail→pass); 1 when none changed",
    )
    pass_rate_diff_ci: list[float] | None = Field(
        validation_alias=_statistic("pass_rate_diff_ci"),
        description="[low, high]: Tango's 95% score interval (Tango 1998) of head's pass rate minus base's over the "
        "assessed items; null when no item is assessed in both",
    )
    verdict: Literal["worse", "better", "within_noise"] = Field(
        validation_alias=_statistic("verdict"),
        description="worse or better only when McNemar p < 0.05 and the interval excludes 0 on that side, "
        "else within_noise",
    )
    verdict_text: Annotated[str, BeforeValidator(VERDICT_WORDS.__getitem__)] = Field(
        validation_alias=_statistic("verdict")
    )
    disagreement: str | None = Field(
        validation_alias=_statistic("disagreement"),
        description="where the test and the interval disagree (the verdict is then within_noise), what they disagree "
        "on; null when they agree",
    )
    regressions: Annotated[list[RegressionOut], BeforeValidator(_pairs)] = Field(
        description="the first `limit` regressed items in test set order: passed in a, failed in b"
    )
    regressions_total: int = Field(description="every regressed item, listed or not")
    new_items: int
    dropped_items: int = Field(validation_alias="dropped")
    judge_changed: bool
    judge_changes: list[str] = Field(description='what differs, e.g. "prompt template 3f2a… → 9c1d…"')
    base_judge_fingerprints: list[JudgeFingerprint]
    head_judge_fingerprints: list[JudgeFingerprint]


class FlipRateOut(BaseModel):
    key: str = Field(description="The rule id.")
    flip_rate: float | None = Field(description="Share of the pairs whose verdicts differ; null without a pair.")
    pairs: int = Field(description="Pairs of the judge's verdicts on the same test case with the same fingerprint.")


class RubricAgreementOut(BaseModel):
    """GET /rubrics/{id}/agreement: an entry per rule of the rubric (and per criterion of the runs that
    used it) that reviewers have judged, across all its versions."""

    rubric_id: str
    reviews: int = Field(description="Human reviews of the results of runs that used the rubric.")
    rules: list[AgreementOut]
    criteria: list[AgreementOut]
    flip_rates: list[FlipRateOut] = Field(
        description="Judge QA per rule, reviewed or not: how often the judge's verdicts on the same test case, "
        "given with the same judge fingerprint over repeats and runs, differ"
    )


class TrialFiguresOut(BaseModel):
    """One judge's agreement with the reviewers on a trial's held-out items."""

    n: int = Field(description="Held-out items this judge assessed: kappa's n.")
    unassessed: int = Field(description="Held-out items it could not score (error, skipped): not in n.")
    kappa: float | None = Field(description="Cohen's kappa; null where undefined (one class only, no items).")
    kappa_ci: tuple[float, float] | None = Field(
        description="95% interval of kappa, as the agreement endpoints give it."
    )
    agreement: float | None = Field(description="Share of the n items where it agrees with the reviewer.")


class TrialDifferenceOut(BaseModel):
    n: int = Field(description="Held-out items both judges assessed: the difference is over these.")
    kappa: float | None = Field(description="The candidate's kappa minus the judge's, over those items.")
    kappa_ci: tuple[float, float] | None = Field(description="95% paired bootstrap interval of that difference.")


class TrialVerdictOut(BaseModel):
    status: str | None = Field(description="ok, skipped or error; null where the judge gave no verdict at all.")
    passed: bool | None


class TrialNewVerdictOut(TrialVerdictOut):
    reasoning: str
    judge: str
    value: float | None = Field(default=None, description="A metric's score, 0..1 (a rule's verdict has none).")


class TrialChangedItemOut(BaseModel):
    id: str = Field(description="The run result's result_id; a metric trial's: the evaluation's session id.")
    url: str = Field(description="Its console page.")
    human: bool = Field(description="The reviewer's verdict (a metric's score: a pass from 0.6).")
    before: TrialVerdictOut = Field(description="The judge's verdict as stored.")
    after: TrialNewVerdictOut = Field(description="The candidate's verdict.")


class TrialTrainItemOut(BaseModel):
    id: str
    url: str
    human: bool


class TrialProgressOut(BaseModel):
    judged: int
    total: int


class AlignmentTrialOut(BaseModel):
    """An alignment trial: a candidate judge for one rule, tried on the held-out half of the items
    reviewers labelled. The figures are null until it is done."""

    id: uuid.UUID = Field(validation_alias="trial_id")
    rubric_id: uuid.UUID | None = Field(description="The rubric of a rule's trial; null for a metric's.")
    rule: str | None = Field(validation_alias="rule_id", description="The rule's id; null for a metric's trial.")
    metric: str | None = Field(description="The agentic metric of a metric's trial; null for a rule's.")
    agent_name: str | None = Field(
        description="A metric's trial: the agent whose evaluations it uses (null: every agent's)."
    )
    proposal: dict[str, Any] = Field(
        description='What is tried: {"rubric_version": n}, {"judge_model": "..."} or {"prompt_template": "..."}.',
    )
    status: Literal["pending", "running", "done", "failed"]
    progress: TrialProgressOut
    n_train: int = Field(description="Labelled items in the train half (what a reviewer reads to write a candidate).")
    n_test: int = Field(description="Labelled items held out, judged again by the candidate.")
    baseline: TrialFiguresOut | None = Field(description="The judge's verdicts as stored, on the held-out items.")
    candidate: TrialFiguresOut | None = Field(description="The candidate's verdicts on the same items.")
    difference: TrialDifferenceOut | None
    better: bool | None = Field(
        description="Whether the candidate agrees better at 95% (the difference's interval lies above 0, and it "
        "leaves no more items unassessed); publishing needs it. Null until done."
    )
    changed_items: list[TrialChangedItemOut] = Field(description="Held-out items whose verdict the candidate changed.")
    train_disagreements: list[TrialTrainItemOut] = Field(
        description="Train-half items where the judge disagrees with the reviewer (the held-out half is not listed)."
    )
    published: dict[str, Any] | None = Field(
        description='What publishing made: {"rubric_version", "new_version"}, {"rule_judge": {...}} or '
        '{"metric_judge": {...}}; null before.'
    )
    published_at: datetime | None
    error: str | None = absent_if_none("Why the trial failed.")
    created_at: datetime
    finished_at: datetime | None

    model_config = ConfigDict(from_attributes=True)


class AlignmentTrialCreatedOut(BaseModel):
    id: uuid.UUID = Field(validation_alias="trial_id")
    status: str

    model_config = ConfigDict(from_attributes=True)


class AlignmentTrialList(RootModel[list[AlignmentTrialOut]]):
    pass


def trial_answer(trial, *, listed: bool = False):
    """An AlignmentTrialOut of `trial`: its figures from the stored report; the changed items and
    the train half's disagreements only on a trial's own page (`listed` leaves them empty)."""
    report = trial.report or {}
    done = trial.report is not None
    return with_attributes(
        trial,
        rule_id=trial.rule_id or None,
        metric=trial.metric or None,
        agent_name=trial.agent_name or None,
        proposal=trial.candidate,
        progress={"judged": trial.judged, "total": len(trial.test)},
        n_train=len(trial.train),
        n_test=len(trial.test),
        baseline=report.get("baseline"),
        candidate=report.get("candidate"),
        difference=report.get("difference"),
        better=report.get("better") if done else None,
        changed_items=[] if listed else changed_items(trial),
        train_disagreements=[] if listed else train_disagreements(trial),
        error=trial.error or None,
    )


class AnchorSetIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = Field(ge=1, strict=True, description="The test-set version to mark as anchors.")
    run_id: uuid.UUID | None = Field(
        default=None,
        description="The finished run of that version whose transcripts are judged again; default its newest "
        "completed run.",
    )


class AnchorProgressOut(BaseModel):
    judged: int
    total: int = Field(description="Verdicts of the reference run to judge again (criteria and rules).")


class AnchorUnassessedOut(BaseModel):
    before: int = Field(description="Verdicts the reference run's judge could not give (error, skipped).")
    after: int = Field(description="Verdicts the judge now could not give (error, skipped): not changes.")


class AnchorCheckSummaryOut(BaseModel):
    """A check of anchors: its judge and, once done, its headline figures."""

    id: uuid.UUID = Field(validation_alias="check_id")
    status: Literal["pending", "running", "done", "failed"]
    trigger: Literal["manual", "judge_changed"] = Field(
        description="manual: started through the API; judge_changed: started by the beat task when the judge in "
        "force stopped matching the one the anchors were last judged by."
    )
    judge: str = Field(description="The run judge the check used (heuristic:v1 or openai:<model>).")
    progress: AnchorProgressOut
    n: int | None = Field(description="Verdicts both judges assessed: kappa's n. Null until done.")
    changed: int | None = Field(description="Of those, verdicts that went from pass to fail or back.")
    kappa: float | None = Field(
        description="Cohen's kappa between the reference run's judge and the judge now; null where undefined "
        "(no pairs, or both judges gave one and the same verdict throughout) or not done."
    )
    kappa_ci: tuple[float, float] | None = Field(description="95% interval of kappa (scores.agreement.kappa_interval).")
    judge_changes: list[str] = Field(description='What differs between the two judges, in words ("model a → b").')
    error: str | None = absent_if_none("Why the check failed.")
    created_at: datetime
    finished_at: datetime | None

    model_config = ConfigDict(from_attributes=True)


class AnchorSetOut(BaseModel):
    """A test-set version marked as anchors: its reference run's transcripts are judged again whenever
    the judge changes."""

    id: uuid.UUID = Field(validation_alias="anchor_id")
    test_set_id: uuid.UUID
    version: int = Field(validation_alias="test_set_version")
    reference_run_id: uuid.UUID = Field(validation_alias=AliasPath("reference_run", "run_id"))
    rubric_id: uuid.UUID | None
    rubric_version: int | None
    results: int = Field(description="Reference results with a stored conversation: the anchors.")
    reference_judges: list[dict[str, Any]] = Field(description="The distinct judges of the reference verdicts.")
    latest_check: AnchorCheckSummaryOut | None
    created_at: datetime

    model_config = ConfigDict(from_attributes=True)


class AnchorSetList(RootModel[list[AnchorSetOut]]):
    pass


class AnchorPerKeyOut(BaseModel):
    kind: Literal["criterion", "rule"]
    key: str = Field(description="The criterion's text or the rule's id.")
    n: int = Field(description="Verdicts of this key both judges assessed.")
    changed: int
    unassessed: int = Field(description="Verdicts of this key one of the judges could not give.")


class AnchorVerdictOut(BaseModel):
    status: str
    passed: bool | None


class AnchorNewVerdictOut(AnchorVerdictOut):
    reasoning: str


class AnchorChangedVerdictOut(BaseModel):
    id: str = Field(description="The reference result's result_id.")
    url: str = Field(description="Its console page.")
    kind: Literal["criterion", "rule"]
    key: str
    before: AnchorVerdictOut = Field(description="The reference run's judge's verdict.")
    after: AnchorNewVerdictOut = Field(description="The judge's verdict now, on the same transcript.")


class AnchorJudgesOut(BaseModel):
    before: list[dict[str, Any]] = Field(description="Distinct judges of the reference verdicts.")
    after: list[dict[str, Any]] = Field(description="Distinct judges of the verdicts given now.")


class AnchorCheckOut(AnchorCheckSummaryOut):
    """The drift report of a check: the reference run's stored transcripts judged again by the judge
    in force; every verdict that moved is the judge's drift, not the bot's."""

    anchor_set_id: uuid.UUID = Field(validation_alias=AliasPath("anchor_set", "anchor_id"))
    test_set_id: uuid.UUID = Field(validation_alias=AliasPath("anchor_set", "test_set_id"))
    version: int = Field(validation_alias=AliasPath("anchor_set", "test_set_version"))
    rule_judges: dict[str, Any] = Field(description="The rubric's rule judges the check applied.")
    judges: AnchorJudgesOut | None = Field(description="Null until done.")
    unassessed: AnchorUnassessedOut | None
    agreement: float | None = Field(description="Share of the n verdicts both judges gave alike.")
    per_key: list[AnchorPerKeyOut] = Field(description="Per criterion and rule, the most changed first.")
    changed_verdicts: list[AnchorChangedVerdictOut]


class AnchorCheckCreatedOut(BaseModel):
    id: uuid.UUID = Field(validation_alias="check_id")
    status: str

    model_config = ConfigDict(from_attributes=True)


def anchor_check_answer(check, *, changed_verdicts: list[dict] | None = None):
    """An AnchorCheckOut (or AnchorCheckSummaryOut) of `check`, its figures from the stored report;
    `changed_verdicts` (anchors.selectors.changed_verdicts) only on a check's own page."""
    report = check.report or {}
    return with_attributes(
        check,
        progress={"judged": check.judged, "total": check.total},
        n=report.get("n"),
        changed=report.get("changed"),
        kappa=report.get("kappa"),
        kappa_ci=report.get("kappa_ci"),
        judge_changes=report.get("judge_changes") or [],
        judges=report.get("judges"),
        unassessed=report.get("unassessed"),
        agreement=report.get("agreement"),
        per_key=report.get("per_key") or [],
        changed_verdicts=changed_verdicts or [],
        error=check.error or None,
    )


def anchor_set_answer(anchor_set, latest_check):
    return with_attributes(
        anchor_set,
        results=len(anchor_set.results),
        latest_check=None if latest_check is None else anchor_check_answer(latest_check),
    )
