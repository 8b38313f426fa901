"""The bounded decision loop: the policy proposes; this runtime validates, executes and stops.

`run(task, decide, tools=...)` asks `decide(task, observations)` for one action per turn, takes
it as plain JSON data and validates it (`labkit.core.decisions`), runs at most one tool per
turn, and ends with a `Result` whose `stop` is one of STOP_REASONS (`Stop.FINAL`, ...; serves: policy),
checked each turn in order:

- ``aborted``: the caller's `abort` was set (before a turn, or during the decision: not executed)
- ``deadline``: the episode's total time ran out; ``step_timeout``: one decision came too late
- ``provider_error``: the policy's model backend failed (any OSError)
- ``budget``: the usage the policy reported passed `budget`; that decision is not executed (guards:
  lesson, not policy: it holds for an honest reporter, such as labkit's model policies, whose server's
  counts `labkit.model.backend` checks; a hostile policy would report nothing)
- ``invalid_decision``: not plain JSON, not an object, an unknown action, missing or extra
  fields, wrong types, the policy raised anything else, or it reported a usage that is not a count
- ``unread_citation``: a final answer cites a source no tool returned in this run
- ``final``; ``tool_limit`` (a tool proposed after `max_tools` calls); ``turn_limit``

A tool that raises is an observation (`{"error": ...}`); a LabError (the lab's configuration, not
the policy) is re-raised. A policy reports each decision's usage in its `last_usage`
(`prompt_tokens`, `completion_tokens`, `cost`), and the runtime counts it as reported."""

import copy
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

from labkit.core.decisions import FINAL_FIELDS, MAX_NUMBER, Decide, Tool, plain_decision, validate_decision
from labkit.core.errors import LabError
from labkit.core.result import STOP_REASONS, Result
from labkit.core.stops import Stop
from labkit.core.timeouts import TIMED_OUT, call_within

# The runtime's interface includes the names it is built of: FINAL_FIELDS, STOP_REASONS, Tool, ...
__all__ = [
    "FINAL_FIELDS",
    "MAX_NUMBER",
    "MAX_SECONDS",
    "STOP_REASONS",
    "Budget",
    "Decide",
    "Result",
    "Tool",
    "run",
    "validate_decision",
]

MAX_SECONDS = 86_400.0  # the longest step_timeout or deadline: a day


@dataclass(frozen=True)
class Budget:
    """An episode's cap on the usage the policy reports: `tokens` (an int), `cost`; 0..MAX_NUMBER or None."""

    tokens: int | None = None
    cost: float | None = None

    def __post_init__(self) -> None:  # serves: user — a budget out of range is one line
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
    """One bounded episode of `decide` on `task` with `tools`: turns <= max_turns (1..8),
    tool_calls <= max_tools (0..6), and no tool runs for a decision that was invalid, late, over
    budget or past the limit. ValueError for limits out of range; a LabError is re-raised."""
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
            decision, problem = _checked(proposal, tools, entry)
            _check_abort(abort, turn, "abort signal set during the decision; not executed")
            _check_budget(episode, budget, turn)
            if problem:
                entry["error"] = problem
                raise _End(Stop.INVALID_DECISION, turn, problem)
            if decision["action"] == "final":
                return _final(episode, decision, turn)
            if episode.tool_calls == max_tools:
                raise _End(
                    Stop.TOOL_LIMIT, turn, f"{decision['action']} proposed after {max_tools} tool calls"
                )
            _execute(episode, entry, decision, turn_start)
    except _End as stop:
        return episode.result(stop)
    return episode.result(_End(Stop.TURN_LIMIT, max_turns, f"no final answer in {max_turns} turns"))


class _End(Exception):  # noqa: N818 - it is how an episode ends, not an error
    """The end of an episode, raised by the step that decides it; `run` returns it as a Result."""

    def __init__(self, reason: str, turns: int, detail: str = "", **final: str) -> None:
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

    def result(self, stop: _End) -> Result:
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
    # serves: user — limits out of range are one line, before any turn
    if type(max_turns) is not int or not 1 <= max_turns <= 8:
        raise ValueError("max_turns must be an int in 1..8")
    if type(max_tools) is not int or not 0 <= max_tools <= 6:
        raise ValueError("max_tools must be an int in 0..6")
    for name, value in (("step_timeout", step_timeout), ("deadline", deadline)):
        if value is not None and not (type(value) in (int, float) and 0 < value <= MAX_SECONDS):
            raise ValueError(f"{name} must be a positive number of seconds, at most {MAX_SECONDS:g}, or None")


def _check_abort(abort: threading.Event | None, turns: int, detail: str) -> None:
    if abort is not None and abort.is_set():
        raise _End(Stop.ABORTED, turns, detail)


def _time_left(
    episode: _Episode, turns: int, step_timeout: float | None, deadline: float | None
) -> tuple[float | None, tuple[str, str]]:
    """(how long to wait for this decision or None, the stop if it does not come in that time):
    the step timeout, or what is left of the deadline if sooner. Stops if none is left."""
    on_timeout = (Stop.STEP_TIMEOUT, f"no decision within {step_timeout} s")
    if deadline is None:
        return step_timeout, on_timeout
    left = deadline - (time.perf_counter() - episode.start)
    if left <= 0:
        raise _End(Stop.DEADLINE, turns, f"deadline of {deadline} s reached")
    if step_timeout is not None and step_timeout <= left:
        return step_timeout, on_timeout
    return left, (Stop.DEADLINE, f"deadline of {deadline} s reached")


def _ask_policy(
    episode: _Episode, entry: dict[str, Any], wait: float | None, late: tuple[str, str], turn_start: float
) -> Any:
    """The policy's next proposal if it came within `wait` seconds; else stops with `late`,
    `provider_error` for an OSError, `invalid_decision` for anything else (a LabError is re-raised)."""
    # A deep copy: a policy that changes what it was shown (pops a hit from a result) changes its own
    # copy, never the episode's record (serves: policy).
    turn, decide = entry["turn"], episode.decide
    arguments = (episode.task, copy.deepcopy(episode.observations))
    try:
        proposal = decide(*arguments) if wait is None else call_within(decide, arguments, wait)
    except LabError:  # serves: user — the lab's configuration, not the policy: re-raised
        raise
    except OSError as error:
        entry["error"] = f"{type(error).__name__}: {error}"
        raise _End(Stop.PROVIDER_ERROR, turn, entry["error"]) from error
    except Exception as error:  # noqa: BLE001 - any policy failure is a counted stop
        plain = isinstance(error, ValueError | TypeError | KeyError)  # a reply that did not parse
        detail = str(error) if plain else f"policy raised {type(error).__name__}: {error}"
        _charge(episode, entry)  # a model that answered with something unparseable still spent its tokens
        entry["elapsed"], entry["error"] = time.perf_counter() - turn_start, detail
        raise _End(Stop.INVALID_DECISION, turn, detail) from error
    entry["elapsed"] = time.perf_counter() - turn_start
    if proposal is TIMED_OUT:
        entry["error"] = "no decision in time"
        reason, detail = late
        raise _End(reason, turn, detail)
    return proposal


def _charge(episode: _Episode, entry: dict[str, Any]) -> None:
    """Add the usage the policy reported for this decision, as reported: a budget is only as good as the
    report. labkit's ModelPolicy reports the model server's own counts, which the backend checks
    (`labkit.model.backend`); a policy without `last_usage` (a plain function) spends nothing.

    Refused (serves: learner — a learner's own policy class is buggy, and `run` must still end with a stop
    reason): a `last_usage` that is not a mapping, or a count that is not a real number from 0 to
    MAX_NUMBER (None, NaN, -5, 10**400) ends the episode as ``invalid_decision``; unchecked, NaN and
    huge ints escaped `run` as ValueError and OverflowError, and a negative count lowered the spend."""
    reported = getattr(episode.decide, "last_usage", None)
    if reported is None:
        return
    usage, problem = _usage_counts(reported)
    if problem:
        entry["error"] = problem
        raise _End(Stop.INVALID_DECISION, entry["turn"], problem)
    entry["tokens"] = int(usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0))
    for key, value in usage.items():
        episode.usage[key] += value


def _usage_counts(reported: object) -> tuple[dict[str, Any], str]:
    """(the counts `reported` holds, ""), or ({}, what is wrong with them)."""
    if not isinstance(reported, Mapping):
        return {}, f"last_usage must be a mapping of counts, got {type(reported).__name__}"
    usage = {key: reported[key] for key in ("prompt_tokens", "completion_tokens", "cost") if key in reported}
    for key, value in usage.items():
        if isinstance(value, bool) or not isinstance(value, Real) or not 0 <= value <= MAX_NUMBER:
            return {}, f"last_usage[{key!r}] must be a number from 0 to {MAX_NUMBER}, got {value!r}"
    return usage, ""


def _checked(proposal: Any, tools: Mapping[str, Tool], entry: dict[str, Any]) -> tuple[dict, str]:
    """(the proposal as plain JSON data, noted in the trace and validated, ""), or ({}, what is wrong)."""
    try:
        entry["decision"] = plain_decision(proposal)
        if not isinstance(proposal, dict):  # named as the policy returned it: JSON makes a tuple a list
            raise ValueError(f"decision must be an object, got {type(proposal).__name__}")
        return validate_decision(entry["decision"], tools), ""
    except ValueError as error:
        return {}, str(error)


def _check_budget(episode: _Episode, budget: Budget | None, turn: int) -> None:
    budget = budget or Budget()
    spent = episode.usage["prompt_tokens"] + episode.usage["completion_tokens"]
    if budget.tokens is not None and spent > budget.tokens:
        raise _End(Stop.BUDGET, turn, f"{spent:g} tokens used, budget {budget.tokens}")
    if budget.cost is not None and episode.usage["cost"] > budget.cost:
        raise _End(Stop.BUDGET, turn, f"cost {episode.usage['cost']:g}, budget {budget.cost}")


def _final(episode: _Episode, decision: dict[str, Any], turn: int) -> Result:
    """A final answer, released only if its citation (when it has one) was read in this run."""
    citation = decision["citation"]
    if citation and citation not in episode.sources:
        raise _End(Stop.UNREAD_CITATION, turn, f"{citation!r} was not read in this run")
    return episode.result(_End(Stop.FINAL, turn, answer=decision["answer"], citation=citation))


def _execute(episode: _Episode, entry: dict[str, Any], decision: dict[str, Any], turn_start: float) -> None:
    """Run the decision's tool: its result (or its error) is the next observation, a source's `id` citable."""
    action, tool = decision["action"], episode.tools[decision["action"]]
    try:
        result = tool.call(**{name: decision[name] for name in tool.params})
    except LabError:  # serves: user — the lab's configuration, not the policy: re-raised
        raise
    except Exception as error:  # noqa: BLE001 - a failing tool is an observation
        result = {
            "error": str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
        }
    episode.tool_calls += 1
    if tool.source and isinstance(result, dict) and isinstance(result.get("id"), str):
        episode.sources.add(result["id"])
    entry["result"], entry["elapsed"] = result, time.perf_counter() - turn_start
    episode.observations.append({"action": action, "result": result})
