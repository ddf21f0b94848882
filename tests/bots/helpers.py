"""Bots made and run the way an API client makes and runs them: the attack tests (test_attacks,
test_secrets) need what the listener at a bot's address receives when a real client does it."""

from django.test import TestCase

from tests.testsets.factories import make_test_set_payload

SINGLE_TURN = {
    "type": "single_turn",
    "name": "PTO",
    "inputs": {"message": "What is our PTO policy?"},
    "expected": {"success_criteria": ["Mentions 15 days"]},
    "tags": [],
    "priority": "high",
}


def run_against(api, agent_id: str) -> list[dict]:
    """Run a one-item test set against the bot (eager Celery) and return the run's results."""
    created = api.post("/api/v1/test-sets", make_test_set_payload(agent_id, items=[SINGLE_TURN]), format="json")
    assert created.status_code == 201, created.json()
    # The run is enqueued on commit; the test's transaction never commits, so run what it queued
    # (the same as the django_capture_on_commit_callbacks fixture).
    with TestCase.captureOnCommitCallbacks(execute=True):
        run = api.post(
            "/api/v1/runs", {"agent_id": agent_id, "test_set_id": created.json()["test_set_id"]}, format="json"
        )
    assert run.status_code == 201, run.json()
    return api.get(f"/api/v1/runs/{run.json()['run_id']}/results").json()


def create_bot(api, **fields) -> str:
    response = api.post("/api/v1/bots", {"name": "attacker bot", **fields}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["agent_id"]
