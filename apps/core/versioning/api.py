"""The REST edge of versioned heads: ETags name versions, If-Match (or a body `version`) names the
version an edit is based on, the request's user is the version's author, and the two read-only views
of a head's history are the same for every kind of head."""

import re
from collections.abc import Callable
from typing import Any

from drf_spectacular.utils import OpenApiParameter, extend_schema
from pydantic import BaseModel, RootModel
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.responses import respond
from apps.core.errors import InvalidInputError

from .models import VersionedHead
from .selectors import version_data, version_get, version_list

_ETAG = re.compile(r'^\s*(?:W/)?"?v?(\d+)"?\s*$')

# The header of a PUT, for the OpenAPI document.
IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    required=False,
    description='The ETag of the version this edit is based on (e.g. "v3"); stale is 409.',
)


def version_etag(version: int) -> str:
    return f'"v{version}"'


def parse_if_match(header: str | None) -> int | None:
    """The version an If-Match header names ("v3", W/"v3" or 3); None when absent or "*"."""
    if header is None or header.strip() in ("", "*"):
        return None
    match = _ETAG.match(header.split(",")[0])
    if match is None:
        raise InvalidInputError(f'If-Match must name a version such as "v3", got {header!r}')
    return int(match.group(1))


def expected_version(request, body_version: int | None) -> int | None:
    """The version a PUT is based on: If-Match or the body's `version` (they must agree)."""
    expected = parse_if_match(request.headers.get("If-Match"))
    if expected is None:
        return body_version
    if body_version is not None and body_version != expected:
        raise InvalidInputError("The body's version and the If-Match header name different versions")
    return expected


def author_of(request) -> str:
    """The name a write is recorded under (a version's author): the user's, or "" without one."""
    user = getattr(request, "user", None)
    return user.get_username() if user is not None and user.is_authenticated else ""


def with_etag(model: type[BaseModel], data: dict, **kwargs) -> Response:
    """A response for a head at one version, built through its Out model, with that version as its ETag."""
    return respond(model, data, headers={"ETag": version_etag(data["version"])}, **kwargs)


def version_views(
    model: type[VersionedHead],
    *,
    head_get: Callable[[Any, int], VersionedHead],
    list_out: type[RootModel],
    version_out: type[BaseModel],
    rows: str,
    row_count: str,
    noun: str,
    operation_prefix: str,
    tags: list[str],
) -> tuple[type[APIView], type[APIView]]:
    """The views of a head's history, for the app's urls: its versions newest first, each counting
    the snapshot's `rows` under `row_count` (e.g. rules, rule_count), and the head at one version
    with its changelog and author. The URL names the head by its primary key's name (rubric_id);
    `noun`, `operation_prefix` and `tags` word the operations in the OpenAPI document. `head_get`
    (request, id) is the app's own read of one head, so a head the request may not see (another
    project's) answers as the app answers it everywhere else: 404, as if it did not exist."""
    pk = model._meta.pk.name

    class VersionListView(APIView):
        required_scopes = {"GET": "read"}

        @extend_schema(
            tags=tags,
            responses={200: list_out},
            operation_id=f"{operation_prefix}_versions_list",
            summary=f"List a {noun}'s versions",
        )
        def get(self, request, **url):
            head = head_get(request, url[pk])
            return respond(list_out, version_list(head, count_key=row_count, children_key=rows))

    class VersionDetailView(APIView):
        required_scopes = {"GET": "read"}

        @extend_schema(
            tags=tags,
            responses={200: version_out},
            operation_id=f"{operation_prefix}_versions_get",
            summary=f"Get a {noun} at one version",
        )
        def get(self, request, version, **url):
            head = head_get(request, url[pk])
            return with_etag(version_out, version_data(head, version_get(head, version), with_history=True))

    for view in (VersionListView, VersionDetailView):
        view.__name__ = view.__qualname__ = model.__name__ + view.__name__
    return VersionListView, VersionDetailView
