from typing import TypeVar

from pydantic import BaseModel, ValidationError

from apps.core.exceptions import pydantic_error_detail

M = TypeVar("M", bound=BaseModel)


def validate_body(model: type[M], data) -> M:
    """Validate a parsed request body; a ValidationError reaches the handler and becomes a 422."""
    return model.model_validate(data)


def summarize_errors(exc: ValidationError) -> str:
    """One line per field error, for per-item rejections in batch answers."""
    parts = []
    for err in pydantic_error_detail(exc):
        loc = ".".join(str(p) for p in err["loc"]) or "item"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
