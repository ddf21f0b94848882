"""Encryption at rest for credentials evalsite must send on (bot secrets, later webhook secrets).

Fernet (AES-CBC + HMAC) through MultiFernet: EVALSITE_SECRET_KEY_ENCRYPTION lists the keys, the
first encrypts and all decrypt, so a key is rotated by putting the new one first and re-encrypting
(`manage.py rotate_bot_secrets`). Without that setting the key is derived from SECRET_KEY, and the
entry `SECRET_KEY` in the list stands for that derived key (how a deployment moves to explicit keys).
A database dump alone then gives no usable secret.
"""

import base64
import threading

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from apps.core.errors import ConflictError

DERIVED_KEY_ENTRY = "SECRET_KEY"


class SecretUnreadable(ConflictError):
    """A stored secret that none of the configured keys decrypts (a key was dropped too early)."""


def derived_key(secret_key: str) -> bytes:
    """A Fernet key from Django's SECRET_KEY, for this purpose only (HKDF with its own label, so it
    says nothing about the session-signing key and vice versa)."""
    raw = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"evalsite secrets at rest v1").derive(
        secret_key.encode()
    )
    return base64.urlsafe_b64encode(raw)


def _keys(entries: tuple[str, ...], secret_key: str) -> list[bytes]:
    if not entries:
        return [derived_key(secret_key)]
    keys = []
    for position, entry in enumerate(entries, start=1):
        if entry == DERIVED_KEY_ENTRY:
            keys.append(derived_key(secret_key))
            continue
        try:
            Fernet(entry.encode())
        except ValueError:
            # The entry itself is not repeated: it may be a real key with a typo.
            raise ImproperlyConfigured(
                f"EVALSITE_SECRET_KEY_ENCRYPTION entry {position} is not a Fernet key (32 url-safe base64-encoded "
                f'bytes; generate one with `python -c "from cryptography.fernet import Fernet; '
                f'print(Fernet.generate_key().decode())"`)'
            ) from None
        keys.append(entry.encode())
    return keys


_cache: dict[tuple, MultiFernet] = {}
_lock = threading.Lock()


def _fernet() -> MultiFernet:
    # Looked up per call (cheap, cached by value) so a changed setting takes effect, as in tests.
    config = (tuple(settings.EVALSITE_SECRET_KEY_ENCRYPTION), settings.SECRET_KEY)
    with _lock:
        fernet = _cache.get(config)
        if fernet is None:
            fernet = _cache[config] = MultiFernet([Fernet(k) for k in _keys(*config)])
        return fernet


def encrypt(plaintext: str) -> str:
    """The token to store; "" stays "" (no secret)."""
    if not plaintext:
        return ""
    return _fernet().encrypt(plaintext.encode()).decode()


def decrypt(token: str) -> str:
    if not token:
        return ""
    try:
        return _fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable(
            "a stored secret cannot be decrypted with the configured keys "
            "(EVALSITE_SECRET_KEY_ENCRYPTION / SECRET_KEY changed?); store the secret again "
            "or restore the old key"
        ) from None


def reencrypt(token: str) -> str:
    """The token re-encrypted under the current first key (MultiFernet.rotate)."""
    if not token:
        return ""
    try:
        return _fernet().rotate(token.encode()).decode()
    except InvalidToken:
        raise SecretUnreadable("a stored secret cannot be decrypted with the configured keys") from None
