"""`labkit trials`: record live trials of the docuctl model policy (lab 02)."""

from __future__ import annotations

import argparse
import sys
import time

from tqdm.auto import tqdm

from labkit.core.errors import LabError
from labkit.course.argtypes import SEED_MAX, int_in, positive, temperature
from labkit.decision_loop.model_policy import PROMPTS
from labkit.decision_loop.trials import CASE_SETS, MAX_TOKENS_MAX, MAX_TRIALS, run_trials
from labkit.model.constraints import RUNGS
from labkit.model.factory import parse_spec
from labkit.model.policy import MAX_TOKENS


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "trials",
        help="lab 02: run the model policy live over the docuctl cases and record every call",
        description=(
            "Run the docuctl model policy k times per case on a live backend, under lab 01's tool "
            "and turn limits, and write every model call (with provenance) and every episode to "
            "FILE as JSON lines. FILE must not exist; it appears only when the run completes."
        ),
    )
    parser.add_argument(
        "--model",
        required=True,
        metavar="SPEC",
        help="live backend: local (SmolLM2 in-process) or ollama:<tag>",
    )
    parser.add_argument("--cases", choices=CASE_SETS, default="all", help="which cases (default: all 24)")
    parser.add_argument("--k", type=positive, default=1, help="trials per case (default 1)")
    parser.add_argument(
        "--temperature", type=temperature, default=0.0, help="sampling temperature (default 0)"
    )
    parser.add_argument("--seed", type=int_in(0, SEED_MAX - MAX_TRIALS), default=0,
                        help="trial t uses seed SEED+t (default 0)")
    parser.add_argument(
        "--prompt", choices=tuple(PROMPTS), default="base", help="system prompt (default base)"
    )
    parser.add_argument(
        "--rung",
        choices=RUNGS,
        default="L1",
        help="constraint ladder rung: L0 prompt only, L1 static schema (default), L2 observed ids, "
        "L3 observed ids + extractive final",
    )
    parser.add_argument("--label", help="the run's name in evaluations (default: model, prompt, T)")
    parser.add_argument("--budget-tokens", type=positive, metavar="N", help="token budget per episode")
    parser.add_argument(
        "--max-tokens",
        type=int_in(1, MAX_TOKENS_MAX),
        default=MAX_TOKENS,
        metavar="N",
        help=f"token limit per decision (default {MAX_TOKENS})",
    )
    parser.add_argument(
        "--record", required=True, metavar="FILE", help="JSONL file to write (must not exist)"
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    if args.model.startswith("replay"):
        raise LabError(f"--model {args.model}: trials are recorded from a live model (local or ollama:<tag>)")
    if args.k > MAX_TRIALS:
        raise LabError(f"--k {args.k}: at most {MAX_TRIALS} trials per case")
    backend = parse_spec(args.model)
    start = time.perf_counter()
    try:
        episodes = run_trials(
            backend,
            args.record,
            cases=args.cases,
            k=args.k,
            temperature=args.temperature,
            seed=args.seed,
            prompt=args.prompt,
            rung=args.rung,
            label=args.label,
            budget_tokens=args.budget_tokens,
            max_tokens=args.max_tokens,
            progress=lambda pairs: tqdm(
                pairs, desc=f"{args.model} {args.prompt} {args.rung} T={args.temperature:g}", unit="episode"
            ),
        )
    except KeyboardInterrupt:
        print(
            f"labkit trials: interrupted; {args.record} not written, the finished calls and episodes "
            f"are in {args.record}.partial",
            file=sys.stderr,
        )
        return 130
    passed = sum(e["passed"] for e in episodes)
    print(
        f"{len(episodes)} episodes, {passed} passed, in {time.perf_counter() - start:.0f} s; "
        f"wrote {args.record}"
    )
    print(f"Evaluate: python -m labkit evaluate --trials {args.record}")
    return 0
