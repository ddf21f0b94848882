"""What OTLP traces cost, per model (apps.traces.costs, the assembly's otel.usage_by_model): kept on
the trace when it is stored and when late spans join it, added to the project's spend per day by
its change, shown in the trace list and the dashboard, and counted by evalsite_cost_usd_total.

Spans are protobuf built by hand (ids and start times under the test's control) posted to
POST /v1/traces as an exporter does."""

import importlib
import random
import threading
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from django.db import connections
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from apps.core.models import Project
from apps.core.services import api_key_create
from apps.traces.costs import trace_cost
from apps.traces.ingestion.otlp.assembly import MAX_MODELS_PER_TRACE
from apps.traces.models import AgentTrace, TraceSpendDay
from apps.traces.spend import trace_spend_day_add
from tests.core.factories import ProjectFactory, project_key_client
from tests.prometheus_text import sample
from tests.traces.factories import AgentTraceFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("shipped_prices")]

PROTOBUF = "application/x-protobuf"
DAY = date(2026, 1, 8)
START_NS = int(datetime(2026, 1, 8, 10, tzinfo=UTC).timestamp()) * 10**9
MILLION = 1_000_000
# Shipped prices (core/0010), USD per million tokens: gpt-4o 2.50 in / 10.00 out, gpt-4o-mini 0.15 / 0.60.
GPT_4O_1M_IN = Decimal("2.5")
GPT_4O_MINI_1M_OUT = Decimal("0.6")


def _attr(key: str, value) -> KeyValue:
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


class Trace:
    def __init__(self, seed: int = 0, start_ns: int = START_NS):
        rng = random.Random(seed)
        self.trace_id, self.root_id, self.rng, self.start_ns = rng.randbytes(16), rng.randbytes(8), rng, start_ns

    def root(self, **attributes) -> Span:
        return Span(
            trace_id=self.trace_id,
            span_id=self.root_id,
            name="invoke_agent",
            start_time_unix_nano=self.start_ns,
            end_time_unix_nano=self.start_ns + 10**10,
            attributes=[_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", "Agent")]
            + [_attr(k, v) for k, v in attributes.items()],
        )

    def llm(self, model: str | None, *, input_tokens: int = 0, output_tokens: int = 0, at_us: int = 1000) -> Span:
        attrs = [
            _attr("gen_ai.operation.name", "chat"),
            _attr("gen_ai.usage.input_tokens", input_tokens),
            _attr("gen_ai.usage.output_tokens", output_tokens),
        ]
        if model:
            attrs.append(_attr("gen_ai.request.model", model))
        start = self.start_ns + at_us * 1000
        return Span(
            trace_id=self.trace_id,
            span_id=self.rng.randbytes(8),
            parent_span_id=self.root_id,
            name=f"chat {model}",
            start_time_unix_nano=start,
            end_time_unix_nano=start + 500,
            attributes=attrs,
        )


def body(spans: list[Span]) -> bytes:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.append(_attr("service.name", "cost-test"))
    resource_spans.scope_spans.add().spans.extend(spans)
    return request.SerializeToString()


@pytest.fixture
def client_key(db) -> Client:
    _key, raw = api_key_create(username="otel-costs", staff=False, scopes=["ingest", "read"])
    return Client(HTTP_AUTHORIZATION=f"Bearer {raw}")


def export(client: Client, spans: list[Span]) -> None:
    response = client.post("/v1/traces", body(spans), content_type=PROTOBUF)
    assert response.status_code == 200, response.content


def stored(trace: Trace) -> AgentTrace:
    return AgentTrace.objects.get(otel_trace_id=trace.trace_id.hex())


def day_spend(project=None, day=DAY) -> tuple[Decimal | None, int] | None:
    row = TraceSpendDay.objects.filter(project=project or Project.objects.default(), day=day).first()
    return None if row is None else (row.amount, row.unpriced_calls)


def test_several_priced_models_are_each_priced_at_their_price(client_key):
    t = Trace()
    export(
        client_key,
        [
            t.root(),
            t.llm("gpt-4o", input_tokens=MILLION),
            t.llm("gpt-4o-mini-2024-07-18", output_tokens=MILLION, at_us=2000),
            t.llm("gpt-4o-mini-2024-07-18", output_tokens=MILLION, at_us=3000),
        ],
    )
    trace = stored(t)
    otel = trace.metadata["otel"]
    assert otel["usage_by_model"] == {
        "gpt-4o": {"input_tokens": MILLION, "output_tokens": 0, "calls": 1},
        "gpt-4o-mini-2024-07-18": {"input_tokens": 0, "output_tokens": 2 * MILLION, "calls": 2},
    }
    # The summed usage the API has shown since OTLP ingestion began is kept as it was.
    assert otel["usage"] == {"input_tokens": MILLION, "output_tokens": 2 * MILLION}
    expected = GPT_4O_1M_IN + 2 * GPT_4O_MINI_1M_OUT
    assert (trace.cost, trace.unpriced_calls) == (expected, 0)
    answer = client_key.get(f"/api/v1/metrics/trace/{trace.session_id}").json()
    assert answer["cost"] == {"amount": "3.700000", "currency": "USD", "unpriced_calls": 0}
    assert day_spend() == (expected, 0)


def test_an_unpriced_model_among_priced_ones_is_counted_beside_the_priced_part(client_key):
    t = Trace()
    export(
        client_key,
        [
            t.root(),
            t.llm("gpt-4o", input_tokens=MILLION),
            t.llm("my-finetune", input_tokens=10, at_us=2000),
            t.llm("my-finetune", output_tokens=10, at_us=3000),
        ],
    )
    trace = stored(t)
    assert (trace.cost, trace.unpriced_calls) == (GPT_4O_1M_IN, 2)
    assert day_spend() == (GPT_4O_1M_IN, 2)


def test_a_span_with_tokens_and_no_model_is_unpriced(client_key):
    t = Trace()
    export(client_key, [t.root(), t.llm(None, input_tokens=500)])
    trace = stored(t)
    assert trace.metadata["otel"]["usage_by_model"] == {"": {"input_tokens": 500, "output_tokens": 0, "calls": 1}}
    # Nothing priced: no amount at all, never $0.
    assert (trace.cost, trace.unpriced_calls) == (None, 1)
    assert day_spend() == (None, 1)


def test_a_trace_before_every_valid_from_of_its_model_is_unpriced(client_key):
    t = Trace(start_ns=int(datetime(2020, 1, 1, tzinfo=UTC).timestamp()) * 10**9)
    export(client_key, [t.root(), t.llm("gpt-4o", input_tokens=MILLION)])
    assert (stored(t).cost, stored(t).unpriced_calls) == (None, 1)
    # Its day is the day it started (and was priced at), not the day it arrived.
    assert day_spend(day=date(2020, 1, 1)) == (None, 1)


def test_late_spans_change_the_cost_and_the_day_by_their_difference_only(client_key):
    t = Trace()
    late = t.llm("gpt-4o-mini", output_tokens=MILLION, at_us=5000)
    export(client_key, [t.root(), t.llm("gpt-4o", input_tokens=MILLION)])
    assert day_spend() == (GPT_4O_1M_IN, 0)
    export(client_key, [late, t.llm("my-finetune", input_tokens=1, at_us=6000)])
    trace = stored(t)
    assert (trace.cost, trace.unpriced_calls) == (GPT_4O_1M_IN + GPT_4O_MINI_1M_OUT, 1)
    assert trace.metadata["otel"]["usage"] == {"input_tokens": MILLION + 1, "output_tokens": MILLION}
    # The day holds the trace's cost once: the merge added the difference, not the whole again.
    assert day_spend() == (GPT_4O_1M_IN + GPT_4O_MINI_1M_OUT, 1)
    # The same span sent again is a duplicate: nothing changes.
    export(client_key, [late])
    assert day_spend() == (GPT_4O_1M_IN + GPT_4O_MINI_1M_OUT, 1)
    assert stored(t).cost == GPT_4O_1M_IN + GPT_4O_MINI_1M_OUT


def test_children_that_waited_for_their_root_are_priced_with_it(client_key):
    t = Trace()
    export(client_key, [t.llm("gpt-4o", input_tokens=MILLION), t.llm("gpt-4o", input_tokens=MILLION, at_us=2000)])
    assert not AgentTrace.objects.exists()
    export(client_key, [t.root()])
    assert stored(t).cost == 2 * GPT_4O_1M_IN
    assert day_spend() == (2 * GPT_4O_1M_IN, 0)


def test_models_beyond_the_bound_are_counted_unpriced(client_key):
    t = Trace()
    spans = [t.llm(f"model-{i}", input_tokens=1, at_us=1000 + i) for i in range(MAX_MODELS_PER_TRACE + 3)]
    export(client_key, [t.root(), *spans])
    by_model = stored(t).metadata["otel"]["usage_by_model"]
    assert len(by_model) == MAX_MODELS_PER_TRACE + 1
    assert by_model[""] == {"input_tokens": 3, "output_tokens": 0, "calls": 3}
    assert stored(t).unpriced_calls == MAX_MODELS_PER_TRACE + 3


def test_another_projects_trace_and_spend_are_its_own(client_key):
    theirs = ProjectFactory(slug="theirs")
    their_client = project_key_client(theirs, scopes=["ingest", "read"])
    t = Trace()
    their_client.post("/v1/traces", body([t.root(), t.llm("gpt-4o", input_tokens=MILLION)]), content_type=PROTOBUF)
    trace = AgentTrace.objects.get(project=theirs)
    assert trace.cost == GPT_4O_1M_IN
    assert client_key.get(f"/api/v1/metrics/trace/{trace.session_id}").status_code == 404
    assert day_spend() is None and day_spend(project=theirs) == (GPT_4O_1M_IN, 0)


def test_a_trace_stored_before_keeps_the_summed_rule_and_late_spans_add_beside_it(client_key):
    """A trace assembled before usage_by_model: one model priced on its summed tokens, several
    models unpriced. Late spans do not reprice that part: it becomes its split as the old rule read it."""
    t = Trace()
    export(client_key, [t.root(), t.llm("gpt-4o", input_tokens=MILLION)])
    trace = stored(t)
    otel = dict(trace.metadata["otel"])
    del otel["usage_by_model"]
    AgentTrace.objects.filter(pk=trace.pk).update(metadata={"otel": otel})
    trace.refresh_from_db()
    assert trace_cost(trace).amount == GPT_4O_1M_IN
    export(client_key, [t.llm("gpt-4o-mini", output_tokens=MILLION, at_us=4000)])
    trace.refresh_from_db()
    assert trace.metadata["otel"]["usage_by_model"]["gpt-4o"] == {
        "input_tokens": MILLION,
        "output_tokens": 0,
        "calls": 1,
    }
    assert (trace.cost, trace.unpriced_calls) == (GPT_4O_1M_IN + GPT_4O_MINI_1M_OUT, 0)
    assert day_spend() == (GPT_4O_1M_IN + GPT_4O_MINI_1M_OUT, 0)


def test_the_backfill_prices_traces_stored_before_by_the_summed_rule():
    from django.apps import apps as django_apps

    def legacy(models, usage, day):
        meta = {"otel": {"models": models, "usage": usage, "spans": [{"kind": "llm"}, {"kind": "llm"}]}}
        return AgentTraceFactory(source="otlp", metadata=meta, start_time=datetime(*day, 12, tzinfo=UTC))

    one = legacy(["gpt-4o"], {"input_tokens": MILLION}, (2026, 1, 8))
    several = legacy(["gpt-4o", "gpt-4o-mini"], {"input_tokens": 10}, (2026, 1, 8))
    early = legacy(["gpt-4o"], {"input_tokens": 10}, (2020, 1, 1))
    untouched = AgentTraceFactory(source="rest")
    importlib.import_module("apps.traces.migrations.0019_trace_cost_backfill").backfill(django_apps, None)
    for trace in (one, several, early, untouched):
        trace.refresh_from_db()
    assert (one.cost, one.unpriced_calls) == (GPT_4O_1M_IN, 0)
    assert (several.cost, several.unpriced_calls) == (None, 2)
    assert (early.cost, early.unpriced_calls) == (None, 2)
    assert (untouched.cost, untouched.unpriced_calls) == (None, 0)
    assert day_spend() == (GPT_4O_1M_IN, 2)
    assert day_spend(day=date(2020, 1, 1)) == (None, 2)


def test_retention_deleting_a_trace_leaves_its_days_spend(client_key):
    t = Trace()
    export(client_key, [t.root(), t.llm("gpt-4o", input_tokens=MILLION)])
    AgentTrace.objects.filter(pk=stored(t).pk).delete()
    assert day_spend() == (GPT_4O_1M_IN, 0)


def test_the_cost_column_has_the_runs_digits():
    from apps.runs.models import COST_DIGITS, COST_PLACES
    from apps.traces import models

    assert (models.COST_DIGITS, models.COST_PLACES) == (COST_DIGITS, COST_PLACES)


# --- Prometheus (the console's column and spend per day: tests/console/test_costs.py) ----------------


def test_prometheus_counts_the_traces_spend_by_project(client):
    theirs = ProjectFactory(slug="theirs")
    default = Project.objects.default()
    trace_spend_day_add(project_id=default.pk, day=DAY, amount=Decimal("1.25"), unpriced_calls=0)
    trace_spend_day_add(project_id=default.pk, day=date(2026, 1, 9), amount=Decimal("0.5"), unpriced_calls=2)
    trace_spend_day_add(project_id=theirs.pk, day=DAY, amount=None, unpriced_calls=7)
    text = client.get("/metrics").content.decode()
    assert sample(text, "evalsite_cost_usd_total", project="default", kind="trace") == 1.75
    # Only unpriced calls: no series, not a $0 one.
    assert sample(text, "evalsite_cost_usd_total", project="theirs", kind="trace") is None


# --- concurrent writers of one day ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_writers_of_a_new_day_lose_no_increment(on_postgres):
    """Both find no row, both insert: the loser's IntegrityError turns into an UPDATE of the row the
    winner committed. Each thread adds in its own transactions, as two OTLP requests do."""
    from django.db import transaction

    project_id = Project.objects.default().pk
    rounds, barrier, errors = 20, threading.Barrier(2), []

    def writer():
        try:
            for n in range(rounds):
                barrier.wait(10)
                with transaction.atomic():
                    day = date(2026, 2, 1 + n)
                    trace_spend_day_add(project_id=project_id, day=day, amount=Decimal("0.001"), unpriced_calls=1)
        except Exception as exc:  # noqa: BLE001  (reported by the assertion below)
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    rows = TraceSpendDay.objects.filter(project_id=project_id).order_by("day")
    assert [(r.amount, r.unpriced_calls) for r in rows] == [(Decimal("0.002"), 2)] * rounds


def test_the_trace_admin_shows_the_cost_as_the_console_does(admin_client):
    shown = {}
    for name, cost, unpriced in (("priced", "0.0123", 0), ("mixed", "0.5", 2), ("unpriced", None, 3)):
        trace = AgentTraceFactory(session_id=name, cost=cost and Decimal(cost), unpriced_calls=unpriced)
        shown[name] = admin_client.get(f"/admin/traces/agenttrace/{trace.pk}/change/").content.decode()
    assert "$0.012300" in shown["priced"]
    assert "$0.500000 + 2 unpriced" in shown["mixed"]
    assert "— + 3 unpriced" in shown["unpriced"] and "$0.000000" not in shown["unpriced"], "never $0"
