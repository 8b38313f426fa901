"""`labkit rerun LAB --model SPEC -o OUT.ipynb`: a lab re-executed headless against another model."""

import argparse
import importlib.util

from labkit.core.errors import LabError
from labkit.course.argtypes import SEED_MAX, int_in, output_type, positive, temperature
from labkit.course.commands import add_command


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "rerun",
        handle,
        "Run lab LAB top to bottom in a fresh kernel with LABKIT_MODEL=SPEC and the given k, "
        "temperature and seed injected after its parameters cell; record every live model call "
        "under runs/rerun/; write the executed notebook to OUT only if every cell ran.",
        model=True,
    )
    add = parser.add_argument
    add("lab", metavar="LAB", help="the lab: 1, 2, 3 or 4")
    add(
        "--model",
        required=True,
        metavar="SPEC",
        help="a backend (below): replay, local, ollama:<tag> or openai:<model>",
    )
    add("--k", type=positive, help="trials per case (default: the notebook's)")
    add("--temperature", type=temperature, help="0..2 (default: the notebook's)")
    add("--seed", type=int_in(0, SEED_MAX), help="(default: the notebook's)")
    add(
        "-o",
        "--output",
        required=True,
        type=output_type(),
        metavar="OUT.ipynb",
        help="where to write the executed notebook (checked before anything runs)",
    )


def handle(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("papermill") is None:  # serves: environment — papermill is not installed
        raise LabError("rerun needs papermill: pip install -c requirements.txt -e '.[rerun]'")
    from labkit.course.classroom.rerun import rerun
    from labkit.course.classroom.submission import lab_number

    done = rerun(
        lab_number(args.lab), args.model, args.output, k=args.k, temperature=args.temperature, seed=args.seed
    )
    injected = ", ".join(f"{name}={value!r}" for name, value in done.parameters.items())
    print(f"wrote {done.notebook} ({injected})")
    if done.record is not None:
        print(f"model calls recorded in {done.record}; replay them with LABKIT_MODEL=replay:{done.record}")
    return 0
