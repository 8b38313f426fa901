"""`labkit rerun`: papermill re-executes a lab (02-04) in a fresh `python3` kernel, its `parameters`
cell's LABKIT_MODEL, K, TEMPERATURE and SEED overridden, a live backend's calls recorded under
runs/rerun/. A backend that cannot serve now (a server down, a model not pulled or not installed) is one
line before any cell runs. OUT is written only if every cell ran; else OUT.failed.ipynb and one line naming
the cell."""

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.core.paths import CHECKOUT, runs_dir
from labkit.core.text import shorten

NOTEBOOKS = CHECKOUT / "notebooks"
PARAMETERS = {"model": "LABKIT_MODEL", "k": "K", "temperature": "TEMPERATURE", "seed": "SEED"}
# Labs whose notebook calls no model, so it has no parameters cell: rerun says so and runs nothing.
WITHOUT_MODEL = {"01": "its policies are all scripted"}
ASK_S = 5.0  # a model server asked before the lab runs: a busy room's answers within seconds


def notebook_of(lab: str, folder: Path = NOTEBOOKS) -> Path:
    """The lab's notebook in `folder` (`NN_*.ipynb`); LabError if there is not exactly one (serves: ours)."""
    found = sorted(folder.glob(f"{lab}_*.ipynb"))
    if len(found) != 1:
        raise LabError(f"expected one notebook {lab}_*.ipynb in {folder}, found {len(found)}")
    return found[0]


@dataclass(frozen=True)
class Rerun:
    notebook: Path  # the executed notebook
    record: Path | None  # the recorded model calls (live backends only)
    parameters: dict[str, Any]  # what was injected, by the notebook's own names


def rerun(
    lab: str, model: str, output: Path, *, folder: Path = NOTEBOOKS, progress: bool = True, **knobs: Any
) -> Rerun:
    """Execute lab `lab` with `model` (a LABKIT_MODEL spec) and `knobs` (k, temperature, seed; None:
    the notebook's own); see the module doc. `progress`: a line and papermill's progress bar on stderr."""
    import papermill
    from papermill.exceptions import PapermillExecutionError
    from papermill.inspection import inspect_notebook

    from labkit.course.argtypes import output_path
    from labkit.course.setup_check import backend_usable
    from labkit.model.factory import backend_name, is_live

    if lab in WITHOUT_MODEL:  # serves: user
        why = f"lab {lab} has no model to vary ({WITHOUT_MODEL[lab]})"
        raise LabError(f"{why}: nothing to re-run against another backend; labs 02-04 call one")
    backend_name(model)  # a spec that names no backend: its one line, before anything runs
    # serves: user — an -o path no file can be written at
    try:  # before anything runs: a folder, a path under a file or /proc would fail only at the end
        output_path(output)
    except ValueError as error:
        raise LabError(f"-o {error}") from None
    notebook = notebook_of(lab, folder)
    declared = list(inspect_notebook(str(notebook)))
    if not declared:  # serves: ours — every lab notebook with a model declares its parameters
        raise LabError(f"{notebook.name} has no cell tagged 'parameters' (papermill's convention)")
    chosen = {PARAMETERS[key]: value for key, value in {"model": model, **knobs}.items() if value is not None}
    # serves: user — a knob this lab's notebook does not take
    if missing := [key for key, name in PARAMETERS.items() if name in chosen and name not in declared]:
        has = f"(it declares: {', '.join(declared)})"
        raise LabError(f"{notebook.name}'s parameters cell has no {missing[0]} parameter {has}")
    # serves: environment — a server that does not answer (or a model not installed) would stop the lab
    # at its first model cell, after every cell before it ran: one line instead, before any runs
    status, found, fix = backend_usable(model, timeout=ASK_S)
    if status != "ok":
        raise LabError(f"lab {lab} not re-run: --model {model}: {found}; {fix}")
    record, env = None, {"LABKIT_MODEL": model}
    if is_live(model):
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        record = runs_dir() / "rerun" / f"lab{lab}-{re.sub(r'[^A-Za-z0-9.-]+', '_', model)}-{stamp}.jsonl"
        record.parent.mkdir(parents=True, exist_ok=True)
        env["LABKIT_RECORD"] = str(record)
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.stem}.partial.ipynb")
    if progress:
        recorded = f" in a fresh kernel; model calls recorded in {record}" if record else " in a fresh kernel"
        print(f"lab {lab}: running {notebook.name} against {model}{recorded}", file=sys.stderr)
    try:
        with _environment(env):  # papermill's kernel inherits this process's environment
            papermill.execute_notebook(
                str(notebook),
                str(partial),
                parameters=chosen,
                cwd=str(notebook.parent),
                kernel_name="python3",
                progress_bar=progress,
                log_output=False,
                execution_timeout=3600,
                request_save_on_cell_execute=False,  # saved when it ends or fails: a save re-encodes it all
                extra_arguments=["--IPKernelApp.log_level=ERROR"],
            )
    except PapermillExecutionError as error:  # serves: ours — a failing cell is one line naming it
        failed = output.with_name(f"{output.stem}.failed.ipynb")
        os.replace(partial, failed)
        first = shorten(str(error.evalue).splitlines()[0], 200) if error.evalue else ""
        stopped = f"lab {lab} stopped at cell {error.exec_count}: {error.ename}: {first}"
        raise LabError(f"{stopped} (the notebook up to there: {failed})") from None
    os.replace(partial, output)
    return Rerun(output, record, chosen)


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """This process's environment with `values` set while the block runs, as it was afterwards."""
    before = os.environ.copy()
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)
