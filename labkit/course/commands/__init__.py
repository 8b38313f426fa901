"""One module per CLI subcommand, each with `register(subparsers)`; SUMMARIES holds their one-line
help, so that `labkit --help` lists the commands without importing their modules."""

import argparse
import textwrap
from collections.abc import Callable
from typing import Any

WIDTH = 120  # a terminal line: tables wrap their columns into blocks and prose wraps its words at this


def say(text: str, indent: str = "") -> None:
    """Print `text` (one or more lines) with every line wrapped at WIDTH, a wrapped line's rest indented
    by `indent` beyond the line's own leading spaces."""
    for line in text.split("\n"):
        lead = line[: len(line) - len(line.lstrip())]
        print(
            textwrap.fill(line, WIDTH, subsequent_indent=lead + indent, break_on_hyphens=False)
            if line
            else ""
        )


SUMMARIES: dict[str, str] = {
    "class": "class round: merge a folder of submissions into pass counts and lab 03's red-team leaderboard",
    "compare": "lab 01: keyword route vs search/read workflow vs scripted loop",
    "evaluate": "lab 02: replay recorded trials and report pass@1, pass^k and stop reasons",
    "grid": "labs 02-04: run a grid of live trials, in-process or on Dask, resumable, each episode once",
    "refund-lab": "lab 03: refund attacks × defenses, from the shop's ledger",
    "rerun": "re-execute a lab headless against another model (papermill) and record its calls",
    "routing": "lab 04: task graph validation, parallel runs, retries, review loops",
    "serve": "serve the course's SmolLM2 to the room over the OpenAI API (llama-server or llama_cpp.server)",
    "submit": "write one JSON of your work on a lab (checker outcomes; lab 03: your attacks and guard)",
    "trials": "lab 02: run the model policy live over the docuctl cases and record every call",
}


def add_command(
    sub: argparse._SubParsersAction,
    name: str,
    handler: Callable[[argparse.Namespace], int],
    description: str,
    *,
    model: bool = False,
) -> argparse.ArgumentParser:
    """The subparser of command `name`, its help from SUMMARIES; ending with the model backends where it
    takes a model (`model`: --model SPEC, a grid's models, or LABKIT_MODEL)."""
    epilog = None
    if model:
        from labkit.model.factory import BACKENDS

        epilog = f"Model backends (LABKIT_MODEL, or --model SPEC where one is taken): {BACKENDS}."
    parser = sub.add_parser(name, help=SUMMARIES[name], description=description, epilog=epilog)
    parser.set_defaults(handler=handler)
    return parser


def plain(frame: Any, orient: str = "records") -> Any:
    """A DataFrame as JSON-ready values (`DataFrame.to_dict(orient)`), NaN as None."""
    return frame.astype(object).where(frame.notna(), None).to_dict(orient)
