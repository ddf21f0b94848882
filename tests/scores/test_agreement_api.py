"""Judge-human agreement everywhere: GET /api/v1/rubrics/{id}/agreement (an entry per rule and
criterion) and GET /api/v1/metrics/agreement (an entry per agentic metric and judge), each with n,
Cohen's kappa and its 95% interval, raw agreement, the confusion matrix and the disagreeing items
linked; and the interval itself on the edge cases (no labels, one class only, all agree)."""

import pytest

from apps.scores.agreement import cohen_kappa, kappa_interval
from apps.scores.services import human_score_record
from apps.scores.vocabulary import ScoreKind, SubjectKind
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import ProjectFactory
from tests.rubrics.factories import RubricFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory, review_create, rule
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db
ENTRY_KEYS = {
    "key",
    "kind",
    "judge",
    "n",
    "kappa",
    "kappa_ci",
    "agreement",
    "confusion",
    "judge_unassessed",
    "disagreements",
}


# --- the interval ------------------------------------------------------------------------------------


def test_no_pairs_has_no_kappa_and_no_interval():
    assert cohen_kappa([], []) is None and kappa_interval([], []) is None


def test_one_class_only_is_undefined_not_perfect():
    """Judge and reviewer passed everything: chance agreement is 1, kappa means nothing."""
    assert cohen_kappa([True] * 5, [True] * 5) is None
    assert kappa_interval([True] * 5, [True] * 5) is None


def test_all_agree_is_kappa_one_with_an_honest_lower_bound():
    judge = [True, False, True]
    low, high = kappa_interval(judge, judge)
    assert cohen_kappa(judge, judge) == 1.0
    assert high == 1.0 and low < 0, "three pairs prove little"
    many = [True, False] * 50
    low_many, _ = kappa_interval(many, many)
    assert 0.9 < low_many < 1, "a hundred pairs prove more"


def test_the_interval_holds_kappa_and_narrows_with_n():
    judge = [True] * 40 + [False] * 40
    human = [True] * 35 + [False] * 5 + [False] * 35 + [True] * 5
    kappa = cohen_kappa(judge, human)
    low, high = kappa_interval(judge, human)
    assert low < kappa < high
    low4, high4 = kappa_interval(judge * 4, human * 4)
    assert high4 - low4 < high - low


# --- GET /rubrics/{id}/agreement --------------------------------------------------------------------


@pytest.fixture
def rubric():
    return RubricFactory()


def _results(rubric, verdicts):
    """One result per (judge's passed) of rule R1 in a run of `rubric`."""
    run = EvaluationRunFactory(rubric_id=rubric.pk, project=rubric.project)
    return [EvaluationResultFactory(run=run, rubric_scores=[rule("R1", passed)]) for passed in verdicts]


def test_rubric_agreement_per_rule_with_confusion_and_linked_disagreements(api, rubric):
    results = _results(rubric, [True, True, False, False, True])
    for result, human in zip(results, [True, False, False, True, True], strict=True):
        review_create(result=result, kind=ScoreKind.RULE, key="R1", passed=human)
    response = api.get(f"/api/v1/rubrics/{rubric.pk}/agreement")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["reviews"] == 5 and body["criteria"] == []
    (entry,) = body["rules"]
    assert set(entry) == ENTRY_KEYS
    assert (entry["key"], entry["kind"], entry["n"]) == ("R1", "rule", 5)
    assert entry["confusion"] == {
        "judge_pass": {"human_pass": 2, "human_fail": 1},
        "judge_fail": {"human_pass": 1, "human_fail": 1},
    }
    assert entry["agreement"] == 0.6
    assert entry["kappa"] == cohen_kappa([True, True, False, False, True], [True, False, False, True, True])
    low, high = entry["kappa_ci"]
    assert low <= entry["kappa"] <= high
    linked = {d["id"] for d in entry["disagreements"]}
    assert linked == {str(results[1].result_id), str(results[3].result_id)}
    assert all(d["url"] == f"/console/results/{d['id']}/" for d in entry["disagreements"])


def test_a_rubric_nobody_reviewed_has_no_entries(api, rubric):
    _results(rubric, [True, False])
    body = api.get(f"/api/v1/rubrics/{rubric.pk}/agreement").json()
    assert body == {
        "rubric_id": str(rubric.pk),
        "reviews": 0,
        "rules": [],
        "criteria": [],
        # Two different test cases: no pair of verdicts on the same one, so no flip rate.
        "flip_rates": [{"key": "R1", "flip_rate": None, "pairs": 0}],
    }


def test_another_projects_rubric_is_404(api):
    theirs = RubricFactory(bot__project=ProjectFactory())
    assert api.get(f"/api/v1/rubrics/{theirs.pk}/agreement").status_code == 404


# --- GET /metrics/agreement ---------------------------------------------------------------------------


def _reviewed(agent, judge, judge_value, human_value):
    evaluation = AgentEvaluationFactory(
        trace=AgentTraceFactory(agent_name=agent), judge=judge, task_adherence=judge_value
    )
    human_score_record(
        subject_kind=SubjectKind.AGENTIC_EVALUATION,
        subject_id=evaluation.pk,
        kind=ScoreKind.METRIC,
        key="task_adherence",
        value=human_value,
    )
    return evaluation


def test_metric_agreement_per_metric_and_judge(api):
    _reviewed("Orchestrator", "heuristic:v1", 0.9, 0.8)
    wrong = _reviewed("Orchestrator", "heuristic:v1", 0.9, 0.2)
    _reviewed("Orchestrator", "heuristic:v1", 0.3, 0.1)
    _reviewed("Billing", "llm:gpt-4o-mini", 0.2, 0.1)
    body = api.get("/api/v1/metrics/agreement").json()
    entries = {(e["key"], e["judge"]): e for e in body["metrics"]}
    assert set(entries) == {("task_adherence", "heuristic:v1"), ("task_adherence", "llm:gpt-4o-mini")}
    heuristic = entries[("task_adherence", "heuristic:v1")]
    assert heuristic["n"] == 3 and heuristic["agreement"] == round(2 / 3, 4)
    assert heuristic["confusion"]["judge_pass"] == {"human_pass": 1, "human_fail": 1}
    assert heuristic["disagreements"] == [
        {"id": str(wrong.pk), "session_id": wrong.session_id, "url": f"/console/traces/{wrong.session_id}/"}
    ]
    # One judge that only ever failed, against a reviewer who only ever failed: undefined, not 1.
    llm = entries[("task_adherence", "llm:gpt-4o-mini")]
    assert (llm["n"], llm["kappa"], llm["kappa_ci"], llm["agreement"]) == (1, None, None, 1.0)
    only_billing = api.get("/api/v1/metrics/agreement", {"agent_name": "Billing"}).json()
    assert [(e["key"], e["judge"]) for e in only_billing["metrics"]] == [("task_adherence", "llm:gpt-4o-mini")]


def test_no_reviews_no_entries_and_another_project_is_not_counted(api):
    other = ProjectFactory()
    evaluation = AgentEvaluationFactory(trace=AgentTraceFactory(project=other), project=other)
    human_score_record(
        subject_kind=SubjectKind.AGENTIC_EVALUATION,
        subject_id=evaluation.pk,
        kind=ScoreKind.METRIC,
        key="task_adherence",
        value=0.1,
    )
    assert api.get("/api/v1/metrics/agreement").json() == {"reviews": 0, "metrics": []}


# --- the console pages --------------------------------------------------------------------------------


def test_the_rubric_page_shows_the_interval_and_links_the_disagreements(admin_client, rubric):
    results = _results(rubric, [True, False, True])
    for result, human in zip(results, [True, False, False], strict=True):
        review_create(result=result, kind=ScoreKind.RULE, key="R1", passed=human)
    page = admin_client.get(f"/console/rubrics/{rubric.pk}/").content.decode()
    low, high = kappa_interval([True, False, True], [True, False, False])
    assert f"[{low:.2f}, {high:.2f}]" in page
    assert f'href="/console/results/{results[2].result_id}/"' in page
    assert f'href="/console/results/{results[0].result_id}/"' not in page


def test_the_agent_page_lists_each_metric_and_judge_of_the_chosen_agent(admin_client):
    wrong = _reviewed("Orchestrator", "heuristic:v1", 0.9, 0.2)
    _reviewed("Orchestrator", "heuristic:v1", 0.2, 0.1)
    _reviewed("Billing", "llm:gpt-4o-mini", 0.2, 0.9)
    page = admin_client.get("/console/agents/agreement/", {"agent": "Orchestrator"}).content.decode()
    assert 'id="metric-agreement"' in page and "heuristic:v1" in page and "llm:gpt-4o-mini" not in page
    assert f'href="/console/traces/{wrong.session_id}/"' in page
    every = admin_client.get("/console/agents/agreement/").content.decode()
    assert "heuristic:v1" in every and "llm:gpt-4o-mini" in every
    # An agent name that is not one of the project's shows every agent, not an error.
    assert admin_client.get("/console/agents/agreement/", {"agent": "<script>"}).status_code == 200


def test_the_agent_page_without_reviews_says_how_to_start(admin_client):
    AgentEvaluationFactory()
    page = admin_client.get("/console/agents/agreement/").content.decode()
    assert 'id="no-agreement"' in page
