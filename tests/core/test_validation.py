import pytest

from apps.core.api.validation import MAX_JSON_DEPTH, check_storable_json


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"a": [1, 2.5, None, True, {"b": "Zürich 集群 🚀"}]},
        "a literal backslash-u sequence: \\u0000 is just text",
        {"path": "C:\\\\u0000dir"},
        nested(MAX_JSON_DEPTH),
    ],
)
def test_storable_values_pass_unchanged(value):
    assert check_storable_json(value) is value


@pytest.mark.parametrize(
    "value, message",
    [
        ("nul\x00byte", "NUL"),
        ({"deep": ["ok", {"x": "bad\x00"}]}, "NUL"),
        ({"key\x00": 1}, "NUL"),
        ("lone \ud800 surrogate", "surrogate"),
        ({"k": ["\udfff"]}, "surrogate"),
        (nested(MAX_JSON_DEPTH + 2), "nested"),
    ],
)
def test_unstorable_values_are_refused_with_the_reason(value, message):
    with pytest.raises(ValueError, match=message):
        check_storable_json(value)


@pytest.mark.parametrize("value", [{"n": 2**63}, [1, {"x": 1e20}], -(2**63) - 1, {"f": -1.5e300}])
def test_numbers_past_64_bits_are_refused(value):
    # jsonb would store them exactly and hand back ints that no 64-bit encoder can write.
    with pytest.raises(ValueError, match="64-bit"):
        check_storable_json(value, "metadata")


@pytest.mark.parametrize("value", [{"n": 2**63 - 1}, {"n": -(2**63)}, {"s": "1e20 and 12345678901234567890"}, 1e-300])
def test_numbers_within_64_bits_and_number_like_text_pass(value):
    assert check_storable_json(value) is value
