"""A trace's client-chosen ids (session id, OpenTelemetry trace id) stay unique per project now that
the constraints live on TraceKey, kept by triggers on the traces table (apps.traces.trace_keys,
traces.0020): whatever writes a trace — the ORM, the bulk writer's COPY, raw SQL — is refused in the
same statement when its project has the id, the key follows the trace when it changes, and it goes
with the trace, so the id can be used again. On both databases."""

import pytest
from django.db import IntegrityError, connection, transaction

from apps.traces.ingestion.writer import traces_insert
from apps.traces.models import AgentTrace, TraceKey
from apps.traces.services import traces_expire
from tests.core.factories import ProjectFactory
from tests.traces.factories import AgentTraceFactory


def keys() -> set[tuple]:
    return set(TraceKey.objects.values_list("trace_id", "project_id", "session_id", "otel_trace_id"))


@pytest.mark.django_db
def test_every_trace_has_its_key_row_written_by_the_database():
    trace = AgentTraceFactory(session_id="s-1")
    otlp = AgentTraceFactory(session_id="s-2", otel_trace_id="a" * 32)
    assert keys() == {
        (trace.pk, trace.project_id, "s-1", None),
        (otlp.pk, otlp.project_id, "s-2", "a" * 32),
    }


@pytest.mark.django_db
def test_a_session_id_taken_in_the_project_is_refused_and_nothing_is_stored():
    first = AgentTraceFactory(session_id="same")
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentTraceFactory(session_id="same", project=first.project)
    assert AgentTrace.objects.count() == 1 and TraceKey.objects.count() == 1
    # Another project's session may have the same id: two traces, no conflict.
    other = AgentTraceFactory(session_id="same", project=ProjectFactory())
    assert AgentTrace.objects.filter(session_id="same").count() == 2
    assert (other.pk, other.project_id, "same", None) in keys()


@pytest.mark.django_db
def test_an_otel_trace_id_taken_in_the_project_is_refused_and_absent_ones_never_collide():
    first = AgentTraceFactory(otel_trace_id="b" * 32)
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentTraceFactory(otel_trace_id="b" * 32, project=first.project)
    AgentTraceFactory(otel_trace_id="b" * 32, project=ProjectFactory())
    # Most traces (REST, batch) have none: NULLs never conflict.
    AgentTraceFactory.create_batch(3)
    assert AgentTrace.objects.count() == 5 == TraceKey.objects.count()


@pytest.mark.django_db
def test_the_bulk_writer_is_held_to_the_keys_in_one_statement():
    """The batch and OTLP doors' writer (COPY on PostgreSQL): a batch holding a taken session id, or
    the same id twice, raises and stores none of it, as the constraints on the traces did."""
    project = ProjectFactory()
    AgentTraceFactory(session_id="taken", project=project)

    def batch(*session_ids):
        return [AgentTrace(project=project, session_id=s, agent_name="a", user_query="q") for s in session_ids]

    for session_ids in (("new-1", "taken"), ("new-1", "new-1")):
        with pytest.raises(IntegrityError), transaction.atomic():
            traces_insert(traces=batch(*session_ids))
        assert AgentTrace.objects.filter(project=project).count() == 1 == TraceKey.objects.count()
    stored = traces_insert(traces=batch("new-1", "new-2"))
    assert {(t.pk, "new-1") for t in stored[:1]} | {(t.pk, "new-2") for t in stored[1:]} == set(
        TraceKey.objects.filter(session_id__startswith="new").values_list("trace_id", "session_id")
    )


@pytest.mark.django_db
def test_raw_sql_is_held_to_the_keys_too():
    trace = AgentTraceFactory(session_id="raw")
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO traces_agenttrace (project_id, session_id, agent_name, user_query, status, start_time, "
            "tool_call_count, metadata, source, truncated, dropped, created_at, updated_at) "
            "SELECT project_id, session_id, agent_name, user_query, status, start_time, tool_call_count, metadata, "
            "source, truncated, dropped, created_at, updated_at FROM traces_agenttrace WHERE id = %s",
            [trace.pk],
        )
    assert AgentTrace.objects.count() == 1


@pytest.mark.django_db
def test_the_key_follows_a_changed_id_and_frees_the_old_one():
    trace = AgentTraceFactory(session_id="before")
    AgentTrace.objects.filter(pk=trace.pk).update(session_id="after", otel_trace_id="c" * 32)
    assert keys() == {(trace.pk, trace.project_id, "after", "c" * 32)}
    # A change of anything else leaves the key alone, and the freed id can be taken.
    AgentTrace.objects.filter(pk=trace.pk).update(agent_name="renamed")
    AgentTraceFactory(session_id="before", project=trace.project)
    # Changing to an id the project has is refused like an insert.
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentTrace.objects.filter(pk=trace.pk).update(session_id="before")
    assert AgentTrace.objects.get(pk=trace.pk).session_id == "after"


@pytest.mark.django_db
def test_the_key_goes_with_its_trace_and_the_id_can_be_sent_again():
    project = ProjectFactory(retention_days=30)
    one, two, three = (AgentTraceFactory(session_id=f"gone-{i}", project=project) for i in range(3))
    one.delete()
    AgentTrace.objects.filter(pk=two.pk).delete()
    # Retention's batches delete by statement, not through the ORM's collector.
    AgentTrace.objects.filter(pk=three.pk).update(created_at=three.created_at.replace(year=2000))
    assert traces_expire(project, three.created_at.replace(year=2001), 100) == 1
    assert not TraceKey.objects.exists()
    for i in range(3):
        AgentTraceFactory(session_id=f"gone-{i}", project=project)
    assert TraceKey.objects.count() == 3


@pytest.mark.django_db
def test_truncating_the_traces_empties_the_keys(on_postgres):
    """PostgreSQL: TRUNCATE fires no DELETE trigger; its own trigger empties the keys, so a script
    that empties the traces (the benches do) can store the same session ids again."""
    trace = AgentTraceFactory(session_id="truncated")
    with connection.cursor() as cursor:
        # The foreign key checks the test's transaction deferred must run before a TRUNCATE.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("TRUNCATE traces_toolcall, traces_agenttrace")
    assert not TraceKey.objects.exists()
    AgentTraceFactory(session_id="truncated", project=trace.project)
    assert TraceKey.objects.count() == 1
