"""One graded row per episode: a model's recorded episodes replayed through the runtime (each must
end as recorded), a scripted loop run k times like any other; `tables` adds the rows up, and
`trials_report` is what `labkit evaluate` prints of them. `DocuctlGrid` is lab 02's grid: `labkit grid`
records its episodes live, then prints that report of the recording."""

import json
from collections.abc import Mapping, Sequence
from itertools import product
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd

from labkit.baseline.controllers import adaptive_policy, scripted
from labkit.baseline.corpus import docuctl
from labkit.baseline.grading import Graded, graded, outcome
from labkit.baseline.task import task_from
from labkit.core.errors import FixtureError, LabError
from labkit.decision_loop.model_policy import PROMPTS, docuctl_policy
from labkit.decision_loop.tables import K_MAX, Row, episodes_frame, stop_counts, summary, with_intervals
from labkit.decision_loop.trials import (
    CASE_SETS,
    ENDED,
    MAX_TOKENS_MAX,
    cases_of,
    default_label,
    episode_record,
    known_cases,
    limits_for,
    run_case,
)
from labkit.model.backend import Backend, ChatRequest, Reply
from labkit.model.constraints import DEFAULT_RUNG, RUNGS
from labkit.model.policy import MAX_TOKENS
from labkit.model.record import read_records
from labkit.model.replay import ReplayBackend

_LIMITS = ("max_turns", "max_tools")
_Data = Mapping[str, Any]  # a case, or an episode's result


class _Tap(ReplayBackend):
    """A ReplayBackend that keeps every reply it gives (for per-decision figures)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies: list[Reply] = []

    def complete(self, request: ChatRequest) -> Reply:
        """The recorded reply to `request`, kept in `replies`; ReplayMiss as `ReplayBackend.complete`."""
        reply = super().complete(request)
        self.replies.append(reply)
        return reply


def episode_row(
    policy: str, case: _Data, trial: int, result: _Data, replies: Sequence[Reply] = (), **run: Any
) -> Row:
    """One graded episode: who, which case and trial, how it ended, its cost, and `result`."""
    return run | {
        "policy": policy,
        "case": case["id"],
        "trial": trial,
        "passed": outcome(case, result),
        **{key: result[key] for key in ENDED[:3]},
        "decisions": len(replies),
        **{key: sum(getattr(r, key) for r in replies) for key in ("prompt_tokens", "completion_tokens")},
        "reused_tokens": sum(r.reused_tokens or 0 for r in replies),  # None where a backend cannot tell
        "latency_s": sum(r.latency_s for r in replies),
        "result": result,
    }


def _run_label(record: Mapping[str, Any], rung: str) -> str:
    """The episode's run label, "<model> <prompt> <rung> T=<t>" (`trials.default_label`): a recording
    made before runs named their rung (no "rung" field, so it ran at L1) gains it, so that every run
    of the ladder reads alike in every table and in its declared comparisons."""
    run = record["run"]
    return run if "rung" in record else run.replace(" T=", f" {rung} T=", 1)


def replay_trials(path: str | Path) -> list[Row]:
    """Every recorded episode in `path`, replayed and graded; LabError for a file without
    episodes, an unknown case, or an episode that no longer ends as recorded."""
    path, cases, rows = Path(path), known_cases(), []
    for number, record in read_records(path):
        if record["kind"] != "episode":
            continue
        if (case := cases.get(record["case"])) is None:  # serves: untrusted file — a recording
            raise LabError(f"{path}: line {number}: unknown docuctl case {record['case']!r}")
        tap = _Tap([path], run=record["run"])  # a file may hold several runs
        settings = {key: record[key] for key in ("temperature", "seed", "trial", "max_tokens")}
        rung, limits = record.get("rung", DEFAULT_RUNG), {key: record["limits"][key] for key in _LIMITS}
        policy = docuctl_policy(record["prompt"], backend=tap, rung=rung, **settings)
        result = run_case(case, policy, limits=limits, budget_tokens=record["limits"]["budget_tokens"])
        changed = [f"{k} {result[k]!r} (recorded {record[k]!r})" for k in ENDED if result[k] != record[k]]
        if changed:  # serves: ours — every episode replays as recorded
            raise LabError(
                f"{path}: line {number}: case {case['id']!r} trial {record['trial']} no longer "
                f"replays as recorded: {'; '.join(changed)}"
            )
        labels = {"prompt": record["prompt"], "rung": rung, "temperature": record["temperature"]}
        rows.append(
            episode_row(_run_label(record, rung), case, record["trial"], result, tap.replies, **labels)
        )
    if not rows:  # serves: untrusted file — a file with no episodes
        raise LabError(f"{path}: no episode records (record trials with `python -m labkit trials`)")
    return rows


SCRIPTED = {"scripted loop": lambda docs: scripted, "adaptive loop": adaptive_policy}  # name: policy for docs


def scripted_trials(
    name: str, cases: Sequence[Mapping[str, Any]], k: int = K_MAX, limits: dict[str, int] | None = None
) -> list[Row]:
    """A loop of `SCRIPTED` k times on each case, under `limits_for` or the same `limits` for all."""
    policy = SCRIPTED[name](docuctl().docs)
    return [
        episode_row(name, case, trial, run_case(case, policy, limits=limits or limits_for(case)))
        for trial, case in product(range(k), cases)
    ]


def replay_case(
    case_id: str, prompt: str = "base", *, rung: str = DEFAULT_RUNG, budget_tokens: int | None = None
) -> Graded:
    """SmolLM2's recorded T=0 episode on `case_id`, replayed and graded, each decision with its live
    call's latency (`recorded_s`); LabError for an unknown case, ReplayMiss for one not recorded."""
    if (case := known_cases().get(case_id)) is None:  # serves: user
        raise LabError(f"unknown docuctl case {case_id!r} (known: {', '.join(known_cases())})")
    tap = _Tap()
    policy = docuctl_policy(prompt, backend=tap, rung=rung)
    # Load the recordings before the episode, so the trace times the replay, not reading files.
    tap.complete(policy.request(task_from(case), []))
    tap.replies.clear()
    result = run_case(case, policy, limits=limits_for(case), budget_tokens=budget_tokens)
    for entry, reply in zip(result["trace"], tap.replies, strict=False):
        entry["recorded_s"] = reply.latency_s
    return graded(result, case)


def under_limits(max_turns: int, max_tools: int) -> pd.DataFrame:
    """Both scripted loops on all 24 cases under the same limits: passes, tool calls and endings."""
    limits = {"max_turns": max_turns, "max_tools": max_tools}
    rows = [row for name in SCRIPTED for row in scripted_trials(name, cases_of("all"), 1, limits)]
    totals = episodes_frame(rows).groupby("policy", sort=False)[["passed", "tool_calls"]].sum()
    return totals.rename(columns={"tool_calls": "tool calls"}).join(stop_counts(rows))


def evaluate_trials(paths: Sequence[str | Path], *, scripted_k: int = K_MAX) -> list[Row]:
    """Both scripted loops on the cases of the runs recorded in `paths`, then those runs' rows; LabError
    for a trial recorded twice (pass^k assumes distinct trials)."""
    rows = [row for path in paths for row in replay_trials(path)]
    trials = pd.DataFrame(rows)[["policy", "case", "trial"]]
    if trials.duplicated().any():  # serves: untrusted file — pass^k needs distinct trials
        policy, case, trial = trials[trials.duplicated()].iloc[0]
        raise LabError(
            f"run {policy!r}, case {case!r}, trial {trial} is recorded twice: each trial counts once"
        )
    cases = [known_cases()[case_id] for case_id in dict.fromkeys(row["case"] for row in rows)]
    return [row for name in SCRIPTED for row in scripted_trials(name, cases, scripted_k)] + rows


def trials_report(paths: Sequence[str | Path], *, as_json: bool, width: int) -> str:
    """What `labkit evaluate --trials PATHS` prints: the runs in `paths` beside both scripted loops on their
    cases, one row per run with pass@1, pass^k (each with its 95% interval) and costs (`tables.summary`),
    then how their episodes ended (`tables.stop_counts`), lines at most `width` wide; with `as_json`, the
    two tables as JSON objects by run. LabError as `evaluate_trials`."""
    rows = evaluate_trials(paths)
    tables = {"summary": summary(rows), "stops": stop_counts(rows)}
    if as_json:  # NaN (pass^k beyond the trials a case ran) as null: JSON has no NaN
        return json.dumps(
            {
                name: table.astype(object).where(table.notna(), None).to_dict("index")
                for name, table in tables.items()
            },
            indent=2,
        )
    tables["summary"] = with_intervals(tables["summary"])
    with pd.option_context("display.width", width, "display.max_columns", 30):
        text = "\n\n".join(table.to_string(line_width=width, na_rep="n/a") for table in tables.values())
        return text + "\npass^k = mean over cases of C(c,k)/C(n,k); n/a where a case has fewer than k trials."


class DocuctlGrid:
    """Lab 02's grid, as `labkit.course.grid.labs` asks of every grid lab: a cell per model, prompt, rung,
    temperature and seed, each running k trials of every chosen case."""

    CELL_AXES = ("models", "prompts", "rungs", "temperatures", "seeds")
    INNER_AXIS = "cases"

    @staticmethod
    def fill_schema(axes: dict[str, Any]) -> None:
        """Fill in, in place, the enums and bounds of a docuctl grid's axes (spec.schema.json's `docuctl`):
        the prompts, the rungs, the case sets, and the most tokens a decision may ask for."""
        axes["prompts"]["items"]["enum"], axes["rungs"]["items"]["enum"] = list(PROMPTS), list(RUNGS)
        axes["cases"]["oneOf"][0]["enum"] = list(CASE_SETS)
        axes["max_tokens"]["maximum"] = MAX_TOKENS_MAX

    @staticmethod
    def inner_values(path: Path, chosen: str | list[str]) -> list[str]:
        """The case ids of a case set (`chosen` one of CASE_SETS), or `chosen`, a list of lab 01's case
        ids, as it is; FixtureError naming `path` and the field (`cases[1]`) of an id lab 01 lacks."""
        if isinstance(chosen, str):
            return [case["id"] for case in cases_of(chosen)]
        known = {case["id"] for case in cases_of("all")}
        for index, case in enumerate(chosen):
            if case not in known:  # serves: untrusted file — a grid spec
                raise FixtureError(f"{path}: field 'cases[{index}]': no docuctl case {case!r}")
        return chosen

    @staticmethod
    def cell_episode(
        cell: Mapping[str, Any], case: str, values: Mapping[str, Any], *, backend: str, seed_tag: str
    ) -> dict[str, Any]:
        """The lab's fields of the episode of `case` in `cell` (a value of each of CELL_AXES): its rung and
        prompt, its label (`default_label`, then `seed_tag`) and the spec's token limits (from `values`)."""
        prompt, rung, temperature = cell["prompts"], cell["rungs"], cell["temperatures"]
        label = default_label(SimpleNamespace(name=backend), prompt, temperature, rung) + seed_tag
        return {
            "rung": rung,
            "case": case,
            "label": label,
            "prompt": prompt,
            "max_tokens": int(values.get("max_tokens", MAX_TOKENS)),
            "budget_tokens": values.get("budget_tokens"),
        }

    @staticmethod
    def record_episode(backend: Backend, episode: Any, model_name: str) -> dict[str, Any]:
        """Run one grid episode (a `labkit.course.grid.spec.GridEpisode`: its case, prompt, rung, settings
        and token limits) with the docuctl policy on `backend`; its episode record, as `labkit trials`
        writes it. Its case is one a spec may name: `load_spec` checked it."""
        corpus = docuctl()
        case = known_cases(corpus)[episode.case]  # lab 01's cases and lab 02's rewrite cases
        settings = {key: getattr(episode, key) for key in ("temperature", "trial", "max_tokens", "rung")}
        settings["seed"] = episode.trial_seed
        policy = docuctl_policy(episode.prompt, backend=backend, **settings)
        limits = limits_for(case, corpus)
        result = run_case(case, policy, limits=limits, budget_tokens=episode.budget_tokens, corpus=corpus)
        return episode_record(
            case,
            result,
            run_label=episode.label,
            backend=model_name,
            prompt=episode.prompt,
            limits=limits,
            budget_tokens=episode.budget_tokens,
            **settings,
        )

    @staticmethod
    def grid_report(record: str, *, as_json: bool, width: int) -> str:
        """The evaluation of a docuctl recording, as `labkit evaluate --trials RECORD` prints it."""
        return trials_report([record], as_json=as_json, width=width)
