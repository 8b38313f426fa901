"""labkit's lab-02 implementations that an answer may not hand in or delegate to.

The recognising itself (through `functools.partial`, `__wrapped__` and bound methods, and a call
seen with `sys.setprofile` while the learner's function runs) is `labkit.core.answers`.
"""

from __future__ import annotations

from labkit.core.answers import References
from labkit.core.runtime import run
from labkit.decision_loop.tables import pass_hat_k

REFERENCES = References(lambda: {run: "`run`", pass_hat_k: "`pass_hat_k`"})
handed_in = REFERENCES.handed_in
