import pytest

from apps.core.validation import MAX_JSON_DEPTH, check_storable_json


def nested(depth):
    value = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


@pytest.mark.parametrize("value", [
    {"a": [1, 2.5, None, True, {"b": "Zürich 集群 🚀"}]},
    "a literal backslash-u sequence: \\u0000 is just text",
    {"path": "C:\\\\u0000dir"},
    nested(MAX_JSON_DEPTH),
])
def test_storable_values_pass_unchanged(value):
    assert check_storable_json(value) is value


@pytest.mark.parametrize("value, message", [
    ("nul\x00byte", "NUL"),
    ({"deep": ["ok", {"x": "bad\x00"}]}, "NUL"),
    ({"key\x00": 1}, "NUL"),
    ("lone \ud800 surrogate", "surrogate"),
    ({"k": ["\udfff"]}, "surrogate"),
    (nested(MAX_JSON_DEPTH + 2), "nested"),
])
def test_unstorable_values_are_refused_with_the_reason(value, message):
    with pytest.raises(ValueError, match=message):
        check_storable_json(value)
