"""Domain errors. Services raise these; the API edge maps them to status codes and {"detail": ...}."""


class DomainError(Exception):
    status_code = 400

    def __init__(self, detail):
        super().__init__(detail if isinstance(detail, str) else repr(detail))
        self.detail = detail


class ForbiddenError(DomainError):
    """The caller may not do this to this object (someone else's run), whatever their scopes."""

    status_code = 403


class NotFoundError(DomainError):
    status_code = 404


class ConflictError(DomainError):
    status_code = 409


class InvalidInputError(DomainError):
    """Input that is well-formed but violates a domain rule."""

    status_code = 422


class ServiceUnavailableError(DomainError):
    """A dependency the request needs (the task queue) is down: 503, try again later."""

    status_code = 503
