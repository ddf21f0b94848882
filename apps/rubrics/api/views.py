from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.openapi import CONFLICT
from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.projects.resolution import project_of
from apps.core.versioning.api import IF_MATCH, author_of, expected_version, version_views, with_etag
from apps.core.versioning.selectors import head_data, head_list_data
from apps.rubrics import selectors, services
from apps.rubrics.models import Rubric
from apps.rubrics.schemas import RubricCreateIn, RubricUpdateIn

from .schemas import RubricListOut, RubricListQuery, RubricOut, RubricVersionListOut, RubricVersionOut

TAG = ["rubrics"]


class RubricListView(APIView):
    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(
        tags=TAG,
        responses={200: RubricListOut},
        operation_id="rubrics_list",
        summary="List rubrics (current versions)",
        parameters=query_parameters(RubricListQuery),
    )
    def get(self, request):
        query = query_of(RubricListQuery, request)
        rubrics = selectors.rubric_list(project=project_of(request), filters=query.model_dump(exclude_none=True))
        return respond(RubricListOut, head_list_data(rubrics))

    @extend_schema(
        tags=TAG,
        request=RubricCreateIn,
        responses={201: RubricOut},
        operation_id="rubrics_create",
        summary="Create a rubric (version 1)",
    )
    def post(self, request):
        body = validate_body(RubricCreateIn, request.data)
        rubric = services.rubric_create(
            content=body, project=project_of(request), changelog=body.changelog, author=author_of(request)
        )
        return with_etag(RubricOut, head_data(rubric), status=status.HTTP_201_CREATED)


class RubricDetailView(APIView):
    required_scopes = {"GET": "read", "PUT": "configure", "DELETE": "admin"}

    @extend_schema(
        tags=TAG, responses={200: RubricOut}, operation_id="rubrics_get", summary="Get a rubric at its current version"
    )
    def get(self, request, rubric_id):
        return with_etag(RubricOut, head_data(selectors.rubric_get(rubric_id, project=project_of(request))))

    @extend_schema(
        tags=TAG,
        request=RubricUpdateIn,
        responses={200: RubricOut, 409: CONFLICT},
        parameters=[IF_MATCH],
        operation_id="rubrics_update",
        summary="Publish a new version of a rubric",
        description="Earlier versions are kept. A body `version` or If-Match naming an older version "
        "is 409. A PUT that changes nothing publishes nothing and returns the current version.",
    )
    def put(self, request, rubric_id):
        rubric = selectors.rubric_get(rubric_id, project=project_of(request))
        body = validate_body(RubricUpdateIn, request.data)
        rubric, _published = services.rubric_publish_version(
            rubric=rubric,
            content=body,
            changelog=body.changelog,
            author=author_of(request),
            expected_version=expected_version(request, body.version),
        )
        return with_etag(RubricOut, head_data(rubric))

    @extend_schema(
        tags=TAG,
        responses={204: None},
        operation_id="rubrics_delete",
        summary="Delete a rubric and its versions (admin scope)",
    )
    def delete(self, request, rubric_id):
        services.rubric_delete(rubric=selectors.rubric_get(rubric_id, project=project_of(request)))
        return Response(status=status.HTTP_204_NO_CONTENT)


RubricVersionListView, RubricVersionDetailView = version_views(
    Rubric,
    head_get=lambda request, pk: selectors.rubric_get(pk, project=project_of(request)),
    list_out=RubricVersionListOut,
    version_out=RubricVersionOut,
    rows="rules",
    row_count="rule_count",
    noun="rubric",
    operation_prefix="rubrics",
    tags=TAG,
)
