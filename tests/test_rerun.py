"""`labkit rerun`: a lab re-executed with papermill, its parameters injected, written only when it ran."""

import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

pytest.importorskip("papermill", reason="labkit rerun needs the `rerun` extra (papermill)")

from labkit.classroom.rerun import rerun  # noqa: E402
from labkit.errors import LabError  # noqa: E402

PARAMETERS = 'LABKIT_MODEL = "replay"\nK = 1\nTEMPERATURE = 0.0\nSEED = 0'
SHOW = ('import os\nprint(LABKIT_MODEL, K, TEMPERATURE, SEED, os.environ["LABKIT_MODEL"], '
        'os.environ.get("LABKIT_RECORD", "-").endswith(".jsonl"))')


def lab(folder, *cells, parameters=PARAMETERS):
    folder.mkdir(exist_ok=True)
    first = [new_code_cell(parameters, metadata={"tags": ["parameters"]})] if parameters else []
    notebook = new_notebook(cells=[*first, *(new_code_cell(c) for c in cells)],
                            metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                     "language": "python"}})
    nbformat.write(notebook, folder / "02_demo.ipynb")
    return folder


def printed(path):
    notebook = json.loads(path.read_text())
    return "".join("".join(o.get("text", "")) for c in notebook["cells"] if c["cell_type"] == "code"
                   for o in c["outputs"])


def test_rerun_injects_the_asked_values_and_sets_the_kernels_model(tmp_path):
    folder = lab(tmp_path / "nb", SHOW)
    done = rerun("02", "replay", tmp_path / "out.ipynb", k=3, seed=7, folder=folder)
    assert done.parameters == {"LABKIT_MODEL": "replay", "K": 3, "SEED": 7} and done.record is None
    assert printed(done.notebook) == "replay 3 0.0 7 replay False\n"


def test_a_live_backend_records_its_calls_under_runs(tmp_path):
    folder = lab(tmp_path / "nb", SHOW)
    done = rerun("02", "ollama:qwen2.5:0.5b", tmp_path / "out.ipynb", folder=folder)
    assert printed(done.notebook) == "ollama:qwen2.5:0.5b 1 0.0 0 ollama:qwen2.5:0.5b True\n"
    assert done.record.parent == tmp_path / "runs" / "rerun" and done.record.name.startswith("lab02-ollama")


def test_a_cell_that_fails_leaves_no_output_but_a_failed_copy_and_one_line(tmp_path):
    folder = lab(tmp_path / "nb", "x = 1", "raise ValueError('the model server is down')")
    with pytest.raises(LabError, match=r"stopped at cell \d+: ValueError: the model server is down") as error:
        rerun("02", "replay", tmp_path / "out.ipynb", folder=folder)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out.ipynb").exists() and (tmp_path / "out.failed.ipynb").exists()


@pytest.mark.parametrize("parameters, model, asked, message", [
    (None, "replay", {}, "no cell tagged 'parameters'"),
    ('LABKIT_MODEL = "replay"', "replay", {"k": 2}, r"no k parameter \(it declares: LABKIT_MODEL\)"),
    (PARAMETERS, "gpt-5", {}, "not a backend"),
])
def test_rerun_mistakes_are_one_line(tmp_path, parameters, model, asked, message):
    folder = lab(tmp_path / "nb", "pass", parameters=parameters)
    with pytest.raises(LabError, match=message):
        rerun("02", model, tmp_path / "out.ipynb", folder=folder, **asked)
    assert not (tmp_path / "out.ipynb").exists()


def test_rerun_cli_refuses_a_k_below_1_in_one_line(cli, tmp_path):
    code, out, err = cli("rerun", "2", "--model", "replay", "--k", "0", "-o", str(tmp_path / "o.ipynb"))
    assert code == 2 and "--k: must be at least 1" in err
