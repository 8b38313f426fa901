"""In a notebook a user's mistake (a LabError) reads as one line, as on the CLI, and the cell still
fails; any other exception keeps its traceback (a bug of ours, or the learner's, needs its frames)."""

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

MISTAKE = 'from labkit.refunds import refund_lab\nrefund_lab().request("no-such-request")'


def ran(*sources):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(notebook, kernel_name="python3", timeout=120, allow_errors=True)
    client.execute()
    return notebook.cells


def test_a_labkit_error_in_a_kernel_is_one_line_on_stderr_and_the_cell_fails():
    (mistake, bug) = ran(MISTAKE, "import labkit\n1 / 0")
    assert [o.output_type for o in mistake.outputs] == ["stream"]
    (line,) = mistake.outputs[0].text.splitlines()
    assert mistake.outputs[0].name == "stderr"
    assert line.startswith("LabError: unknown request 'no-such-request' (known: ")
    assert [o.output_type for o in bug.outputs] == ["error"] and bug.outputs[0].ename == "ZeroDivisionError"


def test_run_all_still_stops_at_the_mistake():
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(MISTAKE), nbformat.v4.new_code_cell("2")]
    )
    with pytest.raises(CellExecutionError):
        NotebookClient(notebook, kernel_name="python3", timeout=120).execute()
    assert notebook.cells[1].outputs == []


def test_outside_ipython_nothing_is_installed():
    from labkit.core.errors import errors_in_one_line

    assert errors_in_one_line() is False
