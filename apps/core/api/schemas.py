"""Out models that answers of several apps share."""

from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, Field, PlainSerializer, WithJsonSchema

from apps.core.pricing import amount_text

from .responses import absent_if_none

# Money (apps.core.pricing): USD as a decimal string to the millionth ("0.012300"), so no client reads
# it as a float; null where nothing was priced.
Amount = Annotated[
    Decimal | None,
    PlainSerializer(amount_text, return_type=str | None),
    WithJsonSchema({"anyOf": [{"type": "string", "format": "decimal"}, {"type": "null"}]}),
]


class MetricOverrideOut(BaseModel):
    judge_model: str = Field(description='"heuristic" or the LLM model that graded the metric')
    prompt_template: str | None = Field(
        description="short sha256 of the instructions it read; null: the standard prompt"
    )


class JudgeFingerprintOut(BaseModel):
    """What judged (apps.core.llm.fingerprint): the same judge gives the same fingerprint, so
    verdicts with different ones were judged differently."""

    judge: str = Field(
        description='"llm" (one request per verdict), "llm-batch" (one request for all of an '
        "item's verdicts), or the deterministic judge's label (\"heuristic:v1\")"
    )
    model: str | None = absent_if_none("the judge model asked; absent for a deterministic judge")
    server_model: str | None = absent_if_none("the model the server reported answering, when it differs")
    prompt_template: str | None = absent_if_none("short sha256 of the judge's prompt template")
    judge_version: str = Field(description="evalsite's judge version")
    overrides: dict[str, MetricOverrideOut] | None = absent_if_none(
        "agentic metrics graded by a published metric judge instead, by metric name; absent when none was"
    )
