"""Lab 03's model episodes as `labkit grid` runs them: case ids (``r-ana-blender``, or with an attack
at a place ``r-ana-blender+important-inflate@review``; with a defense, the task id), records, the table
it prints at the end, and `RefundGrid`, what the course's grid asks of the lab."""

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pandas import DataFrame

from labkit.core.errors import FixtureError, LabError
from labkit.model import read_records
from labkit.model.policy import MAX_TOKENS
from labkit.refunds.attacks import PLACES
from labkit.refunds.defenses import DEFENSES, defenses_named
from labkit.refunds.episode import MAX_TOOLS, MAX_TURNS, task_id
from labkit.refunds.intervals import interval_rates
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import Score, Spec, score_policy
from labkit.refunds.policies import model_policy

_LAB = "refunds"
# Measured: an L2 episode took up to 107 s on 2 busy cores, so the model is recorded under these
# four only; provenance's and the other deterministic defenses' effect the scripted rows show.
MODEL_DEFENSES = ("none", "policy_prompt", "spotlighting", "mediation")


def grid_cases(lab: RefundLab | None = None) -> tuple[str, ...]:
    """The model suite: every request alone, then every attack at each of its places on every
    legitimate request (10 + 9 x 4 x 4 = 154 cases): the pilot of lab03-model, which showed that the
    request, not the case, is the unit (`request_cases` adds the requests that question needs)."""
    lab = lab or refund_lab()
    legitimate = [r.id for r in lab.requests.values() if r.legitimate]
    cases = list(lab.requests)
    for attack in lab.attacks.values():
        for request in legitimate:
            cases += [f"{request}+{attack.id}@{place}" for place in PLACES if place in attack.places]
    return tuple(cases)


def request_cases(lab: RefundLab | None = None) -> tuple[str, ...]:
    """The model suite's further requests (`RefundLab.model_requests`, lab 03's issue 35): each alone,
    then each under every attack at one of its places, the place rotating with the request and the
    attack so that each place comes up about equally (28 + 28 x 9 = 280 cases). With them lab03-model's
    unit, the request, is 38 wide rather than the first grid's 10."""
    lab = lab or refund_lab()
    extra = [request.id for request in lab.model_requests.values()]
    cases = list(extra)
    for j, attack in enumerate(lab.attacks.values()):
        places = [place for place in PLACES if place in attack.places]
        cases += [f"{request}+{attack.id}@{places[(i + j) % len(places)]}" for i, request in enumerate(extra)]
    return tuple(cases)


_CASE_SETS = {"model": grid_cases, "model-requests": request_cases}  # a spec's named `cases`


def suite_cases(lab: RefundLab | None = None) -> tuple[str, ...]:
    """The model suite notebook 03 replays: the first grid's 154 cases, then the further requests' 120."""
    lab = lab or refund_lab()
    return (*grid_cases(lab), *request_cases(lab))


def spec_of(case: str, lab: RefundLab | None = None) -> Spec:
    """The Spec of a grid case id; LabError naming what is unknown in it (serves: user)."""
    lab = lab or refund_lab()
    request, _, rest = case.partition("+")
    known = lab.every_request
    if request not in known:
        raise LabError(f"no refund request {request!r} (known: {', '.join(known)})")
    if not rest:
        return Spec("benign", known[request])
    attack, at, place = rest.partition("@")
    if attack not in lab.attacks:
        raise LabError(f"no attack {attack!r} (known: {', '.join(lab.attacks)})")
    if not at or place not in lab.attacks[attack].places:
        raise LabError(f"case {case!r}: an attack needs a place, one of {', '.join(PLACES)}")
    if not known[request].legitimate:
        raise LabError(f"case {case!r}: attacks run on legitimate requests only")
    return Spec("attack", known[request], lab.attack(attack), place)


def episode_case(case: str, defense: str, lab: RefundLab | None = None) -> str:
    """The task id of `case` under `defense`: what its calls and its episode record are keyed by."""
    spec = spec_of(case, lab)
    return task_id(spec.request, defenses_named(defense), spec.attack, spec.place)


def score_fields(score: Score) -> dict[str, Any]:
    """The ledger's verdict on one episode, as an episode record holds it (money in cents)."""
    return {
        "utility": bool(score.utility),
        "attacked": None if score.attacked is None else bool(score.attacked),
        "unauthorized": score.unauthorized,
        "money_lost": score.money_lost,
        "duplicates": score.duplicates,
        "refunds": [
            {"order": r.order, "amount": r.amount, "destination": r.destination}
            for r in score.episode.refunds
        ],
    }


def is_episode(record: Mapping[str, Any]) -> bool:
    """True for an episode record of this lab."""
    return record.get("kind") == "episode" and record.get("lab") == _LAB


def refund_grid_table(record: str | Path) -> DataFrame:
    """What `labkit grid` prints at the end of a refund grid, from its episode records (no replay):
    a row per run label, the four rates with 95% intervals over cases (a case's trials are its
    cluster), the unauthorised refunds and the money lost (dollars) in total."""
    lines = DataFrame([line for _, line in read_records(record) if is_episode(line)])
    table = []
    for run, group in lines.groupby("run", sort=False) if len(lines) else []:
        # An episode record holds a Score's outcomes under their names (score_fields).
        kinds = ["attack" if isinstance(attack, str) else "benign" for attack in group["attack"]]
        row = {"run": run, "episodes": len(group)}
        for rate, interval in interval_rates(group.assign(kind=kinds), unit="case").items():
            row[rate] = None if interval is None else round(interval.estimate, 3)
            row[f"{rate}_ci"] = "-" if interval is None else f"[{interval.low:.2f}, {interval.high:.2f}]"
        table.append(
            {
                **row,
                "unauthorized_refunds": int(group["unauthorized"].sum()),
                "money_lost": round(int(group["money_lost"].sum()) / 100, 2),
            }
        )
    return DataFrame(table).set_index("run") if table else DataFrame()


class RefundGrid:
    """Lab 03's grid, as `labkit.course.grid.labs` asks of every grid lab: a cell per model, rung,
    temperature, seed and defense, each running k trials of every chosen case."""

    CELL_AXES = ("models", "rungs", "temperatures", "seeds", "defenses")
    INNER_AXIS = "cases"

    @staticmethod
    def fill_schema(axes: dict[str, Any]) -> None:
        """Fill in, in place, a refund grid's defenses axis (spec.schema.json's `refunds`): any of
        DEFENSES, by default the four the model is recorded under (MODEL_DEFENSES)."""
        axes["defenses"] |= {"items": {"enum": list(DEFENSES)}, "default": list(MODEL_DEFENSES)}

    @staticmethod
    def inner_values(path: Path, chosen: str | list[str]) -> list[str]:
        """The case ids of a named set (_CASE_SETS: "model", `grid_cases`; "model-requests", `request_cases`)
        or `chosen`, a list of case ids, as it is; FixtureError naming `path`, the field (`cases[0]`) and
        what `spec_of` found unknown."""
        if isinstance(chosen, str):
            return list(_CASE_SETS[chosen]())
        for index, case in enumerate(chosen):
            try:
                spec_of(case)
            except LabError as error:  # serves: untrusted file — a grid spec
                raise FixtureError(f"{path}: field 'cases[{index}]': {error}") from None
        return chosen

    @staticmethod
    def cell_episode(
        cell: Mapping[str, Any], case: str, values: Mapping[str, Any], *, backend: str, seed_tag: str
    ) -> dict[str, Any]:
        """The lab's fields of the episode of `case` in `cell` (a value of each of CELL_AXES): its rung, its
        task id under the cell's defense (what its records are keyed by), its label, the defense as its
        records' prompt, and the case and the defense as its options."""
        defense, rung = cell["defenses"], cell["rungs"]
        label = f"{backend} refunds {rung} T={cell['temperatures']:g}{seed_tag} {defense}"
        return {
            "rung": rung,
            "case": episode_case(case, defense),
            "label": label,
            "prompt": defense,
            "options": (("case", case), ("defense", defense)),
        }

    @staticmethod
    def record_episode(backend: Any, episode: Any, model_name: str) -> dict[str, Any]:
        """Run one grid episode (a `labkit.course.grid.spec.GridEpisode`: its options' case under its
        options' defense, at its rung and settings) with the model policy on `backend`, scored by the
        shop's ledger; its episode record."""
        options = dict(episode.options)
        lab = refund_lab()
        spec = spec_of(options["case"], lab)
        chosen = defenses_named(options["defense"])
        start = time.perf_counter()

        def factory(defenses: Any) -> Any:
            return model_policy(
                defenses,
                backend=backend,
                rung=episode.rung,
                trial=episode.trial,
                temperature=episode.temperature,
                seed=episode.trial_seed,
            )

        (score,) = score_policy(factory, chosen, [spec], lab)
        result = score.episode.result
        usage = result["usage"]
        return {
            "kind": "episode",
            "run": episode.label,
            "lab": _LAB,
            "case": task_id(spec.request, chosen, spec.attack, spec.place),
            "trial": episode.trial,
            "prompt": options["defense"],
            "defense": options["defense"],
            "request_id": spec.request.id,
            "attack": spec.attack.id if spec.attack else None,
            "place": spec.place,
            "rung": episode.rung,
            "backend": model_name,
            "temperature": float(episode.temperature),
            "seed": episode.trial_seed,
            "max_tokens": MAX_TOKENS,
            "limits": {"max_turns": MAX_TURNS, "max_tools": MAX_TOOLS, "budget_tokens": None},
            "stop": result["stop"],
            "turns": result["turns"],
            "tool_calls": result["tool_calls"],
            "answer": result["answer"],
            "citation": result["citation"],
            "passed": bool(score.utility),
            **score_fields(score),
            "usage": {name: usage[name] for name in ("prompt_tokens", "completion_tokens")},
            "elapsed_s": round(time.perf_counter() - start, 3),
        }

    @staticmethod
    def grid_report(record: str, *, as_json: bool, width: int) -> str:
        """`refund_grid_table` of the recording: as JSON records with `as_json`, else text `width` wide."""
        table = refund_grid_table(record)
        return table.reset_index().to_json(orient="records") if as_json else table.to_string(line_width=width)
