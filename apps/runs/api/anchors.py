"""Judge anchors over the API: mark a test-set version as anchors, list a test set's anchors, start
a check, read a check's drift report (apps.runs.anchors)."""

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.openapi import CONFLICT
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.llm.client import llm_configured
from apps.core.llm.quotas import llm_rate_check
from apps.core.models import ApiKey
from apps.core.projects.resolution import project_of
from apps.runs.anchors import selectors, services
from apps.testsets.selectors import testset_get

from .schemas import (
    AnchorCheckCreatedOut,
    AnchorCheckOut,
    AnchorSetIn,
    AnchorSetList,
    AnchorSetOut,
    anchor_check_answer,
    anchor_set_answer,
)

TAG = ["test-sets"]


def _user(request):
    return request.user if request.user.is_authenticated else None


class TestSetAnchorsView(APIView):
    """Marking a version as anchors commits the platform to judging it again on every judge change:
    `configure`, as editing the test set."""

    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(
        tags=TAG,
        request=AnchorSetIn,
        responses={201: AnchorSetOut, 409: CONFLICT},
        summary="Mark a test-set version as anchors: its reference run's transcripts are judged again on "
        "every judge change",
        description="The reference run is `run_id` (a finished run of that version) or the version's newest "
        "completed run; 422 when there is none or it stored no judged conversations, 409 when the version is "
        "anchors already.",
        operation_id="test_set_anchors_create",
    )
    def post(self, request, test_set_id):
        test_set = testset_get(test_set_id, project=project_of(request))
        body = validate_body(AnchorSetIn, request.data)
        anchor_set = services.anchor_set_mark(
            test_set=test_set, version=body.version, run_id=body.run_id, created_by=_user(request)
        )
        return respond(AnchorSetOut, anchor_set_answer(anchor_set, None), status=status.HTTP_201_CREATED)

    @extend_schema(
        tags=TAG,
        responses={200: AnchorSetList},
        summary="A test set's anchors, each with its newest check's figures",
        operation_id="test_set_anchors_list",
    )
    def get(self, request, test_set_id):
        project = project_of(request)
        test_set = testset_get(test_set_id, project=project)
        rows = selectors.anchor_sets_of(test_set_id=test_set.pk, project=project)
        return respond(AnchorSetList, [anchor_set_answer(anchor_set, check) for anchor_set, check in rows])


class AnchorChecksView(APIView):
    """A check measures the judge, as an alignment trial does: `review`; its judge calls are billed
    to the key, as a run's are."""

    required_scopes = {"POST": "review"}
    llm_spending_methods = {"POST"}

    @extend_schema(
        tags=TAG,
        request=None,
        responses={202: AnchorCheckCreatedOut, 409: CONFLICT},
        summary="Judge the anchors again now, with the judge in force",
        description="409 while a check of the anchors is pending or running. GET /api/v1/anchor-checks/{id} "
        "shows its progress and drift report.",
        operation_id="anchor_check_create",
    )
    def post(self, request, anchor_id):
        anchor_set = selectors.anchor_set_get(anchor_id, project=project_of(request))
        if llm_configured():
            llm_rate_check(request, self)
        check = services.anchor_check_start(
            anchor_set=anchor_set,
            created_by=_user(request),
            api_key=request.auth if isinstance(request.auth, ApiKey) else None,
        )
        return respond(AnchorCheckCreatedOut, check, status=status.HTTP_202_ACCEPTED)


class AnchorCheckView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(
        tags=TAG,
        responses={200: AnchorCheckOut},
        summary="An anchor check's drift report: verdicts that changed on identical transcripts, kappa "
        "between the old and the new judge, what changed in the judge",
        operation_id="anchor_check_get",
    )
    def get(self, request, check_id):
        check = selectors.check_get(check_id, project=project_of(request))
        return respond(AnchorCheckOut, anchor_check_answer(check, changed_verdicts=selectors.changed_verdicts(check)))


class AnchorSetView(APIView):
    """Unmarking changes what the platform judges again: `configure`, as marking."""

    required_scopes = {"DELETE": "configure"}

    @extend_schema(
        tags=TAG,
        request=None,
        responses={204: None, 409: CONFLICT},
        summary="Unmark anchors: the version is no longer judged again on judge changes (its checks go too)",
        description="409 while a check of the anchors is pending or running.",
        operation_id="anchor_set_delete",
    )
    def delete(self, request, anchor_id):
        anchor_set = selectors.anchor_set_get(anchor_id, project=project_of(request))
        services.anchor_set_unmark(anchor_set=anchor_set)
        return Response(status=status.HTTP_204_NO_CONTENT)
