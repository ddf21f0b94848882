"""Schemathesis hooks for bin/fuzz-api: NULs in every string field.

Schemathesis may put a NUL (\\u0000) in a generated string (`generation.allow-x00`, on by default)
but seldom does, so a field that lets one through to PostgreSQL (a 500) can go unseen for many runs.
Here about one generated body or query in three gets a NUL inside every string it holds; the choice
is hypothesis's, so it is reproducible from the seed and shrinks like the rest of the case."""

from hypothesis import strategies as st

import schemathesis


def _with_nul(value):
    if isinstance(value, str):
        middle = len(value) // 2
        return value[:middle] + "\x00" + value[middle:]
    if isinstance(value, dict):
        return {key: _with_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_nul(item) for item in value]
    return value


def _sometimes_with_nul(value):
    return st.integers(min_value=0, max_value=2).map(lambda pick: _with_nul(value) if pick == 2 else value)


@schemathesis.hook
def flatmap_body(context, body):
    # Only JSON: a multipart upload's parts are files and form fields, not JSON strings.
    if not isinstance(body, (dict, list, str)):
        return st.just(body)
    return _sometimes_with_nul(body)


@schemathesis.hook
def flatmap_query(context, query):
    return _sometimes_with_nul(query) if query else st.just(query)
