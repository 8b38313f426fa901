"""`ModelPolicy`: a decision-loop policy that asks a language model for one JSON decision per turn.

The conversation: system `instructions`; user `describe(task)`; per earlier turn the model's own reply
verbatim (each prompt extends the last: a backend can reuse its cached tokens) and user `observe(...)`.
A reply with no decision raises ValueError (a counted invalid_decision)."""

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from labkit.core.errors import LabError
from labkit.core.runtime import Tool
from labkit.core.text import shorten
from labkit.model.backend import Backend, ChatRequest, Message, Reply
from labkit.model.constraints import MAX_CHARS, StateRules, admissible_schema, check_rung, decision_schema
from labkit.model.factory import backend_from_env

MAX_TOKENS = 160  # two 100-character strings of ordinary words fit; a valid SmolLM2 reply takes ~20-40
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def decision_in(text: str, rung: str) -> Any:
    """The JSON value that is the whole reply; at L0 (no grammar: prose may wrap it) the first JSON object
    in it, in a code fence if there is one. ValueError (a counted invalid_decision) if none.
    (serves: policy — a model's reply is adversarial)"""
    if rung != "L0":
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            raise ValueError(f"model reply is not JSON: {shorten(text, 80)!r}") from None
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(body) if ch == "{"):
        try:
            return decoder.raw_decode(body, start)[0]
        except (json.JSONDecodeError, RecursionError):
            continue
    raise ValueError(f"no JSON object in the model's reply: {shorten(text, 80)!r}")


def _observe_json(observation: Mapping[str, Any]) -> str:
    """How an observation is shown to the model: the action's name and its result as JSON."""
    result = json.dumps(observation.get("result"), ensure_ascii=False)
    return f"Result of {observation.get('action')}: {result}"


@dataclass(eq=False, repr=False)
class ModelPolicy:
    """Decisions from `backend` (default `backend_from_env()`) for the runtime to validate; `lab`, `trial`:
    the replay key; `rules` (`StateRules`): rungs L2, L3. Each reply sets `last_usage` and `last_reply`."""

    lab: str
    tools: Mapping[str, Tool]
    instructions: str
    describe: Callable[[Any], str]
    backend: Backend = None  # type: ignore[assignment]  # None: backend_from_env()
    temperature: float = 0.0
    seed: int = 0
    trial: int = 0
    _: KW_ONLY
    observe: Callable[[Mapping[str, Any]], str] = _observe_json
    max_tokens: int = MAX_TOKENS
    max_chars: int | None = MAX_CHARS
    rung: str = "L1"
    rules: StateRules | None = None
    last_usage: dict[str, int] | None = field(default=None, init=False)
    last_reply: Reply | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        try:
            self.schema = decision_schema(self.tools, max_chars=self.max_chars)
            check_rung(self.rung, self.rules)
        except (ValueError, LabError) as error:  # serves: user — a ModelPolicy set up wrong is one line
            raise LabError(f"ModelPolicy: {error}") from None
        self.backend = backend_from_env() if self.backend is None else self.backend
        self.temperature = float(self.temperature)  # 0 and 0.0 would fingerprint differently
        self._replies: list[str] = []

    def __repr__(self) -> str:
        return (
            f"ModelPolicy(lab={self.lab!r}, backend={self.backend.name!r}, "
            f"rung={self.rung!r}, temperature={self.temperature:g}, seed={self.seed}, trial={self.trial})"
        )

    def messages(self, task: Any, observations: list[Mapping[str, Any]]) -> list[Message]:
        messages = [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": self.describe(task)},
        ]
        for i, observation in enumerate(observations):
            # An observation this policy did not produce is shown by its action only.
            mine = self._replies[i] if i < len(self._replies) else None
            said = json.dumps({"action": observation.get("action")}) if mine is None else mine
            messages += [
                {"role": "assistant", "content": said},
                {"role": "user", "content": self.observe(observation)},
            ]
        return messages

    def schema_for(self, task: Any, observations: list[Mapping[str, Any]]) -> dict[str, Any] | None:
        return admissible_schema(
            self.tools, self.rung, self.rules, task, observations, max_chars=self.max_chars
        )

    def request(self, task: Any, observations: list[Mapping[str, Any]]) -> ChatRequest:
        return ChatRequest(
            lab=self.lab,
            case=task.id,
            trial=self.trial,
            turn=len(observations) + 1,
            messages=tuple(self.messages(task, observations)),
            schema=self.schema_for(task, observations),
            temperature=self.temperature,
            seed=self.seed,
            max_tokens=self.max_tokens,
            rung=self.rung,
        )

    def __call__(self, task: Any, observations: list[Mapping[str, Any]]) -> Any:
        if not observations:
            self._replies = []  # a new list: a late reply of an abandoned episode lands in the old one
        replies = self._replies
        self.last_usage = None
        reply = self.backend.complete(self.request(task, observations))
        self.last_reply = reply
        self.last_usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
        del replies[len(observations) :]
        replies.append(reply.text)
        return decision_in(reply.text, self.rung)
