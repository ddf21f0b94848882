from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.bots.selectors import bot_get
from apps.core.api.validation import validate_body
from apps.core.errors import InvalidInputError
from apps.core.schema import CONFLICT
from apps.core.versioning import parse_if_match, version_etag
from apps.rubrics import selectors, services
from apps.rubrics.schemas import (
    RubricCreateIn,
    RubricListOut,
    RubricOut,
    RubricUpdateIn,
    RubricVersionListOut,
    RubricVersionOut,
    RubricVersionSummaryOut,
)

TAG = ["rubrics"]
IF_MATCH = OpenApiParameter("If-Match", str, OpenApiParameter.HEADER, required=False,
                            description='The ETag of the version this edit is based on (e.g. "v3"); stale is 409.')


def author_of(request) -> str:
    user = getattr(request, "user", None)
    return user.get_username() if user is not None and user.is_authenticated else ""


def _with_etag(data: dict, **kwargs) -> Response:
    response = Response(data, **kwargs)
    response["ETag"] = version_etag(data["version"])
    return response


class RubricListView(APIView):
    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(tags=TAG, responses={200: RubricListOut}, operation_id="rubrics_list", summary="List rubrics (current versions)",
                   parameters=[OpenApiParameter("agent_id", str, description="Only this bot's rubrics.")])
    def get(self, request):
        agent_id = request.query_params.get("agent_id")
        if agent_id is not None:
            bot_get(agent_id)
        rubrics = selectors.rubric_list(agent_id=agent_id)
        return Response(selectors.rubric_list_data(rubrics))

    @extend_schema(tags=TAG, request=RubricCreateIn, responses={201: RubricOut}, operation_id="rubrics_create", summary="Create a rubric (version 1)")
    def post(self, request):
        body = validate_body(RubricCreateIn, request.data)
        rubric = services.rubric_create(content=body, changelog=body.changelog, author=author_of(request))
        return _with_etag(selectors.rubric_data(rubric), status=status.HTTP_201_CREATED)


class RubricDetailView(APIView):
    required_scopes = {"GET": "read", "PUT": "configure", "DELETE": "admin"}

    @extend_schema(tags=TAG, responses={200: RubricOut}, operation_id="rubrics_get", summary="Get a rubric at its current version")
    def get(self, request, rubric_id):
        return _with_etag(selectors.rubric_data(selectors.rubric_get(rubric_id)))

    @extend_schema(tags=TAG, request=RubricUpdateIn, responses={200: RubricOut, 409: CONFLICT}, parameters=[IF_MATCH],
                   operation_id="rubrics_update", summary="Publish a new version of a rubric",
                   description="Earlier versions are kept. A body `version` or If-Match naming an older version "
                   "is 409. A PUT that changes nothing publishes nothing and returns the current version.")
    def put(self, request, rubric_id):
        rubric = selectors.rubric_get(rubric_id)
        body = validate_body(RubricUpdateIn, request.data)
        expected = parse_if_match(request.headers.get("If-Match"))
        if expected is None:
            expected = body.version
        elif body.version is not None and body.version != expected:
            raise InvalidInputError("The body's version and the If-Match header name different versions")
        rubric, _published = services.rubric_publish_version(
            rubric=rubric, content=body, changelog=body.changelog, author=author_of(request),
            expected_version=expected)
        return _with_etag(selectors.rubric_data(rubric))

    @extend_schema(tags=TAG, responses={204: None}, operation_id="rubrics_delete", summary="Delete a rubric and its versions (admin scope)")
    def delete(self, request, rubric_id):
        services.rubric_delete(rubric=selectors.rubric_get(rubric_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class RubricVersionListView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: RubricVersionListOut}, operation_id="rubrics_versions_list", summary="List a rubric's versions")
    def get(self, request, rubric_id):
        return Response(selectors.rubric_versions(selectors.rubric_get(rubric_id)))


class RubricVersionDetailView(APIView):
    required_scopes = {"GET": "read"}

    @extend_schema(tags=TAG, responses={200: RubricVersionOut}, operation_id="rubrics_versions_get", summary="Get a rubric at one version")
    def get(self, request, rubric_id, version):
        rubric = selectors.rubric_get(rubric_id)
        found = selectors.rubric_version_get(rubric, version)
        return _with_etag(selectors.rubric_version_data(rubric, found, with_history=True))
