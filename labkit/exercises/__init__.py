"""Checkers for the learners' build-it cells and exercises, one module per lab.

    from labkit.exercises import lab01
    lab01.check_workflow(my_workflow)

Every checker takes what the learner wrote (a function, a value), runs it the way the lab
does, and returns a `Check`: `passed`, one or two sentences saying what to fix (or what
now holds), and sometimes a table. A checker never raises for a learner's mistake and never
shows a traceback: an answer that crashes is reported as "your function raised
KeyError: 'id' on case deploy-build".
"""

from labkit.core.check import Check

__all__ = ["Check"]
