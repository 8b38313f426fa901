"""The model seam: one policy class (`ModelPolicy`) and four backends chosen by `LABKIT_MODEL`
(`factory`); `LABKIT_RECORD=<file>` records every live call with its provenance. The seam knows no
lab: a lab passes in its tools, prompt and how a task is shown; `constraints` says what a rung admits."""

from labkit.model.backend import Backend, ChatRequest, Reply
from labkit.model.factory import backend_for, backend_from_env, parse_spec
from labkit.model.policy import ModelPolicy
from labkit.model.record import Recorder, read_records
from labkit.model.replay import ReplayBackend, ReplayMiss, trial_files

__all__ = [
    "Backend",
    "ChatRequest",
    "ModelPolicy",
    "Recorder",
    "Reply",
    "ReplayBackend",
    "ReplayMiss",
    "backend_for",
    "backend_from_env",
    "parse_spec",
    "read_records",
    "trial_files",
]
