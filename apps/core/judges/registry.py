"""Which agentic judge serves a request: the LLM judge when one is configured, else the heuristic."""

from apps.core.errors import InvalidInputError
from apps.core.llm import get_llm_client, llm_configured

from .base import AgenticJudge
from .heuristic import HeuristicAgenticJudge

JUDGE_CHOICES = ("auto", "heuristic", "llm")


class JudgeUnavailable(InvalidInputError):
    pass


def get_agentic_judge(name: str | None = "auto") -> AgenticJudge:
    name = name or "auto"
    if name == "heuristic" or (name == "auto" and not llm_configured()):
        return HeuristicAgenticJudge()
    if name in ("llm", "auto"):
        if not llm_configured():
            raise JudgeUnavailable("the LLM judge was asked for but no LLM is configured "
                                   "(set OPENAI_API_KEY or OPENAI_BASE_URL)")
        from .llm_agentic import LLMAgenticJudge

        return LLMAgenticJudge(get_llm_client())
    raise InvalidInputError(f"unknown judge {name!r}; choose one of {', '.join(JUDGE_CHOICES)}")
