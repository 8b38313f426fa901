"""The labs a grid can run, each by the class it hands the course wing: `spec`, `episode` and `labkit grid`
call the same names of every lab's class and know no lab themselves.

A grid lab's class defines, as class attributes and static methods (each one's docstring says what it
checks and returns; tests/course/test_grid_labs.py checks that every class has them):

- `CELL_AXES`: the spec's axes whose every combination is a cell (one run label), in order;
  `INNER_AXIS`: the axis each cell runs k times over (its values are the episodes' cases or variants)
- `fill_schema(axes)`: fills in the lab's axes of spec.schema.json what the lab defines in Python
  (enums, defaults, bounds)
- `inner_values(path, chosen)`: the inner axis' values a spec chose, a named set expanded; one
  FixtureError naming the spec and the field of a value the lab does not know
- `cell_episode(cell, inner, values, *, backend, seed_tag)`: the lab's fields of one episode (rung,
  case, label, prompt; options, max_tokens and budget_tokens where the lab has them)
- `record_episode(backend, episode, model_name)`: runs one episode on `backend`; its episode record
- `grid_report(record, *, as_json, width)`: what `labkit grid` prints once the recording is complete

A class, not a module of those names: a public name is defined in one module only (tests/test_layout.py),
so each lab's namespace has a name of its own. Each is imported only when a grid is read: `labkit --help`
imports no lab (and no pandas).
"""

import pkgutil

DEFAULT_LAB = "docuctl"  # a spec or an episode record that names no lab is lab 02's: grids began there
# Lab name -> its class, "module:name" as a Python entry point is written.
GRID_LABS = {
    "docuctl": "labkit.decision_loop.evaluation:DocuctlGrid",
    "refunds": "labkit.refunds.grid:RefundGrid",
    "routing": "labkit.routing.reviser_trials:RoutingGrid",
}


def grid_lab(lab: str) -> type:
    """The class lab `lab` (a key of GRID_LABS) runs its grids with, its module imported at the first
    call. KeyError for a lab not in GRID_LABS: `spec.load_spec` refuses a spec naming one before asking."""
    return pkgutil.resolve_name(GRID_LABS[lab])
