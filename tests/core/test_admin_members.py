"""The admin for project members who are not staff (single sign-on never makes anyone staff): they
enter it (apps.core.admin_site) and work on the project-scoped pages as their role in the session's
project allows (apps.core.admin.scoping.ProjectRoleBackend), without any Django permission granted
by hand, and see no other page. Before, the admin refused everyone without the staff flag, so an
SSO editor could not edit a rubric there, whatever the roles table said."""

import pytest
from django.test import Client

from apps.bots.models import Bot
from apps.core.models import ProjectRole
from apps.queues.models import ReviewQueue
from apps.rubrics.models import RubricVersion
from tests.admin_forms import admin_form_data
from tests.bots.factories import BotFactory
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory
from tests.queues.factories import ReviewQueueFactory
from tests.rubrics.factories import RubricFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def team():
    project = ProjectFactory(slug="team", name="Team")
    return {
        "project": project,
        "bot": BotFactory(project=project, name="TeamBot"),
        "queue": ReviewQueueFactory(project=project, name="team triage"),
    }


@pytest.fixture
def other():
    project = ProjectFactory(slug="other", name="Other")
    return {"project": project, "bot": BotFactory(project=project, name="OtherBot")}


def member(project, role, username=None, **user_fields) -> Client:
    user = UserFactory(username=username or f"{project.slug}-{role}", **user_fields)
    MembershipFactory(project=project, user=user, role=role)
    client = Client()
    client.force_login(user)
    client.user = user
    return client


def bot_url(bot, action="change"):
    return f"/admin/bots/bot/{bot.pk}/{action}/"


def test_an_editor_who_is_not_staff_edits_the_project_s_bots_but_deletes_nothing(team, other):
    editor = member(team["project"], ProjectRole.EDITOR)
    assert not editor.user.is_staff and not editor.user.user_permissions.exists()
    index = editor.get("/admin/")
    assert index.status_code == 200
    assert "/admin/bots/bot/" in index.content.decode()
    listed = editor.get("/admin/bots/bot/").content.decode()
    assert "TeamBot" in listed and "OtherBot" not in listed
    # Another project's bot: as one that does not exist (the admin sends such a request back).
    assert editor.get(bot_url(other["bot"])).status_code == 302
    data = admin_form_data(editor.get(bot_url(team["bot"])))
    saved = editor.post(bot_url(team["bot"]), {**data, "name": "TeamBot, renamed"})
    assert saved.status_code == 302, saved.context["errors"] if saved.context else saved
    assert Bot.objects.get(pk=team["bot"].pk).name == "TeamBot, renamed"
    assert editor.get(bot_url(team["bot"], "delete")).status_code == 403
    assert editor.post(bot_url(team["bot"], "delete"), {"post": "yes"}).status_code == 403
    assert Bot.objects.filter(pk=team["bot"].pk).exists()


def test_an_editor_who_is_not_staff_edits_a_rubric_s_rules_inline(team):
    """A rubric's rules are an inline of its page: whoever may change the rubric adds, changes and
    deletes them (deleting the rubric itself stays an admin's)."""
    rubric = RubricFactory(bot=team["bot"], name="Team rubric")
    editor = member(team["project"], ProjectRole.EDITOR)
    url = f"/admin/rubrics/rubric/{rubric.pk}/change/"
    data = admin_form_data(editor.get(url))
    data["rules-0-DELETE"] = "on"
    data["changelog"] = "one rule fewer"
    saved = editor.post(url, data)
    assert saved.status_code == 302, saved.context["errors"] if saved.context else saved
    assert len(RubricVersion.objects.get(rubric=rubric, version=2).snapshot["rules"]) == 1
    assert editor.get(f"/admin/rubrics/rubric/{rubric.pk}/delete/").status_code == 403


def test_a_viewer_reads_and_changes_nothing(team):
    viewer = member(team["project"], ProjectRole.VIEWER)
    assert viewer.get("/admin/bots/bot/").status_code == 200
    page = viewer.get(bot_url(team["bot"]))
    assert page.status_code == 200 and 'name="_save"' not in page.content.decode()
    assert viewer.post(bot_url(team["bot"]), {"name": "taken over"}).status_code == 403
    assert viewer.get("/admin/bots/bot/add/").status_code == 403
    assert Bot.objects.get(pk=team["bot"].pk).name == "TeamBot"


def test_a_reviewer_edits_review_queues_not_bots(team):
    reviewer = member(team["project"], ProjectRole.REVIEWER)
    queue_url = f"/admin/queues/reviewqueue/{team['queue'].pk}/change/"
    data = admin_form_data(reviewer.get(queue_url))
    assert reviewer.post(queue_url, {**data, "name": "renamed by the reviewer"}).status_code == 302
    assert ReviewQueue.objects.get(pk=team["queue"].pk).name == "renamed by the reviewer"
    assert reviewer.post(bot_url(team["bot"]), {"name": "taken over"}).status_code == 403
    assert Bot.objects.get(pk=team["bot"].pk).name == "TeamBot"


def test_the_role_of_the_session_s_project_decides(team, other):
    """Editor of one project, viewer of another: while working in the other, its bots are read-only
    (the Django permissions the roles give are the union; each page narrows them to the session's)."""
    client = member(other["project"], ProjectRole.VIEWER, username="two-hats")
    MembershipFactory(project=team["project"], user=client.user, role=ProjectRole.EDITOR)
    session = client.session
    session["evalsite_project"] = "other"
    session.save()
    assert "OtherBot" in client.get("/admin/bots/bot/").content.decode()
    assert client.post(bot_url(other["bot"]), {"name": "taken over"}).status_code == 403
    assert Bot.objects.get(pk=other["bot"].pk).name == "OtherBot"


def test_a_member_sees_no_page_that_is_not_scoped_to_the_project(team):
    """Keys, members, users and the like list every project's rows, or none of a member's
    business: they keep needing a permission a superuser grants. Scores name their subject by kind
    and id only, so their list is the superusers'."""
    admin_member = member(team["project"], ProjectRole.ADMIN)
    index = admin_member.get("/admin/").content.decode()
    for path in ["/admin/core/apikey/", "/admin/core/project/", "/admin/auth/user/", "/admin/scores/score/"]:
        assert path not in index, path
        assert admin_member.get(path).status_code == 403, path
    # The project's admins read the project's audit trail here too, as on the console's Audit page.
    assert admin_member.get("/admin/core/auditevent/").status_code == 200


def test_traces_evaluations_and_rules_are_listed_for_the_session_s_project_only(team):
    """Their pages are project-scoped like the bots': a member reads the project's (a viewer too), and
    a staff user holding every model permission, a member of one project, never sees another's rows
    or opens one by id."""
    from django.contrib.auth.models import Permission

    from apps.agentic.models import EvaluationRule
    from tests.agentic.factories import AgentEvaluationFactory
    from tests.rag.factories import TraceEvaluationFactory

    elsewhere = ProjectFactory(slug="elsewhere")
    rows = {}
    for project, tag in ((team["project"], "team"), (elsewhere, "elsewhere")):
        trace = AgentTraceFactory(project=project, session_id=f"{tag}-session")
        rows[tag] = {
            "trace": trace,
            "evaluation": AgentEvaluationFactory(project=project, trace=trace, session_id=f"{tag}-session"),
            "rag": TraceEvaluationFactory(project=project),
            "rule": EvaluationRule.objects.create(project=project, name=f"{tag}-rule", judge="heuristic"),
        }
    staff = member(team["project"], ProjectRole.VIEWER, username="staff-viewer", is_staff=True)
    staff.user.user_permissions.set(Permission.objects.all())
    for client in (staff, member(team["project"], ProjectRole.VIEWER)):
        for path, key in [
            ("/admin/traces/agenttrace/", "trace"),
            ("/admin/agentic/agentevaluation/", "evaluation"),
            ("/admin/rag/traceevaluation/", "rag"),
            ("/admin/agentic/evaluationrule/", "rule"),
        ]:
            listed = client.get(path)
            assert listed.status_code == 200, path
            page = listed.content.decode()
            # Each listed row links to its change page.
            ours, theirs = (f"{path}{rows[tag][key].pk}/change/" for tag in ("team", "elsewhere"))
            assert ours in page and theirs not in page, path
            foreign = client.get(theirs)
            assert foreign.status_code == 302 and foreign["Location"] == "/admin/", path


def test_no_member_no_admin(team):
    stranger = Client()
    stranger.force_login(UserFactory(username="stranger"))
    response = stranger.get("/admin/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert stranger.get("/admin/bots/bot/").status_code == 302


def test_the_admin_password_form_lets_members_in_and_no_one_else(team):
    UserFactory(username="member-by-password", password="pw-member-1")
    MembershipFactory(project=team["project"], user__username="member-by-password", role=ProjectRole.EDITOR)
    UserFactory(username="nobody-here", password="pw-nobody-1")
    client = Client()
    ok = client.post("/admin/login/", {"username": "member-by-password", "password": "pw-member-1", "next": "/admin/"})
    assert ok.status_code == 302 and ok["Location"] == "/admin/"
    refused = Client().post("/admin/login/", {"username": "nobody-here", "password": "pw-nobody-1"})
    assert refused.status_code == 200 and "_auth_user_id" not in Client().session


def test_the_console_links_to_the_admin_for_members_only(team):
    editor = member(team["project"], ProjectRole.EDITOR)
    assert 'href="/admin/"' in editor.get("/console/").content.decode()
    stranger = Client()
    stranger.force_login(UserFactory(username="placed-nowhere"))
    assert 'href="/admin/"' not in stranger.get("/console/").content.decode()


def test_the_console_offers_change_password_only_to_someone_who_has_one(team):
    """A person who signs in by single sign-on has no password here: the link would lead to a form
    asking for an old password they never had."""
    with_password = member(team["project"], ProjectRole.EDITOR, username="has-password")
    assert "/admin/password_change/" in with_password.get("/console/").content.decode()

    sso = member(team["project"], ProjectRole.EDITOR, username="sso-person")
    sso.user.set_unusable_password()
    sso.user.save()
    sso.force_login(sso.user)
    page = sso.get("/console/").content.decode()
    assert "/admin/password_change/" not in page
    assert "/admin/" in page  # the admin link itself stays: their role admits them
