import pytest

from apps.traces import services
from tests.core.factories import ProjectFactory
from tests.prometheus_text import sample


@pytest.mark.django_db
def test_prometheus_metrics_follow_the_lifecycle(client):
    services.trace_start(session_id="m1", user_query="q", agent_name="AgentA")
    services.trace_start(session_id="m2", user_query="q", agent_name="AgentA")
    services.trace_intent_record(session_id="m2", intent="i", resource_type="r", operation="list")
    services.trace_complete(session_id="m2", final_response="done", success=True)
    services.trace_start(session_id="m3", user_query="q", agent_name="AgentB")
    services.trace_complete(session_id="m3", final_response=None, success=False)

    text = client.get("/metrics").content.decode()
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="active", project="default") == 1
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="completed", project="default") == 1
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentB", status="failed", project="default") == 1
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentA", project="default") == 1
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentB", project="default") is None
    assert (
        sample(
            text,
            "vayu_agent_execution_duration_seconds_count",
            agent_name="AgentA",
            operation="list",
            project="default",
        )
        == 1
    )
    assert (
        sample(
            text,
            "vayu_agent_execution_duration_seconds_bucket",
            agent_name="AgentA",
            operation="list",
            project="default",
            le="+Inf",
        )
        == 1
    )

    services.trace_complete(session_id="m1", final_response="ok", success=True)
    text = client.get("/metrics").content.decode()
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentA", project="default") is None
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="completed", project="default") == 2


def test_admin_trace_list_and_page(admin_client, demo_traces):
    listing = admin_client.get("/admin/traces/agenttrace/?status__exact=completed")
    assert listing.status_code == 200
    assert b"demo_k8s_list_delhi" in listing.content and b"demo_k8s_delete_failed" not in listing.content
    search = admin_client.get("/admin/traces/agenttrace/?q=load+balancers")
    assert b"demo_lb_list_bangalore" in search.content and b"demo_k8s_list_delhi" not in search.content

    from apps.traces.models import AgentTrace

    trace = AgentTrace.objects.get(session_id="demo_vm_create_mumbai")
    page = admin_client.get(f"/admin/traces/agenttrace/{trace.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "create_vm" in html and "check_quota" in html
    # Pretty-printed, escaped JSON of the tool arguments.
    assert "&quot;name&quot;: &quot;web-07&quot;" in html


def test_each_project_has_its_own_series(client, db):
    # The label is the project's slug: bounded by the projects superusers made, not by ingestion.
    team = ProjectFactory(slug="team")
    services.trace_start(session_id="same", user_query="q", agent_name="AgentA")
    services.trace_start(session_id="same", user_query="q", agent_name="AgentA", project_id=team.pk)
    services.trace_complete(session_id="same", final_response="ok", success=True, project_id=team.pk)
    text = client.get("/metrics").content.decode()
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="active", project="default") == 1
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="completed", project="team") == 1
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentA", project="team") is None
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentA", project="default") == 1
