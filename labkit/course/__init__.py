"""The course wing: tooling around the labs that no notebook teaches.

- `cli` and `commands`: `python -m labkit COMMAND`, one module per command (`argtypes`: their types);
- `classroom`: a learner's work as data (`submission`), the class round (`merge`), `labkit rerun`;
- `grid`: trial grids run once per episode, in-process or on Dask;
- `setup_check` (`00_start_here`), `student` (`make student`), `jupyter_settings`, `pytest_plugin`.

The course wing may import any lab; no lab, core or model module imports it.
"""
