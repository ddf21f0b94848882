"""TRACE evaluations as rows: what POST /trace stores, one Score row per requested test."""

import factory

from apps.rag.models import TraceEvaluation
from apps.rag.payload import UNSUPPORTED
from apps.rag.scoring import TestStatus, metric_scores
from apps.scores.services import scores_store
from tests.rag.helpers import PARIS


def metric_rows(evaluation: TraceEvaluation, tests: list[dict]):
    """Stores one evaluation's metric Score rows through the service's own mapping. Each test is
    {name, score=1.0, status="scored", method="deterministic", judge="deterministic", missing=[...],
    details={...}} (details: the metric's evidence, replacing the default one)."""
    missing, scores, details = {}, {}, {}
    for test in tests:
        name, status = test["name"], test.get("status", TestStatus.SCORED)
        if status == TestStatus.UNSUPPORTED:
            missing[name] = [UNSUPPORTED]
        elif status == TestStatus.MISSING:
            missing[name] = test.get("missing") or ["question"]
        else:
            missing[name] = False
            if status != TestStatus.NOT_RUN:
                scores[name] = test.get("score", 1.0)
                details[name] = test.get("details") or {
                    "method": test.get("method", "deterministic"),
                    "status": status,
                    "judge": test.get("judge", "deterministic"),
                }
    rows = metric_scores(missing=missing, scores=scores, details=details)
    for row in rows:
        row.subject_id = evaluation.pk
    return scores_store(rows=rows)


class TraceEvaluationFactory(factory.django.DjangoModelFactory):
    """A scored evaluation of the contract's Paris example; `test_rows=[{...}, ...]` overrides the
    per-test Score rows (see metric_rows), which default to one scored row (1.0) per test."""

    class Meta:
        model = TraceEvaluation
        skip_postgeneration_save = True

    query = factory.LazyAttribute(lambda o: str(o.payload))
    source = "json"
    payload = factory.LazyFunction(lambda: dict(PARIS))
    tests = factory.LazyAttribute(lambda o: list(o.payload["tests"]))
    missing = factory.LazyAttribute(lambda o: {name: False for name in o.tests})
    outcome = TraceEvaluation.Outcome.SCORED
    judge = "deterministic"
    duration_ms = 3.0

    @factory.post_generation
    def test_rows(self, create, extracted, **kwargs):
        if not create:
            return
        metric_rows(self, extracted if extracted is not None else [{"name": name} for name in self.tests])
