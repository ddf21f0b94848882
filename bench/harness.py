"""What every script in bench/ shares: a throwaway database, a migrated schema and an API key, a
gunicorn server on a free port, and the timing, percentile, CPU and memory helpers.

    from harness import Database, Gunicorn, add_database_args, percentile, ...

A script run as `python bench/X.py` has bench/ first on sys.path, so `import harness` finds this
module; a script that also needs Django (in-process benchmarks) calls `django_setup(database_url)`.

Databases: PostgreSQL on the server given by --pg (or a whole --database-url), created anew at the
start and dropped at the end unless --keep, so a run never sees another run's rows. Servers: gunicorn
in its own process group, stopped with the whole group (workers included) even when the script fails.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

# httpx and psycopg are imported where used: the in-process benchmarks measure their own process's
# memory, which should hold what they measure, not this module's imports.
if TYPE_CHECKING:
    import psycopg

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
# The local PostgreSQL server the benchmarks assume (CI's, trust auth); BENCH_PG overrides it.
DEFAULT_PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
# Variables of the developer's shell that must not reach a benchmark's server: a real LLM would be
# called and billed, and a DATABASE_URL would point the server at the wrong database.
_NOT_INHERITED = ("DATABASE_URL", "DJANGO_SETTINGS_MODULE", "OPENAI_API_KEY", "OPENAI_BASE_URL")


# Arguments.


def add_database_args(parser: argparse.ArgumentParser, *, db: str) -> None:
    """--pg (server, no database), --db (database name, default `db`), --database-url (both at once)
    and --keep (leave the database for a look afterwards)."""
    parser.add_argument("--pg", default=DEFAULT_PG, help="PostgreSQL server DSN without a database")
    parser.add_argument("--db", "--database", dest="db", default=db, help="throwaway database name (dropped first)")
    parser.add_argument(
        "--database-url", default=None, help="the whole postgres://user@host:port/name URL, instead of --pg and --db"
    )
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")


def database_from_args(args: argparse.Namespace, *, suffix: str = "") -> Database:
    if args.database_url:
        url = urlsplit(args.database_url)
        pg, name = f"{url.scheme}://{url.netloc}", url.path.lstrip("/")
    else:
        pg, name = args.pg, args.db
    return Database(pg, f"{name}{suffix}", keep=args.keep)


# Databases.


class Database:
    """A PostgreSQL database made for one run: `with Database(pg, name) as db:` creates it (dropping
    any leftover of that name first) and drops it on the way out unless `keep`."""

    def __init__(self, pg: str, name: str, *, keep: bool = False):
        if not name.replace("_", "").isalnum():
            # It is spliced into CREATE/DROP DATABASE, which take no parameters.
            raise SystemExit(f"database name {name!r}: letters, digits and _ only")
        self.pg = pg.rstrip("/")
        self.name = name
        self.keep = keep

    @property
    def url(self) -> str:
        return f"{self.pg}/{self.name}"

    def admin(self) -> psycopg.Connection:
        """An autocommit connection to the server's `postgres` database (CREATE/DROP DATABASE)."""
        import psycopg

        return psycopg.connect(f"{self.pg}/postgres", autocommit=True)

    def connect(self, *, autocommit: bool = False) -> psycopg.Connection:
        import psycopg

        return psycopg.connect(self.url, autocommit=autocommit)

    def create(self) -> Database:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def drop(self) -> None:
        with self.admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')

    def __enter__(self) -> Database:
        return self.create()

    def __exit__(self, *exc) -> None:
        if not self.keep:
            self.drop()


def server_env(database_url: str, **extra: str) -> dict[str, str]:
    """The environment of a production-like evalsite process on `database_url`: DEBUG off, plain HTTP on
    loopback, a throwaway secret key, no LLM configured."""
    env = {k: v for k, v in os.environ.items() if k not in _NOT_INHERITED}
    env.update(
        {
            "DATABASE_URL": database_url,
            "DEBUG": "0",
            "SECURE_SSL_REDIRECT": "0",
            "SECRET_KEY": uuid.uuid4().hex,
            "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
        }
    )
    env.update(extra)
    return env


def manage(env: dict[str, str], *args: str, capture: bool = False) -> str:
    """`manage.py <args>` in a child process with `env`; its stdout when `capture`."""
    result = subprocess.run(
        [PYTHON, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=capture, text=True
    )
    return result.stdout.strip() if capture else ""


def agentic_partitions_ensure(env: dict[str, str], upto: int) -> None:
    """The partitions of agentic evaluations and of their Score rows that ids up to `upto` need,
    made before a COPY load as Celery beat makes them ahead of ingestion (apps.scores.partitions)."""
    for table in ("agentic_agentevaluation", "scores_score_agentic"):
        manage(env, "partitions", "--ensure", "--table", table, "--upto", str(upto), capture=True)


def agentic_rollup_rebuild(env: dict[str, str]) -> None:
    """After agentic evaluations were COPYed past the services: their running totals (behind
    /summary, and taken out by retention) rebuilt once, as after any bulk load."""
    manage(
        env,
        "shell",
        "-c",
        "from apps.agentic.services import evaluation_rollup_rebuild; evaluation_rollup_rebuild()",
        capture=True,
    )


def migrate(env: dict[str, str]) -> None:
    manage(env, "migrate", "--noinput", "-v", "0")


def create_api_key(env: dict[str, str], user: str = "bench", *, staff: bool = False) -> str:
    # The key is the last line: with DEBUG on, start-up may print before it.
    return manage(env, "create_api_key", "--user", user, *(["--staff"] if staff else []), capture=True).splitlines()[-1]


def prepare(db: Database, **extra_env: str) -> tuple[dict[str, str], str]:
    """A migrated `db` (already created) and an API key on it: (server env, key)."""
    env = server_env(db.url, **extra_env)
    migrate(env)
    return env, create_api_key(env)


# Every built-in detector (apps.core.redaction.DETECTOR_NAMES): what --redaction turns on.
REDACTION_ALL = {
    "enabled": True,
    "detectors": ["email", "phone", "credit_card", "iban", "ip_address", "secret"],
    "custom_patterns": [],
}


def redaction_enable(db: Database, settings: dict = REDACTION_ALL) -> None:
    """PII redaction on for the `default` project, the bench key's (docs/redaction.md). Before the server
    starts, so no process has the project cached with its old settings."""
    with db.connect(autocommit=True) as conn:
        updated = conn.execute(
            "UPDATE core_project SET redaction = %s WHERE slug = 'default'", (json.dumps(settings),)
        ).rowcount
    if updated != 1:
        raise SystemExit("no default project to turn redaction on for")


def django_setup(env: dict[str, str] | None = None) -> None:
    """Django in this process, with `env` (server_env's: the settings read the database and the secret
    key from the environment, and an API key made by a child with the same env must verify here); for
    benchmarks that call services and views in-process."""
    if env is not None:
        os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "evalsite.settings")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import django

    django.setup()


# Servers.


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_http(url: str, timeout: float = 60.0, process: subprocess.Popen | None = None) -> None:
    """Until `url` answers at all (any status): the server is up. Gives up at once if `process` (the
    server) exits."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode} before answering {url}")
        try:
            httpx.get(url, timeout=2.0)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise SystemExit(f"server at {url} did not come up within {timeout:.0f} s")


class Gunicorn:
    """`with Gunicorn(env, port=...) as server:` serves evalsite.wsgi on 127.0.0.1 until the block ends.

    `config` runs it with a gunicorn config file (evalsite/gunicorn.conf.py: what `make run` serves);
    otherwise `workers` sync workers, or gthread with `threads` > 1. `ready_path` is polled until the
    server answers; `quiet` drops its output. `pid` is the master's, also the process group id
    (cpu_seconds(group_pids(pid)) is the server's CPU)."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        port: int | None = None,
        workers: int = 1,
        threads: int = 1,
        worker_class: str | None = None,
        config: str | None = None,
        timeout: int = 300,
        keep_alive: int | None = None,
        ready_path: str = "/healthz",
        extra: Sequence[str] = (),
        ready_timeout: float = 60.0,
        quiet: bool = False,
    ):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if config:
            command = ["-c", config, "evalsite.wsgi"]
            env = {**env, "PORT": str(self.port), "HOST": "127.0.0.1"}
        else:
            command = ["evalsite.wsgi", "-w", str(workers), "--timeout", str(timeout), "--log-level", "warning"]
            if worker_class or threads > 1:
                command += ["-k", worker_class or "gthread", "--threads", str(threads)]
            if keep_alive is not None:
                command += ["--keep-alive", str(keep_alive)]
        self.command = [PYTHON, "-m", "gunicorn", *command, "-b", f"127.0.0.1:{self.port}", *extra]
        self.env = env
        self.ready_path = ready_path
        self.ready_timeout = ready_timeout
        self.quiet = quiet
        self.process: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> Gunicorn:
        output = subprocess.DEVNULL if self.quiet else None
        self.process = subprocess.Popen(
            self.command, cwd=ROOT, env=self.env, start_new_session=True, stdout=output, stderr=output
        )
        try:
            wait_http(self.url + self.ready_path, timeout=self.ready_timeout, process=self.process)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass

    def __enter__(self) -> Gunicorn:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# Seeding.

AGENTIC_METRICS = ("task_adherence", "tool_call_accuracy", "intent_resolution")
# The columns a bench COPYs into agentic_agentevaluation (its metrics go to scores_score, below).
AGENTIC_EVALUATION_COLUMNS = (
    "session_id",
    "source",
    "agent_name",
    "operation",
    "overall_score",
    "rating",
    "judge",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "fingerprint",
    "has_error",
    "created_at",
    # Last, so each bench's rows stay as they were with the project appended: default_project_id().
    "project_id",
)
# Every NOT NULL column of scores_score (Django's field defaults are not database defaults).
SCORE_COLUMNS = (
    "subject_kind",
    "subject_id",
    "kind",
    "key",
    "position",
    "source",
    "status",
    "reason",
    "value",
    "label",
    "reasoning",
    "judge",
    "severity",
    "scope",
    "created_at",
)


def copy_agentic_scores(cur, *, after_id: int, metrics: Sequence[tuple], reasoning: str = "") -> int:
    """COPYs the three metric Score rows of each agentic evaluation a bench just COPYed, as the
    service stores them. `metrics` holds (task, tool, intent, judge, created_at) per evaluation in the
    order they were COPYed; their ids are the ones above `after_id`, in that order (one COPY into a
    table nobody else writes). Returns the number of Score rows."""
    ids = [pk for (pk,) in cur.execute("SELECT id FROM agentic_agentevaluation WHERE id > %s ORDER BY id", [after_id])]
    if len(ids) != len(metrics):
        raise RuntimeError(f"{len(ids)} evaluations above id {after_id}, {len(metrics)} metric triples")
    with cur.copy(f"COPY scores_score ({', '.join(SCORE_COLUMNS)}) FROM STDIN") as out:
        for pk, (*values, judge, created_at) in zip(ids, metrics, strict=True):
            source = "llm" if judge.startswith("openai:") else "code"
            for position, (name, value) in enumerate(zip(AGENTIC_METRICS, values, strict=True)):
                out.write_row(
                    (
                        "agentic_evaluation",
                        pk,
                        "metric",
                        name,
                        position,
                        source,
                        "ok",
                        "",
                        value,
                        "",
                        reasoning,
                        judge,
                        "",
                        "",
                        created_at,
                    )
                )
    return 3 * len(ids)


def max_id(cur, table: str) -> int:
    return cur.execute(f"SELECT coalesce(max(id), 0) FROM {table}").fetchone()[0]


# Figures.


def percentile(values: Iterable[float], q: float) -> float:
    """The nearest-rank `q` quantile (0 < q <= 1) of `values`, in their unit: the value below which a
    share q of the samples lie. Small samples give their maximum for p95, as they should."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no samples")
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def p50_p95(values: Iterable[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), percentile(ordered, 0.95)


def timed(fn, n: int, *, warmup: int = 0) -> list[float]:
    """Seconds of each of `n` calls of `fn()`, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb(pid: int) -> float:
    """Resident memory of process `pid` now (Linux /proc), 0 when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU of these processes so far (Linux /proc); processes that are gone count 0."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def group_pids(pgid: int) -> list[int]:
    """Every process of process group `pgid` (a Gunicorn's master and its workers)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    pids.append(int(entry.name))
            except OSError:
                pass
    return pids


def backend_pids(db: Database) -> list[int]:
    """PostgreSQL backends serving `db` now, other than this query's own (their CPU is the database's)."""
    with db.connect(autocommit=True) as conn:
        return [
            row[0]
            for row in conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", (db.name,)
            )
        ]


def default_project_id(cur) -> int:
    """The id of project `default`, which the COPYs of rows that belong to a project give them
    (as the migrations gave every row from before projects)."""
    return cur.execute("SELECT id FROM core_project WHERE slug = 'default'").fetchone()[0]
