"""Concurrent publishers on PostgreSQL: the row lock serialises them and the unique constraint
backs it up, so versions are consecutive and no edit is silently lost."""

import threading

import pytest
from django.db import connection

from apps.core.errors import ConflictError
from apps.rubrics import services
from apps.rubrics.models import Rubric, RubricVersion
from apps.rubrics.schemas import RubricContent
from tests.bots.factories import BotFactory, rubric_body

THREADS = 8


def _run_in_threads(target):
    barrier = threading.Barrier(THREADS)
    outcomes = [None] * THREADS

    def worker(index):
        try:
            barrier.wait()
            outcomes[index] = target(index)
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test checks
            outcomes[index] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_get_consecutive_versions(on_postgres):
    bot = BotFactory()
    rubric = services.rubric_create(content=RubricContent.model_validate(rubric_body(bot.agent_id)))

    def publish(index):
        content = RubricContent.model_validate(rubric_body(bot.agent_id, name=f"Edit {index}"))
        return services.rubric_publish_version(rubric=rubric, content=content, changelog=f"edit {index}")

    outcomes = _run_in_threads(publish)
    assert all(isinstance(o, tuple) and o[1] for o in outcomes), outcomes
    versions = sorted(RubricVersion.objects.filter(rubric=rubric).values_list("version", flat=True))
    assert versions == list(range(1, THREADS + 2))
    latest = RubricVersion.objects.get(rubric=rubric, version=THREADS + 1)
    assert Rubric.objects.get().name == latest.snapshot["name"]


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_concurrent_edits_of_the_same_version_one_wins(on_postgres):
    bot = BotFactory()
    rubric = services.rubric_create(content=RubricContent.model_validate(rubric_body(bot.agent_id)))

    def publish(index):
        content = RubricContent.model_validate(rubric_body(bot.agent_id, name=f"Edit {index}"))
        return services.rubric_publish_version(rubric=rubric, content=content, expected_version=1)

    outcomes = _run_in_threads(publish)
    winners = [o for o in outcomes if isinstance(o, tuple)]
    assert len(winners) == 1
    assert all(isinstance(o, ConflictError) for o in outcomes if not isinstance(o, tuple))
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2
