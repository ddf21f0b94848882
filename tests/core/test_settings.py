import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Settings are read once, at import: each case imports them in a fresh interpreter.
pytestmark = pytest.mark.subprocess


def load_settings(tmp_path, **env):
    clean = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL"}}
    clean.update({"EVALSITE_VAR_DIR": str(tmp_path), **env})
    return subprocess.run(
        [sys.executable, "-c", "import evalsite.settings as s; print(s.SECRET_KEY[:4], s.DEBUG, s.DATABASES['default']['ENGINE'])"],
        cwd=ROOT, env=clean, capture_output=True, text=True,
    )


def test_secret_key_is_required_when_debug_is_off(tmp_path):
    result = load_settings(tmp_path, DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_local_debug_generates_and_keeps_a_secret_key(tmp_path):
    first = load_settings(tmp_path, DEBUG="1")
    second = load_settings(tmp_path, DEBUG="1")
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "secret_key").exists()
    assert first.stdout == second.stdout
    assert "sqlite3" in first.stdout


def test_explicit_secret_key_and_database_url(tmp_path):
    result = load_settings(tmp_path, DEBUG="0", SECRET_KEY="prod-secret", DATABASE_URL="postgres://u@db:5432/x")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["prod", "False", "django.db.backends.postgresql"]
    assert not (tmp_path / "secret_key").exists()


def test_invalid_boolean_is_refused(tmp_path):
    result = load_settings(tmp_path, DEBUG="maybe")
    assert result.returncode != 0 and "DEBUG must be a boolean" in result.stderr
