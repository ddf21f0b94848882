"""Real Prometheus for integration tests, and a fake Grafana that speaks its datasource proxy.

`PrometheusProcess` runs the real `prometheus` binary (Debian package) on a free port with a temp
config and storage dir. `FakeGrafana` is a real HTTP server answering Grafana's
`/api/datasources/proxy/uid/<uid>/api/v1/...` paths with Bearer-token checking; it forwards to an
upstream Prometheus, or serves canned Prometheus JSON from a callable, so the real client runs.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get_json(url: str, timeout: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return json.loads(response.read())
    except (OSError, ValueError):
        return None


def wait_until(predicate, timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise TimeoutError(f"gave up after {timeout:.0f}s waiting for {what}")


class EvalsiteMetricsServer:
    """evalsite itself (runserver, no migrations: the trace collector then skips its series) so
    Prometheus scrapes the real /metrics."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="evalsite-metrics-")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "evalsite.settings",
            "DEBUG": "1",
            "EVALSITE_VAR_DIR": self.dir,
            "LOG_LEVEL": "ERROR",
        }
        env.pop("DATABASE_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload", "--skip-checks"],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    @property
    def target(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def backfill(data_dir: Path, openmetrics: str) -> None:
    """History written into the TSDB before start-up with promtool (shipped with the binary)."""
    source = data_dir.parent / "backfill.om"
    source.write_text(openmetrics)
    subprocess.run(
        [
            shutil.which("promtool") or "promtool",
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            "-q",
            str(source),
            str(data_dir),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


class PrometheusProcess:
    def __init__(
        self, extra_targets: dict[str, str] | None = None, scrape_interval: str = "1s", history: str | None = None
    ):
        self.binary = shutil.which("prometheus")
        if self.binary is None:
            raise FileNotFoundError("prometheus")
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="evalsite-prometheus-")
        if history:
            backfill(Path(self.dir, "data"), history)
        jobs = {"prometheus": f"127.0.0.1:{self.port}", **(extra_targets or {})}
        scrape_configs = "".join(
            f"  - job_name: {job}\n    static_configs:\n      - targets: ['{target}']\n" for job, target in jobs.items()
        )
        config = Path(self.dir, "prometheus.yml")
        config.write_text(
            f"global:\n  scrape_interval: {scrape_interval}\n  scrape_timeout: {scrape_interval}\n"
            f"scrape_configs:\n{scrape_configs}"
        )
        self.log = open(Path(self.dir, "prometheus.log"), "wb")
        self.process = subprocess.Popen(
            [
                self.binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={Path(self.dir, 'data')}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def api(self, path: str, **params) -> dict | None:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        return _get_json(f"{self.url}{path}{query}")

    def wait_ready(self, timeout: float = 20.0):
        def ready():
            if self.process.poll() is not None:
                raise RuntimeError(f"prometheus exited: {Path(self.dir, 'prometheus.log').read_text()[-2000:]}")
            return self.api("/api/v1/status/buildinfo")

        wait_until(ready, timeout, "prometheus to answer")

    def wait_for_samples(self, promql: str, min_series: int = 1, timeout: float = 30.0):
        def has_samples():
            body = self.api("/api/v1/query", query=promql)
            return body and len(body.get("data", {}).get("result", [])) >= min_series

        wait_until(has_samples, timeout, f"samples for {promql}")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


class _Handler(BaseHTTPRequestHandler):
    server: "FakeGrafana._Server"

    def log_message(self, *args):
        pass

    def _send(self, status: int, body: dict | bytes, content_type: str = "application/json"):
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):
        fake: FakeGrafana = self.server.fake
        fake.requests.append((self.path, dict(self.headers)))
        parsed = urllib.parse.urlsplit(self.path)
        path = parsed.path
        if fake.prefix is not None:
            if self.headers.get("Authorization") != f"Bearer {fake.token}":
                return self._send(401, {"message": "Unauthorized"})
            if not path.startswith(fake.prefix):
                return self._send(404, {"message": "Data source not found"})
            path = path[len(fake.prefix) :]
        if fake.delay:
            time.sleep(fake.delay)
        if fake.upstream:
            url = f"{fake.upstream}{path}" + (f"?{parsed.query}" if parsed.query else "")
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    return self._send(response.status, response.read())
            except urllib.error.HTTPError as exc:
                return self._send(exc.code, exc.read())
            except OSError:
                return self._send(502, {"message": "Bad Gateway"})
        params = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query).items()}
        status, body = fake.canned(path, params)
        return self._send(status, body)


class FakeGrafana:
    """With `uid` and `token`: Grafana's datasource proxy. With neither: a bare Prometheus API."""

    class _Server(ThreadingHTTPServer):
        daemon_threads = True

    def __init__(
        self,
        *,
        uid: str | None = None,
        token: str | None = None,
        upstream: str | None = None,
        canned=None,
        delay: float = 0.0,
    ):
        self.prefix = f"/api/datasources/proxy/uid/{uid}" if uid else None
        self.token = token
        self.upstream = upstream
        self.canned = canned
        self.delay = delay
        self.requests: list[tuple[str, dict]] = []
        self.server = self._Server(("127.0.0.1", 0), _Handler)
        self.server.fake = self
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def canned_prometheus(metrics: dict[str, dict], series: list[dict] | None = None, query_status=(200, None)):
    """A canned Prometheus API: `metrics` maps name -> metadata entry; query_range answers `series`
    (or the given error status and body)."""

    def answer(path: str, params: dict):
        if path == "/api/v1/label/__name__/values":
            return 200, {"status": "success", "data": sorted(metrics)}
        if path == "/api/v1/metadata":
            return 200, {"status": "success", "data": {k: [v] for k, v in metrics.items()}}
        if path == "/api/v1/query_range":
            status, body = query_status
            if body is not None:
                return status, body
            return 200, {"status": "success", "data": {"resultType": "matrix", "result": series or []}}
        return 404, b"404 page not found"

    return answer
