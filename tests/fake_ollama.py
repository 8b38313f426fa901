"""A loopback server speaking Ollama's wire format (`GET /api/version`, `/api/tags`, non-streaming
`POST /api/chat`, errors as `{"error": ...}`, in docs/api.md's shapes), for the real `ollama` client.

Its own fault: "500"; `docuctl_oracle` answers as the scripted docuctl policy would, so whole trials
run over the wire.
The backend tests drive one docuctl episode (`TASK`, answered `SEARCH`, `READ`, `FINAL`) with
`docuctl_policy` and `episode`."""

from __future__ import annotations

import json
from typing import Any

from fake_server import FakeServer

from labkit.baseline import Task, docuctl_tools
from labkit.core import run
from labkit.decision_loop.model_policy import describe_docuctl
from labkit.model import ModelPolicy

DIGEST = "a8b0c51577010a279d933d14c2a8ab4b268079d44c5c8830c0a93900f1827c67"


class FakeOllama(FakeServer):
    """Start with `with FakeOllama(model) as server:`; `server.host` is its http://127.0.0.1:PORT."""

    chat_path = "/api/chat"
    faults = {"500": (500, "llama runner process has terminated: signal: killed", "")}
    missing = 'model "{}" not found, try pulling it first'

    def routes(self) -> dict[str, Any]:
        tags = {"models": [{"name": self.model, "model": self.model, "digest": DIGEST, "size": 1}]}
        return {"/api/version": {"version": "0.5.1"}, "/api/tags": tags}

    def error(self, message: str, kind: str = "") -> Any:
        return {"error": message}

    def completion(self, content: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "created_at": "2024-12-06T10:21:07.427498Z",
            "message": {"role": "assistant", "content": content},
            "done_reason": "stop",
            "done": True,
            "total_duration": 512_000_000,
            "prompt_eval_count": 210,
            "eval_count": 18,
        }


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
