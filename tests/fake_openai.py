"""A loopback HTTP server that speaks the OpenAI chat-completions wire format, for fault tests.

It answers `GET /v1/models` (`{"object": "list", "data": [{"id", "object": "model",
"owned_by"}]}`) and non-streaming `POST /v1/chat/completions` with a `chat.completion` object
(`id`, `object`, `created`, `model`, `system_fingerprint`, `choices: [{index, message: {role,
content}, finish_reason}]`, `usage: {prompt_tokens, completion_tokens, total_tokens}`), as
OpenAI's API reference shows them; an error is `{"error": {"message", "type", "code"}}` with
its HTTP status. The real llama-cpp-python server is exercised by the live test; this fake
makes every fault happen on demand.

`owned_by` is what /v1/models reports ("me" is llama-cpp-python's server). `takes` is the set of
`response_format` types the server accepts: another one is refused with HTTP 500 naming it, as
llama-cpp-python's server does for "json_schema". `fault` makes every chat request fail one way:
"500", "slow" (answers after `delay` s), "drip" (a correct reply one byte every `delay` s),
"not_json" (an HTML body, status 200), "wrong_shape" (JSON, not a completion), "no_usage" (a
completion without `usage`), "401". `answer(messages)` composes a reply once the queue of
`replies` is empty. `requests` keeps every chat request body, for wire-format checks.
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


def completion(
    model: str,
    content: str,
    *,
    prompt_tokens: int = 210,
    completion_tokens: int = 18,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """A non-streaming chat.completion in OpenAI's documented shape."""
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_733_480_467,
        "model": model,
        "system_fingerprint": FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "logprobs": None,
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


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
        self.model = model
        self.owned_by = owned_by
        self.takes = set(takes)
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
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

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

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self, status: int, body: bytes, kind: str = "application/json", drip: bool = False
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not drip:
                    self.wfile.write(body)
                    return
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(fake.delay)

            def _json(self, status: int, value: Any, drip: bool = False) -> None:
                self._send(status, json.dumps(value).encode(), drip=drip)

            def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
                self._json(status, {"error": {"message": message, "type": kind, "code": None}})

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if self.path == "/v1/models":
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {
                                    "id": fake.model,
                                    "object": "model",
                                    "owned_by": fake.owned_by,
                                    "permissions": [],
                                }
                            ],
                        },
                    )
                else:
                    self._error(404, "not found")

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path != "/v1/chat/completions":
                    self._error(404, "not found")
                    return
                fake.requests.append(body)
                fault = fake.fault
                kind = (body.get("response_format") or {}).get("type", "text")
                if fault == "slow":
                    time.sleep(fake.delay)
                if fault == "500":
                    self._error(500, "llama_decode returned -3: the KV cache is full", "server_error")
                elif fault == "401":
                    self._error(401, "Incorrect API key provided", "invalid_api_key")
                elif body.get("model") != fake.model:
                    self._error(404, f"The model `{body.get('model')}` does not exist")
                elif kind not in fake.takes:
                    self._error(
                        500,
                        f"response_format.type: Input should be 'text' or 'json_object', got {kind!r}",
                        "server_error",
                    )
                elif fault == "not_json":
                    self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
                elif fault == "wrong_shape":
                    self._json(200, {"status": "success"})
                elif fake.replies:
                    self._reply(fake.replies.popleft())
                elif fault == "drip":
                    self._reply('{"action": "final", "answer": "x", "citation": ""}')
                elif fake.answer is not None:
                    self._reply(fake.answer(body["messages"]))
                else:
                    self._error(500, "fake openai: no reply queued", "server_error")

            def _reply(self, content: str) -> None:
                value = completion(fake.model, content)
                if fake.fault == "no_usage":
                    del value["usage"]
                self._json(200, value, drip=fake.fault == "drip")

        return Handler
