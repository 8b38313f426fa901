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
the runtime reads it after every decision and charges it against `budget`. A reported
value that is not a number from 0 to MAX_NUMBER is ignored, never trusted.

What a tool sees is what was checked. Before validation every decision is rebuilt from
plain values of exact types (`plain_decision`): a dict subclass becomes the dict it holds,
a str, int or float subclass becomes the exact str, int or float it holds, whatever its
`__eq__`, `__hash__` or `__str__` say. Validation then accepts only exact types, and the
trace and the tools get the rebuilt copy, never the policy's own object. A number a
decision carries is an int or float from -MAX_NUMBER to MAX_NUMBER (2**53, the largest
range in which a float holds every int exactly): 10**400, NaN and infinities are an
`invalid_decision`, not an OverflowError.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from labkit.core.errors import LabError

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
MAX_NUMBER = 2**53  # bound of every number in a decision, a reported usage or a budget
MAX_SECONDS = 86_400.0  # the longest step_timeout or deadline: a day
FINAL_FIELDS = ("answer", "citation")

Decide = Callable[[Any, list[dict[str, Any]]], Any]


@dataclass(frozen=True)
class Tool:
    """One action a policy may propose.

    `params` maps each argument name to its kind: ``"str"`` (an exact str, non-blank, at
    most 2,000 characters) or ``"number"`` (an exact int or float from -MAX_NUMBER to
    MAX_NUMBER: finite, not a bool). Every argument is required and no other is accepted.
    `call(**args)` does the work; whatever it raises becomes an observation. If `source`
    is true, a result's `id` may later be cited.
    """

    name: str
    params: Mapping[str, str]
    call: Callable[..., Any]
    source: bool = False
    description: str = ""


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


class Result(dict):
    """The outcome of one episode: a plain dict with the seed's keys, rendered as a table.

    Keys: stop, answer, citation, detail, trace, turns, tool_calls, elapsed, usage.
    """

    def _repr_html_(self) -> str:
        from labkit.core.display import result_html

        return result_html(self)

    def __repr__(self) -> str:
        from labkit.core.display import trace_text

        return trace_text(self)


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _shown(value: Any, limit: int = 60) -> str:
    """A short repr for an error message (a policy's key may be a megabyte long)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _exact(value: Any) -> Any:
    """A scalar as the exact str, int or float it holds; anything else unchanged.

    The base type's own method reads the stored value: a subclass's overrides of
    `__str__`, `__int__`, `__eq__` or `__hash__` are never called.
    """
    if type(value) in _SCALARS:
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):  # bool is final: a subclass of int here is never a bool
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value  # a list, an object...: validation accepts none of them, so no tool sees it


def _rebuild(value: dict) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in dict.items(value):  # the stored items, whatever a subclass's items() says
        if type(key) is not str:
            if not isinstance(key, str):
                raise ValueError(f"decision keys must be strings, got {type(key).__name__}")
            key = str.__str__(key)
        if key in out:
            raise ValueError(f"duplicate key {_shown(key)} in the decision")
        out[key] = _exact(item)
    return out


def plain_decision(value: Any) -> Any:
    """`value` rebuilt from plain values of exact types: what validation and the tools see.

    A dict (or dict subclass) becomes a new plain dict of its stored items, each key an exact
    str and each str, int or float value the exact value it holds; a lone str, int or float
    likewise. Other values are returned as they are (validation refuses them all). Raises
    ValueError for a key that is not a string, or two keys that hold the same string.
    """
    if type(value) is dict:
        for key, item in value.items():  # the common case, checked cheaply: already plain
            if type(key) is not str or type(item) not in _SCALARS:
                return _rebuild(value)
        return value.copy()
    if isinstance(value, dict):
        return _rebuild(value)
    return _exact(value)


def validate_decision(value: Any, tools: Mapping[str, Tool]) -> dict[str, Any]:
    """Return `value` if it is a well-formed action for `tools`; raise ValueError otherwise.

    Accepted shapes: ``{"action": "final", "answer": str, "citation": str}`` (answer not
    blank; citation may be empty) and ``{"action": <tool>, <each declared param>}``, built
    of exact types only (a plain dict, str keys, str/int/float values): `run` passes every
    decision through `plain_decision` first, so a subclass never gets this far there.
    """
    if type(value) is not dict:
        what = "a plain dict" if isinstance(value, dict) else "an object"
        raise ValueError(f"decision must be {what}, got {type(value).__name__}")
    action = value.get("action")
    if type(action) is str and action == "final":
        params: Mapping[str, str] = dict.fromkeys(FINAL_FIELDS, "str")
    elif type(action) is str and action in tools:
        params = tools[action].params
    else:
        known = ", ".join([*tools, "final"])
        raise ValueError(f"unknown action {_shown(action)} (known: {known})")
    keys = set(value)
    if keys != {"action", *params}:
        expected = {"action", *params}
        missing, extra = sorted(expected - keys), sorted(keys - expected, key=repr)
        parts = [f"missing {missing}"] * bool(missing) + [f"unexpected {_shown(extra, 200)}"] * bool(extra)
        raise ValueError(f"{action}: " + ", ".join(parts))
    for name, kind in params.items():
        arg = value[name]
        if kind == "number":
            # One range check refuses NaN and the infinities too (every comparison with NaN
            # is false); int against int is exact, so 10**400 never becomes a float.
            if not (type(arg) in (int, float) and -MAX_NUMBER <= arg <= MAX_NUMBER):
                raise ValueError(f"{action}: {name} must be a finite number from -2**53 to 2**53")
        elif type(arg) is not str or len(arg) > MAX_VALUE_LENGTH:
            raise ValueError(f"{action}: {name} must be a string of at most {MAX_VALUE_LENGTH} characters")
        elif not arg.strip() and not (action == "final" and name == "citation"):
            raise ValueError(f"{action}: {name} must not be blank")
    return value


_TIMED_OUT = object()


class _Call:
    __slots__ = ("fn", "args", "done", "ok", "value", "end")

    def __init__(self, fn: Callable[..., Any], args: tuple) -> None:
        self.fn, self.args, self.done = fn, args, threading.Event()
        self.ok, self.value, self.end = False, None, 0.0


_IDLE: list[_Worker] = []  # workers waiting for a decision; list.pop/append are atomic


class _Worker(threading.Thread):
    """A daemon thread that runs decisions one after another.

    Reused, because starting a thread per decision costs ~150 µs and a refund episode
    decides under a timeout at every turn. A worker whose decision overran is abandoned by
    the runtime; it becomes idle again only when that decision returns, if ever.
    """

    def __init__(self) -> None:
        super().__init__(name="labkit-decide", daemon=True)
        self.inbox: queue.SimpleQueue[_Call] = queue.SimpleQueue()
        self.start()

    def run(self) -> None:
        while True:
            call = self.inbox.get()
            try:
                call.value, call.ok = call.fn(*call.args), True
            except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
                call.value = error
            call.end = time.perf_counter()
            _IDLE.append(self)  # before waking the caller, so its next decision can reuse it
            call.done.set()
            del call


# A forked child inherits the list but not the threads in it.
os.register_at_fork(after_in_child=_IDLE.clear)


def _decide_within(decide: Decide, task: Any, observations: list, timeout: float | None) -> Any:
    """Call the policy; with a timeout, wait for it on a worker thread and stop waiting.

    A Python thread cannot be killed: a policy that overruns keeps running in the
    background, but its answer is ignored and no tool runs on its behalf.
    """
    if timeout is None:
        return decide(task, observations)
    try:
        worker = _IDLE.pop()
    except IndexError:
        worker = _Worker()
    call = _Call(decide, (task, observations))
    start = time.perf_counter()
    worker.inbox.put(call)
    # Judged by when the decision finished, not by when this thread woke up: on a loaded
    # machine the wait can return late, after a decision that itself overran the limit.
    if not call.done.wait(max(timeout, 0.0)) or call.end - start > timeout:
        return _TIMED_OUT
    if not call.ok:
        raise call.value
    return call.value


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
        if value is not None and not (type(value) in (int, float) and 0 < value <= MAX_SECONDS):
            raise ValueError(f"{name} must be a positive number of seconds, at most {MAX_SECONDS:g}, or None")


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
    their ranges (max_turns 1..8, max_tools 0..6, timeouts in (0, MAX_SECONDS]) — the
    caller's mistake.
    Guarantees: turns <= max_turns, tool_calls <= max_tools, no tool runs for a decision
    that was invalid, late, over budget, or proposed after the limit.
    """
    _check_limits(max_turns, max_tools, step_timeout, deadline)
    if tools is None:
        from labkit.baseline.controllers import docuctl_tools

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
            episode.charge(entry, _usage_of(_reported(decide)))
            trace.append(entry | {"elapsed": time.perf_counter() - turn_start, "error": detail})
            return episode.stop("invalid_decision", turn, detail)
        entry["elapsed"] = time.perf_counter() - turn_start
        if proposal is _TIMED_OUT:
            trace.append(entry | {"error": "no decision in time"})
            if deadline_binds:
                return episode.stop("deadline", turn, f"deadline of {deadline} s reached")
            return episode.stop("step_timeout", turn, f"no decision within {step_timeout} s")
        # Read once, as `_reported` reads it, inlined: most policies report nothing (None), and
        # then neither `_usage_of` nor `charge` would change anything (2.6 -> 2.2 µs a step,
        # benchmarks/runtime.py; tests/test_runtime.py pins the trace for every kind of report).
        try:
            reported = getattr(decide, "last_usage", None)
        except Exception:  # noqa: BLE001 - a report that cannot be read is no report
            reported = None
        if reported is not None:
            episode.charge(entry, _usage_of(reported))
        try:
            proposal, unreadable = plain_decision(proposal), ""
        except Exception as error:  # noqa: BLE001 - e.g. a dict another thread resized meanwhile
            unreadable = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        else:
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
        if unreadable:
            entry["error"] = unreadable
            return episode.stop("invalid_decision", turn, unreadable)
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
