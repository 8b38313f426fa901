"""Lab 01 (`notebooks/01_baseline_comparison.ipynb`): a keyword route, a fixed workflow and a bounded
decision loop on the same graded docuctl cases: `task`, `documents` and `corpus` (pages, search, fixtures),
`controllers`, `grading` (`outcome`, `compare`), `plots`, `checks` and `diagnosis` (lab 01's checkers)."""
