"""Users and API keys. Keys are made by api_key_create, which alone knows how a key is hashed and
which scopes a user may hold; the raw key is on the row as `raw_key` (it is stored nowhere else)."""

import factory
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from apps.core.models import ApiKey
from apps.core.services import api_key_create


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user-{n}")
    is_staff = False
    password = factory.django.Password("pw")


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """A key of a new non-staff user with the scopes of a new key (read, ingest, evaluate);
    `scopes=[...]`, `user__is_staff=True` or `user=` change that."""

    class Meta:
        model = ApiKey

    # A user who signs in with the key only, as api_key_create makes one.
    user = factory.SubFactory(UserFactory, password=None)  # make_password(None): unusable
    name = ""
    scopes = None  # api_key_create's defaults: every scope for staff, DEFAULT_KEY_SCOPES otherwise

    @classmethod
    def _create(cls, model_class, *, user, name, scopes):
        api_key, raw_key = api_key_create(username=user.username, staff=user.is_staff, name=name, scopes=scopes)
        api_key.raw_key = raw_key
        return api_key


def client_with_key(api_key: ApiKey) -> APIClient:
    """An API client that sends `api_key` (made by ApiKeyFactory) as its bearer token."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key.raw_key}")
    client.raw_key = api_key.raw_key
    return client
