"""`labkit routing`: lab 04's experiments headless (validation, parallelism, retries, loops)."""

import argparse
import json
from typing import Any

import pandas as pd

from labkit.course.argtypes import int_in
from labkit.course.commands import WIDTH, add_command, plain, say
from labkit.routing import experiments as lab


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "routing",
        handle,
        "Run lab 04's experiments and print their tables: each graph validation error; "
        "one fan-out graph run sequentially and in parallel (real sleeps, about 0.7 s); "
        "a transient fault, a persistent one and an invalid input under one retry policy; "
        "the draft -> revise -> review loop without and with feedback; the same loop with "
        "a model as the reviser (replayed from recorded trials unless LABKIT_MODEL is set), and its "
        "50 recorded trials per variant: rates with intervals, the declared comparisons' verdicts; "
        "Next.Stop on a cache hit. Every other job is scripted: control-flow results.",
        model=True,
    )
    add = parser.add_argument
    add("--json", action="store_true", help="print the results as one JSON object")
    add(
        "--max-visits",
        type=int_in(1, 20),
        default=5,
        metavar="N",
        help="visits allowed per job in the review loop, 1..20 (default: 5)",
    )
    add(
        "--limit",
        type=int_in(1, 200),
        default=lab.LIMIT,
        metavar="CHARS",
        help=f"the review's character limit, 1..200 (default: {lab.LIMIT})",
    )
    add(
        "--skip-timing",
        action="store_true",
        help="leave out the real-time experiment (the rest is deterministic)",
    )


def _model_feedback() -> dict[str, Any]:
    """The loop with a model reviser at its recorded settings, as plain data for the report;
    `{"available": False, "note": ...}` when replay is asked for and nothing is recorded."""
    from labkit.model.factory import is_live
    from labkit.routing import model_reviser as model

    if not is_live() and not model.recorded():
        trials = f"fixtures/trials/{model.REVISER_LAB}*.jsonl"
        note = f"no recorded trials for lab {model.REVISER_LAB!r} ({trials}); record them with "
        return {"available": False, "note": note + "LABKIT_MODEL=local LABKIT_RECORD=<file>"}
    _, summary, runs, revisers = model.model_feedback_experiment()
    return {
        "trials": _model_trials(),
        "available": True,
        "source": model.reply_source(revisers["with feedback"]),
        "settings": dict(model.RECORDED),
        "chars": {name: [len(text) for text in reviser.history] for name, reviser in revisers.items()},
        "texts": {name: list(reviser.history) for name, reviser in revisers.items()},
        "runs": plain(summary, "index"),
        "reasons": {name: run.reason for name, run in runs.items()},
    }


def _model_trials() -> dict[str, Any]:
    """The reviser's recorded trials (always replayed): notebook 04's rates over trials and its
    paired comparisons answered as its declared question (`trials.FEEDBACK_QUESTION`) answers them."""
    from labkit.core import questions
    from labkit.model import ReplayBackend
    from labkit.routing import model_reviser
    from labkit.routing import reviser_trials as trials

    if not model_reviser.recorded():
        return {"available": False, "note": "no recorded trials"}
    runs = trials.sampled_runs(ReplayBackend())
    rows = questions.answer_records(trials.FEEDBACK_QUESTION, trials.reviser_comparisons(runs))
    rates = plain(trials.reviser_table(runs).reset_index())
    return {
        "available": True,
        "unit": "trial",
        "question": trials.FEEDBACK_QUESTION,
        "rates": rates,
        "comparisons": rows,
    }


def _print_trials(model: dict[str, Any]) -> None:
    if not model["available"]:
        return
    print(
        "\n   The recorded trials, replayed (the unit is the trial; T=0 and the word cutter:",
        "   one deterministic run each, no interval):",
        pd.DataFrame(model["rates"]).set_index(["control", "variant"]).to_string(line_width=WIDTH),
        sep="\n",
    )
    from labkit.core import questions

    say(f"   {model['question']}: {questions.question(model['question']).asks}", "  ")
    print(questions.records_table(model["comparisons"]).to_string(line_width=WIDTH))


def _print_model(model: dict[str, Any]) -> None:
    if not model["available"]:
        print(f"\n5. The review loop with a model reviser: not run: {model['note']}")
        return
    settings = model["settings"]
    print(
        f"\n5. The review loop with a model reviser, limit {settings['limit']} characters, "
        f"max_visits={settings['max_visits']}: characters per revision",
        f"   {model['source']}",
        lab.visit_table(model["chars"]).to_string(line_width=WIDTH),
        pd.DataFrame.from_dict(model["runs"], orient="index")
        .rename_axis("variant")
        .to_string(line_width=WIDTH),
        sep="\n",
    )
    for name, texts in model["texts"].items():
        say(f"   {name}: last text {texts[-1]!r}" if texts else f"   {name}: no text", "  ")
    for name, reason in model["reasons"].items():  # why a run failed: a model error shows here
        say(f"   {name}: {reason}", "  ")
    print("   One model, temperature 0, one trial: a measurement of this model and prompt, not of models.")
    _print_trials(model["trials"])


def handle(args: argparse.Namespace) -> int:
    errors = lab.validation_experiment()
    parallel = None if args.skip_timing else lab.parallel_experiment()[0]
    retries = lab.retry_experiment()
    revisers = {name: lab.Reviser() for name in lab.FEEDBACK_ROUTERS}
    chars, loops, runs = lab.compare_revisers(revisers, max_visits=args.max_visits, limit=args.limit)
    stop = lab.cache_stop_experiment()
    model = _model_feedback()
    if args.json:
        loop_chars = {name: [int(v) for v in column if v != "-"] for name, column in chars.items()}
        reasons = {name: run.reason for name, run in runs.items()}
        result = {
            "validation": errors,
            "parallel": None if parallel is None else plain(parallel, "index"),
            "retries": plain(retries, "index"),
            "loop": {"chars": loop_chars, "runs": plain(loops, "index"), "reasons": reasons},
            "model_feedback": model,
            "stop": {"status": stop.status, "reason": stop.reason},
        }
        print(json.dumps(result, indent=2))
        return 0
    print("1. Validation: each broken graph is refused before anything runs.")
    for mistake, error in errors.items():
        say(f"   {mistake:<28} {error}", " " * 29)
    if parallel is not None:
        print(
            "\n2. Sequential against parallel (real time; expected = sum of waits, or the critical path):",
            parallel.to_string(line_width=WIDTH),
            sep="\n",
        )
    print(
        "\n3. Retries: 3 attempts, waits 0.5 s doubling, every Exception retryable (fake clock):",
        retries.to_string(line_width=WIDTH),
        f"\n4. The review loop, limit {args.limit} characters, max_visits={args.max_visits}: "
        "characters per revision",
        chars.to_string(line_width=WIDTH),
        loops.to_string(line_width=WIDTH),
        sep="\n",
    )
    for name, run in runs.items():
        say(f"   {name}: {run.reason}", "  ")
    _print_model(model)
    print(
        f"\n6. Next.Stop on a cache hit: {stop.status}; {stop.reason}",
        "\nParts 1-4 and 6 use scripted jobs: control-flow results, not model-quality results.",
        sep="\n",
    )
    return 0
