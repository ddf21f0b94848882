"""The trail itself: append-only whoever asks, and read only by a project's admins, only their
project's events (the API, the console page and the admin)."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator

from apps.core.audit.context import Actor
from apps.core.audit.services import audit_record
from apps.core.models import AuditEvent, AuditTrailImmutable, ProjectRole
from tests.audit.conftest import key_actor, member
from tests.core.factories import UserFactory

pytestmark = pytest.mark.django_db
TABLE = AuditEvent._meta.db_table


def event_in(project, **fields):
    fields.setdefault("action", "update")
    fields.setdefault("object_type", "bot")
    return audit_record(project=project, **fields)


class TestAppendOnly:
    def test_the_orm_refuses_to_change_or_delete_an_event(self, team):
        event = event_in(team)
        with pytest.raises(AuditTrailImmutable):
            AuditEvent.objects.filter(pk=event.pk).update(action="create")
        with pytest.raises(AuditTrailImmutable):
            AuditEvent.objects.filter(pk=event.pk).delete()
        event.action = "create"
        with pytest.raises(AuditTrailImmutable):
            event.save()
        with pytest.raises(AuditTrailImmutable):
            event.delete()
        assert AuditEvent.objects.get(pk=event.pk).action == "update"

    def test_the_database_refuses_an_update_by_raw_sql(self, team):
        event = event_in(team, changes={"name": ["a", "b"]})
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"UPDATE {TABLE} SET changes = %s WHERE id = %s", ['{"name": ["a", "c"]}', event.pk])
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
            # Nulling a reference is allowed only when it comes alone: not as cover for a rewrite.
            cursor.execute(f"UPDATE {TABLE} SET project_id = NULL, actor = 'nobody' WHERE id = %s", [event.pk])
        assert AuditEvent.objects.get(pk=event.pk).changes == {"name": ["a", "b"]}

    @pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite's flush needs DELETE (migration core.0007)")
    def test_the_database_refuses_a_delete_by_raw_sql(self, team):
        event = event_in(team)
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"DELETE FROM {TABLE} WHERE id = %s", [event.pk])
        assert AuditEvent.objects.filter(pk=event.pk).exists()


class TestApi:
    def test_an_admin_key_reads_its_projects_events_newest_first(self, team, other, admin_api):
        older = event_in(team, object_id="b1")
        newer = event_in(team, action="delete", object_id="b1")
        event_in(other, object_id="theirs")
        response = admin_api.get("/api/v1/audit")
        assert response.status_code == 200, response.content
        body = response.json()
        # The key's own creation (in team) is in the trail too.
        ids = [e["id"] for e in body["events"]]
        assert ids[:2] == [newer.pk, older.pk]
        assert all(e["project"] == "team" for e in body["events"])
        assert "theirs" not in {e["object_id"] for e in body["events"]}
        assert set(body["events"][0]) == {
            "id",
            "created_at",
            "project",
            "actor",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "changes",
        }

    def test_an_admin_of_another_project_sees_nothing_of_this_one(self, team, other, admin_api, other_admin_api):
        admin_api.post("/api/v1/queues", {"name": "team-only", "kind": "run_result"}, format="json")
        event_in(team, object_id="secret-bot", object_repr="Team's bot")
        body = other_admin_api.get("/api/v1/audit?limit=500").json()
        assert all(e["project"] == "other" for e in body["events"])
        assert "secret-bot" not in str(body) and "Team's bot" not in str(body)
        assert other_admin_api.get("/api/v1/audit?object_id=secret-bot").json()["events"] == []

    def test_filters_and_pages(self, team, admin_api):
        for n in range(3):
            event_in(team, object_id=f"b{n}", actor=Actor(label="ci-bot"))
        event_in(team, action="delete", object_type="rubric", object_id="r1")
        get = lambda query: admin_api.get(f"/api/v1/audit?{query}").json()  # noqa: E731
        assert [e["object_id"] for e in get("action=delete")["events"]] == ["r1"]
        assert [e["object_id"] for e in get("object_type=bot&object_id=b1")["events"]] == ["b1"]
        assert [e["object_id"] for e in get("actor=ci-bot")["events"]] == ["b2", "b1", "b0"]
        page = get("object_type=bot&limit=2")
        assert (page["count"], page["has_more"]) == (2, True)
        rest = get("object_type=bot&limit=2&offset=2")
        assert (rest["count"], rest["has_more"]) == (1, False)
        future = (timezone.now() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
        assert get(f"since={future}")["events"] == []
        assert get(f"until={future}&action=delete")["count"] == 1

    def test_the_actor_filter_finds_a_key(self, team, admin_api, editor_api):
        bot = editor_api.post("/api/v1/bots", {"name": "By eddie's key"}, format="json")
        assert bot.status_code == 201, bot.content
        events = admin_api.get(f"/api/v1/audit?actor={key_actor(editor_api)}").json()["events"]
        assert [(e["action"], e["object_id"]) for e in events] == [("create", bot.json()["agent_id"])]
        assert admin_api.get("/api/v1/audit?actor=nobody").json()["events"] == []

    def test_bad_parameters_are_422(self, admin_api):
        response = admin_api.get("/api/v1/audit?limit=0")
        assert response.status_code == 422
        assert admin_api.get("/api/v1/audit?since=yesterday").status_code == 422

    def test_a_non_admin_key_is_refused(self, editor_api):
        response = editor_api.get("/api/v1/audit")
        assert response.status_code == 403
        assert response.json() == {"detail": "This API key lacks the 'admin' scope."}

    def test_a_session_admin_reads_and_a_session_editor_is_refused(self, client, team):
        client.force_login(member(team, "ann", ProjectRole.ADMIN))
        event_in(team, object_id="seen")
        assert "seen" in {e["object_id"] for e in client.get("/api/v1/audit").json()["events"]}
        client.force_login(member(team, "ed", ProjectRole.EDITOR))
        assert client.get("/api/v1/audit").status_code == 403

    def test_no_credentials_is_401(self, client, db):
        assert client.get("/api/v1/audit").status_code == 401

    def test_documented_in_openapi(self, db):
        schema = SchemaGenerator().get_schema(request=None, public=True)
        operation = schema["paths"]["/api/v1/audit"]["get"]
        names = {p["name"] for p in operation["parameters"]}
        assert {"limit", "offset", "action", "object_type", "object_id", "actor", "since", "until"} <= names
        assert "AuditPageOut" in str(operation["responses"]["200"])


class TestConsolePage:
    def test_an_admin_sees_the_projects_events_and_the_nav_link(self, client, team, other):
        client.force_login(member(team, "ann", ProjectRole.ADMIN))
        event_in(team, object_id="team-bot", object_repr="Team bot", changes={"name": ["Old", "New"]})
        event_in(other, object_id="other-bot", object_repr="Other bot", action="purge")
        page = client.get("/console/audit/")
        assert page.status_code == 200
        html = page.content.decode()
        assert "Team bot" in html and "Old" in html and "New" in html
        assert "Other bot" not in html and "purge" not in html  # not even as a filter choice
        assert 'href="/console/audit/"' in client.get("/console/").content.decode()

    def test_an_admin_of_another_project_sees_nothing_of_this_one(self, client, team, other):
        event_in(team, object_repr="Team bot")
        client.force_login(member(other, "olga", ProjectRole.ADMIN))
        html = client.get("/console/audit/").content.decode()
        # Olga's own arrival is the one event of her project.
        assert "Team bot" not in html and "add_member" in html and "olga in Other" in html

    def test_filters_and_pages(self, client, team):
        client.force_login(member(team, "ann", ProjectRole.ADMIN))
        for n in range(55):
            event_in(team, object_repr=f"bot-{n:02d}")
        event_in(team, action="delete", object_type="rubric", object_repr="the-rubric")
        first = client.get("/console/audit/?object_type=bot").content.decode()
        assert "bot-54" in first and "bot-04" not in first and "the-rubric" not in first and "Page 1 of 2" in first
        second = client.get("/console/audit/?object_type=bot&page=2").content.decode()
        assert "bot-04" in second and "bot-54" not in second
        only = client.get("/console/audit/?action=delete").content.decode()
        assert "the-rubric" in only and "bot-54" not in only

    def test_a_non_admin_is_refused_and_has_no_link(self, client, team):
        client.force_login(member(team, "ed", ProjectRole.EDITOR))
        assert client.get("/console/audit/").status_code == 403
        assert 'href="/console/audit/"' not in client.get("/console/").content.decode()


class TestAdmin:
    def test_read_only_for_a_superuser(self, client, team):
        event = event_in(team, object_repr="Team bot")
        client.force_login(UserFactory(username="root", is_staff=True, is_superuser=True))
        assert "Team bot" in client.get("/admin/core/auditevent/").content.decode()
        assert client.get(f"/admin/core/auditevent/{event.pk}/change/").status_code == 200
        assert client.post(f"/admin/core/auditevent/{event.pk}/change/", {"action": "x"}).status_code == 403
        assert client.get("/admin/core/auditevent/add/").status_code == 403
        assert client.post(f"/admin/core/auditevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
        assert AuditEvent.objects.get(pk=event.pk).action == "update"

    def test_a_staff_admin_of_another_project_sees_nothing_of_this_one(self, client, team, other):
        event_in(team, object_repr="Team bot")
        event_in(other, object_repr="Other bot")
        olga = member(other, "olga", ProjectRole.ADMIN)
        olga.is_staff = True
        olga.save()
        client.force_login(olga)
        html = client.get("/admin/core/auditevent/").content.decode()
        assert "Other bot" in html and "Team bot" not in html


def test_the_page_shows_a_change_to_a_field_named_items(client, team):
    # A test set's content has "items": the template must not take it for dict.items.
    client.force_login(member(team, "ann", ProjectRole.ADMIN))
    event_in(team, object_type="test_set", changes={"items": [[{"name": "PTO"}], [{"name": "PTO v2"}]]})
    html = client.get("/console/audit/").content.decode()
    assert "PTO v2" in html and "&quot;name&quot;" in html
