"""Running a grid into one recording, each episode exactly once, resumably, here or on Dask. Only this
process writes the file, a whole episode at a time (a killed run loses at most those in flight); `plan`
cuts the unfinished tail of a file of only this grid's records and refuses any other, leaving it as is.
(serves: untrusted file — a recording to resume)"""

import json
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labkit.core.errors import FixtureError, LabError, ProviderError
from labkit.core.stops import Stop
from labkit.course.grid.episode import provenance, run_episode
from labkit.course.grid.spec import Grid, GridEpisode, record_key
from labkit.decision_loop.trials import MAX_PROVIDER_FAILURES
from labkit.model.record import JsonlWriter, read_records


@dataclass
class GridPlan:
    """What a run of `grid` into `record` has left to do: `todo`, after `done` episodes."""

    grid: Grid
    record: Path
    todo: list[GridEpisode]
    done: int
    cut: int = 0  # lines of an episode cut off by an interrupted run, removed by `plan`

    @property
    def total(self) -> int:
        return self.done + len(self.todo)


def _ours(line: bytes, labels: set[str], keys: set[tuple[Any, ...]]) -> str | None:
    """ "episode" or "call" if `line` is one of the grid's episodes or calls, else None."""
    try:
        record = json.loads(line)
        if record["kind"] == "episode" and record_key(record) in keys:
            return "episode"
        return "call" if record["kind"] == "call" and record.get("run") in labels else None
    except (ValueError, RecursionError, TypeError, KeyError):
        return None


def _cut_off_tail(path: Path, labels: set[str], keys: set[tuple[Any, ...]]) -> int:
    """Remove what follows the last episode record of a recording of this grid; how many lines."""
    *whole, tail = path.read_bytes().split(b"\n")  # tail: the unterminated end of a line, if any
    kinds = [_ours(line, labels, keys) for line in whole]
    if not whole or None in kinds:
        return 0  # not (only) this grid's recording: left as it is, for `plan` to refuse
    last = max((i for i, kind in enumerate(kinds) if kind == "episode"), default=-1)
    end = sum(len(line) + 1 for line in whole[: last + 1])
    cut = len(whole) - last - 1 + bool(tail)
    if cut:
        with path.open("r+b") as handle:
            handle.truncate(end)
    return cut


def plan(grid: Grid, record: str | Path) -> GridPlan:
    """The episodes of `grid` not yet in `record` (which may not exist yet); FixtureError naming the
    line if `record` holds a call or an episode outside this grid, with other settings, or twice."""
    record = Path(record)
    if not record.parent.is_dir():  # serves: user, as are the next two
        raise LabError(f"{record}: folder {record.parent} does not exist")
    if record.exists() and record.resolve() == Path(grid.path).resolve():
        raise LabError(f"{record} is the grid spec itself: record into another file")
    by_key = {episode.key(): episode for episode in grid.episodes}
    labels = {episode.label for episode in grid.episodes}
    seen: set[tuple[Any, ...]] = set()
    cut = 0
    if record.exists():
        if not record.is_file():
            raise LabError(f"{record} is not a file")
        cut = _cut_off_tail(record, labels, set(by_key))
        try:
            lines = list(read_records(record))
        except FixtureError as error:
            raise FixtureError(
                f"{error}: not a recording of grid {grid.path}; it was left as it is"
            ) from None
        for number, line in lines:
            where, outside = f"{record}: line {number}: ", f"not in grid {grid.path}: choose another file"
            if line["kind"] == "call":
                if line.get("run") not in labels:
                    raise FixtureError(f"{where}a call of run {line.get('run')!r}, which is {outside}")
                continue
            if (episode := by_key.get(record_key(line))) is None:
                trial = f"case {line['case']!r} trial {line['trial']} of {line['run']!r}"
                raise FixtureError(f"{where}{trial} is {outside}")
            settings = (line["run"], line["max_tokens"], line["limits"]["budget_tokens"])
            wanted = (episode.label, episode.max_tokens, episode.budget_tokens)
            if settings != wanted:
                raise FixtureError(
                    f"{where}recorded with run, max_tokens, budget_tokens {settings}, "
                    f"and this grid asks {wanted}: choose another file"
                )
            if episode.key() in seen:
                raise FixtureError(f"{where}case {line['case']!r} is recorded twice: it cannot be resumed")
            seen.add(episode.key())
    return GridPlan(grid, record, [e for e in grid.episodes if e.key() not in seen], len(seen), cut)


def check_models(models: list[str], client: Any = None) -> None:
    """Ask each model's backend for its provenance where episodes will run (loads the model): one
    LabError line before anything is recorded if one cannot serve (on a cluster, one worker answers).
    (serves: environment)"""
    for model in models:
        try:
            if client is None:
                provenance(model)
            else:
                client.submit(provenance, model, pure=False).result()
        except ProviderError as error:
            raise LabError(f"{model}: {error}; nothing was recorded") from None


def _on_dask(todo: list[GridEpisode], client: Any) -> Iterator[list[dict[str, Any]]]:
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    # A per-run suffix: a key cancelled by an interrupted run may still be being forgotten by the
    # scheduler, and a new future under it would come back cancelled.
    run = uuid.uuid4().hex[:8]
    futures = {client.submit(run_episode, e, key=f"labkit-episode-{i}-{run}"): e for i, e in enumerate(todo)}
    try:
        for future in as_completed(futures):
            try:
                yield future.result()
            except KilledWorker:  # serves: environment — workers that die each time
                e = futures[future]
                why = f"the workers running {e.label!r} case {e.case!r} trial {e.trial} died each time it ran"
                raise LabError(f"{why}; stopped (what finished is recorded: rerun to resume)") from None
    finally:
        client.cancel(list(futures))


def execute(work: GridPlan, *, client: Any = None, on_episode: Callable[[dict], None] | None = None) -> int:
    """Run `work.todo` (here, or on `client`'s cluster), appending each episode as it finishes (then
    `on_episode(record)`); how many were recorded. MAX_PROVIDER_FAILURES in a row of a backend stop it."""
    writer = JsonlWriter(work.record)
    recorded: set[tuple[Any, ...]] = set()
    failing: dict[str, list[list[dict]]] = {}  # per backend, its current run of provider errors

    def write(held: list[list[dict]]) -> None:
        """Append each episode of `held` (its calls, then its episode record) not recorded yet."""
        for records in held:
            if record_key(records[-1]) in recorded:  # a result delivered twice is still one episode
                continue
            for line in records:
                writer.write(line)
            recorded.add(record_key(records[-1]))
            if on_episode is not None:
                on_episode(records[-1])

    results = (run_episode(e) for e in work.todo) if client is None else _on_dask(work.todo, client)
    try:
        for records in results:
            held = failing.setdefault(records[-1]["backend"], [])
            held.append(records)
            if records[-1]["stop"] != Stop.PROVIDER_ERROR:
                write(held)
                held.clear()
            elif len(held) == MAX_PROVIDER_FAILURES:  # serves: environment — the backend is down
                detail = next((r["error"] for r in reversed(records) if "error" in r), "no detail")
                down = f"{records[-1]['backend']}: {len(held)} episodes in a row ended in provider_error"
                raise LabError(
                    f"{down} (last: {detail}); stopped with {len(recorded)} new episode(s) in "
                    f"{work.record}: rerun to resume"
                )
        for held in failing.values():
            write(held)
    finally:
        results.close()  # on the cluster: cancel what is still queued or running
    return len(recorded)


def local_cluster(workers: int) -> Any:
    """A `distributed.LocalCluster` of `workers` one-thread processes, logs quiet, dashboard anywhere."""
    from logging import CRITICAL

    from distributed import LocalCluster

    from labkit.model.local import THREADS_ENV

    # llama.cpp evaluates a prompt on every core by default: two workers on two cores would run
    # four threads (measured: 0.59x one process). Each worker gets its share of the cores instead.
    share = max(1, (os.cpu_count() or 1) // workers)
    quiet = {
        "dashboard_address": None,
        "scheduler_kwargs": {"dashboard_address": ":0"},
        "silence_logs": CRITICAL,
    }
    return LocalCluster(n_workers=workers, threads_per_worker=1, env={THREADS_ENV: str(share)}, **quiet)
