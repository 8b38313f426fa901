"""The `ollama:<tag>` backend: the `ollama` client against `OLLAMA_HOST`, one non-streaming `chat` per
decision, the rung's schema as `format` (none at L0); a tag the server lacks (HTTP 404) is a LabError
(`ollama pull` it). Ollama does not promise identical replies at temperature 0 (its issues #586, #5274)."""

import functools
import os
import time
from typing import Any

import httpx
import ollama

from labkit.model.backend import PROBE_S, TIMEOUT, ChatRequest, Reply, ServerBackend, versions


class OllamaBackend(ServerBackend):
    """A model served by Ollama (see the module docstring). Connects on the first request."""

    _SLOW = (httpx.TimeoutException,)
    _DOWN = (ConnectionError,)  # what the client raises for a refused connection
    _STATUS = (ollama.ResponseError,)
    _BAD = (httpx.HTTPError, ValueError)  # ValueError: a body json or pydantic refused

    def __init__(self, tag: str, *, host: str | None = None, timeout: float = TIMEOUT):
        self.tag = tag
        self.name = f"ollama:{tag}"
        self.host = host or os.environ.get("OLLAMA_HOST", "").strip() or "http://127.0.0.1:11434"
        self.where = f"Ollama at {self.host}"
        self.timeout = timeout

    def _unreachable(self, error: Exception) -> str:
        return "(is `ollama serve` running?)"

    def _status_text(self, error: Any) -> str:
        return error.error

    def _fix(self, what: str, status: int) -> str | None:  # serves: user — a tag never pulled
        return f"run `ollama pull {self.tag}`" if (what, status) == ("chat", 404) else None

    def _answers(self) -> bool:
        try:
            ollama.Client(host=self.host, timeout=PROBE_S).list()
        except (ollama.ResponseError, httpx.HTTPError, ConnectionError, ValueError):
            return False
        return True

    @functools.cached_property
    def client(self) -> ollama.Client:
        return ollama.Client(host=self.host, timeout=self.timeout)

    def provenance(self) -> dict[str, Any]:
        """Backend, host, tag and the model's digest (one extra request, the first time)."""
        return self._provenance

    @functools.cached_property
    def _provenance(self) -> dict[str, Any]:
        """What `provenance` reports, looked up once; a failed lookup is asked again next time."""
        listed = self.call("tags", self.client.list)
        names = {self.tag, f"{self.tag}:latest"}
        return {
            "backend": self.name,
            "host": self.host,
            "model": self.tag,
            "digest": next((m.digest for m in listed.models if m.model in names), None),
            "timeout_s": self.timeout,
            "versions": versions("ollama", "httpx"),
        }

    def complete(self, request: ChatRequest) -> Reply:
        start = time.perf_counter()
        options = {
            "temperature": request.temperature,
            "seed": request.seed,
            "num_predict": request.max_tokens,
        }
        response = self.call(
            "chat",
            lambda: self.client.chat(
                model=self.tag,
                messages=list(request.messages),
                format=None if request.schema is None else dict(request.schema),
                stream=False,
                options=options,
            ),
        )
        # serves: ours — the server's reported token counts are checked (`_count`)
        return Reply(
            text=response.message.content or "",
            prompt_tokens=self._count(response.prompt_eval_count or 0, "prompt_eval_count"),
            completion_tokens=self._count(response.eval_count or 0, "eval_count"),
            latency_s=time.perf_counter() - start,
            finish_reason=response.done_reason or "stop",
        )
