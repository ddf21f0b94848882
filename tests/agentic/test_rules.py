"""Online evaluation rules: which traces a rule picks, that they are judged without anyone asking,
and that one trace is never judged twice by one judge on the same content."""

import threading
import time
from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from kombu.exceptions import OperationalError

from apps.agentic import services as agentic_services
from apps.agentic.judges import HeuristicAgenticJudge
from apps.agentic.metrics import AgenticMetricsCollector
from apps.agentic.models import AgentEvaluation, EvaluationRule, JudgingClaim, OnlineEvaluationCount, OnlineVerdict
from apps.agentic.rules import services as rule_services
from apps.scores.models import Score
from apps.scores.vocabulary import SubjectKind
from apps.traces import services as trace_services
from apps.traces.models import AgentTrace
from tests.agentic.factories import EvaluationRuleFactory
from tests.prometheus_text import sample

BASE = "/api/v1/metrics"


def finish(session_id: str, agent_name: str = "OrchestratorAgent", *, ended: timedelta | None = None) -> AgentTrace:
    trace_services.trace_start(
        session_id=session_id, user_query="List all Kubernetes clusters in Delhi", agent_name=agent_name
    )
    trace_services.trace_tool_call_record(
        session_id=session_id,
        tool_name="list_k8s_clusters",
        tool_args={"datacenter": "Delhi"},
        tool_result=[{"name": "prod-01"}],
    )
    trace = trace_services.trace_complete(
        session_id=session_id, final_response="Found 1 cluster in Delhi: prod-01", success=True
    )
    if ended is not None:
        AgentTrace.objects.filter(pk=trace.pk).update(end_time=timezone.now() - ended)
    return trace


def complete_over_rest(api, session_id: str, agent_name: str = "OrchestratorAgent"):
    api.post(
        f"{BASE}/traces",
        {"session_id": session_id, "user_query": "List clusters in Delhi", "agent_name": agent_name},
        format="json",
    )
    api.post(
        f"{BASE}/traces/{session_id}/tool-calls",
        {"tool_name": "list_k8s_clusters", "tool_args": {"datacenter": "Delhi"}, "tool_result": [{"name": "prod-01"}]},
        format="json",
    )
    response = api.post(
        f"{BASE}/traces/{session_id}/complete", {"final_response": "prod-01", "success": True}, format="json"
    )
    assert response.status_code == 200, response.content


def counts() -> dict[tuple[str, str], int]:
    return {(c.rule_name, c.outcome): c.count for c in OnlineEvaluationCount.objects.all()}


# --- sampling and matching ------------------------------------------------------------------------


@pytest.mark.django_db
def test_sampling_is_deterministic_and_close_to_the_rate():
    rule = EvaluationRuleFactory(sample_rate=0.3)
    sessions = [f"session-{i}" for i in range(4000)]
    picked = [s for s in sessions if rule.samples(s)]
    # The same rule read afresh (another worker, a backfill) picks exactly the same traces.
    again = EvaluationRule.objects.get(pk=rule.pk)
    assert [s for s in sessions if again.samples(s)] == picked
    assert 0.27 < len(picked) / len(sessions) < 0.33
    # Another rule at the same rate picks a different sample: the hash includes the rule.
    other = EvaluationRuleFactory(sample_rate=0.3)
    assert {s for s in sessions if other.samples(s)} != set(picked)


@pytest.mark.django_db
def test_sample_rate_zero_and_one_are_exact():
    none, every = EvaluationRuleFactory(sample_rate=0.0), EvaluationRuleFactory(sample_rate=1.0)
    sessions = [f"s{i}" for i in range(500)]
    assert not any(none.samples(s) for s in sessions)
    assert all(every.samples(s) for s in sessions)


@pytest.mark.parametrize(
    "rule_agent, rule_source, agent, source, expected",
    [
        ("", "any", "A", "rest", True),
        ("", "any", "B", "otlp", True),
        ("A", "any", "A", "batch", True),
        ("A", "any", "B", "rest", False),
        ("", "otlp", "A", "otlp", True),
        ("", "otlp", "A", "rest", False),
        ("A", "rest", "A", "rest", True),
        ("A", "rest", "A", "batch", False),
    ],
)
@pytest.mark.django_db  # a new rule's project defaults to `default`, read from the database
def test_matching_by_agent_and_source(rule_agent, rule_source, agent, source, expected):
    rule = EvaluationRule(name="r", agent_name=rule_agent, source=rule_source)
    assert rule.matches(agent_name=agent, source=source) is expected


# --- the trigger ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_completed_rest_trace_is_judged_by_a_matching_rule(api, django_capture_on_commit_callbacks):
    rule = EvaluationRuleFactory(name="all traces")
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(api, "online-1")
    evaluation = AgentEvaluation.objects.get(session_id="online-1")
    assert evaluation.rule == rule and evaluation.judge == "heuristic:v1"
    assert counts() == {("all traces", "evaluated"): 1}

    history = api.get(f"{BASE}/history").json()["evaluations"]
    assert history[0]["rule"] == {"id": rule.pk, "name": "all traces"}
    assert api.get(f"{BASE}/history/online-1").json()["rule"] == {"id": rule.pk, "name": "all traces"}


@pytest.mark.django_db
def test_disabled_and_non_matching_rules_judge_nothing(api, django_capture_on_commit_callbacks):
    EvaluationRuleFactory(enabled=False)
    EvaluationRuleFactory(agent_name="SomeOtherAgent")
    EvaluationRuleFactory(source="otlp")
    EvaluationRuleFactory(sample_rate=0.0)
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(api, "online-2")
    assert not AgentEvaluation.objects.exists()
    assert AgentTrace.objects.get(session_id="online-2").status == "completed"


@pytest.mark.django_db
def test_requested_evaluations_show_no_rule_in_history(api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(api, "asked-1")
    assert api.post(f"{BASE}/evaluate/session", {"session_id": "asked-1"}, format="json").status_code == 200
    assert api.get(f"{BASE}/history/asked-1").json()["rule"] is None


@pytest.mark.django_db
def test_two_matching_rules_with_one_judge_judge_once(api, django_capture_on_commit_callbacks, monkeypatch):
    calls = counting_judge(monkeypatch)
    EvaluationRuleFactory(name="first")
    EvaluationRuleFactory(name="second", agent_name="OrchestratorAgent")
    with django_capture_on_commit_callbacks(execute=True):
        complete_over_rest(api, "online-3")
    # One verdict for the trace: the second rule found the first one's (same judge, same content).
    assert AgentEvaluation.objects.filter(session_id="online-3").count() == 1
    assert len(calls) == 1
    assert sorted(counts().items()) == [(("first", "evaluated"), 1), (("second", "reused"), 1)]


@pytest.mark.django_db
def test_otlp_traces_wait_the_settle_delay(settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.EVALSITE_ONLINE_EVALUATION_OTLP_SETTLE_SECONDS = 7
    sent = []
    monkeypatch.setattr(
        rule_services, "_send", lambda rule_id, ids, countdown, project_id: sent.append((ids, countdown))
    )
    EvaluationRuleFactory()
    rest, otlp = finish("rest-1"), finish("otlp-1")
    AgentTrace.objects.filter(pk=otlp.pk).update(source=AgentTrace.Source.OTLP)
    with django_capture_on_commit_callbacks(execute=True):
        assert rule_services.online_evaluations_queue(trace_ids=[rest.pk, otlp.pk]) == 2
        assert sent == []  # queued only once the caller's transaction commits
    assert sorted(sent, key=lambda s: s[1] or 0) == [([rest.pk], None), ([otlp.pk], 7)]


@pytest.mark.django_db
def test_a_rule_deleted_or_disabled_before_its_task_runs():
    trace = finish("late-1")
    gone = EvaluationRuleFactory(name="gone")
    gone_id = gone.pk
    gone.delete()
    assert rule_services.online_evaluations_run(rule_id=gone_id, trace_ids=[trace.pk]) == {}
    off = EvaluationRuleFactory(name="off", enabled=False)
    assert rule_services.online_evaluations_run(rule_id=off.pk, trace_ids=[trace.pk])["skipped"] == 1
    assert not AgentEvaluation.objects.exists()


@pytest.mark.django_db
def test_an_active_trace_is_skipped():
    trace, _ = trace_services.trace_start(session_id="still-active", user_query="q", agent_name="A")
    rule = EvaluationRuleFactory()
    assert rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])["skipped"] == 1


@pytest.mark.django_db
def test_an_unavailable_llm_judge_counts_errors_and_stores_nothing():
    trace = finish("no-llm")
    rule = EvaluationRuleFactory(name="llm rule", judge="gpt-4o-mini")  # no LLM configured in tests
    assert rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])["error"] == 1
    assert not AgentEvaluation.objects.exists()
    assert counts() == {("llm rule", "error"): 1}


@pytest.mark.django_db
def test_a_model_name_judge_uses_that_model(openai_server, settings):
    settings.OPENAI_BASE_URL = openai_server.url
    settings.OPENAI_API_KEY = "test"
    judge = rule_services.rule_judge(judge="my-judge-model")
    assert judge.label == "openai:my-judge-model"
    assert rule_services.rule_judge(judge="heuristic").label == "heuristic:v1"


# --- no double judging ----------------------------------------------------------------------------


def counting_judge(monkeypatch, pause: float = 0.0) -> list:
    calls = []
    real = HeuristicAgenticJudge()

    class Counting:
        parallel = False
        label = real.label
        fingerprint = real.fingerprint

        def evaluate(self, data):
            calls.append(data)
            time.sleep(pause)
            return real.evaluate(data)

    monkeypatch.setattr(rule_services, "rule_judge", lambda judge: Counting())
    return calls


@pytest.mark.django_db
def test_a_backfill_overlapping_live_evaluation_judges_nothing_again(monkeypatch, django_capture_on_commit_callbacks):
    calls = counting_judge(monkeypatch)
    rule = EvaluationRuleFactory()
    trace = finish("overlap-1", ended=timedelta(minutes=5))
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    # A backfill over the same window, with another rule of the same judge too.
    other = EvaluationRuleFactory()
    sent = []
    monkeypatch.setattr(rule_services, "_send", lambda rule_id, ids, countdown, project_id: sent.append((rule_id, ids)))
    since = timezone.now() - timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=True):
        for r in (rule, other):
            assert rule_services.rule_backfill(rule=r, since=since) == 1
    for rule_id, ids in sent:
        assert rule_services.online_evaluations_run(rule_id=rule_id, trace_ids=ids) == {
            "evaluated": 0,
            "reused": 1,
            "error": 0,
            "skipped": 0,
        }
    assert len(calls) == 1
    assert AgentEvaluation.objects.filter(trace=trace).count() == 1


@pytest.mark.django_db
def test_changed_content_is_judged_again():
    """Re-use is by content: a trace whose content changed (an OTLP child that came late) is new work."""
    rule = EvaluationRuleFactory()
    trace = finish("changing-1")
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    AgentTrace.objects.filter(pk=trace.pk).update(final_response="prod-01 and dev-02")
    outcome = rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    assert outcome["evaluated"] == 1
    assert AgentEvaluation.objects.filter(trace=trace, rule=rule).count() == 2


@pytest.mark.django_db
def test_the_database_refuses_a_second_online_verdict_of_the_same_content():
    """agenteval_online_once, on OnlineVerdict since the evaluations are partitioned: a second online
    verdict of the same content is refused and leaves nothing stored; a requested one is not."""
    rule, other = EvaluationRuleFactory(), EvaluationRuleFactory()
    trace = finish("constraint-1")
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    stored = AgentEvaluation.objects.get(trace=trace)
    assert OnlineVerdict.objects.filter(evaluation=stored, rule=rule, trace_id=trace.pk).exists()

    traces = list(AgentTrace.objects.filter(pk=trace.pk).prefetch_related("tool_calls"))
    judge = HeuristicAgenticJudge()
    with pytest.raises(IntegrityError), transaction.atomic():
        agentic_services.evaluations_create_for_traces(traces=traces, judge=judge, force=True, rule=other)
    assert AgentEvaluation.objects.filter(trace=trace).count() == 1
    assert Score.objects.of(SubjectKind.AGENTIC_EVALUATION).count() == 3
    # A requested evaluation may still judge again on purpose (force), as before rules existed.
    agentic_services.evaluations_create_for_traces(traces=traces, judge=judge, force=True)
    assert AgentEvaluation.objects.filter(trace=trace).count() == 2
    assert OnlineVerdict.objects.count() == 1
    # The row goes with its rule, as the index no longer covered an evaluation whose rule was deleted.
    rule.delete()
    assert not OnlineVerdict.objects.exists()
    assert AgentEvaluation.objects.filter(trace=trace).count() == 2


@pytest.mark.django_db
def test_clearing_a_project_deletes_its_online_verdicts_and_counts_the_evaluations_alone():
    """Django's delete() total also counts the OnlineVerdict rows it cascades to: /clear reports the
    evaluations."""
    rule = EvaluationRuleFactory()
    trace = finish("cleared-1")
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    assert OnlineVerdict.objects.count() == 1
    assert agentic_services.evaluations_clear(project_id=trace.project_id)[0] == 1
    assert not OnlineVerdict.objects.exists() and not AgentEvaluation.objects.exists()


@pytest.mark.django_db
def test_a_race_lost_at_insert_counts_as_reused(monkeypatch):
    """What the constraint buys beside the judging claim: the loser of a race between the re-use
    check and the insert stores nothing and reports re-use."""
    rule, other = EvaluationRuleFactory(), EvaluationRuleFactory()
    trace = finish("race-1")
    real_reusable = rule_services.evaluations_create_for_traces.__globals__["_reusable"]
    monkeypatch.setitem(rule_services.evaluations_create_for_traces.__globals__, "_reusable", lambda *a: {})
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    assert rule_services.online_evaluations_run(rule_id=other.pk, trace_ids=[trace.pk])["reused"] == 1
    monkeypatch.setitem(rule_services.evaluations_create_for_traces.__globals__, "_reusable", real_reusable)
    assert AgentEvaluation.objects.filter(trace=trace).count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_rules_on_two_connections_judge_once(on_postgres, monkeypatch):
    """Two workers, two rules, one judge, one trace, at the same moment: the judging claim makes the
    second wait for the first one's verdict and re-use it, so the judge (an LLM bill) runs once."""
    calls = counting_judge(monkeypatch, pause=0.5)
    trace = finish("concurrent-1")  # before the rules exist, so that completing it queues nothing
    rules = [EvaluationRuleFactory(), EvaluationRuleFactory()]
    results, barrier = [], threading.Barrier(2)

    def worker(rule):
        try:
            barrier.wait()
            results.append(rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk]))
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(rule,)) for rule in rules]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert AgentEvaluation.objects.filter(trace=trace).count() == 1
    assert sorted((r["evaluated"], r["reused"]) for r in results) == [(0, 1), (1, 0)]


@pytest.mark.django_db
def test_a_held_claim_makes_a_worker_wait_then_reuse_the_verdict(monkeypatch):
    """Another worker is judging the trace (its claim row is there, within its lease): this one
    does not judge in parallel; it waits until the claim is released, then re-uses the verdict."""
    trace = finish("claim-held-1")
    first, second = EvaluationRuleFactory(), EvaluationRuleFactory()
    rule_services.online_evaluations_run(rule_id=first.pk, trace_ids=[trace.pk])
    label = HeuristicAgenticJudge().label
    now = timezone.now()
    JudgingClaim.objects.create(trace_id=trace.pk, judge=label, claimed_at=now, expires_at=now + timedelta(minutes=5))
    waits = []

    def other_worker_finishes(seconds):
        waits.append(seconds)
        JudgingClaim.objects.filter(trace_id=trace.pk).delete()

    monkeypatch.setattr(rule_services.time, "sleep", other_worker_finishes)
    outcome = rule_services.online_evaluations_run(rule_id=second.pk, trace_ids=[trace.pk])
    assert waits == [rule_services.JUDGING_POLL_SECONDS]
    assert outcome["reused"] == 1 and outcome["evaluated"] == 0
    assert not JudgingClaim.objects.exists()  # released after judging


@pytest.mark.django_db
def test_a_claim_past_its_lease_is_taken_over(monkeypatch):
    """A worker died mid-judgement and left its claim: once the lease has run out, the next worker
    deletes it and judges, without waiting; its own claim is gone afterwards."""
    trace = finish("claim-stale-1")
    rule = EvaluationRuleFactory()
    label = HeuristicAgenticJudge().label
    then = timezone.now() - rule_services.JUDGING_LEASE - timedelta(seconds=1)
    JudgingClaim.objects.create(
        trace_id=trace.pk, judge=label, claimed_at=then, expires_at=then + rule_services.JUDGING_LEASE
    )
    monkeypatch.setattr(rule_services.time, "sleep", lambda s: pytest.fail("waited for a stale claim"))
    outcome = rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    assert outcome["evaluated"] == 1
    assert AgentEvaluation.objects.filter(trace=trace, rule=rule).count() == 1
    assert not JudgingClaim.objects.exists()


def test_no_raw_sql_in_the_judging_claim():
    """The claim is ORM only: the same code on SQLite and PostgreSQL (issue 22, item 3)."""
    import inspect

    source = inspect.getsource(rule_services)
    assert "cursor(" not in source and "connection.vendor" not in source


# --- backfill -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_backfill_queues_finished_matching_traces_in_the_window(monkeypatch, django_capture_on_commit_callbacks):
    sent = []
    monkeypatch.setattr(rule_services, "_send", lambda rule_id, ids, countdown, project_id: sent.extend(ids))
    rule = EvaluationRuleFactory(agent_name="A")
    inside = [finish(f"in-{i}", "A", ended=timedelta(hours=2)) for i in range(3)]
    finish("too-old", "A", ended=timedelta(days=3))
    finish("other-agent", "B", ended=timedelta(hours=2))
    trace_services.trace_start(session_id="active", user_query="q", agent_name="A")
    since, until = timezone.now() - timedelta(days=1), timezone.now() - timedelta(hours=1)
    with django_capture_on_commit_callbacks(execute=True):
        assert rule_services.rule_backfill(rule=rule, since=since, until=until) == 3
    assert sorted(sent) == sorted(t.pk for t in inside)


@pytest.mark.django_db
def test_backfill_samples_as_live_evaluation_would(monkeypatch):
    monkeypatch.setattr(rule_services, "_send", lambda *args: None)
    rule = EvaluationRuleFactory(sample_rate=0.5)
    traces = [finish(f"sample-{i}", ended=timedelta(minutes=10)) for i in range(40)]
    expected = sum(rule.samples(t.session_id) for t in traces)
    assert 0 < expected < 40
    assert rule_services.rule_backfill(rule=rule, since=timezone.now() - timedelta(hours=1)) == expected


# --- the counter Prometheus reads -----------------------------------------------------------------


@pytest.mark.django_db
def test_prometheus_counter_by_rule_and_outcome(client):
    rule = EvaluationRuleFactory(name="nightly")
    trace = finish("prom-1")
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    rule_services.online_evaluations_run(rule_id=rule.pk, trace_ids=[trace.pk])
    text = client.get("/metrics").content.decode()
    assert (
        sample(text, "evalsite_online_evaluations_total", rule="nightly", outcome="evaluated", project="default") == 1
    )
    assert sample(text, "evalsite_online_evaluations_total", rule="nightly", outcome="reused", project="default") == 1
    # The worker's counts reach whichever process is scraped: they are read from the database.
    family = next(f for f in AgenticMetricsCollector().collect() if f.name == "evalsite_online_evaluations")
    assert {(s.labels["rule"], s.labels["outcome"]) for s in family.samples} == {
        ("nightly", "evaluated"),
        ("nightly", "reused"),
    }


def test_enabled_rules_cache_expires(settings):
    settings.EVALSITE_ONLINE_EVALUATION_RULES_CACHE_SECONDS = 5
    now, reads = [0.0], []
    cache = rule_services.EnabledRulesCache(lambda: reads.append(1) or ["rule"], clock=lambda: now[0])
    assert cache.get() == cache.get() == ["rule"]
    assert len(reads) == 1
    now[0] = 6.0
    cache.get()
    assert len(reads) == 2
    cache.clear()  # what a rule written in this process does
    cache.get()
    assert len(reads) == 3


@pytest.mark.django_db(transaction=True)
def test_a_broker_outage_does_not_fail_the_agents_request(api, monkeypatch, caplog):
    """The trace is stored before the rules are consulted: a queue that is down is logged, and the
    agent's completion still succeeds (a backfill can judge it later)."""

    def down(*args):
        raise OperationalError("connection refused")

    monkeypatch.setattr(rule_services, "_send", down)
    EvaluationRuleFactory()
    complete_over_rest(api, "broker-down")
    assert AgentTrace.objects.get(session_id="broker-down").status == "completed"
    assert not AgentEvaluation.objects.exists()
    assert "connection refused" in caplog.text
