"""The `openai:<model>` backend: the official `openai` client against any OpenAI-compatible server.

Configured the client's own way: `OPENAI_BASE_URL` (e.g. ``http://10.0.0.5:8000/v1`` for the room's
`labkit serve`), `OPENAI_API_KEY` (a placeholder when unset). No retries: a retried decision is not
the one the runtime timed. The rung's schema goes as `response_format` in the form
`LABKIT_OPENAI_SCHEMA` names: ``json_schema`` (OpenAI, llama-server, vLLM, Ollama's /v1),
``json_object`` + ``schema`` (llama-cpp-python's server, which reports ``owned_by: "me"``: ``auto``,
the default, asks /v1/models once), or ``none``. A reply without choices or usage is a ProviderError;
a model the server lacks (404) and a refused key (401/403) are LabErrors.
"""

import functools
import os
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import openai

from labkit.core.errors import LabError, ProviderError
from labkit.model.backend import PROBE_S, TIMEOUT, ChatRequest, Reply, ServerBackend, first_line, versions

_SCHEMA_MODES = ("auto", "json_schema", "json_object", "none")
PLACEHOLDER_KEY = "labkit-local"


class OpenAIBackend(ServerBackend):
    """A model behind an OpenAI-compatible server (see the module docstring). Connects on first use."""

    _SLOW = (openai.APITimeoutError,)  # before _DOWN: it is an APIConnectionError
    _DOWN = (openai.APIConnectionError,)
    _STATUS = (openai.APIStatusError,)
    _BAD = (openai.APIError, ValueError, TypeError, AttributeError)

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        schema_mode: str | None = None,
        timeout: float = TIMEOUT,
        environ: Mapping[str, str] | None = None,
    ):
        env = os.environ if environ is None else environ
        mode = (schema_mode or env.get("LABKIT_OPENAI_SCHEMA", "").strip() or "auto").lower()
        if mode not in _SCHEMA_MODES:  # serves: user — a LABKIT_OPENAI_SCHEMA typo
            raise LabError(
                f"LABKIT_OPENAI_SCHEMA={mode!r} is not a schema mode: use {', '.join(_SCHEMA_MODES)}"
            )
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url or env.get("OPENAI_BASE_URL", "").strip() or None
        if self.base_url is not None and "://" not in self.base_url:
            self.base_url = f"http://{self.base_url}"
        self.api_key = api_key or env.get("OPENAI_API_KEY", "").strip() or PLACEHOLDER_KEY
        self.timeout = timeout
        self.mode: str | None = None if mode == "auto" else mode
        parts = urlsplit(self.base_url or "https://api.openai.com/v1")
        self.host = f"{parts.scheme}://{parts.netloc}"
        self.where = f"the server at {self.host}"

    def _unreachable(self, error: Exception) -> str:
        return f"({first_line(error.__cause__ or error)}): is it running, and is OPENAI_BASE_URL right?"

    def _status_text(self, error: Any) -> str:
        inner = error.body.get("error", error.body) if isinstance(error.body, Mapping) else error.body
        text = inner.get("message") if isinstance(inner, Mapping) else inner
        return " ".join(str(text or error.message).split())[:200]

    def _fix(self, what: str, status: int) -> str | None:  # serves: user — a wrong model name or key
        if status == 404:
            return f"is {self.model!r} in its /v1/models, and does OPENAI_BASE_URL end in /v1?"
        return "set OPENAI_API_KEY to a key it accepts" if status in (401, 403) else None

    def _answers(self) -> bool:
        # Any HTTP answer will do, a 404 included: llama-cpp-python's server keeps /v1/models behind
        # the lock a generation holds (asking it would call a busy server hung), while an unknown path
        # it answers at once from its event loop, as llama-server answers /health; a hung one answers nothing.
        try:
            self.client.with_options(timeout=PROBE_S).get("/health", cast_to=str)
        except openai.APIStatusError:
            return True
        except (openai.OpenAIError, OSError):
            return False
        return True

    @functools.cached_property
    def client(self) -> openai.OpenAI:
        return openai.OpenAI(
            base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=0
        )

    @functools.cached_property
    def owned_by(self) -> str | None:
        """What /v1/models says owns this model (or the only model listed)."""
        models = list(getattr(self.call("models", self.client.models.list), "data", None) or [])
        only = models[0] if len(models) == 1 else None
        owner = getattr(
            next((m for m in models if getattr(m, "id", None) == self.model), only), "owned_by", None
        )
        return owner if isinstance(owner, str) else None

    def schema_mode(self) -> str:
        if self.mode is None:
            self.mode = "json_object" if self.owned_by == "me" else "json_schema"
        return self.mode

    def provenance(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "host": self.host,
            "model": self.model,
            "owned_by": self.owned_by,
            "schema_mode": self.mode,
            "timeout_s": self.timeout,
            "versions": versions("openai", "httpx"),
        }

    def complete(self, request: ChatRequest) -> Reply:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(request.messages),
            "temperature": request.temperature,
            "seed": request.seed,
            "max_tokens": request.max_tokens,
            "stream": False,
        }
        mode = "none" if request.schema is None else self.schema_mode()
        if mode == "json_object":
            body["response_format"] = {"type": "json_object", "schema": dict(request.schema)}
        elif mode == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "decision", "schema": dict(request.schema)},
            }
        start = time.perf_counter()
        response = self.call("chat", lambda: self.client.chat.completions.create(**body))
        latency = time.perf_counter() - start
        try:  # the client does not validate what a server sends: a reply is data to check
            choice, usage = response.choices[0], response.usage
            text, finish = choice.message.content, choice.finish_reason
            counts = [
                self._count(usage.prompt_tokens, "usage.prompt_tokens"),
                self._count(usage.completion_tokens, "usage.completion_tokens"),
            ]
        except (TypeError, IndexError, AttributeError):  # no choices, no message, no usage
            raise ProviderError(
                f"{self.where} answered chat with something that is not a chat completion"
            ) from None
        if not isinstance(text, str):
            raise ProviderError(f"{self.where} answered chat without message content")
        served, fingerprint = getattr(response, "model", None), getattr(response, "system_fingerprint", None)
        return Reply(
            text=text,
            prompt_tokens=counts[0],
            completion_tokens=counts[1],
            latency_s=latency,
            finish_reason=finish if isinstance(finish, str) and finish else "stop",
            extra={
                "call_provenance": {
                    "served_model": served if isinstance(served, str) else None,
                    "system_fingerprint": fingerprint[:200] if isinstance(fingerprint, str) else None,
                    "schema_mode": mode,
                }
            },
        )
