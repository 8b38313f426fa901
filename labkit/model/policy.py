"""`ModelPolicy`: a decision-loop policy that asks a language model, through one seam.

`policy(task, observations)` turns the task and what the runtime observed so far into chat
messages, asks the backend for one JSON decision constrained at the policy's rung of the
constraint ladder (`labkit.model.constraints`: none, the tools' static schema, or a schema
of what is admissible in this episode's state), and returns the parsed JSON for the
runtime to validate. It is a policy like any scripted
one: it proposes; the runtime validates, executes and stops.

The conversation the model sees, turn by turn::

    system     instructions
    user       describe(task)
    assistant  its own reply of turn 1, verbatim
    user       observe(observation 1)          (what the runtime returned for that action)
    ...        one assistant/user pair per earlier turn

The runtime's observations carry each action's name and result, not its arguments, so the
policy keeps its own replies of the current episode (an episode starts when observations
is empty). Verbatim replies also keep every turn's prompt an extension of the previous
one, which is what lets the local backend reuse its cached prompt tokens.

Contract: sets `last_usage = {"prompt_tokens", "completion_tokens"}` after every reply
(the runtime charges it against the budget) and `last_reply` (the backend's `Reply`).
Raises ProviderError when the backend fails (counted `provider_error`), ValueError when
the reply is not JSON (counted `invalid_decision`), LabError for a setup mistake.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from labkit.core.errors import LabError
from labkit.core.runtime import Tool
from labkit.model.backend import Backend, Message, Reply, Request
from labkit.model.constraints import StateRules, admissible_schema, check_rung, first_json_object
from labkit.model.factory import backend_from_env
from labkit.model.schema import MAX_CHARS, decision_schema, parse_reply

MAX_TOKENS = 160  # two 100-character strings of ordinary words fit; a valid SmolLM2 reply takes ~20-40


def observe_json(observation: Mapping[str, Any]) -> str:
    """How an observation is shown to the model: the action's name and its result as JSON."""
    result = json.dumps(observation.get("result"), ensure_ascii=False)
    return f"Result of {observation.get('action')}: {result}"


class ModelPolicy:
    """A policy whose decisions come from a model backend (see the module docstring).

    - `lab`: the namespace of its recorded trials (replay reads `fixtures/trials/<lab>.jsonl`
      and `<lab>-*.jsonl`).
    - `tools`: the runtime's tools; the decision schema is derived from their names and
      params, plus `final {answer, citation}`.
    - `instructions`: the system prompt. `describe(task)`: the first user message; required,
      because how a task is shown is the lab's choice, and this seam knows no lab (lab 02's is
      `labkit.decision_loop.model_policy.describe_docuctl`). `observe(observation)`: how each
      result is shown (default: ``Result of <action>: <JSON>``).
    - `backend`: default `backend_from_env()` (`LABKIT_MODEL`, replay when unset).
    - `temperature`, `seed`, `max_tokens`: sent with every request; `trial`: which trial
      of a case this policy is running (part of the replay key).
    - `rung`: the constraint ladder's rung (`labkit.model.constraints`): L0 no schema, L1 the
      static schema (default), L2/L3 a schema rebuilt each turn from the episode's
      observations by `rules` (the lab's `StateRules`, required for L2 and L3).
    """

    def __init__(
        self,
        lab: str,
        tools: Mapping[str, Tool],
        instructions: str,
        describe: Callable[[Any], str],
        backend: Backend | None = None,
        temperature: float = 0.0,
        seed: int = 0,
        trial: int = 0,
        *,
        observe: Callable[[Mapping[str, Any]], str] | None = None,
        max_tokens: int = MAX_TOKENS,
        max_chars: int | None = MAX_CHARS,
        rung: str = "L1",
        rules: StateRules | None = None,
    ):
        if not isinstance(lab, str) or not lab.strip() or "/" in lab:
            raise LabError(f"ModelPolicy: lab must be a non-blank name without '/', got {lab!r}")
        if type(temperature) not in (int, float) or not 0 <= temperature <= 2:
            raise LabError(f"ModelPolicy: temperature must be a number in 0..2, got {temperature!r}")
        for name, value, low in (("seed", seed, 0), ("trial", trial, 0), ("max_tokens", max_tokens, 1)):
            if type(value) is not int or value < low:
                raise LabError(f"ModelPolicy: {name} must be an int >= {low}, got {value!r}")
        try:
            self.schema = decision_schema(tools, max_chars=max_chars)
        except ValueError as error:
            raise LabError(f"ModelPolicy: {error}") from None
        try:
            self.rung = check_rung(rung, rules)
        except LabError as error:
            raise LabError(f"ModelPolicy: {error}") from None
        self.rules = rules
        self.max_chars = max_chars
        self.lab = lab
        self.tools = tools
        self.instructions = instructions
        self.describe = describe
        self.observe = observe or observe_json
        self.backend = backend_from_env() if backend is None else backend
        self.temperature = float(temperature)
        self.seed = seed
        self.trial = trial
        self.max_tokens = max_tokens
        self.last_usage: dict[str, int] | None = None
        self.last_reply: Reply | None = None
        self._replies: list[str] = []

    def __repr__(self) -> str:
        return (
            f"ModelPolicy(lab={self.lab!r}, backend={self.backend.name!r}, "
            f"rung={self.rung!r}, temperature={self.temperature:g}, seed={self.seed}, trial={self.trial})"
        )

    def messages(self, task: Any, observations: list[Mapping[str, Any]]) -> list[Message]:
        """The chat messages for the next decision (see the module docstring)."""
        messages = [
            {"role": "system", "content": self.instructions},
            {"role": "user", "content": self.describe(task)},
        ]
        for i, observation in enumerate(observations):
            said = self._replies[i] if i < len(self._replies) else None
            if said is None:  # observations this policy did not produce: show the action only
                said = json.dumps({"action": observation.get("action")})
            messages.append({"role": "assistant", "content": said})
            messages.append({"role": "user", "content": self.observe(observation)})
        return messages

    def schema_for(self, task: Any, observations: list[Mapping[str, Any]]) -> dict[str, Any] | None:
        """The schema of the next decision at this policy's rung (None at L0; see constraints)."""
        if self.rung == "L1":
            return self.schema
        return admissible_schema(
            self.tools, self.rung, self.rules, task, observations, max_chars=self.max_chars
        )

    def request(self, task: Any, observations: list[Mapping[str, Any]]) -> Request:
        """The backend request for the next decision of `task` after `observations`."""
        case = getattr(task, "id", None)
        if not isinstance(case, str) or not case:
            raise LabError(f"ModelPolicy: the task needs a non-blank string id, got {case!r}")
        return Request(
            lab=self.lab,
            case=case,
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
        request = self.request(task, observations)
        reply = self.backend.complete(request)
        self.last_reply = reply
        self.last_usage = {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens}
        del replies[len(observations) :]
        replies.append(reply.text)
        return first_json_object(reply.text) if self.rung == "L0" else parse_reply(reply.text)
