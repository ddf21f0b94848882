"""Starting a trial of a candidate judge, for a rule's and a metric's alike: what the candidate
needs before it is tried, and the queued trial."""

from django.db import transaction

from apps.core.errors import InvalidInputError
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import judge_model_check

from .. import tasks
from ..judging.types import JUDGE_HEURISTIC
from ..models import AlignmentTrial

# How a candidate names the heuristic judge: it spends nothing and needs no LLM.
HEURISTIC = ("heuristic", JUDGE_HEURISTIC)


def judge_candidate_check(candidate: dict) -> None:
    """Refuse (422) a judge model the operator does not allow, or a model or prompt template that
    needs an LLM when none is configured. A rubric version is the caller's to check."""
    if "judge_model" in candidate:
        if candidate["judge_model"] not in HEURISTIC:
            if not llm_configured():
                raise InvalidInputError("judge_model needs an LLM: set OPENAI_API_KEY or OPENAI_BASE_URL")
            judge_model_check(model=candidate["judge_model"])
    elif "prompt_template" in candidate and not llm_configured():
        raise InvalidInputError("A prompt_template needs an LLM judge: set OPENAI_API_KEY or OPENAI_BASE_URL")


def trial_queue(*, train: list, test: list, candidate: dict, created_by, api_key, **target) -> AlignmentTrial:
    """A pending trial of `candidate` on `target` (project and rubric and rule, or metric and agent)
    with its split, judged by a Celery job once the caller's transaction commits."""
    trial = AlignmentTrial.objects.create(
        **target,
        candidate=candidate,
        train=[item.result for item in train],
        test=[item.result for item in test],
        created_by=created_by,
        api_key=api_key,
    )
    transaction.on_commit(lambda: tasks.run_alignment_trial.delay(trial.pk))
    return trial
