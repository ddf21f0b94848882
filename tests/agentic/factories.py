"""Agentic evaluations as rows, with the running totals (/summary's rollup) rebuilt after each so
the figures read back the same as after the evaluation service."""

import hashlib

import factory

from apps.agentic.models import AgentEvaluation, EvaluationRule
from apps.agentic.rule_services import enabled_rules
from apps.agentic.services import evaluation_rollup_rebuild
from tests.traces.factories import AgentTraceFactory

# The seed's weights and rating bands, written out here rather than imported, so a factory-made
# evaluation does not change along with the code it is used to test.
WEIGHTS = {"task_adherence": 0.4, "tool_call_accuracy": 0.3, "intent_resolution": 0.3}
BANDS = (("excellent", 0.90), ("good", 0.75), ("acceptable", 0.60), ("poor", 0.40), ("failed", 0.0))


def _overall(o) -> float | None:
    # A metric the judge could not score is left out and the others' weights spread over it.
    scored = {name: getattr(o, name) for name in WEIGHTS if getattr(o, name) is not None}
    if not scored:
        return None
    return round(sum(WEIGHTS[name] * score for name, score in scored.items()) / sum(WEIGHTS[n] for n in scored), 4)


def _rating(score: float | None) -> str | None:
    if score is None:
        return None
    return next(name for name, lower in BANDS if score >= lower)


class AgentEvaluationFactory(factory.django.DjangoModelFactory):
    """The heuristic judge's verdict on a completed trace: three scores (status ok), their weighted
    overall and its rating band."""

    class Meta:
        model = AgentEvaluation
        skip_postgeneration_save = True

    trace = factory.SubFactory(AgentTraceFactory)
    session_id = factory.LazyAttribute(lambda o: o.trace.session_id if o.trace else "manual-session")
    source = factory.LazyAttribute(lambda o: AgentEvaluation.Source.TRACE if o.trace else AgentEvaluation.Source.MANUAL)
    agent_name = factory.LazyAttribute(lambda o: o.trace.agent_name if o.trace else "manual")
    operation = factory.LazyAttribute(lambda o: o.trace.operation if o.trace else None)
    task_adherence = 0.9
    task_adherence_reasoning = "The answer does what was asked."
    task_adherence_status = "ok"
    tool_call_accuracy = 1.0
    tool_call_accuracy_reasoning = "The right tool, with the right arguments."
    tool_call_accuracy_status = "ok"
    intent_resolution = 0.8
    intent_resolution_reasoning = "The intent was recognised."
    intent_resolution_status = "ok"
    overall_score = factory.LazyAttribute(_overall)
    rating = factory.LazyAttribute(lambda o: _rating(o.overall_score))
    judge = "heuristic:v1"
    fingerprint = factory.Sequence(lambda n: hashlib.sha256(str(n).encode()).hexdigest())

    @factory.post_generation
    def rollup(self, create, extracted, **kwargs):
        # The service adds each evaluation to the running totals in its own transaction; a row
        # written here bypassed it, so the totals are recomputed from the rows.
        if create:
            evaluation_rollup_rebuild()


class EvaluationRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = EvaluationRule

    name = factory.Sequence(lambda n: f"rule-{n}")
    judge = "heuristic"

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        rule = super()._create(model_class, *args, **kwargs)
        enabled_rules.clear()  # as the services do, so a trace completed next sees the rule
        return rule
