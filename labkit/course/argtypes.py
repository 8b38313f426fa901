"""argparse types shared by the commands: numbers in range and output paths, refused in one line.
(serves: user — a CLI option's mistake)"""

import argparse
import tempfile
from collections.abc import Callable
from pathlib import Path

from labkit.core.text import shorten

SEED_MAX = 2**31 - 1  # the local model's sampler takes a 32-bit seed, and trial t uses seed + t


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
        if not low <= value <= high:
            bound = f"at least {low}" if value < low else f"at most {high}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {shown}")
        return value

    return parse


positive = int_in(1, 2**53)


def _can_create_in(folder: Path) -> None:
    """ValueError (one phrase) unless a file can be created in `folder` (tried: permissions, /proc)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".labkit-probe-"):
            pass
    except OSError as error:
        raise ValueError(f"cannot create a file in {folder} ({error.strerror or error})") from None


def output_path(text: str | Path, *, suffix: str | None = None, folder_ok: bool = False) -> Path:
    """`text` as a path a file can be written at (the caller creates missing folders), checked before any
    work; ValueError (one phrase) if not: not `suffix`, a folder (unless `folder_ok`), under a file, ..."""
    path = Path(text)
    if str(text) == "" or path.name in ("", ".", ".."):
        raise ValueError(f"{str(text)!r} is not a file name")
    if path.is_dir():
        if not folder_ok:
            raise ValueError(f"{path} is a folder: give a file name inside it")
        _can_create_in(path)
        return path
    if suffix is not None and path.suffix.lower() != suffix:
        raise ValueError(f"{path} must end in {suffix}")
    if path.is_symlink() or (path.exists() and not path.is_file()):
        raise ValueError(f"{path} exists and is not a regular file")
    existing = next(p for p in (*path.parents, Path(".")) if p.exists() or p.is_symlink())
    if not existing.is_dir():
        raise ValueError(f"{existing} is a file, not a folder: {path} cannot be written under it")
    _can_create_in(existing)
    return path


def output_type(*, suffix: str | None = None, folder_ok: bool = False) -> Callable[[str], Path]:
    """An argparse type: `output_path(text, ...)`, its refusal a one-line usage error."""

    def parse(text: str) -> Path:
        try:
            return output_path(text, suffix=suffix, folder_ok=folder_ok)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def trials_file(text: str) -> str:
    """An argparse type: a trials file's path, refused if it names a folder (a missing file is the reader's
    one line, naming it)."""
    if Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder, not a trials file: give a .jsonl file in it")
    return text


def folder_type(text: str) -> Path:
    """An argparse type: an existing folder a file can be created in (a USB stick, a shared folder)."""
    path = output_type(folder_ok=True)(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{path} is not a folder")
    return path
