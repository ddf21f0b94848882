import re

import pytest

from apps.traces import services
from apps.traces.demo import load_demo_traces


def sample(text: str, name: str, **labels) -> float | None:
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split("}")[0]))
        if all(found.get(k) == v for k, v in labels.items()) and len(found) == len(labels):
            return float(line.rsplit(" ", 1)[1])
    return None


@pytest.mark.django_db
def test_prometheus_metrics_follow_the_lifecycle(client):
    services.start_trace("m1", "q", "AgentA")
    services.start_trace("m2", "q", "AgentA")
    services.record_intent("m2", "i", "r", "list")
    services.complete_trace("m2", "done", True)
    services.start_trace("m3", "q", "AgentB")
    services.complete_trace("m3", None, False)

    text = client.get("/metrics").content.decode()
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="active") == 1
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="completed") == 1
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentB", status="failed") == 1
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentA") == 1
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentB") is None
    assert sample(text, "vayu_agent_execution_duration_seconds_count", agent_name="AgentA", operation="list") == 1
    assert sample(text, "vayu_agent_execution_duration_seconds_bucket", agent_name="AgentA", operation="list",
                  le="+Inf") == 1

    services.complete_trace("m1", "ok", True)
    text = client.get("/metrics").content.decode()
    assert sample(text, "vayu_agent_active_sessions", agent_name="AgentA") is None
    assert sample(text, "vayu_agent_sessions_total", agent_name="AgentA", status="completed") == 2


@pytest.mark.django_db
def test_admin_trace_list_and_page(admin_client):
    load_demo_traces()
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
