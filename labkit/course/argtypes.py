"""argparse types shared by the commands: numbers in range and output paths, refused in one line.

Kept out of `labkit.course.commands` (every module there is a command) and free of heavy imports,
so a command that needs them imports nothing else.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from labkit.core.text import shorten


def temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value <= 2:
        raise argparse.ArgumentTypeError(f"must be in 0..2, got {value:g}")
    return value


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an int from `low` to `high` (a 401-digit seed is a usage error)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:  # also a number past Python's 4,300-digit limit
            raise argparse.ArgumentTypeError(f"not an integer: {shorten(text, 20)!r}") from None
        shown = str(value) if abs(value) < 10**20 else "a number that large"
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {shown}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high}, got {shown}")
        return value

    return parse


positive = int_in(1, 2**53)
SEED_MAX = 2**31 - 1  # the local model's sampler takes a 32-bit seed, and trial t uses seed + t


def _nearest_existing(path: Path) -> Path:
    """`path` or its closest ancestor that exists (lstat: a dangling link counts as existing)."""
    for candidate in (path, *path.parents):
        try:
            candidate.lstat()
        except OSError:
            continue
        return candidate
    return Path(path.anchor or ".")


def _can_create_in(folder: Path) -> str | None:
    """Why a file cannot be created in the existing folder `folder` (one phrase), or None.

    Tried for real, with a temporary file removed at once: permissions, a read-only mount and
    pseudo file systems such as /proc (where even root cannot create a file) all answer here.
    """
    import tempfile

    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".labkit-probe-"):
            pass
    except OSError as error:
        return f"cannot create a file in {folder} ({error.strerror or error})"
    return None


def output_path(text: str | Path, *, suffix: str | None = None, folder_ok: bool = False) -> Path:
    """Check, before any work, that a file can be written at `text`; the path, or ValueError (one phrase).

    Refused: a path with another suffix than `suffix` (when given), an existing folder (unless
    `folder_ok`: the caller writes inside it), a path under a regular file, and a place where no
    file can be created (no permission, /proc). Folders missing on the way are fine (the
    caller creates them); the closest existing one must take a new file.
    """
    path = Path(text)
    if str(text) == "" or path.name in ("", ".", ".."):
        raise ValueError(f"{str(text)!r} is not a file name")
    if path.is_dir():
        if not folder_ok:
            raise ValueError(f"{path} is a folder: give a file name inside it")
        problem = _can_create_in(path)
        if problem is not None:
            raise ValueError(problem)
        return path
    if suffix is not None and path.suffix.lower() != suffix:
        raise ValueError(f"{path} must end in {suffix}")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ValueError(f"{path} exists and is not a regular file")
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        raise ValueError(f"{existing} is a file, not a folder: {path} cannot be written under it")
    problem = _can_create_in(existing)
    if problem is not None:
        raise ValueError(problem)
    return path


def output_type(*, suffix: str | None = None, folder_ok: bool = False) -> Callable[[str], Path]:
    """An argparse type: `output_path(text, ...)`, its refusal a one-line usage error."""

    def parse(text: str) -> Path:
        try:
            return output_path(text, suffix=suffix, folder_ok=folder_ok)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def folder_type(text: str) -> Path:
    """An argparse type: an existing folder a file can be created in (a USB stick, a shared folder)."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is not a folder" + (" (a file)" if path.exists() else ""))
    problem = _can_create_in(path)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return path
