"""Trace reads are paged: GET /trace/{id} answers with the first page of tool calls and a link to
the next, GET /trace/{id}/tool-calls pages on by keyset, and every `seq` shown is the call's
position 1..n worked out at read time, whatever order keys were stored (OTLP stores them with gaps
so a late earlier span is placed without renumbering the others)."""

from datetime import timedelta

import pytest
from django.db.models.signals import post_init
from django.utils import timezone

from apps.traces.models import ToolCall
from tests.core.factories import ApiKeyFactory, client_with_key
from tests.traces.factories import AgentTraceFactory

BASE = "/api/v1/metrics"


def _trace_with_seqs(session_id, seqs, **extra):
    """A trace whose calls are stored with these order keys (as the OTLP receiver leaves them)."""
    trace = AgentTraceFactory(session_id=session_id, **extra)
    start = timezone.now()
    ToolCall.objects.bulk_create(
        [
            ToolCall(
                trace=trace,
                seq=seq,
                call_id=f"c{seq}",
                tool_name=f"tool_{seq}",
                tool_args={"n": seq},
                timestamp=start + timedelta(milliseconds=seq),
            )
            for seq in seqs
        ]
    )
    trace.tool_call_count = len(seqs)
    trace.save(update_fields=["tool_call_count"])
    return trace


@pytest.fixture
def small_pages(settings):
    settings.EVALSITE_TRACE_TOOL_CALLS_PAGE = 3


class _ToolCallsLoaded:
    """Counts ToolCall instances made while active: what a read holds in memory."""

    def __init__(self):
        self.count = 0

    def __call__(self, sender, instance, **kwargs):
        self.count += 1

    def __enter__(self):
        post_init.connect(self, sender=ToolCall)
        return self

    def __exit__(self, *exc):
        post_init.disconnect(self, sender=ToolCall)


@pytest.mark.django_db
class TestTraceDetail:
    def test_a_trace_within_one_page_keeps_the_contract_with_every_call(self, api):
        _trace_with_seqs("s1", [1, 2, 3])
        body = api.get(f"{BASE}/trace/s1").json()
        assert [c["tool_name"] for c in body["tool_calls"]] == ["tool_1", "tool_2", "tool_3"]
        assert [c["seq"] for c in body["tool_calls"]] == [1, 2, 3]
        assert body["tool_calls_total"] == 3 and body["tool_calls_next"] is None
        assert body["truncated"] is False and body["dropped"] == {}

    def test_stored_order_keys_with_gaps_read_as_positions(self, api):
        _trace_with_seqs("gaps", [2048, 1024, 1536])
        body = api.get(f"{BASE}/trace/gaps").json()
        assert [(c["seq"], c["tool_name"]) for c in body["tool_calls"]] == [
            (1, "tool_1024"),
            (2, "tool_1536"),
            (3, "tool_2048"),
        ]
        page = api.get(f"{BASE}/trace/gaps/tool-calls").json()
        assert [(c["seq"], c["call_id"]) for c in page["tool_calls"]] == [(1, "c1024"), (2, "c1536"), (3, "c2048")]

    def test_a_big_trace_answers_its_first_page_and_links_the_next(self, api, small_pages):
        _trace_with_seqs("big", [1024 * n for n in range(1, 9)])
        body = api.get(f"{BASE}/trace/big").json()
        assert [c["seq"] for c in body["tool_calls"]] == [1, 2, 3]
        assert body["tool_calls_total"] == 8
        assert body["tool_calls_next"] == "http://testserver/api/v1/metrics/trace/big/tool-calls?after=3072"

    def test_following_next_reads_every_call_once_in_order_with_positions(self, api, small_pages):
        _trace_with_seqs("walk", [1024 * n for n in range(1, 9)])
        body = api.get(f"{BASE}/trace/walk").json()
        seen = [(c["seq"], c["call_id"]) for c in body["tool_calls"]]
        url, pages = body["tool_calls_next"], 1
        while url:
            page = api.get(url).json()
            assert page["session_id"] == "walk" and page["tool_calls_total"] == 8
            seen += [(c["seq"], c["call_id"]) for c in page["tool_calls"]]
            url, pages = page["tool_calls_next"], pages + 1
        assert pages == 3
        assert seen == [(n, f"c{1024 * n}") for n in range(1, 9)]

    def test_a_limit_pages_smaller_and_is_kept_in_the_next_link(self, api, small_pages):
        _trace_with_seqs("limit", range(1, 9))
        page = api.get(f"{BASE}/trace/limit/tool-calls?after=2&limit=2").json()
        assert [c["seq"] for c in page["tool_calls"]] == [3, 4]
        assert page["tool_calls_next"].endswith("/trace/limit/tool-calls?after=4&limit=2")
        # Above the configured page it is the page.
        page = api.get(f"{BASE}/trace/limit/tool-calls?limit=1000").json()
        assert [c["seq"] for c in page["tool_calls"]] == [1, 2, 3]

    def test_a_call_placed_earlier_between_two_reads_moves_the_later_positions(self, api, small_pages):
        trace = _trace_with_seqs("late", [1024, 2048, 3072, 4096, 5120])
        first = api.get(f"{BASE}/trace/late").json()
        ToolCall.objects.create(trace=trace, seq=1536, call_id="late", tool_name="late")
        page = api.get(first["tool_calls_next"]).json()
        assert [(c["seq"], c["call_id"]) for c in page["tool_calls"]] == [(5, "c4096"), (6, "c5120")]
        assert page["tool_calls_total"] == 6

    def test_a_truncated_trace_says_so_with_what_was_dropped(self, api):
        _trace_with_seqs("capped", [1, 2], truncated=True, dropped={"tool_calls": 58000, "spans": 12})
        body = api.get(f"{BASE}/trace/capped").json()
        assert body["truncated"] is True and body["dropped"] == {"tool_calls": 58000, "spans": 12}

    def test_reading_a_page_loads_only_that_page(self, api, small_pages):
        _trace_with_seqs("mem", range(1, 201))
        with _ToolCallsLoaded() as loaded:
            body = api.get(f"{BASE}/trace/mem").json()
        assert len(body["tool_calls"]) == 3 and body["tool_calls_total"] == 200
        # The page and the one fetched to know whether more follow.
        assert loaded.count <= 4
        with _ToolCallsLoaded() as loaded:
            page = api.get(f"{BASE}/trace/mem/tool-calls?after=150").json()
        assert [c["seq"] for c in page["tool_calls"]] == [151, 152, 153]
        assert loaded.count <= 4


@pytest.mark.django_db
class TestToolCallPageErrors:
    @pytest.mark.parametrize("query", ["after=x", "after=-1", "limit=0", "limit=abc", f"after={2**63}"])
    def test_a_bad_cursor_or_limit_is_a_422_detail(self, api, query):
        _trace_with_seqs("bad", [1])
        r = api.get(f"{BASE}/trace/bad/tool-calls?{query}")
        assert r.status_code == 422
        assert "detail" in r.json()

    def test_an_unknown_session_is_404(self, api):
        r = api.get(f"{BASE}/trace/missing/tool-calls")
        assert r.status_code == 404 and r.json() == {"detail": "No trace found for session missing"}

    def test_past_the_last_call_is_an_empty_last_page(self, api):
        _trace_with_seqs("end", [1, 2])
        page = api.get(f"{BASE}/trace/end/tool-calls?after=99").json()
        assert page["tool_calls"] == [] and page["tool_calls_next"] is None and page["tool_calls_total"] == 2

    def test_the_pages_need_the_read_scope(self, db):
        _trace_with_seqs("scoped", [1])
        ingest_only = client_with_key(ApiKeyFactory(user__username="ingester", scopes=["ingest"]))
        assert ingest_only.get(f"{BASE}/trace/scoped/tool-calls").status_code == 403


@pytest.mark.django_db
def test_the_write_answers_show_the_first_page_too(api, small_pages):
    api.post(f"{BASE}/traces", {"session_id": "w", "user_query": "q", "agent_name": "A"}, format="json")
    api.post(f"{BASE}/traces/w/tool-calls", [{"tool_name": f"t{i}"} for i in range(5)], format="json")
    body = api.post(f"{BASE}/traces/w/complete", {"final_response": "done", "success": True}, format="json").json()
    assert [c["seq"] for c in body["tool_calls"]] == [1, 2, 3]
    assert body["tool_calls_total"] == 5 and body["tool_calls_next"].endswith("/trace/w/tool-calls?after=3")


@pytest.mark.django_db
def test_the_schema_documents_the_pages(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/v1/metrics/trace/{session_id}/tool-calls" in schema["paths"]
    trace_out = schema["components"]["schemas"]["TraceOut"]["properties"]
    assert {"tool_calls_total", "tool_calls_next", "truncated", "dropped"} <= set(trace_out)
