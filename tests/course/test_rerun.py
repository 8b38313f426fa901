"""`labkit rerun`: a lab re-executed with papermill, its parameters injected, written only when it ran."""

import json
from pathlib import Path

import nbformat
import pytest
from fake_ollama import FakeOllama
from nbformat.v4 import new_code_cell, new_notebook
from papermill.inspection import inspect_notebook

from labkit.core.errors import LabError
from labkit.core.verdicts import LABS
from labkit.course.classroom.rerun import WITHOUT_MODEL, notebook_of, rerun
from labkit.course.commands.serve import free_port

PARAMETERS = 'LABKIT_MODEL = "replay"\nK = 1\nTEMPERATURE = 0.0\nSEED = 0'
SHOW = (
    'import os\nprint(LABKIT_MODEL, K, TEMPERATURE, SEED, os.environ["LABKIT_MODEL"], '
    'os.environ.get("LABKIT_RECORD", "-").endswith(".jsonl"))'
)


def lab(folder, *cells, parameters=PARAMETERS):
    folder.mkdir(exist_ok=True)
    first = [new_code_cell(parameters, metadata={"tags": ["parameters"]})] if parameters else []
    notebook = new_notebook(
        cells=[*first, *(new_code_cell(c) for c in cells)],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    )
    nbformat.write(notebook, folder / "02_demo.ipynb")
    return folder


def printed(path):
    notebook = json.loads(path.read_text())
    return "".join(
        "".join(o.get("text", ""))
        for c in notebook["cells"]
        if c["cell_type"] == "code"
        for o in c["outputs"]
    )


def test_rerun_injects_the_asked_values_and_sets_the_kernels_model(tmp_path):
    done = rerun("02", "replay", tmp_path / "out.ipynb", k=3, seed=7, folder=lab(tmp_path / "nb", SHOW))
    assert done.parameters == {"LABKIT_MODEL": "replay", "K": 3, "SEED": 7} and done.record is None
    assert printed(done.notebook) == "replay 3 0.0 7 replay False\n"


def test_a_live_backend_records_its_calls_under_runs(tmp_path, monkeypatch):
    with FakeOllama("qwen2.5:0.5b") as server:  # asked before anything runs: it must answer
        monkeypatch.setenv("OLLAMA_HOST", server.host)
        done = rerun("02", "ollama:qwen2.5:0.5b", tmp_path / "out.ipynb", folder=lab(tmp_path / "nb", SHOW))
    assert printed(done.notebook) == "ollama:qwen2.5:0.5b 1 0.0 0 ollama:qwen2.5:0.5b True\n"
    assert done.record.parent == tmp_path / "runs" / "rerun" and done.record.name.startswith("lab02-ollama")


def test_a_cell_that_fails_leaves_no_output_but_a_failed_copy_and_one_line(tmp_path):
    folder = lab(tmp_path / "nb", "x = 1", "raise ValueError('the model server is down')")
    with pytest.raises(LabError, match=r"stopped at cell \d+: ValueError: the model server is down") as error:
        rerun("02", "replay", tmp_path / "out.ipynb", folder=folder)
    assert "\n" not in str(error.value)
    assert not (tmp_path / "out.ipynb").exists() and (tmp_path / "out.failed.ipynb").exists()


@pytest.mark.parametrize(
    "parameters, model, asked, message",
    [
        (None, "replay", {}, "no cell tagged 'parameters'"),
        ('LABKIT_MODEL = "replay"', "replay", {"k": 2}, r"no k parameter \(it declares: LABKIT_MODEL\)"),
        (PARAMETERS, "gpt-5", {}, "'gpt-5' is not a backend"),
    ],
)
def test_rerun_mistakes_are_one_line(tmp_path, parameters, model, asked, message):
    folder = lab(tmp_path / "nb", "pass", parameters=parameters)
    with pytest.raises(LabError, match=message):
        rerun("02", model, tmp_path / "out.ipynb", folder=folder, **asked)
    assert not (tmp_path / "out.ipynb").exists()


def test_an_output_it_could_not_write_is_one_line_before_anything_runs(cli, tmp_path, monkeypatch):
    import papermill

    folder = lab(tmp_path / "nb", "pass")
    (tmp_path / "outdir").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("the notebook ran"))
    code, out, err = cli("rerun", "2", "--model", "replay", "-o", "outdir")
    assert code == 2 and out == "" and "outdir is a folder" in err and err.count("\n") == 1
    with pytest.raises(LabError, match="outdir is a folder"):  # the function refuses it too, before running
        rerun("02", "replay", Path("outdir"), folder=folder)
    assert list((tmp_path / "outdir").iterdir()) == []


@pytest.mark.parametrize(
    ("model", "found"),
    [
        ("ollama:qwen2.5:0.5b", "cannot reach Ollama at 127.0.0.1:{port} (is `ollama serve` running?)"),
        ("openai:smollm2", "cannot reach the server at http://127.0.0.1:{port} ("),
        ("ollama:llama3", "serving qwen2.5:0.5b, not 'llama3'; run `ollama pull llama3`"),
    ],
    ids=["ollama down", "room server down", "tag not pulled"],
)
def test_a_backend_that_cannot_serve_is_one_line_before_a_cell_runs(cli, tmp_path, monkeypatch, model, found):
    import papermill

    port = free_port()
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{port}")
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    monkeypatch.setattr(papermill, "execute_notebook", lambda *a, **k: pytest.fail("a cell ran"))
    with FakeOllama("qwen2.5:0.5b") as server:
        if "llama3" in model:
            monkeypatch.setenv("OLLAMA_HOST", server.host)
            found = found.replace("serving", f"Ollama at {server.host}, serving")
        code, out, err = cli("rerun", "2", "--model", model, "-o", str(tmp_path / "o.ipynb"))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert err.startswith(f"labkit rerun: error: lab 02 not re-run: --model {model}: "), err
    assert found.format(port=port) in err, err
    assert not (tmp_path / "o.ipynb").exists() and not list(tmp_path.glob("*.ipynb"))


# -- the real labs ------------------------------------------------------------------------------

MODEL_LABS = [lab for lab in LABS if lab not in WITHOUT_MODEL]


@pytest.mark.parametrize("number", MODEL_LABS)
def test_every_lab_with_a_model_declares_the_four_parameters(number):
    defaults = {name: p["default"] for name, p in inspect_notebook(str(notebook_of(number))).items()}
    assert defaults == {"LABKIT_MODEL": '"replay"', "K": "1", "TEMPERATURE": "0.0", "SEED": "0"}


def test_lab_01_has_no_parameters_cell_and_rerun_says_it_has_no_model_in_one_line(cli, tmp_path):
    assert list(WITHOUT_MODEL) == ["01"] and inspect_notebook(str(notebook_of("01"))) == {}
    code, out, err = cli("rerun", "1", "--model", "local", "-o", str(tmp_path / "o.ipynb"))
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.startswith("labkit rerun: error: lab 01 has no model to vary")
    assert not (tmp_path / "o.ipynb").exists()
