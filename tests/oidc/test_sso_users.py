"""Who a verified login is (services.sso_user_for_claims): found by issuer and subject only, created
on the first login with a username that takes over nobody, kept up to date from the claims."""

import pytest
from django.contrib.auth import get_user_model

from apps.core.auth.oidc.services import sso_user_for_claims
from apps.core.models import SsoIdentity

ISSUER = "https://id.example.com/realms/acme"
User = get_user_model()

pytestmark = pytest.mark.django_db


def login(**claims):
    return sso_user_for_claims(issuer=ISSUER, claims={"sub": "s-1", **claims})


def test_the_second_login_is_the_same_user_with_fresh_claims():
    first = login(preferred_username="dana", email="dana@old.example", given_name="Dana")
    again = login(preferred_username="dana.renamed", email="dana@new.example", given_name="Dana", family_name="Ng")
    assert again.pk == first.pk
    again.refresh_from_db()
    # The username stays (members and audit records name it); e-mail and names follow the provider.
    assert (again.username, again.email, again.last_name) == ("dana", "dana@new.example", "Ng")


def test_a_local_account_with_the_same_name_or_email_is_not_taken_over():
    local = User.objects.create_user("erin", email="erin@example.com", password="local-pass-1", is_staff=True)
    user = login(preferred_username="erin", email="erin@example.com")
    assert user.pk != local.pk and user.username.startswith("erin-") and not user.is_staff
    assert not SsoIdentity.objects.filter(user=local).exists()


def test_the_same_subject_at_another_issuer_is_another_person():
    ours = login(preferred_username="finn")
    theirs = sso_user_for_claims(issuer="https://other.example", claims={"sub": "s-1", "preferred_username": "finn"})
    assert ours.pk != theirs.pk


@pytest.mark.parametrize("preferred", [None, "", "has space", "x" * 151, ["list"]])
def test_without_a_usable_preferred_username_the_name_comes_from_the_subject(preferred):
    user = login(preferred_username=preferred)
    assert user.username.startswith("sso-") and len(user.username) == 16


def test_a_deactivated_user_stays_deactivated():
    user = login(preferred_username="gil")
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert login(preferred_username="gil").is_active is False


def test_claims_of_the_wrong_type_are_not_stored():
    user = login(preferred_username="hana", email=["a@b"], given_name=7)
    assert (user.email, user.first_name) == ("", "")


def test_no_subject_no_user():
    with pytest.raises(ValueError):
        sso_user_for_claims(issuer=ISSUER, claims={"preferred_username": "ivan"})


def test_an_sso_user_has_no_password_to_log_in_with():
    # With password login on, an SSO account still cannot be entered with a password (none was set).
    assert not login(preferred_username="jo").has_usable_password()
