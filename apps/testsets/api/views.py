from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.openapi import CONFLICT
from apps.core.api.query_params import query_of, query_parameters
from apps.core.api.responses import respond
from apps.core.api.validation import validate_body
from apps.core.projects.resolution import project_of
from apps.core.versioning.api import IF_MATCH, author_of, expected_version, version_views, with_etag
from apps.core.versioning.selectors import head_data, head_list_data, version_data, version_get
from apps.testsets import selectors, services, transfer
from apps.testsets.models import TestSet
from apps.testsets.schemas import DatasetIn, FromTracesIn, TestSetCreateIn, TestSetUpdateIn

from .schemas import (
    DatasetListOut,
    DatasetListQuery,
    DatasetOut,
    ExportQuery,
    ImportQuery,
    ImportVersionQuery,
    TestSetListOut,
    TestSetListQuery,
    TestSetOut,
    TestSetSavedOut,
    TestSetVersionListOut,
    TestSetVersionOut,
)

TAG = ["test sets"]
DATASET_TAG = ["datasets"]


class _FileFormatNegotiation(DefaultContentNegotiation):
    """?format= names the test set file format here, not a DRF renderer."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _saved(test_set, warnings: list[str], **kwargs) -> Response:
    return with_etag(TestSetSavedOut, {**head_data(test_set), "warnings": warnings}, **kwargs)


class TestSetListView(APIView):
    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(
        tags=TAG,
        responses={200: TestSetListOut},
        operation_id="test_sets_list",
        summary="List test sets (current versions)",
        parameters=query_parameters(TestSetListQuery),
    )
    def get(self, request):
        test_sets = selectors.testset_list(
            project=project_of(request), filters=query_of(TestSetListQuery, request).model_dump(exclude_none=True)
        )
        return respond(TestSetListOut, head_list_data(test_sets))

    @extend_schema(
        tags=TAG,
        request=TestSetCreateIn,
        responses={201: TestSetSavedOut},
        operation_id="test_sets_create",
        summary="Create a test set (version 1)",
        description="`warnings` lists expected tools the bot does not have; they do not block saving.",
    )
    def post(self, request):
        body = validate_body(TestSetCreateIn, request.data)
        warnings = services.testset_tool_warnings(agent_id=body.agent_id, items=body.items, project=project_of(request))
        test_set = services.testset_create(
            content=body, project=project_of(request), changelog=body.changelog, author=author_of(request)
        )
        return _saved(test_set, warnings, status=status.HTTP_201_CREATED)


class TestSetDetailView(APIView):
    required_scopes = {"GET": "read", "PUT": "configure", "DELETE": "admin"}

    @extend_schema(
        tags=TAG,
        responses={200: TestSetOut},
        operation_id="test_sets_get",
        summary="Get a test set at its current version",
    )
    def get(self, request, test_set_id):
        return with_etag(TestSetOut, head_data(selectors.testset_get(test_set_id, project=project_of(request))))

    @extend_schema(
        tags=TAG,
        request=TestSetUpdateIn,
        responses={200: TestSetSavedOut, 409: CONFLICT},
        parameters=[IF_MATCH],
        operation_id="test_sets_update",
        summary="Publish a new version of a test set",
        description="Earlier versions are kept; item_id stays stable (items sent without one keep the "
        "id of the item with the same name). A stale body `version` or If-Match is 409; a PUT that "
        "changes nothing publishes nothing.",
    )
    def put(self, request, test_set_id):
        test_set = selectors.testset_get(test_set_id, project=project_of(request))
        body = validate_body(TestSetUpdateIn, request.data)
        expected = expected_version(request, body.version)
        warnings = services.testset_tool_warnings(agent_id=body.agent_id, items=body.items, project=project_of(request))
        test_set, _published = services.testset_publish_version(
            test_set=test_set,
            content=body,
            changelog=body.changelog,
            author=author_of(request),
            expected_version=expected,
        )
        return _saved(test_set, warnings)

    @extend_schema(
        tags=TAG,
        responses={204: None},
        operation_id="test_sets_delete",
        summary="Delete a test set and its versions (admin scope)",
    )
    def delete(self, request, test_set_id):
        services.testset_delete(test_set=selectors.testset_get(test_set_id, project=project_of(request)))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TestSetItemsFromTracesView(APIView):
    required_scopes = {"POST": "configure"}

    @extend_schema(
        tags=TAG,
        request=FromTracesIn,
        responses={201: TestSetSavedOut, 409: CONFLICT},
        parameters=[IF_MATCH],
        operation_id="test_sets_items_from_traces",
        summary="Publish a new version with test items made from traces",
        description="One item per session id, replaying the trace's user query (a conversation's user "
        "turns as a scripted scenario), with the expected outcome and success criteria given, shared "
        "(`session_ids`) or per item (`items`). Each new item carries `source_session_id`. A session id "
        "the project has no trace for, or one the test set already has an item from, is a 422 and "
        "publishes nothing; a stale `version` or If-Match is a 409.",
    )
    def post(self, request, test_set_id):
        test_set = selectors.testset_get(test_set_id, project=project_of(request))
        body = validate_body(FromTracesIn, request.data)
        test_set = services.testset_items_from_traces(
            test_set=test_set,
            requests=body.requests(),
            changelog=body.changelog,
            author=author_of(request),
            expected_version=expected_version(request, body.version),
        )
        return _saved(test_set, [], status=status.HTTP_201_CREATED)


class TestSetExportView(APIView):
    required_scopes = {"GET": "read"}

    content_negotiation_class = _FileFormatNegotiation

    @extend_schema(
        tags=TAG,
        operation_id="test_sets_export",
        summary="Export a test set as JSON, JSONL or CSV",
        parameters=query_parameters(ExportQuery),
        responses={
            (200, "application/json"): OpenApiResponse(TestSetOut, description="The file: the test set version"),
            (200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="The file: one item a line"),
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="The file: one item a row"),
        },
    )
    def get(self, request, test_set_id):
        query = ExportQuery.model_validate(request.query_params.dict())
        fmt = query.format or "json"
        test_set = selectors.testset_get(test_set_id, project=project_of(request))
        found = version_get(test_set, query.version)
        data = version_data(test_set, found)
        response = HttpResponse(
            transfer.export_test_set(data, fmt), content_type=f"{transfer.FORMATS[fmt]}; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="test-set-{test_set.pk}-v{found.version}.{fmt}"'
        return response


_IMPORT_DOC = (
    "The request body is the file itself (raw JSON, JSONL or CSV, the formats export writes). Items "
    "are validated like a PUT; nothing is written if any is invalid."
)


class TestSetImportView(APIView):
    required_scopes = {"POST": "configure"}

    content_negotiation_class = _FileFormatNegotiation

    @extend_schema(
        tags=TAG,
        operation_id="test_sets_import",
        summary="Create a test set from a JSON, JSONL or CSV file",
        description=_IMPORT_DOC,
        request={"application/octet-stream": OpenApiTypes.BINARY},
        parameters=query_parameters(ImportQuery),
        responses={201: TestSetSavedOut},
    )
    def post(self, request):
        query = ImportQuery.model_validate(request.query_params.dict())
        fmt = transfer.format_for(query.format, request.content_type)
        test_set, _published, warnings = services.testset_import(
            raw=request.body,
            fmt=fmt,
            project=project_of(request),
            agent_id=query.agent_id,
            name=query.name,
            description=query.description,
            author=author_of(request),
        )
        return _saved(test_set, warnings, status=status.HTTP_201_CREATED)


class TestSetImportVersionView(APIView):
    required_scopes = {"POST": "configure"}

    content_negotiation_class = _FileFormatNegotiation

    @extend_schema(
        tags=TAG,
        operation_id="test_sets_import_version",
        summary="Publish a file's items as the next version of a test set",
        description=_IMPORT_DOC + " A file equal to the current version publishes nothing.",
        request={"application/octet-stream": OpenApiTypes.BINARY},
        parameters=query_parameters(ImportVersionQuery),
        responses={200: TestSetSavedOut, 409: CONFLICT},
    )
    def post(self, request, test_set_id):
        test_set = selectors.testset_get(test_set_id, project=project_of(request))
        query = ImportVersionQuery.model_validate(request.query_params.dict())
        fmt = transfer.format_for(query.format, request.content_type)
        test_set, _published, warnings = services.testset_import(
            raw=request.body, fmt=fmt, project=project_of(request), test_set=test_set, author=author_of(request)
        )
        return _saved(test_set, warnings)


TestSetVersionListView, TestSetVersionDetailView = version_views(
    TestSet,
    head_get=lambda request, pk: selectors.testset_get(pk, project=project_of(request)),
    list_out=TestSetVersionListOut,
    version_out=TestSetVersionOut,
    rows="items",
    row_count="item_count",
    noun="test set",
    operation_prefix="test_sets",
    tags=TAG,
)


class DatasetListView(APIView):
    required_scopes = {"GET": "read", "POST": "configure"}

    @extend_schema(
        tags=DATASET_TAG,
        responses={200: DatasetListOut},
        operation_id="datasets_list",
        summary="List V1 question sets",
        parameters=query_parameters(DatasetListQuery),
    )
    def get(self, request):
        datasets = selectors.dataset_list(
            project=project_of(request), filters=query_of(DatasetListQuery, request).model_dump(exclude_none=True)
        )
        return respond(DatasetListOut, [selectors.dataset_data(d) for d in datasets])

    @extend_schema(
        tags=DATASET_TAG,
        request=DatasetIn,
        responses={201: DatasetOut},
        operation_id="datasets_create",
        summary="Create a question set",
    )
    def post(self, request):
        body = validate_body(DatasetIn, request.data)
        project = project_of(request)
        dataset = services.dataset_create(data=body, project=project)
        return respond(
            DatasetOut,
            selectors.dataset_data(selectors.dataset_get(dataset.pk, project=project)),
            status=status.HTTP_201_CREATED,
        )


class DatasetDetailView(APIView):
    required_scopes = {"GET": "read", "PUT": "configure", "DELETE": "admin"}

    @extend_schema(
        tags=DATASET_TAG, responses={200: DatasetOut}, operation_id="datasets_get", summary="Get a question set"
    )
    def get(self, request, dataset_id):
        return respond(
            DatasetOut, selectors.dataset_data(selectors.dataset_get(dataset_id, project=project_of(request)))
        )

    @extend_schema(
        tags=DATASET_TAG,
        request=DatasetIn,
        responses={200: DatasetOut},
        operation_id="datasets_update",
        summary="Replace a question set",
        description="Questions keep their question_id when sent with it or with unchanged text.",
    )
    def put(self, request, dataset_id):
        dataset = selectors.dataset_get(dataset_id, project=project_of(request))
        body = validate_body(DatasetIn, request.data)
        services.dataset_update(dataset=dataset, data=body)
        return respond(
            DatasetOut, selectors.dataset_data(selectors.dataset_get(dataset_id, project=project_of(request)))
        )

    @extend_schema(
        tags=DATASET_TAG,
        responses={204: None},
        operation_id="datasets_delete",
        summary="Delete a question set (admin scope)",
    )
    def delete(self, request, dataset_id):
        services.dataset_delete(dataset=selectors.dataset_get(dataset_id, project=project_of(request)))
        return Response(status=status.HTTP_204_NO_CONTENT)
