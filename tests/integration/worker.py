"""Start a real Celery worker process against a given broker and the current test database."""

import itertools
import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

from celery import Celery

ROOT = Path(__file__).resolve().parents[2]
_worker_numbers = itertools.count()


def broker_for_tests(tmp_path: Path) -> tuple[str, dict]:
    """Redis (or any broker) from CELERY_INTEGRATION_BROKER_URL, else the embedded filesystem one."""
    url = os.environ.get("CELERY_INTEGRATION_BROKER_URL", "").strip()
    if url:
        return url, {}
    # The same folders evalsite/settings.py derives from EVALSITE_VAR_DIR, which the worker gets.
    folder = tmp_path / "celery" / "broker"
    folder.mkdir(parents=True)
    (tmp_path / "celery" / "control").mkdir()
    return "filesystem://", {
        "data_folder_in": str(folder),
        "data_folder_out": str(folder),
        "processed_folder": str(tmp_path),
        "store_processed": False,
        "control_folder": str(tmp_path / "celery" / "control"),
    }


def test_database_url() -> str:
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    port = db.get("PORT") or 5432
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    return f"postgres://{db['USER']}{password}@{db['HOST'] or '127.0.0.1'}:{port}/{db['NAME']}"


def sender(broker_url: str, transport_options: dict) -> Celery:
    # A separate app: the test process itself runs tasks eagerly, but these must cross the broker.
    # Not the current app: shared tasks called later in this process must stay on evalsite's app.
    app = Celery("evalsite-test-sender", broker=broker_url, set_as_current=False)
    app.conf.broker_transport_options = transport_options
    return app


@contextmanager
def celery_worker(broker_url: str, var_dir: Path, extra_env: dict | None = None, concurrency: int = 1):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": test_database_url(),
        "CELERY_BROKER_URL": broker_url,
        "CELERY_TASK_ALWAYS_EAGER": "0",
        "EVALSITE_VAR_DIR": str(var_dir),
        **(extra_env or {}),
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "evalsite",
            "worker",
            "--loglevel=INFO",
            "--pool=prefork",
            f"--concurrency={concurrency}",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"test-{os.getpid()}-{next(_worker_numbers)}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # Its own process group, so a test can kill the worker and its children like a lost machine.
        start_new_session=True,
    )
    try:
        yield proc
    finally:
        stop_worker(proc)


def stop_worker(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for(predicate, timeout: float = 60.0, interval: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return False
