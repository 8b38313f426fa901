"""The feedback experiment with a model as the reviser, through lab 02's seam (replayed by default).

`experiments.feedback_experiment` shows what the loop does with a *scripted* reviser that
ignores or uses feedback. This module asks the real question of a model: in the same
draft → revise → review → publish graph (`experiments.loop_graph`), `revise` is a
`ModelReviser` that asks SmolLM2-135M-Instruct (or whatever `LABKIT_MODEL` names) to
shorten the announcement. Only the router differs between the two variants:

- ``without feedback``: `Next.back_to("revise")`; the reviser is told "Revise it again.";
- ``with feedback``: `Next.back_to_with("revise", "33 characters, limit is 26")`; it is told
  "33 characters, limit is 26. Revise it again."

In both, the model sees its own previous replies (the conversation keeps them verbatim),
so the one thing that differs is the reason. The review stays code (`len`), never the model.

Replay keys. Each variant has its own task id (``announcement+no-feedback`` /
``announcement+feedback``) and its own `ModelPolicy`; visit *n* of `revise` is turn *n* of
that task (the policy counts turns as earlier observations + 1, and the reviser passes one
observation per earlier visit). So (lab ``routing``, case, trial 0, turn = visit) names one
recorded call, and its fingerprint pins the exact messages.

Recording (live; measured 4.9 s wall time on 2 cores for both variants, ten calls of
0.2-0.5 s each, model load included). Record into a fresh file outside `fixtures/trials/`,
then move it over the old one (appending would leave two answers for one request)::

    LABKIT_MODEL=local LABKIT_RECORD=/tmp/routing-smollm2.jsonl \\
        python -m labkit.routing.model_reviser
    mv /tmp/routing-smollm2.jsonl fixtures/trials/routing-smollm2.jsonl

Recorded (SmolLM2-135M-Instruct Q4_1, temperature 0, one trial per variant): the draft back
unchanged, 45 characters, on all ten visits; both runs end as dead_letter, nothing published.

Sampled trials (k=5 at T=0.7, plus T=0, every control) are `labkit.routing.reviser_trials`'.

Changing INSTRUCTIONS, `describe`, `observe`, DRAFT, LIMIT or the policy's options changes
the messages, and replay then stops with a ReplayMiss (a LabError) naming case and turn.
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
from labkit.routing.experiments import DRAFT, LIMIT, loop_graph, summary_row, visit_table
from labkit.routing.result import RunResult
from labkit.routing.scheduler import Context

LAB = "routing"
RECORDED = {"max_visits": 5, "limit": LIMIT}  # what fixtures/trials/routing-smollm2.jsonl was made with
VARIANTS = {"without feedback": "no-feedback", "with feedback": "feedback"}  # variant -> task id suffix
# A worked example on another sentence, not a placeholder: measured with SmolLM2-135M, an
# instruction showing `"answer": "<the shortened announcement>"` made it reply with that
# placeholder, 28 characters, on all ten visits of both variants.
INSTRUCTIONS = """\
You shorten announcements. Keep the meaning, use fewer characters. Reply with exactly one \
JSON object, as in the example: the shortened announcement is the answer.

Example.
User: Shorten this announcement to at most 20 characters:
The new mobile app is now available for everyone
Assistant: {"action": "final", "answer": "New app for everyone", "citation": "none"}"""
AGAIN = "Revise it again."
MAX_WORDS = 12  # 4,095 deletions: the enum of admissible answers stays a small grammar
RUNGS = ("L1", "L2")  # L1: any text (the static schema); L2: only deletions of words from the draft


@dataclass(frozen=True)
class Announcement:
    """The reviser's task: `id` keys the replay, `text` is the draft, `limit` is stated to it."""

    id: str
    text: str
    limit: int


def describe(task: Announcement) -> str:
    """The first user message: the draft and the limit (both variants are told the limit)."""
    return f"Shorten this announcement to at most {task.limit} characters:\n{task.text}"


def observe(observation: Mapping[str, Any]) -> str:
    """What the reviser is told on a later visit: the router's feedback, if any, then AGAIN."""
    feedback = observation.get("result")
    return f"{feedback}. {AGAIN}" if feedback else AGAIN


def answer_of(decision: Any) -> str:
    """The revised text in a model decision; ValueError (the revise job fails) if it has none."""
    answer = decision.get("answer") if isinstance(decision, dict) else None
    if isinstance(answer, str) and decision.get("action") == "final":
        return answer
    raise ValueError(f"the model's decision has no answer text: {decision!r}")


@dataclass
class ModelReviser:
    """A `revise` job function backed by a model (see the module docstring).

    One instance per variant: its `task.id` and its policy's turn counter are the replay
    key. `history` lists the text of every visit, in order. On visit 1 it starts a new
    conversation; on visit n it passes one observation per earlier visit (the Goto's
    feedback, None for `back_to`), so the policy asks turn n.
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
        self.task = Announcement(case, DRAFT, self.limit)
        rules = None
        if self.rung == "L2":
            rules = StateRules(slots={("final", "answer"): self.deletions,
                                      ("final", "citation"): lambda task, observations: ["none"]})
        self.policy = ModelPolicy(LAB, tools={}, instructions=INSTRUCTIONS, describe=describe,
                                  observe=observe, backend=self.backend, temperature=self.temperature,
                                  seed=self.seed, trial=self.trial, rung=self.rung, rules=rules)
        self.observations: list[dict[str, Any]] = []

    def deletions(self, task: Announcement, observations: Any = ()) -> list[str]:
        """L2's admissible answers: the current draft with any words cut (none or all but one).

        The current draft is the last text this reviser wrote, or the original on visit 1.
        """
        return deletions_of(self.history[-1] if self.history else task.text, self.min_cut)

    def __call__(self, ctx: Context) -> str:
        if ctx.visit == 1:
            self.observations = []
        else:
            self.observations.append({"action": "final", "result": ctx.feedback})
        if len(self.observations) != ctx.visit - 1:  # pragma: no cover - one call per visit, no retries
            raise RuntimeError(f"ModelReviser: visit {ctx.visit} after {len(self.observations)} observations")
        text = answer_of(self.policy(self.task, list(self.observations)))
        self.history.append(text)
        return text


def deletions_of(text: str, min_cut: int = 0) -> list[str]:
    """Every non-empty subsequence of the words of `text` with at least `min_cut` words cut,
    longest first, words in their order.

    With `min_cut=0` the draft itself is included: a reviser may repeat itself, and whether
    it does is one thing the experiment measures (8 words give 255 texts). With `min_cut=1`
    it must cut something each visit, and the question becomes how much. A one-word draft
    has nothing left to cut, and is its own only deletion.
    """
    words = text.split()
    if len(words) > MAX_WORDS:
        raise LabError(f"a deletion-constrained draft may have at most {MAX_WORDS} words, got {len(words)}")
    longest = max(len(words) - min_cut, 1)
    return [" ".join(kept) for size in range(longest, 0, -1) for kept in combinations(words, size)]


def recorded() -> bool:
    """True when replay has a recording for this lab (`fixtures/trials/routing*.jsonl`)."""
    return bool(trial_files(LAB))


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
    return (f"replayed from {extra['recorded'].split(':')[0]} ({provenance.get('backend')} "
            f"{provenance.get('model', '')}, temperature {reviser.policy.temperature:g})")


def model_feedback_experiment(
    max_visits: int = RECORDED["max_visits"], limit: int = RECORDED["limit"], backend: Backend | None = None,
    rung: str = "L1", min_cut: int = 0, temperature: float = 0.0, seed: int = 0, trial: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, RunResult], dict[str, ModelReviser]]:
    """The feedback experiment with a `ModelReviser` in each variant, at `temperature` (recorded: 0).

    `rung` ``L1`` lets the model write any text; ``L2`` holds each reply to a deletion of
    words from the current draft (`deletions_of`), so the model chooses only what to cut;
    `min_cut` is the fewest words it must cut per visit at L2 (0: it may repeat the draft).

    `backend` defaults to `backend_from_env()` (replay when `LABKIT_MODEL` is unset), shared
    by both variants. Returns, as `feedback_experiment` does, the characters per visit and
    a summary per variant, then the runs and the revisers (whose `history` holds the texts).
    Raises ReplayMiss (a LabError) for a request that was never recorded — e.g. another
    `limit`, since the limit is part of what the model is shown.
    """
    backend = backend_from_env() if backend is None else backend
    lengths, rows, runs, revisers = {}, [], {}, {}
    for name in VARIANTS:
        if rung not in RUNGS:
            raise LabError(f"the model reviser runs at rung L1 or L2, not {rung!r}")
        if min_cut and rung != "L2":
            raise LabError("min_cut applies to the deletion-constrained reviser (rung L2) only")
        revisers[name] = reviser = ModelReviser(name, backend=backend, limit=limit, rung=rung,
                                                min_cut=min_cut, temperature=temperature, seed=seed,
                                                trial=trial)
        graph, _ = loop_graph(feedback=name == "with feedback", limit=limit, reviser=reviser)
        runs[name] = result = graph.run(max_visits=max_visits, clock=FakeClock())
        lengths[name] = [len(text) for text in reviser.history]
        rows.append(summary_row(name, result))
    return visit_table(lengths), pd.DataFrame(rows).set_index("variant"), runs, revisers


# What each level of control lets the reviser write: (label, rung, min_cut). Recorded for
# all three in fixtures/trials/routing-smollm2*.jsonl.
CONTROLS = (("any text (L1)", "L1", 0), ("deletions only (L2)", "L2", 0),
            ("must cut a word (L2, min_cut=1)", "L2", 1))


def control_table(backend: Backend | None = None, *, temperature: float = 0.0, seed: int = 0,
                  k: int = 1) -> tuple[pd.DataFrame, dict[str, dict[str, ModelReviser]]]:
    """The model feedback experiment at each level of CONTROLS, one row per (level, variant).

    Columns: the characters of each revision, the run's status, what was published, and
    whether the two variants of that level wrote the same texts. Returns the table and the
    revisers per level (their `history` holds the texts). `k` trials of each (trial t with
    seed `seed + t`; recorded: k=1, temperature 0, seed 0); with k > 1 the trial is a third
    index level and the revisers returned are the last trial's.
    """
    if type(k) is not int or k < 1:
        raise LabError(f"k (trials per variant) must be a positive int, got {k!r}")
    rows, revisers = [], {}
    for trial in range(k):
        for label, rung, min_cut in CONTROLS:
            chars, summary, _, revisers[label] = model_feedback_experiment(
                backend=backend, rung=rung, min_cut=min_cut, temperature=temperature, seed=seed + trial,
                trial=trial)
            texts = [reviser.history for reviser in revisers[label].values()]
            for variant in VARIANTS:
                rows.append({"reviser may write": label, "variant": variant, "trial": trial,
                             "characters per visit": " ".join(c for c in chars[variant] if c != "-"),
                             "status": summary.loc[variant, "status"],
                             "published": summary.loc[variant, "published"],
                             "same texts both variants": texts[0] == texts[1]})
    index = ["reviser may write", "variant"] + (["trial"] if k > 1 else [])
    return pd.DataFrame(rows).set_index(index).drop(columns="trial", errors="ignore"), revisers


def main() -> int:
    """Run the experiment with `LABKIT_MODEL`'s backend; print the tables and the wall time."""
    start = time.perf_counter()
    for arg in sys.argv[1:] or ["L1"]:  # L1, L2, or L2+cut1 (L2 with at least one word cut per visit)
        rung, _, cut = arg.partition("+cut")
        chars, summary, _, revisers = model_feedback_experiment(rung=rung, min_cut=int(cut or 0))
        print(f"rung {arg}", chars.to_string(), summary.to_string(), sep="\n\n")
        for name, reviser in revisers.items():
            print(f"{name}: {reviser.history}")
    print(f"wall time: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
