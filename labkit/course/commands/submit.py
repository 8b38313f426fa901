"""`labkit submit LAB --name NAME [-o FILE | --to DIR]`: a learner's work on one lab as one JSON file."""

import argparse

from labkit.course.argtypes import folder_type, output_type
from labkit.course.classroom.submission import submit
from labkit.course.commands import add_command


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "submit",
        handle,
        "Read what the lab's checkers recorded (runs/progress/labNN.json) and write one JSON file "
        "to hand to the instructor: each exercise passed or not and after how many attempts; for "
        "lab 03 also the attack you wrote and your guard, as a table of its verdicts (data, never code).",
    )
    parser.add_argument("lab", metavar="LAB", help="the lab: 1, 2, 3 or 4 (or 01, lab03, ...)")
    parser.add_argument(
        "--name",
        required=True,
        help=(
            "your name as the class round shows it (letters of any script, digits, spaces, apostrophes, "
            "'.', '-'; up to 32)"
        ),
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        type=output_type(folder_ok=True),
        help="where to write it (default: runs/submissions/labNN-NAME.json; a folder: inside it)",
    )
    where.add_argument(
        "--to",
        metavar="DIR",
        type=folder_type,
        help=(
            "hand it in: labNN-NAME.json into DIR (a USB stick), never over a file (-2.json: the later "
            "counts)"
        ),
    )


def handle(args: argparse.Namespace) -> int:
    submit(args.lab, args.name, args.output, to=args.to)
    return 0
