"""Errors that mean "the lab is set up wrong" (one sentence; the CLI prints it and exits 2), not a
policy's counted outcomes."""

from __future__ import annotations


class LabError(Exception):
    """A mistake in the lab's inputs or configuration, with a one-line message."""


class FixtureError(LabError, ValueError):
    """A fixture file is missing, not JSON, or breaks its schema (message names file, record, field)."""


class ProviderError(OSError):
    """A backend failed (server down, timeout, HTTP error, bad reply): an OSError, not a LabError, the
    runtime counts it as `provider_error`."""
