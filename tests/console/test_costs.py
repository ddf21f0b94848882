"""The console shows what runs cost: a column in the run list and a card on the run page, with the
unpriced calls beside the amount, never "$0" for calls nobody could price."""

from decimal import Decimal

import pytest

from apps.runs.models import EvaluationRun

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
