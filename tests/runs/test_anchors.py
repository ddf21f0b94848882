"""Judge anchors (issue 24, item 5): a test-set version marked as anchors has its reference run's
stored transcripts judged again whenever the judge changes; the drift report lists the verdicts that
moved on identical transcripts and kappa between the old and the new judge."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.rubrics.models import RubricVersion, RuleJudge
from apps.runs.anchors.services import anchors_watch
from apps.runs.executor import JudgeChoice, judge_one_criterion, judge_one_rule, stored_transcript
from apps.runs.judging.types import verdicts_to_json
from apps.runs.models import AnchorCheck, AnchorSet
from apps.scores.models import Score
from apps.scores.vocabulary import SubjectKind
from tests.conftest import _client_with_key
from tests.core.factories import ApiKeyFactory, MembershipFactory, client_with_key
from tests.fakes.openai_server import judge_reply
from tests.rubrics.factories import RubricFactory, RubricRuleFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory
from tests.testsets.factories import SuiteFactory

pytestmark = pytest.mark.django_db

CRITERION = 'Response mentions "15 days"'
GOOD, BAD = "You accrue 15 days of PTO a year.", "Ask HR. Or your manager. Or the wiki. Or a colleague. Or me."


def _output(reply: str) -> dict:
    return {
        "messages": [{"role": "user", "content": "PTO?"}, {"role": "assistant", "content": reply, "tool_calls": []}]
    }


@pytest.fixture
def api(db):
    """An editor's key: configures (marks anchors), reviews (starts checks) and reads."""
    return _client_with_key("editor", staff=False, scopes=["read", "review", "configure"])


@pytest.fixture
def setup():
    """A test set at version 1 and a rubric with rule BRIEF (under 4 sentences); no run yet."""
    rubric = RubricFactory(rules=[RubricRuleFactory(id="BRIEF")])
    test_set = SuiteFactory(bot=rubric.bot)
    return rubric, test_set


def _reference_run(rubric, test_set, replies=(GOOD, BAD, GOOD, BAD), **fields):
    """A completed run of version 1 whose results were judged by the heuristic judge, as the engine
    would have: the verdicts carry the judge's real fingerprints."""
    run = EvaluationRunFactory(
        project=rubric.project,
        agent_id=rubric.bot.agent_id,
        test_set_id=test_set.pk,
        test_set_version=1,
        rubric_id=rubric.pk,
        rubric_version=1,
        **fields,
    )
    rule = RubricVersion.objects.get(rubric=rubric, version=1).snapshot["rules"][0]
    for reply in replies:
        output = _output(reply)
        transcript = stored_transcript(output, {})
        EvaluationResultFactory(
            run=run,
            output=output,
            item={"type": "single_turn", "inputs": {"message": "PTO?"}, "expected": {"success_criteria": [CRITERION]}},
            criteria_scores=verdicts_to_json([judge_one_criterion(CRITERION, transcript, JudgeChoice())]),
            rubric_scores=verdicts_to_json([judge_one_rule(rule, transcript, "", JudgeChoice(), 1)]),
        )
    return run


def _mark(client, test_set, **body):
    return client.post(f"/api/v1/test-sets/{test_set.pk}/anchors", {"version": 1, **body}, format="json")


def _check(client, anchor_id, captured):
    with captured(execute=True):
        response = client.post(f"/api/v1/anchors/{anchor_id}/checks")
    assert response.status_code == 202, response.json()
    return client.get(f"/api/v1/anchor-checks/{response.json()['id']}").json()


# --- marking ------------------------------------------------------------------------------------------


def test_marking_needs_a_finished_run_with_transcripts_and_happens_once(api, setup):
    rubric, test_set = setup
    refused = _mark(api, test_set)
    assert refused.status_code == 422 and "no completed run" in refused.json()["detail"]
    assert _mark(api, test_set, version=9).status_code == 422
    # A run whose bot failed stored no conversation: nothing to judge again.
    failed_bot = _reference_run(rubric, test_set, replies=())
    EvaluationResultFactory(run=failed_bot, output={"messages": []}, criteria_scores=[])
    refused = _mark(api, test_set, run_id=str(failed_bot.run_id))
    assert refused.status_code == 422 and "no judged conversations" in refused.json()["detail"]
    running = _reference_run(rubric, test_set, status="running")
    assert _mark(api, test_set, run_id=str(running.run_id)).status_code == 422
    assert not AnchorSet.objects.exists()

    run = _reference_run(rubric, test_set)
    marked = _mark(api, test_set)
    assert marked.status_code == 201, marked.json()
    body = marked.json()
    assert body["reference_run_id"] == str(run.run_id), "the newest completed run"
    assert (body["version"], body["results"], body["rubric_version"]) == (1, 4, 1)
    assert body["latest_check"] is None
    assert {part["judge"] for part in body["reference_judges"]} == {"heuristic:v1"}
    again = _mark(api, test_set, run_id=str(run.run_id))
    assert again.status_code == 409 and "anchors already" in again.json()["detail"]
    assert AnchorSet.objects.count() == 1


def test_a_read_only_key_cannot_mark_or_check(setup, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    reader = _client_with_key("reader", staff=False, scopes=["read"])
    assert _mark(reader, test_set).status_code == 403


# --- checks -------------------------------------------------------------------------------------------


def test_the_same_judge_on_the_same_transcripts_changes_nothing(api, setup, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    report = _check(api, anchor_id, django_capture_on_commit_callbacks)
    assert report["status"] == "done" and report["trigger"] == "manual", report
    assert report["progress"] == {"judged": 8, "total": 8}
    # Two passes and two fails per key, both judges alike: kappa is defined and 1.
    assert (report["n"], report["changed"], report["kappa"]) == (8, 0, 1.0)
    low, high = report["kappa_ci"]
    assert low < 1.0 == high, "eight verdicts do not prove a judge has not moved"
    assert report["judge_changes"] == [] and report["changed_verdicts"] == []
    assert report["judges"]["before"] == report["judges"]["after"]
    assert {(k["kind"], k["key"], k["n"], k["changed"]) for k in report["per_key"]} == {
        ("criterion", CRITERION, 4, 0),
        ("rule", "BRIEF", 4, 0),
    }
    # Nothing in the judge changed, so the beat task has nothing to do.
    with django_capture_on_commit_callbacks(execute=True):
        assert anchors_watch() == 0
    listed = api.get(f"/api/v1/test-sets/{test_set.pk}/anchors").json()
    assert listed[0]["latest_check"]["id"] == report["id"] and listed[0]["latest_check"]["kappa"] == 1.0


def test_one_class_only_leaves_kappa_undefined(api, setup, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    _reference_run(rubric, test_set, replies=(GOOD, GOOD))
    report = _check(api, _mark(api, test_set).json()["id"], django_capture_on_commit_callbacks)
    # Every verdict passes under both judges: chance agreement is 1 and kappa says nothing.
    assert (report["n"], report["changed"], report["agreement"]) == (4, 0, 1.0)
    assert report["kappa"] is None and report["kappa_ci"] is None


def test_a_changed_judge_lists_the_verdicts_that_moved(api, setup, openai_server, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    run = _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    # The judge now is an LLM that fails everything.
    openai_server.default = judge_reply(passed=False, score=0.0, reasoning="Not met, says the new judge.")
    report = _check(api, anchor_id, django_capture_on_commit_callbacks)
    assert report["status"] == "done" and report["judge"] == "openai:judge-model", report
    assert len(openai_server.chat_requests) == 8, "one request per verdict, on the stored transcripts"
    assert all(
        GOOD in r["messages"][-1]["content"] or BAD in r["messages"][-1]["content"] for r in openai_server.chat_requests
    )
    # The four passes (GOOD's criterion and rule, twice) became fails; the fails stayed.
    assert (report["n"], report["changed"]) == (8, 4)
    # One rater all fail, the other half pass: agreement is exactly chance.
    assert report["kappa"] == 0.0 and report["agreement"] == 0.5
    low, high = report["kappa_ci"]
    assert low < 0.0 < high
    words = " ".join(report["judge_changes"])
    assert "judge heuristic:v1 → llm" in words and "model none → judge-model" in words, words
    assert "prompt template none →" in words
    good = {str(r.result_id) for r in run.results.all() if r.output["messages"][1]["content"] == GOOD}
    changed = report["changed_verdicts"]
    assert {c["id"] for c in changed} == good and len(changed) == 4
    assert {(c["kind"], c["key"]) for c in changed} == {("criterion", CRITERION), ("rule", "BRIEF")}
    for c in changed:
        assert c["url"] == f"/console/results/{c['id']}/"
        assert c["before"] == {"status": "ok", "passed": True}
        assert c["after"]["passed"] is False and c["after"]["reasoning"] == "Not met, says the new judge."
    # The reference run's verdicts are untouched: a check's verdicts are its own, not Score rows
    # (a Score would become the judge's verdict in force on the reference result).
    stored = Score.objects.of(SubjectKind.RUN_RESULT, [r.pk for r in run.results.all()]).machine()
    assert stored.count() == 8 and stored.filter(passed=True).count() == 4


def test_errors_from_the_judge_are_unassessed_not_changes_to_fail(
    api, setup, openai_server, django_capture_on_commit_callbacks
):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    for _ in range(8 * 3):  # three attempts per verdict
        openai_server.push_error(500, "the judge's server is down")
    report = _check(api, anchor_id, django_capture_on_commit_callbacks)
    assert report["status"] == "done", report
    assert report["unassessed"] == {"before": 0, "after": 8}
    assert (report["n"], report["changed"], report["kappa"], report["kappa_ci"]) == (0, 0, None, None)
    assert report["changed_verdicts"] == []
    check = AnchorCheck.objects.get()
    assert {v["after"]["status"] for v in check.verdicts} == {"error"}
    assert "LLM judge failed" in check.verdicts[0]["after"]["reasoning"]


def test_a_second_check_while_one_is_in_flight_is_409(api, setup, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    with django_capture_on_commit_callbacks(execute=False):
        assert api.post(f"/api/v1/anchors/{anchor_id}/checks").status_code == 202
    refused = api.post(f"/api/v1/anchors/{anchor_id}/checks")
    assert refused.status_code == 409 and "pending or running" in refused.json()["detail"]
    assert AnchorCheck.objects.count() == 1


# --- the beat task ------------------------------------------------------------------------------------


def _watch(captured) -> int:
    with captured(execute=True):
        return anchors_watch()


def test_the_beat_task_checks_once_per_judge_change(
    api, setup, openai_server, settings, django_capture_on_commit_callbacks
):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_set = AnchorSet.objects.get(anchor_id=_mark(api, test_set).json()["id"])
    configured = settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY
    settings.OPENAI_BASE_URL = settings.OPENAI_API_KEY = ""
    assert _watch(django_capture_on_commit_callbacks) == 0, "the heuristic judge judged the reference run"

    openai_server.default = judge_reply(passed=True)
    settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = configured
    assert _watch(django_capture_on_commit_callbacks) == 1, "an LLM judge is configured"
    first = anchor_set.checks.get()
    assert (first.status, first.trigger, first.judge) == ("done", "judge_changed", "openai:judge-model")
    assert _watch(django_capture_on_commit_callbacks) == 0, "the same judge again"

    settings.EVALSITE_JUDGE_MODEL = "judge-model-2"
    assert _watch(django_capture_on_commit_callbacks) == 1
    second = anchor_set.checks.first()
    assert second.judge == "openai:judge-model-2"
    assert "model none → judge-model-2" in second.report["judge_changes"], "the report is against the reference"
    assert _watch(django_capture_on_commit_callbacks) == 0

    # A rule's own judge (an alignment trial published it) changes the rule's prompt.
    RuleJudge.objects.create(rubric=rubric, rule_id="BRIEF", instructions="Count sentences strictly.")
    assert _watch(django_capture_on_commit_callbacks) == 1
    newest = anchor_set.checks.first()
    assert newest.rule_judges == {"BRIEF": {"judge_model": None, "instructions": "Count sentences strictly."}}
    rule_requests = [
        r for r in openai_server.chat_requests if "Count sentences strictly." in r["messages"][-1]["content"]
    ]
    assert len(rule_requests) == 4, "the rule's instructions went to the judge, once per anchored transcript"
    assert _watch(django_capture_on_commit_callbacks) == 0
    # A rule judge on a rule the anchors have no verdict of changes nothing they would show.
    RuleJudge.objects.create(rubric=rubric, rule_id="ELSEWHERE", instructions="Anything.")
    assert _watch(django_capture_on_commit_callbacks) == 0
    assert anchor_set.checks.count() == 3


def test_the_beat_task_starts_nothing_while_a_check_is_in_flight_and_fails_a_stale_one(
    api, setup, openai_server, settings, django_capture_on_commit_callbacks
):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_set = AnchorSet.objects.get(anchor_id=_mark(api, test_set).json()["id"])
    with django_capture_on_commit_callbacks(execute=False):
        assert anchors_watch() == 1
        assert anchors_watch() == 0, "one check in flight at most"
    pending = anchor_set.checks.get()
    assert pending.status == "pending"
    # A worker died mid-check: the check goes stale and is failed, so that it holds nothing off.
    stale = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS + 1)
    AnchorCheck.objects.filter(pk=pending.pk).update(status="running", heartbeat_at=stale)
    assert _watch(django_capture_on_commit_callbacks) == 0, "that judge was tried: no automatic retry"
    pending.refresh_from_db()
    assert pending.status == "failed" and "worker stopped" in pending.error
    body = api.get(f"/api/v1/anchor-checks/{pending.check_id}").json()
    assert body["status"] == "failed" and body["error"] and body["n"] is None


# --- projects -----------------------------------------------------------------------------------------


def test_another_projects_anchors_are_404(api, setup, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    check_id = _check(api, anchor_id, django_capture_on_commit_callbacks)["id"]
    membership = MembershipFactory(role="editor")
    theirs = client_with_key(
        ApiKeyFactory(user=membership.user, scopes=["read", "review", "configure"], project=membership.project)
    )
    assert _mark(theirs, test_set).status_code == 404
    assert theirs.get(f"/api/v1/test-sets/{test_set.pk}/anchors").status_code == 404
    assert theirs.post(f"/api/v1/anchors/{anchor_id}/checks").status_code == 404
    assert theirs.get(f"/api/v1/anchor-checks/{check_id}").status_code == 404
    assert AnchorCheck.objects.count() == 1


def test_celery_beat_runs_the_watch(api, setup, openai_server, settings, django_capture_on_commit_callbacks):
    from apps.runs.tasks import watch_anchors

    schedule = {entry["task"]: entry["schedule"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert schedule["apps.runs.tasks.watch_anchors"] == settings.EVALSITE_ANCHORS_INTERVAL_SECONDS
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    _mark(api, test_set)
    openai_server.default = judge_reply(passed=True)
    with django_capture_on_commit_callbacks(execute=True):
        assert watch_anchors.delay().get() == 1
    assert AnchorCheck.objects.get().status == "done"


def test_a_run_too_large_for_anchors_is_refused(api, setup, monkeypatch):
    # Every judge change judges every anchored result again, billed to no key: the size is bounded.
    from apps.runs.anchors import services

    rubric, test_set = setup
    _reference_run(rubric, test_set)
    monkeypatch.setattr(services, "MAX_ANCHOR_RESULTS", 3)
    refused = _mark(api, test_set)
    assert refused.status_code == 422 and "at most 3" in refused.json()["detail"]
    assert not AnchorSet.objects.exists()
    monkeypatch.setattr(services, "MAX_ANCHOR_RESULTS", 4)
    assert _mark(api, test_set).status_code == 201


# --- unmarking, a lost message, the admin ---------------------------------------------------------------


def test_unmarking_is_refused_while_a_check_is_in_flight_then_removes_the_anchors(
    api, setup, django_capture_on_commit_callbacks
):
    from apps.core.models import AuditEvent

    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    with django_capture_on_commit_callbacks(execute=False):
        assert api.post(f"/api/v1/anchors/{anchor_id}/checks").status_code == 202
    refused = api.delete(f"/api/v1/anchors/{anchor_id}")
    assert refused.status_code == 409 and "pending or running" in refused.json()["detail"]
    reviewer = _client_with_key("reviewer", staff=False, scopes=["read", "review"])
    assert reviewer.delete(f"/api/v1/anchors/{anchor_id}").status_code == 403
    AnchorCheck.objects.update(status="done")
    assert api.delete(f"/api/v1/anchors/{anchor_id}").status_code == 204
    assert not AnchorSet.objects.exists() and not AnchorCheck.objects.exists()
    assert api.delete(f"/api/v1/anchors/{anchor_id}").status_code == 404
    actions = list(AuditEvent.objects.filter(object_type="anchor_set").values_list("action", "object_id"))
    assert sorted(actions) == [("create", anchor_id), ("delete", anchor_id)]
    assert _mark(api, test_set).status_code == 201, "the version can be marked again"


def test_a_pending_check_whose_message_was_lost_is_queued_again_once_per_timeout(
    api, setup, settings, django_capture_on_commit_callbacks, monkeypatch
):
    from apps.runs import tasks

    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    with django_capture_on_commit_callbacks(execute=False):  # the message is never sent: lost
        api.post(f"/api/v1/anchors/{anchor_id}/checks")
    check = AnchorCheck.objects.get()
    sent = []
    monkeypatch.setattr(tasks.run_anchor_check, "delay", lambda pk: sent.append(pk))
    anchors_watch()
    assert sent == [], "not stale yet"
    old = timezone.now() - timedelta(seconds=settings.EVALSITE_RUN_HEARTBEAT_TIMEOUT_SECONDS + 1)
    AnchorCheck.objects.filter(pk=check.pk).update(created_at=old)
    anchors_watch()
    anchors_watch()
    assert sent == [check.pk], "queued again once, not at every beat"
    check.refresh_from_db()
    assert check.status == "pending" and check.heartbeat_at is not None


def test_the_admin_lists_anchors_and_checks_read_only(admin_client, api, setup, django_capture_on_commit_callbacks):
    rubric, test_set = setup
    _reference_run(rubric, test_set)
    anchor_id = _mark(api, test_set).json()["id"]
    check = _check(api, anchor_id, django_capture_on_commit_callbacks)
    anchor_set, stored = AnchorSet.objects.get(), AnchorCheck.objects.get()
    assert anchor_id in admin_client.get("/admin/runs/anchorset/").content.decode()
    page = admin_client.get(f"/admin/runs/anchorset/{anchor_set.pk}/change/").content.decode()
    assert "anchored results" in page.lower()
    saved = admin_client.post(f"/admin/runs/anchorset/{anchor_set.pk}/change/", {"test_set_version": 9})
    assert saved.status_code == 403
    assert check["id"] in admin_client.get("/admin/runs/anchorcheck/").content.decode()
    assert admin_client.get(f"/admin/runs/anchorcheck/{stored.pk}/change/").status_code == 200
    assert admin_client.post(f"/admin/runs/anchorset/{anchor_set.pk}/delete/").status_code == 403
    assert AnchorSet.objects.exists()
