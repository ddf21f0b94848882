import pytest
from django.contrib.auth import get_user_model

from apps.bots.demo import DEMO_AGENT_ID, DEMO_RUBRIC_ID, DEMO_TEST_SET_ID, load_demo_evaluation_data
from apps.runs import services


@pytest.fixture
def staff_user(db):
    return get_user_model().objects.create_user("reviewer", password="pw", is_staff=True)


@pytest.fixture
def reader_user(db):
    return get_user_model().objects.create_user("reader", password="pw", is_staff=False)


@pytest.fixture
def staff_client(client, staff_user):
    client.force_login(staff_user)
    return client


@pytest.fixture
def reader_client(client, reader_user):
    client.force_login(reader_user)
    return client


@pytest.fixture
def demo(db):
    load_demo_evaluation_data()


@pytest.fixture
def demo_run(demo):
    """A finished run of the demo test set and rubric against the demo bot (Celery eager)."""
    run = services.run_create(agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, rubric_id=DEMO_RUBRIC_ID,
                              concurrency=2)
    run.refresh_from_db()
    return run
