"""Quotas: bounds on what one request and one key may make the platform spend (issue 21).

- judge models: a request may only name a model the operator allows (EVALSITE_JUDGE_MODEL, always,
  and EVALSITE_JUDGE_MODELS), since every judge call is billed to the platform's LLM account;
- LLM evaluations per request: EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST;
- LLM-spending requests per key: EVALSITE_LLM_RATE, answered 429 with Retry-After beyond it.

The rate limit counts in fixed windows (60/min: at most 60 in each calendar minute) with an atomic
increment in a cache every process shares (settings.CACHES["quotas"]: Redis, or lock-protected
files on one machine). DRF's own SimpleRateThrottle keeps a list per key that it reads and writes
back, so concurrent requests in different processes overwrite each other's entries and a burst
gets through; a counter that is incremented atomically cannot be overrun that way.
"""

import logging
import math
import time

from django.conf import settings
from django.core.cache import caches
from rest_framework.exceptions import Throttled
from rest_framework.throttling import BaseThrottle

from apps.core.errors import InvalidInputError

logger = logging.getLogger(__name__)

HEURISTIC_JUDGES = frozenset({"heuristic", "heuristic:v1"})
_PERIODS = {"s": (1, "second"), "m": (60, "minute"), "h": (3600, "hour"), "d": (86400, "day")}


def allowed_judge_models() -> list[str]:
    """The LLM models a request may choose as its judge, the configured default first."""
    return list(dict.fromkeys(m for m in (settings.EVALSITE_JUDGE_MODEL, *settings.EVALSITE_JUDGE_MODELS) if m))


def judge_model_check(*, model: str) -> None:
    allowed = allowed_judge_models()
    if model not in allowed:
        raise InvalidInputError(
            f"The judge model {model!r} is not one this platform allows: "
            f"{', '.join(allowed)} (EVALSITE_JUDGE_MODELS), or heuristic."
        )


def llm_evaluations_check(*, count: int) -> None:
    limit = settings.EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST
    if count > limit:
        raise InvalidInputError(
            f"{count} sessions to evaluate with the LLM judge in one request; the limit is {limit} "
            f"(EVALSITE_LLM_MAX_EVALUATIONS_PER_REQUEST). Send them in smaller batches."
        )


def parse_rate(rate: str | None) -> tuple[int, int, str] | None:
    """(requests, period in seconds, period name) of "60/min"; None for "off"."""
    if not rate or rate.strip().lower() == "off":
        return None
    count, period = rate.split("/")
    seconds, name = _PERIODS[period.strip()[0].lower()]
    return int(count), seconds, name


def rate_hit(cache, key: str, window_seconds: float) -> int:
    """Count one hit on `key` and return the count so far in its window. `add` creates the counter
    with the window's lifetime only if it is absent, and `incr` is atomic on both backends."""
    if cache.add(key, 1, timeout=window_seconds):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr: this hit opens the next window
        cache.add(key, 1, timeout=window_seconds)
        return 1


def _requester(request) -> str:
    api_key = getattr(request, "auth", None)
    if getattr(api_key, "pk", None) is not None:
        return f"key:{api_key.pk}"
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user:{user.pk}"
    # REMOTE_ADDR, not X-Forwarded-For, which any client can write.
    return f"addr:{request.META.get('REMOTE_ADDR', '')}"


class LLMRateThrottle(BaseThrottle):
    """A DRF throttle on LLM-spending requests, per API key (per user for a session, per address
    for an anonymous client). Views whose spending depends on the body call `llm_rate_check` once
    the body is validated; a view that always spends can list this class in throttle_classes."""

    def __init__(self):
        self.rate = parse_rate(settings.EVALSITE_LLM_RATE)
        self._wait: int | None = None

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        limit, period, _name = self.rate
        now = time.time()
        window = int(now // period)
        key = f"llm-rate:{_requester(request)}:{period}:{window}"
        try:
            count = rate_hit(caches["quotas"], key, period + 1)
        except Exception:
            # The counters' store is down: spend is still bounded per request, so answer rather
            # than fail every LLM feature while it is away.
            logger.warning("LLM rate limit not applied: its cache is unavailable", exc_info=True)
            return True
        if count <= limit:
            return True
        self._wait = max(1, math.ceil((window + 1) * period - now))
        return False

    def wait(self) -> int | None:
        return self._wait


def llm_rate_check(request, view=None) -> None:
    """Count one LLM-spending request against its key; raise Throttled (429, Retry-After) past the rate."""
    throttle = LLMRateThrottle()
    if not throttle.allow_request(request, view):
        limit, _period, name = throttle.rate
        raise Throttled(
            wait=throttle.wait(),
            detail=(
                f"Too many LLM-spending requests: this key may make {limit} per {name} "
                f"(EVALSITE_LLM_RATE={settings.EVALSITE_LLM_RATE})."
            ),
        )
