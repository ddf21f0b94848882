import uuid
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AliasChoices, AliasPath, BaseModel, BeforeValidator, ConfigDict, Field, RootModel, StrictBool

from apps.core.api.responses import absent_if_none
from apps.core.api.validation import Text
from apps.runs.services import MAX_REVIEW_NOTE

from ..models import per_cent, rate_from_per_cent

Kind = Literal["run_result", "agentic_evaluation", "rag_evaluation"]


class QueueIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Annotated[Text, Field(min_length=1, max_length=200)]
    kind: Kind
    description: Annotated[Text, Field(max_length=5000)] = ""
    include_unassessed: StrictBool = Field(default=False, description="judge errors and skipped verdicts enter")
    score_below: Annotated[float, Field(ge=0, le=1)] | None = Field(
        default=None, description="objects whose overall score (0..1) is below this enter"
    )
    disagreement_prone: StrictBool = Field(
        default=False, description="objects judged on a rule or metric whose human reviews disagreed with the judge"
    )
    sample_percent: Annotated[float, Field(ge=0, le=100)] = Field(
        default=0.0,
        description=(
            "a random sample of every object, in per cent (0..100); kept as a 0..1 sample rate, the unit "
            "online evaluation rules use"
        ),
    )

    def rule(self) -> dict:
        """The queue's fields as the services take them: the sample as a 0..1 rate."""
        fields = self.model_dump()
        fields["sample_rate"] = rate_from_per_cent(fields.pop("sample_percent"))
        return fields


def _username(user) -> str | None:
    return user.get_username() if user is not None else None


# A user foreign key, answered as the user's name.
Username = Annotated[str | None, BeforeValidator(_username)]


# The answers read the rows (from_attributes): a queue with its progress (queue_list's annotations
# total, done, left), an item with what names its subject (annotated by queue_item_list, or added
# from the subject by the view for a single item).


class QueueOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    kind: Kind
    description: str
    include_unassessed: bool
    score_below: float | None
    disagreement_prone: bool
    # Stored as the 0..1 rate online evaluation rules use; the API speaks per cent.
    sample_percent: Annotated[float, BeforeValidator(per_cent)] = Field(
        validation_alias="sample_rate", description="the random sample, in per cent (0..100)"
    )
    created_by: Username
    created_at: datetime
    total: int
    done: int
    left: int


class QueueList(RootModel[list[QueueOut]]):
    pass


class QueueFillOut(BaseModel):
    entered: int = Field(description="objects the rule added; those already in the queue are not counted")
    total: int


class QueueItemAddIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    target_id: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=64,
            description=("a run result's result_id, or an agentic or RAG evaluation's id, as the queue's kind says"),
        ),
    ]
    kind: Kind | None = Field(
        default=None,
        description=(
            "what target_id names; when given, a queue of another kind answers 422 (agentic and RAG "
            "evaluation ids overlap, so this keeps one from being added as the other)"
        ),
    )


class QueueItemOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    queue_id: int
    kind: Kind = Field(validation_alias=AliasPath("queue", "kind"))
    # A run result is named by its public result_id; the other subjects by their primary key.
    target_id: Annotated[str, BeforeValidator(str)] = Field(validation_alias=AliasChoices("result_uuid", "subject_id"))
    # Read under the names queue_item_list annotates them with.
    run_id: Annotated[uuid.UUID | None, Field(validation_alias="run_uuid")] = absent_if_none(
        "run results: the run the result is of"
    )
    run_label: str | None = absent_if_none("run results: the run's label (empty if it has none)")
    attempt: Annotated[int | None, Field(validation_alias="result_attempt")] = absent_if_none(
        "run results: which attempt of its item the result is, 1..repeats"
    )
    repeats: Annotated[int | None, Field(validation_alias="run_repeats")] = absent_if_none(
        "run results: how many times the run ran every item"
    )
    origin: Literal["rule", "hand"]
    assigned_to: Username
    claimed_at: datetime | None
    done_at: datetime | None
    reviewed_by: Username
    created_at: datetime


class QueueItemList(BaseModel):
    count: int
    results: list[QueueItemOut]


class QueueAssignIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: Annotated[Text, Field(min_length=1, max_length=150)] | None = Field(
        description="the reviewer, or null to unassign"
    )


class QueueVerdictIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["criterion", "rule", "metric"] = "metric"
    key: Annotated[
        Text,
        Field(
            min_length=1,
            max_length=1000,
            description=("a criterion's text or a rule's rule_id (run results), or a metric's name"),
        ),
    ]
    passed: StrictBool | None = Field(default=None, description="run results and RAG metrics")
    score: Annotated[float, Field(ge=0, le=1)] | None = Field(default=None, description="agentic metrics, 0..1")


class QueueItemReviewIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdicts: Annotated[list[QueueVerdictIn], Field(min_length=1, max_length=200)]
    note: Annotated[Text, Field(max_length=MAX_REVIEW_NOTE)] = ""
