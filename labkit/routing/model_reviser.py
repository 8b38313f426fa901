"""The feedback experiment with a model as the reviser, through lab 02's seam (replayed by default).

In the review loop (`experiments.loop_graph`), `revise` is a `ModelReviser` asking
SmolLM2-135M-Instruct (or `LABKIT_MODEL`'s model) to shorten the announcement; the review stays
code. Only the router differs: ``without feedback`` tells it "Revise it again.", ``with
feedback`` "33 characters, limit is 26. Revise it again." Visit n of `revise` is turn n of its
variant's task (``announcement+no-feedback`` / ``announcement+feedback``), so (lab, case, trial,
turn) names one recorded call. Changing _INSTRUCTIONS, the messages, DRAFT, LIMIT or the policy's
options makes replay stop with a ReplayMiss naming case and turn. Record afresh (then move the
file over fixtures/trials/routing-smollm2.jsonl; appending would keep two answers per request)::

    LABKIT_MODEL=local LABKIT_RECORD=/tmp/routing-smollm2.jsonl python -m labkit.routing.model_reviser

`ModelJudge` asks the same model whether its text is within the limit (held to "yes"/"no"),
as the router in place of `len`; recorded with the argument ``judge`` into
fixtures/trials/routing-smollm2-judge.jsonl (only the calls whose case starts ``judge+`` or
``announcement+judged``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

import pandas as pd

from labkit.core.errors import LabError
from labkit.model import Backend, ModelPolicy, backend_from_env, trial_files
from labkit.model.constraints import StateRules
from labkit.routing.clock import FakeClock
from labkit.routing.experiments import DRAFT, LIMIT, compare_revisers, loop_graph, summary_row
from labkit.routing.plan import Context
from labkit.routing.result import RunResult
from labkit.routing.route import Next

REVISER_LAB = "routing"
RECORDED = {"max_visits": 5, "limit": LIMIT}  # what fixtures/trials/routing-smollm2.jsonl was made with
VARIANTS = {"without feedback": "no-feedback", "with feedback": "feedback"}  # variant -> task id suffix
# A worked example on another sentence, not a placeholder: measured with SmolLM2-135M, an
# instruction showing `"answer": "<the shortened announcement>"` made it reply with that
# placeholder, 28 characters, on all ten visits of both variants.
_INSTRUCTIONS = """\
You shorten announcements. Keep the meaning, use fewer characters. Reply with exactly one \
JSON object, as in the example: the shortened announcement is the answer.

Example.
User: Shorten this announcement to at most 20 characters:
The new mobile app is now available for everyone
Assistant: {"action": "final", "answer": "New app for everyone", "citation": "none"}"""
_AGAIN = "Revise it again."
_MAX_WORDS = 12  # 4,095 deletions: the enum of admissible answers stays a small grammar
_RUNGS = ("L1", "L2")  # L1: any text (the static schema); L2: only deletions of words from the draft


@dataclass(frozen=True)
class _Announcement:
    """The reviser's task: `id` keys the replay, `text` is the draft, `limit` is stated to it."""

    id: str
    text: str
    limit: int


def _task_text(task: _Announcement) -> str:
    """The first user message: the draft and the limit (both variants are told the limit)."""
    return f"Shorten this announcement to at most {task.limit} characters:\n{task.text}"


def observe(observation: Mapping[str, Any]) -> str:
    """What the reviser is told on a later visit: the router's feedback, if any, then _AGAIN."""
    feedback = observation.get("result")
    return f"{feedback}. {_AGAIN}" if feedback else _AGAIN


def _answer_text(decision: Any) -> str:
    """The revised text in a model decision; ValueError (the revise job fails) if it has none."""
    answer = decision.get("answer") if isinstance(decision, dict) else None
    if isinstance(answer, str) and decision.get("action") == "final":
        return answer
    raise ValueError(f"the model's decision has no answer text: {decision!r}")


def _policy(
    owner: Any, instructions: str, describe: Any, answers: Any, rung: str, observe: Any = None
) -> ModelPolicy:
    """A policy for one-answer decisions with `owner`'s backend, temperature, seed and trial; at rung
    L2 the answer is one of `answers(task, observations)` and the citation "none"."""
    rules = None
    if rung == "L2":
        rules = StateRules(
            slots={("final", "answer"): answers, ("final", "citation"): lambda task, seen: ["none"]}
        )
    options = (owner.backend, owner.temperature, owner.seed, owner.trial)
    return ModelPolicy(
        REVISER_LAB, {}, instructions, describe, *options, observe=observe, rung=rung, rules=rules
    )


@dataclass
class ModelReviser:
    """A `revise` job backed by a model, one per variant; `history` lists the text of every visit.

    Visit n passes one observation per earlier visit (the Goto's feedback, None for `back_to`),
    so the policy asks turn n: its `task.id` and turn are the replay key.
    """

    variant: str
    backend: Backend | None = None
    limit: int = LIMIT
    rung: str = "L1"
    min_cut: int = 0
    temperature: float = 0.0  # the recordings: temperature 0, seed 0, trial 0
    seed: int = 0
    trial: int = 0
    history: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        case = f"announcement+{VARIANTS.get(self.variant, self.variant)}"
        if self.min_cut:
            case += f"+cut{self.min_cut}"
        self.task = _Announcement(case, DRAFT, self.limit)
        self.policy = _policy(self, _INSTRUCTIONS, _task_text, self.deletions, self.rung, observe)
        self.observations: list[dict[str, Any]] = []

    def deletions(self, task: _Announcement, observations: Any = ()) -> list[str]:
        """L2's admissible answers: deletions of the last text this reviser wrote (the draft first)."""
        return deletions_of(self.history[-1] if self.history else task.text, self.min_cut)

    def __call__(self, ctx: Context) -> str:
        if ctx.visit == 1:
            self.observations = []
        else:
            self.observations.append({"action": "final", "result": ctx.feedback})
        text = _answer_text(self.policy(self.task, list(self.observations)))
        self.history.append(text)
        return text


def deletions_of(text: str, min_cut: int = 0) -> list[str]:
    """Every non-empty subsequence of the words of `text` with at least `min_cut` words cut,
    longest first (with `min_cut=0` the text itself too: whether a reviser repeats itself is
    measured). A one-word text is its own only deletion."""
    words = text.split()
    if len(words) > _MAX_WORDS:
        raise LabError(f"a deletion-constrained draft may have at most {_MAX_WORDS} words, got {len(words)}")
    longest = max(len(words) - min_cut, 1)
    return [" ".join(kept) for size in range(longest, 0, -1) for kept in combinations(words, size)]


def recorded() -> bool:
    """True when replay has a recording for this lab (`fixtures/trials/routing*.jsonl`)."""
    return bool(trial_files(REVISER_LAB))


def live() -> bool:
    """True when `LABKIT_MODEL` names a live backend (local, ollama:…), not replay."""
    return os.environ.get("LABKIT_MODEL", "replay").strip().split(":", 1)[0] not in ("", "replay")


def source(reviser: ModelReviser) -> str:
    """Where the reviser's last reply came from: the recording and its model, or the live backend."""
    reply = reviser.policy.last_reply
    if reply is None:
        return "no reply yet"
    extra = reply.extra or {}
    if "recorded" not in extra:
        return f"live {reviser.policy.backend.name}, temperature {reviser.policy.temperature:g}"
    provenance = extra.get("provenance", {})
    return (
        f"replayed from {extra['recorded'].split(':')[0]} ({provenance.get('backend')} "
        f"{provenance.get('model', '')}, temperature {reviser.policy.temperature:g})"
    )


def model_feedback_experiment(
    max_visits: int = RECORDED["max_visits"],
    limit: int = RECORDED["limit"],
    backend: Backend | None = None,
    rung: str = "L1",
    min_cut: int = 0,
    temperature: float = 0.0,
    seed: int = 0,
    trial: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, RunResult], dict[str, ModelReviser]]:
    """`experiments.feedback_experiment` with a `ModelReviser` in each variant; also the revisers.

    Rung ``L1`` lets the model write any text, ``L2`` only a deletion of words from its current
    draft, cutting at least `min_cut` words. `backend` defaults to `backend_from_env()`; a
    request never recorded is a ReplayMiss (a LabError).
    """
    if rung not in _RUNGS:
        raise LabError(f"the model reviser runs at rung L1 or L2, not {rung!r}")
    if min_cut and rung != "L2":
        raise LabError("min_cut applies to the deletion-constrained reviser (rung L2) only")
    backend = backend_from_env() if backend is None else backend
    options = {"limit": limit, "rung": rung, "min_cut": min_cut, "temperature": temperature, "seed": seed}
    revisers = {name: ModelReviser(name, backend=backend, trial=trial, **options) for name in VARIANTS}
    return (*compare_revisers(revisers, max_visits, limit), revisers)


# What each level of control lets the reviser write: (label, rung, min_cut). Recorded for
# all three in fixtures/trials/routing-smollm2*.jsonl.
CONTROLS = (
    ("any text (L1)", "L1", 0),
    ("deletions only (L2)", "L2", 0),
    ("must cut a word (L2, min_cut=1)", "L2", 1),
)


def control_table(
    backend: Backend | None = None, *, temperature: float = 0.0, seed: int = 0, k: int = 1
) -> tuple[pd.DataFrame, dict[str, dict[str, ModelReviser]]]:
    """The model feedback experiment at each level of CONTROLS, a row per (level, variant), and the
    revisers per level. `k` trials each (trial t with seed `seed + t`; with k > 1 the trial is
    a third index level and the revisers are the last trial's)."""
    if type(k) is not int or k < 1:
        raise LabError(f"k (trials per variant) must be a positive int, got {k!r}")
    rows, revisers = [], {}
    for trial in range(k):
        for label, rung, min_cut in CONTROLS:
            chars, summary, _, revisers[label] = model_feedback_experiment(
                backend=backend,
                rung=rung,
                min_cut=min_cut,
                temperature=temperature,
                seed=seed + trial,
                trial=trial,
            )
            texts = [reviser.history for reviser in revisers[label].values()]
            for variant in VARIANTS:
                rows.append(
                    {
                        "reviser may write": label,
                        "variant": variant,
                        "trial": trial,
                        "characters per visit": " ".join(c for c in chars[variant] if c != "-"),
                        "status": summary.loc[variant, "status"],
                        "published": summary.loc[variant, "published"],
                        "same texts both variants": texts[0] == texts[1],
                    }
                )
    index = ["reviser may write", "variant"] + (["trial"] if k > 1 else [])
    return pd.DataFrame(rows).set_index(index).drop(columns="trial", errors="ignore"), revisers


# The model as the judge: the same model, asked whether its own text meets the limit.
_JUDGE_INSTRUCTIONS = """\
You check announcements against a length limit. Count the characters of the announcement, \
spaces included. Reply with exactly one JSON object, as in the examples: the answer is "yes" \
if it has at most that many characters, "no" if it has more.

Example.
User: You wrote this announcement:
The new mobile app is now available for everyone
Is it at most 20 characters long?
Assistant: {"action": "final", "answer": "no", "citation": "none"}

Example.
User: You wrote this announcement:
New app for everyone
Is it at most 20 characters long?
Assistant: {"action": "final", "answer": "yes", "citation": "none"}"""
_JUDGE_ANSWERS = ("yes", "no")
JUDGE_FEEDBACK = "the reviewer says it is too long"  # all a yes/no judge can say: it gives no count


def _judge_question(task: _Announcement) -> str:
    """The judge's one question: the text it is shown as its own, and the limit."""
    return f"You wrote this announcement:\n{task.text}\nIs it at most {task.limit} characters long?"


@dataclass
class ModelJudge:
    """A router for `review` whose criterion is the model's "yes" or "no" (rung L2), not `len`.

    Each call is a fresh one-turn conversation, case ``judge+<name>+<n>``; `calls` holds one row
    per question (text, characters, what `len` says, what the model said).
    """

    name: str
    backend: Backend | None = None
    limit: int = LIMIT
    temperature: float = 0.0
    seed: int = 0
    trial: int = 0
    calls: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.policy = _policy(
            self, _JUDGE_INSTRUCTIONS, _judge_question, lambda task, seen: list(_JUDGE_ANSWERS), "L2"
        )

    def judge(self, text: str) -> bool:
        """True when the model says `text` is within the limit (one recorded call)."""
        task = _Announcement(f"judge+{self.name}+{len(self.calls) + 1}", text, self.limit)
        says = _answer_text(self.policy(task, []))
        if says not in _JUDGE_ANSWERS:
            raise ValueError(f"the judge answered {says!r}, not yes or no")
        self.calls.append(
            {
                "text": text,
                "characters": len(text),
                f"len(text) <= {self.limit}": len(text) <= self.limit,
                "the model says": says,
            }
        )
        return says == "yes"

    def __call__(self, verdict: Mapping[str, Any]) -> Next:
        if self.judge(verdict["text"]):
            return Next.Continue
        return Next.back_to_with("revise", JUDGE_FEEDBACK)


def _judged_texts() -> list[str]:
    """The draft and every text the scripted reviser writes with feedback: 45, 33, 28, 24 characters."""
    graph, reviser = loop_graph(feedback=True)
    graph.run(max_visits=RECORDED["max_visits"], clock=FakeClock())
    return [DRAFT, *reviser.history]


def judge_table(backend: Backend | None = None, *, temperature: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """The judge against `len` on `_judged_texts()`: one row per text (recorded at temperature 0)."""
    judge = ModelJudge(
        "texts",
        backend=backend_from_env() if backend is None else backend,
        temperature=temperature,
        seed=seed,
    )
    for text in _judged_texts():
        judge.judge(text)
    return pd.DataFrame(judge.calls).set_index("text")


def judge_experiment(
    backend: Backend | None = None,
    *,
    max_visits: int = RECORDED["max_visits"],
    temperature: float = 0.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, RunResult], ModelJudge]:
    """The model reviser (rung L1, told why) in the review loop under `within_limit` and under a
    `ModelJudge` of the same model: a row per router, the runs and the judge."""
    backend = backend_from_env() if backend is None else backend
    options = {"backend": backend, "temperature": temperature, "seed": seed}
    in_code = ModelReviser("with feedback", **options)
    graph, _ = loop_graph(feedback=True, reviser=in_code)
    runs = {f"len(text) <= {LIMIT} (code)": graph.run(max_visits=max_visits, clock=FakeClock())}
    judged, judge = ModelReviser("judged", **options), ModelJudge("loop", **options)
    graph, _ = loop_graph(reviser=judged, router=judge)
    runs["the same model as judge"] = graph.run(max_visits=max_visits, clock=FakeClock())
    rows = []
    for router, result in runs.items():
        row = summary_row(router, result)
        published = result.results.get("publish")
        row["published characters"] = len(published) if isinstance(published, str) else "-"
        rows.append(row)
    return pd.DataFrame(rows).set_index("variant").rename_axis("router"), runs, judge


def main() -> int:
    """Run the experiment with `LABKIT_MODEL`'s backend; print the tables and the wall time."""
    start = time.perf_counter()
    for arg in sys.argv[1:] or ["L1"]:  # L1, L2, L2+cut1 (at least one word cut per visit), or judge
        if arg == "judge":  # the model as the judge (see the module docstring)
            table, _, judge = judge_experiment()
            print(
                judge_table().to_string(),
                table.to_string(),
                pd.DataFrame(judge.calls).to_string(),
                sep="\n\n",
            )
            continue
        rung, _, cut = arg.partition("+cut")
        chars, summary, _, revisers = model_feedback_experiment(rung=rung, min_cut=int(cut or 0))
        print(f"rung {arg}", chars.to_string(), summary.to_string(), sep="\n\n")
        for name, reviser in revisers.items():
            print(f"{name}: {reviser.history}")
    print(f"wall time: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
