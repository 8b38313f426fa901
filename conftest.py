"""pytest configuration shared by the unit tests and nbval.

nbval 0.11 compares every MIME type of a checked cell except images, `text/html`
included, so a DataFrame's HTML or a trace table would fail on whitespace alone. Checked
cells are compared through their plain text; HTML, JavaScript and stderr are skipped.
"""

import os
import tempfile
from pathlib import Path

import pytest


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("text/html", "application/javascript", "stderr")


# An untouched copy is no work done. nbval runs each lab exactly as a learner's fresh copy runs:
# a new kernel, every cell top to bottom, every build-it and exercise cell as shipped (the
# committed outputs are only compared, never used). So each lab's kernel gets a progress folder
# of its own, and the lab's last cell fails if any checker recorded an attempt: the file that
# `labkit submit` would hand in, and the class round count, must stay empty. (Running the four
# student copies again in a test of their own cost the suite 10 s.)
UNTOUCHED = {
    "01_baseline_comparison.ipynb": "01",
    "02_decision_loop.ipynb": "02",
    "03_refund_attack_lab.ipynb": "03",
    "04_routing_cycles.ipynb": "04",
}
_runs: dict[str, Path] = {}
_last: dict[str, str] = {}


def _lab_notebook(item: pytest.Item) -> str | None:
    path = Path(str(item.fspath))
    return (
        path.name
        if path.suffix == ".ipynb" and path.parent.name == "notebooks" and path.name in UNTOUCHED
        else None
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Note the last cell of each lab notebook (after tests/conftest.py ordered the items)."""
    for item in items:
        if (name := _lab_notebook(item)) is not None:
            _last[name] = item.nodeid


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before a lab notebook's kernel starts (its first cell's setup): its own LABKIT_RUNS."""
    name = _lab_notebook(item)
    if name is not None and name not in _runs:
        _runs[name] = Path(tempfile.mkdtemp(prefix=f"labkit-nbval-{UNTOUCHED[name]}-"))
        os.environ["LABKIT_RUNS"] = str(_runs[name])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    name = _lab_notebook(item)
    if name is None or call.when != "call" or _last.get(name) != item.nodeid:
        return
    report = outcome.get_result()
    progress = _runs[name] / "progress" / f"lab{UNTOUCHED[name]}.json"
    if report.passed and progress.exists():
        report.outcome = "failed"
        report.longrepr = (
            f"{name} run as shipped recorded attempts, so an untouched student copy "
            f"would submit work nobody did:\n{progress.read_text()[:2000]}"
        )
