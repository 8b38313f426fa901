"""Files of the class round, read and written so that no file can stall, fool or destroy anything.

`read_regular(path, max_bytes)` opens a file once, non-blocking and without following a link,
and decides from the opened descriptor (fstat), never from an earlier look at the path: a
FIFO, a device, a folder or a link swapped in at any moment is refused, never waited on.

`hand_in(data, folder, stem)` writes a submission into a shared folder (a USB stick, a
network share) as `stem.json`, or `stem-2.json`, `stem-3.json`... when that name is taken:
it never replaces a file that is already there, even when 30 laptops write at once.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

MAX_COPIES = 99  # stem.json .. stem-99.json: past that, the folder is refused, not filled


class Refused(ValueError):
    """A file that is not read (one phrase saying why)."""


def read_regular(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file `path`, at most `max_bytes`; Refused (one phrase) otherwise."""
    flags = os.O_RDONLY | os.O_NONBLOCK if hasattr(os, "O_NONBLOCK") else os.O_RDONLY
    for name in ("O_NOFOLLOW", "O_CLOEXEC", "O_NOCTTY", "O_BINARY"):
        flags |= getattr(os, name, 0)
    not_regular = "not a regular file (a link, a folder or a device): not read"
    if not hasattr(os, "O_NOFOLLOW") and path.is_symlink():  # Windows: no O_NOFOLLOW
        raise Refused(not_regular)
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if error.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
            raise Refused(not_regular) from None
        raise Refused(f"cannot read it ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(not_regular)
        if info.st_size > max_bytes:
            raise Refused(f"{info.st_size:,} bytes: larger than the {max_bytes:,} it may be")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise Refused(f"cannot read it ({error.strerror or error})") from None
    finally:
        os.close(fd)
    if size > max_bytes:
        raise Refused(f"larger than the {max_bytes:,} bytes it may be")
    return b"".join(chunks)


def _place(tmp: str, target: Path) -> bool:
    """Put the finished file `tmp` at `target` only if nothing is there; False if something is."""
    try:
        os.link(tmp, target)  # atomic, and fails if target exists: never replaces a file
        return True
    except FileExistsError:
        return False
    except OSError:  # no hard links here (a FAT USB stick): create exclusively, then copy in
        pass
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    except FileExistsError:
        return False
    try:
        with open(tmp, "rb") as source:
            os.write(fd, source.read())
    except OSError:
        os.close(fd)
        target.unlink(missing_ok=True)  # no partial submission left behind
        raise
    os.close(fd)
    return True


def hand_in(text: str, folder: Path, stem: str) -> Path:
    """Write `text` into `folder` as `stem.json` (or the first free `stem-N.json`); the path written.

    Never replaces an existing file; OSError if the folder cannot take it, FileExistsError if
    MAX_COPIES names are all taken.
    """
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".submission-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, 0o644)  # a temporary file is private; a submission is meant to be handed over
        for copy in range(1, MAX_COPIES + 1):
            target = folder / (f"{stem}.json" if copy == 1 else f"{stem}-{copy}.json")
            if _place(tmp, target):
                return target
        raise FileExistsError(f"{folder} already holds {stem}.json to {stem}-{MAX_COPIES}.json")
    finally:
        Path(tmp).unlink(missing_ok=True)
