"""Lab 04, `notebooks/04_routing_cycles.ipynb`: a task graph with validation, concurrency, retries, routers
and loops that end. Declare jobs with `Graph().job(id, fn, deps=[...])`, loops with
`graph.route(job, router, targets=[...])`; `graph.run(max_visits=3)` returns a `RunResult`. The lab's map,
and what its notebook imports:

- the graph: `Graph`, `GraphError`, `InvalidInput`, `Next` (a router's answer), `RetryPolicy`, `Context`,
  `RunResult`, `State`, `Event`, `TRANSITIONS`, `FINAL_STATES`, `FakeClock`; the scheduler's
  `ready_after`; its timeline: `plot_timeline`, `spans`
- the lab's experiments: `fan_graph`, `parallel_experiment`, `FETCH_SECONDS`, `flaky`, `RETRY_CASES`,
  the review loop (`DRAFT`, `LIMIT`, `LOOP_SECONDS`, `Reviser`, `loop_graph`, `within_limit`,
  `cutter_experiment`, `summary_row`, `visit_table`), `cache_stop_experiment`
- a model as the reviser: `control_table`, `reply_source`, `deletions_of`, `judge_table`,
  `judge_experiment`, `backend_for`; its recorded trials: `sampled_runs`, `reviser_table`,
  `reviser_comparisons`, `FEEDBACK_QUESTION`

Its checkers are `labkit.exercises.lab04`.
"""

from labkit.core.face import face

__all__, __getattr__, __dir__ = face(
    globals(),
    {
        "labkit.model.factory": "backend_for",
        "clock": "FakeClock",
        "errors": "GraphError InvalidInput",
        "experiments": "DRAFT FETCH_SECONDS LIMIT LOOP_SECONDS RETRY_CASES Reviser cache_stop_experiment "
        "cutter_experiment fan_graph flaky loop_graph parallel_experiment summary_row visit_table "
        "within_limit",
        "graph": "Graph",
        "model_reviser": "control_table deletions_of judge_experiment judge_table reply_source",
        "plan": "Context",
        "result": "RunResult",
        "retry": "RetryPolicy",
        "reviser_trials": "FEEDBACK_QUESTION reviser_comparisons reviser_table sampled_runs",
        "route": "Next",
        "scheduler": "ready_after",
        "states": "FINAL_STATES TRANSITIONS Event State",
        "timeline": "plot_timeline spans",
    },
)
