"""/console/traces/: search, filters, keyset pages, and a query count that does not grow with the
number of traces."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.console import selectors
from apps.core.models import Project
from apps.traces import filters as trace_filters
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


def test_search_finds_any_part_of_a_session_id_and_agent_names_in_any_case(staff_client):
    middle = AgentTraceFactory(session_id="conv-7f3a9c21-checkout", user_query="Where is my order?")
    AgentTraceFactory(session_id="conv-0000-login", user_query="Reset my password")
    billing = AgentTraceFactory(session_id="s-1", user_query="Refund", agent_name="BillingAgent")
    # Neither the beginning nor the end of the id, and not in the query text: only a substring match finds it.
    assert sessions(staff_client.get(URL, {"q": "7f3a9c"})) == [middle.session_id]
    assert sessions(staff_client.get(URL, {"q": "checkout"})) == [middle.session_id]
    assert sessions(staff_client.get(URL, {"q": "7F3A9C"})) == [middle.session_id]  # ids in any case too
    # Agent names: the whole name or a part of it, whatever the case.
    assert sessions(staff_client.get(URL, {"q": "billingagent"})) == [billing.session_id]
    assert sessions(staff_client.get(URL, {"q": "BILLING"})) == [billing.session_id]
    html = staff_client.get(URL, {"q": "7f3a9c"}).content.decode()
    assert "any part of a session id" in html


def test_a_substring_search_reads_the_trigram_index_on_postgresql(staff_client):
    """The search says it used the trigram indexes of migrations 0004 and 0005 where they exist; the
    plan itself is checked on a large table by hand (EXPLAIN), a test table is too small for the
    planner to prefer an index."""
    AgentTraceFactory(session_id="conv-7f3a9c21-checkout")
    page = selectors.trace_list_page(filters={"q": "9c21"}, project_id=Project.objects.default().pk)
    assert [t.session_id for t in page.traces] == ["conv-7f3a9c21-checkout"]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'agenttrace_session_trgm'")
            assert "gin_trgm_ops" in cursor.fetchone()[0]
        assert page.text_search == "trigram"
    else:
        assert page.text_search == "window"


def test_without_trigram_indexes_any_part_of_a_session_id_is_searched_in_the_newest_window(staff_client, monkeypatch):
    monkeypatch.setattr(trace_filters, "trace_text_search_indexed", lambda: False)
    monkeypatch.setattr(trace_filters, "TRACE_TEXT_SEARCH_WINDOW", 2)
    old = AgentTraceFactory(session_id="old-7f3a9c", start_time=timezone.now() - timedelta(days=2))
    make_traces(2)
    assert sessions(staff_client.get(URL, {"q": "7f3a9c"})) == []  # beyond the window
    assert sessions(staff_client.get(URL, {"q": "old-7f"})) == [old.session_id]  # its beginning, at any depth


def sort_links(html: str) -> dict[str, str]:
    return {
        label.strip(): href.replace("&amp;", "&")
        for href, label in re.findall(r'<a class="sort[^"]*" href="\?([^"]*)" title="[^"]*">([^<]+)', html)
    }


def test_columns_sort_both_ways_ties_newest_first(staff_client):
    now = timezone.now()
    slow = AgentTraceFactory(
        agent_name="beta",
        start_time=now - timedelta(hours=3),
        tool_calls=[{"tool_name": "search"}, {"tool_name": "lookup"}],
    )
    fast = AgentTraceFactory(agent_name="Alpha", start_time=now - timedelta(hours=2))
    newest_beta = AgentTraceFactory(agent_name="beta", start_time=now - timedelta(hours=1))
    running = AgentTraceFactory(agent_name="gamma", active=True, start_time=now - timedelta(hours=4))
    AgentTrace.objects.filter(pk=slow.pk).update(duration_seconds=9.5)
    AgentTrace.objects.filter(pk=fast.pk).update(duration_seconds=0.5)
    AgentTrace.objects.filter(pk=newest_beta.pk).update(duration_seconds=3.0)

    def order(sort):
        return sessions(staff_client.get(URL, {"sort": sort}))

    ids = lambda *traces: [t.session_id for t in traces]  # noqa: E731
    assert order("started") == ids(running, slow, fast, newest_beta)
    assert order("-started") == order("") == ids(newest_beta, fast, slow, running)
    assert order("agent") == ids(fast, newest_beta, slow, running)  # one agent's traces newest first
    assert order("-agent") == ids(running, newest_beta, slow, fast)
    assert order("-tool_calls")[0] == slow.session_id
    # The running trace has no duration yet: last, whichever the direction.
    assert order("duration") == ids(fast, newest_beta, slow, running)
    assert order("-duration") == ids(slow, newest_beta, fast, running)
    # Unknown columns, and columns that are not sortable, are the default order.
    assert order("user_query") == order("-latest_rating") == order("--agent") == order("'") == order("-started")


def test_the_header_shows_the_direction_and_links_keep_the_filters(staff_client):
    AgentTraceFactory(agent_name="A")
    html = staff_client.get(URL).content.decode()
    assert re.search(r'<th scope="col" aria-sort="descending"><a class="sort sorted" href="\?sort=started"', html)
    assert '<th scope="col" aria-sort="none"><a class="sort" href="?sort=agent"' in html
    html = staff_client.get(URL, {"sort": "agent", "status": "completed"}).content.decode()
    links = sort_links(html)
    assert links["Agent"] == "status=completed&sort=-agent"  # a second click reverses it
    assert links["Duration"] == "status=completed&sort=-duration"  # counts and times sort largest first
    assert re.search(
        r'aria-sort="ascending"><a class="sort sorted" [^>]*>Agent <span class="sort-arrow" '
        r'aria-hidden="true">▲</span>',
        html,
    )
    assert '<input type="hidden" name="sort" value="agent">' in html  # filtering again keeps the sort
    assert "sorted by agent" in html


@pytest.mark.parametrize("sort", ["agent", "-agent", "duration", "-duration", "status", "-tool_calls", "started"])
def test_sorted_keyset_pages_walk_every_trace_once_both_ways(staff_client, monkeypatch, sort):
    monkeypatch.setattr(selectors, "TRACES_PER_PAGE", 3)
    traces = make_traces(10)
    for i, trace in enumerate(traces):
        # Repeated values, and empty durations, so that ties and nulls cross page boundaries.
        AgentTrace.objects.filter(pk=trace.pk).update(
            agent_name=["b", "A", "c"][i % 3],
            duration_seconds=None if i % 4 == 0 else float(i % 3),
            status=["completed", "failed"][i % 2],
            tool_call_count=i % 2,
        )
    everything = sessions(_all_on_one_page(staff_client, monkeypatch, sort))
    seen, pages, url = [], [], f"{URL}?sort={sort}"
    while url:
        html = staff_client.get(url).content.decode()
        pages.append(url)
        seen += sessions_of(html)
        assert f"sort={sort}" in url  # the sort survives paging
        older = re.search(r'href="\?([^"]*after=[^"]*)" rel="next"', html)
        url = (URL + "?" + older.group(1).replace("&amp;", "&")) if older else None
    assert seen == everything and len(pages) == 4
    # And back, page by page, from the last one.
    back, html = [], staff_client.get(pages[-1]).content.decode()
    while previous := re.search(r'href="\?([^"]*before=[^"]*)" rel="prev"', html):
        html = staff_client.get(URL + "?" + previous.group(1).replace("&amp;", "&")).content.decode()
        back = sessions_of(html) + back
    assert back + sessions_of(staff_client.get(pages[-1]).content.decode()) == everything


def _all_on_one_page(staff_client, monkeypatch, sort):
    monkeypatch.setattr(selectors, "TRACES_PER_PAGE", 100)
    page = staff_client.get(URL, {"sort": sort})
    monkeypatch.setattr(selectors, "TRACES_PER_PAGE", 3)
    return page


def test_a_cursor_of_another_sort_starts_at_the_first_page(staff_client, monkeypatch):
    monkeypatch.setattr(selectors, "TRACES_PER_PAGE", 2)
    make_traces(5)
    html = staff_client.get(URL, {"sort": "agent"}).content.decode()
    after = re.search(r'after=([^"&]+)', html).group(1)
    assert sessions(staff_client.get(URL, {"sort": "-duration", "after": after})) == sessions(
        staff_client.get(URL, {"sort": "-duration"})
    )


def test_filters_agent_status_source_rating_dates(staff_client):
    now = timezone.now()
    ok = AgentTraceFactory(agent_name="A", start_time=now - timedelta(days=3))
    failed = AgentTraceFactory(
        agent_name="B", success=False, source=AgentTrace.Source.OTLP, start_time=now - timedelta(days=1)
    )
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
    expected = [
        t.session_id for t in sorted(AgentTrace.objects.all(), key=lambda t: (t.start_time, t.pk), reverse=True)
    ]
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


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"q": "Kubernetes"},
        {"rating": "poor", "status": "completed"},
        {"agent": "OrchestratorAgent", "source": "rest"},
    ],
)
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
    # Session, user, the session's project and role, the switcher's projects, agent names, the page,
    # and (for staff) the queues its "add to queue" offers.
    assert count() == small <= 7


def test_readers_see_the_list(reader_client):
    trace = AgentTraceFactory()
    assert sessions(reader_client.get(URL)) == [trace.session_id]
