import pytest

from apps.core.errors import ConflictError
from apps.testsets import services
from apps.testsets.models import TestSetVersion
from apps.testsets.schemas import TestSetContent
from tests.concurrency import THREADS, run_in_threads
from tests.testsets.factories import SuiteFactory, make_test_set_payload


@pytest.mark.postgres_only
# transaction=True: the racing threads each use their own connection, which sees only committed rows.
@pytest.mark.django_db(transaction=True)
def test_concurrent_test_set_publishes(on_postgres):
    test_set = SuiteFactory()
    bot = test_set.bot

    def publish(index):
        content = TestSetContent.model_validate(make_test_set_payload(bot.agent_id, name=f"Edit {index}"))
        expected = 1 if index % 2 else None
        return services.testset_publish_version(test_set=test_set, content=content, expected_version=expected)

    outcomes = run_in_threads(publish)
    published = [o for o in outcomes if isinstance(o, tuple)]
    assert all(isinstance(o, ConflictError) for o in outcomes if not isinstance(o, tuple)), outcomes
    versions = sorted(TestSetVersion.objects.filter(test_set=test_set).values_list("version", flat=True))
    assert versions == list(range(1, len(published) + 2))
    # Every unconditional publish lands; of the edits based on version 1, at most one does.
    assert len(published) >= THREADS // 2
