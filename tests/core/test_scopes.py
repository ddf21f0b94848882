"""API key scopes (issue 12, item 4). Each attack an ordinary key could make before scopes comes
first, then the scope map, sessions, anonymous access, the migration, the command, the admin, and
the walker that keeps every API view declaring its scopes."""

import importlib
import uuid

import pytest
from django.apps import apps as django_apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient
from rest_framework.views import APIView

from apps.bots.models import Bot
from apps.core.models import ALL_SCOPES, ApiKey, hash_api_key
from apps.core.services import api_key_create
from apps.rubrics.models import RubricVersion
from apps.runs.models import EvaluationResult, EvaluationRun
from apps.testsets.models import TestSet
from tests.bots.factories import BotFactory
from tests.rubrics.factories import RubricFactory, rubric_body
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory

pytestmark = pytest.mark.django_db

AGENTIC = "/api/v1/metrics"


def keyed_client(scopes, *, username="scoped-user", staff=False) -> APIClient:
    _key, raw = api_key_create(username=username, staff=staff, scopes=scopes)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    client.raw_key = raw
    return client


def lacks(response, scope: str) -> bool:
    return response.status_code == 403 and response.json() == {"detail": f"This API key lacks the '{scope}' scope."}


def running_run() -> EvaluationRun:
    run = EvaluationRunFactory()
    EvaluationRun.objects.filter(pk=run.pk).update(status=EvaluationRun.Status.RUNNING)
    # One item in flight with a fresh heartbeat: without it the reaper (which runs whenever a running
    # run is read) would rightly complete a run that has nothing left to do before it is cancelled.
    result = EvaluationResultFactory(run=run, position=0, criteria_scores=[])
    EvaluationResult.objects.filter(pk=result.pk).update(state="running", heartbeat_at=timezone.now())
    return run


@pytest.fixture
def bot():
    return BotFactory(tool_names=["search_kb"])


@pytest.fixture
def rubric(bot):
    return RubricFactory(bot=bot)


# --- the attacks, with a key made with the defaults -------------------------------------------------


def test_default_key_cannot_empty_a_rubric(default_key_api, rubric):
    url = f"/api/v1/rubrics/{rubric.rubric_id}"
    response = default_key_api.put(
        url, {**rubric_body(rubric.bot.agent_id), "rules": []}, format="json", HTTP_IF_MATCH='"v1"'
    )
    assert lacks(response, "configure")
    # A PUT publishes a version: a refused one must leave exactly the version the rubric had.
    assert RubricVersion.objects.count() == 1
    assert len(default_key_api.get(url).json()["rules"]) == 2


def test_default_key_cannot_create_a_bot(default_key_api):
    response = default_key_api.post(
        "/api/v1/bots", {"name": "exfiltrator", "adapter": "http", "endpoint_url": "http://127.0.0.1:9/"}, format="json"
    )
    assert lacks(response, "configure")
    assert not Bot.objects.exists()


@pytest.mark.parametrize(
    "method,path",
    [
        ("post", "/api/v1/rubrics"),
        ("post", "/api/v1/test-sets"),
        ("post", "/api/v1/test-sets/import"),
        ("put", "/api/v1/test-sets/{uuid}"),
        ("post", "/api/v1/test-sets/{uuid}/import"),
        ("post", "/api/v1/datasets"),
        ("put", "/api/v1/datasets/{uuid}"),
        ("put", "/api/v1/bots/{agent_id}"),
    ],
)
def test_default_key_cannot_configure(default_key_api, bot, method, path):
    url = path.format(uuid=uuid.uuid4(), agent_id=bot.agent_id)
    # Refused before the body is read or the object looked up: no 404/422 leaks what exists.
    assert lacks(getattr(default_key_api, method)(url, {}, format="json"), "configure")
    assert not TestSet.objects.exists()


def test_default_key_may_cancel_a_run(default_key_api):
    """Starting and cancelling runs is evaluation work, which a new key is meant to do: its own runs
    (another user's run needs the admin scope, tests/runs/test_cancel_owner.py)."""
    run = running_run()
    EvaluationRun.objects.filter(pk=run.pk).update(created_by=get_user_model().objects.get(username="default-key-user"))
    response = default_key_api.post(f"/api/v1/runs/{run.run_id}/cancel")
    assert response.status_code == 200, response.json()
    run.refresh_from_db()
    assert run.status == EvaluationRun.Status.CANCELLED


@pytest.mark.parametrize(
    "path",
    ["/api/v1/bots/{agent_id}", "/api/v1/rubrics/{rubric_id}", "/api/v1/metrics/trace/s1", "/api/v1/metrics/clear"],
)
@pytest.mark.parametrize("client_fixture", ["default_key_api", "api"])
def test_deleting_needs_admin_even_with_configure(request, client_fixture, bot, rubric, path):
    client = request.getfixturevalue(client_fixture)
    response = client.delete(path.format(agent_id=bot.agent_id, rubric_id=rubric.rubric_id))
    assert lacks(response, "admin")
    assert Bot.objects.filter(pk=bot.pk).exists()


def test_a_non_staff_key_never_holds_admin_even_if_stored(api):
    # Scopes written around the service (a raw UPDATE, an old backup) are still capped by the owner.
    ApiKey.objects.filter(key_hash=hash_api_key(api.raw_key)).update(scopes=list(ALL_SCOPES))
    assert lacks(api.delete(f"{AGENTIC}/clear"), "admin")


def test_demoting_a_staff_user_takes_admin_from_their_keys(staff_api, bot):
    user = get_user_model().objects.get(username="staff-user")
    user.is_staff = False
    user.save()
    assert lacks(staff_api.delete(f"/api/v1/bots/{bot.agent_id}"), "admin")


def test_staff_key_may_delete(staff_api, bot):
    assert staff_api.delete(f"/api/v1/bots/{bot.agent_id}").status_code == 204


# --- each scope opens its endpoints and only those ------------------------------------------------

EVALUATE_CALLS = [
    ("post", f"{AGENTIC}/evaluate/session"),
    ("post", f"{AGENTIC}/evaluate/manual"),
    ("post", f"{AGENTIC}/evaluate/batch"),
    ("post", "/trace"),
    ("post", "/api/v1/trace"),
    ("post", "/api/v1/metrics-query"),
    ("post", "/api/v1/runs"),
    ("post", f"/api/v1/runs/{uuid.UUID(int=7)}/cancel"),
]
INGEST_CALLS = [
    ("post", f"{AGENTIC}/traces"),
    ("post", f"{AGENTIC}/traces/batch"),
    ("post", f"{AGENTIC}/traces/s1/intent"),
    ("post", f"{AGENTIC}/traces/s1/tool-calls"),
    ("post", f"{AGENTIC}/traces/s1/complete"),
]
READ_CALLS = [
    ("get", "/api/v1/bots"),
    ("get", "/api/v1/rubrics"),
    ("get", "/api/v1/test-sets"),
    ("get", "/api/v1/datasets"),
    ("get", "/api/v1/runs"),
    ("get", f"{AGENTIC}/summary"),
    ("get", f"{AGENTIC}/history"),
    ("get", "/api/v1/trace/history"),
    ("get", f"{AGENTIC}/trace/s1"),
]


@pytest.mark.parametrize("method,path", EVALUATE_CALLS)
def test_evaluation_needs_evaluate(method, path):
    refused = keyed_client(["read", "ingest", "configure"], username="no-evaluate")
    assert lacks(getattr(refused, method)(path, {}, format="json"), "evaluate")
    allowed = keyed_client(["evaluate"], username="evaluate-only")
    assert getattr(allowed, method)(path, {}, format="json").status_code not in (401, 403)


@pytest.mark.parametrize("method,path", INGEST_CALLS)
def test_ingestion_needs_ingest(method, path):
    refused = keyed_client(["read", "evaluate", "configure"], username="no-ingest")
    assert lacks(getattr(refused, method)(path, {}, format="json"), "ingest")
    allowed = keyed_client(["ingest"], username="ingest-only")
    assert getattr(allowed, method)(path, {}, format="json").status_code not in (401, 403)


@pytest.mark.parametrize("method,path", READ_CALLS)
def test_reading_needs_read(method, path):
    refused = keyed_client(["ingest", "evaluate"], username="write-only")
    assert lacks(getattr(refused, method)(path), "read")
    allowed = keyed_client(["read"], username="read-only")
    assert getattr(allowed, method)(path).status_code not in (401, 403)


def test_configure_key_may_publish_a_rubric_version(api, rubric):
    response = api.put(
        f"/api/v1/rubrics/{rubric.rubric_id}",
        {**rubric_body(rubric.bot.agent_id), "rules": []},
        format="json",
        HTTP_IF_MATCH='"v1"',
    )
    assert response.status_code == 200 and response.json()["version"] == 2


def test_a_method_the_view_lacks_is_still_405(default_key_api):
    assert default_key_api.patch("/api/v1/bots", {}, format="json").status_code == 405


def test_no_key_is_still_401(anon_api):
    response = anon_api.post("/api/v1/bots", {}, format="json")
    assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer"


# --- anonymous access and sessions ----------------------------------------------------------------


def test_anonymous_access_keeps_non_destructive_use_only(anon_api, allow_anonymous, bot, rubric):
    assert anon_api.get("/api/v1/bots").status_code == 200
    assert (
        anon_api.post(
            f"{AGENTIC}/traces", {"session_id": "s1", "user_query": "q", "agent_name": "a"}, format="json"
        ).status_code
        == 201
    )
    assert anon_api.post("/api/v1/runs", {}, format="json").status_code == 422
    # Configuration and destruction ask for a key rather than naming a scope nobody anonymous can hold.
    assert anon_api.post("/api/v1/bots", {}, format="json").status_code == 401
    assert anon_api.put(f"/api/v1/rubrics/{rubric.rubric_id}", {}, format="json").status_code == 401
    assert anon_api.delete(f"/api/v1/bots/{bot.agent_id}").status_code == 401


def session_client(*, staff: bool) -> APIClient:
    user = get_user_model().objects.create_user("staff-browser" if staff else "browser", password="pw", is_staff=staff)
    client = APIClient()
    client.force_login(user)
    return client


def test_non_staff_session_reads_only(bot):
    """Issue 15: readers log in to the console and read; launching, cancelling and configuring are
    staff's (integrations that write use an API key)."""
    client = session_client(staff=False)
    assert client.get("/api/v1/bots").status_code == 200
    run = running_run()
    refused_cancel = client.post(f"/api/v1/runs/{run.run_id}/cancel")
    assert refused_cancel.status_code == 403
    assert refused_cancel.json() == {"detail": "This account lacks the 'evaluate' scope."}
    refused = client.post("/api/v1/bots", {}, format="json")
    assert refused.status_code == 403
    assert refused.json() == {"detail": "This account lacks the 'configure' scope."}
    assert client.delete(f"/api/v1/bots/{bot.agent_id}").json() == {"detail": "This account lacks the 'admin' scope."}


def test_staff_session_has_every_scope(bot):
    client = session_client(staff=True)
    assert client.post("/api/v1/bots", {}, format="json").status_code == 422  # past the permission, to validation
    assert client.delete(f"/api/v1/bots/{bot.agent_id}").status_code == 204


# --- the migration ----------------------------------------------------------------------------------


def test_migration_grants_existing_keys_what_their_owners_staff_flag_implied():
    migration = importlib.import_module("apps.core.migrations.0002_apikey_scopes")
    staff_key, _ = api_key_create(username="old-staff", staff=True)
    other_key, _ = api_key_create(username="old-user")
    ApiKey.objects.update(scopes=[])  # as the AddField leaves rows before the data migration
    migration.grant_scopes_by_owner(django_apps, None)
    staff_key.refresh_from_db()
    other_key.refresh_from_db()
    assert staff_key.scopes == ["read", "ingest", "evaluate", "configure", "admin"]
    # Non-staff keys lose configure on purpose: that is the hole the scopes close.
    assert other_key.scopes == ["read", "ingest", "evaluate"]


# --- create_api_key ----------------------------------------------------------------------------------


def created_key(capsys) -> ApiKey:
    return ApiKey.objects.select_related("user").get(key_hash=hash_api_key(capsys.readouterr().out.strip()))


def test_command_default_scopes(capsys):
    call_command("create_api_key", "--user", "ci-bot")
    assert created_key(capsys).scopes == ["read", "ingest", "evaluate"]


def test_command_staff_gets_every_scope(capsys):
    call_command("create_api_key", "--user", "alice", "--staff")
    key = created_key(capsys)
    assert key.user.is_staff and key.scopes == list(ALL_SCOPES)


def test_command_parses_scopes(capsys):
    call_command("create_api_key", "--user", "configurer", "--scopes", " configure, read,read")
    assert created_key(capsys).scopes == ["read", "configure"]


def test_command_staff_with_narrower_scopes(capsys):
    call_command("create_api_key", "--user", "deleter", "--staff", "--scopes", "read,admin")
    assert created_key(capsys).scopes == ["read", "admin"]


@pytest.mark.parametrize(
    "scopes,message",
    [
        ("read,write", "Unknown scope(s): write"),
        ("", "at least one scope"),
        ("read,admin", "Only a staff user's key may hold admin"),
    ],
)
def test_command_refuses_bad_scopes_and_creates_nothing(scopes, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        call_command("create_api_key", "--user", "mallory", "--scopes", scopes)
    # The user would be created by the same transaction; a refusal leaves no trace of either.
    assert not ApiKey.objects.exists()
    assert not get_user_model().objects.filter(username="mallory").exists()


# --- the admin ----------------------------------------------------------------------------------------


def test_admin_shows_and_edits_scopes_with_the_same_rule(admin_client):
    key, _ = api_key_create(username="ci-bot")
    url = f"/admin/core/apikey/{key.pk}/change/"
    assert "read, ingest, evaluate" in admin_client.get("/admin/core/apikey/").content.decode()
    refused = admin_client.post(url, {"name": "ci", "scopes": ["read", "admin"]})
    assert refused.status_code == 200 and "Only a staff user" in refused.content.decode()
    key.refresh_from_db()
    assert key.scopes == ["read", "ingest", "evaluate"]
    saved = admin_client.post(url, {"name": "ci", "scopes": ["configure", "read"]})
    assert saved.status_code == 302
    key.refresh_from_db()
    assert key.scopes == ["read", "configure"] and key.name == "ci"


# --- every API view declares its scopes ------------------------------------------------------------

HANDLED = ("get", "post", "put", "patch", "delete")


def api_views(patterns=None, prefix=""):
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from api_views(entry.url_patterns, route)
        elif isinstance(entry, URLPattern) and (route.startswith("api/") or route == "trace"):
            yield route, entry.callback


def test_every_api_view_declares_a_scope_per_method():
    checked, problems = 0, []
    for route, callback in api_views():
        view = getattr(callback, "view_class", None) or getattr(callback, "cls", None)
        if view is None or not issubclass(view, APIView):
            assert callback.__name__ == "api_not_found", f"{route}: a non-DRF view under /api/"
            continue
        declared = getattr(view, "required_scopes", None)
        implemented = {m.upper() for m in HANDLED if hasattr(view, m)}
        if declared is None:
            problems.append(f"{route} ({view.__name__}) declares no required_scopes")
            continue
        if set(declared) != implemented:
            problems.append(
                f"{route} ({view.__name__}) declares {sorted(declared)} but implements {sorted(implemented)}"
            )
        if not set(declared.values()) <= set(ALL_SCOPES):
            problems.append(f"{route} ({view.__name__}) names an unknown scope: {declared}")
        checked += 1
    assert not problems, "\n".join(problems)
    assert checked >= 40, "the walker stopped finding the API's views"


def test_the_walker_catches_an_undeclared_view(settings):
    class Undeclared(APIView):
        def get(self, request):
            return None

    from django.urls import path

    module = type("urls", (), {"urlpatterns": [path("api/v1/undeclared", Undeclared.as_view())]})
    settings.ROOT_URLCONF = module
    with pytest.raises(AssertionError, match="undeclared .Undeclared. declares no required_scopes"):
        test_every_api_view_declares_a_scope_per_method()
