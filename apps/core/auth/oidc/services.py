"""The writes of a single-sign-on login: the user, found or created by (issuer, subject) and kept up
to date from the claims, and their SSO-granted project memberships."""

import base64
import hashlib
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.models import SsoIdentity

_USERNAME = re.compile(r"^[\w.@+-]{1,150}$")


def _subject_tag(issuer: str, subject: str) -> str:
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).digest()
    return base64.b32encode(digest).decode().lower()[:12]


def _new_username(*, issuer: str, claims: dict) -> str:
    """preferred_username when it is a valid username nobody has; with the subject's tag appended when
    someone has it (a local account of that name is not taken over: linking it is an admin's call);
    sso-<tag> when the provider sends no usable name."""
    User = get_user_model()
    tag = _subject_tag(issuer, claims["sub"])
    preferred = claims.get("preferred_username")
    if isinstance(preferred, str) and _USERNAME.match(preferred):
        if not User.objects.filter(username__iexact=preferred).exists():
            return preferred
        return f"{preferred[:130]}-{tag}"
    return f"sso-{tag}"


def _text_claim(claims: dict, name: str, limit: int) -> str:
    value = claims.get(name)
    return value[:limit] if isinstance(value, str) else ""


@transaction.atomic
def sso_user_for_claims(*, issuer: str, claims: dict):
    """The user for a verified login's claims: created on the first login, their e-mail and name
    updated on every one, and their project roles synced from the groups claim (sync_sso_memberships).
    An inactive user is returned as such; the login refuses them."""
    User = get_user_model()
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise ValueError("the claims carry no subject")
    groups = claims.get(settings.EVALSITE_OIDC_GROUPS_CLAIM)
    identity = (
        SsoIdentity.objects.select_related("user").select_for_update().filter(issuer=issuer, subject=subject).first()
    )
    if identity is None:
        try:
            with transaction.atomic():
                user = User.objects.create_user(_new_username(issuer=issuer, claims=claims))
                identity = SsoIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        except IntegrityError:
            # Two first logins of one person at once: the other one created the identity.
            identity = SsoIdentity.objects.select_related("user").get(issuer=issuer, subject=subject)
    user = identity.user
    user.email = _text_claim(claims, "email", 254)
    user.first_name = _text_claim(claims, "given_name", 150)
    user.last_name = _text_claim(claims, "family_name", 150)
    user.save(update_fields=["email", "first_name", "last_name"])
    identity.last_login_at = timezone.now()
    identity.last_groups = groups if isinstance(groups, list) else ([groups] if isinstance(groups, str) else [])
    identity.save(update_fields=["last_login_at", "last_groups"])
    sync_sso_memberships(user=user, groups=groups)
    return user


def sync_sso_memberships(*, user, groups) -> None:
    """Placeholder until the projects foundation lands: memberships are synced here."""
