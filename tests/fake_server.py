"""A loopback HTTP server speaking JSON, for the model backends' real clients (nothing of theirs is
mocked): `FakeOllama` and `FakeOpenAI` give its routes, error shape and reply.

Each chat is answered by the next queued `replies`, then `answer(messages)`; `fault` fails every
chat one way: "slow" (after `delay` s), "hung" (every request after `delay` s), "not_json", "wrong_shape",
"trickle" (one byte each `delay` s) or one of the server's `faults`; `fields` overrides fields of every
reply; `requests` keeps every chat body.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up on a deliberately slow reply


class FakeServer:
    """Start with `with Fake(model) as server:`; `server.host` is its http://127.0.0.1:PORT. A server
    gives `chat_path`, `faults`, `routes()` (each GET path's answer), `error(message, kind)`,
    `missing` (a chat naming another model: its format) and `completion(content)`."""

    chat_path = missing = ""
    faults: dict[str, tuple[int, str, str]] = {}  # fault -> (status, message, kind), before the model check

    def __init__(
        self,
        model: str,
        replies: list[str] | None = None,
        answer: Callable[[list[dict[str, str]]], str] | None = None,
    ):
        self.model = model
        self.replies: deque[str] = deque(replies or [])
        self.answer = answer
        self.fault: str | None = None
        self.delay = 2.0
        self.fields: dict[str, Any] = {}
        self.requests: list[dict[str, Any]] = []
        self.stopped = False
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving and close the socket: later requests get 'connection refused'."""
        self.stopped = True
        if self._thread.is_alive():
            self._server.shutdown()
        self._server.server_close()

    def next_reply(self, messages: list[dict[str, str]]) -> str | None:
        """The next queued reply, else `answer(messages)`, else None (nothing to say)."""
        if self.replies:
            return self.replies.popleft()
        return None if self.answer is None else self.answer(messages)

    def get(self, path: str) -> tuple[int, Any]:
        if self.fault == "hung":  # answers nothing in time, not even "are you there?"
            time.sleep(self.delay)
        found = self.routes().get(path)
        return (200, found) if found else (404, self.error("not found"))

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path != self.chat_path:
            return 404, self.error("not found")
        self.requests.append(body)
        if self.fault in ("slow", "hung"):
            time.sleep(self.delay)
        if self.fault in self.faults:
            status, message, kind = self.faults[self.fault]
            return status, self.error(message, kind)
        if body.get("model") != self.model:
            return 404, self.error(self.missing.format(body.get("model")))
        if self.fault == "not_json":
            return 200, b"<html><body>502 Bad Gateway</body></html>"
        if self.fault == "wrong_shape":
            return 200, {"status": "success"}
        content = self.next_reply(body["messages"])
        if content is None:
            return 500, self.error(f"fake {type(self).__name__}: no reply queued", "server_error")
        return 200, self.completion(content) | self.fields

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, status: int, value: Any, trickle: bool = False) -> None:
                body = value if isinstance(value, bytes) else json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                step = 1 if trickle else len(body)  # one byte each `delay` s, until stopped
                for start in range(0, len(body), step):
                    if fake.stopped:
                        break
                    self.wfile.write(body[start : start + step])
                    self.wfile.flush()
                    if step == 1:
                        time.sleep(fake.delay)

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                self._send(*fake.get(self.path))

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                self._send(*fake.post(self.path, body), trickle=fake.fault == "trickle")

        return Handler
