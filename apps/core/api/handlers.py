"""The API edge: every error leaves as {"detail": ...} with the contract's status code."""

import logging
import re

from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404
from pydantic import ValidationError as PydanticValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.errors import DomainError

logger = logging.getLogger(__name__)


# In a union, pydantic names the member that failed after the field in `loc`, with the member's
# schema: "function-after[functools.partial(<function max_length_validator at 0x7f…>, …)]". That is
# our code's insides (and a memory address), not a place in the client's body: those parts are left out.
_SCHEMA_LOC_PART = re.compile(
    r"^(function-(after|before|wrap|plain)|json-or-python|lax-or-strict|tagged-union|chain|nullable|default"
    r"|definitions|definition-ref|model|dataclass|is-instance|custom-error)\[|<function |<bound method | at 0x[0-9a-f]+"
)
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def _public_loc(loc) -> list:
    return [part for part in loc if not (isinstance(part, str) and _SCHEMA_LOC_PART.search(part))]


def pydantic_error_detail(exc: PydanticValidationError) -> list[dict]:
    """Field errors in the shape FastAPI clients already parse: loc, msg, type. Never a Python repr."""
    return [
        {"loc": _public_loc(err["loc"]), "msg": _ADDRESS.sub("", err["msg"]), "type": err["type"]}
        for err in exc.errors(include_url=False, include_context=False, include_input=False)
    ]


def api_exception_handler(exc, context):
    if isinstance(exc, DomainError):
        return Response({"detail": exc.detail}, status=exc.status_code)
    if isinstance(exc, PydanticValidationError):
        return Response({"detail": pydantic_error_detail(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, RequestDataTooBig):
        return Response({"detail": "Request body too large."}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, (exceptions.ValidationError, exceptions.ParseError)):
        # The contracts are FastAPI's: an invalid or unparseable body is 422, not DRF's 400.
        detail = exc.detail
        if isinstance(exc, exceptions.ParseError):
            detail = str(exc.detail)
        return Response({"detail": detail}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "Not found.")
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        logger.exception("Unhandled error in %s", context.get("view").__class__.__name__, exc_info=exc)
        return Response({"detail": "Internal server error."}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    if not isinstance(response.data, dict) or "detail" not in response.data:
        response.data = {"detail": response.data}
    return response
