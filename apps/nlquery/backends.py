"""Metrics backends: the Prometheus HTTP API, directly or through Grafana's datasource proxy.

Both speak the same Prometheus API; the Grafana one only differs in its base URL
(`<GRAFANA_URL>/api/datasources/proxy/uid/<uid>`) and a service-account bearer token. `_get` is the
one function that touches the network, so tests point a backend at local servers and the real
client code runs.
"""

import functools
import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime

import httpx
from django.conf import settings

from .errors import BackendRejected, BackendUnavailable

logger = logging.getLogger(__name__)

METRICS_CACHE_TTL_SECONDS = 300.0


@functools.cache
def _tls_context():
    # Loading the CA bundle costs tens of milliseconds; do it once per process, not per client.
    return httpx.create_ssl_context()


@dataclass(frozen=True)
class MetricInfo:
    type: str  # counter, gauge, histogram, summary, unknown
    unit: str
    help: str


class PrometheusBackend:
    kind = "prometheus"

    def __init__(
        self, base_url: str, *, timeout: float, headers: dict[str, str] | None = None, label: str | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self.label = label or self.base_url
        # One client per backend, reused by every query: keeps connections alive and pooled.
        self._client = httpx.Client(
            base_url=self.base_url,
            headers={"Accept": "application/json", **(headers or {})},
            timeout=httpx.Timeout(timeout, connect=min(timeout, 3.0)),
            follow_redirects=False,
            verify=_tls_context(),
        )
        self._lock = threading.Lock()
        self._names: list[str] | None = None
        self._metadata: dict[str, MetricInfo] = {}
        self._fetched_at = 0.0

    def close(self) -> None:
        self._client.close()

    def _get(self, path: str, params: dict | None = None) -> dict:
        try:
            response = self._client.get(path, params=params)
        except httpx.TimeoutException as exc:
            raise BackendUnavailable(
                f"The metrics backend ({self.kind}) did not answer in time.",
                "Try a shorter time range, or retry when the backend is less busy.",
                {"path": path, "exception": type(exc).__name__},
            ) from exc
        except httpx.HTTPError as exc:
            raise BackendUnavailable(
                f"The metrics backend ({self.kind}) is unreachable.",
                "Check that the backend is running and that its URL is configured correctly.",
                {"path": path, "exception": type(exc).__name__, "error": str(exc)},
            ) from exc
        return self._decode(path, response)

    def _decode(self, path: str, response: httpx.Response) -> dict:
        status = response.status_code
        try:
            body = response.json()
        except ValueError:
            body = None
        error_text = body.get("error") if isinstance(body, dict) else None
        details = {"path": path, "status_code": status}
        if status in (401, 403):
            raise BackendUnavailable(
                f"The metrics backend ({self.kind}) refused our credentials (HTTP {status}).",
                "Check the service-account token (GRAFANA_TOKEN) and its datasource permissions.",
                details,
            )
        if status == 404 and error_text is None:
            raise BackendUnavailable(
                f"The metrics backend ({self.kind}) has no Prometheus API at the configured URL (HTTP 404).",
                "Check PROMETHEUS_URL, or GRAFANA_URL and GRAFANA_DATASOURCE_UID.",
                details,
            )
        if status >= 500:
            raise BackendUnavailable(
                f"The metrics backend ({self.kind}) failed: {error_text or f'HTTP {status}'}.",
                "Retry in a moment; if it persists, check the backend's health.",
                {**details, "error": error_text},
            )
        if status >= 400:
            raise BackendRejected(
                error_text or f"HTTP {status}",
                {**details, "error_type": body.get("errorType") if isinstance(body, dict) else None},
            )
        if not isinstance(body, dict) or body.get("status") != "success":
            raise BackendUnavailable(
                f"The metrics backend ({self.kind}) sent an answer that is not Prometheus API JSON.",
                "Check that the configured URL points at a Prometheus-compatible API.",
                details,
            )
        return body

    def _refresh(self) -> None:
        names = self._get("/api/v1/label/__name__/values")["data"]
        metadata: dict[str, MetricInfo] = {}
        # Metadata only feeds units and counter detection: without it the names still work.
        try:
            raw = self._get("/api/v1/metadata")["data"]
        except BackendRejected:
            raw = {}
        for name, entries in (raw or {}).items():
            if entries:
                first = entries[0]
                metadata[name] = MetricInfo(
                    first.get("type") or "unknown", first.get("unit") or "", first.get("help") or ""
                )
        self._names = sorted(str(n) for n in names)
        self._metadata = metadata
        self._fetched_at = time.monotonic()

    def _ensure_fresh(self) -> None:
        with self._lock:
            if self._names is None or time.monotonic() - self._fetched_at > METRICS_CACHE_TTL_SECONDS:
                self._refresh()

    def get_available_metrics(self) -> list[str]:
        self._ensure_fresh()
        return list(self._names or [])

    def get_metric_info(self, metric_name: str) -> MetricInfo | None:
        self._ensure_fresh()
        return self._metadata.get(metric_name)

    def invalidate_cache(self) -> None:
        with self._lock:
            self._names = None

    def query_range(self, promql: str, start: datetime, end: datetime, step: int) -> list[dict]:
        """The raw matrix: [{"metric": {labels}, "values": [[unix_ts, "value"], ...]}, ...]."""
        body = self._get(
            "/api/v1/query_range",
            {
                "query": promql,
                "start": f"{start.timestamp():.3f}",
                "end": f"{end.timestamp():.3f}",
                "step": str(step),
            },
        )
        data = body.get("data") or {}
        if data.get("resultType") != "matrix":
            raise BackendRejected(f"expected a matrix result, got {data.get('resultType')!r}")
        return data.get("result") or []


class GrafanaProxyBackend(PrometheusBackend):
    kind = "grafana"

    def __init__(self, grafana_url: str, datasource_uid: str, token: str, *, timeout: float):
        root = grafana_url.rstrip("/")
        super().__init__(
            f"{root}/api/datasources/proxy/uid/{datasource_uid}",
            timeout=timeout,
            headers={"Authorization": f"Bearer {token}"},
            label=f"{root} (datasource {datasource_uid})",
        )

    def __repr__(self) -> str:
        # The token lives only in the client's headers; never in a repr that could reach a log.
        return f"<GrafanaProxyBackend {self.label}>"


@dataclass(frozen=True)
class BackendConfig:
    configured: bool
    kind: str | None
    problem: str | None


def _url_problem(name: str, value: str) -> str | None:
    """Why a configured base URL cannot be used, or None. Checked here so a typo in the setting is
    reported as configuration instead of crashing every query; the value itself is not echoed, as
    it may carry credentials."""
    try:
        url = httpx.URL(value)
    except httpx.InvalidURL as exc:
        return f"{name} is not a valid URL ({exc})."
    if url.scheme not in ("http", "https") or not url.host:
        return f"{name} must be an http:// or https:// URL with a host name."
    return None


def backend_config() -> BackendConfig:
    """Which backend the settings select, or why none is usable."""
    if settings.PROMETHEUS_URL:
        problem = _url_problem("PROMETHEUS_URL", settings.PROMETHEUS_URL)
        return BackendConfig(problem is None, "prometheus" if problem is None else None, problem)
    grafana = {
        "GRAFANA_URL": settings.GRAFANA_URL,
        "GRAFANA_DATASOURCE_UID": settings.GRAFANA_DATASOURCE_UID,
        "GRAFANA_TOKEN": settings.GRAFANA_TOKEN,
    }
    present = [name for name, value in grafana.items() if value]
    if len(present) == len(grafana):
        problem = _url_problem("GRAFANA_URL", settings.GRAFANA_URL)
        return BackendConfig(problem is None, "grafana" if problem is None else None, problem)
    if present:
        missing = ", ".join(name for name in grafana if name not in present)
        return BackendConfig(False, None, f"Grafana is partly configured: {missing} missing.")
    return BackendConfig(False, None, None)


_registry_lock = threading.Lock()
_current: tuple[tuple, PrometheusBackend] | None = None


def get_backend() -> PrometheusBackend | None:
    """The configured backend, built once and reused while the settings stay the same."""
    global _current
    config = backend_config()
    if not config.configured:
        return None
    timeout = float(settings.METRICS_BACKEND_TIMEOUT_SECONDS)
    if config.kind == "prometheus":
        key = ("prometheus", settings.PROMETHEUS_URL, timeout)
    else:
        key = ("grafana", settings.GRAFANA_URL, settings.GRAFANA_DATASOURCE_UID, settings.GRAFANA_TOKEN, timeout)
    with _registry_lock:
        if _current is not None and _current[0] == key:
            return _current[1]
        if _current is not None:
            _current[1].close()
        if config.kind == "prometheus":
            backend = PrometheusBackend(settings.PROMETHEUS_URL, timeout=timeout)
        else:
            backend = GrafanaProxyBackend(
                settings.GRAFANA_URL, settings.GRAFANA_DATASOURCE_UID, settings.GRAFANA_TOKEN, timeout=timeout
            )
        _current = (key, backend)
        return backend
