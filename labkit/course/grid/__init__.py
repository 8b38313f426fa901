"""Trial grids: a model study's axes as data, run exactly once per episode, here or on Dask.

- `labkit.course.grid.spec`: the grid file (TOML or JSON) and the episodes it expands to;
- `labkit.course.grid.episode`: one episode, run where the model is (returns records, writes none);
- `labkit.course.grid.run`: resume (what is left to run), and the run itself, in-process or on a
  `distributed` cluster, appending each finished episode to one recording.

`python -m labkit grid SPEC --record FILE [--workers N | --scheduler ADDRESS]` is the
command (`labkit.course.commands.grid`). Dask is imported only when a cluster is asked for.
"""
