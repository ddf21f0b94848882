"""The Redactor: placeholders, overlaps, JSON values, counts, settings validation, custom patterns."""

import time
from collections import Counter

import pytest

from apps.core.errors import InvalidInputError
from apps.core.redaction import DETECTOR_NAMES, RedactionConfig, Redactor, redactor_for, redactor_for_settings

ALL = {"enabled": True, "detectors": list(DETECTOR_NAMES)}


def redactor(**settings) -> Redactor:
    found = redactor_for(RedactionConfig.from_json({**ALL, **settings}))
    assert found is not None
    return found


def test_every_detector_replaces_with_its_typed_placeholder_and_counts_it():
    counts: Counter[str] = Counter()
    text = (
        "mail jane.doe@example.com, call +44 20 7946 0958, card 4111 1111 1111 1111, IBAN DE89 3704 0044 0532 0130 00, "
        "from 203.0.113.7, key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789, order ACME-123456"
    )
    out = redactor(custom_patterns=[r"ACME-\d{6}"]).redact_text(text, counts)
    assert out == (
        "mail <EMAIL>, call <PHONE>, card <CREDIT_CARD>, IBAN <IBAN>, from <IP_ADDRESS>, key <SECRET>, order <CUSTOM>"
    )
    assert counts == {"email": 1, "phone": 1, "credit_card": 1, "iban": 1, "ip_address": 1, "secret": 1, "custom": 1}


def test_only_the_chosen_detectors_run():
    only_email = redactor(detectors=["email"])
    assert only_email.redact_text("a@example.com 4111111111111111") == "<EMAIL> 4111111111111111"


def test_an_overlap_is_replaced_whole_by_the_longest_match():
    # The digits look like a US phone number; the address around them is the longer match, and no
    # part of either is left in clear.
    r = redactor()
    assert r.redact_text("write to john.4155552671@example.com") == "write to <EMAIL>"
    # A custom pattern that covers only part of an e-mail address: the union goes, named by the longer.
    r = redactor(custom_patterns=[r"doe@ex"])
    assert r.redact_text("x jane.doe@example.com y") == "x <EMAIL> y"
    # A custom pattern that runs past the address: the union goes, named by the custom (longer) match.
    r = redactor(custom_patterns=[r"example\.com and more"])
    assert r.redact_text("a@example.com and more text") == "<CUSTOM> text"


def test_redact_value_walks_dicts_and_lists_and_leaves_keys_alone():
    counts: Counter[str] = Counter()
    value = {
        "email": "bob@example.org",
        "nested": [{"ip": "10.0.0.1"}, "no pii here", 42, 3.5, None, True],
        "card": 4111111111111111,
        "bob@example.org": "the key stays",
    }
    out = redactor().redact_value(value, counts)
    assert out == {
        "email": "<EMAIL>",
        "nested": [{"ip": "<IP_ADDRESS>"}, "no pii here", 42, 3.5, None, True],
        "card": "<CREDIT_CARD>",
        "bob@example.org": "the key stays",
    }
    assert counts == {"email": 1, "ip_address": 1, "credit_card": 1}
    assert value["email"] == "bob@example.org", "the input is not modified"


def test_off_or_empty_settings_give_no_redactor_and_one_redactor_is_shared_per_settings():
    assert redactor_for(RedactionConfig.from_json(None)) is None
    assert redactor_for(RedactionConfig.from_json({})) is None
    assert redactor_for(RedactionConfig.from_json({"enabled": False, "detectors": ["email"]})) is None
    assert redactor_for(RedactionConfig.from_json({"enabled": True, "detectors": []})) is None
    first = redactor_for(RedactionConfig.from_json({"enabled": True, "detectors": ["email", "phone"]}))
    again = redactor_for(RedactionConfig.from_json({"detectors": ["email", "phone", "email"], "enabled": True}))
    assert first is not None and first is again


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"enabled": "yes"}, "enabled must be true or false"),
        ({"detectors": ["email", "ssn"]}, "unknown detector(s) ssn"),
        ({"detectors": "email"}, "detectors must be a list of strings"),
        ({"custom_patterns": ["("]}, "does not compile"),
        ({"custom_patterns": ["x" * 201]}, "at most 200 characters"),
        ({"custom_patterns": [f"A{i}" for i in range(21)]}, "at most 20 patterns"),
        ({"custom_patterns": ["a*"]}, "matches the empty string"),
        ({"custom_patterns": [r"(\w+\s?)+$"]}, "nests a quantifier"),
        ({"custom_patterns": [r"(a|aa)+b"]}, "repeats an alternation"),
        ({"phone_regions": ["ZZ"]}, "unknown region(s) ZZ"),
        ({"colour": "red"}, "unknown setting(s) colour"),
        ([], "must be an object"),
    ],
)
def test_invalid_settings_are_refused_with_the_reason(settings, message):
    with pytest.raises(InvalidInputError) as raised:
        RedactionConfig.from_json({**ALL, **settings} if isinstance(settings, dict) else settings)
    assert message in str(raised.value.detail)


def test_ordinary_custom_patterns_are_accepted():
    for pattern in [r"ACME-\d{6}", r"(?:\d{4} ?)+", r"(?i)customer-[a-z0-9]+", r"(foo|bar)+", r"EMP\d{5}"]:
        RedactionConfig.from_json({**ALL, "custom_patterns": [pattern]})


def test_a_catastrophic_pattern_is_refused_before_it_can_run():
    # What the refused pattern would cost: (a|aa)+b on 26 a's backtracks ~200k times; the check
    # refuses it without running it, so saving the settings is instant whatever the pattern.
    started = time.perf_counter()
    with pytest.raises(InvalidInputError):
        RedactionConfig.from_json({**ALL, "custom_patterns": [r"(x+x+)+y"]})
    assert time.perf_counter() - started < 0.1


def test_a_slow_custom_pattern_times_out_and_fails_closed():
    # x+x+x+y passes the static check (no nesting) but is polynomial on a long run of x without a y:
    # on 3000 characters it runs for minutes. It stops at the timeout and the whole string is replaced.
    r = redactor(detectors=[], custom_patterns=[r"x+x+x+y", r"SECRET-\d{4}"])
    counts: Counter[str] = Counter()
    started = time.perf_counter()
    out = r.redact_text("x" * 3000 + " SECRET-1234", counts)
    assert time.perf_counter() - started < 1
    assert out == "<CUSTOM>" and counts == {"custom": 1}
    # The same patterns on ordinary text match normally.
    assert r.redact_text("id SECRET-1234 and xxxy") == "id <CUSTOM> and <CUSTOM>"


def test_strings_without_any_candidate_cost_almost_nothing():
    # The pre-checks: prose with no '@', no seven-digit run, no provider prefix reaches no finder.
    r = redactor()
    prose = "List all Kubernetes clusters in Delhi and report their status. " * 16
    started = time.perf_counter()
    for _ in range(200):
        assert r.redact_text(prose) is prose
    assert (time.perf_counter() - started) / 200 < 0.002


def test_stored_settings_with_a_refused_pattern_still_redact_under_the_timeout():
    # Settings saved past the strict check (an older validator, a database edit) must not make every
    # request of the project fail: the doors read them leniently and the timeout bounds the pattern.
    stored = {"enabled": True, "detectors": ["email"], "custom_patterns": [r"(a|aa)+b"]}
    with pytest.raises(InvalidInputError):
        RedactionConfig.from_json(stored)
    r = redactor_for_settings(stored)
    assert r is not None
    started = time.perf_counter()
    out = r.redact_text("a" * 5000 + " x@example.com")
    assert time.perf_counter() - started < 1
    assert "x@example.com" not in out
    assert r.redact_text("aab and y@example.com") == "<CUSTOM> and <EMAIL>"
