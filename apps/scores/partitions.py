"""The partitions of agentic and RAG evaluations and of their Score rows (PostgreSQL, since
scores.0003, agentic.0013 and rag.0008), so that retention returns their disk space: an evaluation's
verdicts are three to a dozen wide rows with their reasoning (1.3 times the bytes of the
evaluation's own row and indexes, for an agentic evaluation in bench/retention.py), and both are
partitioned by the evaluation's id (the evaluations in wider ranges, since no partition bound
prunes their reads by agent, session or date: settings.EVALSITE_EVALUATION_PARTITION_IDS).

The apps above register their kind from their AppConfig.ready, naming their evaluation table (this
app may not import them): the partitions are then kept ahead of that table's ids by the beat and
dropped by each retention pass (apps.traces.partitions, the same keeper as the tool calls').

Unlike the tool calls', these partitions (the evaluations' as well) are dropped after the pass's
batches, once every evaluation of their range is gone, not before: an agentic evaluation's expiry
reads its Score rows to take it out of the running totals behind /summary, and a verdict dropped
first would leave those totals wrong. So the batches still delete the rows (as fast as before), and
the drop then returns the space they held instead of leaving it for PostgreSQL to reuse. The Score
rows of run results and traces sit in one DEFAULT partition and are deleted with their subjects."""

from apps.traces.partitions import RangePartitions, partitions_keep

from .vocabulary import SubjectKind

# The partition of each kind's rows, itself partitioned by RANGE (subject_id): the names
# scores.0003 made.
PARTITIONS = {
    SubjectKind.AGENTIC_EVALUATION: "scores_score_agentic",
    SubjectKind.RAG_EVALUATION: "scores_score_rag",
}


def evaluation_partitions_register(kind: SubjectKind, *, source: str, noun: str) -> list[RangePartitions]:
    """Keep the partitions of `kind`'s Score rows, whose subject_id is an id of the table `source`
    (with project_id and created_at, which retention expires by), and those of `source` itself,
    partitioned by its id (agentic.0013, rag.0008) in wider ranges: an evaluation partition spans
    ten of its Score rows' by default, and goes in the pass that finds it empty."""
    tables = [
        RangePartitions(
            parent=PARTITIONS[kind],
            key="subject_id",
            source=source,
            size_setting="EVALSITE_SCORE_PARTITION_SUBJECTS",
            noun=noun,
            only_when_empty=True,
        ),
        RangePartitions(
            parent=source,
            key="id",
            source=source,
            size_setting="EVALSITE_EVALUATION_PARTITION_IDS",
            noun=noun,
            only_when_empty=True,
        ),
    ]
    for table, what in zip(tables, (f"{noun} score partitions", f"{noun} partitions"), strict=True):
        partitions_keep(table, what)
    return tables
