"""The answers of the judge-versus-human agreement endpoints (GET /api/v1/rubrics/{id}/agreement,
GET /api/v1/metrics/agreement): one entry per judged key (a rubric rule, a run criterion, an agentic
metric and judge), read from apps.scores.agreement.Agreement."""

from pydantic import BaseModel, Field

from apps.core.api.responses import absent_if_none


class ConfusionRowOut(BaseModel):
    human_pass: int
    human_fail: int


class ConfusionOut(BaseModel):
    """The judge's verdict (rows) against the reviewer's (columns), over the `n` pairs."""

    judge_pass: ConfusionRowOut
    judge_fail: ConfusionRowOut


class DisagreementOut(BaseModel):
    id: str = Field(description="The run result's result_id, or the agentic evaluation's id.")
    session_id: str | None = absent_if_none("The trace an agentic evaluation judged (agentic metrics only).")
    url: str = Field(description="Its console page.")


class AgreementOut(BaseModel):
    key: str = Field(description="The rule id, criterion text or metric name.")
    kind: str = Field(description="rule, criterion or metric.")
    judge: str | None = Field(default=None, description="Agentic metrics: the judge the entry is of.")
    n: int = Field(description="Pairs of a judge's verdict and a reviewer's on the same item: kappa's n.")
    kappa: float | None = Field(description="Cohen's kappa; null where undefined (no pairs, or one class only).")
    kappa_ci: tuple[float, float] | None = Field(
        description="95% interval of kappa (Wilson interval of the observed agreement through kappa's formula)."
    )
    agreement: float | None = Field(description="Share of the n pairs that agree; null when n is 0.")
    confusion: ConfusionOut
    judge_unassessed: int = Field(description="Reviewed items the judge could not score (error, skipped): not in n.")
    disagreements: list[DisagreementOut] = Field(
        description="The items where they disagree, newest review first (at most 100)."
    )
