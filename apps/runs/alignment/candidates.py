"""What a candidate judge needs before a trial of it is started, for a rule's and a metric's alike."""

from apps.core.errors import InvalidInputError
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import judge_model_check

from ..judging.types import JUDGE_HEURISTIC

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
