"""Lab 02, `notebooks/02_decision_loop.ipynb`: the runtime's stop reasons, and a language
model behind the same runtime on the constraint ladder.

The runtime itself is shared (`labkit.core.runtime`: lab 03 runs on it too); what is lab 02's
lives here:

- `model_policy`: the docuctl prompts, how a task is shown, and the model policy built on
  `labkit.model`;
- `trials`: running and recording k trials of a policy over the docuctl cases;
- `evaluation`: trials run or replayed, one graded row per episode;
- `tables`: what the rows add up to: pass@1 and pass^k, endings, latency, decisions;
- `ladder`: the constraint ladder's tables and charts across rungs, with the baselines beside;
- `baselines`: what no model achieves, on the same cases, runtime and grader: random among the
  decisions a rung admits, "search, then answer as soon as the rung allows", lab 01's loops;
- `checks`: the build-it cell's and the exercises' checkers (`labkit.exercises.lab02`), with
  `run_cases` (the cases `check_run` holds) and `answers` (the labkit functions an answer may
  not hand in).
"""
