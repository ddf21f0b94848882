"""Issue 21, low finding: 422 messages showed function reprs with memory addresses. Every operation
that takes a JSON body gets wrong types in each of its fields (and in the body itself); no answer may
hold a Python repr."""

import re

import pytest

from tests.core.test_nul_bodies import _json_body_operations

pytestmark = pytest.mark.django_db
REPR = re.compile(r"0x[0-9a-f]{6,}|<function |<bound method | object at |<class '")
WRONG = [None, 1, 1.5, True, [], {}, [1, "x"], {"a": {"b": []}}, "x" * 3, "2026-13-45T99:99:99"]


@pytest.mark.parametrize(
    "method, path, fields", list(_json_body_operations()), ids=lambda value: value if isinstance(value, str) else ""
)
def test_wrong_types_never_answer_with_a_repr(staff_api, method, path, fields):
    bodies = [[], 5, "text", None, {}] + [{field: value} for field in sorted(fields) for value in WRONG]
    for body in bodies:
        response = getattr(staff_api, method)(path, body, format="json")
        assert response.status_code < 500, (body, response.content[:300])
        text = response.content.decode()
        assert not REPR.search(text), (body, text[:500])
