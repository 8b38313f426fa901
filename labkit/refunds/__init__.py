"""Lab 03, `notebooks/03_refund_attack_lab.ipynb`: a fictional shop, a refund tool, injected text, and
the defenses that hold or do not. The policy proposes; the refund tool enforces (`tools.refund`). The
lab's map, and what its notebook imports:

- the shop and its money: `refund_lab()` (the shop, its requests, its attacks), `Refund`, `RefundCall`,
  `cents`, `dollars`, `MAX_CENTS`, `rules_text` (the refund rules in words), `authorise`
- one episode: `refund_episode(request, decide, defenses=..., attack=..., place=...)`, `EpisodeState`,
  `Faults`, `TIMEOUT_MESSAGE`; the two scripted policies `gullible` and `careful`, `instructions_in`,
  `timed_out`
- attacks and defenses: `PLACES`, `goal_text`, `succeeded`, `DEFENSES`, `Defenses`, `rubber_stamp`,
  `provenance_refusal`
- scoring: `suite`, `utility`, `unauthorized`, `duplicates`, `money_lost`, `matrix` (attack x defense),
  `COLUMNS`, `course_scores`; with intervals: `matrix_intervals`, `defense_comparisons`, `compare_scores`,
  `episodes_of` (one row per episode, by request and attack)
- the model's rows, replayed: `model_specs`, `model_table`, `model_scores`, `model_comparisons`,
  `attribution`, `rates_with_intervals`, `LADDER_DEFENSES`, `request_design` and `recorded_sd`
  (lab03-model's size); the recording: `read_records`, `TRIALS`, `is_episode`, `random_baseline` (the
  drawn random-admissible baseline), `backend_for`
- display: `short`, `legend`, `success_by_attack`, `family_table`, `utility_security` (the chart)

Its checkers are `labkit.exercises.lab03`.
"""

from labkit.core.face import face

__all__, __getattr__, __dir__ = face(
    globals(),
    {
        "labkit.model.factory": "backend_for",
        "labkit.model.record": "read_records",
        "labkit.model.replay": "TRIALS",
        "attacks": "PLACES goal_text succeeded",
        "charts": "utility_security",
        "defenses": "DEFENSES Defenses provenance_refusal rubber_stamp",
        "display": "family_table legend short success_by_attack",
        "episode": "refund_episode",
        "grid": "is_episode",
        "intervals": "compare_scores defense_comparisons episodes_of matrix_intervals",
        "lab": "refund_lab",
        "metrics": "COLUMNS course_scores duplicates matrix money_lost suite unauthorized utility",
        "model_rows": "LADDER_DEFENSES attribution model_comparisons model_scores model_specs model_table "
        "rates_with_intervals recorded_sd request_design",
        "policies": "careful gullible instructions_in timed_out",
        "rules": "authorise rules_text",
        "shop": "MAX_CENTS Refund RefundCall cents dollars",
        "tools": "EpisodeState Faults TIMEOUT_MESSAGE",
        "": "random_baseline",
    },
)
