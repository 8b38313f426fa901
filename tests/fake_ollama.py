"""A loopback HTTP server that speaks Ollama's wire format, for testing the real client path.

It answers `GET /api/version`, `GET /api/tags` and non-streaming `POST /api/chat` the way
Ollama documents them (docs/api.md): a chat reply is `{"model", "created_at", "message":
{"role": "assistant", "content"}, "done_reason", "done", "total_duration", "load_duration",
"prompt_eval_count", "prompt_eval_duration", "eval_count", "eval_duration"}`, an error is
`{"error": "..."}` with its HTTP status. The replies below are shaped on those documented
examples; the content of each is whatever the test queues.

`answer(messages)`, if given, composes a reply once the queue is empty (`docuctl_oracle`
plays the lab-01 scripted policy from the messages, so whole trials can run over the wire).
`fault` makes every chat request fail one way: "500", "404", "slow" (answers after
`delay` seconds), "drip" (a correct reply sent one byte every `delay` seconds, so no single
read ever waits long), "not_json" (an HTML body with status 200), "wrong_shape" (JSON, but
not a chat reply). `fields` overrides fields of every chat reply (e.g. `eval_count`).
`requests` keeps every chat request body received, for wire-format checks.

The backend tests (this fake's and tests/fake_openai.py's) drive one docuctl episode over the
wire: `TASK`, answered by the replies `SEARCH`, `READ` and `FINAL`, through `docuctl_policy`
and `episode`.
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

VERSION = {"version": "0.5.1"}
DIGEST = "a8b0c51577010a279d933d14c2a8ab4b268079d44c5c8830c0a93900f1827c67"


def chat_reply(
    model: str, content: str, *, prompt_eval_count: int = 210, eval_count: int = 18, done_reason: str = "stop"
) -> dict[str, Any]:
    """A non-streaming /api/chat reply in Ollama's documented shape."""
    return {
        "model": model,
        "created_at": "2024-12-06T10:21:07.427498Z",
        "message": {"role": "assistant", "content": content},
        "done_reason": done_reason,
        "done": True,
        "total_duration": 512_000_000,
        "load_duration": 12_000_000,
        "prompt_eval_count": prompt_eval_count,
        "prompt_eval_duration": 120_000_000,
        "eval_count": eval_count,
        "eval_duration": 380_000_000,
    }


def tags(model: str) -> dict[str, Any]:
    return {
        "models": [
            {
                "name": model,
                "model": model,
                "modified_at": "2024-12-06T10:20:00.000000Z",
                "size": 397_821_319,
                "digest": DIGEST,
                "details": {
                    "parent_model": "",
                    "format": "gguf",
                    "family": "qwen2",
                    "families": ["qwen2"],
                    "parameter_size": "494.03M",
                    "quantization_level": "Q4_K_M",
                },
            }
        ]
    }


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # The only errors here are clients hanging up on a deliberately slow reply.
        pass


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
        if self._thread.is_alive():  # shutdown() waits for serve_forever, so only if it runs
            self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:  # keep pytest output clean
                pass

            def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _json(self, status: int, value: Any) -> None:
                if status == 200 and "message" in value:
                    value = value | fake.fields
                body = json.dumps(value).encode()
                if fake.fault != "drip":
                    self._send(status, body)
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                for i in range(len(body)):
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                    time.sleep(fake.delay)

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                if self.path == "/api/version":
                    self._json(200, VERSION)
                elif self.path == "/api/tags":
                    self._json(200, tags(fake.model))
                else:
                    self._json(404, {"error": "not found"})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                if self.path != "/api/chat":
                    self._json(404, {"error": "not found"})
                    return
                fake.requests.append(body)
                fault = fake.fault
                if fault == "slow":
                    time.sleep(fake.delay)
                if fault == "500":
                    self._json(500, {"error": "llama runner process has terminated: signal: killed"})
                elif fault == "404" or body.get("model") != fake.model:
                    self._json(404, {"error": f'model "{body.get("model")}" not found, try pulling it first'})
                elif fault == "not_json":
                    self._send(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
                elif fault == "wrong_shape":
                    self._json(200, {"status": "success"})
                elif fake.replies:
                    self._json(200, chat_reply(fake.model, fake.replies.popleft()))
                elif fault == "drip":
                    final = '{"action": "final", "answer": "x", "citation": ""}'
                    self._json(200, chat_reply(fake.model, final))
                elif fake.answer is not None:
                    self._json(200, chat_reply(fake.model, fake.answer(body["messages"])))
                else:
                    self._json(500, {"error": "fake ollama: no reply queued"})

        return Handler


def docuctl_oracle(messages: list[dict[str, str]]) -> str:
    """Reply as the scripted policy would: search the question, read the first hit, answer."""
    last = messages[-1]["content"]
    if len(messages) == 2:
        question = last.splitlines()[0].removeprefix("Question: ")
        return json.dumps({"action": "search", "query": question})
    kind, _, payload = last.partition(": ")
    result = json.loads(payload)
    if kind == "Result of search" and result:
        return json.dumps({"action": "read", "id": result[0]["id"]})
    if kind == "Result of read" and "command" in result:
        return json.dumps({"action": "final", "answer": result["command"], "citation": result["id"]})
    return json.dumps({"action": "final", "answer": "No matching page was found.", "citation": ""})


# -- the docuctl episode the backend tests drive over the wire ------------------------------------

TASK = Task("deploy-build", "deploy", "How do I deploy the current build?", "v2")
SEARCH = '{"action": "search", "query": "deploy build"}'
READ = '{"action": "read", "id": "deploy-v2"}'
FINAL = '{"action": "final", "answer": "docuctl ship --env staging", "citation": "deploy-v2"}'


def docuctl_policy(backend: Any, instructions: str = "One JSON action.", **options: Any) -> ModelPolicy:
    """The docuctl model policy for `TASK` that asks `backend`; `options` go to ModelPolicy
    (temperature, seed, max_tokens ...)."""
    return ModelPolicy(lab="docuctl", tools=docuctl_tools(TASK), instructions=instructions,
                       describe=describe_docuctl, backend=backend, **options)


def episode(backend: Any, **options: Any) -> dict[str, Any]:
    """One run of `docuctl_policy(backend, **options)` on `TASK`: at most 3 turns and 2 tool calls."""
    return run(TASK, docuctl_policy(backend, **options), tools=docuctl_tools(TASK), max_turns=3, max_tools=2)
