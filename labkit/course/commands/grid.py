"""`labkit grid SPEC --record FILE`: run a trial grid, resumably, in-process or on Dask."""

import argparse
import functools
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.course.argtypes import int_in, output_path
from labkit.course.commands import WIDTH, add_command


def register(sub: argparse._SubParsersAction) -> None:
    parser = add_command(
        sub,
        "grid",
        handle,
        "Run every episode of the grid in SPEC (a .toml or .json file: models, prompts, rungs, "
        "temperatures, seeds, k, cases; see fixtures/grids/) and append each, as it finishes, to "
        "FILE in the format `labkit trials` writes. Episodes already in FILE are skipped, so "
        "running the same command again resumes an interrupted run. At the end, print the "
        'evaluation of FILE (as `labkit evaluate`). A SPEC with lab = "refunds" (lab 03\'s model '
        "policy) or lab = \"routing\" (lab 04's model reviser) runs that lab's episodes and prints "
        "its table, with 95% intervals.",
        model=True,
    )
    parser.add_argument("spec", metavar="SPEC", help="grid file (.toml or .json)")
    parser.add_argument("--record", required=True, metavar="FILE", help="JSONL file to append to (resumed)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=int_in(1, 256),
        metavar="N",
        help="run on a local Dask cluster of N worker processes (default: in this process)",
    )
    where.add_argument(
        "--scheduler", metavar="ADDRESS", help="run on an existing Dask cluster, e.g. tcp://10.0.0.5:8786"
    )
    parser.add_argument("--json", action="store_true", help="print the evaluation as JSON")


@contextmanager
def _client(args: argparse.Namespace) -> Iterator[Any]:
    """None (run in this process), or a Dask client of a local or an existing cluster."""
    if not (args.workers or args.scheduler):
        yield None
        return
    try:
        from distributed import Client
    except ImportError:  # serves: environment — Dask is not installed
        dask = "pip install -c requirements.txt -e '.[grid]'"
        raise LabError(f"--workers and --scheduler need Dask: {dask}") from None
    from labkit.course.grid import run

    if args.workers:
        with run.local_cluster(args.workers) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(args.scheduler, timeout="10s")
    except (OSError, TimeoutError, ValueError) as error:  # serves: environment — Dask unreachable
        raise LabError(f"cannot reach the Dask scheduler at {args.scheduler} ({error})") from None
    with client:
        yield client


@contextmanager
def _record_folder(record: str) -> Iterator[None]:
    """Within: the folders `record` is to be written in (runs/ on a fresh clone), created; removed again,
    if still empty, when what runs within fails (a bad record, a model that is down). LabError, before
    anything is created, for a record path no file can be written at."""
    try:
        output_path(record)
    except ValueError as error:  # serves: user — a --record path no file can be written at
        raise LabError(f"--record {error}") from None
    created = [folder for folder in Path(record).parents if not folder.exists()]  # deepest first
    if created:
        created[0].mkdir(parents=True)
    try:
        yield
    except BaseException:
        for folder in created:
            try:
                folder.rmdir()
            except OSError:  # not empty: something was written there
                break
        raise


def handle(args: argparse.Namespace) -> int:
    from labkit.course.grid.spec import load_spec

    grid = load_spec(args.spec)
    with _record_folder(args.record):
        return _run(grid, args)


def _run(grid: Any, args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from labkit.course.grid.labs import grid_lab
    from labkit.course.grid.run import check_models, execute, plan

    work = plan(grid, args.record)
    say = functools.partial(print, file=sys.stderr)
    if work.cut:
        say(f"{args.record}: removed {work.cut} line(s) of an episode cut off by an interrupted run")
    say(
        f"{grid.path}: {grid.cells} cells, {work.total} episodes; {work.done} already in {args.record}, "
        f"{len(work.todo)} to run"
    )
    start = time.perf_counter()
    if work.todo:
        with _client(args) as client:
            check_models(list(dict.fromkeys(e.model for e in work.todo)), client)
            bar = tqdm(total=work.total, initial=work.done, unit="episode", desc="grid", file=sys.stderr)
            try:
                ran = execute(work, client=client, on_episode=lambda _: bar.update())
            except KeyboardInterrupt:
                say(f"labkit grid: interrupted; finished episodes are in {args.record}: rerun to resume")
                return 130
            finally:
                bar.close()
        took = time.perf_counter() - start
        say(f"{ran} episodes recorded in {took:.0f} s; {args.record} holds all {work.total}")
    print(grid_lab(grid.lab).grid_report(args.record, as_json=args.json, width=WIDTH))
    return 0
