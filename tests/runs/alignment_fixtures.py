"""What the alignment-loop tests share (tests/runs/test_alignment.py, tests/console/test_alignment_pages.py):
a rubric whose rule BRIEF is too strict at version 1 and right at version 2, and results a reviewer
labelled for it."""

from apps.rubrics.models import Rubric, RubricVersion
from apps.rubrics.schemas import RubricContent
from apps.rubrics.services import rubric_publish_version
from apps.scores.vocabulary import ScoreKind
from tests.rubrics.factories import RubricFactory, RubricRuleFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, review_create, rule

SHORT, LONG = "One. Two. Three.", "A. B. C. D. E. F."
STRICT = {"pass_conditions": ["Response is under 2 sentences"], "fail_conditions": []}
LOOSE = {"pass_conditions": ["Response is under 4 sentences"], "fail_conditions": []}


def _output(reply: str) -> dict:
    assistant = {"role": "assistant", "content": reply, "tool_calls": []}
    return {"messages": [{"role": "user", "content": "PTO?"}, assistant]}


def content_of(snapshot: dict) -> RubricContent:
    """A version's snapshot as the content to publish (without its version and timestamps)."""
    return RubricContent.model_validate({k: snapshot[k] for k in RubricContent.model_fields if k in snapshot})


def brief_rubric() -> Rubric:
    """Rule BRIEF at version 1 asks for under 2 sentences (too strict: reviewers pass three); version
    2 asks for under 4."""
    rubric = RubricFactory(rules=[RubricRuleFactory(id="BRIEF", evaluation_criteria=STRICT)])
    head = RubricVersion.objects.get(rubric=rubric, version=1).snapshot
    head["rules"][0]["evaluation_criteria"] = LOOSE
    rubric_publish_version(rubric=rubric, content=content_of(head))
    return rubric


def labelled(rubric, n_short: int, n_long: int, *, judged_as=None):
    """Results of a version-1 run, each with the judge's stored verdict on BRIEF (as version 1 judged
    them: fail, unless `judged_as` says) and a reviewer's (short passes, long fails)."""
    run = EvaluationRunFactory(rubric_id=rubric.pk, rubric_version=1, project=rubric.project)
    results = []
    for reply, human in [(SHORT, True)] * n_short + [(LONG, False)] * n_long:
        judge = judged_as(reply) if judged_as else False
        result = EvaluationResultFactory(run=run, rubric_scores=[rule("BRIEF", judge)], output=_output(reply))
        review_create(result=result, kind=ScoreKind.RULE, key="BRIEF", passed=human)
        results.append(result)
    return results
