"""The bounded decision loop: the policy proposes; this runtime validates, executes and stops.

`run(task, decide, ...)` asks `decide(task, observations)` for one action per turn, checks
it against the tools' declared arguments, runs at most one tool per turn, and ends with a
result whose `stop` is always one of STOP_REASONS — never an exception raised by the policy.

Stop reasons, in the order they are checked each turn:

- ``aborted``          the caller's `abort` event was set (checked before each turn, and
                       again after each decision, so a decision made while the signal
                       arrived is never executed)
- ``deadline``         the episode's total time ran out (before a turn, or while waiting)
- ``step_timeout``     one decision took longer than `step_timeout`; no tool runs
- ``provider_error``   the policy's model backend failed (any OSError: ConnectionError,
                       TimeoutError, labkit's ProviderError)
- ``budget``           the usage the policy reported (tokens or cost) passed `budget`;
                       that decision is not executed
- ``invalid_decision`` not an object, an unknown action, missing/extra fields, wrong types,
                       or the policy raised anything else
- ``unread_citation``  a final answer cites a source that no tool returned in this run
- ``final``            a valid final answer
- ``tool_limit``       a tool was proposed after `max_tools` tool calls
- ``turn_limit``       `max_turns` decisions were made without a final answer

A tool that raises is an observation (`{"error": ...}`), not a crash. LabError (a
configuration mistake such as an unrecorded replay request) is re-raised: it is the lab's
fault, not the policy's, and must not be counted as a policy outcome.

A policy that calls a model reports each decision's usage by setting `last_usage`
(a mapping with `prompt_tokens`, `completion_tokens` and optionally `cost`) on itself;
the runtime reads it after every decision and charges it against `budget`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labkit.errors import LabError

STOP_REASONS = (
    "final",
    "invalid_decision",
    "provider_error",
    "tool_limit",
    "turn_limit",
    "unread_citation",
    "step_timeout",
    "deadline",
    "budget",
    "aborted",
)
MAX_VALUE_LENGTH = 2000
FINAL_FIELDS = ("answer", "citation")

Decide = Callable[[Any, list[dict[str, Any]]], Any]


@dataclass(frozen=True)
class Tool:
    """One action a policy may propose.

    `params` maps each argument name to its kind: ``"str"`` (non-blank, at most 2,000
    characters) or ``"number"`` (a finite int or float, not a bool). Every argument is
    required and no other is accepted. `call(**args)` does the work; whatever it raises
    becomes an observation. If `source` is true, a result's `id` may later be cited.
    """

    name: str
    params: Mapping[str, str]
    call: Callable[..., Any]
    source: bool = False
    description: str = ""


@dataclass(frozen=True)
class Budget:
    """An episode's spending cap, counted from the usage the policy reports."""

    tokens: int | None = None
    cost: float | None = None


class Result(dict):
    """The outcome of one episode: a plain dict with the seed's keys, rendered as a table.

    Keys: stop, answer, citation, detail, trace, turns, tool_calls, elapsed, usage.
    """

    def _repr_html_(self) -> str:
        from labkit.display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        from labkit.display import trace_text

        return trace_text(self)


def validate_decision(value: Any, tools: Mapping[str, Tool]) -> dict[str, Any]:
    """Return `value` if it is a well-formed action for `tools`; raise ValueError otherwise.

    Accepted shapes: ``{"action": "final", "answer": str, "citation": str}`` (answer not
    blank; citation may be empty) and ``{"action": <tool>, <each declared param>}``.
    """
    if not isinstance(value, dict):
        raise ValueError(f"decision must be an object, got {type(value).__name__}")
    action = value.get("action")
    if action == "final":
        params: Mapping[str, str] = dict.fromkeys(FINAL_FIELDS, "str")
    elif isinstance(action, str) and action in tools:
        params = tools[action].params
    else:
        known = ", ".join([*tools, "final"])
        raise ValueError(f"unknown action {action!r} (known: {known})")
    expected = {"action", *params}
    if set(value) != expected:
        missing, extra = sorted(expected - set(value)), sorted(set(value) - expected)
        parts = [f"missing {missing}"] * bool(missing) + [f"unexpected {extra}"] * bool(extra)
        raise ValueError(f"{action}: " + ", ".join(parts))
    for name, kind in params.items():
        arg = value[name]
        if kind == "number":
            if type(arg) not in (int, float) or not math.isfinite(arg):
                raise ValueError(f"{action}: {name} must be a finite number")
        elif not isinstance(arg, str) or len(arg) > MAX_VALUE_LENGTH:
            raise ValueError(f"{action}: {name} must be a string of at most {MAX_VALUE_LENGTH} characters")
        elif not arg.strip() and not (action == "final" and name == "citation"):
            raise ValueError(f"{action}: {name} must not be blank")
    return value


_TIMED_OUT = object()


def _decide_within(decide: Decide, task: Any, observations: list, timeout: float | None) -> Any:
    """Call the policy; with a timeout, wait for it on a daemon thread and stop waiting.

    A Python thread cannot be killed: a policy that overruns keeps running in the
    background, but its answer is ignored and no tool runs on its behalf.
    """
    if timeout is None:
        return decide(task, observations)
    box: list[Any] = []

    def target() -> None:
        try:
            value = decide(task, observations)
            box.append((True, value, time.perf_counter()))
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            box.append((False, error, time.perf_counter()))

    worker = threading.Thread(target=target, daemon=True, name="labkit-decide")
    start = time.perf_counter()
    worker.start()
    worker.join(max(timeout, 0.0))
    # Judged by when the decision finished, not by when this thread woke up: on a loaded
    # machine join() can return late, after a decision that itself overran the limit.
    if not box or box[0][2] - start > timeout:
        return _TIMED_OUT
    ok, value, _ = box[0]
    if not ok:
        raise value
    return value


def _usage_of(decide: Decide) -> dict[str, float]:
    usage = getattr(decide, "last_usage", None)
    if not isinstance(usage, Mapping):
        return {}
    out = {}
    for key in ("prompt_tokens", "completion_tokens", "cost"):
        value = usage.get(key)
        if type(value) in (int, float) and math.isfinite(value) and value >= 0:
            out[key] = value
    return out


@dataclass
class _Episode:
    start: float
    trace: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: int = 0
    usage: dict[str, float] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
    )

    def charge(self, entry: dict[str, Any], usage: Mapping[str, float]) -> None:
        """Add one decision's reported usage to the episode and note its tokens in the trace."""
        if usage:
            entry["tokens"] = int(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
            for key, value in usage.items():
                self.usage[key] += value

    def stop(self, reason: str, turns: int, detail: str = "", **final: Any) -> Result:
        return Result(
            stop=reason,
            answer=final.get("answer"),
            citation=final.get("citation"),
            detail=detail,
            trace=self.trace,
            turns=turns,
            tool_calls=self.tool_calls,
            elapsed=time.perf_counter() - self.start,
            usage=self.usage,
        )


def _check_limits(max_turns: object, max_tools: object, step_timeout: object, deadline: object) -> None:
    if type(max_turns) is not int or not 1 <= max_turns <= 8:
        raise ValueError("max_turns must be an int in 1..8")
    if type(max_tools) is not int or not 0 <= max_tools <= 6:
        raise ValueError("max_tools must be an int in 0..6")
    for name, value in (("step_timeout", step_timeout), ("deadline", deadline)):
        if value is not None and (type(value) not in (int, float) or not value > 0):
            raise ValueError(f"{name} must be a positive number of seconds or None")


def run(
    task: Any,
    decide: Decide,
    *,
    tools: Mapping[str, Tool] | None = None,
    max_turns: int = 4,
    max_tools: int = 3,
    step_timeout: float | None = None,
    deadline: float | None = None,
    budget: Budget | None = None,
    abort: threading.Event | None = None,
) -> Result:
    """Run one bounded episode of `decide` on `task`; see the module docstring for stops.

    `tools` defaults to the docuctl search/read tools for the task's version (search with
    alias expansion and top_k=2, as in lab 01). Raises ValueError only for limits outside
    their ranges (max_turns 1..8, max_tools 0..6, positive timeouts) — the caller's mistake.
    Guarantees: turns <= max_turns, tool_calls <= max_tools, no tool runs for a decision
    that was invalid, late, over budget, or proposed after the limit.
    """
    _check_limits(max_turns, max_tools, step_timeout, deadline)
    if tools is None:
        from labkit.controllers import docuctl_tools

        tools = docuctl_tools(task)
    episode = _Episode(start=time.perf_counter())
    trace, observations, sources = episode.trace, [], set()
    for turn in range(1, max_turns + 1):
        if abort is not None and abort.is_set():
            return episode.stop("aborted", turn - 1, "abort signal set before the turn")
        turn_start = time.perf_counter()
        wait, deadline_binds = step_timeout, False
        if deadline is not None:
            left = deadline - (turn_start - episode.start)
            if left <= 0:
                return episode.stop("deadline", turn - 1, f"deadline of {deadline} s reached")
            deadline_binds = step_timeout is None or left < step_timeout
            wait = left if deadline_binds else step_timeout
        entry: dict[str, Any] = {"turn": turn}
        try:
            proposal = _decide_within(decide, task, list(observations), wait)
        except LabError:
            raise
        except OSError as error:
            trace.append(entry | {"error": f"{type(error).__name__}: {error}"})
            return episode.stop("provider_error", turn, f"{type(error).__name__}: {error}")
        except Exception as error:  # noqa: BLE001 - any policy failure is a counted stop
            detail = (
                str(error)
                if isinstance(error, ValueError | TypeError | KeyError)
                else (f"policy raised {type(error).__name__}: {error}")
            )
            # A model that answered with something unparseable still spent its tokens.
            episode.charge(entry, _usage_of(decide))
            trace.append(entry | {"elapsed": time.perf_counter() - turn_start, "error": detail})
            return episode.stop("invalid_decision", turn, detail)
        entry["elapsed"] = time.perf_counter() - turn_start
        if proposal is _TIMED_OUT:
            trace.append(entry | {"error": "no decision in time"})
            if deadline_binds:
                return episode.stop("deadline", turn, f"deadline of {deadline} s reached")
            return episode.stop("step_timeout", turn, f"no decision within {step_timeout} s")
        episode.charge(entry, _usage_of(decide))
        entry["decision"] = proposal
        trace.append(entry)
        if abort is not None and abort.is_set():
            # Cancelled while the policy was deciding: its action must not run.
            return episode.stop("aborted", turn, "abort signal set during the decision; not executed")
        if budget is not None:
            spent = episode.usage["prompt_tokens"] + episode.usage["completion_tokens"]
            if budget.tokens is not None and spent > budget.tokens:
                return episode.stop("budget", turn, f"{spent:g} tokens used, budget {budget.tokens}")
            if budget.cost is not None and episode.usage["cost"] > budget.cost:
                return episode.stop("budget", turn, f"cost {episode.usage['cost']:g}, budget {budget.cost}")
        try:
            decision = validate_decision(proposal, tools)
        except ValueError as error:
            entry["error"] = str(error)
            return episode.stop("invalid_decision", turn, str(error))
        action = decision["action"]
        if action == "final":
            citation = decision["citation"]
            # A citation counts only if a source tool returned that id in this run.
            if citation and citation not in sources:
                return episode.stop("unread_citation", turn, f"{citation!r} was not read in this run")
            return episode.stop("final", turn, answer=decision["answer"], citation=citation)
        if episode.tool_calls == max_tools:
            return episode.stop("tool_limit", turn, f"{action} proposed after {max_tools} tool calls")
        tool = tools[action]
        try:
            result = tool.call(**{name: decision[name] for name in tool.params})
        except LabError:
            raise
        except Exception as error:  # noqa: BLE001 - a failing tool is an observation
            detail = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
            result = {"error": detail}
        episode.tool_calls += 1
        if tool.source and isinstance(result, dict) and isinstance(result.get("id"), str):
            sources.add(result["id"])
        entry["result"] = result
        entry["elapsed"] = time.perf_counter() - turn_start
        observations.append({"action": action, "result": result})
    return episode.stop("turn_limit", max_turns, f"no final answer in {max_turns} turns")
