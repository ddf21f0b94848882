"""A judge with some of its metrics graded another way: what a published metric judge
(models.MetricJudge, from an alignment trial) makes of the judge an evaluation asked for.

Its label and fingerprint name every override, so an evaluation it stores is never mistaken for one
of the plain judge (services._reusable keys reuse on both), and each metric's Score row names the
judge that graded it."""

from dataclasses import dataclass

from django.conf import settings

from apps.core.llm.client import LLMClient, LLMNotConfigured, get_llm_client
from apps.core.llm.fingerprint import template_hash

from .base import AGENTIC_METRICS, AgenticJudge, AgenticVerdict, JudgeInput, MetricResult, TokenUsage
from .heuristic import LABEL as HEURISTIC_LABEL
from .heuristic import HeuristicAgenticJudge
from .llm_agentic import LLMAgenticJudge, grade_metric

HEURISTIC_MODELS = ("heuristic", HEURISTIC_LABEL)


@dataclass(frozen=True)
class MetricOverride:
    """How one metric is graded instead: `judge_model` "" keeps the judge's own model ("heuristic"
    or an LLM model replaces it); `instructions` "" keeps the metric's standard prompt (an LLM
    reads them in place of its rubric; the heuristic judge reads no prompt)."""

    judge_model: str = ""
    instructions: str = ""

    def model_under(self, base: AgenticJudge) -> str:
        """The model that grades the metric when `base` is the judge asked for ("heuristic" for the
        heuristic judge), known before judging, as metric_client will choose it."""
        if self.judge_model in HEURISTIC_MODELS:
            return "heuristic"
        if self.judge_model:
            return self.judge_model
        if isinstance(base, LLMAgenticJudge):
            return base.client.model
        return settings.EVALSITE_JUDGE_MODEL if self.instructions else "heuristic"

    def identity(self, base: AgenticJudge) -> dict:
        return {
            "judge_model": self.model_under(base),
            "prompt_template": template_hash(self.instructions) if self.instructions else None,
        }


def metric_client(override: MetricOverride, base_client: LLMClient | None) -> LLMClient | None:
    """The LLM that grades a metric under `override`, None for the heuristic judge: its model; else
    the judge's own LLM; else, for instructions on a heuristic judge, the configured one (raises
    LLMNotConfigured when there is none)."""
    if override.judge_model in HEURISTIC_MODELS:
        return None
    if override.judge_model:
        if base_client is not None and base_client.model == override.judge_model:
            return base_client
        return get_llm_client(model=override.judge_model)
    if base_client is not None:
        return base_client
    return get_llm_client() if override.instructions else None


def grade_with(metric: str, data: JudgeInput, override: MetricOverride, base: AgenticJudge) -> tuple[str, MetricResult]:
    """(the label of what graded it, the result) of one metric under `override`. A judge that cannot
    be had (no LLM configured) is that metric's error, never a score from another judge."""
    base_client = base.client if isinstance(base, LLMAgenticJudge) else None
    try:
        client = metric_client(override, base_client)
    except LLMNotConfigured as exc:
        label = f"openai:{override.judge_model}" if override.judge_model else "llm"
        return label, MetricResult.error(f"{label} could not score {metric}: {exc.reason}")
    if client is None:
        return HEURISTIC_LABEL, HeuristicAgenticJudge().evaluate(data).metric(metric)
    return client.judge_label, grade_metric(client, metric, data, instructions=override.instructions or None)


class ComposedAgenticJudge:
    """`base` with the metrics of `overrides` graded by grade_with. An LLM base grades its other
    metrics one request each, as it would have; a heuristic base judges whole (it costs nothing)."""

    def __init__(self, base: AgenticJudge, overrides: dict[str, MetricOverride]):
        self.base = base
        self.overrides = {name: overrides[name] for name in AGENTIC_METRICS if name in overrides}
        self.parallel = base.parallel or any(o.judge_model not in HEURISTIC_MODELS for o in self.overrides.values())
        # Known once, before judging: reuse looks stored evaluations up by both, and every verdict of
        # this judge must carry the same ones (the settings a model is read from may change meanwhile).
        identities = {name: o.identity(base) for name, o in self.overrides.items()}
        self.label = f"{base.label}+" + ",".join(
            f"{name}={identity['judge_model']}"
            + (f"/prompt:{identity['prompt_template']}" if identity["prompt_template"] else "")
            for name, identity in identities.items()
        )
        self.fingerprint = {**base.fingerprint, "overrides": identities}

    def evaluate(self, data: JudgeInput) -> AgenticVerdict:
        base_client = self.base.client if isinstance(self.base, LLMAgenticJudge) else None
        whole = None if base_client is not None else self.base.evaluate(data)
        results: dict[str, MetricResult] = {}
        judges: dict[str, str] = {}
        for name in AGENTIC_METRICS:
            if name in self.overrides:
                judges[name], results[name] = grade_with(name, data, self.overrides[name], self.base)
                continue
            # Each metric's Score names the judge that graded it: here the judge asked for.
            judges[name] = self.base.label
            results[name] = whole.metric(name) if whole is not None else grade_metric(base_client, name, data)
        spent = [r.usage for r in results.values() if r.usage is not None]
        return AgenticVerdict(
            judge=self.label,
            usage=TokenUsage(
                sum(u.prompt_tokens for u in spent),
                sum(u.completion_tokens for u in spent),
                sum(u.total_tokens for u in spent),
            ),
            fingerprint=self.fingerprint,
            metric_judges=judges,
            **results,
        )
