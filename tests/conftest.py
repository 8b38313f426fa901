"""Fixtures shared by the unit tests, and how `make test` spreads them over the cores."""

import gc
import itertools
import os

import pytest
from hypothesis import settings

from labkit.core import check as core_check
from labkit.course.cli import main

# Under CI the property tests draw the same examples every run (no example database either), so a red CI
# is a failure anyone can reproduce with `CI=true make test`, not a draw; locally they explore afresh.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def cli(capsys):
    """Run `python -m labkit ARGS` in-process; return (exit status, stdout, stderr)."""

    def invoke(*argv: str) -> tuple[int, str, str]:
        try:
            code = main(list(argv))
        except SystemExit as exit:
            code = exit.code
        out, err = capsys.readouterr()
        return code, out, err

    return invoke


@pytest.fixture
def decision_waits(monkeypatch):
    """The timeout of every decision the runtime takes from now on (None: in the caller's thread)."""
    from labkit.core import runtime

    waits: list[float | None] = []
    ask_policy = runtime._ask_policy

    def noted(episode, entry, wait, *rest):
        waits.append(wait)
        return ask_policy(episode, entry, wait, *rest)

    monkeypatch.setattr(runtime, "_ask_policy", noted)
    return waits


@pytest.fixture
def short_limit(monkeypatch):
    """A learner's code gets 0.2 s a case instead of 3 s, so a hang costs the suite little."""
    monkeypatch.setattr(core_check, "LIMIT_S", 0.2)


_UNSHARED = itertools.count()


@pytest.fixture(autouse=True)
def _runs_in_tmp(request, tmp_path_factory, monkeypatch):
    """Checkers record progress under runs/; tests keep theirs in a temporary folder: tmp_path/runs in a
    test that has tmp_path, else a folder of its own, named but not made (making a tmp_path for each of
    the suite's tests, most of which write nothing, took a millisecond each)."""
    here = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    here = here or tmp_path_factory.getbasetemp() / f"no-tmp-path-{next(_UNSHARED)}"
    monkeypatch.setenv("LABKIT_RUNS", str(here / "runs"))


# Files that take longest, longest first, in seconds of one worker's time measured alone on the
# 2-core course machine (pytest -n 0 --durations=0, summed per file). `make test` gives each xdist
# worker one whole file at a time (--dist loadfile) in collection order (--no-loadscope-reorder);
# xdist's own order, most tests first, handed out the 4-test browser file last and left the other
# worker idle for its 13 s (then 50 s in all). Longest first, then the rest as collected, leaves
# only short files for the end.
SLOWEST_FIRST = (
    "tests/model/test_local_backend.py",  # 6-12 s with the live model (one thread decoding)
    "tests/course/test_browser.py",  # 12 s: a JupyterLab server, Chromium, two Run Alls, four diagrams
    "tests/course/test_rerun.py",  # 9-12 s: five papermill kernels, lab 04 replayed whole (mostly sleeps)
    "tests/course/test_grid_run.py",  # 11 s: Dask clusters
    "tests/course/test_class_round.py",  # 8 s
    "tests/decision_loop/test_lab02_knobs.py",  # 8 s: three kernels
    "tests/model/test_openai_backend.py",  # 4-9 s with the live server
    "notebooks/02_decision_loop.ipynb",  # 3-7 s each: a kernel per notebook
    "notebooks/04_routing_cycles.ipynb",
    "notebooks/03_refund_attack_lab.ipynb",
    "tests/refunds/test_refund_model_rows.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put SLOWEST_FIRST's files first, in its order; keep every file's own items in order."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


# What is alive when collection ends, and when a test file ends, mostly stays alive to the end:
# frozen (gc.freeze), full collections stop re-walking it (5.5 -> 1.0 CPU-s of gc over the suite).
def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if nextitem is None or nextitem.path != item.path:
        gc.freeze()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores, since much of the suite waits (kernels, a server,
    Dask) rather than computes: on 2 cores, 3 workers 37.4 s against 39.4 s for 2 and 41.0 s for 4."""
    return (os.cpu_count() or 1) + 1
