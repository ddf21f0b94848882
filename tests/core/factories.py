"""Users, projects, memberships and API keys. Keys are made by api_key_create, which alone knows how a key is hashed and
which scopes a user may hold; the raw key is on the row as `raw_key` (it is stored nowhere else)."""

import factory
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from apps.core.models import ALL_SCOPES, ROLE_SCOPES, ApiKey, Membership, Project, ProjectRole
from apps.core.services import api_key_create


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user-{n}")
    is_staff = False
    password = factory.django.Password("pw")


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        django_get_or_create = ("slug",)

    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    project = factory.SubFactory(ProjectFactory)
    user = factory.SubFactory(UserFactory)
    role = ProjectRole.VIEWER


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """A key of a new non-staff user with the scopes of a new key (read, ingest, evaluate) in
    `default`; `scopes=[...]`, `user__is_staff=True`, `user=` or `project=` change that. A key of
    another project needs its user to be a member there (`MembershipFactory`) with a role that
    allows the scopes asked for."""

    class Meta:
        model = ApiKey

    # A user who signs in with the key only, as api_key_create makes one.
    user = factory.SubFactory(UserFactory, password=None)  # make_password(None): unusable
    name = ""
    scopes = None  # api_key_create's defaults: every scope for staff, DEFAULT_KEY_SCOPES otherwise
    project = None  # `default`

    @classmethod
    def _create(cls, model_class, *, user, name, scopes, project):
        api_key, raw_key = api_key_create(
            username=user.username, staff=user.is_staff, name=name, scopes=scopes, project=project
        )
        api_key.raw_key = raw_key
        return api_key


def client_with_key(api_key: ApiKey) -> APIClient:
    """An API client that sends `api_key` (made by ApiKeyFactory) as its bearer token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key.raw_key}")
    client.raw_key = api_key.raw_key
    return client


def project_key_client(project: Project, *, role: str = ProjectRole.ADMIN, scopes=None, username=None) -> APIClient:
    """A client with a key of `project`, made by a new member holding `role` there (admin by
    default, so the key gets whatever `scopes` asks for; every scope its role allows if None)."""
    user = UserFactory(username=username or f"{project.slug}-{role}", password=None)
    MembershipFactory(project=project, user=user, role=role)
    if scopes is None:
        scopes = [s for s in ALL_SCOPES if s in ROLE_SCOPES[role]]
    return client_with_key(ApiKeyFactory(user=user, project=project, scopes=scopes))
