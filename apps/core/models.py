import hashlib
import secrets

from django.conf import settings
from django.db import models

API_KEY_PREFIX = "es_"


def hash_api_key(raw_key: str) -> str:
    # Keys are 256-bit random tokens, so a fast unsalted hash is enough and allows an indexed lookup.
    return hashlib.sha256(raw_key.encode()).hexdigest()


def generate_api_key() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


class ApiKeyQuerySet(models.QuerySet):
    def active(self):
        return self.filter(revoked_at__isnull=True, user__is_active=True)


class ApiKey(models.Model):
    """An API key. Only its hash is stored; the key itself is shown once, when it is created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100, blank=True, default="")
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    # The first characters of the key, so an owner can tell keys apart without the secret.
    prefix = models.CharField(max_length=12, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"

    def __str__(self):
        return f"{self.prefix}… ({self.user})"
