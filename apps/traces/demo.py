"""A handful of realistic traces for `make run`, recorded through the lifecycle services."""

from apps.core.errors import ConflictError

from . import services

DEMO_TRACES = [
    {
        "session_id": "demo_k8s_list_delhi",
        "agent_name": "OrchestratorAgent",
        "user_query": "List all Kubernetes clusters in Delhi",
        "intent": ("list_k8s_cluster", "k8s_cluster", "list"),
        "tool_calls": [
            (
                "list_k8s_clusters",
                {"datacenter": "Delhi"},
                [{"name": "prod-01", "status": "running"}, {"name": "dev-02", "status": "stopped"}],
                True,
                None,
            ),
        ],
        "final_response": "Found 2 clusters in Delhi:\n1. prod-01 (running)\n2. dev-02 (stopped)",
        "success": True,
    },
    {
        "session_id": "demo_vm_create_mumbai",
        "agent_name": "OrchestratorAgent",
        "user_query": "Create a VM named web-07 with 4 vCPUs and 16 GB RAM in Mumbai",
        "intent": ("create_vm", "vm", "create"),
        "tool_calls": [
            ("check_quota", {"datacenter": "Mumbai", "vcpus": 4, "memory_gb": 16}, {"available": True}, True, None),
            (
                "create_vm",
                {"name": "web-07", "vcpus": 4, "memory_gb": 16, "datacenter": "Mumbai"},
                {"id": "vm-3391", "name": "web-07", "state": "provisioning"},
                True,
                None,
            ),
        ],
        "final_response": "VM web-07 (vm-3391) is being provisioned in Mumbai with 4 vCPUs and 16 GB RAM.",
        "success": True,
    },
    {
        "session_id": "demo_k8s_delete_failed",
        "agent_name": "OrchestratorAgent",
        "user_query": "Delete the staging cluster in Chennai",
        "intent": ("delete_k8s_cluster", "k8s_cluster", "delete"),
        "tool_calls": [
            (
                "delete_k8s_cluster",
                {"name": "staging", "datacenter": "Chennai"},
                None,
                False,
                "403 Forbidden: deletion requires the cluster-admin role",
            ),
        ],
        "final_response": "I could not delete the staging cluster: you need the cluster-admin role.",
        "success": False,
    },
    {
        "session_id": "demo_billing_wrong_tool",
        "agent_name": "BillingAgent",
        "user_query": "What did we spend on storage last month?",
        "intent": ("get_cost_report", "billing", "get"),
        "tool_calls": [
            ("list_k8s_clusters", {"datacenter": "Delhi"}, [{"name": "prod-01"}], True, None),
        ],
        "final_response": "Your clusters are prod-01.",
        "success": True,
    },
    {
        "session_id": "demo_lb_list_bangalore",
        "agent_name": "NetworkAgent",
        "user_query": "Show the load balancers in Bangalore and their health",
        "intent": ("list_load_balancer", "load_balancer", "list"),
        "tool_calls": [
            (
                "list_load_balancers",
                {"datacenter": "Bangalore"},
                [{"name": "lb-edge-1", "health": "healthy"}, {"name": "lb-int-4", "health": "degraded"}],
                True,
                None,
            ),
        ],
        "final_response": "Bangalore has 2 load balancers: lb-edge-1 is healthy and lb-int-4 is degraded.",
        "success": True,
    },
]


def load_demo_traces() -> int:
    """Record the demo traces; already-recorded ones are left as they are. Returns how many were new."""
    created_count = 0
    for demo in DEMO_TRACES:
        session_id = demo["session_id"]
        _trace, created = services.trace_start(
            session_id=session_id,
            user_query=demo["user_query"],
            agent_name=demo["agent_name"],
            metadata={"source": "demo"},
        )
        if not created:
            continue
        created_count += 1
        intent, resource_type, operation = demo["intent"]
        services.trace_intent_record(
            session_id=session_id, intent=intent, resource_type=resource_type, operation=operation
        )
        for i, (tool_name, args, result, success, error) in enumerate(demo["tool_calls"], start=1):
            services.trace_tool_call_record(
                session_id=session_id,
                tool_name=tool_name,
                tool_args=args,
                tool_result=result,
                success=success,
                error=error,
                duration_ms=120.0 * i,
                call_id=f"{session_id}-{i}",
            )
        try:
            services.trace_complete(
                session_id=session_id, final_response=demo["final_response"], success=demo["success"]
            )
        except ConflictError:
            pass
    return created_count
