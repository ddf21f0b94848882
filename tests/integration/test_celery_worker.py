"""A real worker process consumes tasks from a real broker and writes to the test database."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.traces import services
from apps.traces.models import AgentTrace

from .worker import broker_for_tests, celery_worker, sender, wait_for

# transaction=True: a real worker process reads and writes these rows through its own connection, so
# they must be committed.
pytestmark = [pytest.mark.celery_integration, pytest.mark.django_db(transaction=True)]


def test_worker_runs_the_stale_trace_reaper(tmp_path):
    services.trace_start(session_id="stale-1", user_query="q", agent_name="agent")
    services.trace_start(session_id="live-1", user_query="q", agent_name="agent")
    AgentTrace.objects.filter(session_id="stale-1").update(start_time=timezone.now() - timedelta(hours=2))

    broker_url, options = broker_for_tests(tmp_path)
    with celery_worker(broker_url, tmp_path):
        sender(broker_url, options).send_task(
            "apps.traces.tasks.fail_stale_traces", kwargs={"older_than_seconds": 3600}
        )
        done = wait_for(lambda: AgentTrace.objects.get(session_id="stale-1").status == "failed", timeout=90)
        if not done:
            pytest.fail("the worker did not run the task within 90 s")
    assert AgentTrace.objects.get(session_id="live-1").status == "active"
