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

A re-run can take minutes (lab 02 against `local`: about two), so it reports as it goes, one
line per code cell executed and one every HEARTBEAT_S seconds while a long cell runs, each with
the model calls and live episodes recorded so far (`progress`, default: lines on stderr). The
kernel's own log (ipykernel's "Kernel is running over TCP without encryption" warning) is kept
off the screen: the kernel starts at log level ERROR; what cells print goes into the notebook.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.core.paths import CHECKOUT, runs_dir
from labkit.core.text import shorten

NOTEBOOKS = CHECKOUT / "notebooks"
SPEC = re.compile(r"^(replay(:.+)?|local|ollama:[A-Za-z0-9._:/-]+|openai:[A-Za-z0-9._:/-]+)$")
NAMES = {"model": ("LABKIT_MODEL", "MODEL"), "k": ("K",), "temperature": ("TEMPERATURE",), "seed": ("SEED",)}
HEARTBEAT_S = 10.0  # seconds between "still running" lines during one long cell
KERNEL_QUIET = ["--IPKernelApp.log_level=ERROR"]  # the kernel's warnings stay off the terminal
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


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def recorded_so_far(record: Path | None) -> tuple[int, int]:
    """(model calls, live episodes) in the recording so far: its lines, and those of a turn 1."""
    if record is None:
        return 0, 0
    try:
        data = record.read_bytes()
    except OSError:
        return 0, 0
    return data.count(b"\n"), data.count(b'"turn":1,')


def _runs(cell: Any) -> bool:
    """Whether nbclient executes this cell (it skips markdown and blank code cells)."""
    return cell.cell_type == "code" and bool(cell.source.strip())


class Progress:
    """What `rerun` reports while papermill runs: nbclient's cell hooks, and a heartbeat thread."""

    def __init__(self, say: Callable[[str], None], record: Path | None, heartbeat: float = HEARTBEAT_S):
        self.say = say
        self.record = record
        self.heartbeat = heartbeat
        self.cells = 0
        self.done = 0
        self.current: int | None = None
        self.cell_started = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def counts(self) -> str:
        if self.record is None:
            return "replayed, no live calls"
        calls, episodes = recorded_so_far(self.record)
        calls_s, episodes_s = "s" * (calls != 1), "s" * (episodes != 1)
        return f"{calls} model call{calls_s}, {episodes} live episode{episodes_s} so far"

    def on_notebook_start(self, notebook: Any, **_: Any) -> None:
        self.cells = sum(1 for cell in notebook.cells if _runs(cell))

    def on_cell_start(self, cell: Any, cell_index: int, **_: Any) -> None:
        if _runs(cell):
            self.current, self.cell_started = self.done + 1, time.monotonic()

    def on_cell_executed(self, cell: Any, cell_index: int, **_: Any) -> None:
        self.done += 1
        self.current = None
        took = time.monotonic() - self.cell_started
        self.say(f"  cell {self.done}/{self.cells} done in {took:.1f} s ({self.counts()})")

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._beat, name="labkit-rerun-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat):
            current = self.current
            if current is not None:
                running = time.monotonic() - self.cell_started
                self.say(f"  cell {current}/{self.cells} still running after {running:.0f} s "
                         f"({self.counts()})")

    def hooks(self) -> dict[str, Any]:
        return {"on_notebook_start": self.on_notebook_start, "on_cell_start": self.on_cell_start,
                "on_cell_executed": self.on_cell_executed}


def rerun(lab: str, model: str, output: Path, *, k: int | None = None, temperature: float | None = None,
          seed: int | None = None, folder: Path = NOTEBOOKS, timeout: int = 3600,
          progress: Callable[[str], None] | None = _to_stderr) -> Rerun:
    """Execute lab `lab` with `model` (a LABKIT_MODEL spec) and the given knobs; see the module doc.

    `progress` gets one line per code cell executed and a heartbeat during long cells (see the
    module doc); None reports nothing.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    if lab in WITHOUT_MODEL:
        raise LabError(f"lab {lab} has no model to vary ({WITHOUT_MODEL[lab]}): nothing to re-run against "
                       "another backend; labs 02-04 call one")
    if not SPEC.match(model):
        raise LabError(f"--model {model!r} is not a backend: use replay, local, ollama:<tag> "
                       "or openai:<model>")
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
    watcher = Progress(progress or (lambda line: None), record, heartbeat=HEARTBEAT_S)
    if progress is not None:
        progress(f"lab {lab}: running {notebook.name} against {model}, top to bottom in a fresh kernel"
                 + (f"; model calls recorded in {record}" if record else ""))
    try:
        # Saved when it ends or fails, not after every cell: papermill's save deep-copies and
        # re-encodes the whole notebook each time, 2.3 s of CPU on lab 02's 40 cells (4.7 s in all).
        with watcher:
            papermill.execute_notebook(str(notebook), str(partial), parameters=chosen, kernel_name="python3",
                                       cwd=str(notebook.parent), progress_bar=False, log_output=False,
                                       execution_timeout=timeout, request_save_on_cell_execute=False,
                                       extra_arguments=KERNEL_QUIET, **watcher.hooks())
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
