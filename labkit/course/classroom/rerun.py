"""Re-execute a lab headless against another model, with papermill: `labkit rerun`.

Each lab with a model (02-04) has a cell tagged `parameters` (papermill's convention) that
assigns the model spec, k, temperature and seed, which drive its live-model cells (its checked
results come from the recordings). `rerun(lab, model, ...)` hands papermill the values asked for,
under the names that cell uses (matched without regard to case: LABKIT_MODEL or MODEL, K,
TEMPERATURE, SEED); papermill injects them in a cell right after it and executes the
notebook top to bottom in a fresh `python3` kernel, from the notebooks' folder.

Lab 01 calls no model (WITHOUT_MODEL): rerun refuses it in one line before running anything,
as it refuses an OUT it could not write (an existing folder, a path under a file, /proc;
see `labkit.course.argtypes.output_path`).

The kernel also gets `LABKIT_MODEL` in its environment (so every model call in the lab uses
that backend, whatever the notebook does with its parameter) and, for a live backend,
`LABKIT_RECORD`, so every call is recorded with its provenance into a JSONL file under
`runs/rerun/`. The executed notebook is written to a temporary file beside OUT and renamed
into place only if every cell ran; otherwise it is kept as `OUT.failed.ipynb` and the error
is one line naming the cell.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.core.paths import CHECKOUT, runs_dir
from labkit.core.text import shorten

NOTEBOOKS = CHECKOUT / "notebooks"
SPEC = re.compile(r"^(replay(:.+)?|local|ollama:[A-Za-z0-9._:/-]+)$")
NAMES = {"model": ("LABKIT_MODEL", "MODEL"), "k": ("K",), "temperature": ("TEMPERATURE",), "seed": ("SEED",)}
# Labs whose notebook calls no model, so it has no parameters cell: rerun says so and runs nothing.
WITHOUT_MODEL = {"01": "its policies are all scripted"}


def notebook_of(lab: str, folder: Path = NOTEBOOKS) -> Path:
    """The lab's notebook in `folder` (`NN_*.ipynb`); LabError if there is not exactly one."""
    found = sorted(folder.glob(f"{lab}_*.ipynb"))
    if len(found) != 1:
        raise LabError(f"expected one notebook {lab}_*.ipynb in {folder}, found {len(found)}")
    return found[0]


@dataclass(frozen=True)
class Rerun:
    notebook: Path  # the executed notebook
    record: Path | None  # the recorded model calls (live backends only)
    parameters: dict[str, Any]  # what was injected, by the notebook's own names


def parameters_for(notebook: Path, asked: dict[str, Any]) -> dict[str, Any]:
    """`asked` (keys model, k, temperature, seed; None = keep the notebook's) under the names the
    notebook's parameters cell uses; LabError if it has no such cell or lacks a name asked for."""
    from papermill.inspection import inspect_notebook

    declared = list(inspect_notebook(str(notebook)))
    if not declared:
        raise LabError(f"{notebook.name} has no cell tagged 'parameters' (papermill's convention): "
                       "it cannot be re-run with other parameters")
    chosen = {}
    for key, value in asked.items():
        if value is None:
            continue
        name = next((n for n in declared if n.upper() in NAMES[key]), None)
        if name is None:
            raise LabError(f"{notebook.name}'s parameters cell has no {key} parameter "
                           f"(it declares: {', '.join(declared)})")
        chosen[name] = value
    return chosen


def rerun(lab: str, model: str, output: Path, *, k: int | None = None, temperature: float | None = None,
          seed: int | None = None, folder: Path = NOTEBOOKS, timeout: int = 3600) -> Rerun:
    """Execute lab `lab` with `model` (a LABKIT_MODEL spec) and the given knobs; see the module doc."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    if lab in WITHOUT_MODEL:
        raise LabError(f"lab {lab} has no model to vary ({WITHOUT_MODEL[lab]}): nothing to re-run against "
                       "another backend; labs 02-04 call one")
    if not SPEC.match(model):
        raise LabError(f"--model {model!r} is not a backend: use replay, local or ollama:<tag>")
    from labkit.course.argtypes import output_path

    try:  # before anything runs: a folder, a path under a file or /proc would fail only at the end
        output_path(output)
    except ValueError as error:
        raise LabError(f"-o {error}") from None
    notebook = notebook_of(lab, folder)
    chosen = parameters_for(notebook, {"model": model, "k": k, "temperature": temperature, "seed": seed})
    record = None
    env = {"LABKIT_MODEL": model}
    if not model.startswith("replay"):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        record = runs_dir() / "rerun" / f"lab{lab}-{re.sub(r'[^A-Za-z0-9.-]+', '_', model)}-{stamp}.jsonl"
        record.parent.mkdir(parents=True, exist_ok=True)
        env["LABKIT_RECORD"] = str(record)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.stem}.partial.ipynb")
    saved = {name: os.environ.get(name) for name in env}
    os.environ.update(env)  # papermill's kernel inherits this process's environment
    try:
        # Saved when it ends or fails, not after every cell: papermill's save deep-copies and
        # re-encodes the whole notebook each time, 2.3 s of CPU on lab 02's 40 cells (4.7 s in all).
        papermill.execute_notebook(str(notebook), str(partial), parameters=chosen, kernel_name="python3",
                                   cwd=str(notebook.parent), progress_bar=False, log_output=False,
                                   execution_timeout=timeout, request_save_on_cell_execute=False)
    except PapermillExecutionError as error:
        failed = output.with_name(f"{output.stem}.failed.ipynb")
        os.replace(partial, failed)
        raise LabError(f"lab {lab} stopped at cell {error.exec_count}: {error.ename}: "
                       f"{shorten(str(error.evalue).splitlines()[0], 200) if error.evalue else ''} "
                       f"(the notebook up to there: {failed})") from None
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    os.replace(partial, output)
    return Rerun(output, record, chosen)
