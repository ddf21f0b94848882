import pytest

from apps.core.models import ProjectRole
from tests.core.factories import MembershipFactory, ProjectFactory, UserFactory, project_key_client


@pytest.fixture
def team(db):
    return ProjectFactory(slug="team", name="Team")


@pytest.fixture
def other(db):
    return ProjectFactory(slug="other", name="Other")


@pytest.fixture
def admin_api(team):
    """A key of team's admin alice, holding every scope."""
    return project_key_client(team, role=ProjectRole.ADMIN, username="alice")


@pytest.fixture
def editor_api(team):
    """A key of team's editor eddie: configures and evaluates, is not an admin."""
    return project_key_client(team, role=ProjectRole.EDITOR, username="eddie")


@pytest.fixture
def other_admin_api(other):
    return project_key_client(other, role=ProjectRole.ADMIN, username="olga")


def member(project, username, role):
    user = UserFactory(username=username)
    MembershipFactory(project=project, user=user, role=role)
    return user


def key_actor(client) -> str:
    return f"key:{client.raw_key[:10]}"


@pytest.fixture
def staff_admin_api(team):
    """A key of team's admin sam, who is also staff (rules and queues are staff's to write today)."""
    UserFactory(username="sam", is_staff=True, password=None)
    return project_key_client(team, role=ProjectRole.ADMIN, username="sam")
