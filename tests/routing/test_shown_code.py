"""Code the lab 04 notebook shows as labkit's is labkit's, statement for statement (compared as syntax
trees, so indentation and order count; comments and blank lines do not): the ready step, the routers
and the two methods of a run that cap a loop, so a cell and the library cannot drift."""

import pytest
from shown_code import same_tree

from labkit.routing.experiments import within_limit, without_feedback
from labkit.routing.scheduler import _Run, ready_after

SHOWN = [ready_after, within_limit, without_feedback, _Run.goto, _Run.dead_letter]


@pytest.mark.parametrize("function", SHOWN, ids=lambda f: f.__name__)
def test_the_cell_showing_labkits_function_holds_its_code(function):
    shown, labkits = same_tree("04_routing_cycles.ipynb", function)
    assert shown == labkits
