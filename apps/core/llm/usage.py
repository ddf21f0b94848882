"""Each key's LLM calls and tokens per day (KeyUsageDay), counted where the platform's LLM client
makes a call.

A request gets a meter for its whole duration (UsageMiddleware) that API-key authentication marks
with the key; the LLM client adds every call it makes to the current meter, and the meter is
written once, as one upsert, when the request ends (outside any transaction of the view, and
from the request's own thread, whatever threads made the calls). Code that works for a key outside
a request (a Celery task) opens its own meter with `usage_scope(api_key_id=...)`.

The client also remembers the meter that was current when it was made, for calls made from a
thread pool that does not carry the request's context (contextvars are per thread).
"""

import logging
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import date

from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.core.models import KeyUsageDay

logger = logging.getLogger(__name__)


class UsageMeter:
    def __init__(self, api_key_id: int | None = None):
        self.api_key_id = api_key_id
        self.llm_calls = self.input_tokens = self.output_tokens = 0
        self._lock = threading.Lock()

    def add(self, *, input_tokens: int, output_tokens: int) -> None:
        with self._lock:
            self.llm_calls += 1
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

    def flush(self) -> None:
        """Write what was counted to the key's row of today, then start again from zero."""
        with self._lock:
            calls, tokens_in, tokens_out = self.llm_calls, self.input_tokens, self.output_tokens
            self.llm_calls = self.input_tokens = self.output_tokens = 0
        if self.api_key_id is None or not calls:
            return
        try:
            key_usage_add(
                api_key_id=self.api_key_id,
                day=timezone.now().date(),
                llm_calls=calls,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
            )
        except DatabaseError:
            # Accounting must not turn an answered request into an error.
            logger.warning("LLM usage of key %s not recorded (%d calls)", self.api_key_id, calls, exc_info=True)


_meter: ContextVar[UsageMeter | None] = ContextVar("evalsite_llm_usage_meter", default=None)


def current_meter() -> UsageMeter | None:
    return _meter.get()


def attribute_to_key(api_key_id: int) -> None:
    """Bill the current request's LLM calls to this key (called by the API-key authentication)."""
    meter = _meter.get()
    if meter is not None:
        meter.api_key_id = api_key_id


@contextmanager
def usage_scope(*, api_key_id: int | None = None):
    meter = UsageMeter(api_key_id)
    token = _meter.set(meter)
    try:
        yield meter
    finally:
        _meter.reset(token)
        meter.flush()


def key_usage_add(*, api_key_id: int, day: date, llm_calls: int, input_tokens: int, output_tokens: int) -> None:
    """Add to a key's day. Concurrent writers (web processes, workers) each add their part: the
    UPDATE adds in the database (F), and when the day's row does not exist yet, the INSERT races the
    other writers under a savepoint; the loser's unique violation sends it back to the UPDATE."""
    increments = {
        "llm_calls": F("llm_calls") + llm_calls,
        "input_tokens": F("input_tokens") + input_tokens,
        "output_tokens": F("output_tokens") + output_tokens,
    }
    day_row = KeyUsageDay.objects.filter(api_key_id=api_key_id, day=day)
    if day_row.update(**increments):
        return
    try:
        with transaction.atomic():
            KeyUsageDay.objects.create(
                api_key_id=api_key_id,
                day=day,
                llm_calls=llm_calls,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
            )
    except IntegrityError:
        day_row.update(**increments)
