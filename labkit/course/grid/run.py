"""Running a grid into one recording, each episode exactly once, resumably, here or on Dask.

`plan(grid, record)` reads what `record` already holds and returns the episodes still to
run; `execute(plan, client=None)` runs them in this process (no client) or on a Dask
cluster (`distributed.Client`), and appends each finished episode to `record` as it
arrives. Guarantees, each tested (tests/test_grid_*.py):

- Only this process writes the file; workers return records (`labkit.course.grid.episode`). An
  episode's lines (its calls, then the episode record) are appended after it finishes, so
  the file is a sequence of whole episodes, in the order they finished.
- Each episode has a key (lab, backend, prompt, rung, temperature, seed, case, trial); a
  key already in the file is not run again (resume), and a key is recorded at most once
  per run even if Dask delivers a result twice. A run killed at any moment loses at most
  the episodes in flight: lines after the file's last episode record are the cut-off
  part of one, and `plan` removes them before resuming (and says how many in `Plan.cut`).
  Only a file recognised as this grid's recording is ever cut: every whole line before
  them is one of its calls or episodes. Any other file (a notes file, the spec itself,
  another grid's recording) is refused in one line and left exactly as it is.
- A worker that dies mid-episode (process killed, machine lost) is rescheduled by Dask on
  another worker (up to `distributed.scheduler.allowed-failures`, default 3 deaths per
  episode), and its episode is recorded once, when a worker finishes it.
- A backend that fails MAX_PROVIDER_FAILURES of its episodes in a row (as results arrive) is down:
  the run stops with one LabError line, and those failed episodes are not recorded, so
  the next run retries them. An isolated provider failure is recorded, as `trials` does.
- A setup mistake raised by an episode (a replay request never recorded, a model the
  server does not have) stops the run with that LabError's line; what finished is kept.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.core.errors import FixtureError, LabError, ProviderError
from labkit.course.grid.episode import Record, provenance, run_episode
from labkit.course.grid.spec import Episode, Grid, record_key
from labkit.decision_loop.trials import MAX_PROVIDER_FAILURES
from labkit.model.record import JsonlWriter, read_records


@dataclass
class Plan:
    """What a run of `grid` into `record` has left to do: `todo`, after `done` episodes."""

    grid: Grid
    record: Path
    todo: list[Episode]
    done: int
    cut: int = 0  # lines of an episode cut off by an interrupted run, removed by `plan`

    @property
    def total(self) -> int:
        return self.done + len(self.todo)


def _cut_off_tail(path: Path, labels: set[str], keys: set[tuple[Any, ...]]) -> int:
    """Remove the lines after the last episode record (an episode cut off mid-write); count them.

    Only a file recognised as a recording of this grid is touched: every whole line up to its
    last episode record is a call of one of the grid's runs or an episode with one of its keys,
    and there is at least one whole line. A notes file, the spec itself, another grid's
    recording or a lone unterminated line is left exactly as it is (0), for the checks in
    `plan` to refuse. After the last episode record, only the whole call records of one
    episode of this grid (one run label, case and trial) and one unterminated last line may
    follow; anything else there is left in place too.
    """
    data = path.read_bytes()
    end = offset = 0  # end: the byte offset just past the last episode line
    whole_lines = data.split(b"\n")[:-1]  # the last piece has no "\n": complete only if empty
    if not whole_lines:
        return 0
    for line in whole_lines:
        offset += len(line) + 1
        record = _parsed(line)
        if record.get("kind") == "episode":
            if _key(record) not in keys:
                return 0
            end = offset
        elif record.get("kind") != "call" or record.get("run") not in labels:
            return 0
    *whole, last = data[end:].split(b"\n")
    owners = set()
    for line in whole:
        call = _parsed(line)
        owners.add((call["run"], call.get("case"), call.get("trial")))
    cut = len(whole) + (1 if last else 0)
    if cut and len(owners) <= 1:
        with path.open("r+b") as handle:
            handle.truncate(end)
        return cut
    return 0


def _key(record: dict[str, Any]) -> tuple[Any, ...] | None:
    """An episode line's key, or None if it lacks the fields of one."""
    try:
        return record_key(record)
    except (KeyError, TypeError, ValueError):
        return None


def _parsed(line: bytes) -> dict[str, Any]:
    """A line's JSON object, or {} if it is not one."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def plan(grid: Grid, record: str | Path) -> Plan:
    """The episodes of `grid` not yet in `record` (which may not exist yet).

    Removes the cut-off end of an interrupted run (`Plan.cut` counts the lines). Raises
    FixtureError naming the file and line if `record` holds a call or an episode of a run
    outside this grid (another grid's recording, or calls recorded by hand), an episode
    recorded with other settings, or one recorded twice.
    """
    record = Path(record)
    if not record.parent.is_dir():
        raise LabError(f"{record}: folder {record.parent} does not exist")
    if record.exists() and Path(grid.path).exists() and record.resolve() == Path(grid.path).resolve():
        raise LabError(f"{record} is the grid spec itself: record into another file")
    episodes = grid.episodes()
    by_key = {episode.key(): episode for episode in episodes}
    labels = {episode.label for episode in episodes}
    seen: set[tuple[Any, ...]] = set()
    cut = 0
    if record.exists():
        if not record.is_file():
            raise LabError(f"{record} is not a file")
        with _only_writer(record):  # never cut the end of a file another run is writing
            cut = _cut_off_tail(record, labels, set(by_key))
        try:
            lines = list(read_records(record))
        except FixtureError as error:
            raise FixtureError(f"{error}: not a recording of grid {grid.path}; it was left as it is "
                               "(record into another file)") from None
        for number, line in lines:
            if line["kind"] == "call":
                if line.get("run") not in labels:
                    raise FixtureError(
                        f"{record}: line {number}: a call of run {line.get('run')!r}, which is "
                        f"not in grid {grid.path}: choose another file"
                    )
                continue
            key = record_key(line)
            where = f"{record}: line {number}: case {line['case']!r} trial {line['trial']} of {line['run']!r}"
            episode = by_key.get(key)
            if episode is None:
                raise FixtureError(
                    f"{where} is not in grid {grid.path}: resume a recording with the grid "
                    "that wrote it, or choose another file"
                )
            settings = (line["run"], line["max_tokens"], line["limits"]["budget_tokens"])
            wanted = (episode.label, episode.max_tokens, episode.budget_tokens)
            if settings != wanted:
                raise FixtureError(
                    f"{where} was recorded with run, max_tokens, budget_tokens {settings}, "
                    f"and this grid asks {wanted}: choose another file"
                )
            if key in seen:
                raise FixtureError(f"{where} is recorded twice: this file cannot be resumed")
            seen.add(key)
    return Plan(grid, record, [e for e in episodes if e.key() not in seen], len(seen), cut)


def check_models(models: list[str], client: Any = None) -> None:
    """Ask each model's backend for its provenance where episodes will run (loads the model).

    A backend that cannot serve is one LabError line before anything is recorded, as in
    `labkit trials`: on the cluster, one worker answers for all (the others load the model
    at their first episode).
    """
    for model in models:
        try:
            if client is None:
                provenance(model)
            else:
                client.submit(provenance, model, pure=False).result()
        except ProviderError as error:
            raise LabError(f"{model}: {error}; nothing was recorded") from None


def _in_process(todo: list[Episode]) -> Iterator[tuple[Episode, list[Record]]]:
    for episode in todo:
        yield episode, run_episode(episode)


def _on_dask(todo: list[Episode], client: Any) -> Iterator[tuple[Episode, list[Record]]]:
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    # The episode's key plus this run's: a key cancelled by an interrupted run may still be
    # being forgotten by the scheduler, and a new future under it would come back cancelled.
    run = uuid.uuid4().hex[:8]
    futures = {client.submit(run_episode, e, key=f"{e.task_key()}-{run}"): e for e in todo}
    try:
        for future in as_completed(futures):
            episode = futures[future]
            try:
                yield episode, future.result()
            except KilledWorker:
                raise LabError(
                    f"the workers running {episode.label!r} case {episode.case!r} trial {episode.trial} "
                    "died each time it ran; stopped (what finished is recorded: rerun to resume)"
                ) from None
    finally:
        client.cancel(list(futures))


def execute(
    work: Plan,
    *,
    client: Any = None,
    on_episode: Callable[[Record], None] | None = None,
) -> int:
    """Run `work.todo` (here, or on `client`'s cluster) and append each episode as it finishes.

    Returns how many episodes this call recorded. `on_episode(record)` is called after each
    episode record is written (the CLI's progress bar). Raises LabError as the module
    docstring says; whatever was recorded before stays recorded.
    """
    writer = JsonlWriter(work.record)
    recorded: set[tuple[Any, ...]] = set()
    # Per backend, its current run of provider_error episodes, held back until it ends.
    failing: dict[str, list[list[Record]]] = {}

    def write(records: list[Record]) -> None:
        episode = records[-1]
        key = record_key(episode)
        if key in recorded:  # a result delivered twice is still one episode
            return
        for line in records:
            writer.write(line)
        recorded.add(key)
        if on_episode is not None:
            on_episode(episode)

    results = _in_process(work.todo) if client is None else _on_dask(work.todo, client)
    with _only_writer(work.record):
        try:
            for _episode, records in results:
                model = records[-1]["backend"]
                held = failing.setdefault(model, [])
                if records[-1]["stop"] != "provider_error":
                    for earlier in held:
                        write(earlier)
                    held.clear()
                    write(records)
                    continue
                held.append(records)
                if len(held) == MAX_PROVIDER_FAILURES:
                    detail = next((r["error"] for r in reversed(records) if "error" in r), "no detail")
                    raise LabError(
                        f"{model}: {len(held)} episodes in a row ended in provider_error (last: {detail}); "
                        f"stopped with {len(recorded)} new episode(s) in {work.record}: rerun to resume"
                    )
            for held in failing.values():
                for earlier in held:
                    write(earlier)
        finally:
            results.close()  # on the cluster: cancel what is still queued or running
    return len(recorded)


@contextmanager
def _only_writer(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` while recording: two runs into one file would both run
    the episodes neither had yet. (POSIX only; elsewhere nothing is locked.)"""
    new = not path.exists()
    try:
        import fcntl
    except ImportError:  # Windows
        fcntl = None
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise LabError(
                    f"{path}: another grid run is recording into it; wait for it or stop it"
                ) from None
        yield
    finally:
        if new and os.fstat(fd).st_size == 0:  # nothing recorded: leave no empty file behind
            path.unlink(missing_ok=True)
        os.close(fd)


def local_cluster(workers: int) -> Any:
    """A `distributed.LocalCluster` of `workers` processes, one thread each, logs quiet.

    One thread per worker: an episode holds its model for every decision (the local
    backend's engine lock), and N processes on N cores is what benchmarks/grid.py measures.
    Logs are quiet so a failed episode is reported once, as one line, not as a worker's
    traceback. The dashboard is off and the scheduler's HTTP port is any free one (the
    default, 8787, is often taken by another cluster).
    """
    import logging

    from distributed import LocalCluster

    from labkit.model.local import THREADS_ENV

    # llama.cpp evaluates a prompt on every core by default: two workers on two cores then
    # run four threads (measured: --workers 2 at 0.59x one process on 2 cores). Each worker
    # gets its share of the cores instead.
    share = max(1, (os.cpu_count() or 1) // workers)
    return LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        env={THREADS_ENV: str(share)},
        processes=True,
        dashboard_address=None,
        scheduler_kwargs={"dashboard_address": ":0"},
        silence_logs=logging.CRITICAL,
    )
