"""A file-based cache whose counters are exact across processes: the quota counters' backend when
no Redis is configured (settings.CACHES["quotas"]).

Django's FileBasedCache implements add() and incr() as a read followed by a write, so two web
processes counting the same key at once both read n and both write n + 1, and a burst spread over
processes gets past a rate limit. Here both run under one exclusive lock file shared by every
process on the machine, which makes them atomic; other operations keep Django's behaviour.
"""

import os
import pickle
import time
import zlib
from contextlib import contextmanager
from typing import TYPE_CHECKING

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks


class LockedFileBasedCache(FileBasedCache):
    if TYPE_CHECKING:
        # Private FileBasedCache members (Django 5.2, pinned) that django-stubs leaves out.
        _dir: str

        def _createdir(self) -> None: ...

        def _key_to_file(self, key: str, version: int | None = None) -> str: ...

    @contextmanager
    def _exclusive(self):
        self._createdir()
        with open(os.path.join(self._dir, ".lock"), "ab") as lock_file:
            locks.lock(lock_file, locks.LOCK_EX)
            try:
                yield
            finally:
                locks.unlock(lock_file)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        with self._exclusive():
            return super().add(key, value, timeout, version)

    def incr(self, key, delta=1, version=None):
        with self._exclusive():
            try:
                with open(self._key_to_file(key, version), "rb") as f:
                    expiry = pickle.load(f)
                    value = pickle.loads(zlib.decompress(f.read()))
            except (FileNotFoundError, EOFError):
                raise ValueError(f"Key {key!r} not found.") from None
            remaining = None if expiry is None else expiry - time.time()
            if remaining is not None and remaining <= 0:
                raise ValueError(f"Key {key!r} not found.")
            # The key keeps its expiry (BaseCache.incr would give it the default timeout again).
            self.set(key, value + delta, timeout=remaining, version=version)
            return value + delta
