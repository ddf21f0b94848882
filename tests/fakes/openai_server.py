"""A scripted OpenAI-compatible server on a real local socket, so the real `openai` client runs.

Replies are queued: push_json / push_text / push_error / push_delay / push_tool_calls / push(fn).
When the queue is empty the server answers `default` (a JSON object reply, or a function of the
request body giving one, e.g. `judge_reply`). Every request body is
kept in `requests`. `reject_json_schema = True` makes it answer 400 to response_format json_schema,
like servers that only know json_object. `in_flight` / `peak_in_flight` count the chat requests
being answered at once (concurrency bounds).
"""

import hashlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

import pytest

from tests.fakes import BusyHTTPServer


def _usage(prompt=11, completion=7):
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def completion_body(model: str, content: str | None, tool_calls: list[dict] | None = None, usage=None) -> dict:
    message = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
            }
            for i, c in enumerate(tool_calls)
        ]
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": usage or _usage(),
    }


def embedding_for(text: str, dim: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 for b in digest[:dim]]


def _section(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n(.*?)\n</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def judge_reply(passed: bool = True, score: float = 1.0, reasoning: str = "Met.") -> Callable[[dict], dict]:
    """A default reply for the run judge in either mode: a batched request (its <criteria> and
    <rules> sections) gets one entry per numbered criterion and per rule id it names; a per-verdict
    request gets the single verdict."""

    def reply(body: dict) -> dict:
        user = body["messages"][-1]["content"]
        criteria, rules = _section(user, "criteria"), _section(user, "rules")
        verdict = {"passed": passed, "score": score, "reasoning": reasoning}
        if not criteria and not rules:
            return verdict
        return {
            "criteria": [{"criterion": int(n), **verdict} for n in re.findall(r"^(\d+)\. ", criteria, re.M)],
            "rules": [{"rule_id": rule_id, **verdict} for rule_id in re.findall(r"^Rule (\S+):", rules, re.M)],
        }

    return reply


class ScriptedOpenAIServer:
    def __init__(self):
        self.queue: deque = deque()
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self.headers: list[dict] = []
        self.default: dict | str = {"ok": True}
        # Seconds every default reply waits, to stand in for a model's latency (benchmarks).
        self.default_delay = 0.0
        self.reject_json_schema = False
        self.in_flight = 0
        self.peak_in_flight = 0
        self._counting = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            # Keep-alive, as real servers do, so the clients' connection pools are exercised.
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out as separate writes

            def log_message(self, *args):
                pass

            def _send(self, status: int, body, headers: dict | None = None):
                raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.requests.append(body)
                server.paths.append(self.path)
                server.headers.append(dict(self.headers))
                if self.path.endswith("/embeddings"):
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    return self._send(
                        200,
                        {
                            "object": "list",
                            "model": body.get("model", ""),
                            "data": [
                                {"object": "embedding", "index": i, "embedding": embedding_for(t)}
                                for i, t in enumerate(texts)
                            ],
                            "usage": {"prompt_tokens": 3, "total_tokens": 3},
                        },
                    )
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                fmt = (body.get("response_format") or {}).get("type")
                if server.reject_json_schema and fmt == "json_schema":
                    return self._send(
                        400,
                        {
                            "error": {
                                "message": "response_format json_schema is not supported",
                                "type": "invalid_request_error",
                                "param": "response_format",
                            }
                        },
                    )
                with server._counting:
                    step = server.queue.popleft() if server.queue else None
                    server.in_flight += 1
                    server.peak_in_flight = max(server.peak_in_flight, server.in_flight)
                try:
                    if step is None:
                        step = (
                            ("delay", (server.default_delay, server.default))
                            if server.default_delay
                            else ("json", server.default)
                        )
                    status, reply, headers = server._render(step, body)
                finally:
                    with server._counting:
                        server.in_flight -= 1
                self._send(status, reply, headers)

        self.httpd = BusyHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _render(self, step, body) -> tuple[int, dict, dict | None]:
        kind, value = step
        model = body.get("model", "")
        if kind == "json":
            value = value(body) if callable(value) else value
            return 200, completion_body(model, value if isinstance(value, str) else json.dumps(value)), None
        if kind == "text":
            return 200, completion_body(model, value), None
        if kind == "error":
            status, message, headers = value
            return status, {"error": {"message": message, "type": "server_error"}}, headers
        if kind == "delay":
            seconds, reply = value
            time.sleep(seconds)
            reply = reply(body) if callable(reply) else reply
            return 200, completion_body(model, json.dumps(reply)), None
        if kind == "tool_calls":
            calls, content = value
            return 200, completion_body(model, content, tool_calls=calls), None
        if kind == "fn":
            return value(body)
        raise ValueError(kind)

    def push_json(self, obj):
        self.queue.append(("json", obj))

    def push_text(self, text: str):
        self.queue.append(("text", text))

    def push_error(self, status: int, message: str = "error", headers: dict | None = None):
        self.queue.append(("error", (status, message, headers)))

    def push_delay(self, seconds: float, obj):
        self.queue.append(("delay", (seconds, obj)))

    def push_tool_calls(self, calls: list[dict], content: str | None = None):
        self.queue.append(("tool_calls", (calls, content)))

    def push(self, fn: Callable[[dict], tuple[int, dict, dict | None]]):
        self.queue.append(("fn", fn))

    @property
    def chat_requests(self) -> list[dict]:
        return [r for r, p in zip(self.requests, self.paths) if p.endswith("/chat/completions")]

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def openai_server(settings):
    """Point evalsite's LLM client at a scripted local server for the duration of a test."""
    from apps.core.llm import client as llm

    server = ScriptedOpenAIServer().start()
    settings.OPENAI_BASE_URL = server.url
    settings.OPENAI_API_KEY = "test-key"
    settings.EVALSITE_JUDGE_MODEL = "judge-model"
    settings.EVALSITE_LLM_TIMEOUT_SECONDS = 2.0
    settings.EVALSITE_LLM_BACKOFF_SECONDS = 0.01
    llm.reset_clients()
    yield server
    server.stop()
    llm.reset_clients()
