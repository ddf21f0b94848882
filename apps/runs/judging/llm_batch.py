"""The batched LLM judge: one request per item answers every verdict of it (each success criterion,
each rubric rule in scope), where the per-verdict judge (llm) makes one request per verdict.

Same client call (complete_structured), same safety wording and the same escaped <data> block as
the per-verdict judge; its fingerprint says `judge: "llm-batch"` and hashes its own prompt template,
so a comparison with a per-verdict run says the judge changed.

The answer is a list of criteria keyed by their number and a list of rules keyed by their id. It is
read entry by entry: an entry that is malformed, or a subject with no entry (or more than one), gets
no verdict here (None) and the caller asks for it with the per-verdict judge; nothing is ever filled
in. When the request itself fails (LLMError: the judge is down, or its answer is unusable after the
client's retries) every verdict of the item is an error verdict."""

import logging
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_validator

from apps.core.llm.client import LLMClient, LLMError
from apps.core.llm.fingerprint import judge_fingerprint
from apps.core.llm.prompting import data_block

from .llm import DATA_RULE, EVALUATOR, EVIDENCE, VERDICT_FIELDS, rule_text
from .types import Transcript, Verdict

logger = logging.getLogger(__name__)

JUDGE_KIND = "llm-batch"

SYSTEM = (
    f"{EVALUATOR} You judge several success criteria and rubric rules, each on its own, {EVIDENCE}\n\n"
    f"{DATA_RULE}\n\n"
    'Answer with JSON: "criteria", one entry per success criterion, with "criterion" (its number as given); '
    '"rules", one entry per rubric rule, with "rule_id" (its id as given); and in every entry '
    f"{VERDICT_FIELDS}."
)
INSTRUCTIONS = (
    "Decide, for each numbered success criterion, whether the assistant met it, and for each rubric rule, "
    "whether the assistant followed it across the whole conversation. A rule fails if any fail condition "
    "holds or a pass condition is clearly not met; use the bot context to tell a real violation from "
    "behaviour the bot's own instructions require. Judge each one on its own evidence, and give exactly "
    "one verdict for every criterion and every rule.\n\n"
)
TEMPLATE = SYSTEM + INSTRUCTIONS
NAME = "batch_verdicts"


class _Entry(BaseModel):
    passed: bool
    score: float = Field(ge=0.0, le=1.0)
    reasoning: str


class CriterionEntry(_Entry):
    criterion: int = Field(ge=1)


class RuleEntry(_Entry):
    rule_id: str


class _AnswerSchema(BaseModel):
    criteria: list[CriterionEntry]
    rules: list[RuleEntry]


class BatchAnswer(BaseModel):
    """The answer as read: its lists are taken as they come and their entries validated one by one
    (a malformed entry costs only its own verdict), while the server is asked for the strict schema.
    An answer with neither list is unusable, and the client asks again as for any unusable reply."""

    criteria: list[Any] = Field(default_factory=list)
    rules: list[Any] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _has_a_list(cls, data):
        if not isinstance(data, dict) or ("criteria" not in data and "rules" not in data):
            raise ValueError('the answer has neither "criteria" nor "rules"')
        return data

    @classmethod
    def model_json_schema(cls, *args, **kwargs) -> dict:
        return _AnswerSchema.model_json_schema(*args, **kwargs)


def _criterion_number(value) -> str:
    """A criterion's number as the answer may write it (1, 1.0, "1"), as a string; anything else as it is."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return str(int(number)) if number.is_integer() else str(value)


def _single_entries(raw_entries: list, entry_model: type[_Entry], key: str, subject) -> dict[str, _Entry]:
    """Entries by subject (`subject` of the entry's key), for subjects that exactly one entry names
    and whose entry is valid. A subject named twice (whether the answers agree or not) or by a
    malformed entry is left out: which verdict the model meant cannot be told."""
    named: dict[str, int] = {}
    valid: dict[str, _Entry] = {}
    for raw in raw_entries:
        if not isinstance(raw, dict) or raw.get(key) is None:
            continue  # names no subject: every subject it might have meant is missing or named elsewhere
        name = subject(raw[key])
        named[name] = named.get(name, 0) + 1
        try:
            valid[name] = entry_model.model_validate(raw)
        except ValidationError:
            continue
    return {name: entry for name, entry in valid.items() if named[name] == 1}


def judge_item(
    client: LLMClient,
    *,
    criteria: list[str],
    rules: list[dict],
    transcript: Transcript,
    expected_outcome: str = "",
    bot_context: str = "",
) -> list[Verdict | None]:
    """Verdicts for `criteria` then `rules`, in their order, from one request; None where the answer
    gave no usable verdict for that subject (the caller judges those one by one)."""
    subjects = len(criteria) + len(rules)
    user = INSTRUCTIONS + data_block(
        criteria="\n".join(f"{n}. {criterion}" for n, criterion in enumerate(criteria, 1)),
        expected_outcome=expected_outcome if criteria else "",
        rules="\n\n".join(rule_text(rule) for rule in rules),
        bot_context=bot_context if rules else "",
        conversation=transcript.as_text(),
    )
    try:
        result = client.complete_structured(system=SYSTEM, user=user, response_model=BatchAnswer, name=NAME)
    except LLMError as exc:
        fingerprint = judge_fingerprint(judge=JUDGE_KIND, model=client.model, template=TEMPLATE)
        error = Verdict.error(client.judge_label, f"LLM judge failed: {exc.reason}", fingerprint=fingerprint)
        return [error] * subjects
    answer: BatchAnswer = result.data
    fingerprint = judge_fingerprint(judge=JUDGE_KIND, model=client.model, server_model=result.model, template=TEMPLATE)
    # The request's tokens judged every verdict of the item; each verdict carries them, and says how
    # many verdicts share them, so a per-verdict cost is total_tokens / verdicts_in_request.
    usage = {**result.usage.as_dict(), "verdicts_in_request": subjects}
    by_number = _single_entries(answer.criteria, CriterionEntry, "criterion", _criterion_number)
    by_rule_id = _single_entries(answer.rules, RuleEntry, "rule_id", str)
    entries = [by_number.get(str(n)) for n in range(1, len(criteria) + 1)] + [
        by_rule_id.get(rule["id"]) for rule in rules
    ]
    missing = sum(entry is None for entry in entries)
    if missing:
        logger.warning("the batched judge answer has no usable verdict for %d of %d subjects", missing, subjects)
    return [
        None
        if entry is None
        else Verdict.of(
            passed=entry.passed,
            score=entry.score,
            reasoning=entry.reasoning,
            judge=client.judge_label,
            usage=usage,
            fingerprint=fingerprint,
        )
        for entry in entries
    ]
