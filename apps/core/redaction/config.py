"""A project's redaction settings: parsed and validated from the JSON stored on the project.

    {"enabled": true, "detectors": ["email", "phone", ...], "custom_patterns": ["ACME-\\d{6}"],
     "phone_regions": ["US", "GB"]}

`phone_regions` is optional (default US, GB): the regions whose national format ("020 7946 0958",
"(415) 555-2671") counts as a phone number; numbers written with +country code match in any region.

Custom patterns come from a project admin, not from an attacker, but an ordinary admin can still
write `(\\w+\\s?)+$`, which takes exponential time on a long line that does not end the way it
expects — and the line is whatever an agent's user typed. Two guards, both in docs/redaction.md:
1. At validation, a pattern with a nested quantifier (a repeated group that itself contains a
   variable repeat, `(a+)+`, `(\\w+\\s?)*`) or a repeated alternation whose branches can start with
   the same character (`(a|aa)+`) is refused: those are the shapes of exponential backtracking, and
   the admin learns it when saving, not when ingestion stalls.
2. Polynomial shapes pass that check (`x+x+x+y` runs for minutes on 3,000 x's, `a.*b.*c.*d` too) and
   bounding the input length does not tame them (with `re`, `\\d+\\d+x` in 4 KiB windows took six
   minutes on 12,000 digits), so
   custom patterns run in the `regex` module, whose matching takes a timeout: CUSTOM_TIMEOUT per
   string. A string whose search times out is replaced whole by <CUSTOM> — it fails closed, since a
   pattern that could not finish cannot say the string is clean.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass

# re's own parser (private, but the only parser of its syntax): the nesting check reads its tree.
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import phonenumbers
import regex  # type: ignore[import-untyped]

from apps.core.errors import InvalidInputError

from .detectors import DEFAULT_PHONE_REGIONS, DETECTOR_NAMES

MAX_CUSTOM_PATTERNS = 20
MAX_CUSTOM_PATTERN_LENGTH = 200
# Per string and pattern. Ordinary patterns take microseconds on a tool result; this only ends the
# pathological ones.
CUSTOM_TIMEOUT = 0.05


@dataclass(frozen=True)
class RedactionConfig:
    enabled: bool = False
    detectors: tuple[str, ...] = ()
    custom_patterns: tuple[str, ...] = ()
    phone_regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS

    @classmethod
    def from_json(cls, data: Any, *, strict: bool = True) -> RedactionConfig:
        """The settings from a project's `redaction` JSON; None or {} is off. InvalidInputError says what is wrong.

        strict=False is for settings already stored (the doors, per request): a custom pattern is then
        only required to compile. Saving settings must be strict, so an admin learns at once that a
        pattern backtracks; a pattern that was stored anyway still runs under the timeout, which keeps
        it from stalling ingestion, rather than every request of the project being refused."""
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise InvalidInputError("redaction must be an object")
        unknown_keys = set(data) - {"enabled", "detectors", "custom_patterns", "phone_regions"}
        if unknown_keys:
            raise InvalidInputError(f"redaction: unknown setting(s) {', '.join(sorted(unknown_keys))}")
        enabled = data.get("enabled", False)
        if not isinstance(enabled, bool):
            raise InvalidInputError("redaction.enabled must be true or false")
        detectors = _string_list(data.get("detectors", []), "detectors")
        unknown = [name for name in detectors if name not in DETECTOR_NAMES]
        if unknown:
            raise InvalidInputError(
                f"redaction.detectors: unknown detector(s) {', '.join(unknown)}; known: {', '.join(DETECTOR_NAMES)}"
            )
        patterns = _string_list(data.get("custom_patterns", []), "custom_patterns")
        if len(patterns) > MAX_CUSTOM_PATTERNS:
            raise InvalidInputError(f"redaction.custom_patterns: at most {MAX_CUSTOM_PATTERNS} patterns")
        for pattern in patterns:
            check_custom_pattern(pattern, strict=strict)
        regions = _string_list(data.get("phone_regions", list(DEFAULT_PHONE_REGIONS)), "phone_regions")
        supported = phonenumbers.SUPPORTED_REGIONS
        bad_regions = [region for region in regions if region not in supported]
        if bad_regions:
            raise InvalidInputError(f"redaction.phone_regions: unknown region(s) {', '.join(bad_regions)}")
        # Order-preserving de-duplication: the same settings written twice share one cached Redactor.
        return cls(
            enabled=enabled,
            detectors=tuple(dict.fromkeys(detectors)),
            custom_patterns=tuple(dict.fromkeys(patterns)),
            phone_regions=tuple(dict.fromkeys(regions)) or DEFAULT_PHONE_REGIONS,
        )

    @property
    def active(self) -> bool:
        return self.enabled and bool(self.detectors or self.custom_patterns)

    def to_json(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "detectors": list(self.detectors),
            "custom_patterns": list(self.custom_patterns),
            "phone_regions": list(self.phone_regions),
        }

    def cache_key(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)


def _string_list(value: Any, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidInputError(f"redaction.{name} must be a list of strings")
    return value


def check_custom_pattern(pattern: str, *, strict: bool = True) -> None:
    """Raises InvalidInputError unless `pattern` is a short, compilable regex without backtracking
    blow-ups (strict=False: only that it compiles in both re and regex)."""
    if not pattern:
        raise InvalidInputError("redaction.custom_patterns: a pattern must not be empty")
    if len(pattern) > MAX_CUSTOM_PATTERN_LENGTH:
        raise InvalidInputError(
            f"redaction.custom_patterns: a pattern is at most {MAX_CUSTOM_PATTERN_LENGTH} characters "
            f"({pattern[:40]!r}…)"
        )
    try:
        compiled = re.compile(pattern)
        parsed = sre_parse.parse(pattern)
        regex.compile(pattern)
    except (re.error, regex.error) as error:
        raise InvalidInputError(f"redaction.custom_patterns: {pattern!r} does not compile: {error}") from error
    if not strict:
        return
    if compiled.match(""):
        # A pattern that matches the empty string would "replace" nothing between every character.
        raise InvalidInputError(f"redaction.custom_patterns: {pattern!r} matches the empty string")
    problem = _backtracking_problem(parsed, inside_repeat=False)
    if problem:
        raise InvalidInputError(
            f"redaction.custom_patterns: {pattern!r} {problem}, which can take exponential time on a long input; "
            "write it without the outer repeat (docs/redaction.md)"
        )


_REPEATS = {sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, getattr(sre_constants, "POSSESSIVE_REPEAT", None)}


def _backtracking_problem(items: Any, *, inside_repeat: bool) -> str | None:
    for op, av in items:
        if op in _REPEATS:
            low, high, body = av
            repeats = high is sre_constants.MAXREPEAT or high > 1
            # A variable count inside a repeat is the ambiguity that backtracks: `(\d+)+`, `(a+){9}`.
            # A fixed count inside one is not (`(?:\d{4} ?)+`, a card's groups), nor is an optional `?`.
            if repeats and low != high and inside_repeat:
                return "nests a quantifier inside another"
            problem = _backtracking_problem(body, inside_repeat=inside_repeat or repeats)
            if problem:
                return problem
            if repeats and _ambiguous_alternation(body):
                return "repeats an alternation whose branches can start with the same character"
        elif op is sre_constants.SUBPATTERN:
            problem = _backtracking_problem(av[-1], inside_repeat=inside_repeat)
            if problem:
                return problem
        elif op is sre_constants.BRANCH:
            for branch in av[1]:
                problem = _backtracking_problem(branch, inside_repeat=inside_repeat)
                if problem:
                    return problem
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            problem = _backtracking_problem(av[1], inside_repeat=inside_repeat)
            if problem:
                return problem
    return None


def _ambiguous_alternation(items: Any) -> bool:
    for op, av in items:
        if op is sre_constants.SUBPATTERN:
            if _ambiguous_alternation(av[-1]):
                return True
        elif op is sre_constants.BRANCH:
            firsts = [_first_chars(branch) for branch in av[1]]
            for i, first in enumerate(firsts):
                for other in firsts[i + 1 :]:
                    if first is None or other is None or first & other:
                        return True
        elif op is sre_constants.IN and any(kind is sre_constants.NEGATE for kind, _ in av):
            continue
    return False


def _first_chars(items: Any) -> set[int] | None:
    """The characters a branch can start with, or None when that is not a small known set (treated as "any")."""
    for op, av in items:
        if op is sre_constants.LITERAL:
            return {av}
        if op is sre_constants.IN:
            chars: set[int] = set()
            for kind, value in av:
                if kind is sre_constants.LITERAL:
                    chars.add(value)
                elif kind is sre_constants.RANGE and value[1] - value[0] < 256:
                    chars.update(range(value[0], value[1] + 1))
                else:
                    return None
            return chars
        if op is sre_constants.SUBPATTERN:
            return _first_chars(av[-1])
        if op in (sre_constants.AT,):
            continue
        return None
    # An empty branch (`a(?:|a)`, which is how `a|aa` is parsed) matches where any other branch could.
    return None
