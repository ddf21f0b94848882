"""Concurrent publishers on PostgreSQL: the row lock serialises them and the unique constraint
backs it up, so versions are consecutive and no edit is silently lost."""

import pytest

from apps.core.errors import ConflictError
from apps.rubrics import services
from apps.rubrics.models import Rubric, RubricVersion
from apps.rubrics.schemas import RubricContent
from tests.concurrency import THREADS, run_in_threads
from tests.rubrics.factories import RubricFactory, rubric_body


@pytest.mark.postgres_only
# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_concurrent_publishes_get_consecutive_versions(on_postgres):
    rubric = RubricFactory()
    bot = rubric.bot

    def publish(index):
        content = RubricContent.model_validate(rubric_body(bot.agent_id, name=f"Edit {index}"))
        return services.rubric_publish_version(rubric=rubric, content=content, changelog=f"edit {index}")

    outcomes = run_in_threads(publish)
    assert all(isinstance(o, tuple) and o[1] for o in outcomes), outcomes
    versions = sorted(RubricVersion.objects.filter(rubric=rubric).values_list("version", flat=True))
    assert versions == list(range(1, THREADS + 2))
    latest = RubricVersion.objects.get(rubric=rubric, version=THREADS + 1)
    assert Rubric.objects.get().name == latest.snapshot["name"]


@pytest.mark.postgres_only
# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_concurrent_edits_of_the_same_version_one_wins(on_postgres):
    rubric = RubricFactory()
    bot = rubric.bot

    def publish(index):
        content = RubricContent.model_validate(rubric_body(bot.agent_id, name=f"Edit {index}"))
        return services.rubric_publish_version(rubric=rubric, content=content, expected_version=1)

    outcomes = run_in_threads(publish)
    winners = [o for o in outcomes if isinstance(o, tuple)]
    assert len(winners) == 1
    assert all(isinstance(o, ConflictError) for o in outcomes if not isinstance(o, tuple))
    assert RubricVersion.objects.filter(rubric=rubric).count() == 2
