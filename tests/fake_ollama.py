"""A loopback server speaking Ollama's wire format (`GET /api/version`, `/api/tags`, non-streaming
`POST /api/chat`, errors as `{"error": ...}`, in docs/api.md's shapes), for the real `ollama` client.

Each chat is answered by the next queued `replies`, then `answer(messages)` (`docuctl_oracle` plays
the scripted docuctl policy, so whole trials run over the wire). `fault` fails every chat one way
("500", "slow" after `delay` s, "not_json", "wrong_shape"); `fields` overrides fields of every
reply; `requests` keeps every chat body. The backend tests drive one docuctl episode (`TASK`,
answered `SEARCH`, `READ`, `FINAL`) with `docuctl_policy` and `episode`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from labkit import Task, docuctl_tools, run
from labkit.decision_loop.model_policy import describe_docuctl
from labkit.model import ModelPolicy

DIGEST = "a8b0c51577010a279d933d14c2a8ab4b268079d44c5c8830c0a93900f1827c67"


def chat_reply(model: str, content: str) -> dict[str, Any]:
    """A non-streaming /api/chat reply in Ollama's documented shape."""
    return {
        "model": model,
        "created_at": "2024-12-06T10:21:07.427498Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": "stop",
        "done": True,
        "total_duration": 512_000_000,
        "prompt_eval_count": 210,
        "eval_count": 18,
    }


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up on a deliberately slow reply


class FakeOllama:
    """Start with `with FakeOllama(model) as server:`; `server.host` is its http://127.0.0.1:PORT."""

    def __init__(
        self,
        model: str = "qwen2.5:0.5b",
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
        self._server = _QuietServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeOllama:
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
        if self.fault == "slow":
            time.sleep(self.delay)
        if self.fault == "500":
            return 500, {"error": "llama runner process has terminated: signal: killed"}
        if body.get("model") != self.model:
            return 404, {"error": f'model "{body.get("model")}" not found, try pulling it first'}
        if self.fault == "not_json":
            return 200, b"<html><body>502 Bad Gateway</body></html>"
        if self.fault == "wrong_shape":
            return 200, {"status": "success"}
        if self.replies or self.answer is not None:
            content = self.replies.popleft() if self.replies else self.answer(body["messages"])
            return 200, chat_reply(self.model, content) | self.fields
        return 500, {"error": "fake ollama: no reply queued"}

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
                tags = {"models": [{"name": fake.model, "model": fake.model, "digest": DIGEST, "size": 1}]}
                found = {"/api/version": {"version": "0.5.1"}, "/api/tags": tags}.get(self.path)
                self._send(200 if found else 404, found or {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path == "/api/chat":
                    self._send(*fake._chat(body))
                else:
                    self._send(404, {"error": "not found"})

        return Handler


def docuctl_oracle(messages: list[dict[str, str]]) -> str:
    """Reply as the scripted policy would: search the question, read the first hit, answer."""
    last = messages[-1]["content"]
    if len(messages) == 2:
        return json.dumps({"action": "search", "query": last.splitlines()[0].removeprefix("Question: ")})
    kind, _, payload = last.partition(": ")
    result = json.loads(payload)
    if kind == "Result of search" and result:
        return json.dumps({"action": "read", "id": result[0]["id"]})
    if kind == "Result of read" and "command" in result:
        return json.dumps({"action": "final", "answer": result["command"], "citation": result["id"]})
    return json.dumps({"action": "final", "answer": "No matching page was found.", "citation": ""})


TASK = Task("deploy-build", "deploy", "How do I deploy the current build?", "v2")
SEARCH = '{"action": "search", "query": "deploy build"}'
READ = '{"action": "read", "id": "deploy-v2"}'
FINAL = '{"action": "final", "answer": "docuctl ship --env staging", "citation": "deploy-v2"}'


def docuctl_policy(backend: Any, instructions: str = "One JSON action.", **options: Any) -> ModelPolicy:
    """The docuctl model policy for `TASK` asking `backend`; `options` go to ModelPolicy."""
    tools = docuctl_tools(TASK)
    return ModelPolicy("docuctl", tools, instructions, describe_docuctl, backend=backend, **options)


def episode(backend: Any, **options: Any) -> dict[str, Any]:
    """One run of `docuctl_policy(backend, **options)` on `TASK`: at most 3 turns and 2 tool calls."""
    return run(TASK, docuctl_policy(backend, **options), tools=docuctl_tools(TASK), max_turns=3, max_tools=2)
