"""Who may scrape `/metrics`, and request metrics whose label values stay bounded.

`/metrics` shows agent names, request rates and error counts: not for everyone. A scraper gets in
with `Authorization: Bearer <EVALSITE_METRICS_TOKEN>`, or by connecting directly from a network in
EVALSITE_METRICS_ALLOW (which defaults to loopback when no token is set, and to none when one is).
"""

import hmac
import ipaddress
from functools import lru_cache

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpResponse
from django_prometheus.exports import ExportToDjangoView
from django_prometheus.middleware import PrometheusAfterMiddleware
from django_prometheus.utils import Time

# A request through a reverse proxy arrives from the proxy's address, often loopback on the same
# host, so an address check would let the whole internet in. Such requests need the token.
PROXY_HEADERS = ("HTTP_FORWARDED", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP")

LOOPBACK = ("127.0.0.0/8", "::1/128")


@lru_cache(maxsize=8)
def _networks(entries: tuple[str, ...]) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    try:
        return tuple(ipaddress.ip_network(entry, strict=False) for entry in entries)
    except ValueError as exc:
        raise ImproperlyConfigured(f"EVALSITE_METRICS_ALLOW: {exc}") from None


def allowed_networks() -> tuple:
    configured = settings.EVALSITE_METRICS_ALLOW
    if configured is None:
        configured = [] if settings.EVALSITE_METRICS_TOKEN else list(LOOPBACK)
    return _networks(tuple(configured))


def _token_matches(request) -> bool:
    token = settings.EVALSITE_METRICS_TOKEN
    scheme, _, offered = request.headers.get("Authorization", "").partition(" ")
    if not token or scheme.lower() != "bearer":
        return False
    # Constant time, so the token cannot be guessed a character at a time from response times.
    return hmac.compare_digest(offered.strip().encode(), token.encode())


def _direct_from_allowed_network(request) -> bool:
    if any(request.META.get(header) for header in PROXY_HEADERS):
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    if address.version == 6 and address.ipv4_mapped:
        address = address.ipv4_mapped
    return any(address in network for network in allowed_networks())


def scrape_allowed(request) -> bool:
    return _token_matches(request) or _direct_from_allowed_network(request)


def metrics_view(request):
    if not scrape_allowed(request):
        if settings.EVALSITE_METRICS_TOKEN:
            response = HttpResponse(
                "Metrics need Authorization: Bearer <EVALSITE_METRICS_TOKEN>.\n", status=401, content_type="text/plain"
            )
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        return HttpResponse(
            "Metrics are served to the networks in EVALSITE_METRICS_ALLOW (default: loopback) "
            "or with EVALSITE_METRICS_TOKEN.\n",
            status=403,
            content_type="text/plain",
        )
    return ExportToDjangoView(request)


# RFC 9110's methods and PATCH. Anything else a client invents is counted, under one label value.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"})
OTHER_METHOD = "other"


class BoundedPrometheusAfterMiddleware(PrometheusAfterMiddleware):
    """django-prometheus labels its latency histogram with the raw request method, so each made-up
    method (`AUDITX1`, `AUDITX2`, …) would add series until the process runs out of memory. Every
    labelled metric goes through label_metric, so folding there covers them all."""

    def _method(self, request):
        return request.method if request.method in KNOWN_METHODS else OTHER_METHOD

    # The labelled children by (metric, label values). prometheus_client's labels() validates and
    # normalises its arguments and takes a lock on every call; the middleware makes ten such calls
    # per request. The label values are bounded (methods folded above, status codes, view names,
    # charsets), and the cap only guards against a surprise.
    _CHILDREN_MAX = 10_000

    def __init__(self, get_response=None):
        super().__init__(get_response)
        self._children: dict = {}

    def process_request(self, request):
        # django-prometheus' own, reading META where it read request.headers: that property builds
        # a dict of every header on first use, and on an ingestion call nothing else needs it.
        method = self._method(request)
        self.label_metric(self.metrics.requests_by_method, request, method=method).inc()
        self.label_metric(self.metrics.requests_by_transport, request, transport=self._transport(request)).inc()
        if request.META.get("HTTP_X_REQUESTED_WITH") == "XMLHttpRequest":
            self.label_metric(self.metrics.requests_ajax, request).inc()
        try:
            content_length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            content_length = 0
        self.label_metric(self.metrics.requests_body_bytes, request).observe(content_length)
        request.prometheus_after_middleware_event = Time()

    def label_metric(self, metric, request, response=None, **labels):
        if not labels:
            return metric
        if "method" in labels and labels["method"] not in KNOWN_METHODS:
            labels["method"] = OTHER_METHOD
        key = (id(metric), *labels.items())
        child = self._children.get(key)
        if child is None:
            child = metric.labels(**labels)
            if len(self._children) >= self._CHILDREN_MAX:
                self._children.clear()
            self._children[key] = child
        return child
