"""/console/runs/ sorted by its column headers: ?sort=<column> or -<column> over a whitelist, newest
first by default and for ties, an unknown sort ignored, the sort kept by pages and filters."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.console.views import runs as run_views
from apps.runs.models import EvaluationRun
from tests.bots.factories import BotFactory
from tests.runs.factories import EvaluationRunFactory

pytestmark = pytest.mark.django_db
URL = "/console/runs/"


def run_ids(response) -> list[str]:
    return re.findall(r'href="/console/runs/([0-9a-f-]{36})/"', response.content.decode())


@pytest.fixture
def runs():
    """Four runs created an hour apart (oldest first): bots, statuses, judges and figures that order
    differently under each column."""
    zeta, alpha = BotFactory(name="zeta bot"), BotFactory(name="Alpha bot")
    now = timezone.now()
    specs = [
        dict(agent_id=zeta.agent_id, status="completed", judge="openai:gpt-4.1", total=4, completed=4, passed=1),
        dict(agent_id=alpha.agent_id, status="running", judge="heuristic:v1", total=4, completed=2, passed=2),
        dict(agent_id="c" * 24, status="failed", judge="heuristic:v1", total=4, completed=0, passed=0),  # bot gone
        dict(agent_id=alpha.agent_id, status="completed", judge="heuristic:v1", total=4, completed=4, passed=3),
    ]
    made = []
    for hours_ago, spec in zip((4, 3, 2, 1), specs):
        run = EvaluationRunFactory(**spec)
        EvaluationRun.objects.filter(pk=run.pk).update(created_at=now - timedelta(hours=hours_ago))
        made.append(str(run.run_id))
    return made


def test_each_column_sorts_both_ways(staff_client, runs):
    oldest, running, orphan, newest = runs

    def order(sort):
        return run_ids(staff_client.get(URL, {"sort": sort}))

    assert order("") == order("-created") == [newest, orphan, running, oldest]
    assert order("created") == [oldest, running, orphan, newest]
    # By name (the run with a deleted bot has none: last, both ways), ties newest first.
    assert order("bot")[-1] == orphan and order("-bot")[-1] == orphan
    assert order("bot")[:3] == [newest, running, oldest]  # Alpha bot (newest first), then zeta bot
    assert order("-bot")[:3] == [oldest, newest, running]
    assert order("status") == [newest, oldest, orphan, running]  # completed, completed, failed, running
    assert order("-pass_rate") == [running, newest, oldest, orphan]  # 100 %, 75 %, 25 %, none yet (last)
    assert order("pass_rate") == [oldest, newest, running, orphan]
    assert order("-progress") == [newest, oldest, running, orphan]
    assert order("judge") == [newest, orphan, running, oldest]


@pytest.mark.parametrize("sort", ["nope", "-label", "agent_id", "--bot", "created_at", "<script>"])
def test_an_unknown_sort_is_the_default_order(staff_client, runs, sort):
    page = staff_client.get(URL, {"sort": sort})
    assert page.status_code == 200
    assert run_ids(page) == list(reversed(runs))
    assert re.search(r'aria-sort="descending"[^>]*><a class="sort sorted" href="\?sort=created"', page.content.decode())


def test_the_header_shows_the_direction_and_keeps_the_filters(staff_client, runs):
    html = staff_client.get(URL, {"sort": "-pass_rate", "status": "completed"}).content.decode()
    assert re.search(
        r'aria-sort="descending"><a class="sort sorted" href="\?status=completed&amp;sort=pass_rate"'
        r'[^>]*>Pass rate <span class="sort-arrow" aria-hidden="true">▼</span>',
        html,
    )
    assert 'aria-sort="none"><a class="sort" href="?status=completed&amp;sort=bot"' in html
    assert '<input type="hidden" name="sort" value="-pass_rate">' in html  # the filter form keeps it
    assert len(run_ids(staff_client.get(URL, {"sort": "-pass_rate", "status": "completed"}))) == 2


def test_the_sort_survives_paging(staff_client, runs, monkeypatch):
    monkeypatch.setattr(run_views, "RUNS_PER_PAGE", 3)
    everything = run_ids(staff_client.get(URL, {"sort": "-pass_rate"}))
    first = staff_client.get(URL, {"sort": "-pass_rate"}).content.decode()
    next_link = re.search(r'href="\?([^"]*)" rel="next"', first).group(1).replace("&amp;", "&")
    assert "sort=-pass_rate" in next_link
    second = run_ids(staff_client.get(URL + "?" + next_link))
    monkeypatch.setattr(run_views, "RUNS_PER_PAGE", 50)
    assert everything + second == run_ids(staff_client.get(URL, {"sort": "-pass_rate"}))
