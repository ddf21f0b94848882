"""Request and response models of GET /api/v1/audit (validation and OpenAPI in one place)."""

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field

from apps.core.api.validation import Text

ShortText = Annotated[Text, Field(max_length=255)]


def _aware(value: datetime | None) -> datetime | None:
    # A time without an offset is taken as UTC, as the events' created_at are.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


Timestamp = Annotated[datetime, AfterValidator(_aware)]


class AuditQuery(BaseModel):
    limit: Annotated[int, Field(ge=1, le=500, description="Events in the page, 1-500.")] = 50
    offset: Annotated[int, Field(ge=0, le=100_000_000, description="Events skipped, newest first.")] = 0
    action: Annotated[
        ShortText | None,
        Field(description="Only this action: create, update, delete, launch, cancel, clear, add_member, ..."),
    ] = None
    object_type: Annotated[
        ShortText | None, Field(description="Only this kind of object: bot, rubric, api_key, ...")
    ] = None
    object_id: Annotated[ShortText | None, Field(description="Only events of this object (with object_type).")] = None
    actor: Annotated[ShortText | None, Field(description="Only this actor: a username, or key:<prefix>.")] = None
    since: Annotated[Timestamp | None, Field(description="Only events at or after this time (ISO 8601).")] = None
    until: Annotated[Timestamp | None, Field(description="Only events before this time (ISO 8601).")] = None


class AuditEventOut(BaseModel):
    id: int
    created_at: datetime
    project: str = Field(description="The project's slug.")
    actor: str = Field(description="The username, key:<prefix> for an API key, or system.")
    action: str
    object_type: str
    object_id: str
    object_repr: str
    changes: dict[str, Any] = Field(description='{field: [before, after]}; a secret\'s value is never stored ("***").')


class AuditPageOut(BaseModel):
    count: int = Field(description="Events in this page.")
    limit: int
    offset: int
    has_more: bool = Field(description="Whether events follow this page.")
    events: list[AuditEventOut]
