"""The console's trace page shows a page of tool calls with "Show more" (issue 21: a 60,000-call
trace was a 162 MB page), numbers the calls 1..n whatever order keys were stored, and says when a
per-trace cap truncated the trace; the admin's inline and a queue's review page show the first page."""

import re

import pytest

from tests.traces.test_trace_paging import _trace_with_seqs


@pytest.fixture
def small_pages(settings):
    settings.EVALSITE_TRACE_TOOL_CALLS_PAGE = 3


def _positions(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<li class="call[^"]*" id="call-(\d+)">', html)]


@pytest.mark.django_db
def test_the_first_page_then_show_more_then_the_last(reader_client, small_pages):
    _trace_with_seqs("big", [1024 * n for n in range(1, 9)])
    html = reader_client.get("/console/traces/big/").content.decode()
    assert _positions(html) == [1, 2, 3]
    assert "tool_1024" in html and "tool_4096" not in html
    assert 'tool calls <span id="shown-range">1–3</span> of 8' in html
    more = re.search(r'<a href="([^"]+)" id="show-more" data-more-calls>Show more</a>', html)
    assert more and more.group(1) == "?after=3072#call-4"
    assert "5 more tool calls, 3 at a time" in html

    html = reader_client.get("/console/traces/big/?after=3072").content.decode()
    assert _positions(html) == [4, 5, 6]
    assert 'id="earlier-calls"' in html and "tool calls 1–3" in html
    html = reader_client.get("/console/traces/big/?after=6144").content.decode()
    assert _positions(html) == [7, 8]
    assert "Show more" not in html
    assert "Found 2 clusters" in html  # the final answer closes every page's timeline


@pytest.mark.django_db
def test_a_small_trace_shows_every_call_numbered_from_one(reader_client):
    _trace_with_seqs("small", [2048, 1024, 1536])
    html = reader_client.get("/console/traces/small/").content.decode()
    assert _positions(html) == [1, 2, 3]
    assert html.index("tool_1024") < html.index("tool_1536") < html.index("tool_2048")
    assert "3 tool calls" in html and "Show more" not in html and 'id="truncated"' not in html


@pytest.mark.parametrize("after", ["x", "-5", "1e3", "９"])
@pytest.mark.django_db
def test_a_cursor_that_is_not_one_shows_the_first_page(reader_client, small_pages, after):
    _trace_with_seqs("odd", [1, 2, 3, 4])
    response = reader_client.get("/console/traces/odd/", {"after": after})
    assert response.status_code == 200 and _positions(response.content.decode()) == [1, 2, 3]


@pytest.mark.django_db
def test_a_truncated_trace_says_what_was_dropped(reader_client):
    _trace_with_seqs("capped", [1, 2], truncated=True, dropped={"tool_calls": 58000, "attribute_bytes": 1024})
    html = reader_client.get("/console/traces/capped/").content.decode()
    banner = re.search(r'<div class="banner" id="truncated".*?</div>', html, re.S).group(0)
    assert "Truncated." in banner and "58000 tool calls" in banner and "1024 attribute bytes" in banner


@pytest.mark.django_db
def test_the_admin_shows_the_first_page_numbered(admin_client, small_pages):
    trace = _trace_with_seqs("admin", [1024 * n for n in range(1, 9)])
    html = admin_client.get(f"/admin/traces/agenttrace/{trace.pk}/change/").content.decode()
    cells = re.findall(r'<td class="field-(position|tool_name)">\s*<p>([^<]*)</p>', html)
    assert cells == [
        ("position", "1"),
        ("tool_name", "tool_1024"),
        ("position", "2"),
        ("tool_name", "tool_2048"),
        ("position", "3"),
        ("tool_name", "tool_3072"),
    ]
    assert "the first 100 at most; the console&#x27;s trace page has them all" in html


@pytest.mark.django_db
def test_a_queue_item_of_a_big_trace_shows_its_first_page(staff_client, small_pages):
    from apps.queues.models import QueueKind
    from tests.agentic.factories import AgentEvaluationFactory
    from tests.queues.factories import QueueItemFactory, ReviewQueueFactory

    trace = _trace_with_seqs("queued", [1024 * n for n in range(1, 9)])
    item = QueueItemFactory(
        queue=ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION),
        agent_evaluation=AgentEvaluationFactory(trace=trace),
    )
    html = staff_client.get(f"/console/queues/{item.queue_id}/items/{item.pk}/").content.decode()
    assert re.findall(r"<code>(tool_\d+)</code>", html) == ["tool_1024", "tool_2048", "tool_3072"]
    assert "The first 3 of 8 tool calls" in html
