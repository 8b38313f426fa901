"""Lab 01, `notebooks/01_baseline_comparison.ipynb`: a keyword route, a fixed workflow and a
bounded decision loop on the same graded docuctl cases.

- `task`: the validated task (`Task`, `task_from`);
- `documents` and `corpus`: the docuctl pages, their search index and the fixture folder;
- `controllers`: the three controllers and their variants (fallback, adaptive), and the
  docuctl tools they share with lab 02;
- `grading`: the one independent grader (`outcome`) and the comparison table (`compare`);
- `plots`: outcomes against tool calls;
- `checks`: the build-it cell's and the exercises' checkers (`labkit.exercises.lab01`).
  `answers` handles a learner's answer as untrusted input (plain values, labkit's own version
  recognised, the tools counted); `diagnosis` judges Exercise 1's reason on the trace's facts.
"""
