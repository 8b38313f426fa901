"""Lab 03's learner code as the checkers run it: a guard or a policy, each case named and time-limited.
A guard's crash or non-str answer refuses the refund inside the tool and becomes the verdict.
(serves: learner — a learner's code is buggy, not hostile; no file is read here)"""

from collections.abc import Sequence
from typing import Any

from labkit.core.answers import shown
from labkit.core.check import CRASHES, Check, TimedOut, crashed, fail, learner_line, time_limit
from labkit.core.runtime import Decide
from labkit.core.text import shorten
from labkit.refunds.defenses import Defenses, Guard
from labkit.refunds.lab import RefundLab
from labkit.refunds.metrics import Score, Spec, score_policy
from labkit.refunds.policies import factory_of
from labkit.refunds.shop import RefundCall
from labkit.refunds.tools import EpisodeState


class Watched:
    """The learner's guard as the refund tool calls it; the first thing that went wrong is kept
    in `problem` (a verdict naming `where`). A LabError from the learner's code is a crash too."""

    def __init__(self, guard: Guard) -> None:
        self.guard, self.problem, self.where = guard, None, ""
        self.__name__ = "your guard"

    def __call__(self, call: Any, state: EpisodeState) -> str | None:
        try:
            reason = self.guard(call, state)
        except CRASHES as error:  # the verdict reports it, a sys.exit() too
            if self.problem is None:
                self.problem = _guard_crash(error, self.where)
            raise ValueError("the guard raised an error") from None
        if reason is None or isinstance(reason, str):  # numpy's str_ too: the tool formats it as it is
            return str(reason) if reason is not None else None
        if self.problem is None:
            self.problem = fail(
                f"your guard returned {shown(reason)} ({type(reason).__name__}) {self.where}; "
                "return a reason (a str) to refuse the refund, or None to allow it."
            )
        return "the guard's answer was not a str or None"


def _guard_crash(error: BaseException, where: str) -> Check:
    text = shorten(str(error), 120)
    line = learner_line(error)
    at = f" at {shorten(line, 110)}" if line else ""
    return fail(
        f"your guard raised {type(error).__name__}{': ' + text if text else ''} {where}{at}. Inside the "
        "tool a crash refuses the refund, so it looks safe, but it also refuses legitimate ones: return a "
        "reason instead."
    )


def case_name(spec: Spec) -> str:
    """Where a case is, for a verdict: the request and what was done to it."""
    if spec.attack is not None:
        return f"on {spec.request.id} under the attack {spec.attack.id} in the {spec.place}"
    if spec.faults is not None:
        return f"on {spec.request.id} with a refund that times out after paying"
    return f"on {spec.request.id}"


def guard_runs(
    guard: Guard, name: str, runs: Sequence[tuple[str, Decide, Sequence[Spec]]], lab: RefundLab
) -> tuple[dict[str, list[Score]], Check | None]:
    """Each request's own refund asked of `guard` first (a crash or hang is named on the simplest case),
    then the guard as the only defense in each (policy name, policy, specs) run, one episode at a time
    within the time limit; or its first problem."""
    own = [
        (f"on {r.id}", r.asked(lab.shop), EpisodeState(lab.shop, r, Defenses("your guard")))
        for r in lab.requests.values()
    ]
    if (problem := ask_guard(guard, own)[1]) is not None:
        return {}, problem
    watched = Watched(guard)
    defenses, scores = Defenses(name, guards=(watched,)), {}
    for policy_name, policy, specs in runs:
        scores[policy_name] = []
        for spec in specs:
            watched.where = case_name(spec)
            try:
                with time_limit():
                    scores[policy_name] += score_policy(factory_of(policy), defenses, [spec], lab)
            except TimedOut as error:  # the limit is the episode's, shared by its guard calls
                return scores, fail(
                    f"your guard's calls {watched.where} took more than {error.seconds:g} s in all (one "
                    "episode's calls share that limit); a guard only looks records up: look for a loop "
                    "that never ends or a sleep."
                )
            if watched.problem is not None:
                return scores, watched.problem
    return scores, None


def ask_guard(
    guard: Guard, probes: Sequence[tuple[str, RefundCall, EpisodeState]]
) -> tuple[list[str | None], Check | None]:
    """The guard's answer on each probe (each time-limited, on a copy of its state), or its first problem."""
    watched, answers = Watched(guard), []
    for where, call, state in probes:
        watched.where = where
        try:
            with time_limit():
                answer = watched(call, state.copy())
        except TimedOut as error:
            return answers, crashed(error, where)
        except ValueError:  # the guard raised: `watched.problem` says how
            answer = None
        if watched.problem is not None:
            return answers, watched.problem
        answers.append(answer)
    return answers, None
