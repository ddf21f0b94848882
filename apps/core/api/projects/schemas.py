"""The projects API's answers, read from Project and Membership rows (from_attributes)."""

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, RootModel

from apps.core.models import ProjectRole
from apps.core.projects.schemas import RedactionSettings


class ProjectOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    slug: str
    retention_days: int | None = Field(
        description="Days traces, spans and agentic/RAG evaluations are kept; null: forever."
    )
    run_retention_days: int | None = Field(description="Days runs are kept; null: forever.")
    redaction: RedactionSettings
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
