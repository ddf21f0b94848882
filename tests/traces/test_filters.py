"""TraceFilter through selectors.trace_list: the same answers on SQLite and PostgreSQL, whichever
path serves them (the recursive agent-name scan, the trigram indexes or the newest-traces window)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.traces import filters as trace_filters
from apps.traces.models import AgentTrace
from apps.traces.selectors import trace_agent_names, trace_filter, trace_list
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db

NEEDLES = [
    "7f3a9c",
    "7F3A9C",
    "checkout",
    "billing",
    "BILLINGAGENT",
    "payments",
    "PAY",
    "pa",
    "conv-",
    "s-1",
    "zz",
    "no such thing",
    "Agent",
    "order?",
]


@pytest.fixture
def traces():
    return [
        AgentTraceFactory(session_id="conv-7f3a9c21-checkout", user_query="Where is my order?"),
        AgentTraceFactory(session_id="conv-0000-login", user_query="Reset my password", agent_name="LoginAgent"),
        AgentTraceFactory(session_id="s-1", user_query="Refund", agent_name="BillingAgent"),
        AgentTraceFactory(session_id="s-10", user_query="Restart the PAYMENTS pod", agent_name="billingagent"),
        AgentTraceFactory(session_id="abc", user_query="pa", agent_name="Zeta"),
        AgentTraceFactory(session_id="xyz", user_query="Show the payments dashboard", agent_name=""),
    ]


def expected(needle: str) -> set[str]:
    """What the search promises, worked out in Python: any part of the session id or of an agent
    name in any case, any part of the query text in any case from three characters on."""
    n = needle.casefold()
    return {
        t.session_id
        for t in AgentTrace.objects.all()
        if n in t.session_id.casefold()
        or n in t.agent_name.casefold()
        or (len(needle) >= 3 and n in t.user_query.casefold())
    }


def found(needle: str) -> set[str]:
    return set(trace_list(filters={"q": needle}).values_list("session_id", flat=True))


def test_agent_names_are_the_distinct_names_in_order_on_either_database(traces):
    # The loose index scan (one SQL statement both databases run) agrees with SELECT DISTINCT.
    distinct = list(AgentTrace.objects.order_by("agent_name").values_list("agent_name", flat=True).distinct())
    assert trace_agent_names() == distinct
    assert "" in distinct and "OrchestratorAgent" in distinct  # the unnamed agent is one of them
    assert trace_agent_names(limit=2) == distinct[:2]


def test_the_search_finds_what_it_promises_on_either_database(traces):
    for needle in NEEDLES:
        assert found(needle) == expected(needle), needle
    # The same answers through the trigram indexes (PostgreSQL) and the newest-traces window (SQLite).
    assert trace_filter(filters={"q": "7f3a9c"}).qs.count() == 1
    searched = trace_filter(filters={"q": "7f3a9c"})
    list(searched.qs)
    assert searched.text_search == ("trigram" if connection.vendor == "postgresql" else "window")


def test_the_window_path_gives_the_trigram_paths_answers_while_the_window_holds_every_trace(traces, monkeypatch):
    monkeypatch.setattr(trace_filters, "trace_text_search_indexed", lambda: False)
    for needle in NEEDLES:
        assert found(needle) == expected(needle), needle


def test_the_trigram_probe_reads_the_indexes_the_migrations_made():
    trace_filters._trigram_index.clear()
    assert trace_filters.trace_text_search_indexed() is (connection.vendor == "postgresql")


def test_agent_status_source_and_whole_utc_days():
    now = timezone.now()
    old = AgentTraceFactory(agent_name="A", start_time=now - timedelta(days=3))
    failed = AgentTraceFactory(
        agent_name="B", success=False, source=AgentTrace.Source.OTLP, start_time=now - timedelta(days=1)
    )

    def ids(**filters):
        return set(trace_list(filters=filters).values_list("session_id", flat=True))

    assert ids(agent="B") == ids(status="failed") == ids(source="otlp") == {failed.session_id}
    assert ids(date_from=str((now - timedelta(days=2)).date())) == {failed.session_id}
    assert ids(date_to=str((now - timedelta(days=3)).date())) == {old.session_id}
    assert ids() == {old.session_id, failed.session_id}


def test_values_that_do_not_validate_are_shown_and_left_out():
    trace = AgentTraceFactory(agent_name="A")
    filterset = trace_filter(filters={"agent": "nobody", "status": "bogus", "date_from": "not-a-date", "q": "sess"})
    assert list(filterset.qs.values_list("session_id", flat=True)) == [trace.session_id]
    assert set(filterset.form.errors) == {"agent", "status", "date_from"}
    assert filterset.filtered  # the search still applies
    assert not trace_filter(filters={"agent": "nobody"}).filtered
