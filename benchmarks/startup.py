"""What a learner waits for before anything runs: `import labkit` and `python -m labkit --help`.

    .venv/bin/python benchmarks/startup.py [--repeat R]

Each figure is a fresh interpreter (`python -c ...`), timed from outside, the best of R runs
(default 7), the contenders interleaved run by run:

- `import labkit` now (names load lazily), against what `import labkit` loaded when it
  imported its names eagerly: controllers, corpus, documents, grading, runtime, task,
  text and errors, and through them pandas, numpy and jsonschema (which labkit.core.fixtures
  imported at its top then, and now imports on the first fixture load);
- `python -m labkit --help` now (no command module imported), against building the parser
  with every command module imported, as the CLI did for every invocation;
- `python -c pass`, the interpreter's own start, which no change here can remove.

- a notebook's first fixture load (`docuctl()`: pandas-free, but it imports jsonschema) now,
  against the same load where rfc3987_syntax is imported as jsonschema imported it before
  `labkit/__init__.py` kept it out (it builds an Earley parser at import; jupyter-events
  installs it into every JupyterLab environment).

Goals (issue 11, the first minute): `import labkit` <= 0.5 s, `--help` <= 1 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

# What `import labkit` imported before: jsonschema (which labkit.core.fixtures, imported by
# labkit.baseline.corpus, imported at its top, and which imported rfc3987_syntax where installed),
# then these modules.
RFC = "import importlib.util\nif importlib.util.find_spec('rfc3987_syntax'): import rfc3987_syntax\n"
EAGER_NAMES = (
    "labkit.baseline.controllers, labkit.baseline.corpus, labkit.baseline.documents, "
    "labkit.core.errors, labkit.baseline.grading, labkit.core.runtime, labkit.baseline.task, "
    "labkit.core.text"
)
FIRST_LOAD = "import labkit\nfrom labkit.baseline.corpus import docuctl\ndocuctl()"
CASES = {
    "python -c pass": ["-c", "pass"],
    "import labkit": ["-c", "import labkit"],
    "import labkit, eagerly (before)": ["-c", f"{RFC}import jsonschema, {EAGER_NAMES}"],
    "labkit --help": ["-m", "labkit", "--help"],
    "labkit --help, every command (before)": [
        "-c",
        "from labkit.course.cli import build_parser; build_parser(eager=True).format_help()",
    ],
    "first fixture load": ["-c", FIRST_LOAD],
    "first fixture load, rfc3987_syntax (before)": ["-c", RFC + FIRST_LOAD],
}


def wall(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7, metavar="R", help="runs per figure, best kept (7)")
    args = parser.parse_args(argv)
    best = dict.fromkeys(CASES, float("inf"))
    for _ in range(args.repeat):
        for name, case in CASES.items():
            best[name] = min(best[name], wall(case))
    print(
        f"Python {sys.version.split()[0]}; wall time of a fresh interpreter, best of {args.repeat}, "
        "interleaved (a shared machine inflates all of them)"
    )
    for name, seconds in best.items():
        print(f"  {name:<46} {seconds:6.3f} s")
    for name, before, goal in (
        ("import labkit", "import labkit, eagerly (before)", 0.5),
        ("labkit --help", "labkit --help, every command (before)", 1.0),
        ("first fixture load", "first fixture load, rfc3987_syntax (before)", None),
    ):
        now = best[name]
        verdict = (
            ""
            if goal is None
            else "; goal <= {} s: {}".format(
                goal,
                "met"
                if now <= goal
                else (f"NOT met: the interpreter alone takes {best['python -c pass']:.3f} s here"),
            )
        )
        print(
            f"{name}: {now:.3f} s, {best[before] / now:.1f}x faster than before ({best[before]:.3f} s)"
            + verdict
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
