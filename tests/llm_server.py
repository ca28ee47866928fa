"""A real OpenAI-compatible HTTP server on 127.0.0.1 that plays scripted replies.

Use the `llm_server` fixture: queue replies with `server.queue(...)`, point an
`LLMSettings(url=server.url, ...)` at it, then assert on `server.requests`.
When the queue is empty the optional `server.responder(body)` answers;
without one the server answers 404 so a test never hangs on a missing reply.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Scripted:
    """One scripted answer: status, headers and body, after `delay` seconds; or a dropped connection."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    close: bool = False


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", [])) if isinstance(self.body, dict) else []

    @property
    def response_format(self) -> dict[str, Any] | None:
        return self.body.get("response_format") if isinstance(self.body, dict) else None


def chat_reply(content: str, *, prompt_tokens: int = 11, completion_tokens: int = 7, usage: bool = True) -> Scripted:
    """A 200 chat.completions reply whose message content is `content`."""
    payload: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
    }
    if usage:
        payload["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return Scripted(body=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})


def json_reply(value: Any, **kw: Any) -> Scripted:
    """A good reply: the content is exactly `value` as JSON."""
    return chat_reply(json.dumps(value), **kw)


def fenced_reply(value: Any) -> Scripted:
    """JSON wrapped in prose and a ```json code fence."""
    return chat_reply(f"Sure! Here is the result:\n\n```json\n{json.dumps(value, indent=2)}\n```\n\nAnything else?")


def prose_reply(value: Any) -> Scripted:
    """JSON embedded in a sentence, no fence."""
    return chat_reply(f"The answer is {json.dumps(value)} as requested.")


def invalid_json_reply() -> Scripted:
    """Content that holds no parseable JSON."""
    return chat_reply('{"items": [ {"label": "event", oops')


def error_reply(status: int, message: str = "scripted error", headers: dict[str, str] | None = None) -> Scripted:
    """An OpenAI-style error body with `status`."""
    body = json.dumps({"error": {"message": message, "type": "test_error"}}).encode()
    return Scripted(status=status, body=body, headers={"Content-Type": "application/json", **(headers or {})})


def rate_limited(retry_after: float | str) -> Scripted:
    """HTTP 429 with a Retry-After header."""
    return error_reply(429, "slow down", {"Retry-After": str(retry_after)})


def schema_rejected() -> Scripted:
    """HTTP 400 as servers send it for an unsupported response_format."""
    return error_reply(400, "response_format json_schema is not supported")


def slow_reply(value: Any, delay: float) -> Scripted:
    """A good reply sent only after `delay` seconds."""
    reply = json_reply(value)
    reply.delay = delay
    return reply


def closed_connection() -> Scripted:
    """Close the socket without sending any response."""
    return Scripted(close=True)


class LLMServer:
    """The server, its scripted queue and what it received."""

    def __init__(self) -> None:
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self.requests: list[Recorded] = []
        self.responder: Callable[[Any], Scripted] | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = int(self._httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def start(self) -> LLMServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def queue(self, *replies: Scripted) -> None:
        """Append replies, played one per request in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def _next(self, body: Any) -> Scripted:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        if self.responder is not None:
            return self.responder(body)
        return error_reply(404, "no scripted reply left")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(Recorded(self.path, headers, body))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                counted = True

                def done() -> None:
                    # the request stops counting as in flight before its reply can reach the client: counted after
                    # the write, a client that sends its next request at once could be seen one over its limit
                    nonlocal counted
                    if counted:
                        counted = False
                        with server._lock:
                            server.in_flight -= 1

                try:
                    reply = server._next(body)
                    if reply.delay:
                        time.sleep(reply.delay)
                    if reply.close:
                        self.close_connection = True
                        return
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(reply.body)))
                    done()
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)
                finally:
                    done()

        return Handler


@contextmanager
def running_server() -> Iterator[LLMServer]:
    """A started scripted server, stopped on exit."""
    server = LLMServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    """A started scripted server, stopped after the test."""
    with running_server() as server:
        yield server
