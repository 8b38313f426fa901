"""Fixtures shared by the unit tests, and how `make test` spreads them over the cores."""

import gc
import os

import pytest

from labkit.core import check as core_check
from labkit.course.cli import main


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
    """The timeout of every decision the runtime takes from now on, in order (None: the decision
    ran in the caller's thread, without a timeout thread)."""
    from labkit.core import runtime

    waits: list[float | None] = []
    decide_within = runtime._decide_within

    def noted(decide, task, observations, timeout):
        waits.append(timeout)
        return decide_within(decide, task, observations, timeout)

    monkeypatch.setattr(runtime, "_decide_within", noted)
    return waits


@pytest.fixture
def short_limit(monkeypatch):
    """A learner's code gets 0.2 s a case instead of the checkers' 3 s, so a hang costs the suite
    little."""
    monkeypatch.setattr(core_check, "LIMIT_S", 0.2)


@pytest.fixture(autouse=True)
def _runs_in_tmp(tmp_path, monkeypatch):
    """Checkers record progress under runs/; tests keep theirs in a temporary folder."""
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / "runs"))


# Files that take longest, longest first, in seconds of one worker's time measured alone on the
# 2-core course machine (pytest -n 0 --durations=0, summed per file). `make test` gives each xdist
# worker one whole file at a time (--dist loadfile) in collection order (--no-loadscope-reorder);
# xdist's own order, most tests first, handed out the 4-test browser file last and left the other
# worker idle for its 13 s (then 50 s in all). Longest first, then the rest as collected, leaves
# only short files for the end.
SLOWEST_FIRST = (
    "tests/test_model_local.py",  # 6-12 s with the live model (one thread decoding)
    "tests/test_browser.py",  # 12 s: a JupyterLab server, Chromium, two Run Alls, four diagrams
    "tests/test_rerun.py",  # 9-12 s: five papermill kernels, lab 04 replayed whole (mostly sleeps)
    "tests/test_grid_run.py",  # 11 s: Dask clusters
    "tests/test_classroom.py",  # 8 s
    "tests/test_lab02_knobs.py",  # 8 s: three kernels
    "tests/test_model_openai.py",  # 4-9 s with the live server
    "notebooks/02_decision_loop.ipynb",  # 3-7 s each: a kernel per notebook
    "notebooks/04_routing_cycles.ipynb",
    "notebooks/03_refund_attack_lab.ipynb",
    "tests/test_refunds_model.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Put SLOWEST_FIRST's files first, in its order; keep every file's own items in order."""
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


# Python's full garbage collections walk every object still alive: in a worker, ~380,000 by
# the end (modules, test items, pandas, hypothesis's data), 0.3 s a walk, 9-12 walks a worker,
# 5.5 CPU-s over the suite. What is alive when collection ends, and when a test file ends, mostly
# stays alive to the end, so it is frozen (gc.freeze: left out of later walks; objects freed by
# reference counting are freed as before). Measured on the 2-core course machine: the walks
# 5.5 -> 1.0 CPU-s, `make test` 48 -> 44 s in the same hour.
def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if nextitem is None or nextitem.path != item.path:
        gc.freeze()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores, since much of the suite waits rather than computes
    (kernels starting and stopping, a JupyterLab server, Dask processes, the lab 04 timing demos).
    Measured on the 2-core course machine, `make test` without the live test: 2 workers 39.4 and
    40.3 s, 3 workers 37.4 and 37.4 s, 4 workers 41.0 s."""
    return (os.cpu_count() or 1) + 1

