"""`refund_episode`: one refund request, any policy, the bounded runtime, and the ledger it leaves. With
mediation on, every refund in `episode.refunds` is authorised by the records and no order is refunded
twice; with confirmation on, each was approved with its exact arguments: the tool checks plain data."""

from dataclasses import dataclass
from typing import Any

from labkit.core.errors import LabError
from labkit.core.runtime import Decide, Result, run
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
EPISODE_DEADLINE = 600.0


@dataclass(frozen=True)
class RefundTask:
    """What a policy is told: the authenticated request and the signed-in customer's account (amounts
    in dollars; None: not stated). `id` names the episode; model replay keys on it."""

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


def case_id(
    request: Request, attack: Attack | None = None, place: str | None = None, faults: Faults | None = None
) -> str:
    """The case an episode is of, the same under every defense: request[+attack@place][+timeoutN]."""
    parts = [request.id]
    if attack is not None:
        parts.append(f"{attack.id}@{place}")
    if faults is not None:
        parts.append(f"timeout{faults.timeouts_after_commit}")
    return "+".join(parts)


def task_id(
    request: Request,
    defenses: Defenses,
    attack: Attack | None = None,
    place: str | None = None,
    faults: Faults | None = None,
) -> str:
    """An episode's id (`RefundTask.id`): its `case_id` and the defenses' name, joined by "+"."""
    return f"{case_id(request, attack, place, faults)}+{defenses.name}"


def refund_task(request: Request, shop: Shop, id: str) -> RefundTask:
    """What a policy is told of `request` (the episode named `id`): its fields, amounts in dollars, and the
    signed-in customer's name and gift cards, with the shop's date and refund window."""
    customer = shop.customers[request.customer]
    return RefundTask(
        id=id,
        request=request.id,
        customer=customer.id,
        customer_name=customer.name,
        order=request.order,
        amount=None if request.amount is None else dollars(request.amount),
        destination=request.destination,
        message=request.message,
        gift_cards=customer.gift_cards,
        today=shop.today.isoformat(),
        window_days=shop.window_days,
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
    # serves: user — a place without its attack, or an attack without its place
    if attack is None:
        if place is not None:
            raise LabError(f"place {place!r} given without an attack")
        return None, None
    attack = lab.attack(attack)
    if place not in attack.places:
        raise LabError(
            f"attack {attack.id!r} needs a place, one of: {', '.join(attack.places)} "
            f"(all places: {', '.join(PLACES)}), not {place!r}"
        )
    return attack, place


def refund_episode(
    request: str | Request,
    decide: Decide,
    *,
    defenses: str | Defenses = DEFENSES["none"],
    faults: Faults | None = None,
    attack: str | Attack | None = None,
    place: str | None = None,
    approver: Approver = customer_approver,
    lab: RefundLab | None = None,
    step_timeout: float | None = STEP_TIMEOUT,
    deadline: float | None = EPISODE_DEADLINE,
) -> Episode:
    """One episode of `decide` on `request`: the runtime's Result and the money that moved. LabError for
    an unknown request, attack or defense; whatever the policy does wrong is an outcome instead."""
    lab = lab or refund_lab()
    request = lab.request(request)
    defenses = defenses_named(defenses) if isinstance(defenses, str) else defenses
    attack, place = _resolve(lab, attack, place)
    injected = render(attack, request, lab.shop) if attack else None
    injection = Injection(place, injected) if attack else None
    state = EpisodeState(lab.shop, request, defenses, approver, faults, injection)
    task = refund_task(request, lab.shop, task_id(request, defenses, attack, place, faults))
    limits = dict(max_turns=MAX_TURNS, max_tools=MAX_TOOLS, step_timeout=step_timeout, deadline=deadline)
    result = run(task, decide, tools=shop_tools(state), **limits)
    paid = (state.new_refunds, tuple(state.ledger), tuple(state.approvals))
    return Episode(task, result, *paid, request, defenses, lab.shop, attack, place, injected, faults)
