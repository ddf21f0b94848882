"""Agentic evaluations as rows, with the running totals (/summary's rollup) rebuilt after each so
the figures read back the same as after the evaluation service."""

import hashlib

import factory

from apps.agentic.models import AgentEvaluation, EvaluationRule
from apps.agentic.rules.services import enabled_rules
from apps.agentic.services import evaluation_rollup_rebuild, score_source
from apps.scores.models import Score
from apps.scores.services import scores_store
from apps.scores.vocabulary import ScoreKind, SubjectKind
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
    """The heuristic judge's verdict on a completed trace: three scores (status ok, stored as Score
    rows as the service stores them), their weighted overall and its rating band. A test sets a
    metric with task_adherence=..., task_adherence_status=..., task_adherence_reasoning=..."""

    class Meta:
        model = AgentEvaluation
        skip_postgeneration_save = True

    task_adherence = 0.9
    task_adherence_reasoning = "The answer does what was asked."
    task_adherence_status = "ok"
    tool_call_accuracy = 1.0
    tool_call_accuracy_reasoning = "The right tool, with the right arguments."
    tool_call_accuracy_status = "ok"
    intent_resolution = 0.8
    intent_resolution_reasoning = "The intent was recognised."
    intent_resolution_status = "ok"

    trace = factory.SubFactory(AgentTraceFactory)
    session_id = factory.LazyAttribute(lambda o: o.trace.session_id if o.trace else "manual-session")
    source = factory.LazyAttribute(lambda o: AgentEvaluation.Source.TRACE if o.trace else AgentEvaluation.Source.MANUAL)
    agent_name = factory.LazyAttribute(lambda o: o.trace.agent_name if o.trace else "manual")
    operation = factory.LazyAttribute(lambda o: o.trace.operation if o.trace else None)
    has_error = factory.LazyAttribute(lambda o: "error" in [getattr(o, f"{name}_status") for name in WEIGHTS])
    overall_score = factory.LazyAttribute(_overall)
    rating = factory.LazyAttribute(lambda o: _rating(o.overall_score))
    judge = "heuristic:v1"
    fingerprint = factory.Sequence(lambda n: hashlib.sha256(str(n).encode()).hexdigest())

    @classmethod
    def _metric_rows(cls, kwargs: dict) -> dict[str, Score]:
        """Pops the nine metric declarations: they are Score rows, not fields of the model."""
        judge = kwargs.get("judge", "heuristic:v1")
        return {
            name: Score(
                subject_kind=SubjectKind.AGENTIC_EVALUATION,
                kind=ScoreKind.METRIC,
                key=name,
                position=i,
                source=score_source(judge),
                judge=judge,
                value=kwargs.pop(name),
                reasoning=kwargs.pop(f"{name}_reasoning"),
                status=kwargs.pop(f"{name}_status"),
            )
            for i, name in enumerate(WEIGHTS)
        }

    @classmethod
    def _build(cls, model_class, *args, **kwargs):
        metrics = cls._metric_rows(kwargs)
        evaluation = super()._build(model_class, *args, **kwargs)
        evaluation.metrics = metrics
        return evaluation

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        metrics = cls._metric_rows(kwargs)
        evaluation = super()._create(model_class, *args, **kwargs)
        for score in metrics.values():
            score.subject_id = evaluation.pk
        scores_store(rows=metrics.values())
        evaluation.metrics = metrics
        return evaluation

    @factory.post_generation
    def rollup(self, create, extracted, **kwargs):
        # The service adds each evaluation to the running totals in its own transaction; a row
        # written here bypassed it, so the totals are recomputed from the rows.
        if create:
            evaluation_rollup_rebuild()


def evaluations_bulk_create(evaluations: list[AgentEvaluation]) -> list[AgentEvaluation]:
    """Stores evaluations built with AgentEvaluationFactory.build (metrics set) in a few INSERTs:
    for tests that need thousands. The running totals are rebuilt by the caller."""
    AgentEvaluation.objects.bulk_create(evaluations, batch_size=1_000)
    for evaluation in evaluations:
        for score in evaluation.metrics.values():
            score.subject_id = evaluation.pk
    scores_store(rows=[score for evaluation in evaluations for score in evaluation.metrics.values()])
    return evaluations


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
