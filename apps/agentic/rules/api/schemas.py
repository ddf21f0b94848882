"""Request and response models of /api/v1/evaluation-rules."""

from datetime import datetime
from typing import Annotated, ClassVar, Literal

from pydantic import AwareDatetime, BaseModel, Field, RootModel, StrictBool

from apps.core.api.validation import ConfigurationIn, Identifier, Text

# A model name as OpenAI-compatible servers spell them (gpt-4o-mini, llama3.1:8b, org/model).
JUDGE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$"


class EvaluationRuleIn(ConfigurationIn):
    read_only: ClassVar[frozenset[str]] = frozenset({"id", "created_by", "created_at"})

    name: Annotated[Identifier, Field(max_length=100)]
    enabled: StrictBool = True
    agent_name: Annotated[Text, Field(max_length=255, description="Only this agent's traces; blank: every agent.")] = ""
    source: Literal["any", "rest", "batch", "otlp"] = Field(
        default="any",
        description="Only traces that came in this way: the REST lifecycle, POST /traces/batch, or OTLP spans.",
    )
    sample_rate: Annotated[
        float,
        Field(
            ge=0,
            le=1,
            allow_inf_nan=False,
            description=(
                "Share of matching traces judged. The choice is a hash of the rule and the session, so a trace "
                "is always in or always out for a rule."
            ),
        ),
    ] = 1.0
    judge: Annotated[
        str,
        Field(
            min_length=1,
            max_length=100,
            pattern=JUDGE_PATTERN,
            description=(
                "`heuristic`, `llm` (EVALSITE_JUDGE_MODEL on the configured server), or a model name on that server. "
                "Anything but heuristic needs OPENAI_API_KEY or OPENAI_BASE_URL (422 otherwise)."
            ),
        ),
    ] = "heuristic"


class EvaluationRuleOut(BaseModel):
    id: int
    name: str
    enabled: bool
    agent_name: str
    source: Literal["any", "rest", "batch", "otlp"]
    sample_rate: float
    judge: str
    created_by: str | None = Field(description="Username of who created the rule.")
    created_at: datetime


class EvaluationRuleListOut(RootModel[list[EvaluationRuleOut]]):
    pass


class EvaluationRuleBackfillIn(BaseModel):
    since: AwareDatetime = Field(description="Traces that finished at or after this instant (with a time zone).")
    until: AwareDatetime | None = Field(default=None, description="…and before this one; default now.")


class EvaluationRuleBackfillOut(BaseModel):
    rule_id: int
    queued: int = Field(
        description="Traces queued for evaluation (matching and sampled). Those already judged by "
        "this judge on the same content re-use that verdict."
    )
