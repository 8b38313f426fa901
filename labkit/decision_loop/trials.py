"""Running recorded trials of the docuctl model policy: k episodes per case, to a file.

`run_trials` runs `docuctl_policy` at one rung of the constraint ladder over lab 01's
cases, k trials each, on the lab-01 tools and limits (base cases: 2 tools, 3 turns — the
seed's budget; adaptive cases: 3 tools, 4 turns — lab 01's stated adaptive budget), and
writes every model call and every episode to one JSONL file (format: `labkit.model.record`).
Trial t uses seed `seed + t`.

Nothing half-written: the file is built as `<file>.partial` and renamed to `<file>` only
when every episode has run. An interrupted run leaves the `.partial` file, every line of
it complete, and `<file>` untouched.
"""

from __future__ import annotations

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
from labkit.decision_loop.model_policy import LAB, PROMPTS, RULES, docuctl_policy
from labkit.model.backend import Backend
from labkit.model.constraints import check_rung
from labkit.model.policy import MAX_TOKENS
from labkit.model.record import JsonlWriter, Recorder

# "all" is lab 01's 24 cases; "rewrite" (fixtures/docuctl/rewrite_cases.json) are lab 02's cases
# whose question shares no word with its page or the glossary: only a rewritten query finds it.
CASE_SETS = ("base", "adaptive", "all", "rewrite")
# The limits of a recorded run, shared by `labkit trials` and `labkit grid` (which import them
# from here: the library does not import its commands).
MAX_TRIALS = 20  # trials per case, the most `labkit trials --k` and a grid's `k` allow
MAX_TOKENS_MAX = 8192  # SmolLM2's context window; no decision needs more
# A backend that fails this many episodes in a row is down, not unlucky: stop rather than
# spend up to a whole timeout on each of the remaining episodes.
MAX_PROVIDER_FAILURES = 3
Case = dict[str, Any]


def cases_of(which: str, corpus: Corpus | None = None) -> list[Case]:
    """Lab 01's base cases (18), adaptive cases (6), all 24, or lab 02's rewrite cases (6)."""
    corpus = corpus or docuctl()
    if which not in CASE_SETS:
        raise LabError(f"unknown case set {which!r} (known: {', '.join(CASE_SETS)})")
    return {
        "base": corpus.cases,
        "adaptive": corpus.adaptive_cases,
        "all": corpus.cases + corpus.adaptive_cases,
        "rewrite": corpus.rewrite_cases,
    }[which]


def known_cases(corpus: Corpus | None = None) -> dict[str, Case]:
    """Every case of every set, by id: what a recorded episode's case id is looked up in."""
    corpus = corpus or docuctl()
    return {case["id"]: case for case in cases_of("all", corpus) + cases_of("rewrite", corpus)}


def limits_for(case: Case, corpus: Corpus | None = None) -> dict[str, int]:
    """The tool and turn limits a case is run under, the same for every policy.

    Base cases: 2 tools, 3 turns. Adaptive and rewrite cases: 3 tools, 4 turns (one more
    tool: a revised search or a second read).
    """
    corpus = corpus or docuctl()
    wider = case in corpus.adaptive_cases or case in corpus.rewrite_cases
    tools = ADAPTIVE_TOOL_BUDGET if wider else BASE_TOOL_BUDGET
    return {"max_turns": tools + 1, "max_tools": tools}


def run_case(
    case: Case,
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


def episode_record(
    case: Case,
    result: Result,
    *,
    run_label: str,
    backend: str,
    prompt: str,
    rung: str = "L1",
    trial: int,
    temperature: float,
    seed: int,
    max_tokens: int,
    limits: dict[str, int],
    budget_tokens: int | None,
) -> dict[str, Any]:
    return {
        "kind": "episode",
        "run": run_label,
        "lab": LAB,
        "case": case["id"],
        "trial": trial,
        "prompt": prompt,
        "rung": rung,
        "backend": backend,
        "temperature": temperature,
        "seed": seed,
        "max_tokens": max_tokens,
        "limits": limits | {"budget_tokens": budget_tokens},
        "stop": result["stop"],
        "turns": result["turns"],
        "tool_calls": result["tool_calls"],
        "answer": result["answer"],
        "citation": result["citation"],
        "passed": outcome(case, result),
        "usage": {k: v for k, v in result["usage"].items() if k != "cost"},
        "elapsed_s": round(result["elapsed"], 6),
    }


def default_label(backend: Backend, prompt: str, temperature: float, rung: str = "L1") -> str:
    model = {"local": "SmolLM2-135M"}.get(backend.name, backend.name)
    return f"{model} {prompt} {rung} T={temperature:g}"


def run_trials(
    backend: Backend,
    record: str | Path,
    *,
    cases: str | list[Case] = "all",
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
    """Run k trials of every case in `cases` (a case set's name, or cases); write them to `record`.

    Returns the episode records. `progress` wraps the iterable of (case, trial) pairs (the
    CLI and the notebook pass tqdm). Raises LabError for a bad argument (`k` past MAX_TRIALS,
    `max_tokens` past MAX_TOKENS_MAX, an unknown prompt or rung) or an existing
    `record` file (a recording is never overwritten or appended to), and after
    MAX_PROVIDER_FAILURES consecutive episodes ending in `provider_error` (the finished
    ones stay in the `.partial` file).
    """
    if type(k) is not int or not 1 <= k <= MAX_TRIALS:
        raise LabError(f"k must be an int in 1..{MAX_TRIALS}, got {k!r}")
    if type(max_tokens) is not int or not 1 <= max_tokens <= MAX_TOKENS_MAX:
        raise LabError(f"max_tokens must be an int in 1..{MAX_TOKENS_MAX}, got {max_tokens!r}")
    if prompt not in PROMPTS:
        raise LabError(f"unknown prompt {prompt!r} (known: {', '.join(PROMPTS)})")
    check_rung(rung, RULES)
    if budget_tokens is not None and (type(budget_tokens) is not int or not 1 <= budget_tokens <= 2**53):
        raise LabError(f"budget_tokens must be a positive int, got {budget_tokens!r}")
    record = Path(record)
    if record.exists():
        raise LabError(f"{record} exists: recordings are never overwritten; choose another file")
    partial = record.with_name(record.name + ".partial")
    if partial.parent and not partial.parent.is_dir():
        raise LabError(f"{record}: folder {record.parent} does not exist")
    # Ask the backend for its provenance before the first episode: a server that is down or
    # a model that is missing is one clear message, not a file of provider_error episodes.
    try:
        backend.provenance()
    except ProviderError as error:
        raise LabError(f"{backend.name}: {error}; nothing was recorded") from None
    partial.unlink(missing_ok=True)  # a .partial file is by definition an abandoned run
    corpus = docuctl()
    chosen = cases_of(cases, corpus) if isinstance(cases, str) else list(cases)
    run_label = label or default_label(backend, prompt, temperature, rung)
    recorder = Recorder(backend, partial, run=run_label)
    writer = JsonlWriter(partial)
    pairs: Iterable[tuple[Case, int]] = [(case, trial) for trial in range(k) for case in chosen]
    episodes = []
    failures = 0
    for case, trial in progress(pairs) if progress else pairs:
        policy = docuctl_policy(
            prompt,
            backend=recorder,
            temperature=temperature,
            seed=seed + trial,
            trial=trial,
            max_tokens=max_tokens,
            rung=rung,
        )
        limits = limits_for(case, corpus)
        result = run_case(case, policy, limits=limits, budget_tokens=budget_tokens, corpus=corpus)
        episode = episode_record(
            case,
            result,
            run_label=run_label,
            backend=backend.name,
            prompt=prompt,
            rung=rung,
            trial=trial,
            temperature=float(temperature),
            seed=seed + trial,
            max_tokens=max_tokens,
            limits=limits,
            budget_tokens=budget_tokens,
        )
        writer.write(episode)
        episodes.append(episode)
        failures = failures + 1 if result["stop"] == "provider_error" else 0
        if failures == MAX_PROVIDER_FAILURES:
            raise LabError(f"{backend.name}: {failures} episodes in a row ended in provider_error "
                           f"(last: {result['detail']}); stopped. {record} was not written; the "
                           f"finished calls and episodes are in {partial}")
    os.replace(partial, record)
    return episodes
