"""Where labkit writes: the git-ignored `runs/` folder (live recordings, learners' verdicts)."""

import os
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def runs_dir() -> Path:
    """`$LABKIT_RUNS` when set, else a source checkout's `runs/`, else `./runs` (not created here)."""
    if chosen := os.environ.get("LABKIT_RUNS"):
        return Path(chosen)
    if (CHECKOUT / "fixtures").is_dir() and (CHECKOUT / "notebooks").is_dir():
        return CHECKOUT / "runs"
    return Path.cwd() / "runs"


def write_whole(path: Path, text: str, *, mode: int | None = None) -> Path:
    """Write `text` to `path` through a temporary file renamed over it (a reader finds the old file or the
    new, never half), folder created, permissions `mode`, no temporary file left; an OSError passes on."""
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
