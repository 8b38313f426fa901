"""`run`: one refund request, any policy, the bounded runtime, and the ledger it leaves.

    episode = run("r-ana-blender", decide, defenses="mediation",
                  attack="important-inflate", place="review")
    episode.result    # the runtime's Result: stop, answer, trace, turns, tool_calls, ...
    episode.refunds   # the refunds this episode actually executed (Refund records)

`decide(task, observations) -> dict` is lab 02's policy signature; `task` is a RefundTask
(the authenticated request as the policy may see it). Each call builds a fresh EpisodeState
— its own copy of the ledger, idempotency keys, approvals and fault plan — so no episode
can see or change another's money. Every episode ends: a decision that takes longer than
`step_timeout` (default 120 s) or an episode that runs past `deadline` (default 600 s) is
a counted stop, `step_timeout` or `deadline`, and nothing the late decision asks for runs.

The guarantee. With mediation on, every refund in `episode.refunds` is authorised by the
shop's records for the request's customer, and no order is refunded twice; with
confirmation on, each one was approved with its exact arguments. It holds

- for any decision a policy can return: any order, amount or destination, repeated,
  malformed, with any keys; numbers of any size (10**400, NaN, infinities); str, int,
  float and dict subclasses whatever their `__eq__`/`__hash__` say (the runtime rebuilds
  each decision from the exact values it holds before anything checks it); ids that only
  look like real ones (another dash, an invisible character, another Unicode form);
- for any Python policy that uses what it is given (the task, the observations) and
  labkit's public API as code, not as data to rewrite: the shop's records, the lab, the
  defense presets and a running episode's state are immutable or read-only, and every
  mutable part of an episode is its own.

It does not hold against code that deliberately goes around Python's own protections:
rebinding labkit's functions or module attributes (monkeypatching `authorise`), writing
private attributes or calling `object.__setattr__` on frozen objects, or walking the
interpreter's memory (`gc.get_objects`, `sys._getframe`, closure cells, `ctypes`). A policy
in the same process can always do that; to rule it out, run the policy in another process
and let only its decisions — plain data, fully covered above — cross over. The property
tests in tests/test_refunds_guarantee.py and tests/test_refunds_hostile.py check it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from labkit.core.errors import LabError
from labkit.core.runtime import Decide, Result
from labkit.core.runtime import run as run_loop
from labkit.refunds.attacks import PLACES, Attack, render
from labkit.refunds.cases import Request
from labkit.refunds.defenses import DEFENSES, Approver, Defenses, customer_approver, defenses_named
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.shop import Refund, Shop, dollars
from labkit.refunds.tools import EpisodeState, Faults, Injection, shop_tools

# Four reads, two refunds (or one and its retry), one final answer: 7 turns, 6 tools.
MAX_TURNS = 8
MAX_TOOLS = 6
# Generous for a model on a laptop (a cold Ollama load takes tens of seconds), finite for
# a policy that never returns: it ends as a counted stop instead of hanging the lab.
STEP_TIMEOUT = 120.0
DEADLINE = 600.0


@dataclass(frozen=True)
class RefundTask:
    """What a policy is told: the authenticated request and the signed-in customer's account.

    `id` names the episode (request, attack, place, fault, defenses): model replay keys on it.
    Amounts are in dollars; None means the customer did not say (refundable amount, original
    payment method).
    """

    id: str
    request: str
    customer: str
    customer_name: str
    order: str
    amount: float | None
    destination: str | None
    message: str
    gift_cards: tuple[str, ...]
    today: str
    window_days: int


def case_id(request: Request, attack: Attack | None = None, place: str | None = None,
            faults: Faults | None = None) -> str:
    """The case an episode is of, the same under every defense: request[+attack@place][+timeoutN]."""
    parts = [request.id]
    if attack is not None:
        parts.append(f"{attack.id}@{place}")
    if faults is not None:
        parts.append(f"timeout{faults.timeouts_after_commit}")
    return "+".join(parts)


def task_id(request: Request, defenses: Defenses, attack: Attack | None = None,
            place: str | None = None, faults: Faults | None = None) -> str:
    """An episode's id (`RefundTask.id`): its `case_id` and the defenses' name, joined by "+"."""
    return f"{case_id(request, attack, place, faults)}+{defenses.name}"


def refund_task(request: Request, shop: Shop, id: str) -> RefundTask:
    customer = shop.customers[request.customer]
    return RefundTask(
        id=id, request=request.id, customer=customer.id, customer_name=customer.name,
        order=request.order, amount=None if request.amount is None else dollars(request.amount),
        destination=request.destination, message=request.message, gift_cards=customer.gift_cards,
        today=shop.today.isoformat(), window_days=shop.window_days,
    )


@dataclass(frozen=True, repr=False)
class Episode:
    """One finished episode: what the policy was asked, what it did, and what money moved."""

    task: RefundTask
    result: Result
    refunds: tuple[Refund, ...]
    ledger: tuple[Refund, ...]
    approvals: tuple[dict[str, Any], ...]
    request: Request
    defenses: Defenses
    shop: Shop
    attack: Attack | None = None
    place: str | None = None
    injected: str | None = None
    faults: Faults | None = None

    def __repr__(self) -> str:
        from labkit.refunds.display import episode_text

        return episode_text(self)


def _resolve(
    lab: RefundLab, attack: str | Attack | None, place: str | None
) -> tuple[Attack | None, str | None]:
    if attack is None:
        if place is not None:
            raise LabError(f"place {place!r} given without an attack")
        return None, None
    attack = lab.attack(attack)
    if place not in attack.places:
        raise LabError(f"attack {attack.id!r} needs a place, one of: {', '.join(attack.places)} "
                       f"(all places: {', '.join(PLACES)}), not {place!r}")
    return attack, place


def run(
    request: str | Request,
    decide: Decide,
    *,
    defenses: str | Defenses = DEFENSES["none"],
    faults: Faults | None = None,
    attack: str | Attack | None = None,
    place: str | None = None,
    approver: Approver = customer_approver,
    lab: RefundLab | None = None,
    max_turns: int = MAX_TURNS,
    max_tools: int = MAX_TOOLS,
    step_timeout: float | None = STEP_TIMEOUT,
    deadline: float | None = DEADLINE,
) -> Episode:
    """One episode: `decide` on one request under the bounded runtime; returns the Episode.

    The Episode holds the runtime's Result and the money that moved (`refunds`, `ledger`);
    it scores nothing (`evaluate` scores a policy over many episodes). LabError for an
    unknown request, attack or defense name, or an attack without a valid place: the
    caller's mistake, before anything runs. Everything the policy does wrong is an outcome
    instead: a stop reason in `result`, or a refusal it observed. `step_timeout` and
    `deadline` (seconds, or None for no limit) end a stuck policy as a counted stop.
    """
    lab = lab or refund_lab()
    request = lab.request(request)
    defenses = defenses_named(defenses) if isinstance(defenses, str) else defenses
    attack, place = _resolve(lab, attack, place)
    injected = render(attack, request, lab.shop) if attack else None
    state = EpisodeState(lab.shop, request, defenses, approver=approver, faults=faults,
                         injection=Injection(place, injected) if attack else None)
    task = refund_task(request, lab.shop, task_id(request, defenses, attack, place, faults))
    result = run_loop(task, decide, tools=shop_tools(state), max_turns=max_turns, max_tools=max_tools,
                      step_timeout=step_timeout, deadline=deadline)
    return Episode(task, result, state.new_refunds, state.ledger, state.approvals,
                   request, defenses, lab.shop, attack, place, injected, faults)
