"""The `ollama:<tag>` backend: the official `ollama` client against `OLLAMA_HOST`.

Each decision is one non-streaming `chat(model, messages, format=<decision schema>,
options={temperature, seed, num_predict})`. The schema is the one the request's rung built
for this turn (`labkit.model.constraints`: enums of observed ids at L2/L3, which Ollama's
`format` supports); at rung L0 no `format` is sent. Every way the server can fail becomes one
ProviderError (a counted `provider_error`) whose message names the host and what happened:

- no server listening: the client raises the builtin ConnectionError;
- no answer within `timeout` seconds: an `httpx.TimeoutException`. httpx applies it to
  each read, so a server that trickles a byte at a time would never trip it: every call
  also has a whole-call `deadline` (default 300 s), after which it is abandoned;
- an HTTP error such as 500: `ollama.ResponseError`, with the server's `error` text;
- a body that is not a chat reply (not JSON, or JSON of another shape): ValueError from
  the client's parsing (json or pydantic);
- a chat reply whose token counts are not ints from 0 to 2**53.

One failure is the user's, not the server's: a model tag the server does not have (HTTP
404) is a LabError telling them to `ollama pull` it. Ollama does not promise identical
replies at temperature 0 (its issues #586 and #5274), which is one more reason the
notebooks replay recordings.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from labkit.core.errors import LabError, ProviderError
from labkit.core.runtime import MAX_SECONDS
from labkit.core.timeouts import TIMED_OUT, call_within
from labkit.model.backend import Reply, Request, token_count, versions

DEFAULT_HOST = "http://127.0.0.1:11434"
TIMEOUT = 120.0  # seconds per read; a cold model load on a laptop can take tens of seconds
DEADLINE = 300.0  # seconds per whole call, however the server paces its bytes


class OllamaBackend:
    """A model served by Ollama (see the module docstring). Connects on the first request."""

    def __init__(self, tag: str, *, host: str | None = None, timeout: float = TIMEOUT,
                 deadline: float = DEADLINE):
        if not tag or not tag.strip():
            raise LabError("ollama:<tag> needs a model tag, e.g. ollama:qwen2.5:0.5b")
        for name, value in (("timeout", timeout), ("deadline", deadline)):
            if not (type(value) in (int, float) and 0 < value <= MAX_SECONDS):
                raise ValueError(
                    f"OllamaBackend: {name} must be a positive number of seconds up to {MAX_SECONDS:g}"
                )
        self.tag = tag
        self.name = f"ollama:{tag}"
        self.host = host or os.environ.get("OLLAMA_HOST", "").strip() or DEFAULT_HOST
        self.timeout = timeout
        self.deadline = deadline
        self._client: Any = None
        self._provenance: dict[str, Any] | None = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import ollama

            self._client = ollama.Client(host=self.host, timeout=self.timeout)
        return self._client

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run one client call within the deadline; every server failure is a ProviderError.

        The call runs on a daemon thread and is abandoned at the deadline: httpx cannot
        interrupt a read from outside, so the thread ends when the server stops sending,
        and the next call gets a fresh connection.
        """
        value = call_within(self._call_now, (what, fn), self.deadline)
        if value is TIMED_OUT:
            self._client = None  # the abandoned thread keeps the old connection
            raise ProviderError(f"Ollama at {self.host} did not finish {what} within {self.deadline:g} s")
        return value

    def _call_now(self, what: str, fn: Callable[[], Any]) -> Any:
        import httpx
        import ollama

        try:
            return fn()
        except ollama.ResponseError as error:
            if error.status_code == 404 and what == "chat":
                raise LabError(
                    f"Ollama at {self.host} has no model {self.tag!r}: "
                    f"run `ollama pull {self.tag}` ({error.error})"
                ) from None
            raise ProviderError(
                f"Ollama at {self.host} answered {what} with HTTP {error.status_code}: {error.error}"
            ) from None
        except ConnectionError:
            raise ProviderError(f"cannot reach Ollama at {self.host} (is `ollama serve` running?)") from None
        except httpx.TimeoutException:
            raise ProviderError(
                f"Ollama at {self.host} did not answer {what} within {self.timeout:g} s"
            ) from None
        except httpx.HTTPError as error:
            raise ProviderError(
                f"Ollama at {self.host}: {what} failed ({type(error).__name__}: {error})"
            ) from None
        except ValueError as error:  # json.JSONDecodeError or pydantic.ValidationError
            first = str(error).splitlines()[0] if str(error) else type(error).__name__
            raise ProviderError(
                f"Ollama at {self.host} answered {what} with something that is not a {what} reply ({first})"
            ) from None

    def provenance(self) -> dict[str, Any]:
        """Backend, tag, the model's digest and the server's version (two extra requests)."""
        if self._provenance is None:
            version = self._call("version", lambda: self.client._request_raw("GET", "/api/version").json())
            listed = self._call("tags", self.client.list)
            names = {self.tag, f"{self.tag}:latest"}
            digest = next((m.digest for m in listed.models if m.model in names), None)
            self._provenance = {
                "backend": self.name,
                "host": self.host,
                "model": self.tag,
                "digest": digest,
                "server_version": version.get("version") if isinstance(version, dict) else None,
                "timeout_s": self.timeout,
                "versions": versions("ollama", "httpx"),
            }
        return self._provenance

    def complete(self, request: Request) -> Reply:
        start = time.perf_counter()
        response = self._call(
            "chat",
            lambda: self.client.chat(
                model=self.tag,
                messages=list(request.messages),
                format=None if request.schema is None else dict(request.schema),
                stream=False,
                options={
                    "temperature": request.temperature,
                    "seed": request.seed,
                    "num_predict": request.max_tokens,
                },
            ),
        )
        latency = time.perf_counter() - start
        content = response.message.content if response.message is not None else None
        if not isinstance(content, str):
            raise ProviderError(f"Ollama at {self.host} answered chat without message content")
        counts = {
            field: token_count(getattr(response, field) or 0, f"Ollama at {self.host} reported {field}")
            for field in ("prompt_eval_count", "eval_count")
        }
        return Reply(
            text=content,
            prompt_tokens=counts["prompt_eval_count"],
            completion_tokens=counts["eval_count"],
            latency_s=latency,
            finish_reason=response.done_reason or "stop",
        )
