"""Many agents writing at once: does the server take every request?

    .venv/bin/python bench/concurrent_writers.py [--clients 64] [--calls 10] [--rounds 1]
    .venv/bin/python bench/concurrent_writers.py --server runserver      # the old `make run`, for comparison
    .venv/bin/python bench/concurrent_writers.py --url http://127.0.0.1:8001 --key es_...   # a running server

Without --url it starts the app as `make run` does (gunicorn with evalsite/gunicorn.conf.py, DEBUG=1,
a fresh SQLite var dir, no Celery worker: ingestion does not need one) on 127.0.0.1:--port.
Every client waits at a barrier, then records a trace the way an agent does as it works: start,
one POST per tool call, complete, each on a new connection (like an agent whose HTTP library keeps
no pool) unless --keep-alive. No request is retried. At the end every trace is read back and must
hold exactly its tool calls and be completed.

Prints requests sent, failures (connection errors, 5xx, other unexpected statuses), traces whose
stored data is wrong, throughput and latency percentiles. Exit status 1 if anything was lost.
"""

import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from urllib.parse import urlsplit

import harness
from harness import PYTHON, ROOT, Gunicorn, create_api_key, free_port, migrate, wait_http


class Client:
    def __init__(self, url: str, key: str, keep_alive: bool, timeout: float):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port or 80
        self.headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        if not keep_alive:
            self.headers["Connection"] = "close"
        self.keep_alive, self.timeout = keep_alive, timeout
        self.connection: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, bytes]:
        if self.connection is None:
            self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            self.connection.request(
                method, path, body=json.dumps(body) if body is not None else None, headers=self.headers
            )
            response = self.connection.getresponse()
            return response.status, response.read()
        finally:
            if not self.keep_alive:
                self.connection.close()
                self.connection = None


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: list[float] = []
        self.failures: Counter = Counter()
        self.sent = 0

    def call(self, client: Client, method: str, path: str, body: dict | None, expect: tuple[int, ...]) -> bool:
        started = time.perf_counter()
        try:
            status, _ = client.request(method, path, body)
            outcome = "ok" if status in expect else (f"HTTP {status}" if status < 500 else "5xx")
        except (ConnectionError, http.client.HTTPException, TimeoutError, OSError) as exc:
            outcome = f"connection: {type(exc).__name__}"
            if client.connection is not None:
                client.connection.close()
                client.connection = None
        elapsed = time.perf_counter() - started
        with self.lock:
            self.sent += 1
            self.latencies.append(elapsed)
            if outcome != "ok":
                self.failures[outcome] += 1
        return outcome == "ok"


def agent(index: int, round_: int, args, tally: Tally, barrier: threading.Barrier, sessions: list[str]) -> None:
    client = Client(args.url, args.key, args.keep_alive, args.timeout)
    session = f"cw-{args.tag}-{round_}-{index}"
    sessions.append(session)
    barrier.wait()
    base = "/api/v1/metrics/traces"
    tally.call(
        client,
        "POST",
        base,
        {"session_id": session, "user_query": f"check cluster {index}", "agent_name": "ConcurrentWriters"},
        (200, 201),
    )
    for seq in range(args.calls):
        tally.call(
            client,
            "POST",
            f"{base}/{session}/tool-calls",
            {
                "tool_name": f"tool_{seq % 3}",
                "tool_args": {"seq": seq},
                "tool_result": {"rows": seq},
                "call_id": f"{session}-{seq}",
                "duration_ms": 12.5,
            },
            (200, 201),
        )
    tally.call(client, "POST", f"{base}/{session}/complete", {"final_response": "done", "success": True}, (200,))


def verify(args, sessions: list[str]) -> list[str]:
    """Sessions whose stored trace is not exactly what was sent."""
    client = Client(args.url, args.key, keep_alive=True, timeout=args.timeout)
    wrong = []
    for session in sessions:
        status, body = client.request("GET", f"/api/v1/metrics/trace/{session}")
        data = json.loads(body) if status == 200 else {}
        if status != 200 or data.get("status") != "completed" or len(data.get("tool_calls") or []) != args.calls:
            wrong.append(session)
    return wrong


def percentile(sorted_values: list[float], q: float) -> float:
    return harness.percentile(sorted_values, q) if sorted_values else float("nan")


class Runserver:
    """`manage.py runserver`, the other server this bench compares (Gunicorn is the harness's)."""

    def __init__(self, env: dict, port: int):
        self.env, self.port = env, port
        self.process: subprocess.Popen | None = None

    def start(self) -> "Runserver":
        self.process = subprocess.Popen(
            [PYTHON, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_http(f"http://127.0.0.1:{self.port}/healthz", process=self.process)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=30)


def start_server(args) -> tuple[Gunicorn | Runserver, str]:
    var_dir = tempfile.mkdtemp(prefix="evalsite-bench-writers-")
    env = {**os.environ, "EVALSITE_VAR_DIR": var_dir, "DEBUG": "1"}
    env.pop("DATABASE_URL", None)  # `make run`'s embedded SQLite, whatever this shell points at
    migrate(env)
    key = create_api_key(env, "bench-writers")
    if args.server == "gunicorn":
        server = Gunicorn(env, port=args.port, config="evalsite/gunicorn.conf.py", quiet=True)
    else:
        server = Runserver(env, args.port)
    server.start()
    print(f"started {args.server} (pid {server.process.pid}) on 127.0.0.1:{args.port}, var dir {var_dir}")
    return server, key


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--calls", type=int, default=10, help="tool calls per trace")
    parser.add_argument("--rounds", type=int, default=1, help="times the clients start together")
    parser.add_argument("--keep-alive", action="store_true", help="one connection per client instead of per request")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds a client waits for one answer")
    parser.add_argument("--url", help="a running server; without it one is started")
    parser.add_argument("--key", help="API key for --url")
    parser.add_argument("--server", choices=["gunicorn", "runserver"], default="gunicorn")
    parser.add_argument("--port", type=int, default=None, help="default: a free port")
    args = parser.parse_args()
    args.tag = uuid.uuid4().hex[:8]

    server = None
    if args.url:
        if not args.key:
            parser.error("--url needs --key")
        args.url = args.url.rstrip("/")
    else:
        args.port = args.port or free_port()
        server, args.key = start_server(args)
        args.url = f"http://127.0.0.1:{args.port}"
    try:
        tally, sessions = Tally(), []
        started = time.perf_counter()
        for round_ in range(args.rounds):
            barrier = threading.Barrier(args.clients)
            threads = [
                threading.Thread(target=agent, args=(i, round_, args, tally, barrier, sessions))
                for i in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        elapsed = time.perf_counter() - started
        wrong = verify(args, sessions)
    finally:
        if server is not None:
            server.stop()

    latencies = sorted(tally.latencies)
    lost = sum(tally.failures.values())
    target = args.server if server is not None else args.url
    connections = "keep-alive" if args.keep_alive else "new connection per request"
    print(
        f"server: {target}; {args.clients} clients x {args.rounds} round(s), {args.calls} tool calls per trace, "
        f"{connections}"
    )
    print(
        f"requests sent: {tally.sent}   failures: {lost}   traces wrong after read-back: {len(wrong)}/{len(sessions)}"
    )
    for reason, count in tally.failures.most_common():
        print(f"  {count:5d}  {reason}")
    print(f"throughput: {tally.sent / elapsed:.0f} requests/s over {elapsed:.1f} s")
    print(
        "latency ms: "
        + "  ".join(f"p{int(q * 100)} {percentile(latencies, q) * 1000:.0f}" for q in (0.5, 0.9, 0.95, 0.99))
        + f"  max {latencies[-1] * 1000:.0f}"
    )
    return 1 if lost or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
