"""Deterministic sampling: whether a key falls within a rate decides by its hash, not a coin toss,
so asking again (a retried task, a second worker, a backfill, filling a queue twice) gives the
same answer. Online evaluation rules and review queues both sample this way."""

import hashlib


def sampled(key: str, rate: float) -> bool:
    """True for about `rate` (0..1) of all keys, always the same ones."""
    if rate >= 1:
        return True
    if rate <= 0:
        return False
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:8], "big") < rate * 2**64
