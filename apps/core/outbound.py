"""The one way evalsite makes an HTTP request to an address a user configured (bot endpoints now,
webhooks later).

Anyone with an API key can name such an address, so a request to it must not become a way into
the network evalsite runs in (SSRF):

- the host name is resolved once, and every address it resolves to must be public
  (`ip.is_global`, and not multicast; IPv4 embedded in IPv6 is judged by the IPv4 address) unless
  EVALSITE_OUTBOUND_ALLOW names the host or a network holding the address;
- the connection goes to the address that was checked, never to a second resolution of the name
  (no DNS-rebinding window); TLS still verifies the certificate against the host name (SNI);
- redirects are not followed, environment proxies and .netrc are ignored;
- a response is read up to EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES, and not at all when it arrives
  compressed (a small gzip body can expand without bound);
- errors say what happened (refused address, status, content type, size), never the response
  body, because they end up in results a reviewer (or the attacker) reads.

Operator-configured servers (OPENAI_BASE_URL, PROMETHEUS_URL) are trusted and do not go through here.
"""

import ipaddress
import socket
import threading
import time
import typing
from dataclasses import dataclass
from functools import lru_cache

import httpcore
import httpx
from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# IPv6 prefixes that carry an IPv4 address in their last 32 bits and reach it through a translator.
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))


class OutboundError(Exception):
    """A request to a user-configured address failed. `reason` is safe to show: it never holds the
    response body or a credential."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class OutboundRefused(OutboundError):
    """The address is not one evalsite may connect to; no connection was made."""


class OutboundTimeout(OutboundError):
    """No (complete) answer within the timeout."""


class OutboundResponseRefused(OutboundError):
    """The response was too large or compressed; it was not read (further)."""


@dataclass(frozen=True)
class OutboundResponse:
    status_code: int
    content_type: str
    content: bytes

    def describe(self) -> str:
        return describe_response(self.status_code, self.content_type, len(self.content))


def describe_response(status_code: int, content_type: str, size: int | None) -> str:
    """What an error may say about a response: its status, content type and size, not its body."""
    size_text = "size unknown" if size is None else f"{size} bytes"
    return f"HTTP {status_code} ({content_type or 'no content type'}, {size_text})"


@dataclass(frozen=True)
class _AllowList:
    networks: tuple[IPNetwork, ...]
    hosts: frozenset[str]


@lru_cache(maxsize=8)
def _parse_allow(entries: tuple[str, ...]) -> _AllowList:
    networks, hosts = [], set()
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.lower().rstrip("."))
    return _AllowList(tuple(networks), frozenset(hosts))


def _allow_list() -> _AllowList:
    # Read per connection, not at import, so a changed setting (and the tests' overrides) apply.
    return _parse_allow(tuple(settings.EVALSITE_OUTBOUND_ALLOW))


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    if ip.version != 6:
        return None
    if ip.ipv4_mapped:
        return ip.ipv4_mapped
    if ip.sixtofour:
        return ip.sixtofour
    if ip.teredo:
        return ip.teredo[1]
    if any(ip in net for net in _NAT64):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public(ip: IPAddress) -> bool:
    """Loopback, private, link-local (cloud metadata), CGNAT, multicast, reserved, unspecified and
    documentation addresses are not public; nor is an IPv6 form of one of them."""
    embedded = _embedded_ipv4(ip)
    if embedded is not None and not is_public(embedded):
        return False
    return ip.is_global and not ip.is_multicast


def _refusal(host: str, ip: IPAddress | None = None) -> OutboundRefused:
    where = host if ip is None or str(ip) == host else f"{host} ({ip})"
    return OutboundRefused(
        f"address {where} is not allowed: evalsite only connects to public addresses unless "
        f"EVALSITE_OUTBOUND_ALLOW lists it"
    )


def resolve_allowed(host: str, port: int) -> list[IPAddress]:
    """The addresses to connect to for host:port. Raises OutboundRefused when any address the name
    resolves to is not allowed: a name that also points inside is refused as a whole, so an attacker
    cannot win by racing several answers."""
    host = host.strip("[]")
    allow = _allow_list()
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise OutboundError(f"host {host} could not be resolved") from None
    addresses: list[IPAddress] = []
    for *_rest, sockaddr in infos:
        ip = ipaddress.ip_address(sockaddr[0].split("%", 1)[0])
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise OutboundError(f"host {host} could not be resolved")
    if host.lower().rstrip(".") in allow.hosts:
        return addresses
    for ip in addresses:
        if not is_public(ip) and not any(ip.version == net.version and ip in net for net in allow.networks):
            raise _refusal(host, ip)
    return addresses


class GuardedNetworkBackend(httpcore.NetworkBackend):
    """httpcore's socket backend, but every new connection goes only to an address that
    resolve_allowed checked. Pooled keep-alive connections are reused without a new check: they
    already point at a checked address."""

    def __init__(self):
        self._tcp = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable | None = None,
    ) -> httpcore.NetworkStream:
        last_error: Exception | None = None
        for ip in resolve_allowed(host, port):
            try:
                return self._tcp.connect_tcp(
                    str(ip), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        raise last_error  # type: ignore[misc]

    def connect_unix_socket(self, *args, **kwargs):
        raise OutboundRefused("unix sockets are not allowed for outbound requests")

    def sleep(self, seconds: float) -> None:
        self._tcp.sleep(seconds)


class _CappedStream(httpx.SyncByteStream):
    """The response body, cut off with an error once it passes `limit` bytes or `deadline`."""

    def __init__(
        self, stream: httpx.SyncByteStream, *, limit: int, deadline: float | None, status_code: int, content_type: str
    ):
        self._stream = stream
        self._limit = limit
        self._deadline = deadline
        self._status_code = status_code
        self._content_type = content_type

    def __iter__(self) -> typing.Iterator[bytes]:
        received = 0
        for chunk in self._stream:
            received += len(chunk)
            if received > self._limit:
                raise OutboundResponseRefused(
                    f"response too large: {describe_response(self._status_code, self._content_type, None)} "
                    f"passed the {self._limit}-byte limit (EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES)"
                )
            if self._deadline is not None and time.monotonic() > self._deadline:
                raise httpx.ReadTimeout("response body took too long")
            yield chunk

    def close(self) -> None:
        self._stream.close()


class GuardedTransport(httpx.HTTPTransport):
    """An httpx transport over GuardedNetworkBackend that caps every response body."""

    def __init__(self, limits: httpx.Limits = httpx.Limits(max_connections=100, max_keepalive_connections=20)):
        super().__init__(trust_env=False, limits=limits)
        # HTTPTransport has no network_backend option: the pool it built is replaced by the same
        # pool on the guarded backend (same TLS context, limits).
        ssl_context = self._pool._ssl_context
        self._pool.close()
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedNetworkBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.monotonic()
        response = super().handle_request(request)
        limit = int(settings.EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES)
        content_type = response.headers.get("content-type", "")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        declared = response.headers.get("content-length", "")
        if encoding not in ("", "identity"):
            response.close()
            raise OutboundResponseRefused(
                f"compressed response refused ({encoding}): "
                f"{describe_response(response.status_code, content_type, None)}"
            )
        if declared.isdigit() and int(declared) > limit:
            response.close()
            raise OutboundResponseRefused(
                f"response too large: {describe_response(response.status_code, content_type, int(declared))} "
                f"is over the {limit}-byte limit (EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES)"
            )
        # The read timeout bounds each wait for data; a server dripping a byte at a time must not
        # stretch one response past it as a whole.
        read_timeout = (request.extensions.get("timeout") or {}).get("read")
        deadline = started + read_timeout if read_timeout else None
        response.stream = _CappedStream(
            response.stream, limit=limit, deadline=deadline, status_code=response.status_code, content_type=content_type
        )
        return response


_client: httpx.Client | None = None
_client_lock = threading.Lock()


def client() -> httpx.Client:
    """The process-wide guarded client: one connection pool, so keep-alive connections to a bot
    are reused across items and turns. SDKs (the OpenAI client) are handed this client."""
    global _client
    with _client_lock:
        if _client is None:
            _client = httpx.Client(
                transport=GuardedTransport(),
                follow_redirects=False,
                trust_env=False,
                timeout=float(settings.EVALSITE_BOT_TIMEOUT_SECONDS),
                headers={"Accept-Encoding": "identity"},
            )
        return _client


def reset_client() -> None:
    global _client
    with _client_lock:
        if _client is not None:
            _client.close()
        _client = None


def post_json(
    url: str, payload: typing.Any, *, headers: dict[str, str] | None = None, timeout: float
) -> OutboundResponse:
    """POST `payload` as JSON to a user-configured URL and read the (capped) answer.
    Raises OutboundError (refused address or response, timeout, unreachable) with a safe reason."""
    try:
        response = client().post(url, json=payload, headers=headers or {}, timeout=timeout)
    except OutboundError:
        raise
    except httpx.TimeoutException:
        raise OutboundTimeout(f"no answer within {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise OutboundError(f"unreachable ({type(exc).__name__})") from None
    return OutboundResponse(response.status_code, response.headers.get("content-type", ""), response.content)
