import pytest

from apps.bots.demo import DEMO_AGENT_ID
from apps.core.models import Project
from apps.rubrics.demo import DEMO_RUBRIC_ID
from apps.runs import services
from apps.runs.demo import load_demo_evaluation_data
from apps.runs.schemas import RunCreateIn
from apps.testsets.demo import DEMO_TEST_SET_ID
from tests.core.factories import UserFactory


@pytest.fixture(autouse=True)
def _default_project_exists(request):
    """A flushed database (after any transactional test or live server) has lost the `default`
    project that migration core.0004 made, and a session's project is resolved into it
    (apps.core.projects.resolution._session_access, which does not make it again as
    Project.objects.default() does): every console page would be a 500. Made again here until the
    resolution does it itself."""
    names = set(request.fixturenames)
    marker = request.node.get_closest_marker("django_db")
    transactional = bool(marker and marker.kwargs.get("transaction")) or bool(
        names & {"transactional_db", "live_server"}
    )
    if marker or transactional or "db" in names:
        request.getfixturevalue("transactional_db" if transactional else "db")
        Project.objects.default()


@pytest.fixture
def staff_user(db):
    return UserFactory(username="reviewer", is_staff=True)


@pytest.fixture
def reader_user(db):
    return UserFactory(username="reader")


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
    """The demo bot, rubric and test set: the pages show what the real engine makes of them (verdicts,
    component chart, rubric conditions), which stand-in rows would only imitate."""
    load_demo_evaluation_data()


@pytest.fixture
def demo_run(demo, django_capture_on_commit_callbacks):
    """A finished run of the demo test set and rubric against the demo bot (Celery eager; the run is
    enqueued on commit, which the capture stands in for)."""
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_create(
            project=Project.objects.default(),
            data=RunCreateIn(
                agent_id=DEMO_AGENT_ID, test_set_id=DEMO_TEST_SET_ID, rubric_id=DEMO_RUBRIC_ID, concurrency=2
            ),
        )
    run.refresh_from_db()
    return run


@pytest.fixture
def browser():
    """Headless Chromium (tests/console/browser.py), quit after the test."""
    import shutil

    from tests.console.browser import start_browser

    driver, profile = start_browser()
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)
