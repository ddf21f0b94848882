"""score_parent_key_cover holds only rows with a parent (scores.0004): the run reads that name the
parent can still use it, and an agentic evaluation's metric rows (no parent) are not
in it."""

import pytest
from django.db import connection

from apps.scores.models import Score
from apps.scores.services import scores_store
from apps.scores.vocabulary import ScoreKind, ScoreSource, SubjectKind
from tests.agentic.factories import AgentEvaluationFactory

pytestmark = pytest.mark.django_db

RUN = 41


def _run_rows(runs: int = 1):
    """Three results' three rule verdicts for each of `runs` runs (ids RUN, RUN + 1, ...)."""
    scores_store(
        rows=[
            Score(
                subject_kind=SubjectKind.RUN_RESULT,
                subject_id=100 * run + result,
                parent_id=RUN + run,
                kind=ScoreKind.RULE,
                key=f"R{rule}",
                source=ScoreSource.CODE,
                passed=rule % 2 == 0,
            )
            for run in range(runs)
            for result in range(3)
            for rule in range(3)
        ]
    )


def _plan(queryset) -> str:
    if connection.vendor != "postgresql":
        return queryset.explain()
    with connection.cursor() as cursor:
        # The test's few rows are cheaper to read whole: ask whether the index can answer at all.
        cursor.execute("SET enable_seqscan = off")
        cursor.execute("SET enable_bitmapscan = off")
        try:
            return queryset.explain()
        finally:
            cursor.execute("RESET enable_seqscan")
            cursor.execute("RESET enable_bitmapscan")


@pytest.mark.parametrize("parents", [[RUN], [RUN, RUN + 1]], ids=["one run", "runs"])
def test_a_runs_rule_verdicts_are_read_through_the_cover_index(parents):
    # Enough runs, with statistics, that the index on (kind, key, source) is plainly the worse way to
    # one run's rows: with nine rows the planner may take either.
    _run_rows(runs=60)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE scores_score" if connection.vendor == "postgresql" else "ANALYZE")
    reads = (
        Score.objects.filter(subject_kind=SubjectKind.RUN_RESULT, parent_id__in=parents, kind=ScoreKind.RULE)
        .order_by()
        .values_list("subject_id", "key", "passed")
    )
    assert len(reads) == 9 * len(parents)
    plan = _plan(reads)
    if connection.vendor == "postgresql":
        # The partition's copy of the index, named by PostgreSQL from its columns.
        assert "Index" in plan and "_parent_id_kind_key_" in plan, plan
    else:
        assert "COVERING INDEX score_parent_key_cover" in plan, plan


def test_the_cover_index_is_partial():
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_get_indexdef('score_parent_key_cover'::regclass)")
        else:
            cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'score_parent_key_cover'")
        definition = cursor.fetchone()[0]
    assert "parent_id IS NOT NULL" in definition.replace('"', ""), definition


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the index's pages per partition: PostgreSQL's")
def test_metric_rows_without_a_parent_add_nothing_to_the_cover_index():
    AgentEvaluationFactory.create_batch(5)
    _run_rows()
    with connection.cursor() as cursor:
        # Each partition's copy of the index, with its table and its size: a btree without entries
        # is its metapage alone (one page); the first entry adds a leaf.
        cursor.execute(
            "SELECT t.relname, pg_relation_size(p.relid) FROM pg_partition_tree('score_parent_key_cover') p "
            "JOIN pg_index x ON x.indexrelid = p.relid JOIN pg_class t ON t.oid = x.indrelid WHERE p.isleaf"
        )
        sizes = dict(cursor.fetchall())
        cursor.execute("SELECT current_setting('block_size')::int")
        page = cursor.fetchone()[0]
    agentic = {table: size for table, size in sizes.items() if table.startswith("scores_score_agentic")}
    assert agentic and all(size <= page for size in agentic.values()), sizes
    assert sizes["scores_score_other"] > page, "the run results' rows are in it"
    assert Score.objects.filter(subject_kind=SubjectKind.AGENTIC_EVALUATION).count() == 15
