"""The writes of a single-sign-on login: the user, found or created by (issuer, subject) and kept up
to date from the claims, and their SSO-granted project memberships."""

import base64
import hashlib
import logging
import re

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.models import Membership, Project, SsoIdentity, SsoMembershipGrant
from apps.core.projects.services import membership_remove, membership_set

from .config import roles_from_groups

logger = logging.getLogger(__name__)
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
    """Make the user's SSO-granted memberships what the groups claim and the role map say now: for
    each mapped project the highest role of the user's groups (created, or changed); an SSO-granted
    membership whose groups the claim no longer holds is removed. A membership added by hand (no
    SsoMembershipGrant), or whose role was changed by hand since SSO granted it, is never touched:
    the hand grant wins over the map. Projects the map names that do not exist are skipped (logged)."""
    wanted = roles_from_groups(settings.EVALSITE_OIDC_ROLE_MAP, groups)
    projects = {project.slug: project for project in Project.objects.filter(slug__in=wanted)}
    for slug in sorted(set(wanted) - set(projects)):
        logger.warning("EVALSITE_OIDC_ROLE_MAP names project %r, which does not exist", slug)
    held = {
        membership.project.slug: membership
        for membership in Membership.objects.filter(user=user).select_related("project", "sso_grant")
    }
    # Through the projects' membership services: one write path for members, whatever changes them.
    for slug, membership in held.items():
        grant = getattr(membership, "sso_grant", None)
        if grant is None:
            continue
        if grant.role != membership.role:
            # Someone changed the role by hand: from now on it is theirs, not the map's.
            grant.delete()
            continue
        if slug not in projects:
            membership_remove(project=membership.project, username=user.username)
        elif membership.role != wanted[slug]:
            membership_set(project=membership.project, username=user.username, role=wanted[slug])
            grant.role = wanted[slug]
            grant.save(update_fields=["role", "granted_at"])
    for slug, project in projects.items():
        if slug not in held:
            membership, _ = membership_set(project=project, username=user.username, role=wanted[slug])
            SsoMembershipGrant.objects.create(membership=membership, role=wanted[slug])


def has_project_access(user) -> bool:
    """Whether a single-sign-on user may log in: a superuser, or a member of at least one project.
    Someone whose groups map to no project and whom nobody added by hand is refused: logged in, they
    would count as a user from before projects (apps.core.projects.access, read access to `default`)."""
    return user.is_superuser or Membership.objects.filter(user=user).exists()
