"""A fake bot speaking evalsite's documented HTTP bot contract, on a real local socket."""

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from tests.fakes import BusyHTTPServer

Reply = tuple[int, dict | str]


def knowledge_bot(request: dict) -> Reply:
    """Default behaviour: looks things up, hands off when asked for a person."""
    question = request["messages"][-1]["content"]
    if "human" in question.lower():
        return 200, {
            "reply": "Transferring you now.",
            "handoff": True,
            "tool_calls": [{"name": "live_handoff", "arguments": {}, "result": "ok"}],
        }
    return 200, {
        "reply": f"Here is what I found about: {question}",
        "tool_calls": [{"name": "search_kb", "arguments": {"query": question}, "result": ["doc"]}],
        "trace_id": "run-123",
    }


class FakeBotServer:
    def __init__(self, behaviour: Callable[[dict], Reply] = knowledge_bot, delay: float = 0.0):
        self.behaviour = behaviour
        self.delay = delay
        self.requests: list[dict] = []
        self.auth_headers: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as real servers do, so the clients' connection pools are exercised.
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                server.auth_headers.append(self.headers.get("Authorization"))
                if server.delay:
                    time.sleep(server.delay)
                status, reply = server.behaviour(body)
                raw = reply.encode() if isinstance(reply, str) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = BusyHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/chat"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
