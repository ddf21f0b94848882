"""Out models that answers of several apps share."""

from pydantic import BaseModel, Field

from .responses import absent_if_none


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
