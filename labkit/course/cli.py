"""`python -m labkit`: headless commands that run each lab's experiment and print its table. Only the
command being run is imported. A mistake is one line on stderr and exit status 2, never a traceback."""

import argparse
import importlib
import sys
from collections.abc import Sequence

from labkit.core.errors import LabError
from labkit.course import commands


class _Version(argparse.Action):
    """`labkit --version`: labkit's version from its package metadata, read only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print labkit's version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("labkit")
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "(not installed: pip install -e .)"
        print(f"labkit {found}")  # on stdout, as argparse's own version action
        parser.exit(0)


class _OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line: `labkit compare: error: ...`."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser(command: str | None = None, *, eager: bool = False) -> argparse.ArgumentParser:
    """The `labkit` parser: the full subparser of `command` (every one if `eager`), the rest one-line help."""
    parser = _OneLineParser(prog="labkit", description="The Agent Engineering Labs' experiments, headless.")
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_OneLineParser)
    sub.required = True
    for name, summary in commands.SUMMARIES.items():
        if eager or name == command:  # `class` is in module class_, `refund-lab` in refund_lab
            module = "class_" if name == "class" else name.replace("-", "_")  # `class` is a keyword
            importlib.import_module(f"{commands.__name__}.{module}").register(sub)
        else:
            sub.add_parser(name, help=summary)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(next((arg for arg in argv if not arg.startswith("-")), None)).parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except LabError as error:
        print(f"labkit {args.command}: error: {error}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `labkit compare | head` is not an error
        return 0
