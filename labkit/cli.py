"""`python -m labkit`: headless commands that run each lab's experiment and print its table.

Each module in `labkit.commands` adds one subcommand through `register(subparsers)`; the
parser it adds sets `handler=<function(args) -> int>`. Mistakes get one line on stderr and
exit status 2, never a traceback: an unknown option (argparse), or any LabError raised by a
handler (a missing or malformed fixture, an unrecorded replay request, a server that is down).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from labkit import commands
from labkit.errors import LabError


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: `labkit compare: error: ...`."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="labkit",
        description="Run the Agent Engineering Labs experiments headless and print their tables.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        importlib.import_module(f"{commands.__name__}.{info.name}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except LabError as error:
        print(f"labkit {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `labkit compare | head` is not an error
        return 0
