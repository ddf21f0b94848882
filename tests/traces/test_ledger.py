"""The ingestion ledger (issue 21, item 8): every item that comes through a door is accounted for,
received = stored + duplicate + rejected + dropped, with the reasons of what was refused.

Each test sends what an agent (or an attacker) would send, then reads the ledger back through the
same selector the API and the console use, and checks it against the rows that were stored."""

import json
import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connections
from django.db.models import Sum
from django.utils import timezone

from apps.core.models import Project, ProjectRole
from apps.traces import ledger as ledger_module
from apps.traces import services
from apps.traces.ingestion import batch as batch_door
from apps.traces.ledger import ingestion_ledger_compact, ingestion_record
from apps.traces.ledger_selectors import ingestion_ledger, ingestion_ledger_days
from apps.traces.models import AgentTrace, IngestionEntry, ToolCall
from tests.core.factories import ApiKeyFactory, ProjectFactory, client_with_key, project_key_client
from tests.prometheus_text import sample

BASE = "/api/v1/metrics/traces"
LEDGER = "/api/v1/ingestion/ledger"
CALL = {"tool_name": "list_k8s_clusters", "tool_args": {"datacenter": "Delhi"}, "tool_result": [{"name": "prod-01"}]}


@pytest.fixture
def root_api(db):
    """A superuser's key of `default` with every scope: it reads `default`'s ledger (admin scope)."""
    return client_with_key(ApiKeyFactory(user__is_staff=True, user__is_superuser=True))


def post(api, path, body):
    return api.post(path, data=json.dumps(body), content_type="application/json")


def totals(source: str):
    """`default`'s ledger: the `api` fixture's key and the in-process services store there."""
    now = timezone.now()
    return ingestion_ledger(
        project=Project.objects.default(), since=now - timedelta(days=1), until=now + timedelta(seconds=1)
    )[source]


def start_body(session_id="s1", **extra):
    return {"session_id": session_id, "user_query": "List clusters in Delhi", "agent_name": "Agent", **extra}


def batch_item(session_id, **extra):
    return {
        "session_id": session_id,
        "user_query": "q",
        "agent_name": "Agent",
        "final_response": "done",
        "success": True,
        "tool_calls": [dict(CALL, call_id=f"{session_id}-1")],
        **extra,
    }


# --- REST: lifecycle records --------------------------------------------------------------------


@pytest.mark.django_db
def test_rest_lifecycle_balances_with_retries_and_every_kind_of_refusal(api):
    assert post(api, BASE, start_body()).status_code == 201  # stored
    assert post(api, BASE, start_body()).status_code == 200  # duplicate
    assert post(api, BASE, start_body(user_query="other")).status_code == 409  # rejected: conflict
    assert post(api, BASE, start_body("s\u0000x")).status_code == 422  # rejected: nul_character
    intent = {"intent": "list", "resource_type": "k8s", "operation": "list"}
    assert post(api, f"{BASE}/s1/intent", intent).status_code == 200  # stored
    assert post(api, f"{BASE}/s1/intent", intent).status_code == 200  # duplicate (same intent)
    assert post(api, f"{BASE}/nope/intent", intent).status_code == 404  # rejected: not_found
    assert post(api, f"{BASE}/s1/tool-calls", dict(CALL, call_id="c1")).status_code == 201  # stored
    assert post(api, f"{BASE}/s1/tool-calls", dict(CALL, call_id="c1")).status_code == 200  # duplicate
    # A list: two new calls and a retried one, three items.
    calls = [dict(CALL, call_id="c1"), dict(CALL, call_id="c2"), dict(CALL, call_id="c3")]
    assert post(api, f"{BASE}/s1/tool-calls", calls).status_code == 201  # 2 stored, 1 duplicate
    # Two calls, one with a number past 64 bits: the request is refused whole, both items rejected.
    bad = [dict(CALL, call_id="c4"), dict(CALL, call_id="c5", tool_args={"n": 10**20})]
    assert post(api, f"{BASE}/s1/tool-calls", bad).status_code == 422  # 2 rejected
    deep = {"a": None}
    for _ in range(100):
        deep = {"a": deep}
    assert post(api, f"{BASE}/s1/tool-calls", dict(CALL, tool_args=deep)).status_code == 422  # too_deep
    assert post(api, f"{BASE}/s1/tool-calls", dict(CALL, call_id="c1", tool_result="changed")).status_code == 409
    done = {"final_response": "prod-01", "success": True}
    assert post(api, f"{BASE}/s1/complete", done).status_code == 200  # stored
    assert post(api, f"{BASE}/s1/complete", done).status_code == 200  # duplicate
    assert post(api, f"{BASE}/s1/complete", {"final_response": "x", "success": False}).status_code == 409
    assert post(api, f"{BASE}/s1/tool-calls", dict(CALL, call_id="late")).status_code == 409  # finished trace
    assert post(api, f"{BASE}/s1/intent", {"intent": "other"}).status_code == 409  # finished trace
    assert api.post(f"{BASE}/s1/complete", data="{not json", content_type="application/json").status_code == 422

    rest = totals("rest")
    assert rest.balanced
    assert rest.stored == 1 + 1 + 1 + 2 + 1  # start, intent, c1, c2+c3, complete
    assert rest.duplicate == 1 + 1 + 1 + 1 + 1  # start, intent, c1, c1 in the list, complete
    assert rest.rejected == {
        "conflict": 1 + 1 + 1 + 1 + 1,
        "nul_character": 1,
        "not_found": 1,
        "integer_out_of_range": 2,
        "too_deep": 1,
        "invalid": 1,
    }
    assert rest.received == rest.stored + rest.duplicate + sum(rest.rejected.values())
    # What the ledger calls stored is what the tables hold.
    assert AgentTrace.objects.count() == 1 and ToolCall.objects.count() == 3


@pytest.mark.django_db
def test_rest_refusals_do_not_count_as_other_doors(api):
    post(api, f"{BASE}/missing/complete", {"final_response": "x", "success": True})
    assert totals("rest").rejected == {"not_found": 1}
    assert totals("batch").received == 0 and totals("otlp").received == 0


@pytest.mark.django_db
def test_in_process_lifecycle_is_counted_with_rest():
    services.trace_start(session_id="p1", user_query="q", agent_name="A")
    services.trace_tool_call_record(session_id="p1", tool_name="t", tool_args={}, tool_result=None)
    services.trace_complete(session_id="p1", final_response="ok", success=True)
    rest = totals("rest")
    assert (rest.received, rest.stored, rest.balanced) == (3, 3, True)


# --- batch: traces ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_batch_counts_each_trace_with_its_rejection_reason_and_retries_as_duplicates(api):
    first = {
        "traces": [
            batch_item("b1"),
            batch_item("b2"),
            batch_item("b3", user_query="has a \u0000 NUL"),  # nul_character
            batch_item("b1"),  # same as item 0: unchanged
            batch_item("b4", start_time="2026-01-02T00:00:00Z", end_time="2026-01-01T00:00:00Z"),  # invalid
            batch_item("b5", tool_calls=[dict(CALL, tool_args={"n": 1e20})]),  # integer_out_of_range
            "not an object",  # invalid
        ]
    }
    body = post(api, f"{BASE}/batch", first).json()
    assert (body["accepted_count"], body["rejected_count"]) == (3, 4)
    # The retry of the whole request: what was stored is unchanged, what was refused is refused again.
    body = post(api, f"{BASE}/batch", first).json()
    assert (body["accepted_count"], body["rejected_count"]) == (3, 4)
    # Same session, different content.
    post(api, f"{BASE}/batch", {"traces": [batch_item("b1", final_response="changed")]})
    # Refused whole at the edge: no traces at all, and a body that is not JSON.
    assert post(api, f"{BASE}/batch", {"traces": []}).status_code == 422
    assert api.post(f"{BASE}/batch", data="[", content_type="application/json").status_code == 422

    batch = totals("batch")
    assert batch.balanced
    assert batch.received == 7 + 7 + 1 + 1 + 1
    assert batch.stored == 2 == AgentTrace.objects.count()
    assert batch.duplicate == 1 + 3
    assert batch.rejected == {"nul_character": 2, "invalid": 4 + 2, "integer_out_of_range": 2, "conflict": 1}
    assert totals("rest").received == 0


@pytest.mark.django_db
def test_a_batch_that_is_rolled_back_leaves_no_ledger_entry(api, monkeypatch):
    def broken_insert(*args, **kwargs):
        raise RuntimeError("worker killed mid-batch")

    monkeypatch.setattr(batch_door, "tool_calls_insert", broken_insert)
    assert post(api, f"{BASE}/batch", {"traces": [batch_item("k1"), batch_item("k2")]}).status_code == 500
    # Nothing stored, and the ledger says so: the request's items are counted as refused by the
    # failure (recorded at the edge after the rollback), not as stored.
    assert AgentTrace.objects.count() == 0
    batch = totals("batch")
    assert (batch.received, batch.stored, batch.rejected) == (2, 0, {"internal_error": 2})


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_same_batch_from_8_threads_is_stored_once_and_counted_exactly(on_postgres):
    items = [
        (
            i,
            services.BatchTrace(
                session_id=f"race-{i}",
                user_query="q",
                agent_name="A",
                final_response="ok",
                success=True,
                canonical={"i": i},
            ),
        )
        for i in range(20)
    ]
    barrier = threading.Barrier(8)
    errors = []

    def worker():
        try:
            barrier.wait()
            services.traces_ingest_batch(items=items)
        except Exception as exc:  # asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    batch = totals("batch")
    assert (batch.received, batch.stored, batch.duplicate, batch.balanced) == (160, 20, 140, True)
    assert AgentTrace.objects.count() == 20


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_same_call_id_from_16_threads_is_one_stored_and_15_duplicates(on_postgres):
    services.trace_start(session_id="race", user_query="q", agent_name="agent")
    barrier = threading.Barrier(16)
    errors = []

    def worker():
        try:
            barrier.wait()
            services.trace_tool_call_record(
                session_id="race", tool_name="tool", tool_args={"a": 1}, tool_result=None, success=True, call_id="dup"
            )
        except Exception as exc:  # asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rest = totals("rest")
    # The start, then the 16 calls: a lost race's statement rolled back whole, its entry with it.
    assert (rest.received, rest.stored, rest.duplicate, rest.balanced) == (17, 2, 15, True)


# --- the API --------------------------------------------------------------------------------------


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.fixture
def entries(db):
    ingestion_record(
        project=None,
        source="otlp",
        received=10,
        stored=7,
        duplicate=1,
        rejected={"too_deep": 1},
        dropped={"orphan": 1},
        at=_at("2026-03-01T10:00:00"),
    )
    ingestion_record(project=None, source="otlp", received=5, stored=5, at=_at("2026-03-02T10:00:00"))
    ingestion_record(
        project=None, source="rest", received=3, stored=2, rejected={"conflict": 1}, at=_at("2026-03-01T11:00:00")
    )
    ingestion_record(
        project=None, source="online_evaluation", sampled=4, evaluated=2, errored=1, at=_at("2026-03-01T12:00:00")
    )


def test_ledger_window_and_totals(root_api, entries):
    body = root_api.get(f"{LEDGER}?since=2026-03-01T00:00:00Z&until=2026-03-02T00:00:00Z").json()
    assert body["since"].startswith("2026-03-01T00:00:00") and body["until"].startswith("2026-03-02T00:00:00")
    assert body["sources"]["otlp"] == {
        "received": 10,
        "stored": 7,
        "duplicate": 1,
        "rejected": {"too_deep": 1},
        "dropped": {"orphan": 1},
        "balanced": True,
    }
    assert body["sources"]["rest"]["rejected"] == {"conflict": 1}
    assert body["sources"]["batch"] == {
        "received": 0,
        "stored": 0,
        "duplicate": 0,
        "rejected": {},
        "dropped": {},
        "balanced": True,
    }
    assert body["online_evaluation"] == {"sampled": 4, "evaluated": 2, "skipped": 0, "errored": 1, "pending": 1}
    # until is excluded, since included.
    body = root_api.get(f"{LEDGER}?since=2026-03-01T10:00:00Z&until=2026-03-02T10:00:00Z").json()
    assert body["sources"]["otlp"]["received"] == 10
    # An offset in the query string, its "+" unescaped (a space once decoded), as clients often send it.
    body = root_api.get(f"{LEDGER}?since=2026-03-02T11:00:00+01:00&until=2026-03-03T00:00:00").json()
    assert body["sources"]["otlp"]["received"] == 5


def test_ledger_source_filter(root_api, entries):
    body = root_api.get(f"{LEDGER}?since=2026-01-01T00:00:00Z&until=2026-04-01T00:00:00Z&source=otlp").json()
    assert list(body["sources"]) == ["otlp"] and body["sources"]["otlp"]["received"] == 15
    assert "online_evaluation" not in body
    window = "since=2026-01-01T00:00:00Z&until=2026-04-01T00:00:00Z"
    body = root_api.get(f"{LEDGER}?{window}&source=online_evaluation").json()
    assert body["sources"] == {} and body["online_evaluation"]["sampled"] == 4


def test_ledger_defaults_to_the_last_24_hours(root_api, entries):
    ingestion_record(project=None, source="batch", received=2, stored=2, at=timezone.now() - timedelta(hours=23))
    ingestion_record(project=None, source="batch", received=9, stored=9, at=timezone.now() - timedelta(hours=25))
    body = root_api.get(LEDGER).json()
    assert body["sources"]["batch"]["received"] == 2 and body["sources"]["otlp"]["received"] == 0
    since, until = datetime.fromisoformat(body["since"]), datetime.fromisoformat(body["until"])
    assert until - since == timedelta(hours=24)


def test_an_unbalanced_window_says_so(root_api, db):
    # An entry written by hand that breaks the invariant (what a lost item would look like).
    IngestionEntry.objects.create(source="rest", received=5, stored=3)
    assert root_api.get(LEDGER).json()["sources"]["rest"]["balanced"] is False


@pytest.mark.parametrize(
    "query",
    [
        "since=yesterday",
        "until=2026-13-01T00:00:00Z",
        "source=ftp",
        "since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z",
    ],
)
def test_ledger_bad_queries_are_422_with_detail(root_api, query):
    response = root_api.get(f"{LEDGER}?{query}")
    assert response.status_code == 422 and "detail" in response.json()


def test_ledger_needs_the_admin_scope(db):
    ingest_only = client_with_key(ApiKeyFactory(scopes=["ingest"], user__is_superuser=True))
    assert ingest_only.get(LEDGER).status_code == 403
    read_only = client_with_key(ApiKeyFactory(scopes=["read"], user__is_superuser=True))
    assert read_only.get(LEDGER).status_code == 403
    admin = client_with_key(ApiKeyFactory(scopes=["read", "admin"], user__is_superuser=True))
    assert admin.get(LEDGER).status_code == 200


def test_the_ledger_is_the_projects_admins_and_no_one_elses(api, entries):
    """A key without admin is refused; another project's admin reads its own (empty) ledger, never
    `default`'s entries (tests/traces/test_ledger_projects.py for every door)."""
    response = api.get(LEDGER)
    assert response.status_code == 403
    assert "admin" in response.json()["detail"]
    other = project_key_client(ProjectFactory(), role=ProjectRole.ADMIN, scopes=["read", "admin"])
    window = "since=2026-01-01T00:00:00Z&until=2026-04-01T00:00:00Z"
    body = other.get(f"{LEDGER}?{window}").json()
    assert body["sources"]["otlp"]["received"] == 0 and body["online_evaluation"]["sampled"] == 0


# --- per day and compaction -----------------------------------------------------------------------


def test_days_are_newest_first_and_each_says_whether_it_balances(entries):
    IngestionEntry.objects.create(source="batch", received=4, stored=1, at=_at("2026-03-02T12:00:00"))
    days = ingestion_ledger_days(
        project=Project.objects.default(), since=_at("2026-02-28T00:00:00"), until=_at("2026-03-03T00:00:00")
    )
    assert [str(d.day) for d in days] == ["2026-03-02", "2026-03-01"]
    assert days[0].balanced is False and days[1].balanced is True
    assert days[1].sources["otlp"].dropped == {"orphan": 1}


@pytest.mark.django_db
def test_compaction_keeps_every_total_and_reason(monkeypatch):
    old = timezone.now() - timedelta(days=5)
    for i in range(30):
        ingestion_record(
            project=None,
            source="rest",
            received=2,
            stored=1,
            rejected={"conflict": 1} if i % 3 else {"nul_character": 1},
            at=old + timedelta(minutes=i * 7),
        )
        ingestion_record(
            project=None, source="otlp", received=3, stored=2, dropped={"orphan": 1}, at=old + timedelta(minutes=i * 7)
        )
    ingestion_record(project=None, source="online_evaluation", sampled=2, evaluated=1, skipped=1, at=old)
    ingestion_record(project=None, source="rest", received=1, stored=1)  # recent: left as it is
    window = {
        "project": Project.objects.default(),
        "since": old - timedelta(days=1),
        "until": timezone.now() + timedelta(seconds=1),
    }
    before = ingestion_ledger(**window)
    days_before = ingestion_ledger_days(**window)
    rows_before = IngestionEntry.objects.count()

    monkeypatch.setattr(ledger_module, "_COMPACT_CHUNK", 7)  # several chunks per hour (SQLite's path)
    removed = ingestion_ledger_compact(older_than=timedelta(days=2))

    assert IngestionEntry.objects.count() == rows_before - removed < 20
    after = ingestion_ledger(**window)
    assert after == before
    assert [(d.day, d.sources) for d in ingestion_ledger_days(**window)] == [(d.day, d.sources) for d in days_before]
    assert after["rest"].rejected == {"conflict": 20, "nul_character": 10}
    # Run again: nothing left to merge, nothing changes.
    assert ingestion_ledger_compact(older_than=timedelta(days=2)) == 0
    assert ingestion_ledger(**window) == before


@pytest.mark.django_db
def test_the_hourly_task_compacts_and_beat_schedules_it(settings):
    from apps.traces.tasks import compact_ingestion_ledger

    for minute in range(3):
        ingestion_record(
            project=None, source="batch", received=1, stored=1, at=timezone.now() - timedelta(days=3, minutes=minute)
        )
    settings.EVALSITE_LEDGER_COMPACT_AFTER_HOURS = 48
    assert compact_ingestion_ledger() >= 1
    assert totals("batch").received == 0  # older than the window read by `totals`
    assert IngestionEntry.objects.aggregate(n=Sum("received"))["n"] == 3
    assert any(
        entry["task"] == "apps.traces.tasks.compact_ingestion_ledger"
        for entry in settings.CELERY_BEAT_SCHEDULE.values()
    )


# --- Prometheus -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_prometheus_counters_by_source_outcome_and_bounded_reason(client, api):
    post(api, BASE, start_body())
    post(api, BASE, start_body())
    post(api, BASE, start_body("s\u0000"))
    post(api, f"{BASE}/batch", {"traces": [batch_item("b1"), batch_item("b2", user_query="")]})
    ingestion_record(
        project=None,
        source="otlp",
        received=4,
        stored=1,
        rejected={"too_deep": 1, "made_up_reason": 1},
        dropped={"orphan": 1},
    )
    for n in range(50):  # fifty different unknown reasons still make one series
        ingestion_record(project=None, source="otlp", received=1, rejected={f"novel_{n}": 1})
    ingestion_record(project=None, source="online_evaluation", sampled=3, evaluated=2, errored=1)

    text = client.get("/metrics").content.decode()
    name = "evalsite_ingestion_total"
    assert sample(text, name, source="rest", outcome="received", reason="", project="default") == 3
    assert sample(text, name, source="rest", outcome="stored", reason="", project="default") == 1
    assert sample(text, name, source="rest", outcome="duplicate", reason="", project="default") == 1
    assert sample(text, name, source="rest", outcome="rejected", reason="nul_character", project="default") == 1
    assert sample(text, name, source="batch", outcome="stored", reason="", project="default") == 1
    assert sample(text, name, source="batch", outcome="rejected", reason="invalid", project="default") == 1
    assert sample(text, name, source="otlp", outcome="rejected", reason="too_deep", project="default") == 1
    assert sample(text, name, source="otlp", outcome="rejected", reason="other", project="default") == 51
    assert sample(text, name, source="otlp", outcome="dropped", reason="orphan", project="default") == 1
    assert sample(text, name, source="online_evaluation", outcome="sampled", reason="", project="default") == 3
    assert sample(text, name, source="online_evaluation", outcome="errored", reason="", project="default") == 1
    reasons = {line.split('reason="')[1].split('"')[0] for line in text.splitlines() if line.startswith(name + "{")}
    assert reasons <= {"", "other", *ledger_module.REASONS}

    # Compaction leaves every counter where it was: a counter must never go back.
    IngestionEntry.objects.update(at=timezone.now() - timedelta(days=10))
    ingestion_ledger_compact(older_than=timedelta(days=2))
    assert client.get("/metrics").content.decode().count(name + "{") == text.count(name + "{")
    after = client.get("/metrics").content.decode()
    assert sample(after, name, source="otlp", outcome="rejected", reason="other", project="default") == 51
    assert sample(after, name, source="rest", outcome="received", reason="", project="default") == 3


@pytest.mark.parametrize(
    "query", ["until=0001-01-01T00:00:00Z", "since=9999-12-31T23:59:59Z", "since=2026-01-01T00:00:00%2B25:00"]
)
def test_ledger_times_at_the_ends_of_the_calendar_are_422_not_500(root_api, query):
    response = root_api.get(f"{LEDGER}?{query}")
    assert response.status_code == 422 and "detail" in response.json()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_batch_whose_connection_is_killed_mid_write_leaves_neither_rows_nor_entry(on_postgres, monkeypatch):
    """The server side of SIGKILL: the batch's traces and tool calls are written, its transaction is
    still open, and PostgreSQL loses the connection (pg_terminate_backend). The ledger entry was to
    commit with the rows, so it is gone with them; the client's retry is what the ledger counts."""
    from django.db import connection

    real_insert = batch_door.tool_calls_insert
    written, release = threading.Event(), threading.Event()
    backend = {}

    def insert_then_wait(*, rows):
        real_insert(rows=rows)
        backend["pid"] = connection.connection.info.backend_pid
        written.set()
        release.wait(10)

    items = [
        (
            i,
            services.BatchTrace(
                session_id=f"killed-{i}",
                user_query="q",
                agent_name="A",
                final_response="ok",
                success=True,
                canonical={"i": i},
                tool_calls=[services.ToolCallInput(tool_name="t", call_id="c")],
            ),
        )
        for i in range(5)
    ]
    monkeypatch.setattr(batch_door, "tool_calls_insert", insert_then_wait)
    errors = []

    def worker():
        try:
            services.traces_ingest_batch(items=items)
        except Exception as exc:  # the lost connection, asserted below
            errors.append(exc)
        finally:
            connections.close_all()

    thread = threading.Thread(target=worker)
    thread.start()
    assert written.wait(10)
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [backend["pid"]])
    release.set()
    thread.join()
    assert errors, "the batch should have failed with its connection"
    assert AgentTrace.objects.count() == 0 and IngestionEntry.objects.count() == 0

    monkeypatch.setattr(batch_door, "tool_calls_insert", real_insert)
    services.traces_ingest_batch(items=items)
    batch = totals("batch")
    assert (batch.received, batch.stored, batch.balanced) == (5, 5, True)
    assert AgentTrace.objects.count() == 5 and ToolCall.objects.count() == 5
