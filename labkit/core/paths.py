"""Where labkit writes: the git-ignored `runs/` folder (live recordings, learners' progress).

`runs_dir()` is `$LABKIT_RUNS` when set, else `runs/` beside `labkit/` in a source checkout
(the course's layout, so a notebook in `notebooks/` and a terminal at the root agree), else
`./runs` for an installed copy. Nothing is created until something is written.
"""

from __future__ import annotations

import os
from pathlib import Path

ENV = "LABKIT_RUNS"
CHECKOUT = Path(__file__).resolve().parents[2]


def runs_dir() -> Path:
    """The folder labkit writes runs and progress into (not created here)."""
    chosen = os.environ.get(ENV)
    if chosen:
        return Path(chosen)
    if (CHECKOUT / "fixtures").is_dir() and (CHECKOUT / "notebooks").is_dir():
        return CHECKOUT / "runs"
    return Path.cwd() / "runs"
