"""The console shows what runs and traces cost: a column in the run and trace lists, a card on the
run page and the dashboard's spend per day, with the unpriced calls beside the amount, never "$0" for
calls nobody could price."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from apps.core.models import Project
from apps.runs.models import EvaluationRun
from apps.traces.spend import trace_spend_day_add
from tests.core.factories import ProjectFactory
from tests.traces.factories import AgentTraceFactory

pytestmark = pytest.mark.django_db


def test_run_list_and_run_card_show_the_cost(reader_client, demo_run):
    EvaluationRun.objects.filter(pk=demo_run.pk).update(
        bot_cost=Decimal("0.0123"), judge_cost=Decimal("0.001"), unpriced_calls=2
    )
    listing = reader_client.get("/console/runs/").content.decode()
    assert '<td class="cost">$0.013300 + 2 unpriced</td>' in listing
    page = reader_client.get(f"/console/runs/{demo_run.run_id}/").content.decode()
    assert '<span class="figure" id="run-cost">$0.013300 + 2 unpriced</span>' in page
    assert "bot $0.012300 · judge $0.001000" in page and '<span id="unpriced-calls">2</span>' in page


def test_a_run_without_priced_calls_shows_no_amount(reader_client, demo_run):
    # The demo bot and the heuristic judge make no LLM call.
    page = reader_client.get(f"/console/runs/{demo_run.run_id}/").content.decode()
    assert '<span class="figure" id="run-cost">—</span>' in page
    assert '<td class="cost">—</td>' in reader_client.get("/console/runs/").content.decode()


def test_the_dashboard_shows_spend_per_day_of_its_own_project_only(reader_client, demo_run):
    from apps.core.models import Project
    from tests.core.factories import ProjectFactory
    from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory

    demo_run.results.update(bot_cost=Decimal("0.5"), unpriced_calls=1)
    theirs = EvaluationRunFactory(project=ProjectFactory(slug="theirs"))
    EvaluationResultFactory(run=theirs, bot_cost=Decimal("99"), finished_at=demo_run.completed_at)
    assert demo_run.project == Project.objects.default()
    page = reader_client.get("/console/").content.decode()
    items = demo_run.results.count()
    day = demo_run.results.first().finished_at.date().isoformat()
    assert f"<tr><td>{day}</td><td>${Decimal('0.5') * items:.6f}</td><td>${Decimal('0.5') * items:.6f}</td>" in page
    assert f"<td>—</td><td>{items}</td></tr>" in page
    assert "99.000000" not in page


def test_the_trace_list_shows_each_traces_cost(staff_client):
    AgentTraceFactory(session_id="priced", cost=Decimal("0.0123"), unpriced_calls=2)
    AgentTraceFactory(session_id="unpriced", unpriced_calls=3)
    AgentTraceFactory(session_id="no-calls")
    ProjectFactory(slug="theirs")
    AgentTraceFactory(session_id="theirs", project=Project.objects.get(slug="theirs"), cost=Decimal("99"))
    html = staff_client.get("/console/traces/").content.decode()
    assert '<td class="cost">$0.012300 + 2 unpriced</td>' in html
    assert '<td class="cost">— + 3 unpriced</td>' in html
    assert '<td class="cost">—</td>' in html
    assert "$99" not in html


def test_the_trace_page_shows_its_cost_when_it_has_model_calls(staff_client):
    AgentTraceFactory(session_id="priced", cost=Decimal("0.0123"), unpriced_calls=2)
    AgentTraceFactory(session_id="no-calls")
    page = staff_client.get("/console/traces/priced/").content.decode()
    assert '<span id="trace-cost" title="USD' in page and "cost $0.012300 + 2 unpriced</span>" in page
    # A trace with no model calls has nothing to price: no cost line, rather than a "—" that reads as unknown.
    assert 'id="trace-cost"' not in staff_client.get("/console/traces/no-calls/").content.decode()


def test_the_dashboard_adds_the_traces_spend_per_day_beside_the_runs(reader_client):
    today = datetime.now(UTC).date()
    trace_spend_day_add(project_id=Project.objects.default().pk, day=today, amount=Decimal("1.5"), unpriced_calls=4)
    theirs = ProjectFactory(slug="theirs")
    trace_spend_day_add(project_id=theirs.pk, day=today, amount=Decimal("99"), unpriced_calls=0)
    html = reader_client.get("/console/").content.decode()
    assert 'Total <small class="muted">runs + traces</small>' in html
    assert (
        f"<tr><td>{today.isoformat()}</td><td>$1.500000</td><td>—</td><td>—</td><td>$1.500000</td><td>4</td></tr>"
        in html
    )
    assert "99.000000" not in html
