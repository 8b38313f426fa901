"""The `openai:<model>` backend: the official `openai` client against any OpenAI-compatible server.

Configured the client's own way: `OPENAI_BASE_URL` names the server (e.g.
``http://10.0.0.5:8000/v1`` for the room's `python -m labkit serve`; unset, the client's default,
OpenAI's own API), and `OPENAI_API_KEY` is sent only because the client insists on one: when it
is unset a placeholder goes, which every local server (llama.cpp, llama-cpp-python, Ollama's
`/v1`, LM Studio, vLLM) accepts. `max_retries` is 0: the client's default (2) would turn a down
server into three waits, and a retried decision is not the one the runtime timed.

Each decision is one non-streaming `chat.completions.create(model, messages, temperature, seed,
max_tokens, response_format=...)`. Servers take a schema in one of two ways (`SCHEMA_MODES`):

- ``json_schema``: OpenAI's `{"type": "json_schema", "json_schema": {"name", "schema"}}`, which
  OpenAI, llama.cpp's `llama-server`, vLLM, LM Studio and Ollama's `/v1` take;
- ``json_object``: `{"type": "json_object", "schema": ...}`, the form llama-cpp-python's
  `llama_cpp.server` takes (it refuses ``json_schema`` with an HTTP error);
- ``none``: no schema is sent (the rung's constraint is then the runtime's check alone).

`LABKIT_OPENAI_SCHEMA` chooses; unset (``auto``), the backend asks `/v1/models` once and uses
``json_object`` where the model is ``owned_by: "me"`` (what llama-cpp-python's server reports)
and ``json_schema`` elsewhere, switching to ``json_object`` once if a server refuses
``json_schema`` by name. A server may also accept a schema and ignore it: every reply that
finished (`finish_reason` "stop") is checked against the schema sent, and one that breaks it is
recorded as `schema_honoured: false` and warned about once, naming the server; the runtime
validates every decision either way, so such a reply is a counted `invalid_decision`.

Every way the server can fail is one ProviderError (a counted `provider_error`) naming the server:
nothing listening, no answer within `timeout` (per read) or the whole-call `deadline` (however
slowly the bytes come), an HTTP error, a body that is not a chat completion, a reply without
token usage (the runtime could not charge the budget). Two failures are the user's: a model the
server does not have (HTTP 404) and a key the server refuses (401/403) are LabErrors.

Each call's provenance (recorded by `labkit.model.record.Recorder`): the base URL's host, the
model asked for, the model id the server reports in its reply, `system_fingerprint` where given,
the schema mode, and the openai/httpx versions; `provenance()` adds `/v1/models`' `owned_by`.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from labkit.core.errors import LabError, ProviderError
from labkit.core.runtime import MAX_SECONDS
from labkit.core.timeouts import TIMED_OUT, call_within
from labkit.model.backend import Reply, Request, token_count, versions

SCHEMA_MODES = ("auto", "json_schema", "json_object", "none")
PLACEHOLDER_KEY = "labkit-local"  # sent when OPENAI_API_KEY is unset: local servers want none
TIMEOUT = 60.0  # seconds per read (and connect); a room server under load answers in seconds
DEADLINE = 120.0  # seconds per whole call, however the server paces its bytes
MAX_RETRIES = 0  # see the module docstring
LLAMA_CPP_PYTHON_OWNER = "me"  # what llama_cpp.server reports as owned_by in /v1/models


class SchemaIgnored(UserWarning):
    """A server accepted the decision schema and answered outside it."""


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:200]


def _server_message(error: Any) -> str:
    """The server's own error text from an openai.APIStatusError, on one line, cut to 200 chars."""
    body = getattr(error, "body", None)
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        text = inner.get("message") if isinstance(inner, Mapping) else inner
        if isinstance(text, str) and text.strip():
            return " ".join(text.split())[:200]
    return " ".join(str(getattr(error, "message", "") or error).split())[:200]


class OpenAIBackend:
    """A model behind an OpenAI-compatible chat-completions server (see the module docstring).

    Connects on the first request. `schema_mode` (default `LABKIT_OPENAI_SCHEMA`, else ``auto``)
    is one of SCHEMA_MODES; LabError for anything else or a blank model name.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        schema_mode: str | None = None,
        timeout: float = TIMEOUT,
        deadline: float = DEADLINE,
        environ: Mapping[str, str] | None = None,
    ):
        env = os.environ if environ is None else environ
        if not isinstance(model, str) or not model.strip():
            raise LabError(
                "openai:<model> needs a model name, e.g. openai:smollm2 (the name the server lists)"
            )
        for name, value in (("timeout", timeout), ("deadline", deadline)):
            if not (type(value) in (int, float) and 0 < value <= MAX_SECONDS):
                raise ValueError(
                    f"OpenAIBackend: {name} must be a positive number of seconds up to {MAX_SECONDS:g}"
                )
        mode = (schema_mode or env.get("LABKIT_OPENAI_SCHEMA", "").strip() or "auto").lower()
        if mode not in SCHEMA_MODES:
            raise LabError(
                f"LABKIT_OPENAI_SCHEMA={mode!r} is not a schema mode: use {', '.join(SCHEMA_MODES)}"
            )
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url or env.get("OPENAI_BASE_URL", "").strip() or None
        if self.base_url is not None and "://" not in self.base_url:
            self.base_url = f"http://{self.base_url}"
        self.api_key = api_key or env.get("OPENAI_API_KEY", "").strip() or PLACEHOLDER_KEY
        self.timeout = timeout
        self.deadline = deadline
        self.asked_mode = mode
        self.mode: str | None = None if mode == "auto" else mode
        self._client: Any = None
        self._listed: dict[str, Any] | None = None
        self._provenance: dict[str, Any] | None = None
        self._warned = False

    @property
    def host(self) -> str:
        """The server's address as it is shown: scheme://host:port of the base URL."""
        url = self.base_url or "https://api.openai.com/v1"
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, timeout=self.timeout, max_retries=MAX_RETRIES
            )
        return self._client

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run one client call within the deadline; every server failure is a ProviderError.

        As in the Ollama backend, the call runs on a daemon thread that is abandoned at the
        deadline (httpx cannot interrupt a read from outside); the next call gets a new client.
        """
        value = call_within(self._call_now, (what, fn), self.deadline)
        if value is TIMED_OUT:
            self._client = None  # the abandoned thread keeps the old connection
            raise ProviderError(f"the server at {self.host} did not finish {what} within {self.deadline:g} s")
        return value

    def _call_now(self, what: str, fn: Callable[[], Any]) -> Any:
        import openai

        try:
            return fn()
        except openai.APITimeoutError:  # before APIConnectionError: it is one
            raise ProviderError(
                f"the server at {self.host} did not answer {what} within {self.timeout:g} s"
            ) from None
        except openai.APIConnectionError as error:
            cause = error.__cause__ or error
            raise ProviderError(
                f"cannot reach the server at {self.host} ({_first_line(cause)}): is it running, "
                "and is OPENAI_BASE_URL right?"
            ) from None
        except (openai.AuthenticationError, openai.PermissionDeniedError) as error:
            raise LabError(
                f"the server at {self.host} refused the API key (HTTP {error.status_code}: "
                f"{_server_message(error)}): set OPENAI_API_KEY to a key it accepts"
            ) from None
        except openai.NotFoundError as error:
            if what == "chat":
                raise LabError(
                    f"the server at {self.host} has no model {self.model!r} "
                    f"(HTTP 404: {_server_message(error)}): use a name from its /v1/models, "
                    "and check that OPENAI_BASE_URL ends in /v1"
                ) from None
            raise ProviderError(f"the server at {self.host} answered {what} with HTTP 404") from None
        except openai.APIStatusError as error:
            raise ProviderError(
                f"the server at {self.host} answered {what} with HTTP {error.status_code}: "
                f"{_server_message(error)}"
            ) from None
        except (openai.APIError, ValueError, TypeError, AttributeError) as error:
            raise ProviderError(
                f"the server at {self.host} answered {what} with something that is not a {what} reply "
                f"({_first_line(error)})"
            ) from None

    def listed(self) -> dict[str, Any]:
        """`/v1/models` once: {"ids": [...], "owned_by": of this model, or of the only one}."""
        if self._listed is None:
            page = self._call("models", lambda: self.client.models.list())
            models = list(getattr(page, "data", None) or [])
            ids = [m.id for m in models if isinstance(getattr(m, "id", None), str)]
            mine = next((m for m in models if getattr(m, "id", None) == self.model), None)
            if mine is None and len(models) == 1:
                mine = models[0]
            owner = getattr(mine, "owned_by", None) if mine is not None else None
            self._listed = {"ids": ids[:20], "owned_by": owner if isinstance(owner, str) else None}
        return self._listed

    def schema_mode(self) -> str:
        """The way schemas are sent (see the module docstring); asks /v1/models once in auto mode."""
        if self.mode is None:
            owner = self.listed()["owned_by"]
            self.mode = "json_object" if owner == LLAMA_CPP_PYTHON_OWNER else "json_schema"
        return self.mode

    def provenance(self) -> dict[str, Any]:
        """Backend, server host, model asked for, what /v1/models says, schema mode, versions."""
        if self._provenance is None:
            listed = self.listed()
            self._provenance = {
                "backend": self.name,
                "host": self.host,
                "model": self.model,
                "owned_by": listed["owned_by"],
                "schema_mode": self.mode or self.asked_mode,
                "timeout_s": self.timeout,
                "deadline_s": self.deadline,
                "max_retries": MAX_RETRIES,
                "versions": versions("openai", "httpx2", "httpx"),
            }
        return self._provenance

    @staticmethod
    def response_format(mode: str, schema: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The `response_format` body for `schema` in `mode` (None: send none)."""
        if schema is None or mode == "none":
            return None
        if mode == "json_object":
            return {"type": "json_object", "schema": dict(schema)}
        return {"type": "json_schema", "json_schema": {"name": "decision", "schema": dict(schema)}}

    def _create(self, request: Request, mode: str) -> Any:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": list(request.messages),
            "temperature": request.temperature,
            "seed": request.seed,
            "max_tokens": request.max_tokens,
            "stream": False,
        }
        response_format = self.response_format(mode, request.schema)
        if response_format is not None:
            body["response_format"] = response_format
        return self._call("chat", lambda: self.client.chat.completions.create(**body))

    def complete(self, request: Request) -> Reply:
        start = time.perf_counter()
        mode = self.schema_mode() if request.schema is not None else (self.mode or self.asked_mode)
        try:
            response = self._create(request, mode)
        except ProviderError as error:
            message = str(error)
            if not (
                self.asked_mode == "auto"
                and mode == "json_schema"
                and " HTTP " in message
                and "json_schema" in message
            ):
                raise
            self.mode = mode = "json_object"  # it named json_schema: take the other form
            if self._provenance is not None:
                self._provenance["schema_mode"] = mode
            response = self._create(request, mode)
        latency = time.perf_counter() - start
        text, finish, counts = self._parse(response)
        extra: dict[str, Any] = {
            "call_provenance": self._call_provenance(response, mode, request, text, finish)
        }
        return Reply(
            text=text,
            prompt_tokens=counts["prompt_tokens"],
            completion_tokens=counts["completion_tokens"],
            latency_s=latency,
            finish_reason=finish,
            extra=extra,
        )

    def _parse(self, response: Any) -> tuple[str, str, dict[str, int]]:
        where = f"the server at {self.host}"
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ProviderError(
                f"{where} answered chat with something that is not a chat completion (no choices)"
            )
        message = getattr(choices[0], "message", None)
        text = getattr(message, "content", None)
        if not isinstance(text, str):
            raise ProviderError(f"{where} answered chat without message content")
        finish = getattr(choices[0], "finish_reason", None)
        usage = getattr(response, "usage", None)
        if usage is None:
            raise ProviderError(f"{where} answered chat without token usage, so the budget cannot be charged")
        counts = {
            field: token_count(getattr(usage, field, None), f"{where} reported usage.{field}")
            for field in ("prompt_tokens", "completion_tokens")
        }
        return text, finish if isinstance(finish, str) and finish else "stop", counts

    def _call_provenance(
        self, response: Any, mode: str, request: Request, text: str, finish: str
    ) -> dict[str, Any]:
        served = getattr(response, "model", None)
        found: dict[str, Any] = {
            "served_model": served if isinstance(served, str) else None,
            "schema_mode": mode,
        }
        fingerprint = getattr(response, "system_fingerprint", None)
        if isinstance(fingerprint, str) and fingerprint:
            found["system_fingerprint"] = fingerprint[:200]
        if request.schema is not None and mode != "none" and finish == "stop":
            honoured = _validates(text, request.schema)
            found["schema_honoured"] = honoured
            if not honoured and not self._warned:
                self._warned = True
                warnings.warn(
                    f"{self.name} at {self.host} answered outside the decision schema it was sent "
                    f"(response_format {mode}): this server seems to ignore it, so its replies are not "
                    "constrained; the runtime still validates each one (try LABKIT_OPENAI_SCHEMA="
                    f"{'json_schema' if mode == 'json_object' else 'json_object'})",
                    SchemaIgnored,
                    stacklevel=2,
                )
        return found


def _validates(text: str, schema: Mapping[str, Any]) -> bool:
    """Whether `text` is one JSON value valid under `schema` (how a constrained server answers)."""
    import jsonschema

    try:
        value = json.loads(text)
    except ValueError:
        return False
    try:
        return jsonschema.Draft202012Validator(dict(schema)).is_valid(value)
    except (jsonschema.SchemaError, RecursionError):
        return False
