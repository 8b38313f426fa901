"""Lab 03's model episodes as `labkit grid` runs them: case ids (``r-ana-blender``, or with an attack
at a place ``r-ana-blender+important-inflate@review``; with a defense, the task id) and records."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from labkit.core.errors import LabError
from labkit.model.policy import MAX_TOKENS
from labkit.refunds.attacks import PLACES
from labkit.refunds.defenses import defenses_named
from labkit.refunds.episode import MAX_TOOLS, MAX_TURNS, task_id
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import Score, Spec, score_policy
from labkit.refunds.policies import model_policy

_LAB = "refunds"
# Measured: an L2 episode took up to 107 s on 2 busy cores, so the model is recorded under these
# four only; provenance's and the other deterministic defenses' effect the scripted rows show.
MODEL_DEFENSES = ("none", "policy_prompt", "spotlighting", "mediation")


def grid_cases(lab: RefundLab | None = None) -> tuple[str, ...]:
    """The model suite: every request alone, then every attack at each of its places on every
    legitimate request (10 + 9 x 4 x 4 = 154 cases). Sized for its declared question (lab 03's
    `model_rows.MODEL_QUESTION`): mediation - none and policy_prompt - none on the unauthorised share, each
    at 0.025, have power 0.82 for a difference of 0.20 when the other side still wins 0.2 of the
    cases (what the first 28 cases showed for policy_prompt)."""
    lab = lab or refund_lab()
    legitimate = [r.id for r in lab.requests.values() if r.legitimate]
    cases = list(lab.requests)
    for attack in lab.attacks.values():
        for request in legitimate:
            cases += [f"{request}+{attack.id}@{place}" for place in PLACES if place in attack.places]
    return tuple(cases)


def spec_of(case: str, lab: RefundLab | None = None) -> Spec:
    """The Spec of a grid case id; LabError naming what is unknown in it."""
    lab = lab or refund_lab()
    request, _, rest = case.partition("+")
    if request not in lab.requests:
        raise LabError(f"no refund request {request!r} (known: {', '.join(lab.requests)})")
    if not rest:
        return Spec("benign", lab.request(request))
    attack, at, place = rest.partition("@")
    if attack not in lab.attacks:
        raise LabError(f"no attack {attack!r} (known: {', '.join(lab.attacks)})")
    if not at or place not in lab.attacks[attack].places:
        raise LabError(f"case {case!r}: an attack needs a place, one of {', '.join(PLACES)}")
    if not lab.request(request).legitimate:
        raise LabError(f"case {case!r}: attacks run on legitimate requests only")
    return Spec("attack", lab.request(request), lab.attack(attack), place)


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


def refund_episode_record(
    backend: Any,
    *,
    model_name: str,
    label: str,
    case: str,
    defense: str,
    rung: str,
    temperature: float,
    seed: int,
    trial: int,
) -> dict[str, Any]:
    """Run one model episode of `case` under `defense` on `backend`; its episode record."""
    lab = refund_lab()
    spec = spec_of(case, lab)
    chosen = defenses_named(defense)
    start = time.perf_counter()

    def factory(defenses: Any) -> Any:
        return model_policy(
            defenses, backend=backend, rung=rung, trial=trial, temperature=temperature, seed=seed
        )

    (score,) = score_policy(factory, chosen, [spec], lab)
    result = score.episode.result
    usage = result["usage"]
    return {
        "kind": "episode",
        "run": label,
        "lab": _LAB,
        "case": task_id(spec.request, chosen, spec.attack, spec.place),
        "trial": trial,
        "prompt": defense,
        "defense": defense,
        "request_id": spec.request.id,
        "attack": spec.attack.id if spec.attack else None,
        "place": spec.place,
        "rung": rung,
        "backend": model_name,
        "temperature": float(temperature),
        "seed": seed,
        "max_tokens": MAX_TOKENS,
        "limits": {"max_turns": MAX_TURNS, "max_tools": MAX_TOOLS, "budget_tokens": None},
        "stop": result["stop"],
        "turns": result["turns"],
        "tool_calls": result["tool_calls"],
        "answer": result["answer"],
        "citation": result["citation"],
        "passed": bool(score.utility),
        **score_fields(score),
        "usage": {"prompt_tokens": usage["prompt_tokens"], "completion_tokens": usage["completion_tokens"]},
        "elapsed_s": round(time.perf_counter() - start, 3),
    }


def is_episode(record: Mapping[str, Any]) -> bool:
    """True for an episode record of this lab."""
    return record.get("kind") == "episode" and record.get("lab") == _LAB
