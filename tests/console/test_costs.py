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
