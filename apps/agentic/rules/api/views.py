"""/api/v1/evaluation-rules. Rules spend judge tokens on every matching trace, so changing one is an
editor's work as bots and rubrics are: `configure`, which a key (or session) holds only when its
owner is an editor or admin of the project (the scope is capped by the role at every request)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.agentic.models import EvaluationRule
from apps.agentic.rules import selectors as rule_selectors
from apps.agentic.rules import services as rule_services
from apps.core.api.openapi import CONFLICT, ErrorOut
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.projects.resolution import project_of

from .schemas import (
    EvaluationRuleBackfillIn,
    EvaluationRuleBackfillOut,
    EvaluationRuleIn,
    EvaluationRuleListOut,
    EvaluationRuleOut,
)

TAG = ["evaluation rules"]
QUEUE_UNAVAILABLE = OpenApiResponse(ErrorOut, description="The task queue (broker) did not take the tasks.")


def rule_out(rule: EvaluationRule) -> dict:
    """A rule's fields as EvaluationRuleOut declares them (the views answer through that model)."""
    return {
        "id": rule.pk,
        "name": rule.name,
        "enabled": rule.enabled,
        "agent_name": rule.agent_name,
        "source": rule.source,
        "sample_rate": rule.sample_rate,
        "judge": rule.judge,
        "created_by": rule.created_by.get_username() if rule.created_by is not None else None,
        "created_at": rule.created_at,
    }


def rule_input(body: EvaluationRuleIn) -> rule_services.RuleData:
    return rule_services.RuleData(**body.model_dump())


class RuleListView(APIView):
    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(
        tags=TAG,
        responses={200: EvaluationRuleListOut},
        operation_id="evaluation_rules_list",
        summary="List online evaluation rules",
    )
    def get(self, request):
        return respond(
            EvaluationRuleListOut,
            [rule_out(rule) for rule in rule_selectors.rule_list(project_id=project_of(request).pk)],
        )

    @extend_schema(
        tags=TAG,
        request=EvaluationRuleIn,
        responses={201: EvaluationRuleOut, 409: CONFLICT},
        operation_id="evaluation_rules_create",
        summary="Create an online evaluation rule (staff)",
        description="From now on every finished trace that matches (agent, source) and is sampled "
        "is judged on a worker. A name already taken is 409.",
    )
    def post(self, request):
        body = validate_body(EvaluationRuleIn, request.data)
        rule = rule_services.rule_create(
            data=rule_input(body), created_by=request.user, project_id=project_of(request).pk
        )
        return respond(EvaluationRuleOut, rule_out(rule), status=status.HTTP_201_CREATED)


class RuleDetailView(APIView):
    required_scopes = {"GET": "read", "PUT": "configure", "DELETE": "admin"}

    @extend_schema(
        tags=TAG,
        responses={200: EvaluationRuleOut},
        operation_id="evaluation_rules_get",
        summary="Get an online evaluation rule",
    )
    def get(self, request, rule_id: int):
        return respond(
            EvaluationRuleOut, rule_out(rule_selectors.rule_get(rule_id=rule_id, project_id=project_of(request).pk))
        )

    @extend_schema(
        tags=TAG,
        request=EvaluationRuleIn,
        responses={200: EvaluationRuleOut, 409: CONFLICT},
        operation_id="evaluation_rules_update",
        summary="Replace an online evaluation rule (staff)",
        description="Applies to traces that finish from now on; a name another rule has is 409.",
    )
    def put(self, request, rule_id: int):
        rule = rule_selectors.rule_get(rule_id=rule_id, project_id=project_of(request).pk)
        body = validate_body(EvaluationRuleIn, request.data)
        return respond(EvaluationRuleOut, rule_out(rule_services.rule_update(rule=rule, data=rule_input(body))))

    @extend_schema(
        tags=TAG,
        responses={204: None},
        operation_id="evaluation_rules_delete",
        summary="Delete an online evaluation rule (admin scope)",
        description="Its evaluations are kept, with no rule.",
    )
    def delete(self, request, rule_id: int):
        rule_services.rule_delete(rule=rule_selectors.rule_get(rule_id=rule_id, project_id=project_of(request).pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RuleBackfillView(APIView):
    required_scopes = {"POST": "configure"}

    @extend_schema(
        tags=TAG,
        request=EvaluationRuleBackfillIn,
        responses={200: EvaluationRuleBackfillOut, 409: CONFLICT, 503: QUEUE_UNAVAILABLE},
        operation_id="evaluation_rules_backfill",
        summary="Evaluate past traces with a rule (staff)",
        description="Queues the finished traces that ended in [since, until) and that the rule matches "
        "and samples. A disabled rule is 409; since not before until is 422; 503 when the task "
        "queue is down (repeating the backfill is harmless: judged traces are re-used).",
    )
    def post(self, request, rule_id: int):
        rule = rule_selectors.rule_get(rule_id=rule_id, project_id=project_of(request).pk)
        body = validate_body(EvaluationRuleBackfillIn, request.data)
        queued = rule_services.rule_backfill(rule=rule, since=body.since, until=body.until)
        return respond(EvaluationRuleBackfillOut, {"rule_id": rule.pk, "queued": queued})
