"""Lab 02's cases and limits, and recording trials of the docuctl model policy: `run_trials` writes every
model call and episode (`labkit.model.record`) to `<file>.partial`, renamed when every episode has run."""

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from labkit.baseline.controllers import ADAPTIVE_TOOL_BUDGET, BASE_TOOL_BUDGET, docuctl_tools
from labkit.baseline.corpus import Corpus, docuctl
from labkit.baseline.grading import outcome
from labkit.baseline.task import task_from
from labkit.core.errors import LabError, ProviderError
from labkit.core.runtime import Budget, Result, run
from labkit.core.stops import Stop
from labkit.decision_loop.model_policy import DOCUCTL_LAB, docuctl_policy
from labkit.model.backend import Backend
from labkit.model.policy import MAX_TOKENS
from labkit.model.record import JsonlWriter, Recorder

# "all" is lab 01's 24 cases; "rewrite" are lab 02's 40 cases whose question's search (revised or not, as
# lab 01's rules do) misses its page: only a rewritten query finds it.
CASE_SETS = ("base", "adaptive", "all", "rewrite")
MAX_TRIALS = 100  # trials per case, the most `labkit trials --k` and a grid's `k` allow (lab 04 records 50)
MAX_TOKENS_MAX = 8192  # SmolLM2's context window; no decision needs more
# A backend failing this many episodes in a row is down: stop, not wait out a timeout on each.
MAX_PROVIDER_FAILURES = 3
_Case = dict[str, Any]
ENDED = ("stop", "turns", "tool_calls", "answer", "citation")  # how an episode ended, as recorded


def cases_of(which: str, corpus: Corpus | None = None) -> list[_Case]:
    """Lab 01's base cases (18), adaptive cases (6), all 24, or lab 02's rewrite cases (40) (serves: user)."""
    corpus = corpus or docuctl()
    if which not in CASE_SETS:
        raise LabError(f"unknown case set {which!r} (known: {', '.join(CASE_SETS)})")
    sets = {"base": corpus.cases, "adaptive": corpus.adaptive_cases, "rewrite": corpus.rewrite_cases}
    return sets["base"] + sets["adaptive"] if which == "all" else sets[which]


def known_cases(corpus: Corpus | None = None) -> dict[str, _Case]:
    """Every case of every set, by id: what a recorded episode's case id is looked up in."""
    corpus = corpus or docuctl()
    return {case["id"]: case for case in cases_of("all", corpus) + cases_of("rewrite", corpus)}


def limits_for(case: _Case, corpus: Corpus | None = None) -> dict[str, int]:
    """A case's limits, the same for every policy: base cases 2 tools and 3 turns, the others one
    tool (a revised search or a second read) and one turn more."""
    corpus = corpus or docuctl()
    wider = case in corpus.adaptive_cases or case in corpus.rewrite_cases
    tools = ADAPTIVE_TOOL_BUDGET if wider else BASE_TOOL_BUDGET
    return {"max_turns": tools + 1, "max_tools": tools}


def run_case(
    case: _Case,
    policy: Callable,
    *,
    limits: dict[str, int],
    budget_tokens: int | None = None,
    corpus: Corpus | None = None,
) -> Result:
    """One episode of `policy` on `case` under `limits` (and a token budget, if given)."""
    corpus = corpus or docuctl()
    task = task_from(case)
    budget = None if budget_tokens is None else Budget(tokens=budget_tokens)
    return run(task, policy, tools=docuctl_tools(task, corpus.docs), budget=budget, **limits)


# An episode's settings, as recorded.
_RECORDED = ("trial", "prompt", "rung", "backend", "temperature", "seed", "max_tokens")


def episode_record(case: _Case, result: Result, **run: Any) -> dict[str, Any]:
    """One recorded episode (`labkit.model.record`): from `run`, its `run_label`, `_RECORDED`, `limits`
    and `budget_tokens`; then how it ended."""
    return {
        "kind": "episode",
        "run": run["run_label"],
        "lab": DOCUCTL_LAB,
        "case": case["id"],
        **{key: run[key] for key in _RECORDED},
        "limits": run["limits"] | {"budget_tokens": run["budget_tokens"]},
        **{key: result[key] for key in ENDED},
        "passed": outcome(case, result),
        "usage": {k: v for k, v in result["usage"].items() if k != "cost"},
        "elapsed_s": round(result["elapsed"], 6),
    }


def default_label(backend: Backend, prompt: str, temperature: float, rung: str = "L1") -> str:
    """A recording's label (its episodes' `run` field), "<model> <prompt> <rung> T=<temperature>": the
    backend's name, with "local" as SmolLM2-135M."""
    model = {"local": "SmolLM2-135M"}.get(backend.name, backend.name)
    return f"{model} {prompt} {rung} T={temperature:g}"


def run_trials(
    backend: Backend,
    record: str | Path,
    *,
    cases: str | list[_Case] = "all",
    k: int = 1,
    temperature: float = 0.0,
    seed: int = 0,
    prompt: str = "base",
    rung: str = "L1",
    label: str | None = None,
    budget_tokens: int | None = None,
    max_tokens: int = MAX_TOKENS,
    progress: Callable[[Iterable], Iterable] | None = None,
) -> list[dict[str, Any]]:
    """k trials of every case in `cases` (a case set's name, or cases), trial t with seed `seed + t`, written
    to `record` (never overwritten; its folder made if missing) and returned; `progress` wraps the pairs.
    LabError for k past MAX_TRIALS, an unknown prompt or rung, a model that does not answer (nothing is
    written), and after MAX_PROVIDER_FAILURES provider errors in a row."""
    # serves: user — a k, prompt or rung out of range is one line, before any trial
    if type(k) is not int or not 1 <= k <= MAX_TRIALS:
        raise LabError(f"k must be an int in 1..{MAX_TRIALS}, got {k!r}")
    docuctl_policy(prompt, rung=rung, backend=backend)  # LabError for an unknown prompt or rung
    record = Path(record)
    if record.exists():  # serves: user — a recording is never overwritten
        raise LabError(f"{record} exists: recordings are never overwritten; choose another file")
    partial = record.with_name(record.name + ".partial")
    # serves: environment — a model that does not answer, a folder that cannot be made
    try:  # a server that is down or a model that is missing: one message, not a file of failures
        backend.provenance()
    except ProviderError as error:
        raise LabError(f"{backend.name}: {error}; nothing was recorded") from None
    # `runs/` is not in a fresh clone: the folder is made, as `labkit grid --record` makes it, once the
    # model has answered (a server that is down leaves nothing behind).
    try:
        partial.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LabError(f"{record}: cannot make folder {record.parent} ({error.strerror})") from None
    partial.unlink(missing_ok=True)  # an abandoned run
    chosen = cases_of(cases) if isinstance(cases, str) else list(cases)
    run_label = label or default_label(backend, prompt, temperature, rung)
    recorder, writer = Recorder(backend, partial, run=run_label), JsonlWriter(partial)
    pairs: Iterable[tuple[_Case, int]] = [(case, trial) for trial in range(k) for case in chosen]
    episodes, failures = [], 0
    named = {
        "run_label": run_label,
        "backend": backend.name,
        "budget_tokens": budget_tokens,
        "temperature": float(temperature),
    }
    for case, trial in progress(pairs) if progress else pairs:
        settings = dict(prompt=prompt, rung=rung, trial=trial, seed=seed + trial, max_tokens=max_tokens)
        policy = docuctl_policy(backend=recorder, temperature=temperature, **settings)
        limits = limits_for(case)
        result = run_case(case, policy, limits=limits, budget_tokens=budget_tokens)
        episode = episode_record(case, result, limits=limits, **named, **settings)
        writer.write(episode)
        episodes.append(episode)
        failures = failures + 1 if result["stop"] == Stop.PROVIDER_ERROR else 0
        if failures == MAX_PROVIDER_FAILURES:  # serves: environment — the backend is down
            raise LabError(
                f"{backend.name}: {failures} episodes in a row ended in provider_error "
                f"(last: {result['detail']}); stopped. {record} was not written; the "
                f"finished calls and episodes are in {partial}"
            )
    os.replace(partial, record)
    return episodes
