"""PII redaction before storage (issue 23, part 6): detectors, a project's settings, the Redactor.

The bottom layer, so traces (REST and OTLP ingestion) and rag (TRACE inputs) both use it:

    config = RedactionConfig.from_json(project.redaction)   # InvalidInputError when invalid
    redactor = redactor_for(config)                          # None when redaction is off
    redactor = redactor_for_settings(project.redaction)      # the same, cached per distinct JSON
    counts = Counter()
    clean = redactor.redact_value(payload, counts)           # counts: {"email": 2, "phone": 1}

docs/redaction.md has the detectors, placeholders and their measured precision and recall.
"""

from .config import MAX_CUSTOM_PATTERN_LENGTH, MAX_CUSTOM_PATTERNS, RedactionConfig, check_custom_pattern
from .detectors import DETECTOR_NAMES
from .redactor import CUSTOM, Redactor, redactor_for, redactor_for_settings

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "phone": "<PHONE>",
    "credit_card": "<CREDIT_CARD>",
    "iban": "<IBAN>",
    "ip_address": "<IP_ADDRESS>",
    "secret": "<SECRET>",
    CUSTOM: "<CUSTOM>",
}
# Every kind a count can be recorded for, in the order pages show them.
COUNT_KINDS = (*DETECTOR_NAMES, CUSTOM)

__all__ = [
    "COUNT_KINDS",
    "CUSTOM",
    "DETECTOR_NAMES",
    "MAX_CUSTOM_PATTERNS",
    "MAX_CUSTOM_PATTERN_LENGTH",
    "PLACEHOLDERS",
    "RedactionConfig",
    "Redactor",
    "check_custom_pattern",
    "redactor_for",
    "redactor_for_settings",
]
