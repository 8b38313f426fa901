"""Errors that mean "the lab is set up wrong", as opposed to counted outcomes.

A policy that proposes nonsense is not an error here: the runtime turns it into a counted
stop reason. These exceptions are for the person running the lab — a malformed fixture, an
unrecorded replay request, an unknown CLI option — and each carries one sentence that names
what was wrong. The CLI prints that sentence and exits 2; nothing else catches them.
"""

from __future__ import annotations


class LabError(Exception):
    """Base class: a mistake in the lab's inputs or configuration, with a one-line message."""


class FixtureError(LabError, ValueError):
    """A fixture file is missing, not JSON, or breaks its schema (message names file, record, field)."""


class ProviderError(OSError):
    """A model backend failed (server down, timeout, HTTP error, unparseable reply).

    Not a LabError: the runtime counts it as the stop reason `provider_error`, exactly like
    the builtin ConnectionError the ollama client raises when no server listens.
    """
