"""Values a row may already hold from before the storage checks (or from a door that skipped them):
integers beyond 64 bits (jsonb keeps 1e20 as 100000000000000000000, read back as a Python int) and
deep nesting. The stored-JSON reader tests of every app store these and read them back."""

BIG = 10**20


def nested(depth: int) -> dict:
    """Objects and arrays in turn, `depth` levels in all, an object outermost (tool_args are one)."""
    value: object = {"leaf": "x"}
    for i in range(depth - 1):
        value = {"k": value} if i % 2 else [value]
    return value if isinstance(value, dict) else {"k": value}


# 300 levels: past orjson's limit of 255, what an OTLP export could store before the checks.
STORED = {"big int": {"n": BIG, "neg": -BIG, "list": [BIG, 1]}, "100 deep": nested(100), "300 deep": nested(300)}
