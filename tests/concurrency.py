"""Run one function from several threads released at the same moment, each with its own database
connection: how the PostgreSQL concurrency tests race publishers and writers."""

import threading

from django.db import connection

THREADS = 8


def run_in_threads(target, threads: int = THREADS) -> list:
    """target(index) in `threads` threads started together; returns what each returned or raised."""
    barrier = threading.Barrier(threads)
    outcomes = [None] * threads

    def worker(index):
        try:
            barrier.wait()
            outcomes[index] = target(index)
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcomes[index] = exc
        finally:
            connection.close()

    started = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return outcomes
