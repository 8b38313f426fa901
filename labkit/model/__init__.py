"""The model seam: one policy class, four backends, chosen by `LABKIT_MODEL`.

    from labkit.model import ModelPolicy, backend_from_env
    policy = ModelPolicy(lab="docuctl", tools=tools, instructions="...", describe=describe)
    decision = policy(task, observations)   # parsed JSON; the runtime validates it

Backends: ``replay`` (default; recorded trials in `fixtures/trials/`), ``local``
(SmolLM2-135M-Instruct through llama-cpp-python, `make model`), ``ollama:<tag>``,
``openai:<model>`` (any OpenAI-compatible server).
Modules: `backend` (the types every backend shares), `factory` (`LABKIT_MODEL` to a backend),
`replay`, `local`, `ollama`, `openai_chat`, `record` (`LABKIT_RECORD=<file>` records every live
call with its provenance), `constraints` and `schema` (the constraint ladder: what a rung admits),
`policy` (`ModelPolicy`), `install` (`make model`'s model file). The seam knows no lab: a lab
passes in its tools, prompt and how a task is shown.
"""

from labkit.model.backend import Backend, Reply, Request
from labkit.model.factory import backend_for, backend_from_env, parse_spec
from labkit.model.policy import ModelPolicy, observe_json
from labkit.model.record import Recorder, read_records
from labkit.model.replay import ReplayBackend, ReplayMiss, trial_files
from labkit.model.schema import decision_schema, parse_reply

__all__ = [
    "Backend",
    "ModelPolicy",
    "Recorder",
    "Reply",
    "ReplayBackend",
    "ReplayMiss",
    "Request",
    "backend_for",
    "backend_from_env",
    "decision_schema",
    "observe_json",
    "parse_reply",
    "parse_spec",
    "read_records",
    "trial_files",
]
