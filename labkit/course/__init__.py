"""The course wing: tooling around the labs that no notebook teaches.

- `cli` and `commands`: `python -m labkit COMMAND`, one module per command;
- `classroom`: a learner's work as data (`submission`), the class round (`merge`), and
  `labkit rerun` (papermill);
- `grid`: trial grids run once per episode, in-process or on Dask;
- `setup_check` (`00_start_here`), `student` (`make student`), `jupyter_settings`,
  `pytest_plugin`, `argtypes` (argparse types shared by the commands).

The course wing may import any lab; no lab, core or model module imports it
(tests/test_layout.py).
"""
