"""The rule judges published from alignment trials, in the admin: listed in the project's rubrics
only, and an editor cannot name a judge model the operator does not allow (every judge call is
billed to the platform's LLM account)."""

import pytest

from apps.core.models import AuditEvent
from apps.rubrics.models import RuleJudge
from tests.core.factories import ProjectFactory
from tests.rubrics.factories import RubricFactory, RubricRuleFactory

pytestmark = pytest.mark.django_db


def _post(client, rubric, model):
    return client.post(
        "/admin/rubrics/rulejudge/add/",
        {"rubric": str(rubric.pk), "rule_id": "BRIEF", "judge_model": model, "instructions": ""},
    )


def test_an_unallowed_model_is_refused_and_an_allowed_one_is_audited(admin_client, settings):
    settings.OPENAI_API_KEY, settings.EVALSITE_JUDGE_MODEL, settings.EVALSITE_JUDGE_MODELS = "k", "mini", ["careful"]
    rubric = RubricFactory(rules=[RubricRuleFactory(id="BRIEF")])
    refused = _post(admin_client, rubric, "gpt-9-expensive")
    assert refused.status_code == 200 and "EVALSITE_JUDGE_MODELS" in refused.content.decode()
    assert not RuleJudge.objects.exists()
    assert _post(admin_client, rubric, "careful").status_code == 302
    assert RuleJudge.objects.get().judge_model == "careful"
    assert AuditEvent.objects.filter(object_type="rule_judge", action="create").count() == 1


def test_another_projects_rule_judges_are_not_listed(admin_client):
    mine = RubricFactory(name="Mine", rules=[RubricRuleFactory(id="BRIEF")])
    theirs = RubricFactory(name="Theirs", bot__project=ProjectFactory(), rules=[RubricRuleFactory(id="BRIEF")])
    RuleJudge.objects.create(rubric=mine, rule_id="BRIEF", judge_model="heuristic")
    RuleJudge.objects.create(rubric=theirs, rule_id="BRIEF", judge_model="heuristic")
    page = admin_client.get("/admin/rubrics/rulejudge/").content.decode()
    assert "Mine" in page and "Theirs" not in page
