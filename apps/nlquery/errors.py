"""Failures inside the node. Each carries the contract's QueryError, so the node only has to put
it into the state; nothing here is ever retried."""

from .schemas import ErrorType, QueryError


class QueryFailure(Exception):
    def __init__(self, error_type: ErrorType, message: str, suggestion: str, details: dict | None = None):
        super().__init__(message)
        self.error = QueryError(error_type=error_type, message=message, suggestion=suggestion, details=details)


class BackendUnavailable(Exception):
    """The metrics backend could not answer: unreachable, timed out, 5xx, or refused our credentials."""

    def __init__(self, message: str, suggestion: str, details: dict | None = None):
        super().__init__(message)
        self.suggestion = suggestion
        self.details = details or {}


class BackendRejected(Exception):
    """The backend answered but refused the query itself (Prometheus bad_data / execution errors)."""

    def __init__(self, message: str, details: dict | None = None):
        super().__init__(message)
        self.details = details or {}


class OutOfProject(Exception):
    """The expression would read evalsite series outside the caller's project (apps.nlquery.promql)."""

    def __init__(self, message: str, suggestion: str, details: dict | None = None):
        super().__init__(message)
        self.suggestion = suggestion
        self.details = details or {}
