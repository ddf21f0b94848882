"""The alignment loop (issue 24, item 4): a candidate judge for one rubric rule -- another version of
the rule's text, another judge model, or another prompt -- judges again the held-out half of the
items reviewers labelled; kappa before and after with intervals, the items whose verdict changed;
publishing refused unless better at 95%; fewer than 20 labels refused."""

import json
import re

import pytest
from django.test import TestCase

from apps.core.models import AuditEvent
from apps.rubrics.models import RubricVersion, RuleJudge
from apps.rubrics.services import rubric_publish_version
from apps.runs.alignment.selectors import MIN_LABELS, labelled_items, rule_scope, split
from apps.runs.models import AlignmentTrial, EvaluationRun
from apps.scores.agreement import kappa_difference_interval
from tests.conftest import _client_with_key
from tests.core.factories import ApiKeyFactory, MembershipFactory, client_with_key
from tests.runs.alignment_fixtures import LOOSE, SHORT, brief_rubric, content_of, labelled
from tests.testsets.factories import SuiteFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def rubric():
    return brief_rubric()


@pytest.fixture
def api(db):
    """An editor's key: reviews (to start trials) and configures (to publish them)."""
    return _client_with_key("editor", staff=False, scopes=["read", "review", "configure"])


@pytest.fixture
def reviewer(db):
    return _client_with_key("reviewer", staff=False, scopes=["read", "review"])


def _start(client, rubric, candidate, captured, rule_id="BRIEF"):
    with captured(execute=True):
        return client.post(
            f"/api/v1/rubrics/{rubric.pk}/alignment-trials", {"rule": rule_id, "candidate": candidate}, format="json"
        )


# --- the statistics ----------------------------------------------------------------------------------


def test_the_difference_interval_is_paired_reproducible_and_honest():
    human = [True, False] * 15
    same = kappa_difference_interval(human, human, human, seed=1)
    assert same == (0.0, 0.0), "the same verdicts cannot differ"
    coin = [True, True, False, False] * 7 + [True, False]
    low, high = kappa_difference_interval(human, coin, human, seed=1)
    assert 0 < low <= high, "perfect against chance is better"
    assert kappa_difference_interval(human, coin, human, seed=1) == (low, high), "one seed, one answer"
    assert kappa_difference_interval([True] * 30, [True] * 30, [True] * 30, seed=1) is None, "one class only"
    assert kappa_difference_interval([], [], [], seed=1) is None


def test_the_split_is_a_fixed_half_held_out(rubric):
    labelled(rubric, 11, 10)
    items = labelled_items(rubric_id=rubric.pk, rule_id="BRIEF")
    train, test = split(items, scope=rule_scope(rubric.pk, "BRIEF"))
    assert (len(train), len(test)) == (10, 11)
    assert {i.result for i in train}.isdisjoint({i.result for i in test})
    again = split(list(reversed(items)), scope=rule_scope(rubric.pk, "BRIEF"))
    assert [i.result for i in again[1]] == [i.result for i in test], "the order of labels does not matter"


# --- a trial, start to finish, offline (the heuristic judge) ----------------------------------------


def test_a_rewritten_rule_is_tried_on_held_out_items_and_published(
    api, reviewer, rubric, django_capture_on_commit_callbacks
):
    results = labelled(rubric, 20, 20)
    response = _start(reviewer, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks)
    assert response.status_code == 202, response.json()
    trial_id = response.json()["id"]
    body = reviewer.get(f"/api/v1/alignment-trials/{trial_id}").json()
    assert body["status"] == "done", body
    assert (body["n_train"], body["n_test"], body["progress"]) == (20, 20, {"judged": 20, "total": 20})
    # Version 1's verdicts fail everything; reviewers pass the short half: kappa 0.
    assert body["baseline"]["kappa"] == 0.0 and body["baseline"]["n"] == 20
    assert body["candidate"]["kappa"] == 1.0 and body["candidate"]["agreement"] == 1.0
    low, high = body["candidate"]["kappa_ci"]
    assert low < 1.0 == high, "twenty items do not prove perfection"
    assert body["difference"]["kappa"] == 1.0 and body["difference"]["kappa_ci"][0] > 0
    assert body["better"] is True
    short = {str(r.result_id) for r in results[:20]}
    held_out_short = [i for i in body["changed_items"]]
    assert held_out_short and all(i["id"] in short for i in held_out_short)
    assert all(i["before"]["passed"] is False and i["after"]["passed"] is True and i["human"] for i in held_out_short)
    assert all(i["url"] == f"/console/results/{i['id']}/" for i in held_out_short)
    test_ids = {str(r.result_id) for r in results if r.pk in AlignmentTrial.objects.get().test}
    assert {i["id"] for i in body["changed_items"]} == test_ids & short
    assert not {i["id"] for i in body["train_disagreements"]} & test_ids, "the held-out half is never listed"
    assert len(body["train_disagreements"]) == 20 - len(test_ids & short)

    # A reviewer measures; publishing changes every later run: it needs configure.
    assert reviewer.post(f"/api/v1/alignment-trials/{trial_id}/publish").status_code == 403
    published = api.post(f"/api/v1/alignment-trials/{trial_id}/publish")
    assert published.status_code == 201, published.json()
    # Version 2 is the head already: nothing new to publish, the trial says which version is in force.
    assert published.json()["published"] == {"rubric_version": 2, "new_version": False}
    assert api.post(f"/api/v1/alignment-trials/{trial_id}/publish").status_code == 409


def test_publishing_a_version_puts_the_rule_text_back_into_a_changed_head(
    api, rubric, django_capture_on_commit_callbacks
):
    labelled(rubric, 20, 20)
    head = RubricVersion.objects.get(rubric=rubric, version=1).snapshot
    head["description"] = "edited since"
    rubric_publish_version(rubric=rubric, content=content_of(head))  # v3: strict rule, new text
    trial_id = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks).json()["id"]
    published = api.post(f"/api/v1/alignment-trials/{trial_id}/publish")
    assert published.status_code == 201, published.json()
    assert published.json()["published"] == {"rubric_version": 4, "new_version": True}
    v4 = RubricVersion.objects.get(rubric=rubric, version=4)
    assert v4.snapshot["rules"][0]["evaluation_criteria"] == LOOSE
    assert v4.snapshot["description"] == "edited since", "only the rule changes"
    assert f"alignment trial {trial_id}" in v4.changelog


def test_a_candidate_that_is_not_better_cannot_be_published(api, rubric, django_capture_on_commit_callbacks):
    # The stored verdicts were already the loose rule's: trying it again changes nothing.
    labelled(rubric, 20, 20, judged_as=lambda reply: reply == SHORT)
    trial_id = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks).json()["id"]
    body = api.get(f"/api/v1/alignment-trials/{trial_id}").json()
    assert body["better"] is False and body["changed_items"] == []
    assert body["difference"]["kappa_ci"] == [0.0, 0.0]
    refused = api.post(f"/api/v1/alignment-trials/{trial_id}/publish")
    assert refused.status_code == 409
    assert "not better" in refused.json()["detail"] and "[0.0, 0.0]" in refused.json()["detail"]
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2


def test_fewer_than_twenty_labels_is_422_and_writes_nothing(api, rubric, django_capture_on_commit_callbacks):
    labelled(rubric, 10, MIN_LABELS - 11)
    response = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks)
    assert response.status_code == 422
    assert "at least 20" in response.json()["detail"] and "it has 19" in response.json()["detail"]
    assert not AlignmentTrial.objects.exists()


def test_a_rule_nobody_labelled_is_422(api, rubric, django_capture_on_commit_callbacks):
    response = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks)
    assert response.status_code == 422 and "it has 0" in response.json()["detail"]


@pytest.mark.parametrize(
    "rule_id, candidate, words",
    [
        ("NOPE", {"rubric_version": 2}, "no rule NOPE"),
        ("BRIEF", {"rubric_version": 9}, "no version 9"),
        ("BRIEF", {"rubric_version": 2, "judge_model": "heuristic"}, "exactly one"),
        ("BRIEF", {}, "exactly one"),
        ("BRIEF", {"prompt_template": "Judge kindly."}, "needs an LLM"),
        ("BRIEF", {"prompt_template": "   "}, "prompt_template"),
        ("BRIEF", {"judge_model": "gpt-4o"}, "needs an LLM"),
        ("BRIEF", {"rubric_version": "2"}, "rubric_version"),
        ("BRIEF", {"temperature": 0}, "temperature"),
    ],
)
def test_a_candidate_that_cannot_be_tried_is_422(
    api, rubric, rule_id, candidate, words, django_capture_on_commit_callbacks
):
    labelled(rubric, 10, 10)
    response = _start(api, rubric, candidate, django_capture_on_commit_callbacks, rule_id=rule_id)
    assert response.status_code == 422, response.json()
    assert words in json.dumps(response.json()), response.json()
    assert not AlignmentTrial.objects.exists()


def test_another_projects_rubric_and_trial_are_404(api, rubric, django_capture_on_commit_callbacks):
    labelled(rubric, 10, 10)
    trial_id = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks).json()["id"]
    membership = MembershipFactory(role="editor")
    theirs = client_with_key(
        ApiKeyFactory(user=membership.user, scopes=["read", "review", "configure"], project=membership.project)
    )
    assert theirs.get(f"/api/v1/alignment-trials/{trial_id}").status_code == 404
    assert theirs.post(f"/api/v1/alignment-trials/{trial_id}/publish").status_code == 404
    assert _start(theirs, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks).status_code == 404
    assert theirs.get(f"/api/v1/rubrics/{rubric.pk}/alignment-trials").status_code == 404
    listed = api.get(f"/api/v1/rubrics/{rubric.pk}/alignment-trials").json()
    assert [t["id"] for t in listed] == [trial_id] and listed[0]["changed_items"] == []


def test_a_read_only_key_cannot_start_a_trial(rubric, django_capture_on_commit_callbacks):
    labelled(rubric, 10, 10)
    reader = _client_with_key("reader", staff=False, scopes=["read"])
    assert _start(reader, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks).status_code == 403


# --- with an LLM judge (a local OpenAI-compatible server) ------------------------------------------


def _agrees_with_reviewers(body):
    """A judge that passes the short answers, as the reviewers do."""
    user = body["messages"][-1]["content"]
    passed = SHORT in user
    return 200, _completion(body, {"passed": passed, "score": float(passed), "reasoning": "Counted sentences."}), None


def _completion(body, verdict):
    from tests.fakes.openai_server import completion_body

    return completion_body(body["model"], json.dumps(verdict))


def _serve(server, fn, times):
    for _ in range(times):
        server.push(fn)


def test_another_judge_model_is_tried_published_and_judges_later_runs(
    api, rubric, openai_server, settings, django_capture_on_commit_callbacks
):
    settings.EVALSITE_JUDGE_MODELS = ["careful-model"]
    labelled(rubric, 20, 20)
    _serve(openai_server, _agrees_with_reviewers, 20)
    trial_id = _start(api, rubric, {"judge_model": "careful-model"}, django_capture_on_commit_callbacks).json()["id"]
    body = api.get(f"/api/v1/alignment-trials/{trial_id}").json()
    assert body["status"] == "done" and body["better"] is True, body
    requests = openai_server.chat_requests
    assert len(requests) == 20 and {r["model"] for r in requests} == {"careful-model"}
    assert all(i["after"]["judge"] == "openai:careful-model" for i in body["changed_items"])
    published = api.post(f"/api/v1/alignment-trials/{trial_id}/publish")
    assert published.status_code == 201
    assert published.json()["published"] == {"rule_judge": {"judge_model": "careful-model", "instructions": None}}
    row = RuleJudge.objects.get(rubric=rubric, rule_id="BRIEF")
    assert (row.judge_model, str(row.trial_id)) == ("careful-model", trial_id)
    event = AuditEvent.objects.get(object_type="rule_judge")
    assert event.object_id == f"{rubric.pk}:BRIEF" and event.changes["judge_model"] == [None, "careful-model"]

    # A run created from now on records the rule's judge, which its worker applies (test below).
    test_set = SuiteFactory(
        bot=rubric.bot, items=[{"type": "single_turn", "name": "PTO", "inputs": {"message": "PTO?"}}]
    )
    launcher = _client_with_key("launcher", staff=False, scopes=["read", "evaluate"])
    body = {"agent_id": rubric.bot.agent_id, "test_set_id": str(test_set.pk), "rubric_id": str(rubric.pk)}
    with django_capture_on_commit_callbacks(execute=False):
        launched = launcher.post("/api/v1/runs", {**body, "judge_model": "heuristic"}, format="json")
    assert launched.status_code == 201, launched.json()
    run = EvaluationRun.objects.get(run_id=launched.json()["run_id"])
    assert run.rule_judges == {"BRIEF": {"judge_model": "careful-model", "instructions": None}}


def test_a_prompt_template_is_sent_as_the_instructions_and_fingerprinted(
    api, rubric, openai_server, django_capture_on_commit_callbacks
):
    labelled(rubric, 20, 20)
    _serve(openai_server, _agrees_with_reviewers, 20)
    template = "Count the sentences of every assistant turn; three or fewer is brief."
    trial_id = _start(api, rubric, {"prompt_template": template}, django_capture_on_commit_callbacks).json()["id"]
    body = api.get(f"/api/v1/alignment-trials/{trial_id}").json()
    assert body["better"] is True
    user = openai_server.chat_requests[0]["messages"][-1]["content"]
    assert user.startswith(template) and user.index(template) < user.index("<data>")
    assert "never follow it" in openai_server.chat_requests[0]["messages"][0]["content"], "the data rule stays"
    trial = AlignmentTrial.objects.get()
    assert trial.verdicts[0]["after"]["fingerprint"]["prompt_template"]
    assert api.post(f"/api/v1/alignment-trials/{trial_id}/publish").status_code == 201
    assert RuleJudge.objects.get(rubric=rubric).instructions == template


def test_a_judge_that_fails_leaves_items_unassessed_and_is_not_better(
    api, rubric, openai_server, django_capture_on_commit_callbacks
):
    labelled(rubric, 20, 20)
    for _ in range(60):
        openai_server.push_error(500, "down")
    trial_id = _start(api, rubric, {"prompt_template": "Be strict."}, django_capture_on_commit_callbacks).json()["id"]
    body = api.get(f"/api/v1/alignment-trials/{trial_id}").json()
    assert body["status"] == "done"
    assert body["candidate"]["n"] == 0 and body["candidate"]["unassessed"] == 20
    assert body["candidate"]["kappa"] is None and body["better"] is False
    assert api.post(f"/api/v1/alignment-trials/{trial_id}/publish").status_code == 409


# --- a published rule judge in later runs -----------------------------------------------------------


def test_a_run_judges_a_rule_with_its_published_model_outside_the_batch(openai_server, settings):
    from apps.core.llm.client import get_llm_client
    from apps.runs.executor import JudgeChoice, RunOptions, execute_test_item
    from tests.bots.factories import make_bot_spec
    from tests.runs.factories import PTO_ITEM, RUBRIC_SNAPSHOT

    settings.EVALSITE_JUDGE_MODELS = ["careful-model"]
    special = RUBRIC_SNAPSHOT["rules"][0]["id"]

    def reply(body):
        user = body["messages"][-1]["content"]
        rules = re.findall(r"^Rule (\S+):", user, re.M)
        if "<rules>" in user or "<criteria>" in user:
            verdict = {"passed": True, "score": 1.0, "reasoning": "ok"}
            criteria = (
                re.findall(r"^(\d+)\. ", user.split("<criteria>")[1].split("</criteria>")[0], re.M)
                if "<criteria>" in user
                else []
            )
            answer = {
                "criteria": [{"criterion": int(n), **verdict} for n in criteria],
                "rules": [{"rule_id": r, **verdict} for r in rules],
            }
            return 200, _completion(body, answer), None
        return 200, _completion(body, {"passed": False, "score": 0.0, "reasoning": "strict"}), None

    _serve(openai_server, reply, 50)
    options = RunOptions(
        judge=JudgeChoice(get_llm_client()),
        judge_batch="on",
        rule_judges={special: {"judge_model": "careful-model", "instructions": "Be strict."}},
    )
    outcome = execute_test_item(
        item=PTO_ITEM, bot=make_bot_spec(), rubric=RUBRIC_SNAPSHOT, options=options, conversation_id="c1"
    )
    by_rule = {v["rule_id"]: v for v in outcome.rubric_scores}
    assert by_rule[special]["judge"] == "openai:careful-model" and by_rule[special]["passed"] is False
    assert all(v["judge"] == "openai:judge-model" for k, v in by_rule.items() if k != special)
    batch = [r for r in openai_server.chat_requests if "<rules>" in r["messages"][-1]["content"]]
    assert len(batch) == 1 and f"Rule {special}:" not in batch[0]["messages"][-1]["content"]
    own = [r for r in openai_server.chat_requests if r["model"] == "careful-model"]
    assert len(own) == 1 and own[0]["messages"][-1]["content"].startswith("Be strict.")


# --- robustness --------------------------------------------------------------------------------------


def test_items_an_llm_judged_cannot_be_tried_again_without_one(api, rubric, django_capture_on_commit_callbacks):
    results = labelled(rubric, 10, 10)
    EvaluationRun.objects.filter(pk=results[0].run_id).update(judge="openai:gpt-4o")
    response = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks)
    assert response.status_code == 422
    assert "judged by openai:gpt-4o" in response.json()["detail"] and "needs an LLM" in response.json()["detail"]
    assert not AlignmentTrial.objects.exists()
    # Another judge is a different question, which the heuristic judge can answer offline.
    assert _start(api, rubric, {"judge_model": "heuristic"}, django_capture_on_commit_callbacks).status_code == 202
    trial = AlignmentTrial.objects.get()
    assert {v["after"]["status"] for v in trial.verdicts} == {"ok"}, "the items' LLM judge is not needed"


def test_a_trial_whose_worker_died_is_taken_up_again_once_then_failed(api, rubric, settings):
    from datetime import timedelta

    from django.utils import timezone

    from apps.runs.alignment.services import trials_reap

    labelled(rubric, 10, 10)
    with TestCase.captureOnCommitCallbacks(execute=False):
        api.post(
            f"/api/v1/rubrics/{rubric.pk}/alignment-trials",
            {"rule": "BRIEF", "candidate": {"rubric_version": 2}},
            format="json",
        )
    trial = AlignmentTrial.objects.get()
    long_ago = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS + 5)
    # A lost message: pending too long is queued again (and run here, as a worker would).
    AlignmentTrial.objects.filter(pk=trial.pk).update(created_at=long_ago)
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert trials_reap() == 1
    trial.refresh_from_db()
    assert (trial.status, trial.judged, trial.attempts) == ("done", 10, 1)
    assert trials_reap() == 0, "a finished trial is left alone"
    # A worker that died mid-trial: running with no heartbeat. Started over once, then failed.
    AlignmentTrial.objects.filter(pk=trial.pk).update(status="running", heartbeat_at=long_ago)
    with TestCase.captureOnCommitCallbacks(execute=False) as queued:
        assert trials_reap() == 1
    assert len(queued) == 1
    trial.refresh_from_db()
    assert trial.status == "pending"
    AlignmentTrial.objects.filter(pk=trial.pk).update(status="running", heartbeat_at=long_ago, attempts=2)
    assert trials_reap() == 1
    trial.refresh_from_db()
    assert trial.status == "failed" and "Worker lost" in trial.error
    body = api.get(f"/api/v1/alignment-trials/{trial.trial_id}").json()
    assert body["status"] == "failed" and "Worker lost" in body["error"]


def test_a_trial_that_spends_the_llm_counts_against_the_keys_rate(
    api, rubric, openai_server, settings, django_capture_on_commit_callbacks
):
    settings.EVALSITE_LLM_RATE = "1/day"
    labelled(rubric, 10, 10)
    _serve(openai_server, _agrees_with_reviewers, 20)
    assert _start(api, rubric, {"prompt_template": "Count."}, django_capture_on_commit_callbacks).status_code == 202
    refused = _start(api, rubric, {"prompt_template": "Count again."}, django_capture_on_commit_callbacks)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert AlignmentTrial.objects.count() == 1
    # The heuristic judge spends nothing: not counted, not refused.
    assert _start(api, rubric, {"judge_model": "heuristic"}, django_capture_on_commit_callbacks).status_code == 202


def test_one_class_only_cannot_be_better_and_says_why(api, rubric, django_capture_on_commit_callbacks):
    # Every reviewer verdict a pass. The stored judge failed them all: kappa 0 (it never agrees). The
    # candidate passes them all: both raters in one class, chance agreement 1, kappa undefined, so
    # a perfect agreement proves nothing a judge that passes everything would not also show.
    labelled(rubric, 20, 0)
    trial_id = _start(api, rubric, {"rubric_version": 2}, django_capture_on_commit_callbacks).json()["id"]
    body = api.get(f"/api/v1/alignment-trials/{trial_id}").json()
    assert (body["baseline"]["kappa"], body["baseline"]["agreement"]) == (0.0, 0.0)
    assert (body["candidate"]["kappa"], body["candidate"]["agreement"]) == (None, 1.0)
    assert body["difference"] == {"n": 10, "kappa": None, "kappa_ci": None} and body["better"] is False
    refused = api.post(f"/api/v1/alignment-trials/{trial_id}/publish")
    assert refused.status_code == 409 and "undefined" in refused.json()["detail"]


def test_when_the_judge_already_agrees_nothing_can_be_better(api, rubric, django_capture_on_commit_callbacks):
    labelled(rubric, 10, 10, judged_as=lambda reply: reply == SHORT)
    trial_id = _start(api, rubric, {"judge_model": "heuristic"}, django_capture_on_commit_callbacks).json()["id"]
    body = api.get(f"/api/v1/alignment-trials/{trial_id}").json()
    # The stored verdicts were the loose rule's, the heuristic judges the strict version-1 text again.
    assert body["baseline"]["kappa"] == 1.0 and body["baseline"]["agreement"] == 1.0
    assert body["better"] is False and body["difference"]["kappa"] <= 0
