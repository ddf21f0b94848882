"""The validated input of the project services: the redaction settings' shape and a project's
changes. The API validates its bodies with them; so may any other caller (the admin, a command)."""

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from apps.core.errors import InvalidInputError
from apps.core.redaction import DETECTOR_NAMES, MAX_CUSTOM_PATTERN_LENGTH, MAX_CUSTOM_PATTERNS, RedactionConfig

# The redaction package's detectors, in its order (the order they are stored in); the Literal gives
# the OpenAPI document its enum and must name the same ones.
REDACTION_DETECTORS = DETECTOR_NAMES
Detector = Literal["email", "phone", "credit_card", "iban", "ip_address", "secret"]
assert get_args(Detector) == DETECTOR_NAMES, "Detector must list apps.core.redaction.DETECTOR_NAMES"


class RedactionSettings(BaseModel):
    """What a project replaces by typed placeholders before anything it receives is stored."""

    model_config = ConfigDict(extra="forbid")

    enabled: StrictBool = Field(default=False, description="Off by default.")
    detectors: list[Detector] = Field(default_factory=list, description=f"Any of {', '.join(REDACTION_DETECTORS)}.")
    custom_patterns: list[str] = Field(
        default_factory=list,
        max_length=MAX_CUSTOM_PATTERNS,
        description=f"Up to {MAX_CUSTOM_PATTERNS} Python regular expressions of at most "
        f"{MAX_CUSTOM_PATTERN_LENGTH} characters each; matches become <CUSTOM>.",
    )
    phone_regions: list[str] | None = Field(
        default=None,
        description="Regions whose national phone format counts (default US, GB); a number written "
        "with +country code matches in any region.",
    )

    @field_validator("detectors")
    @classmethod
    def _no_repeats(cls, detectors: list[str]) -> list[str]:
        # Stored in the canonical order, once each: two requests naming the same set store the same.
        return [d for d in REDACTION_DETECTORS if d in set(detectors)]

    @model_validator(mode="after")
    def _as_the_redactor_reads_it(self) -> "RedactionSettings":
        # The redaction package's own checks, the ones the doors rely on: a pattern that compiles but
        # backtracks catastrophically ((a+)+$) on a long line is refused here, and regions exist.
        try:
            RedactionConfig.from_json(self.model_dump(exclude_none=True), strict=True)
        except InvalidInputError as exc:
            raise ValueError(exc.detail if isinstance(exc.detail, str) else str(exc)) from None
        return self


class ProjectChanges(BaseModel):
    """A partial update of a project's settings: only the fields sent change."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="", min_length=1, max_length=100)
    retention_days: int | None = Field(
        default=None, ge=1, description="Days to keep traces and evaluations; null: forever."
    )
    run_retention_days: int | None = Field(default=None, ge=1, description="Days to keep runs; null: forever.")
    redaction: RedactionSettings | None = None

    @field_validator("redaction")
    @classmethod
    def _redaction_not_null(cls, value):
        if value is None:
            raise ValueError("redaction cannot be null; send enabled: false to turn it off")
        return value


class ProjectNew(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    slug: str = Field(min_length=1, max_length=50, pattern=r"^[a-z0-9][a-z0-9-]*$")
