"""What two or more labs share, and the few names a notebook imports from it.

- the runtime (lab 02 builds its own): `run`, `Budget`, `Tool`, `validate_decision`, `Result`, `STOP_REASONS`
- errors a learner meets, each one line in a notebook: `LabError`, `FixtureError`, `ProviderError`
- a prediction written before a number is shown: `predict`; a run's trace as text: `trace_text`
- evidence: `questions` (the declared questions and their verdicts), `stats`, `coverage`, `forest_plot`
- `words` (the course's tokenizer), `runs_dir` (where a learner's own runs are written)

Everything else in `labkit.core` is plumbing the labs share: fixtures, checkers' verdicts, display.
"""

from labkit.core.face import face

__all__, __getattr__, __dir__ = face(
    globals(),
    {
        "decisions": "Tool validate_decision",
        "display": "trace_text",
        "errors": "FixtureError LabError ProviderError",
        "forest": "forest_plot",
        "paths": "runs_dir",
        "predictions": "predict",
        "result": "STOP_REASONS Result",
        "runtime": "Budget run",
        "text": "words",
        "": "coverage questions stats",
    },
)
