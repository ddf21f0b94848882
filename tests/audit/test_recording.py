"""Each change to configuration and access writes exactly one audit event, with its actor (an API
key as key:<prefix>, a person by username, background work as "system") and what changed; a
secret never reaches the trail."""

import json

import pytest
from django.test import TestCase

from apps.agentic.models import EvaluationRule
from apps.core.audit.context import audit_actor
from apps.core.models import ApiKey, AuditEvent, Membership, Project, ProjectRole
from apps.core.services import api_key_create, api_key_revoke, api_key_update
from apps.runs.models import EvaluationRun
from tests.audit.conftest import key_actor, member
from tests.bots.factories import SECRET, bot_body
from tests.core.factories import MembershipFactory, UserFactory
from tests.rubrics.factories import rubric_body
from tests.runs.conftest import plan  # noqa: F401  (the fixture: bot, test set and rubric served as the runs need them)
from tests.runs.factories import PLAN_AGENT, PLAN_RUBRIC, PLAN_TEST_SET
from tests.testsets.factories import make_test_set_payload

pytestmark = pytest.mark.django_db


def new_events(since_id: int = 0):
    return list(AuditEvent.objects.filter(id__gt=since_id).order_by("id"))


def last_id() -> int:
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def one_event(since_id: int) -> AuditEvent:
    events = new_events(since_id)
    assert len(events) == 1, [(e.action, e.object_type, e.changes) for e in events]
    return events[0]


def create_bot(client, **overrides) -> dict:
    response = client.post("/api/v1/bots", bot_body(**overrides), format="json")
    assert response.status_code == 201, response.content
    return response.json()


class TestBots:
    def test_create_update_delete_each_write_one_event_by_the_key(self, team, admin_api, editor_api):
        start = last_id()
        bot = create_bot(editor_api)
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("create", "bot", bot["agent_id"])
        assert event.actor == key_actor(editor_api)
        assert event.actor_user.username == "eddie" and event.actor_key.prefix == editor_api.raw_key[:10]
        assert event.project == team and event.project_slug == "team"
        assert event.changes["name"] == [None, "O'Connor Associate"]
        assert "project" not in event.changes  # the event's own project says it
        # The secret was set: the trail says so, and only that.
        assert event.changes["encrypted_secret"] == [None, "***"]

        start = last_id()
        response = editor_api.put(
            f"/api/v1/bots/{bot['agent_id']}", bot_body(name="Renamed", secret="sk-another-secret-999"), format="json"
        )
        assert response.status_code == 200, response.content
        event = one_event(start)
        assert event.action == "update"
        assert event.changes["name"] == ["O'Connor Associate", "Renamed"]
        assert event.changes["encrypted_secret"] == ["***", "***"]
        # Only what changed: the prompt was sent again unchanged.
        assert "system_prompt" not in event.changes

        start = last_id()
        assert admin_api.delete(f"/api/v1/bots/{bot['agent_id']}").status_code == 204
        event = one_event(start)
        assert (event.action, event.actor, event.object_id) == ("delete", key_actor(admin_api), bot["agent_id"])

        stored = json.dumps([e.changes for e in AuditEvent.objects.all()])
        assert SECRET not in stored and "sk-another-secret-999" not in stored
        assert "gAAAA" not in stored  # nor the Fernet token it is stored as

    def test_a_save_that_changes_nothing_records_nothing(self, editor_api):
        bot = create_bot(editor_api)
        start = last_id()
        editor_api.put(f"/api/v1/bots/{bot['agent_id']}", bot_body(secret=SECRET), format="json")
        changes = [e.changes for e in new_events(start)]
        # Sending the same secret again re-encrypts it (a new token): that is the one change seen.
        assert all(set(c) <= {"encrypted_secret"} for c in changes)


class TestVersionedConfiguration:
    def test_rubric_create_update_delete(self, team, admin_api, editor_api):
        bot = create_bot(editor_api)
        start = last_id()
        created = editor_api.post("/api/v1/rubrics", rubric_body(bot["agent_id"]), format="json")
        assert created.status_code == 201, created.content
        rubric_id = created.json()["rubric_id"]
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("create", "rubric", rubric_id)
        assert event.changes["version"] == [None, 1] and event.changes["name"] == [None, "Support rubric"]
        assert event.project == team

        start = last_id()
        body = rubric_body(bot["agent_id"], name="Stricter rubric")
        assert editor_api.put(f"/api/v1/rubrics/{rubric_id}", body, format="json").status_code == 200
        event = one_event(start)
        assert event.action == "update"
        assert event.changes == {"name": ["Support rubric", "Stricter rubric"], "version": [1, 2]}

        start = last_id()
        assert admin_api.delete(f"/api/v1/rubrics/{rubric_id}").status_code == 204
        assert one_event(start).action == "delete"

    def test_test_set_create_update_delete(self, admin_api, editor_api):
        bot = create_bot(editor_api)
        start = last_id()
        created = editor_api.post("/api/v1/test-sets", make_test_set_payload(bot["agent_id"]), format="json")
        assert created.status_code == 201, created.content
        test_set_id = created.json()["test_set_id"]
        event = one_event(start)
        assert (event.action, event.object_type, event.actor) == ("create", "test_set", key_actor(editor_api))

        start = last_id()
        body = make_test_set_payload(bot["agent_id"], description="Harder questions")
        assert editor_api.put(f"/api/v1/test-sets/{test_set_id}", body, format="json").status_code == 200
        event = one_event(start)
        assert event.changes["description"] == ["Questions", "Harder questions"]

        start = last_id()
        assert admin_api.delete(f"/api/v1/test-sets/{test_set_id}").status_code == 204
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("delete", "test_set", test_set_id)


class TestRulesAndQueues:
    def test_evaluation_rule(self, staff_admin_api):
        start = last_id()
        body = {"name": "nightly", "agent_name": "Orchestrator", "source": "rest", "sample_rate": 0.25}
        rule = staff_admin_api.post("/api/v1/evaluation-rules", body, format="json").json()
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("create", "evaluation_rule", str(rule["id"]))
        assert event.changes["sample_rate"] == [None, 0.25]

        start = last_id()
        edited = {**rule, "enabled": False}
        assert staff_admin_api.put(f"/api/v1/evaluation-rules/{rule['id']}", edited, format="json").status_code == 200
        assert one_event(start).changes == {"enabled": [True, False]}

        start = last_id()
        assert staff_admin_api.delete(f"/api/v1/evaluation-rules/{rule['id']}").status_code == 204
        assert one_event(start).action == "delete"
        assert not EvaluationRule.objects.exists()

    def test_review_queue(self, staff_admin_api):
        start = last_id()
        queue = staff_admin_api.post("/api/v1/queues", {"name": "triage", "kind": "run_result"}, format="json").json()
        event = one_event(start)
        assert (event.action, event.object_type, event.changes["name"]) == ("create", "review_queue", [None, "triage"])

        start = last_id()
        body = {"name": "triage", "kind": "run_result", "sample_percent": 50}
        assert staff_admin_api.put(f"/api/v1/queues/{queue['id']}", body, format="json").status_code == 200
        assert one_event(start).changes == {"sample_rate": [0.0, 0.5]}

        start = last_id()
        assert staff_admin_api.delete(f"/api/v1/queues/{queue['id']}").status_code == 204
        assert one_event(start).action == "delete"


class TestRunsAndClear:
    def test_launch_and_cancel(self, team, editor_api, plan):  # noqa: F811
        body = {"agent_id": PLAN_AGENT, "test_set_id": str(PLAN_TEST_SET), "rubric_id": str(PLAN_RUBRIC)}
        start = last_id()
        # The run is queued on commit, which this test's transaction never reaches: it stays pending.
        response = editor_api.post("/api/v1/runs", body, format="json")
        assert response.status_code == 201, response.content
        run_id = response.json()["run_id"]
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("launch", "run", run_id)
        assert event.actor == key_actor(editor_api) and event.project == team
        assert event.changes["agent_id"] == [None, PLAN_AGENT] and event.changes["test_set_version"] == [None, 2]

        start = last_id()
        assert editor_api.post(f"/api/v1/runs/{run_id}/cancel").status_code == 200
        event = one_event(start)
        assert (event.action, event.changes) == ("cancel", {"status": ["pending", "cancelled"]})
        assert EvaluationRun.objects.get(run_id=run_id).status == "cancelled"

    def test_a_console_cancel_is_the_signed_in_persons(self, client, team, editor_api, plan):  # noqa: F811
        body = {"agent_id": PLAN_AGENT, "test_set_id": str(PLAN_TEST_SET)}
        run_id = editor_api.post("/api/v1/runs", body, format="json").json()["run_id"]
        client.force_login(member(team, "ann", ProjectRole.ADMIN))
        start = last_id()
        assert client.post(f"/console/runs/{run_id}/cancel/").status_code == 302
        event = one_event(start)
        assert (event.action, event.actor, event.actor_user.username, event.actor_key) == ("cancel", "ann", "ann", None)

    def test_a_refused_cancel_records_nothing(self, editor_api, plan):  # noqa: F811
        body = {"agent_id": PLAN_AGENT, "test_set_id": str(PLAN_TEST_SET)}
        run_id = editor_api.post("/api/v1/runs", body, format="json").json()["run_id"]
        editor_api.post(f"/api/v1/runs/{run_id}/cancel")
        start = last_id()
        assert editor_api.post(f"/api/v1/runs/{run_id}/cancel").status_code == 409
        assert new_events(start) == []

    def test_clear(self, team, admin_api):
        start = last_id()
        assert admin_api.delete("/api/v1/metrics/clear").status_code == 200
        event = one_event(start)
        assert (event.action, event.object_type, event.actor, event.project) == (
            "clear",
            "traces",
            key_actor(admin_api),
            team,
        )

    def test_a_refused_clear_records_nothing(self, editor_api):
        start = last_id()
        assert editor_api.delete("/api/v1/metrics/clear").status_code == 403
        assert new_events(start) == []


class TestKeys:
    def test_create_scope_change_revoke(self, team):
        alice = member(team, "alice", ProjectRole.ADMIN)
        start = last_id()
        with audit_actor("manage.py create_api_key"):
            key, raw_key = api_key_create(username="alice", project=team, scopes=["read"])
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("create", "api_key", str(key.pk))
        assert event.actor == "manage.py create_api_key" and event.actor_user is None
        assert event.changes["key_hash"] == [None, "***"] and event.changes["scopes"] == [None, ["read"]]
        assert event.changes["user"] == [None, alice.pk] and event.project == team

        start = last_id()
        api_key_update(api_key=key, name="ci", scopes=["read", "ingest"])
        assert one_event(start).changes == {"name": ["", "ci"], "scopes": [["read"], ["read", "ingest"]]}

        start = last_id()
        api_key_revoke(api_key=key)
        event = one_event(start)
        assert event.action == "revoke" and event.actor == "system"
        assert event.changes["revoked_at"][0] is None and event.changes["revoked_at"][1]

        stored = json.dumps([e.changes for e in AuditEvent.objects.all()])
        assert raw_key not in stored and key.key_hash not in stored

    def test_the_admin_revoke_action_is_the_signed_in_persons(self, client, team):
        root = UserFactory(username="root", is_staff=True, is_superuser=True)
        member(team, "bob", ProjectRole.EDITOR)
        key, _ = api_key_create(username="bob", project=team, scopes=["read"])
        client.force_login(root)
        start = last_id()
        response = client.post("/admin/core/apikey/", {"action": "revoke", "_selected_action": [key.pk]}, follow=False)
        assert response.status_code == 302
        event = one_event(start)
        assert (event.action, event.actor, event.actor_user) == ("revoke", "root", root)


class TestProjectsAndMembers:
    def test_creating_a_project_is_a_global_event_and_its_settings_are_its_own(self, team):
        start = last_id()
        project = Project.objects.create(name="New", slug="new")
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id, event.project) == ("create", "project", "new", None)
        assert event.project_slug == ""

        start = last_id()
        project.retention_days = 30
        project.redaction = {"enabled": True, "detectors": ["email"], "custom_patterns": []}
        project.save()
        event = one_event(start)
        assert event.action == "update" and event.project == project
        assert event.changes["retention_days"] == [None, 30]
        assert event.changes["redaction"][1]["detectors"] == ["email"]

    def test_members_add_change_role_remove(self, team):
        user = UserFactory(username="carol")
        start = last_id()
        membership = Membership.objects.create(project=team, user=user, role=ProjectRole.VIEWER)
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id, event.project) == (
            "add_member",
            "membership",
            "carol",
            team,
        )
        assert event.changes["role"] == [None, "viewer"]

        start = last_id()
        membership.role = ProjectRole.EDITOR
        membership.save(update_fields=["role"])
        assert (one_event(start).action, one_event(start).changes) == ("change_role", {"role": ["viewer", "editor"]})

        start = last_id()
        membership.delete()
        event = one_event(start)
        assert (event.action, event.changes["role"]) == ("remove_member", ["editor", None])

    def test_admin_inline_member_change_is_the_signed_in_persons(self, client, team):
        root = UserFactory(username="root", is_staff=True, is_superuser=True)
        dave = UserFactory(username="dave")
        membership = MembershipFactory(project=team, user=dave, role=ProjectRole.VIEWER)
        client.force_login(root)
        start = last_id()
        data = {
            "name": "Team",
            "slug": "team",
            "retention_days": "",
            "run_retention_days": "",
            "memberships-TOTAL_FORMS": "1",
            "memberships-INITIAL_FORMS": "1",
            "memberships-MIN_NUM_FORMS": "0",
            "memberships-MAX_NUM_FORMS": "1000",
            "memberships-0-id": membership.pk,
            "memberships-0-project": team.pk,
            "memberships-0-user": dave.pk,
            "memberships-0-role": "admin",
        }
        response = client.post(f"/admin/core/project/{team.pk}/change/", data)
        assert response.status_code == 302, response.content.decode()[:2000]
        event = one_event(start)
        assert (event.action, event.actor, event.changes) == ("change_role", "root", {"role": ["viewer", "admin"]})

    def test_deleting_a_project_keeps_its_trail(self, team):
        MembershipFactory(project=team, user=UserFactory(username="erin"))
        kept = list(AuditEvent.objects.filter(project=team).values_list("pk", flat=True))
        assert kept
        start = last_id()
        team.delete()
        # One event for the project; its memberships went with it and are not told one by one.
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id, event.project) == ("delete", "project", "team", None)
        survivors = AuditEvent.objects.filter(pk__in=kept)
        assert survivors.count() == len(kept)
        assert set(survivors.values_list("project", "project_slug")) == {(None, "team")}

    def test_deleting_a_user_or_key_keeps_what_they_did(self, team, editor_api):
        create_bot(editor_api)
        event = AuditEvent.objects.get(object_type="bot")
        eddie = event.actor_user
        ApiKey.objects.filter(user=eddie).delete()
        eddie.delete()
        event = AuditEvent.objects.get(pk=event.pk)
        assert (event.actor, event.actor_user, event.actor_key) == (key_actor(editor_api), None, None)


def test_django_test_case_capture_on_commit_is_unaffected():
    # The recorder writes inside the change's transaction; nothing of it waits for a commit.
    with TestCase.captureOnCommitCallbacks() as callbacks:
        Project.objects.create(name="X", slug="x")
    assert callbacks == []


def test_create_api_key_command_is_its_own_actor(team, capsys):
    from django.core.management import call_command

    member(team, "frank", ProjectRole.EDITOR)
    start = last_id()
    call_command("create_api_key", "--user", "frank", "--project", "team")
    raw_key = capsys.readouterr().out.strip()
    event = one_event(start)
    assert (event.action, event.object_type, event.actor, event.project) == (
        "create",
        "api_key",
        "manage.py create_api_key",
        team,
    )
    assert raw_key not in json.dumps(event.changes)


class TestProjectsApi:
    def test_a_superuser_creating_a_project_is_a_global_event(self, client, db):
        root = UserFactory(username="root", is_staff=True, is_superuser=True)
        client.force_login(root)
        start = last_id()
        response = client.post(
            "/api/v1/projects", {"name": "Payments", "slug": "payments"}, content_type="application/json"
        )
        assert response.status_code == 201, response.content
        event = one_event(start)
        assert (event.action, event.object_type, event.object_id, event.project, event.actor) == (
            "create",
            "project",
            "payments",
            None,
            "root",
        )

    def test_patch_settings_retention_and_redaction(self, team, admin_api):
        start = last_id()
        body = {
            "retention_days": 30,
            "run_retention_days": 90,
            "redaction": {"enabled": True, "detectors": ["email"], "custom_patterns": []},
        }
        response = admin_api.patch("/api/v1/projects/team", body, format="json")
        assert response.status_code == 200, response.content
        event = one_event(start)
        assert (event.action, event.object_type, event.project, event.actor) == (
            "update",
            "project",
            team,
            key_actor(admin_api),
        )
        assert event.changes["retention_days"] == [None, 30]
        assert event.changes["run_retention_days"] == [None, 90]
        assert event.changes["redaction"][0]["enabled"] is False and event.changes["redaction"][1]["enabled"] is True

    def test_members_add_change_role_remove(self, team, admin_api):
        UserFactory(username="carol")
        members = "/api/v1/projects/team/members"
        start = last_id()
        assert admin_api.post(members, {"username": "carol", "role": "viewer"}, format="json").status_code == 201
        event = one_event(start)
        assert (event.action, event.object_id, event.actor, event.project) == (
            "add_member",
            "carol",
            key_actor(admin_api),
            team,
        )

        start = last_id()
        assert admin_api.post(members, {"username": "carol", "role": "editor"}, format="json").status_code == 200
        assert one_event(start).changes == {"role": ["viewer", "editor"]}

        start = last_id()
        assert admin_api.post(members, {"username": "carol", "role": "editor"}, format="json").status_code == 200
        assert new_events(start) == []  # the same role again changes nothing

        start = last_id()
        assert admin_api.delete(f"{members}/carol").status_code == 204
        assert one_event(start).action == "remove_member"

    def test_a_refused_change_records_nothing(self, team, editor_api):
        start = last_id()
        assert editor_api.patch("/api/v1/projects/team", {"retention_days": 1}, format="json").status_code == 403
        assert new_events(start) == []


class TestBotComponents:
    """A bot's tools and knowledge bases are part of its configuration: changing them is one event
    of the bot, through the API and the admin alike, with documents as title and digest only."""

    def test_an_api_update_of_tools_and_documents_is_one_event_with_both(self, editor_api):
        bot = create_bot(editor_api)
        body = bot_body()
        del body["secret"]  # kept as it is (sending it again re-encrypts it: a change of its own)
        body["tools"][0]["description"] = "Transfer to a person"
        body["knowledge_bases"][0]["documents"][1]["text"] = "Receipts over $50."
        start = last_id()
        assert editor_api.put(f"/api/v1/bots/{bot['agent_id']}", body, format="json").status_code == 200

        event = one_event(start)
        assert (event.action, event.object_type, event.object_id) == ("update", "bot", bot["agent_id"])
        # Each component that changed, by name, and in it each field that changed.
        assert set(event.changes) == {"tools.live_handoff.description", "knowledge_bases.Handbook.documents"}
        assert event.changes["tools.live_handoff.description"] == ["Transfer", "Transfer to a person"]
        docs_before, docs_after = event.changes["knowledge_bases.Handbook.documents"]
        assert [d["title"] for d in docs_after] == ["PTO", "Expenses"]
        assert docs_before[1]["text_sha256"] != docs_after[1]["text_sha256"]
        assert docs_before[0] == docs_after[0]
        assert "Receipts" not in json.dumps(event.changes)

    def test_the_create_event_lists_the_components(self, editor_api):
        start = last_id()
        create_bot(editor_api)
        event = one_event(start)
        assert event.action == "create"
        assert event.changes["tools.live_handoff"][0] is None
        assert event.changes["tools.live_handoff"][1]["description"] == "Transfer"
        assert {"tools.search_kb", "knowledge_bases.Handbook"} <= set(event.changes)

    def test_an_unchanged_put_records_nothing(self, editor_api):
        bot = create_bot(editor_api)
        body = bot_body()
        del body["secret"]
        start = last_id()
        assert editor_api.put(f"/api/v1/bots/{bot['agent_id']}", body, format="json").status_code == 200
        assert new_events(start) == []

    def test_an_admin_inline_tool_edit_is_one_event_of_the_signed_in_person(self, client, editor_api):
        from apps.bots.models import Bot
        from tests.admin_forms import admin_form_data

        bot = create_bot(editor_api)
        pk = Bot.objects.get(agent_id=bot["agent_id"]).pk
        client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
        assert client.post("/console/project/", {"project": "team"}).status_code == 302  # the bot's project
        url = f"/admin/bots/bot/{pk}/change/"
        data = admin_form_data(client.get(url))
        data["tools-1-description"] = "Search the handbook"
        data["name"] = "Renamed in the admin"
        start = last_id()
        response = client.post(url, data)
        assert response.status_code == 302, response.content.decode()[:2000]

        event = one_event(start)
        assert (event.action, event.actor) == ("update", "root")
        assert event.changes == {
            "name": ["O'Connor Associate", "Renamed in the admin"],
            "tools.search_kb.description": ["", "Search the handbook"],
        }

    def test_an_admin_knowledge_base_delete_is_an_event_of_its_bot(self, client, editor_api):
        from apps.bots.models import KnowledgeBase

        bot = create_bot(editor_api)
        kb = KnowledgeBase.objects.get(bot__agent_id=bot["agent_id"])
        client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
        assert client.post("/console/project/", {"project": "team"}).status_code == 302
        start = last_id()
        response = client.post(f"/admin/bots/knowledgebase/{kb.pk}/delete/", {"post": "yes"})
        assert response.status_code == 302

        event = one_event(start)
        assert (event.action, event.object_id) == ("update", bot["agent_id"])
        assert event.changes["knowledge_bases.Handbook"][1] is None
        assert [d["title"] for d in event.changes["knowledge_bases.Handbook"][0]["documents"]] == ["PTO", "Expenses"]
        assert not KnowledgeBase.objects.filter(pk=kb.pk).exists()
