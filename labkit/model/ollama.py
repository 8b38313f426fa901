"""The `ollama:<tag>` backend: the official `ollama` client against `OLLAMA_HOST`.

Each decision is one non-streaming `chat(model, messages, format=<the rung's schema>, options=
{temperature, seed, num_predict})`; at rung L0 no `format` is sent. Every server failure (nothing
listening, no answer within `timeout` per read, an HTTP error, a body that is not a chat reply,
token counts that are not counts) is one ProviderError naming the host: a counted
`provider_error`. A model tag the server lacks (HTTP 404) is the user's LabError: `ollama pull` it.
Ollama does not promise identical replies at temperature 0 (its issues #586, #5274).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable
from typing import Any

from labkit.core.errors import LabError, ProviderError
from labkit.model.backend import TIMEOUT, ChatRequest, Reply, token_count, versions


class OllamaBackend:
    """A model served by Ollama (see the module docstring). Connects on the first request."""

    def __init__(self, tag: str, *, host: str | None = None, timeout: float = TIMEOUT):
        self.tag = tag
        self.name = f"ollama:{tag}"
        self.host = host or os.environ.get("OLLAMA_HOST", "").strip() or "http://127.0.0.1:11434"
        self.timeout = timeout
        self._provenance: dict[str, Any] | None = None

    @functools.cached_property
    def client(self) -> Any:
        import ollama

        return ollama.Client(host=self.host, timeout=self.timeout)

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """`fn()`, with every way the server can fail turned into one ProviderError."""
        import httpx
        import ollama

        where = f"Ollama at {self.host}"
        try:
            return fn()
        except ollama.ResponseError as error:
            if error.status_code == 404 and what == "chat":
                raise LabError(
                    f"{where} has no model {self.tag!r}: run `ollama pull {self.tag}` ({error.error})"
                ) from None
            raise ProviderError(
                f"{where} answered {what} with HTTP {error.status_code}: {error.error}"
            ) from None
        except ConnectionError:
            raise ProviderError(f"cannot reach {where} (is `ollama serve` running?)") from None
        except httpx.TimeoutException:
            raise ProviderError(f"{where} did not answer {what} within {self.timeout:g} s") from None
        except (httpx.HTTPError, ValueError) as error:  # ValueError: a body json or pydantic refused
            first = (str(error).splitlines() or [type(error).__name__])[0]
            raise ProviderError(
                f"{where} answered {what} with something that is not a {what} reply ({first})"
            ) from None

    def provenance(self) -> dict[str, Any]:
        """Backend, host, tag and the model's digest (one extra request)."""
        if self._provenance is None:
            listed = self._call("tags", self.client.list)
            names = {self.tag, f"{self.tag}:latest"}
            self._provenance = {
                "backend": self.name,
                "host": self.host,
                "model": self.tag,
                "digest": next((m.digest for m in listed.models if m.model in names), None),
                "timeout_s": self.timeout,
                "versions": versions("ollama", "httpx"),
            }
        return self._provenance

    def complete(self, request: ChatRequest) -> Reply:
        start = time.perf_counter()
        options = {
            "temperature": request.temperature,
            "seed": request.seed,
            "num_predict": request.max_tokens,
        }
        response = self._call(
            "chat",
            lambda: self.client.chat(
                model=self.tag,
                messages=list(request.messages),
                format=None if request.schema is None else dict(request.schema),
                stream=False,
                options=options,
            ),
        )
        latency = time.perf_counter() - start
        where = f"Ollama at {self.host} reported"
        return Reply(
            text=response.message.content or "",
            prompt_tokens=token_count(response.prompt_eval_count or 0, f"{where} prompt_eval_count"),
            completion_tokens=token_count(response.eval_count or 0, f"{where} eval_count"),
            latency_s=latency,
            finish_reason=response.done_reason or "stop",
        )
