"""Natural-language queries → TracePayload.

With an LLM configured, the judge model extracts the payload (structured output validated against
ExtractedPayload). Without one, or when the LLM fails, the rule-based extractor reads labelled text:

    Evaluate answer_accuracy and context_recall. Question: What is the capital of France?
    Answer: Paris. Ground truth: Paris. Context ctx1: Paris is the capital of France.
    Relevant: ctx1

Rules (also in docs/rag.md):
- A label is one of `Question`, `Answer` (`Response`, `Predicted answer`), `Ground truth`
  (`Reference`, `Expected answer`), `Context <id>` / `Context`, `Relevant` (`Relevant contexts`,
  `Relevant context ids`), `Tests` (`Metrics`), case-insensitive, followed by `:`, at the start of the
  text or of a line, or after `.`, `?`, `!` or `;` and a space. Its value runs to the next label.
- One trailing `.` or `;` of a value is dropped (it separates fields written on one line).
- `Context:` without an id gets ctx1, ctx2, … by position; repeated `Ground truth:` labels make a list.
- `Relevant:` and `Tests:` values are split on commas, whitespace and the word "and".
- Without a `Tests:` label, the tests are the metric names (with `_`, `-` or spaces, either spelling of
  utilisation) mentioned before the first label.
"""

import logging
import re

from pydantic import BaseModel, Field

from apps.core.llm import client as llm

from .payload import SUPPORTED_TESTS, TEST_ALIASES
from .query_object import ParsedQuery, QueryParseError, normalise_object, validate_payload

logger = logging.getLogger(__name__)

_LABELS = {
    "question": "question",
    "answer": "answer",
    "response": "answer",
    "predicted answer": "answer",
    "ground truth": "ground_truth",
    "ground truths": "ground_truth",
    "reference": "ground_truth",
    "expected answer": "ground_truth",
    "relevant": "relevant_context_ids",
    "relevant contexts": "relevant_context_ids",
    "relevant context ids": "relevant_context_ids",
    "relevant ids": "relevant_context_ids",
    "tests": "tests",
    "metrics": "tests",
}
_LABEL_WORDS = sorted((re.escape(k).replace(r"\ ", r"[\s_-]+") for k in _LABELS), key=len, reverse=True)
_LABEL_RE = re.compile(
    r"(?:^|(?<=\n)|(?<=[.?!;]\s)|(?<=[.?!;]\s\s))[ \t]*"
    r"(?:(?P<label>" + "|".join(_LABEL_WORDS) + r")|(?P<context>contexts?)(?:[ \t]+(?P<ctx_id>[\w.\-]+))?)"
    r"[ \t]*:",
    re.IGNORECASE,
)
_METRIC_NAMES = {name: name for name in SUPPORTED_TESTS} | TEST_ALIASES
_METRIC_RE = re.compile(
    r"\b(" + "|".join(sorted((n.replace("_", r"[\s_-]") for n in _METRIC_NAMES), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)
_LIST_SPLIT = re.compile(r"\s*(?:,|;|\band\b|\s)\s*", re.IGNORECASE)


def parse_natural_language(text: str, *, use_llm: bool | None = None) -> ParsedQuery:
    notes: list[str] = []
    if use_llm is None:
        use_llm = llm.llm_configured()
    if use_llm:
        try:
            return extract_with_llm(text)
        except llm.LLMError as exc:
            logger.warning("TRACE LLM extraction failed: %s", exc.reason)
            notes.append(f"LLM extraction failed ({exc.reason}); the rule-based extractor was used")
        except QueryParseError as exc:
            notes.append(f"LLM extraction unusable ({exc}); the rule-based extractor was used")
    parsed = extract_with_rules(text)
    parsed.notes[:0] = notes
    return parsed


def extract_with_rules(text: str) -> ParsedQuery:
    matches = list(_LABEL_RE.finditer(text))
    data: dict = {}
    contexts: list = []
    ground_truths: list[str] = []
    preamble = text[: matches[0].start()] if matches else text
    for index, match in enumerate(matches):
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        value = _clean(text[match.end() : end])
        if match.group("context"):
            ctx_id = match.group("ctx_id")
            contexts.append({"id": ctx_id, "text": value} if ctx_id else value)
            continue
        field_name = _LABELS[re.sub(r"[\s_-]+", " ", match.group("label").lower())]
        if field_name == "ground_truth":
            ground_truths.append(value)
        elif field_name in ("relevant_context_ids", "tests"):
            data.setdefault(field_name, []).extend(v for v in _LIST_SPLIT.split(value) if v)
        elif field_name in data:
            raise QueryParseError(f"{match.group('label')!r} is given twice")
        else:
            data[field_name] = value
    if "tests" not in data:
        data["tests"] = [m.group(1) for m in _METRIC_RE.finditer(preamble)]
    if contexts:
        data["contexts"] = contexts
    if ground_truths:
        data["ground_truth"] = ground_truths[0] if len(ground_truths) == 1 else ground_truths
    if not matches and not data["tests"]:
        raise QueryParseError(
            "query is neither JSON nor text the rule-based extractor understands: name the metrics and label "
            "the inputs, e.g. 'Evaluate context_recall. Question: … Answer: … Context ctx1: … Relevant: ctx1'"
        )
    if not data["tests"]:
        raise QueryParseError("no metric named in the query; name at least one of: " + ", ".join(SUPPORTED_TESTS))
    data, notes = normalise_object(data)
    return ParsedQuery(payload=validate_payload(data), source="natural_language:rules", notes=notes)


def _clean(value: str) -> str:
    value = value.strip()
    if value.endswith((".", ";")) and not value.endswith(".."):
        value = value[:-1].rstrip()
    return value


class ExtractedContext(BaseModel):
    id: str = Field(description="The context's id as written in the text; ctx1, ctx2, … by position if none")
    text: str


class ExtractedPayload(BaseModel):
    tests: list[str] = Field(description="Metric names requested, snake_case, e.g. answer_accuracy")
    question: str | None = None
    contexts: list[ExtractedContext] = Field(default_factory=list)
    answer: str | None = Field(default=None, description="The RAG system's answer being evaluated")
    ground_truth: list[str] = Field(default_factory=list, description="Reference answer(s)")
    relevant_context_ids: list[str] = Field(default_factory=list)


EXTRACTION_SYSTEM = (
    "You convert a request to evaluate a retrieval-augmented generation (RAG) answer into JSON. "
    "Copy values verbatim from the text; never invent a value that is not in it (leave it null or empty). "
    "tests: the metrics named, among " + ", ".join(SUPPORTED_TESTS) + " (keep any other metric name as written). "
    "contexts: the retrieved passages with their ids. relevant_context_ids: ids said to be relevant."
)


def extract_with_llm(text: str) -> ParsedQuery:
    client = llm.get_llm_client()
    result = client.complete_structured(
        system=EXTRACTION_SYSTEM, user=text, response_model=ExtractedPayload, name="trace_payload"
    )
    extracted: ExtractedPayload = result.data
    data = extracted.model_dump()
    truths = data.pop("ground_truth")
    data["ground_truth"] = None if not truths else truths[0] if len(truths) == 1 else truths
    if not data["tests"]:
        raise QueryParseError("no metric named in the query; name at least one of: " + ", ".join(SUPPORTED_TESTS))
    data, notes = normalise_object(data)
    return ParsedQuery(
        payload=validate_payload(data),
        source="natural_language:llm",
        notes=notes,
        llm_usage=result.usage.as_dict(),
        judge=client.judge_label,
    )
