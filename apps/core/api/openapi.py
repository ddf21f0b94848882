"""The OpenAPI document: the API key scheme, and the error answers every operation can give.

Errors are produced in one place (`apps.core.api.handlers`, the middleware), so they are documented in
one place too: `ApiAutoSchema` adds them to each operation from what the operation takes (a path id,
query parameters, a body). Only what depends on a service's rules — 409 where a service refuses a
conflicting write, 400 where a contract says so — is declared on the view, with `CONFLICT` or
`BAD_REQUEST` from here.
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from pydantic import BaseModel, Field

from apps.core.auth.permissions import required_scope


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "apps.core.auth.authentication.ApiKeyAuthentication"
    name = "ApiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An evalsite API key: `Authorization: Bearer es_…`"}


class ErrorOut(BaseModel):
    """Every error answer."""

    detail: str = Field(description="What went wrong, for a person to read.")


class FieldErrorOut(BaseModel):
    loc: list[str | int] = Field(description="Where the error is: field names and list indexes.")
    msg: str
    type: str = Field(description="pydantic's error type, e.g. missing, string_too_long.")


class ValidationErrorOut(BaseModel):
    """422: the field errors of a body or query that failed validation, or one message."""

    detail: str | list[FieldErrorOut]


class BadRequestOut(BaseModel):
    """A contract's 400: `detail` is always a message (the contracts' `HTTPException(400, detail=str(e))`)."""

    detail: str = Field(description="What cannot be understood, for a person to read.")
    errors: list[FieldErrorOut] | None = Field(
        default=None, description="The field errors, when the request parsed but failed validation."
    )


CONFLICT = OpenApiResponse(ErrorOut, description="Conflicts with the current state (see the operation's description).")
BAD_REQUEST = OpenApiResponse(BadRequestOut, description="The request cannot be understood.")

_UNAUTHORIZED = OpenApiResponse(ErrorOut, description="No API key, or an invalid or revoked one.")
_FORBIDDEN = OpenApiResponse(ErrorOut, description="The key may not do this (staff only, or a missing scope).")
_NOT_FOUND = OpenApiResponse(ErrorOut, description="An id in the path, query or body names nothing.")
_TOO_LARGE = OpenApiResponse(ErrorOut, description="The body is over EVALSITE_MAX_BODY_BYTES.")
_UNSUPPORTED = OpenApiResponse(ErrorOut, description="The body's Content-Type is not application/json.")
_INVALID = OpenApiResponse(ValidationErrorOut, description="The body or a query parameter is invalid.")
_RATE_LIMITED = OpenApiResponse(
    ErrorOut,
    description="Too many LLM-spending requests for this key (EVALSITE_LLM_RATE); "
    "the Retry-After header gives the seconds to wait.",
)
# Answered by gunicorn before the request reaches evalsite (its limit_request_line, 4,094 bytes), as
# an HTML page: no body is declared. Long free text belongs in a body.
_URI_TOO_LONG = OpenApiResponse(
    description="The request line (path and query string) is over the server's limit "
    "(gunicorn's 4,094 bytes); send long text in the body."
)


def _names_a_resource(name: str) -> bool:
    return name.endswith(("_id", "_ids"))


class ApiAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema plus the error answers this API gives for every operation."""

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        responses = operation["responses"]
        parameters = operation.get("parameters", [])
        in_query = [p["name"] for p in parameters if p["in"] == "query"]
        body = operation.get("requestBody")

        errors = {"401": _UNAUTHORIZED, "403": _FORBIDDEN}
        if (
            any(p["in"] == "path" for p in parameters)
            or any(map(_names_a_resource, in_query))
            or any(map(_names_a_resource, self._body_fields()))
        ):
            errors["404"] = _NOT_FOUND
        if body is not None:
            errors["413"] = _TOO_LARGE
            if "application/json" in body.get("content", {}):
                errors["415"] = _UNSUPPORTED
        if body is not None or in_query:
            errors["422"] = _INVALID
        if in_query or any(p["in"] == "path" for p in parameters):
            errors["414"] = _URI_TOO_LONG
        if method.upper() in getattr(self.view, "llm_spending_methods", ()):
            errors["429"] = _RATE_LIMITED
        for code, response in errors.items():
            # A view's own declaration of the code (a richer description) wins.
            responses.setdefault(code, self._get_response_for_code(response, code))
        operation["responses"] = dict(sorted(responses.items()))
        # The scope comes from the same declaration the permission check reads, so the document
        # cannot name a different one than the 403 would.
        scope = required_scope(self.view, method)
        if scope is not None:
            needs = f"Needs an API key with the `{scope}` scope (403 naming it otherwise)."
            described = operation.get("description")
            operation["description"] = f"{described}\n\n{needs}" if described else needs
        return operation

    def _body_fields(self) -> list[str]:
        if self.method not in ("POST", "PUT", "PATCH"):
            return []
        model = self.get_request_serializer()
        fields = getattr(model, "model_fields", None)
        return list(fields) if isinstance(fields, dict) else []
