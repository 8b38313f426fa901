"""pytest configuration shared by the unit tests and nbval.

nbval 0.11 compares every MIME type of a checked cell but images, so a DataFrame's HTML would
fail on whitespace alone: checked cells are compared through their plain text.
"""

import os
import tempfile
from pathlib import Path

import pytest

# nbval runs each lab as a learner's fresh copy runs, every build-it and exercise cell as shipped.
# Each lab's kernel gets a runs folder of its own, and its last cell fails if a checker recorded an
# attempt: an untouched student copy must submit nothing.
UNTOUCHED = {
    "01_baseline_comparison.ipynb",
    "02_decision_loop.ipynb",
    "03_refund_attack_lab.ipynb",
    "04_routing_cycles.ipynb",
}
_runs: dict[str, Path] = {}
_last: dict[str, str] = {}


def pytest_collectstart(collector):
    if collector.fspath and collector.fspath.ext == ".ipynb":
        collector.skip_compare += ("text/html", "application/javascript", "stderr")


def _lab_notebook(item: pytest.Item) -> str | None:
    path = Path(str(item.fspath))
    return path.name if path.parent.name == "notebooks" and path.name in UNTOUCHED else None


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
        _runs[name] = Path(tempfile.mkdtemp(prefix=f"labkit-nbval-{name[:2]}-"))
        os.environ["LABKIT_RUNS"] = str(_runs[name])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    name = _lab_notebook(item)
    if name is None or call.when != "call" or _last.get(name) != item.nodeid:
        return
    report = outcome.get_result()
    verdicts = _runs[name] / "progress" / f"lab{name[:2]}.json"
    if report.passed and verdicts.exists():
        report.outcome = "failed"
        report.longrepr = f"{name} run as shipped recorded attempts:\n{verdicts.read_text()[:2000]}"
