"""`labkit trials`: record live trials of the docuctl model policy (lab 02)."""

import argparse
import sys
import time

from tqdm.auto import tqdm

from labkit.core.errors import LabError
from labkit.course.argtypes import SEED_MAX, int_in, positive, temperature
from labkit.course.commands import add_command
from labkit.decision_loop.model_policy import PROMPTS
from labkit.decision_loop.trials import CASE_SETS, MAX_TOKENS_MAX, MAX_TRIALS, run_trials
from labkit.model.constraints import RUNGS
from labkit.model.factory import is_live, parse_spec
from labkit.model.policy import MAX_TOKENS


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "trials",
        handle,
        "Run the docuctl model policy k times per case on a live backend, under lab 01's tool "
        "and turn limits, and write every model call (with provenance) and every episode to "
        "FILE as JSON lines. FILE must not exist; it appears only when the run completes.",
        model=True,
    )
    add = parser.add_argument
    add(
        "--model",
        required=True,
        metavar="SPEC",
        help="a live backend (below): local, ollama:<tag> or openai:<model>",
    )
    add("--cases", choices=CASE_SETS, default="all", help="which cases (default: all 24)")
    add("--k", type=int_in(1, MAX_TRIALS), default=1, help=f"trials per case, up to {MAX_TRIALS} (default 1)")
    add("--temperature", type=temperature, default=0.0, help="sampling temperature (default 0)")
    add("--seed", type=int_in(0, SEED_MAX - MAX_TRIALS), default=0, help="trial t uses seed SEED+t")
    add("--prompt", choices=tuple(PROMPTS), default="base", help="system prompt (default base)")
    rungs = "L0 prompt only, L1 static schema (default), L2 observed ids, L3 observed ids + extractive final"
    add("--rung", choices=RUNGS, default="L1", help=f"constraint ladder rung: {rungs}")
    add("--label", help="the run's name in evaluations (default: model, prompt, T)")
    add("--budget-tokens", type=positive, metavar="N", help="token budget per episode")
    add(
        "--max-tokens",
        type=int_in(1, MAX_TOKENS_MAX),
        default=MAX_TOKENS,
        metavar="N",
        help=f"token limit per decision (default {MAX_TOKENS})",
    )
    add("--record", required=True, metavar="FILE", help="JSONL file to write (must not exist)")


def handle(args: argparse.Namespace) -> int:
    if not is_live(args.model):  # serves: user
        raise LabError(f"--model {args.model}: trials are recorded from a live model (see --help)")
    backend = parse_spec(args.model)
    start = time.perf_counter()
    try:
        settings = "cases k temperature seed prompt rung label budget_tokens max_tokens".split()
        desc = f"{args.model} {args.prompt} {args.rung} T={args.temperature:g}"
        bar = lambda pairs: tqdm(pairs, desc=desc, unit="episode")  # noqa: E731
        episodes = run_trials(
            backend, args.record, progress=bar, **{name: vars(args)[name] for name in settings}
        )
    except KeyboardInterrupt:
        print(f"labkit trials: interrupted; what finished is in {args.record}.partial", file=sys.stderr)
        return 130
    passed, took = sum(e["passed"] for e in episodes), time.perf_counter() - start
    print(
        f"{len(episodes)} episodes, {passed} passed, in {took:.0f} s; wrote {args.record}",
        f"Evaluate: python -m labkit evaluate --trials {args.record}",
        sep="\n",
    )
    return 0
