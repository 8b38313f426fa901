"""Lab 02, `notebooks/02_decision_loop.ipynb`: the runtime that validates what a policy proposes, and a
language model behind it on the constraint ladder. The lab's map, and what its notebook imports:

- lab 01's task, tools and grader, which lab 02 reuses: `docuctl`, `docuctl_tools`, `task_from`,
  `scripted`, `graded`
- the model policy: `docuctl_policy(prompt, backend=...)` (the prompt, the ladder's rung, the schema),
  `DOCUCTL_RULES`; what a rung admits: `admissible_schema`; backends: `ReplayBackend`, `backend_for`
- replayed evidence: `replay_case`, `replay_trials(path)`, `TRIALS` (the recorded trials' folder),
  `under_limits(max_turns, max_tools)`; live trials: `run_trials`
- the ladder's tables: `ladder_recordings`, `ladder_rows`, `ladder_table`, `ladder_changes`,
  `ladder_stops`, `exact_baselines`, `baseline_table`, `ladder_with_baselines`, `compare_runs`, `ending`,
  `IntervalTable` (a table with its intervals); charts: `plot_with_baselines`, `plot_ladder_stops`

The runtime itself is `labkit.core`'s `run`; lab 02's checkers are `labkit.exercises.lab02`.
"""

from labkit.core.face import face

__all__, __getattr__, __dir__ = face(
    globals(),
    {
        "labkit.baseline.controllers": "docuctl_tools scripted",
        "labkit.baseline.corpus": "docuctl",
        "labkit.baseline.grading": "graded",
        "labkit.baseline.task": "task_from",
        "labkit.model.constraints": "admissible_schema",
        "labkit.model.factory": "backend_for",
        "labkit.model.replay": "TRIALS ReplayBackend",
        "evaluation": "replay_case replay_trials under_limits",
        "ladder": "baseline_table exact_baselines ladder_changes ladder_recordings ladder_rows ladder_stops "
        "ladder_table ladder_with_baselines plot_ladder_stops plot_with_baselines",
        "model_policy": "DOCUCTL_RULES docuctl_policy",
        "tables": "IntervalTable compare_runs ending",
        "trials": "run_trials",
    },
)
