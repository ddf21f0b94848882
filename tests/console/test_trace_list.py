"""/console/traces/: search, filters, keyset pages, and a query count that does not grow with the
number of traces."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.console import selectors
from apps.traces.models import AgentTrace
from tests.agentic.factories import AgentEvaluationFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db
URL = "/console/traces/"


def sessions(response) -> list[str]:
    return re.findall(r'href="/console/traces/([^"/]+)/"', response.content.decode())


def make_traces(n: int, *, start=None, **fields) -> list[AgentTrace]:
    start = start or timezone.now() - timedelta(days=1)
    return [AgentTraceFactory(start_time=start + timedelta(seconds=i), **fields) for i in range(n)]


def test_newest_first_with_rating_and_source(staff_client):
    old, new = make_traces(2)
    AgentEvaluationFactory(trace=new, overall_score=0.3, rating="poor")
    page = staff_client.get(URL)
    assert page.status_code == 200
    assert sessions(page) == [new.session_id, old.session_id]
    html = page.content.decode()
    assert "poor" in html and "REST" in html
    assert 'href="/console/traces/"' in html  # the console navigation links the list


def test_search_by_session_prefix_query_text_and_agent(staff_client):
    a = AgentTraceFactory(session_id="abc-123", user_query="Restart the payments pod")
    b = AgentTraceFactory(session_id="xyz-9", user_query="List clusters", agent_name="BillingAgent")
    c = AgentTraceFactory(session_id="other", user_query="Show the PAYMENTS dashboard")
    assert sessions(staff_client.get(URL, {"q": "abc-123"})) == [a.session_id]
    assert sessions(staff_client.get(URL, {"q": "abc"})) == [a.session_id]  # a session id's beginning
    assert set(sessions(staff_client.get(URL, {"q": "payments"}))) == {a.session_id, c.session_id}
    assert sessions(staff_client.get(URL, {"q": "BillingAgent"})) == [b.session_id]
    assert sessions(staff_client.get(URL, {"q": "no such thing"})) == []


def test_filters_agent_status_source_rating_dates(staff_client):
    now = timezone.now()
    ok = AgentTraceFactory(agent_name="A", start_time=now - timedelta(days=3))
    failed = AgentTraceFactory(agent_name="B", success=False, source=AgentTrace.Source.OTLP,
                               start_time=now - timedelta(days=1))
    unrated = AgentTraceFactory(agent_name="B", source=AgentTrace.Source.BATCH, start_time=now - timedelta(hours=1))
    # The latest evaluation's rating counts, not an earlier one.
    AgentEvaluationFactory(trace=ok, overall_score=0.3, rating="poor", created_at=now - timedelta(hours=5))
    AgentEvaluationFactory(trace=ok, overall_score=0.95, rating="excellent", created_at=now - timedelta(hours=4))
    AgentEvaluationFactory(trace=failed, overall_score=0.3, rating="poor")
    agent_select = staff_client.get(URL).content.decode()
    assert '<option value="A"' in agent_select and '<option value="B"' in agent_select
    assert set(sessions(staff_client.get(URL, {"agent": "B"}))) == {failed.session_id, unrated.session_id}
    assert sessions(staff_client.get(URL, {"status": "failed"})) == [failed.session_id]
    assert sessions(staff_client.get(URL, {"source": "otlp"})) == [failed.session_id]
    assert sessions(staff_client.get(URL, {"source": "batch"})) == [unrated.session_id]
    assert sessions(staff_client.get(URL, {"rating": "poor"})) == [failed.session_id]
    assert sessions(staff_client.get(URL, {"rating": "excellent"})) == [ok.session_id]
    assert sessions(staff_client.get(URL, {"rating": "unrated"})) == [unrated.session_id]
    # Whole UTC days: from the start of `date_from` to the end of `date_to`.
    two_days_ago, three_days_ago = (now - timedelta(days=2)).date(), (now - timedelta(days=3)).date()
    assert sessions(staff_client.get(URL, {"date_from": two_days_ago})) == [unrated.session_id, failed.session_id]
    assert sessions(staff_client.get(URL, {"date_to": three_days_ago})) == [ok.session_id]
    assert sessions(staff_client.get(URL, {"agent": "B", "status": "completed"})) == [unrated.session_id]


def test_invalid_filters_are_shown_and_ignored(staff_client):
    trace = AgentTraceFactory()
    page = staff_client.get(URL, {"agent": "nobody", "date_from": "not-a-date", "after": "garbage"})
    assert page.status_code == 200 and sessions(page) == [trace.session_id]
    assert "Select a valid choice" in page.content.decode() and "Enter a valid date" in page.content.decode()


def test_keyset_pages_walk_every_trace_once_both_ways(staff_client, monkeypatch):
    monkeypatch.setattr(selectors, "TRACES_PER_PAGE", 4)
    traces = make_traces(10)
    # Two traces with the same start_time: the id breaks the tie, none is skipped or repeated.
    AgentTrace.objects.filter(pk=traces[5].pk).update(start_time=traces[4].start_time)
    expected = [t.session_id for t in sorted(AgentTrace.objects.all(), key=lambda t: (t.start_time, t.pk),
                                             reverse=True)]
    seen, pages, url = [], [], URL
    while url:
        html = staff_client.get(url).content.decode()
        pages.append(url)
        seen += sessions_of(html)
        older = re.search(r'href="\?([^"]*after=[^"]*)" rel="next"', html)
        url = (URL + "?" + older.group(1).replace("&amp;", "&")) if older else None
    assert seen == expected and len(pages) == 3
    # Back from the last page with "Newer".
    last = staff_client.get(pages[-1]).content.decode()
    newer = re.search(r'href="\?([^"]*before=[^"]*)" rel="prev"', last).group(1).replace("&amp;", "&")
    assert sessions_of(staff_client.get(URL + "?" + newer).content.decode()) == expected[4:8]


def sessions_of(html: str) -> list[str]:
    return re.findall(r'href="/console/traces/([^"/]+)/"', html)


def test_filters_survive_paging(staff_client, monkeypatch):
    monkeypatch.setattr(selectors, "TRACES_PER_PAGE", 2)
    make_traces(3, agent_name="A")
    make_traces(3, agent_name="B")
    html = staff_client.get(URL, {"agent": "A"}).content.decode()
    older = re.search(r'href="\?([^"]*)" rel="next"', html).group(1).replace("&amp;", "&")
    assert "agent=A" in older
    page = staff_client.get(URL + "?" + older)
    assert len(sessions(page)) == 1
    assert set(AgentTrace.objects.filter(session_id__in=sessions(page)).values_list("agent_name", flat=True)) == {"A"}


@pytest.mark.parametrize("params", [{}, {"q": "Kubernetes"}, {"rating": "poor", "status": "completed"},
                                    {"agent": "OrchestratorAgent", "source": "rest"}])
def test_query_count_does_not_grow_with_traces(staff_client, params):
    def count() -> int:
        staff_client.get(URL, params)  # warm the session and the per-process trigram probe
        with CaptureQueriesContext(connection) as queries:
            assert staff_client.get(URL, params).status_code == 200
        return len(queries)

    for trace in make_traces(3):
        AgentEvaluationFactory(trace=trace, overall_score=0.3, rating="poor")
    small = count()
    for trace in make_traces(60, agent_name="Other"):
        AgentEvaluationFactory(trace=trace, overall_score=0.3, rating="poor")
    make_traces(60)
    # Session, user, agent names, the page, and (for staff) the queues its "add to queue" offers.
    assert count() == small <= 5


def test_readers_see_the_list(reader_client):
    trace = AgentTraceFactory()
    assert sessions(reader_client.get(URL)) == [trace.session_id]
