"""`labkit trials`: record live trials of the docuctl model policy (lab 02)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from tqdm.auto import tqdm

from labkit.errors import LabError
from labkit.model.backend import parse_spec
from labkit.model.constraints import RUNGS
from labkit.model.docuctl import PROMPTS
from labkit.model.policy import MAX_TOKENS
from labkit.model.trials import CASE_SETS, run_trials


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be in 0..2, got {value:g}")
    return value


def _int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an int from `low` to `high` (a 401-digit seed is a usage error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also a number past Python's 4,300-digit limit
            shown = text if len(text) <= 20 else text[:19] + "…"
            raise argparse.ArgumentTypeError(f"not an integer: {shown!r}") from None
        shown = str(value) if abs(value) < 10**20 else "a number that large"
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {shown}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {shown}")
        return value

    return parse


_positive = _int_in(1, 2**53)
SEED_MAX = 2**31 - 1  # the local model's sampler takes a 32-bit seed, and trial t uses seed + t
MAX_TOKENS_MAX = 8192  # SmolLM2's context window; no decision needs more


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
    parser.add_argument("--k", type=_positive, default=1, help="trials per case (default 1)")
    parser.add_argument(
        "--temperature", type=_temperature, default=0.0, help="sampling temperature (default 0)"
    )
    parser.add_argument("--seed", type=_int_in(0, SEED_MAX - 20), default=0,
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
    parser.add_argument("--budget-tokens", type=_positive, metavar="N", help="token budget per episode")
    parser.add_argument(
        "--max-tokens",
        type=_int_in(1, MAX_TOKENS_MAX),
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
    if args.k > 20:
        raise LabError(f"--k {args.k}: at most 20 trials per case")
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
