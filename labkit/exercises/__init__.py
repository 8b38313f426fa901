"""Checkers for the learners' build-it cells and exercises, one module per lab
(``from labkit.exercises import lab01; lab01.check_workflow(my_workflow)``): each returns a `Check`.
"""

from labkit.core.check import Check

__all__ = ["Check"]
