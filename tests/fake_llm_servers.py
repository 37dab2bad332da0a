"""Local fake LLM HTTP servers, so the real SDK clients are tested end to end without network.

Each server answers from a scripted queue (status, JSON body, optional delay) and records every
request, so a test can assert what was sent and how many calls were made.
"""
from __future__ import annotations

import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """One canned reply; `body` is sent as JSON unless it is already a string."""

    status: int = 200
    body: Any = None
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"  # a proxy's HTML error page comes as text/html with a 200
    trickle_s: float = 0.0  # > 0: the body goes out one byte per this many seconds, so no read ever times out


@dataclass(frozen=True)
class RecordedRequest:
    """What a client sent; header names are lower-cased since SDKs differ in case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeServer:
    """A threaded HTTP server on 127.0.0.1:0 that replays a queue of `Scripted` replies."""

    def __init__(self) -> None:
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def enqueue(self, *replies: Scripted) -> None:
        with self._lock:
            self._queue.extend(replies)

    def _next(self) -> Scripted:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return Scripted(status=500, body={"error": {"code": 500, "message": "fake queue empty"}})

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # silence stderr
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                server._record(RecordedRequest("POST", self.path, headers, body))
                reply = server._next()
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                data = payload.encode("utf-8")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if reply.trickle_s:
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        return Handler


class ModeServer(FakeServer):
    """Answers every request with one reply (the queue, when set, first): a server stuck in one fault mode."""

    def __init__(self, reply: Scripted) -> None:
        super().__init__()
        self.reply = reply

    def _next(self) -> Scripted:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return self.reply


def gemini_ok(text: str, prompt_tokens: int = 11, output_tokens: int = 7,
              thoughts_tokens: int | None = 3) -> Scripted:
    """A Gemini `generateContent` success body."""
    usage: dict[str, int] = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": output_tokens}
    if thoughts_tokens is not None:
        usage["thoughtsTokenCount"] = thoughts_tokens
    usage["totalTokenCount"] = sum(usage.values())
    return Scripted(200, {
        "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
    })


def gemini_error(status: int, message: str = "error", headers: dict[str, str] | None = None) -> Scripted:
    names = {429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 401: "UNAUTHENTICATED", 400: "INVALID_ARGUMENT"}
    body = {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}
    return Scripted(status, body, headers=headers or {})


def gemini_prompt_blocked(reason: str = "SAFETY") -> Scripted:
    """A Gemini reply whose prompt the safety filter blocked: `promptFeedback.blockReason`, no candidates."""
    return Scripted(200, {
        "promptFeedback": {"blockReason": reason, "safetyRatings": [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]},
        "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
        "modelVersion": "gemini-2.5-flash",
    })


def gemini_reply_blocked(reason: str = "SAFETY") -> Scripted:
    """A Gemini reply the safety filter stopped: a candidate with that `finishReason` and no content."""
    return Scripted(200, {
        "candidates": [{"finishReason": reason, "index": 0, "safetyRatings": [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]}],
        "usageMetadata": {"promptTokenCount": 11, "totalTokenCount": 11},
        "modelVersion": "gemini-2.5-flash",
    })


def openai_ok(text: str, prompt_tokens: int = 13, completion_tokens: int = 5,
              reasoning_tokens: int | None = 2) -> Scripted:
    """An OpenAI chat-completions success body."""
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
    if reasoning_tokens is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return Scripted(200, {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": text}}],
        "usage": usage,
    })


def openai_filtered(content: str | None = None) -> Scripted:
    """An OpenAI chat-completions reply the content filter stopped (`finish_reason: "content_filter"`)."""
    body = openai_ok("").body
    choice = {**body["choices"][0], "finish_reason": "content_filter",
              "message": {"role": "assistant", "content": content}}
    return Scripted(200, {**body, "choices": [choice]})


def openai_error(status: int, message: str = "error", headers: dict[str, str] | None = None) -> Scripted:
    body = {"error": {"message": message, "type": "fake_error", "code": str(status)}}
    return Scripted(status, body, headers=headers or {})


def closed_port() -> int:
    """A port with nothing listening, for connection-refused tests."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
