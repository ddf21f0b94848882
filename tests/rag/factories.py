"""TRACE evaluations as rows: what POST /trace stores, one row per requested test."""

import factory

from apps.rag.models import TraceEvaluation, TraceEvaluationTest
from tests.rag.helpers import PARIS


class TraceEvaluationFactory(factory.django.DjangoModelFactory):
    """A scored evaluation of the contract's Paris example; `test_rows=[{...}, ...]` overrides the
    per-test rows (TraceEvaluationTestFactory fields), which default to one scored row per test."""

    class Meta:
        model = TraceEvaluation
        skip_postgeneration_save = True

    query = factory.LazyAttribute(lambda o: str(o.payload))
    source = "json"
    payload = factory.LazyFunction(lambda: dict(PARIS))
    tests = factory.LazyAttribute(lambda o: list(o.payload["tests"]))
    missing = factory.LazyAttribute(lambda o: {name: False for name in o.tests})
    scores = factory.LazyAttribute(lambda o: {name: 1.0 for name in o.tests})
    details = factory.LazyFunction(dict)
    outcome = TraceEvaluation.Outcome.SCORED
    judge = "deterministic"
    duration_ms = 3.0

    @factory.post_generation
    def test_rows(self, create, extracted, **kwargs):
        if not create:
            return
        rows = extracted if extracted is not None else [{"name": name, "score": self.scores.get(name)}
                                                        for name in self.tests]
        for row in rows:
            TraceEvaluationTestFactory(evaluation=self, **row)


class TraceEvaluationTestFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TraceEvaluationTest

    evaluation = factory.SubFactory(TraceEvaluationFactory, test_rows=[])
    name = "context_recall"
    status = TraceEvaluationTest.Status.SCORED
    score = 1.0
    method = "deterministic"
    judge = "deterministic"
