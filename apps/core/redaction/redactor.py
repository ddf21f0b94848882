"""The compiled Redactor: finds every detector's spans in a string and replaces them with placeholders."""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import orjson
import regex  # type: ignore[import-untyped]

from .config import CUSTOM_TIMEOUT, RedactionConfig
from .detectors import Detector, Span, builtin_detectors

CUSTOM = "custom"
CUSTOM_PLACEHOLDER = "<CUSTOM>"
CUSTOM_SPECIFICITY = 20
# JSON numbers of this many digits or more may be a card or phone number sent as a number.
_MIN_SENSITIVE_INT = 10**6


def _custom_finder(patterns: tuple[regex.Pattern[str], ...]):
    def find(text: str) -> Iterator[Span]:
        for pattern in patterns:
            try:
                spans = [match.span() for match in pattern.finditer(text, timeout=CUSTOM_TIMEOUT)]
            except TimeoutError:
                # Fails closed (config.py says why): the whole string is the match.
                yield (0, len(text))
                return
            yield from spans

    return find


class Redactor:
    """Redacts strings and JSON-like values with one project's settings. Stateless and thread-safe: build
    it once per settings (redactor_for) and share it."""

    def __init__(self, config: RedactionConfig):
        self.config = config
        available = builtin_detectors(config.phone_regions)
        self.detectors: tuple[Detector, ...] = tuple(available[name] for name in config.detectors)
        if config.custom_patterns:
            compiled = tuple(regex.compile(pattern) for pattern in config.custom_patterns)
            custom = Detector(CUSTOM, CUSTOM_PLACEHOLDER, CUSTOM_SPECIFICITY, None, _custom_finder(compiled))
            self.detectors += (custom,)
        # Detectors that yield (phone numbers) run last and are told what the others found.
        self._ordered = tuple(sorted(self.detectors, key=lambda detector: detector.yields))
        # The distinct triggers (phone numbers, cards and IBANs share one): a string that passes none
        # has nothing to redact. A custom pattern can match anything, so with one every string is read.
        triggers = [detector.trigger for detector in self.detectors]
        self._triggers: tuple[Callable[[str], bool], ...] | None = (
            tuple(t for t in dict.fromkeys(triggers) if t is not None) if None not in triggers else None
        )

    def _triggered(self, text: str) -> bool:
        return self._triggers is None or any(trigger(text) for trigger in self._triggers)

    def may_redact(self, value: Any) -> bool:
        """False when nothing in the JSON-like `value` can be redacted: one trigger test over its JSON
        text, every string (and every integer's digits) inside appearing there as written. A caller
        with many values (a trace's fields and all its tool calls) asks once for all of them and
        skips the walk; True when unsure (custom patterns, a value that is not JSON)."""
        if self._triggers is None:
            return True
        try:
            text = orjson.dumps(value).decode()
        except (orjson.JSONEncodeError, TypeError):
            return True
        return self._triggered(text)

    def spans(self, text: str) -> list[tuple[int, int, Detector]]:
        """The replaced spans, in order and disjoint, each with the detector whose placeholder replaces it.

        Overlaps are resolved deterministically. Spans that overlap form one group; the whole group's
        extent is replaced (a partial overlap never leaves the tail of either match in clear text), and
        its placeholder is the longest span's, ties going to the more specific detector (a checksum or
        a provider prefix over a shape phone numbers also have), then to the earlier start. Longest
        first because the longer match explains the shorter: the digits of an IBAN are also a phone
        number's shape, the "5551234567" inside "john.5551234567@example.com" is part of the address.
        """
        if not self._triggered(text):
            return []
        found: list[tuple[int, int, Detector]] = []
        for detector in self._ordered:
            if detector.trigger is None or detector.trigger(text):
                spans = detector.find(text, [(s, e) for s, e, _d in found]) if detector.yields else detector.find(text)
                found.extend((start, end, detector) for start, end in spans if end > start)
        if not found:
            return []
        found.sort(key=lambda item: (item[0], -item[1]))
        merged: list[tuple[int, int, Detector]] = []
        group_start, group_end, best = found[0]
        best_rank = _rank(found[0])
        for item in found[1:]:
            start, end, detector = item
            if start < group_end:
                rank = _rank(item)
                if rank > best_rank:
                    best, best_rank = detector, rank
                group_end = max(group_end, end)
                continue
            merged.append((group_start, group_end, best))
            group_start, group_end, best = item
            best_rank = _rank(item)
        merged.append((group_start, group_end, best))
        return merged

    def redact_text(self, text: str, counts: Counter[str] | None = None) -> str:
        """`text` with every detected span replaced by its placeholder; adds one per replacement to `counts`."""
        spans = self.spans(text)
        if not spans:
            return text
        parts: list[str] = []
        position = 0
        for start, end, detector in spans:
            parts.append(text[position:start])
            parts.append(detector.placeholder)
            position = end
            if counts is not None:
                counts[detector.name] += 1
        parts.append(text[position:])
        return "".join(parts)

    def redact_value(self, value: Any, counts: Counter[str] | None = None) -> Any:
        """A copy of a JSON-like value with every string redacted; unchanged parts are returned as they are.

        Dict keys are left alone: they are the schema of a tool's arguments or a span's attributes
        ("email", "http.client_ip"), which the evaluators compare against expected tool calls and the
        console groups by; the data is in the values. A map keyed by personal data (`{"alice@x.com": …}`)
        keeps its keys — a known limit, in docs/redaction.md. Large integers are checked as their digits
        (a card number sent as a JSON number) and become the placeholder string when they match.
        """
        if isinstance(value, str):
            return self.redact_text(value, counts) if value else value
        if isinstance(value, dict | list) and not self.may_redact(value):
            # Tool arguments and results are mostly ids, names and statuses: one test, no walk.
            return value
        if isinstance(value, dict):
            return {key: self.redact_value(item, counts) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.redact_value(item, counts) for item in value]
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _MIN_SENSITIVE_INT:
            digits = str(value)
            redacted = self.redact_text(digits, counts)
            return value if redacted == digits else redacted
        return value


def _rank(item: tuple[int, int, Detector]) -> tuple[int, int, int]:
    start, end, detector = item
    return (end - start, detector.specificity, -start)


@functools.lru_cache(maxsize=256)
def _redactor_for_key(key: str, config: RedactionConfig) -> Redactor:
    return Redactor(config)


def redactor_for_settings(settings: Any) -> Redactor | None:
    """The Redactor of a project's stored `redaction` JSON, or None when it is off: what every door
    calls per request. Off is answered without parsing; on, the settings are validated once per distinct
    JSON. Stored settings are read leniently (RedactionConfig.from_json's strict=False): the projects
    service validated them when they were saved."""
    if not isinstance(settings, dict) or not settings.get("enabled"):
        return None
    return _redactor_for_settings(json.dumps(settings, sort_keys=True))


@functools.lru_cache(maxsize=256)
def _redactor_for_settings(canonical: str) -> Redactor | None:
    return redactor_for(RedactionConfig.from_json(json.loads(canonical), strict=False))


def redactor_for(config: RedactionConfig) -> Redactor | None:
    """The shared Redactor of these settings, or None when they redact nothing (off, or no detectors)."""
    if not config.active:
        return None
    return _redactor_for_key(config.cache_key(), config)
