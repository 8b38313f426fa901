"""labkit: the helper package of Agent Engineering Labs.

Each lab has one public face, the package its notebook imports from: `labkit.baseline` (lab 01),
`labkit.decision_loop` (lab 02), `labkit.refunds` (lab 03), `labkit.routing` (lab 04); each face's
docstring is that lab's map. Every notebook also imports `labkit.exercises` (the checkers) and a few
names of `labkit.core` (the runtime, errors, predictions, evidence). Names load on first use, so
`import labkit` and `python -m labkit` do not pay for pandas, numpy and jsonschema they may never use.
"""

from labkit.core.cells import tables_unbroken
from labkit.core.errors import errors_in_one_line

# In a notebook a LabError (a user's mistake: an unknown name, a missing file) reads as one line, as
# on the CLI, not as a traceback through labkit's frames.
errors_in_one_line()
# A short table cell (an interval, a count) never breaks onto two lines in a narrow window.
tables_unbroken()
