"""Errors that mean "the lab is set up wrong" (one sentence; the CLI prints it and exits 2), not a
policy's counted outcomes."""

import sys
from typing import Any


class LabError(Exception):
    """A mistake in the lab's inputs or configuration, with a one-line message (serves: user, environment)."""


class FixtureError(LabError, ValueError):
    """A fixture file is missing, not JSON, or breaks its schema (message names file, record, field).
    (serves: untrusted file, ours — a shipped fixture too)"""


class ProviderError(OSError):
    """A backend failed (server down, timeout, HTTP error, bad reply): an OSError, not a LabError, the
    runtime counts it as `provider_error`."""


def one_line(
    shell: Any, kind: type[BaseException], error: BaseException, tb: Any, tb_offset: Any = None
) -> list[str]:
    """IPython's custom-exception handler for LabError: print `LabError: message` on stderr, the one
    line the CLI prints, instead of a traceback through labkit's frames (the mistake is the user's,
    the frames are ours). The cell still fails, so Run All stops there. Returns that line."""
    line = f"{kind.__name__}: {error}"
    print(line, file=sys.stderr)
    return [line]


def errors_in_one_line() -> bool:
    """In an IPython kernel (a notebook), show every LabError as `one_line`; True if one was found.
    Outside IPython nothing changes: there is no shell to tell, and the CLI prints its own line."""
    ipython = sys.modules.get("IPython")  # a kernel imported it already; nothing else needs it
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    shell.set_custom_exc((LabError,), one_line)
    return True
