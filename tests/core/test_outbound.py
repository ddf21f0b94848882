"""The outbound guard: what a request to a user-configured address may reach, and what comes back."""

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from apps.core import outbound
from apps.core.outbound import OutboundError, OutboundRefused, OutboundResponseRefused, post_json
from tests.fakes.bot_server import FakeBotServer


@pytest.fixture(autouse=True)
def public_only(settings):
    """Every test here starts from the production default: public addresses only."""
    settings.EVALSITE_OUTBOUND_ALLOW = []
    outbound.reset_client()
    yield
    outbound.reset_client()


@pytest.fixture
def no_connections(monkeypatch):
    """Fails the test if anything opens a TCP connection."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise AssertionError(f"a connection was attempted: {args}")

    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.fixture
def fake_dns(monkeypatch):
    """Host names of the .test domain resolve to what the test says, other names as usual."""
    answers: dict[str, list[str]] = {}
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in answers:
            lookups.append(host)
            return [
                (
                    socket.AF_INET6 if ":" in ip else socket.AF_INET,
                    socket.SOCK_STREAM,
                    6,
                    "",
                    (ip, port) if ":" not in ip else (ip, port, 0, 0),
                )
                for ip in answers[host]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    answers["lookups"] = lookups
    return answers


def post(url, **kw):
    return post_json(url, {"messages": [{"role": "user", "content": "hi"}]}, timeout=kw.pop("timeout", 2.0), **kw)


def test_a_loopback_bot_is_refused_and_receives_nothing():
    with FakeBotServer() as internal:
        with pytest.raises(OutboundRefused, match="127.0.0.1 is not allowed"):
            post(internal.url)
    assert internal.requests == []


@pytest.mark.parametrize(
    "url",
    [
        "http://10.1.2.3/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://[::ffff:169.254.169.254]/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
        "http://240.0.0.1/",
        "http://255.255.255.255/",
        "http://[fe80::1]/",
        "http://[fc00::1]/",
        "http://[::]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://[2002:7f00:1::]/",
        "http://2130706433/",
        "http://0x7f.1/",
        "https://127.1/",
    ],
)
def test_internal_addresses_are_refused_without_connecting(url, no_connections):
    with pytest.raises(OutboundRefused, match="is not allowed"):
        post(url)
    assert no_connections == []


def test_a_host_name_resolving_to_loopback_is_refused(fake_dns):
    fake_dns["bot.example.test"] = ["127.0.0.1"]
    with FakeBotServer() as internal:
        port = internal.url.split(":")[2].split("/")[0]
        with pytest.raises(OutboundRefused, match=r"bot.example.test \(127.0.0.1\) is not allowed"):
            post(f"http://bot.example.test:{port}/chat")
    assert internal.requests == []


def test_a_name_with_one_public_and_one_internal_address_is_refused(fake_dns, no_connections):
    # Otherwise an attacker's resolver could hand out both and win whenever the inside one is tried.
    fake_dns["mixed.example.test"] = ["93.184.216.34", "10.0.0.5"]
    with pytest.raises(OutboundRefused, match="10.0.0.5"):
        post("http://mixed.example.test/")


def test_the_connection_goes_to_the_checked_address_not_a_second_lookup(settings, fake_dns):
    # The OS resolver does not know bot.example.test: the request can only arrive if the guard
    # connects to the address it resolved and checked itself (no rebinding window), and the name is
    # looked up once for two requests because the pooled connection is reused.
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.0/8"]
    fake_dns["bot.example.test"] = ["127.0.0.1"]
    with FakeBotServer() as bot:
        port = bot.url.split(":")[2].split("/")[0]
        first = post(f"http://bot.example.test:{port}/chat")
        second = post(f"http://bot.example.test:{port}/chat")
    assert first.status_code == second.status_code == 200 and len(bot.requests) == 2
    assert fake_dns["lookups"] == ["bot.example.test"]


def test_allowed_by_network(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.0/8"]
    with FakeBotServer() as bot:
        response = post(bot.url)
    assert response.status_code == 200 and len(bot.requests) == 1


def test_allowed_by_host_name(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["localhost"]
    with FakeBotServer() as bot:
        response = post(bot.url.replace("127.0.0.1", "localhost"))
    assert response.status_code == 200 and len(bot.requests) == 1


def test_an_allowed_network_does_not_open_the_others(settings, no_connections):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    with pytest.raises(OutboundRefused):
        post("http://169.254.169.254/")


class _Scripted:
    """A local server answering every POST with the given status, headers and body."""

    def __init__(self, status: int, headers: dict, body: bytes):
        self.hits: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.hits.append(self.path)
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if "Connection" not in headers:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_redirect_is_not_followed(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    with (
        _Scripted(200, {"Content-Type": "application/json"}, b"{}") as target,
        _Scripted(302, {"Location": "http://169.254.169.254/"}, b"") as redirector,
    ):
        redirector_hits_target = _Scripted(307, {"Location": f"{target.url}/inside"}, b"")
        with redirector_hits_target:
            response = post(redirector_hits_target.url + "/chat")
        response_two = post(redirector.url)
    assert response.status_code == 307 and response_two.status_code == 302
    assert target.hits == []


def test_an_oversized_response_is_cut_with_a_clear_error(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    settings.EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES = 1000
    body = b'{"reply": "' + b"x" * 5000 + b'"}'
    with _Scripted(200, {"Content-Type": "application/json"}, body) as big:
        with pytest.raises(OutboundResponseRefused) as declared:
            post(big.url)
    assert "too large" in declared.value.reason and "1000-byte limit" in declared.value.reason
    assert "HTTP 200 (application/json" in declared.value.reason and "xxx" not in declared.value.reason


def test_an_oversized_response_without_a_length_is_cut_while_streaming(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    settings.EVALSITE_OUTBOUND_MAX_RESPONSE_BYTES = 1000
    body = b"y" * 200_000
    # No Content-Length: the body runs until the server closes the connection.
    with _Scripted(200, {"Content-Type": "text/plain", "Connection": "close"}, body) as big:
        with pytest.raises(OutboundResponseRefused, match="passed the 1000-byte limit") as streamed:
            post(big.url)
    assert "yyy" not in streamed.value.reason


def test_a_compressed_response_is_refused(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    with _Scripted(200, {"Content-Type": "application/json", "Content-Encoding": "gzip"}, b"\x1f\x8b...") as zipped:
        with pytest.raises(OutboundResponseRefused, match="compressed response refused"):
            post(zipped.url)


def test_describe_never_quotes_the_body(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    with _Scripted(500, {"Content-Type": "text/html"}, b"<h1>db password hunter2</h1>") as internal:
        response = post(internal.url)
    assert response.describe() == "HTTP 500 (text/html, 28 bytes)"


def test_an_unreachable_address_is_an_outbound_error(settings):
    settings.EVALSITE_OUTBOUND_ALLOW = ["127.0.0.1"]
    with pytest.raises(OutboundError, match="unreachable"):
        post("http://127.0.0.1:9/")


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.1", False),
        ("10.0.0.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("::ffff:8.8.8.8", True),
        ("::ffff:192.168.0.1", False),
        ("ff02::1", False),
        ("239.1.1.1", False),
        ("192.0.2.1", False),
        ("198.18.0.1", False),
    ],
)
def test_is_public(address, public):
    import ipaddress

    assert outbound.is_public(ipaddress.ip_address(address)) is public
