"""Retention: a project's expired traces, evaluations and runs go, with everything that names them;
nothing of another project, nothing younger, no run still going."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from apps.agentic import selectors as agentic_selectors
from apps.agentic.models import AgentEvaluation, EvaluationRollup
from apps.agentic.services import evaluation_rollup_rebuild
from apps.core import retention, tasks
from apps.core.models import AuditEvent, Project
from apps.queues.models import QueueItem, QueueKind
from apps.rag.models import TraceEvaluation
from apps.runs.models import EvaluationResult, EvaluationRun, RunComparison
from apps.scores.models import Score
from apps.scores.vocabulary import SubjectKind
from apps.traces.models import AgentTrace, ToolCall
from tests.agentic.factories import AgentEvaluationFactory
from tests.core.factories import ProjectFactory
from tests.queues.factories import QueueItemFactory, ReviewQueueFactory, machine_score
from tests.rag.factories import TraceEvaluationFactory
from tests.runs.factories import EvaluationResultFactory, EvaluationRunFactory
from tests.traces.factories import AgentTraceFactory, ToolCallFactory

pytestmark = pytest.mark.django_db

OLD = timedelta(days=40)


def backdate(model, objs, age: timedelta) -> None:
    model.objects.filter(pk__in=[o.pk for o in objs]).update(created_at=timezone.now() - age)


def world(project: Project, age: timedelta) -> dict:
    """A trace with two tool calls, an agentic evaluation of it (three metric scores), a RAG
    evaluation with a score, a finished run with two results and a running run, all `age` old."""
    trace = AgentTraceFactory(project=project)
    ToolCallFactory.create_batch(2, trace=trace)
    evaluation = AgentEvaluationFactory(project=project, trace=trace)
    rag = TraceEvaluationFactory(project=project)
    machine_score(rag, "faithfulness", value=0.5)
    finished = EvaluationRunFactory(project=project, status=EvaluationRun.Status.COMPLETED)
    results = [EvaluationResultFactory(run=finished), EvaluationResultFactory(run=finished)]
    running = EvaluationRunFactory(project=project, status=EvaluationRun.Status.RUNNING)
    backdate(AgentTrace, [trace], age)
    backdate(AgentEvaluation, [evaluation], age)
    backdate(TraceEvaluation, [rag], age)
    backdate(EvaluationRun, [finished, running], age)
    return {
        "trace": trace,
        "evaluation": evaluation,
        "rag": rag,
        "finished": finished,
        "results": results,
        "running": running,
    }


def scores_of(kind: str, pk: int) -> int:
    return Score.objects.of(kind, [pk]).count()


def test_a_pass_deletes_what_expired_in_its_project_and_nothing_else():
    kept_forever = ProjectFactory(slug="forever")
    project = ProjectFactory(slug="thirty", retention_days=30, run_retention_days=30)
    old, young, other = world(project, OLD), world(project, timedelta(days=2)), world(kept_forever, OLD)
    queue = ReviewQueueFactory(kind=QueueKind.AGENTIC_EVALUATION, project=project)
    QueueItemFactory(queue=queue, subject_kind=SubjectKind.AGENTIC_EVALUATION, subject_id=old["evaluation"].pk)
    assert scores_of(SubjectKind.AGENTIC_EVALUATION, old["evaluation"].pk) == 3

    done = retention.retention_apply(pause_seconds=0)

    assert {(e.project, e.kind): e.count for e in done} == {
        ("thirty", "agentic_evaluations"): 1,
        ("thirty", "rag_evaluations"): 1,
        ("thirty", "traces"): 1,
        ("thirty", "runs"): 1,
    }
    assert not AgentTrace.objects.filter(pk=old["trace"].pk).exists()
    assert not ToolCall.objects.filter(trace_id=old["trace"].pk).exists()
    assert not AgentEvaluation.objects.filter(pk=old["evaluation"].pk).exists()
    assert scores_of(SubjectKind.AGENTIC_EVALUATION, old["evaluation"].pk) == 0
    assert not TraceEvaluation.objects.filter(pk=old["rag"].pk).exists()
    assert scores_of(SubjectKind.RAG_EVALUATION, old["rag"].pk) == 0
    assert not EvaluationRun.objects.filter(pk=old["finished"].pk).exists()
    assert not EvaluationResult.objects.filter(pk__in=[r.pk for r in old["results"]]).exists()
    assert not QueueItem.objects.filter(subject_id=old["evaluation"].pk).exists()
    # A run still going is kept, however old.
    assert EvaluationRun.objects.filter(pk=old["running"].pk).exists()
    for kept in (young, other):
        assert AgentTrace.objects.filter(pk=kept["trace"].pk).exists()
        assert ToolCall.objects.filter(trace_id=kept["trace"].pk).count() == 2
        assert scores_of(SubjectKind.AGENTIC_EVALUATION, kept["evaluation"].pk) == 3
        assert TraceEvaluation.objects.filter(pk=kept["rag"].pk).exists()
        assert EvaluationResult.objects.filter(run=kept["finished"]).count() == 2


def test_run_retention_is_its_own_setting():
    project = ProjectFactory(retention_days=30, run_retention_days=None)
    old = world(project, OLD)
    retention.retention_apply(pause_seconds=0)
    assert not AgentTrace.objects.filter(pk=old["trace"].pk).exists()
    assert EvaluationRun.objects.filter(pk=old["finished"].pk).exists()


def test_batches_go_until_nothing_is_left():
    project = ProjectFactory(retention_days=1)
    traces = AgentTraceFactory.create_batch(7, project=project)
    backdate(AgentTrace, traces, OLD)
    done = retention.retention_apply(batch_size=2, pause_seconds=0)
    assert [e.count for e in done if e.kind == "traces"] == [7]
    assert not AgentTrace.objects.filter(project=project).exists()


def test_the_summary_and_its_running_totals_lose_the_expired_evaluations():
    project = ProjectFactory(retention_days=30)
    old = AgentEvaluationFactory.create_batch(3, project=project, task_adherence=0.2)
    AgentEvaluationFactory.create_batch(2, project=project, task_adherence=0.9)
    backdate(AgentEvaluation, old, OLD)
    evaluation_rollup_rebuild()

    retention.retention_apply(pause_seconds=0)

    after = agentic_selectors.evaluation_summary(project_id=project.pk)
    kept_rows = {(r.agent_name, r.operation, r.rating): r.count for r in EvaluationRollup.objects.filter(count__gt=0)}
    evaluation_rollup_rebuild()  # what a full recount says
    assert agentic_selectors.evaluation_summary(project_id=project.pk) == after
    assert {(r.agent_name, r.operation, r.rating): r.count for r in EvaluationRollup.objects.all()} == kept_rows
    assert after["total_evaluations"] == 2


def test_dry_run_lists_and_deletes_nothing():
    project = ProjectFactory(slug="dry", retention_days=30)
    traces = AgentTraceFactory.create_batch(3, project=project)
    backdate(AgentTrace, traces, OLD)
    out = StringIO()
    call_command("apply_retention", "--dry-run", stdout=out)
    assert "dry: would delete 3 traces created before" in out.getvalue()
    assert AgentTrace.objects.filter(project=project).count() == 3

    assert not AuditEvent.objects.filter(action="expire").exists()

    out = StringIO()
    call_command("apply_retention", "--project", "dry", stdout=out)
    assert "dry: deleted 3 traces" in out.getvalue()
    assert not AgentTrace.objects.filter(project=project).exists()
    # The deletion is in the project's audit trail, by the command; the trail itself is kept.
    event = AuditEvent.objects.get(action="expire")
    assert (event.project, event.actor, event.action, event.object_type) == (
        project,
        "manage.py apply_retention",
        "expire",
        "traces",
    )
    assert event.changes["deleted"] == [None, 3]


def test_the_command_refuses_an_unknown_project():
    with pytest.raises(CommandError, match="no project"):
        call_command("apply_retention", "--project", "nope")


def test_the_beat_task_runs_a_pass():
    project = ProjectFactory(retention_days=30)
    traces = AgentTraceFactory.create_batch(2, project=project)
    backdate(AgentTrace, traces, OLD)
    assert tasks.apply_retention() == 2
    assert tasks.apply_retention() == 0


def test_a_kept_comparison_goes_with_its_run():
    project = ProjectFactory(run_retention_days=30)
    base = EvaluationRunFactory(project=project, status=EvaluationRun.Status.COMPLETED)
    head = EvaluationRunFactory(project=project, status=EvaluationRun.Status.COMPLETED)
    RunComparison.objects.create(base=base, head=head, state="x", core={})
    backdate(EvaluationRun, [base], OLD)
    retention.retention_apply(pause_seconds=0)
    assert not RunComparison.objects.exists()
    assert EvaluationRun.objects.filter(pk=head.pk).exists()


def test_a_younger_evaluation_of_an_expired_trace_keeps_its_record_without_the_link():
    project = ProjectFactory(slug="thirty", retention_days=30)
    trace = AgentTraceFactory(project=project)
    ToolCallFactory.create_batch(3, trace=trace)
    evaluation = AgentEvaluationFactory(project=project, trace=trace)
    backdate(AgentTrace, [trace], OLD)

    retention.retention_apply(pause_seconds=0)

    assert not AgentTrace.objects.filter(pk=trace.pk).exists()
    assert not ToolCall.objects.filter(trace_id=trace.pk).exists()
    evaluation.refresh_from_db()
    assert evaluation.trace_id is None
    assert scores_of(SubjectKind.AGENTIC_EVALUATION, evaluation.pk) == 3
