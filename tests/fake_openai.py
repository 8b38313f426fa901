"""A loopback server speaking OpenAI's chat-completions wire format (`GET /v1/models`, non-streaming
`POST /v1/chat/completions`, errors as `{"error": {...}}`), in the shapes its API reference shows.

`owned_by` is what /v1/models reports ("me": llama-cpp-python's server); a `response_format` type
not in `takes` is refused with HTTP 500. `fault` fails every chat one way ("500", "401", "slow"
after `delay` s, "not_json", "wrong_shape", "no_usage"); otherwise the next queued `replies`, then
`answer(messages)`, answers. `requests` keeps every chat body received.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FINGERPRINT = "fp_b376dfbbd5"


def completion(model: str, content: str) -> dict[str, Any]:
    """A non-streaming chat.completion in OpenAI's documented shape."""
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_733_480_467,
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 210, "completion_tokens": 18, "total_tokens": 228},
    }


def _error(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": None}}


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up on a deliberately slow reply


class FakeOpenAI:
    """Start with `with FakeOpenAI(model) as server:`; `server.base_url` is http://127.0.0.1:PORT/v1."""

    def __init__(
        self,
        model: str = "smollm2",
        replies: list[str] | None = None,
        answer: Callable[[list[dict[str, str]]], str] | None = None,
        *,
        owned_by: str = "organization",
        takes: tuple[str, ...] = ("text", "json_object", "json_schema"),
    ):
        self.model, self.owned_by, self.takes = model, owned_by, set(takes)
        self.replies: deque[str] = deque(replies or [])
        self.answer = answer
        self.fault: str | None = None
        self.delay = 2.0
        self.requests: list[dict[str, Any]] = []
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def base_url(self) -> str:
        return f"{self.host}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the socket: later requests get 'connection refused'."""
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def _chat(self, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append(body)
        kind = (body.get("response_format") or {}).get("type", "text")
        if self.fault == "slow":
            time.sleep(self.delay)
        if self.fault == "500":
            return 500, _error("llama_decode returned -3: the KV cache is full", "server_error")
        if self.fault == "401":
            return 401, _error("Incorrect API key provided", "invalid_api_key")
        if body.get("model") != self.model:
            return 404, _error(f"The model `{body.get('model')}` does not exist")
        if kind not in self.takes:
            return 500, _error(f"response_format.type: Input should be 'text' or 'json_object', got {kind!r}")
        if self.fault == "not_json":
            return 200, b"<html><body>502 Bad Gateway</body></html>"
        if self.fault == "wrong_shape":
            return 200, {"status": "success"}
        if not self.replies and self.answer is None:
            return 500, _error("fake openai: no reply queued", "server_error")
        value = completion(
            self.model, self.replies.popleft() if self.replies else self.answer(body["messages"])
        )
        if self.fault == "no_usage":
            del value["usage"]
        return 200, value

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, value: Any) -> None:
                body = value if isinstance(value, bytes) else json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if self.path == "/v1/models":
                    model = {"id": fake.model, "object": "model", "owned_by": fake.owned_by}
                    self._send(200, {"object": "list", "data": [model]})
                else:
                    self._send(404, _error("not found"))

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/v1/chat/completions":
                    self._send(*fake._chat(body))
                else:
                    self._send(404, _error("not found"))

        return Handler
