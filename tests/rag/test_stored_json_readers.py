"""A stored RAG evaluation whose JSON holds what orjson refuses (an int past 64 bits, which jsonb
keeps and hands back as an int, or deep nesting) is still read: history, detail, console, admin."""

import json

import pytest

from apps.rag.models import TraceEvaluation
from apps.scores.models import Score
from tests.rag.factories import TraceEvaluationFactory
from tests.stored_json import BIG, nested

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "value", [{"n": BIG, "list": [BIG, -BIG]}, nested(100), nested(300)], ids=["big int", "100 deep", "300 deep"]
)
def test_readers_of_a_stored_rag_evaluation(api, admin_client, value):
    evaluation = TraceEvaluationFactory()
    TraceEvaluation.objects.filter(pk=evaluation.pk).update(payload={**evaluation.payload, "odd": value})
    Score.objects.filter(subject_kind="rag_evaluation", subject_id=evaluation.pk, key="context_recall").update(
        detail=value
    )
    for url in ("/api/v1/trace/history", f"/api/v1/trace/history/{evaluation.pk}"):
        response = api.get(url)
        assert response.status_code == 200, (url, response.content[:300])
        json.loads(response.content)
    for url in (
        "/console/rag/",
        f"/console/rag/{evaluation.pk}/",
        "/admin/rag/traceevaluation/",
        f"/admin/rag/traceevaluation/{evaluation.pk}/change/",
    ):
        assert admin_client.get(url).status_code == 200, url
