"""The shared core: what two or more labs use, and nothing that belongs to one lab.

- `runtime`: the bounded decision loop (`run`, `Budget`) that lab 02 teaches and lab 03's
  refund episodes run on, built of `decisions` (`Tool`, `validate_decision`: what a policy may
  propose), `timeouts` (the worker thread a step timeout stops waiting for) and `result`
  (`Result`, the stop reasons); `labkit.core.runtime` re-exports their names;
- `display`: how a `Result` renders (an HTML table in JupyterLab, plain text for nbval);
- `fixtures`: reading a JSON fixture file with bounded size and a schema, one message format;
- `errors`, `paths`, `colours`, `text`: the error types, where files live, the course's
  colours, and short text helpers;
- `check` and `progress`: the `Check` verdict every lab's checker returns, and the record of
  each attempt under `runs/progress/` that `labkit submit` reads.

Nothing here imports a lab, the model seam or the course wing (tests/test_layout.py).
"""
