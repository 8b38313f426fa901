"""The shared core: what two or more labs use, and nothing that belongs to one lab.

- `runtime`: the bounded decision loop (`run`, `Budget`) that lab 02 teaches and lab 03's
  refund episodes run on, built of `decisions` (`Tool`, `validate_decision`: what a policy may
  propose), `timeouts` (the worker thread a step timeout stops waiting for) and `result`
  (`Result`, the stop reasons); `labkit.core.runtime` re-exports their names;
- `display`: how a `Result` renders (an HTML table in JupyterLab, plain text for nbval);
- `fixtures`: reading a JSON fixture file with bounded size and a schema, one message format;
- `errors`, `paths`, `colours`, `text`: the error types, where files live, the course's
  colours, and short text helpers;
- `check`, `answers` and `progress`: the `Check` verdict every lab's checker returns; a learner's
  answer run as untrusted input (copies, a time limit, output cut, the learner's line named,
  labkit's own implementation recognised); the record of each attempt under `runs/progress/`
  that `labkit submit` reads;
- `predictions`: the learner's prediction before a table, compared with the result and kept;
- `intervals`: Wilson intervals, the bootstrap over cases and paired comparisons that every
  rate of labs 02–04 is reported with.

Nothing here imports a lab, the model seam or the course wing (tests/test_layout.py).
"""
