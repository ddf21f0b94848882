"""Online evaluation in the ingestion ledger: every (rule, trace) evaluation a rule's sampling picks
is counted as sampled, and then as evaluated, skipped or errored, so none is lost silently."""

from datetime import timedelta

import pytest
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.agentic.rules import services as rule_services
from apps.agentic.rules.tasks import evaluate_for_rule
from apps.core.models import Project, ProjectRole
from apps.traces.ledger_selectors import ingestion_ledger
from apps.traces.models import AgentTrace
from tests.agentic.factories import EvaluationRuleFactory
from tests.agentic.test_rules import complete_over_rest, finish
from tests.core.factories import ProjectFactory, project_key_client

pytestmark = pytest.mark.django_db


def online(project=None):
    """The online evaluation counts in `project`'s ledger (`default`'s, where the rules of these
    tests judge)."""
    now = timezone.now()
    return ingestion_ledger(
        project=project or Project.objects.default(), since=now - timedelta(hours=1), until=now + timedelta(seconds=1)
    )["online_evaluation"]


def test_two_rules_on_one_trace_are_two_sampled_and_two_evaluated(api, django_capture_on_commit_callbacks):
    EvaluationRuleFactory(name="first")
    EvaluationRuleFactory(name="second")
    EvaluationRuleFactory(name="never", sample_rate=0.0)
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(api, "ledger-online-1")
    counts = online()
    # The second rule re-used the first one's verdict: still an evaluation, nothing pending.
    assert (counts.sampled, counts.evaluated, counts.skipped, counts.errored, counts.pending) == (2, 2, 0, 0, 0)


def test_a_rule_disabled_or_deleted_before_its_task_runs_skips(monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(rule_services, "_send", lambda rule_id, ids, countdown, project_id: sent.append((rule_id, ids)))
    off, gone = EvaluationRuleFactory(name="off"), EvaluationRuleFactory(name="gone")
    with django_capture_on_commit_callbacks(execute=True):
        trace = finish("ledger-online-2")
    assert online().sampled == 2 and online().pending == 2  # queued, not run yet
    off.enabled = False
    off.save()
    gone.delete()
    for rule_id, ids in sent:
        rule_services.online_evaluations_run(rule_id=rule_id, trace_ids=ids)
    counts = online()
    assert (counts.sampled, counts.skipped, counts.pending) == (2, 2, 0)
    assert ids == [trace.pk]


def test_an_unavailable_judge_is_errored():
    trace = finish("ledger-online-3")
    rule = EvaluationRuleFactory(judge="gpt-4o-mini")  # no LLM configured in tests
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    assert online().errored == 1


def test_a_task_the_broker_refuses_is_sampled_and_errored(monkeypatch, django_capture_on_commit_callbacks):
    def refuse(rule_id, ids, countdown, project_id):
        raise OperationalError("broker down")

    monkeypatch.setattr(rule_services, "_send", refuse)
    EvaluationRuleFactory()
    with django_capture_on_commit_callbacks(execute=True):
        finish("ledger-online-4")  # the trace is stored all the same (a robust on_commit)
    counts = online()
    assert (counts.sampled, counts.errored, counts.pending) == (1, 1, 0)


# --- per project: the rule's project's ledger -------------------------------------------------------


def test_a_rules_evaluations_are_counted_in_its_projects_ledger(django_capture_on_commit_callbacks):
    """A rule of project B judging B's trace: sampled and evaluated in B's ledger, nothing in A's
    (another project with a rule of its own) or in `default`'s."""
    alpha, beta = ProjectFactory(slug="alpha"), ProjectFactory(slug="beta")
    EvaluationRuleFactory(name="a-rule", project=alpha)
    EvaluationRuleFactory(name="b-rule", project=beta)
    beta_api = project_key_client(beta, role=ProjectRole.ADMIN, username="bob")
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(beta_api, "ledger-online-b")
    b = online(beta)
    assert (b.sampled, b.evaluated, b.pending) == (1, 1, 0)
    assert online(alpha).is_empty and online().is_empty


def test_a_deleted_rules_skips_are_counted_in_the_project_that_sampled_them(
    monkeypatch, django_capture_on_commit_callbacks
):
    beta = ProjectFactory(slug="beta")
    sent = []
    monkeypatch.setattr(rule_services, "_send", lambda rule_id, ids, countdown, project_id: sent.append(project_id))
    rule = EvaluationRuleFactory(name="gone", project=beta)
    beta_api = project_key_client(beta, role=ProjectRole.ADMIN, username="bob")
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(beta_api, "ledger-online-gone")
    assert sent == [beta.pk] and online(beta).pending == 1
    trace_ids = list(AgentTrace.objects.filter(project=beta).values_list("pk", flat=True))
    rule_id = rule.pk
    rule.delete()
    # The task carries the project: the rule is gone, the ledger still closes B's evaluation.
    rule_services.online_evaluations_run(rule_id=rule_id, trace_ids=trace_ids, project_id=beta.pk)
    assert (online(beta).skipped, online(beta).pending) == (1, 0) and online().is_empty


def test_a_task_queued_before_the_project_travelled_with_it_uses_its_traces_project(
    monkeypatch, django_capture_on_commit_callbacks
):
    beta = ProjectFactory(slug="beta")
    monkeypatch.setattr(rule_services, "_send", lambda *args: None)
    rule = EvaluationRuleFactory(name="old-message", project=beta)
    rule_id = rule.pk
    beta_api = project_key_client(beta, role=ProjectRole.ADMIN, username="bob")
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(beta_api, "ledger-online-old")
    rule.delete()
    evaluate_for_rule(rule_id, list(AgentTrace.objects.filter(project=beta).values_list("pk", flat=True)))
    assert (online(beta).skipped, online(beta).pending) == (1, 0) and online().is_empty
