import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Settings are read once, at import: each case imports them in a fresh interpreter.
pytestmark = pytest.mark.subprocess


def load_settings(tmp_path, **env):
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "DATABASE_URL"}
    }
    clean.update({"EVALSITE_VAR_DIR": str(tmp_path), **env})
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import evalsite.settings as s; print(s.SECRET_KEY[:4], s.DEBUG, s.DATABASES['default']['ENGINE'])",
        ],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
    )


def test_secret_key_is_required_when_debug_is_off(tmp_path):
    result = load_settings(tmp_path, DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr
    # A deployment without a key is refused, not given one: nothing was generated behind its back.
    assert not (tmp_path / "secret_key").exists()


def test_production_default_without_key_or_key_file_refuses_to_start(tmp_path):
    result = load_settings(tmp_path)  # DEBUG unset: off
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr
    assert not (tmp_path / "secret_key").exists()


def test_the_checkouts_key_file_is_used_when_secret_key_is_unset(tmp_path):
    # What `make install` and `make run` leave in the var dir: manage.py then works with no variable set.
    (tmp_path / "secret_key").write_text("filekey-from-make-install\n")
    result = load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["file", "False"]


def test_an_empty_key_file_is_no_key(tmp_path):
    (tmp_path / "secret_key").write_text("\n")
    result = load_settings(tmp_path, DEBUG="0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


def test_secret_key_variable_wins_over_the_key_file(tmp_path):
    (tmp_path / "secret_key").write_text("filekey")
    result = load_settings(tmp_path, DEBUG="0", SECRET_KEY="envkey")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "envk"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_install_creates_the_key_file_once_readable_by_its_owner_only(tmp_path):
    var = tmp_path / "var"
    # STAMP= leaves out the virtualenv step (the suite already runs in an installed .venv).
    make = ["make", "-s", "install", "STAMP=", f"EVALSITE_VAR_DIR={var}"]
    first = subprocess.run(make, cwd=ROOT, capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    key_file = var / "secret_key"
    key = key_file.read_text().strip()
    assert len(key) >= 50
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    again = subprocess.run(make, cwd=ROOT, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert key_file.read_text().strip() == key
    # And the settings take it, with DEBUG off and no SECRET_KEY: every manage.py command works.
    result = load_settings(var)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == key[:4]


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


def base_url(tmp_path, **env):
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "DEBUG", "DJANGO_SETTINGS_MODULE", "PORT", "EVALSITE_BASE_URL"}
    }
    clean.update({"EVALSITE_VAR_DIR": str(tmp_path), "SECRET_KEY": "k", **env})
    result = subprocess.run(
        [sys.executable, "-c", "import evalsite.settings as s; print(s.EVALSITE_BASE_URL)"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_base_url_defaults_to_what_make_run_serves(tmp_path):
    # bin/run-local serves 127.0.0.1:$PORT, 8001 by default: evalrun's and JUnit's links must open there.
    assert base_url(tmp_path) == "http://127.0.0.1:8001"
    assert base_url(tmp_path, PORT="8015") == "http://127.0.0.1:8015"
    explicit = base_url(tmp_path, PORT="8015", EVALSITE_BASE_URL="https://evals.example.com/")
    assert explicit == "https://evals.example.com"
