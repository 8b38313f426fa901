"""The bounded decision loop: the policy proposes; this runtime validates, executes and stops.

`run(task, decide, tools=...)` asks `decide(task, observations)` for one action per turn,
checks it against the tools' declared arguments (`labkit.core.decisions`), runs at most one
tool per turn, and ends with a `Result` whose `stop` is always one of STOP_REASONS — never
an exception raised by the policy.

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
the runtime reads it once after every decision and charges it against `budget`. A
reported value that is not a number from 0 to MAX_NUMBER is ignored, never trusted.

Every decision is copied into plain values of exact types before it is checked, and the
trace and the tools get that copy (`plain_decision`). The names this module used to
define itself (Tool, validate_decision, Result, STOP_REASONS, ...) are still importable
from here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from labkit.core.decisions import (
    FINAL_FIELDS,
    MAX_NUMBER,
    MAX_VALUE_LENGTH,
    Decide,
    Tool,
    plain_decision,
    validate_decision,
)
from labkit.core.errors import LabError
from labkit.core.result import STOP_REASONS, Result
from labkit.core.timeouts import TIMED_OUT, call_within

__all__ = [
    "FINAL_FIELDS",
    "MAX_NUMBER",
    "MAX_SECONDS",
    "MAX_VALUE_LENGTH",
    "STOP_REASONS",
    "Budget",
    "Decide",
    "Result",
    "Tool",
    "plain_decision",
    "run",
    "validate_decision",
]

MAX_SECONDS = 86_400.0  # the longest step_timeout or deadline: a day


@dataclass(frozen=True)
class Budget:
    """An episode's spending cap, counted from the usage the policy reports.

    `tokens`: an int from 0 to MAX_NUMBER, or None; `cost`: a number from 0 to MAX_NUMBER,
    or None. Anything else is the caller's mistake (ValueError).
    """

    tokens: int | None = None
    cost: float | None = None

    def __post_init__(self) -> None:
        if self.tokens is not None and not (type(self.tokens) is int and 0 <= self.tokens <= MAX_NUMBER):
            raise ValueError(f"Budget: tokens must be an int from 0 to {MAX_NUMBER} or None")
        if self.cost is not None and not (type(self.cost) in (int, float) and 0 <= self.cost <= MAX_NUMBER):
            raise ValueError(f"Budget: cost must be a number from 0 to {MAX_NUMBER} or None")


def run(
    task: Any,
    decide: Decide,
    *,
    tools: Mapping[str, Tool],
    max_turns: int = 4,
    max_tools: int = 3,
    step_timeout: float | None = None,
    deadline: float | None = None,
    budget: Budget | None = None,
    abort: threading.Event | None = None,
) -> Result:
    """Run one bounded episode of `decide` on `task` with `tools`; see the module docstring for stops.

    Raises ValueError only for limits outside their ranges (max_turns 1..8, max_tools 0..6,
    timeouts in (0, MAX_SECONDS]) — the caller's mistake — and re-raises a LabError.
    Guarantees: turns <= max_turns, tool_calls <= max_tools, no tool runs for a decision
    that was invalid, late, over budget, or proposed after the limit.
    """
    _check_limits(max_turns, max_tools, step_timeout, deadline)
    episode = _Episode(task, decide, tools, start=time.perf_counter())
    try:
        for turn in range(1, max_turns + 1):
            _check_abort(abort, turn - 1, "abort signal set before the turn")
            turn_start = time.perf_counter()
            wait, late = _time_left(episode, turn - 1, step_timeout, deadline)
            entry: dict[str, Any] = {"turn": turn}
            episode.trace.append(entry)  # filled in as the turn goes
            proposal = _ask_policy(episode, entry, wait, late, turn_start)
            _charge(episode, entry)
            proposal, unreadable = _plain(proposal, entry)
            _check_abort(abort, turn, "abort signal set during the decision; not executed")
            _check_budget(episode, budget, turn)
            decision = _validate(proposal, unreadable, tools, entry)
            if decision["action"] == "final":
                return _final(episode, decision, turn)
            if episode.tool_calls == max_tools:
                raise _Stop("tool_limit", turn, f"{decision['action']} proposed after {max_tools} tool calls")
            _execute(episode, entry, decision, turn_start)
    except _Stop as stop:
        return episode.result(stop)
    return episode.result(_Stop("turn_limit", max_turns, f"no final answer in {max_turns} turns"))


class _Stop(Exception):  # noqa: N818 - it is how an episode ends, not an error
    """The end of an episode, raised by the step that decides it; `run` returns it as a Result.

    One exception, caught once in `run`, instead of a "did this step stop?" test after every
    step: `run` then reads as the list of its steps.
    """

    def __init__(self, reason: str, turns: int, detail: str = "", **final: str) -> None:
        super().__init__(reason, turns, detail)
        self.reason, self.turns, self.detail, self.final = reason, turns, detail, final


@dataclass
class _Episode:
    """What one episode carries from turn to turn."""

    task: Any
    decide: Decide
    tools: Mapping[str, Tool]
    start: float
    trace: list[dict[str, Any]] = field(default_factory=list)
    observations: list[dict[str, Any]] = field(default_factory=list)  # what each decision sees
    sources: set[str] = field(default_factory=set)  # ids a source tool returned: the citable ones
    tool_calls: int = 0
    usage: dict[str, float] = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
    )

    def result(self, stop: _Stop) -> Result:
        return Result(
            stop=stop.reason,
            answer=stop.final.get("answer"),
            citation=stop.final.get("citation"),
            detail=stop.detail,
            trace=self.trace,
            turns=stop.turns,
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
        if value is not None and not (type(value) in (int, float) and 0 < value <= MAX_SECONDS):
            raise ValueError(f"{name} must be a positive number of seconds, at most {MAX_SECONDS:g}, or None")


def _check_abort(abort: threading.Event | None, turns: int, detail: str) -> None:
    if abort is not None and abort.is_set():
        raise _Stop("aborted", turns, detail)


def _time_left(
    episode: _Episode, turns: int, step_timeout: float | None, deadline: float | None
) -> tuple[float | None, tuple[str, str]]:
    """(how long to wait for this decision, the stop if it does not come in that time).

    The wait is the step timeout, or what is left of the deadline if that is sooner; None
    means no limit. Stops with `deadline` if none is left before the turn starts.
    """
    on_timeout = ("step_timeout", f"no decision within {step_timeout} s")
    if deadline is None:
        return step_timeout, on_timeout
    left = deadline - (time.perf_counter() - episode.start)
    if left <= 0:
        raise _Stop("deadline", turns, f"deadline of {deadline} s reached")
    if step_timeout is not None and step_timeout <= left:
        return step_timeout, on_timeout
    return left, ("deadline", f"deadline of {deadline} s reached")


def _ask_policy(
    episode: _Episode, entry: dict[str, Any], wait: float | None, late: tuple[str, str], turn_start: float
) -> Any:
    """The policy's next proposal, as it returned it, if it came within `wait` seconds.

    Stops with `late` if it did not (no tool runs for it), `provider_error` for an OSError,
    `invalid_decision` for anything else it raised. A LabError is re-raised.
    """
    turn = entry["turn"]
    try:
        proposal = _decide_within(episode.decide, episode.task, list(episode.observations), wait)
    except LabError:
        raise
    except OSError as error:
        entry["error"] = f"{type(error).__name__}: {error}"
        raise _Stop("provider_error", turn, entry["error"]) from error
    except Exception as error:  # noqa: BLE001 - any policy failure is a counted stop
        if isinstance(error, ValueError | TypeError | KeyError):
            detail = str(error)
        else:
            detail = f"policy raised {type(error).__name__}: {error}"
        _charge(episode, entry)  # a model that answered with something unparseable still spent its tokens
        entry["elapsed"], entry["error"] = time.perf_counter() - turn_start, detail
        raise _Stop("invalid_decision", turn, detail) from error
    entry["elapsed"] = time.perf_counter() - turn_start
    if proposal is TIMED_OUT:
        entry["error"] = "no decision in time"
        reason, detail = late
        raise _Stop(reason, turn, detail)
    return proposal


def _decide_within(decide: Decide, task: Any, observations: list, timeout: float | None) -> Any:
    """`decide(task, observations)`, or TIMED_OUT if it took longer than `timeout` seconds.

    Without a timeout the policy runs in the caller's thread; with one, on a worker thread
    that the runtime stops waiting for (`labkit.core.timeouts`).
    """
    if timeout is None:
        return decide(task, observations)
    return call_within(decide, (task, observations), timeout)


def _charge(episode: _Episode, entry: dict[str, Any]) -> None:
    """Add the usage the policy reported for this decision to the episode; note its tokens."""
    usage = _usage_of(_reported(episode.decide))
    if usage:
        entry["tokens"] = int(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
        for key, value in usage.items():
            episode.usage[key] += value


def _reported(decide: Decide) -> Any:
    """The policy's `last_usage` as it stands (read once), or None if it cannot be read."""
    try:
        return getattr(decide, "last_usage", None)
    except Exception:  # noqa: BLE001 - a report that cannot be read is no report
        return None


def _usage_of(usage: Any) -> dict[str, float]:
    """The usage a policy reported (its `last_usage`): values from 0 to MAX_NUMBER only."""
    try:
        if not isinstance(usage, Mapping):
            return {}
        out = {}
        for key in ("prompt_tokens", "completion_tokens", "cost"):
            value = usage.get(key)
            if type(value) in (int, float) and 0 <= value <= MAX_NUMBER:
                out[key] = value
        return out
    except Exception:  # noqa: BLE001 - a report that cannot be read is no report
        return {}


def _plain(proposal: Any, entry: dict[str, Any]) -> tuple[Any, str]:
    """(the proposal as plain values, "") noted in the trace, or (it, why it cannot be read).

    An unreadable proposal stops only after the abort and budget checks, like any other
    invalid one.
    """
    try:
        entry["decision"] = plain_decision(proposal)
    except Exception as error:  # noqa: BLE001 - e.g. a dict another thread resized meanwhile
        return proposal, str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    return entry["decision"], ""


def _check_budget(episode: _Episode, budget: Budget | None, turn: int) -> None:
    if budget is None:
        return
    spent = episode.usage["prompt_tokens"] + episode.usage["completion_tokens"]
    if budget.tokens is not None and spent > budget.tokens:
        raise _Stop("budget", turn, f"{spent:g} tokens used, budget {budget.tokens}")
    if budget.cost is not None and episode.usage["cost"] > budget.cost:
        raise _Stop("budget", turn, f"cost {episode.usage['cost']:g}, budget {budget.cost}")


def _validate(proposal: Any, unreadable: str, tools: Mapping[str, Tool], entry: dict[str, Any]) -> dict:
    """The proposal if it is a well-formed decision for `tools`; else stop with `invalid_decision`."""
    problem = unreadable
    if not problem:
        try:
            return validate_decision(proposal, tools)
        except ValueError as error:
            problem = str(error)
    entry["error"] = problem
    raise _Stop("invalid_decision", entry["turn"], problem)


def _final(episode: _Episode, decision: dict[str, Any], turn: int) -> Result:
    """A final answer, released only if its citation (when it has one) was read in this run."""
    citation = decision["citation"]
    if citation and citation not in episode.sources:
        raise _Stop("unread_citation", turn, f"{citation!r} was not read in this run")
    return episode.result(_Stop("final", turn, answer=decision["answer"], citation=citation))


def _execute(episode: _Episode, entry: dict[str, Any], decision: dict[str, Any], turn_start: float) -> None:
    """Run the decision's tool; its result (or the error it raised) becomes the next observation.

    A LabError is re-raised. A source tool's result `id` becomes citable.
    """
    action = decision["action"]
    tool = episode.tools[action]
    try:
        result = tool.call(**{name: decision[name] for name in tool.params})
    except LabError:
        raise
    except Exception as error:  # noqa: BLE001 - a failing tool is an observation
        detail = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        result = {"error": detail}
    episode.tool_calls += 1
    if tool.source and isinstance(result, dict) and isinstance(result.get("id"), str):
        episode.sources.add(result["id"])
    entry["result"] = result
    entry["elapsed"] = time.perf_counter() - turn_start
    episode.observations.append({"action": action, "result": result})
