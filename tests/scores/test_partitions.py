"""Agentic and RAG evaluations and their Score rows on PostgreSQL are partitioned by evaluation id
range (scores.0003, agentic.0013, rag.0008, apps.scores.partitions), so that retention returns
their disk space: after the pass's batches have deleted the expired evaluations (reading their
verdicts, which the running totals behind /summary lose with them), a range no evaluation is left in
is dropped whole, the evaluations' partition and their verdicts' alike, and their files go; one that
still holds an evaluation stays. Run results' and traces' Score rows sit in one default partition.
Other databases have no partitions and nothing changes."""

import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings
from django.utils import timezone

from apps.agentic.models import AgentEvaluation, EvaluationRollup, OnlineVerdict
from apps.agentic.selectors import evaluation_summary
from apps.agentic.services import evaluation_rollup_rebuild
from apps.core import retention
from apps.rag.models import TraceEvaluation
from apps.scores.models import Score
from apps.scores.partitions import PARTITIONS
from apps.scores.vocabulary import SubjectKind
from apps.traces import partitions
from apps.traces.tasks import ensure_partitions
from tests.agentic.factories import AgentEvaluationFactory, EvaluationRuleFactory
from tests.core.factories import ProjectFactory
from tests.rag.factories import TraceEvaluationFactory

AGENTIC = PARTITIONS[SubjectKind.AGENTIC_EVALUATION]
RAG = PARTITIONS[SubjectKind.RAG_EVALUATION]
# The evaluations' own tables, partitioned by their id in wider ranges (the tests narrow both).
AGENTIC_OWN = AgentEvaluation._meta.db_table
RAG_OWN = TraceEvaluation._meta.db_table
EVERY = (AGENTIC, RAG, AGENTIC_OWN, RAG_OWN)


def table(parent: str) -> partitions.RangePartitions:
    return next(t for t in partitions.registered() if t.parent == parent)


def partitions_of(subject_kind: str, subject_id: int) -> set[str]:
    """The tables that hold the subject's Score rows, as PostgreSQL routed them."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT DISTINCT tableoid::regclass::text FROM scores_score WHERE subject_kind = %s AND subject_id = %s",
            [subject_kind, subject_id],
        )
        return {row[0] for row in cursor.fetchall()}


def table_bytes(name: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_total_relation_size(to_regclass(%s))", [name])
        return cursor.fetchone()[0]


def names(parent: str) -> set[str]:
    return {p.name for p in table(parent).partitions()}


def covering_lo(parent: str, pk: int) -> int:
    return next(p.lo for p in table(parent).partitions() if p.lo <= pk < p.hi)


def routed(model, pk: int) -> str:
    """The partition PostgreSQL put the row in."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {model._meta.db_table} WHERE id = %s", [pk])
        return cursor.fetchone()[0]


@pytest.fixture
def fresh(on_postgres):
    """A new partition of 10 evaluation ids above every other, of agentic and RAG evaluations and of
    their Score rows (one range in all four), for a test that drops one. A pass drops it, and
    the empty partitions below the test's rows of every partitioned table (in a test database every
    lower one is empty): a dropped partition stays dropped for the rest of the session (DDL commits;
    the flush after a transaction=True test only empties tables), so every one the test found is
    put back afterwards, and the ranges stay contiguous for the tests that follow."""
    with override_settings(EVALSITE_SCORE_PARTITION_SUBJECTS=10, EVALSITE_EVALUATION_PARTITION_IDS=10):
        made = {}
        lo = max(table(parent).partitions()[-1].hi for parent in EVERY)
        for parent in EVERY:
            last = table(parent).partitions()[-1]
            if last.hi < lo:
                # The evaluations' partitions are wider than their Score rows' (settings): one
                # partition up to the common bound keeps the ranges contiguous.
                assert table(parent)._attach(last.hi, lo) is True
            table(parent).ensure(upto=lo)
            made[parent] = next(p for p in table(parent).partitions() if p.lo == lo)
        before = {t.parent: t.partitions() for t in partitions.registered()}
        yield made
    for parent, listed in before.items():
        left = names(parent)
        for p in listed:
            if p.name not in left:
                assert table(parent)._attach(p.lo, p.hi) is True


def evaluation(partition: partitions.Partition, offset: int, project, *, days: int = 0, **fields) -> AgentEvaluation:
    created = AgentEvaluationFactory(id=partition.lo + offset, project=project, trace=None, **fields)
    if days:
        AgentEvaluation.objects.filter(pk=created.pk).update(created_at=timezone.now() - timedelta(days=days))
    return created


def rag_evaluation(partition: partitions.Partition, offset: int, project, *, days: int = 0) -> TraceEvaluation:
    created = TraceEvaluationFactory(id=partition.lo + offset, project=project)
    if days:
        TraceEvaluation.objects.filter(pk=created.pk).update(created_at=timezone.now() - timedelta(days=days))
    return created


def score_rows() -> list[tuple]:
    return list(Score.objects.order_by("pk").values_list("pk", "subject_kind", "subject_id", "key", "value"))


# --- PostgreSQL ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_score_rows_go_to_the_partition_of_their_subject(on_postgres):
    assert all(table(parent).partitioned() for parent in EVERY)
    for parent in EVERY:
        ranges = table(parent).partitions()
        assert ranges[0].lo == 0
        assert all(a.hi == b.lo for a, b in zip(ranges, ranges[1:], strict=False)), "contiguous ranges"
    agentic = AgentEvaluationFactory()
    rag = TraceEvaluationFactory()
    covering = next(p for p in table(AGENTIC).partitions() if p.lo <= agentic.pk < p.hi)
    assert partitions_of(SubjectKind.AGENTIC_EVALUATION, agentic.pk) == {covering.name}
    covering = next(p for p in table(RAG).partitions() if p.lo <= rag.pk < p.hi)
    assert partitions_of(SubjectKind.RAG_EVALUATION, rag.pk) == {covering.name}
    # The ORM reads and writes them as one table, lookups by id included.
    score = Score.objects.filter(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_id=agentic.pk).first()
    Score.objects.filter(pk=score.pk).update(reasoning="renamed")
    assert Score.objects.get(pk=score.pk).reasoning == "renamed"
    # The evaluations themselves, in the partition of their id in their own table.
    assert routed(AgentEvaluation, agentic.pk) == f"{AGENTIC_OWN}_p{covering_lo(AGENTIC_OWN, agentic.pk)}"
    assert routed(TraceEvaluation, rag.pk) == f"{RAG_OWN}_p{covering_lo(RAG_OWN, rag.pk)}"
    AgentEvaluation.objects.filter(pk=agentic.pk).update(agent_name="renamed")
    assert AgentEvaluation.objects.get(pk=agentic.pk).agent_name == "renamed"
    # Another kind goes to the default partition of the list.
    other = Score.objects.create(subject_kind=SubjectKind.RUN_RESULT, subject_id=agentic.pk, key="x", kind="criterion")
    assert partitions_of(SubjectKind.RUN_RESULT, agentic.pk) == {"scores_score_other"}
    assert other.pk > score.pk, "one id sequence for every partition"


@pytest.mark.django_db(transaction=True)
def test_a_partition_whose_evaluations_all_expired_is_dropped_after_the_batches_and_the_totals_stay_right(fresh):
    """transaction=True: the pass commits as in production (PostgreSQL frees a dropped table's files
    at commit)."""
    project = ProjectFactory(retention_days=30)
    partition = fresh[AGENTIC]
    # The same agent, operation and rating as the live one: one running total holds all four.
    expired = [evaluation(partition, i, project, days=40, task_adherence=0.75) for i in range(3)]
    # Past the range, so the sequence has passed it; kept (fresh), with verdicts of its own.
    live = evaluation(partition, 11, project, task_adherence=0.7)
    # An online rule's verdict: its OnlineVerdict row goes with it.
    rule = EvaluationRuleFactory(project=project)
    OnlineVerdict.objects.create(evaluation=expired[0], trace_id=10**9, judge="j", fingerprint="f", rule=rule)
    own = fresh[AGENTIC_OWN]
    assert routed(AgentEvaluation, expired[0].pk) == own.name
    evaluation_rollup_rebuild()
    assert EvaluationRollup.objects.get(project=project).count == 4
    assert table_bytes(partition.name) > 0 and table_bytes(own.name) > 0
    assert partition in table(AGENTIC).reclaimable(timezone.now())
    assert own in table(AGENTIC_OWN).reclaimable(timezone.now())

    done = retention.retention_apply(pause_seconds=0)

    (bulk,) = [e for e in done if e.kind.startswith("agentic evaluation score partitions")]
    assert bulk.project == "" and bulk.count >= 1
    assert done[-1] is bulk or done.index(bulk) > max(i for i, e in enumerate(done) if e.project), "after the batches"
    assert table_bytes(partition.name) is None, "the partition's files are gone"
    assert partition.name not in names(AGENTIC)
    (own_bulk,) = [e for e in done if e.kind.startswith("agentic evaluation partitions")]
    assert own_bulk.count >= 1 and done.index(own_bulk) > max(i for i, e in enumerate(done) if e.project)
    assert table_bytes(own.name) is None, "the evaluations' own partition went too"
    assert routed(AgentEvaluation, live.pk) != own.name
    assert not OnlineVerdict.objects.exists()
    assert next(e.count for e in done if e.project == project.slug and e.kind == "agentic_evaluations") == 3
    assert not AgentEvaluation.objects.filter(pk__in=[e.pk for e in expired]).exists()
    assert not Score.objects.filter(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_id__in=[e.pk for e in expired])
    assert live.metrics["task_adherence"].value == 0.7
    # The batches took the expired verdicts out of the running totals before their rows went: the
    # totals are what a rebuild from the rows left gives.
    kept = evaluation_summary(project_id=project.pk)
    assert kept["total_evaluations"] == 1 and kept["average_scores"]["task_adherence"] == 0.7
    evaluation_rollup_rebuild()
    assert evaluation_summary(project_id=project.pk) == kept
    assert EvaluationRollup.objects.filter(project=project, count__gt=0).count() == 1
    assert not table(AGENTIC).reclaimable(timezone.now()), "a second pass has nothing to drop"
    assert not table(AGENTIC_OWN).reclaimable(timezone.now())


@pytest.mark.django_db(transaction=True)
def test_a_partition_holding_an_evaluation_still_kept_stays(fresh):
    thirty = ProjectFactory(retention_days=30)
    forever = ProjectFactory(retention_days=None)
    partition = fresh[AGENTIC]
    expired = evaluation(partition, 0, thirty, days=40)
    kept = evaluation(partition, 5, forever, days=400)
    evaluation(partition, 11, thirty)
    assert partition not in table(AGENTIC).reclaimable(timezone.now())

    retention.retention_apply(pause_seconds=0)

    assert partition.name in names(AGENTIC)
    assert fresh[AGENTIC_OWN].name in names(AGENTIC_OWN)
    assert routed(AgentEvaluation, kept.pk) == fresh[AGENTIC_OWN].name
    assert not AgentEvaluation.objects.filter(pk=expired.pk).exists()
    assert not Score.objects.filter(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_id=expired.pk).exists()
    assert Score.objects.filter(subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_id=kept.pk).count() == 3


@pytest.mark.django_db(transaction=True)
def test_a_partition_whose_expired_evaluations_are_not_deleted_yet_is_not_dropped(fresh):
    """The bulk step runs after the batches and drops only what they emptied: an expired
    evaluation still stored (its project's pass has not reached it) keeps its verdicts, which its
    expiry will read."""
    project = ProjectFactory(retention_days=30)
    partition = fresh[AGENTIC]
    waiting = evaluation(partition, 0, project, days=40)
    evaluation(partition, 11, project)
    assert partition in table(AGENTIC).reclaimable(timezone.now()), "expired, so a dry run lists it"
    table(AGENTIC).reclaim(timezone.now())
    table(AGENTIC_OWN).reclaim(timezone.now())
    assert partition.name in names(AGENTIC)
    assert fresh[AGENTIC_OWN].name in names(AGENTIC_OWN)
    assert waiting.metrics["task_adherence"].value == 0.9


@pytest.mark.django_db(transaction=True)
def test_rag_evaluations_partitions_go_the_same_way(fresh):
    project = ProjectFactory(retention_days=30)
    partition = fresh[RAG]
    expired = [rag_evaluation(partition, i, project, days=40) for i in range(2)]
    live = rag_evaluation(partition, 12, project)
    assert table_bytes(partition.name) > 0

    done = retention.retention_apply(pause_seconds=0)

    assert any(e.kind.startswith("RAG evaluation score partitions") and e.count >= 1 for e in done)
    assert any(e.kind.startswith("RAG evaluation partitions") and e.count >= 1 for e in done)
    assert table_bytes(partition.name) is None
    assert table_bytes(fresh[RAG_OWN].name) is None
    assert TraceEvaluation.objects.get(pk=live.pk).pk == live.pk
    assert not TraceEvaluation.objects.filter(pk__in=[e.pk for e in expired]).exists()
    assert Score.objects.filter(subject_kind=SubjectKind.RAG_EVALUATION, subject_id=live.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_the_dry_run_names_them_and_the_command_lists_every_partitioned_table(fresh):
    project = ProjectFactory(retention_days=30)
    partition = fresh[AGENTIC]
    evaluation(partition, 0, project, days=40)
    evaluation(partition, 11, project)
    reclaimable = table(AGENTIC).reclaimable(timezone.now())
    assert partition in reclaimable
    out = io.StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    assert f"all projects: would drop {len(reclaimable)} agentic evaluation score partitions" in out.getvalue()
    own = len(table(AGENTIC_OWN).reclaimable(timezone.now()))
    assert own >= 1 and f"all projects: would drop {own} agentic evaluation partitions" in out.getvalue()
    assert partition.name in names(AGENTIC), "a dry run drops nothing"
    assert fresh[AGENTIC_OWN].name in names(AGENTIC_OWN)
    listing = io.StringIO()
    call_command("partitions", stdout=listing)
    for name in (partition.name, fresh[AGENTIC_OWN].name, *(f"{parent}_default" for parent in EVERY)):
        assert name in listing.getvalue()


@pytest.mark.django_db
def test_beat_keeps_every_registered_table_ahead_of_its_ids(on_postgres, settings):
    """The one-minute beat task ensures the tool calls' partitions and the Score rows' alike."""
    assert {"apps.traces.tasks.ensure_partitions"} <= {e["task"] for e in settings.CELERY_BEAT_SCHEDULE.values()}
    settings.EVALSITE_SCORE_PARTITION_SUBJECTS = 1000
    settings.EVALSITE_EVALUATION_PARTITION_IDS = 1000
    last = table(AGENTIC).partitions()[-1]
    # Beyond every partition: its Score rows wait in the default one, and the next partition starts above.
    AgentEvaluationFactory(id=last.hi + 10)
    assert ensure_partitions() >= partitions.AHEAD
    ahead = table(AGENTIC).partitions()
    assert ahead[-1].hi >= last.hi + 10 + partitions.AHEAD * 1000
    assert min(p.lo for p in ahead if p.lo >= last.hi) > last.hi + 10
    # The evaluations' own table likewise, its row having waited in its default partition.
    own = table(AGENTIC_OWN).partitions()
    assert own[-1].hi >= last.hi + 10 + partitions.AHEAD * 1000


@pytest.mark.django_db
def test_the_command_refuses_what_it_cannot_do(on_postgres):
    with pytest.raises(CommandError, match="--upto goes with --ensure and --table"):
        call_command("partitions", "--ensure", "--upto", "5")
    with pytest.raises(CommandError, match="scores_score is not a partitioned table here .*scores_score_agentic"):
        call_command("partitions", "--table", "scores_score")
    out = io.StringIO()
    call_command("partitions", "--ensure", "--table", RAG, "--upto", "5", stdout=out)
    assert out.getvalue().startswith(f"{RAG}: created ") and "traces_toolcall" not in out.getvalue()


BEFORE = [("scores", "0002_score_parent_key_cover")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_keeps_every_score_row_both_ways(on_postgres):
    agentic = AgentEvaluationFactory()
    rag = TraceEvaluationFactory()
    Score.objects.create(subject_kind=SubjectKind.RUN_RESULT, subject_id=1, key="x", kind="criterion")
    rows = score_rows()
    assert len(rows) == 3 + len(rag.tests) + 1
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    try:
        assert not table(AGENTIC).partitioned()
        assert score_rows() == rows
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert table(AGENTIC).partitioned() and table(RAG).partitioned()
    assert score_rows() == rows
    assert agentic.metrics["task_adherence"].value == 0.9
    # The id sequence goes on from the copied rows.
    later = Score.objects.create(subject_kind=SubjectKind.TRACE, subject_id=1, key="y", kind="criterion")
    assert later.pk > rows[-1][0]


EVALUATIONS_BEFORE = [("agentic", "0012_metric_judge"), ("rag", "0007_retention_index")]


def evaluation_rows() -> list[tuple]:
    return list(
        AgentEvaluation.objects.order_by("pk").values_list("pk", "session_id", "rule_id", "trace_id", "has_error")
    )


def online_index_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('agenteval_online_once')::text, to_regclass('agentic_onlineverdict')")
        index, verdicts = cursor.fetchone()
        return index is not None and verdicts is None


@pytest.mark.django_db(transaction=True)
def test_the_evaluations_migration_keeps_every_row_and_the_online_once_rule_both_ways(on_postgres):
    """agentic.0013 and rag.0008 back and forth: the rows and their ids stay, the partial unique
    index comes back on the plain table, and the online verdicts it covered fill agentic_onlineverdict
    again (an evaluation in error, without a rule or without a trace is not one)."""
    rule = EvaluationRuleFactory()
    online = AgentEvaluationFactory(rule=rule)
    AgentEvaluationFactory(rule=rule, has_error=True)
    AgentEvaluationFactory(rule=None)
    AgentEvaluationFactory(rule=rule, trace=None)
    OnlineVerdict.objects.create(
        evaluation=online, trace_id=online.trace_id, judge=online.judge, fingerprint=online.fingerprint, rule=rule
    )
    rag = TraceEvaluationFactory()
    rows = evaluation_rows()
    executor = MigrationExecutor(connection)
    executor.migrate(EVALUATIONS_BEFORE)
    try:
        assert not table(AGENTIC_OWN).partitioned() and not table(RAG_OWN).partitioned()
        assert online_index_exists()
        assert evaluation_rows() == rows
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    assert table(AGENTIC_OWN).partitioned() and table(RAG_OWN).partitioned()
    assert evaluation_rows() == rows
    assert list(OnlineVerdict.objects.values_list("evaluation_id", "trace_id", "judge", "fingerprint", "rule_id")) == [
        (online.pk, online.trace_id, online.judge, online.fingerprint, rule.pk)
    ]
    assert TraceEvaluation.objects.get(pk=rag.pk).pk == rag.pk
    # The id sequences go on from the copied rows.
    assert AgentEvaluationFactory().pk > rows[-1][0]
    assert TraceEvaluationFactory().pk > rag.pk


# --- other databases -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_without_postgresql_the_scores_are_one_table_and_retention_deletes_them():
    if connection.vendor == "postgresql":
        pytest.skip("SQLite (the embedded default) only")
    project = ProjectFactory(retention_days=30)
    old = AgentEvaluationFactory(project=project, trace=None)
    AgentEvaluation.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=40))
    assert not table(AGENTIC).partitioned()
    assert table(AGENTIC).ensure() == 0 and table(AGENTIC).reclaim(timezone.now()) == 0
    with pytest.raises(CommandError, match="nothing is partitioned here"):
        call_command("partitions")
    done = retention.retention_apply(pause_seconds=0)
    assert all(e.project for e in done), "no bulk step reported"
    assert not Score.objects.filter(subject_kind=SubjectKind.AGENTIC_EVALUATION).exists()
