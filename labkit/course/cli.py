"""`python -m labkit`: headless commands that run each lab's experiment and print its table.

Each module in `labkit.course.commands` adds one subcommand through `register(subparsers)`; the
parser it adds sets `handler=<function(args) -> int>`. Mistakes get one line on stderr and
exit status 2, never a traceback: an unknown option (argparse), or any LabError raised by a
handler (a missing or malformed fixture, an unrecorded replay request, a server that is down).

Only the command being run is imported. Its module imports what its experiment needs
(pandas, matplotlib, jsonschema, the model seam): 2.16 s for all five modules on the 2-core
course machine. So `labkit --help` lists every command from `labkit.course.commands.SUMMARIES`
without importing any of them (0.044 s, benchmarks/startup.py), and `labkit compare ...`
imports the compare module alone. A command module missing from SUMMARIES still works: it
is imported for every invocation, as all of them once were.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence

from labkit.core.errors import LabError
from labkit.course import commands


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: `labkit compare: error: ...`."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _modules() -> list[str]:
    """The command modules in labkit.course.commands, sorted by name (found without importing them)."""
    return sorted(info.name for info in pkgutil.iter_modules(commands.__path__))


def command_name(module: str) -> str:
    """The command a module adds: `refund_lab` -> `refund-lab`, `class_` -> `class` (a keyword)."""
    return module.rstrip("_").replace("_", "-")


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in `argv`: its first argument that is not an option."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(command: str | None = None, *, eager: bool = False) -> argparse.ArgumentParser:
    """The `labkit` parser, with the full subparser of `command` (or of every command if `eager`).

    Every other listed command gets a placeholder subparser carrying only its one-line help
    from `labkit.course.commands.SUMMARIES`: enough for `labkit --help`, the list of choices and
    "invalid choice" errors, which therefore read exactly as with every module imported.
    Commands are listed in module-name order either way.
    """
    parser = OneLineParser(
        prog="labkit",
        description="Run the Agent Engineering Labs experiments headless and print their tables.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)
    sub.required = True
    for module in _modules():
        name = command_name(module)
        summary = commands.SUMMARIES.get(name)
        if eager or summary is None or name == command:
            importlib.import_module(f"{commands.__name__}.{module}").register(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(_command_of(argv)).parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except LabError as error:
        print(f"labkit {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `labkit compare | head` is not an error
        return 0
