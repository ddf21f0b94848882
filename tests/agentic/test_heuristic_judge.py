import pytest

from apps.agentic.judges import HeuristicAgenticJudge, JudgeInput, JudgeToolCall
from apps.agentic.scoring import rating_for, weighted_overall
from apps.traces.demo import DEMO_TRACES

judge = HeuristicAgenticJudge()


def demo_input(session_id: str) -> JudgeInput:
    demo = next(d for d in DEMO_TRACES if d["session_id"] == session_id)
    intent, resource, operation = demo["intent"]
    return JudgeInput(
        query=demo["user_query"],
        final_response=demo["final_response"],
        intent=intent,
        resource_type=resource,
        operation=operation,
        success=demo["success"],
        tool_calls=tuple(JudgeToolCall(n, a, r, s, e) for n, a, r, s, e in demo["tool_calls"]),
    )


def overall(verdict) -> float:
    return weighted_overall(
        {m: verdict.metric(m).score for m in ("task_adherence", "tool_call_accuracy", "intent_resolution")}
    )


DELHI = JudgeInput(
    query="List all Kubernetes clusters in Delhi",
    final_response="Found 2 clusters in Delhi:\n1. prod-01 (running)\n2. dev-02 (stopped)",
    tool_calls=(
        JudgeToolCall(
            "list_k8s_clusters",
            {"datacenter": "Delhi"},
            [{"name": "prod-01", "status": "running"}, {"name": "dev-02", "status": "stopped"}],
        ),
    ),
    intent="list_k8s_cluster",
    resource_type="k8s_cluster",
    operation="list",
    success=True,
)


@pytest.mark.parametrize("session_id", ["demo_k8s_list_delhi", "demo_vm_create_mumbai", "demo_lb_list_bangalore"])
def test_good_demo_traces_score_excellent(session_id):
    verdict = judge.evaluate(demo_input(session_id))
    assert verdict.judge == "heuristic:v1"
    for metric in ("task_adherence", "tool_call_accuracy", "intent_resolution"):
        assert verdict.metric(metric).status == "ok"
    assert rating_for(overall(verdict)) == "excellent"
    assert "Failed" not in verdict.tool_call_accuracy.reasoning


def test_wrong_tool_is_caught_on_every_metric():
    verdict = judge.evaluate(demo_input("demo_billing_wrong_tool"))
    assert verdict.tool_call_accuracy.score < 0.4
    assert "no tool fits" in verdict.tool_call_accuracy.reasoning
    assert "Delhi" in verdict.tool_call_accuracy.reasoning  # an argument the user never gave
    assert verdict.intent_resolution.score < 0.6
    assert "no successful tool call carried out the intent" in verdict.intent_resolution.reasoning
    assert rating_for(overall(verdict)) in ("poor", "failed")


def test_unrecovered_failure_is_penalised_but_honesty_counts():
    verdict = judge.evaluate(demo_input("demo_k8s_delete_failed"))
    assert "failed calls not recovered: delete_k8s_cluster" in verdict.tool_call_accuracy.reasoning
    assert verdict.tool_call_accuracy.score < 1.0
    assert "the answer reports that the tools failed" in verdict.task_adherence.reasoning
    assert overall(verdict) < overall(judge.evaluate(demo_input("demo_k8s_list_delhi")))


def test_recovered_failure_is_not_penalised():
    retried = JudgeInput(
        **{
            **DELHI.__dict__,
            "tool_calls": (
                JudgeToolCall("list_k8s_clusters", {"datacenter": "Delhi"}, None, False, "503 upstream"),
                *DELHI.tool_calls,
            ),
        }
    )
    verdict = judge.evaluate(retried)
    assert "every failed call was recovered" in verdict.tool_call_accuracy.reasoning
    assert verdict.tool_call_accuracy.score == 1.0


def test_results_missing_from_answer_lower_task_adherence():
    vague = JudgeInput(**{**DELHI.__dict__, "final_response": "There are some clusters in Delhi."})
    verdict = judge.evaluate(vague)
    assert verdict.task_adherence.score < judge.evaluate(DELHI).task_adherence.score
    assert "tool results missing from the answer: prod-01" in verdict.task_adherence.reasoning


def test_ungrounded_argument_is_reported():
    wrong_dc = JudgeInput(
        **{
            **DELHI.__dict__,
            "tool_calls": (JudgeToolCall("list_k8s_clusters", {"datacenter": "Mumbai"}, [{"name": "prod-01"}]),),
        }
    )
    verdict = judge.evaluate(wrong_dc)
    assert "not found in the query or earlier results: Mumbai" in verdict.tool_call_accuracy.reasoning
    assert verdict.tool_call_accuracy.score < 1.0


def test_argument_from_an_earlier_result_is_grounded():
    chained = JudgeInput(
        query="Show the status of the cluster prod-01",
        final_response="prod-01 is running version 1.29.",
        tool_calls=(
            JudgeToolCall("list_k8s_clusters", {}, [{"id": "c-77", "name": "prod-01"}]),
            JudgeToolCall("get_k8s_cluster", {"cluster_id": "c-77"}, {"state": "running", "version": "1.29"}),
        ),
        intent="get_k8s_cluster",
        resource_type="k8s_cluster",
        operation="get",
        success=True,
    )
    verdict = judge.evaluate(chained)
    assert "every argument value comes from the query or an earlier result" in verdict.tool_call_accuracy.reasoning


def test_claimed_action_without_a_successful_call():
    liar = JudgeInput(
        query="Delete the staging cluster in Chennai",
        final_response="Done, staging is deleted.",
        tool_calls=(JudgeToolCall("delete_k8s_cluster", {"name": "staging"}, None, False, "403"),),
        intent="delete_k8s_cluster",
        resource_type="k8s_cluster",
        operation="delete",
        success=True,
    )
    verdict = judge.evaluate(liar)
    assert "claims a 'delete' that no successful tool call performed" in verdict.task_adherence.reasoning


def test_no_answer_and_no_tools():
    empty = JudgeInput(
        query="List all Kubernetes clusters in Delhi",
        final_response=None,
        intent="list_k8s_cluster",
        resource_type="k8s_cluster",
        operation="list",
    )
    verdict = judge.evaluate(empty)
    assert verdict.task_adherence.score == 0.0 and verdict.tool_call_accuracy.score == 0.0
    chit_chat = judge.evaluate(JudgeInput(query="hello", final_response="Hi! How can I help?"))
    assert chit_chat.tool_call_accuracy.status == "skipped" and chit_chat.tool_call_accuracy.score is None


def test_deterministic():
    assert judge.evaluate(DELHI) == judge.evaluate(DELHI)


def test_bands_and_overall_skip_rule():
    assert [rating_for(s) for s in (0.95, 0.9, 0.89, 0.75, 0.6, 0.59, 0.4, 0.39, 0.0)] == [
        "excellent",
        "excellent",
        "good",
        "good",
        "acceptable",
        "poor",
        "poor",
        "failed",
        "failed",
    ]
    assert weighted_overall({"task_adherence": 0.95, "tool_call_accuracy": 0.90, "intent_resolution": 0.92}) == 0.926
    # A skipped metric is left out and the others re-weighted, never counted as a number.
    assert weighted_overall({"task_adherence": 1.0, "tool_call_accuracy": None, "intent_resolution": 0.5}) == round(
        (0.4 * 1.0 + 0.3 * 0.5) / 0.7, 4
    )
    assert weighted_overall({"task_adherence": None, "tool_call_accuracy": None, "intent_resolution": None}) is None
