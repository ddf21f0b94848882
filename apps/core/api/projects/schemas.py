"""The projects API's answers, read from Project and Membership rows (from_attributes)."""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, RootModel

from apps.core.models import ProjectRole
from apps.core.redaction.detectors import DEFAULT_PHONE_REGIONS


class RedactionOut(BaseModel):
    """A project's redaction settings as stored. Not RedactionSettings, whose checks are for what is
    sent: an answer never fails on a setting stored before a check was added."""

    enabled: bool
    detectors: list[str]
    custom_patterns: list[str]
    phone_regions: list[str] = Field(
        default_factory=lambda: list(DEFAULT_PHONE_REGIONS), description="The regions whose national format counts."
    )


class ProjectOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    slug: str
    retention_days: int | None = Field(
        description="Days traces, spans and agentic/RAG evaluations are kept; null: forever."
    )
    run_retention_days: int | None = Field(description="Days runs are kept; null: forever.")
    redaction: RedactionOut
    created_at: datetime


class ProjectListOut(RootModel[list[ProjectOut]]):
    """The projects the caller may see: a key only its own."""


class MemberIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: str = Field(min_length=1, max_length=150)
    role: ProjectRole


class MemberOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    username: str
    role: ProjectRole
    created_at: datetime


class MemberListOut(RootModel[list[MemberOut]]):
    pass
