"""Lab 03's cells that show labkit's code hold it statement for statement (compared as syntax trees, so
indentation and order count; comments and blank lines do not): the refund tool's checks, in order,
and the sum of a matrix row, so the cell and the library cannot drift."""

import pytest
from shown_code import same_tree

from labkit.refunds import metrics, tools


@pytest.mark.parametrize("function", [tools.first_refusal, tools.refund, metrics.matrix_row])
def test_the_cell_holds_labkits_own_code(function):
    shown, labkits = same_tree("03_refund_attack_lab.ipynb", function)
    assert shown == labkits
