"""Where labkit writes: the git-ignored `runs/` folder (live recordings, learners' progress).

`runs_dir()` is `$LABKIT_RUNS` when set, else `runs/` beside `labkit/` in a source checkout
(the course's layout, so a notebook in `notebooks/` and a terminal at the root agree), else
`./runs` for an installed copy. Nothing is created until something is written.

`write_whole(path, text)` is how labkit writes a file a reader may open at any moment (a
learner's progress, predictions, a submission): a temporary file in the same folder, then one
rename, so the reader finds the old file or the new one, never half of it.
"""

from __future__ import annotations

import os
import tempfile
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


def write_whole(path: Path, text: str, *, mode: int | None = None) -> Path:
    """Write `text` to `path` whole (see the module docstring); the folder is created.

    `mode` sets the file's permissions (a temporary file is private). An OSError passes on to
    the caller, and no temporary file is left behind either way.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)
    return path
