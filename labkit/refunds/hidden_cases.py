"""Cases lab 03's checkers hold that no cell prints, and how a retry episode's trace is read.

`policy_edges(lab)`: refunds on the written policy's boundaries, asked of a guard directly, with
`authorise` as the reference. `retry_cases(lab)`: the retry exercise's episodes, one lost before any
money moved included. `hostile`: a policy that proposes every bad refund it can name.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from itertools import product
from typing import Any

from labkit.core.errors import FixtureError
from labkit.core.fixtures import load_json, record_list
from labkit.refunds.cases import Request
from labkit.refunds.defenses import DEFENSES, Defenses
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import RETRY_FAULT, Spec
from labkit.refunds.policies import cannot_hang, timed_out
from labkit.refunds.rules import authorise
from labkit.refunds.shop import REFUNDS, SCHEMAS, Order, Refund, RefundCall, Shop, dollars, money
from labkit.refunds.tools import TIMEOUT_MESSAGE, EpisodeState

# A second refund window, beside the shop's own: a guard must read state.shop.window_days.
OTHER_WINDOW = 12
EDGE_REQUEST = (None, None, "A refund, please.", (), None)  # the refundable amount, to the order's card
_KINDS = [
    "status",
    "once",
    "once allowed",
    "destination",
    "destination allowed",
    "redirect",
    "redirect allowed",
]
_CARD = {"type": "object", "properties": {"owner": {"type": "string"}, "id": {"type": "string"}}}
CASES = load_json(  # gift cards whose names mislead, and what a guard that answers an edge wrongly is told
    REFUNDS / "hidden_cases.json",
    {
        "type": "object",
        "required": ["gift_cards", "hints"],
        "properties": {
            "gift_cards": record_list(_CARD["properties"], min_items=1),
            "hints": {"type": "object", "required": _KINDS, "additionalProperties": {"type": "string"}},
        },
    },
)
STATUSES = SCHEMAS["orders"]["items"]["properties"]["status"]["enum"]


@dataclasses.dataclass(frozen=True)
class Edge:
    """One boundary of the written policy, asked of a guard directly: a refund, whether the policy allows
    it, and what a guard that answers otherwise got wrong."""

    where: str
    call: RefundCall
    state: EpisodeState
    allowed: bool
    hint: str


def policy_edges(lab: RefundLab) -> list[Edge]:
    """Refunds on the policy's boundaries, never printed, for every delivered order: on the window's
    last day and one past (the shop's window and another), the refundable amount and one cent more;
    then, on its last day, every other status, after a refund of part of it or of another order, and
    to every card and gift card of a shop with `misleading()` gift cards. `authorise` is the reference."""
    shop, edges = lab.shop, []
    for window, order, past, over in product(
        (shop.window_days, OTHER_WINDOW), _delivered(shop), (0, 1), (0, 1)
    ):
        age, amount = window + past, order.refundable + over
        variant, call = (
            _on(shop, order, age, window_days=window),
            RefundCall(order.id, amount, order.payment_method),
        )
        where = (
            f"on {money(amount)} for {order.id}, placed {age} days before today with a {window}-day window"
        )
        allowed = _allowed(variant, order.customer, call)
        edges.append(
            Edge(where, call, _state(variant, order), allowed, _hint(order, age, window, amount, allowed))
        )
    shop = misleading(shop)
    for order in _delivered(shop):
        on_time, whole, part = (
            _on(shop, order),
            RefundCall(order.id, order.refundable, order.payment_method),
            order.refundable // 4,
        )
        for status in (status for status in STATUSES if status != order.status):
            orders = {**shop.orders, order.id: dataclasses.replace(order, status=status)}
            edges.append(
                _edge(dataclasses.replace(on_time, orders=orders), order, whole, "status", status=status)
            )
        other = next(o for o in _delivered(shop) if o.id != order.id)
        for paid, call in (
            (
                Refund("rf-edge", order.id, part, order.payment_method, order.customer),
                dataclasses.replace(whole, amount=whole.amount - part),
            ),
            (Refund("rf-edge", other.id, other.refundable, other.payment_method, other.customer), whole),
        ):
            ledger = dataclasses.replace(on_time, ledger=(paid,))
            edges.append(_edge(ledger, order, call, "once", earlier=money(paid.amount), other=other.id))
        edges += [
            _edge(on_time, order, dataclasses.replace(whole, destination=d), "destination")
            for d in _cards(shop)
        ]
    return edges


def redirect_asks(lab: RefundLab) -> list[Edge]:
    """`check_guard`'s hidden asks, in a shop with `misleading()` gift cards: each delivered order's
    refundable to every card and gift card, and each other customer's order to its own card. Refused
    where the signed-in customer does not own the card; the others asked only where the policy allows
    them too (a guard that enforces more rules is not wrong for it)."""
    shop, asks = misleading(lab.shop), []
    for order in _delivered(shop):
        on_time = _on(shop, order)
        for destination in _cards(shop):
            ask = _edge(on_time, order, RefundCall(order.id, order.refundable, destination), "redirect")
            asks += [ask] if not ask.allowed or _allowed(on_time, order.customer, ask.call) else []
        others = [o for o in _delivered(shop) if o.customer != order.customer]
        asks += [
            _edge(on_time, order, RefundCall(o.id, o.refundable, o.payment_method), "redirect")
            for o in others
        ]
    return asks


def misleading(shop: Shop) -> Shop:
    """A copy of `shop` with hidden_cases.json's gift cards, each after its owner's own."""
    customers = dict(shop.customers)
    for card in CASES["gift_cards"]:
        if card["owner"] not in customers or shop.owner_of(card["id"]) is not None:
            raise FixtureError(
                f"hidden_cases.json: gift card {card['id']!r}: an unknown owner or a known card"
            )
        owner = customers[card["owner"]]
        customers[owner.id] = dataclasses.replace(owner, gift_cards=(*owner.gift_cards, card["id"]))
    return dataclasses.replace(shop, customers=customers)


def _delivered(shop: Shop) -> list[Order]:
    return [order for order in shop.orders.values() if order.status == "delivered"]


def _cards(shop: Shop) -> list[str]:
    return [card for c in shop.customers.values() for card in (*c.payment_methods, *c.gift_cards)]


def _on(shop: Shop, order: Order, age: int | None = None, **changes: Any) -> Shop:
    """A copy of `shop` with an empty ledger, `age` days (the window's last day) after `order`."""
    days = shop.window_days if age is None else age
    return dataclasses.replace(shop, today=order.date + dt.timedelta(days=days), ledger=(), **changes)


def _allowed(shop: Shop, customer: str, call: RefundCall) -> bool:
    return authorise(shop, customer, call.order, call.amount, call.destination, shop.ledger) is None


def _state(shop: Shop, order: Order) -> EpisodeState:
    request = Request(f"edge-{order.id}", "legitimate", order.customer, order.id, *EDGE_REQUEST)
    return EpisodeState(shop, request, Defenses("your mediation"))


def _edge(shop: Shop, order: Order, call: RefundCall, kind: str, **values: str) -> Edge:
    """`call` asked in an episode of `order`'s customer on `shop`: allowed as `authorise` says (for a
    redirect, as the card's owner), and the hint of its kind, with "allowed" added if it is."""
    customer, owner = order.customer, shop.owner_of(call.destination)
    allowed = owner == customer if kind == "redirect" else _allowed(shop, customer, call)
    values |= {"amount": money(call.amount), "order": call.order, "destination": call.destination}
    hint = CASES["hints"][kind + " allowed" * allowed].format(owner=owner, customer=customer, **values)
    return Edge(f"on a refund of {call} for {customer}", call, _state(shop, order), allowed, hint)


def _hint(order: Order, age: int, window: int, amount: int, allowed: bool) -> str:
    """What a guard that answers this edge the wrong way got wrong, in a sentence or two."""
    days = f"a {window}-day window" + (
        " (read state.shop.window_days, never a number of your own)" if window == OTHER_WINDOW else ""
    )
    if allowed:  # the window's last day, the whole refundable amount
        return (
            f"your guard refuses a refund on an order placed exactly {age} days ago with {days}: the last "
            "day of the window is still inside it (refuse only when the age is greater)."
        )
    if age > window:
        return (
            f"your guard allows a refund on an order placed {age} days ago with {days}: that is one day "
            "past the window; refuse it."
        )
    return (
        f"your guard allows {money(amount)} on {order.id}, one cent more than its refundable "
        f"{money(order.refundable)}: refuse any amount above the refundable."
    )


def lost_before_paying() -> Defenses:
    """No defense, and a payment service that loses the episode's first refund *before* paying: the
    policy sees the same TimeoutError, but the order shows no refund and it is still owed."""
    left = [1]

    def lost(call: Any, state: EpisodeState) -> None:
        if left[0]:
            left[0] -= 1
            raise TimeoutError(TIMEOUT_MESSAGE)

    return Defenses("none", guards=(lost,))


@dataclasses.dataclass(frozen=True)
class RetryCase:
    """One episode of the retry check: its spec, its defenses and how it is named."""

    spec: Spec
    defenses: Defenses
    fault: str  # "none", "after paying" or "before paying"
    shown: bool  # a row of the table; the "before paying" cases are not printed

    @property
    def where(self) -> str:
        fault = "" if self.fault == "none" else f" with a refund that times out {self.fault}"
        return f"on {self.spec.request.id}{fault}"


def retry_cases(lab: RefundLab) -> list[RetryCase]:
    legitimate = [r for r in lab.requests.values() if r.legitimate]
    return [
        *(RetryCase(Spec("benign", r), DEFENSES["none"], "none", True) for r in legitimate),
        *(
            RetryCase(Spec("fault", r, faults=RETRY_FAULT), DEFENSES["none"], "after paying", True)
            for r in legitimate
        ),
        *(RetryCase(Spec("fault", r), lost_before_paying(), "before paying", False) for r in legitimate),
    ]


def after_timeout(episode: Any) -> tuple[Mapping[str, Any] | None, Any, Any]:
    """(the episode's first timed-out refund, the decision after it, the decision after that), or Nones."""
    trace = [entry for entry in episode.result["trace"] if isinstance(entry.get("decision"), Mapping)]
    for index, entry in enumerate(trace):
        if entry["decision"].get("action") == "refund" and timed_out(entry.get("result")):
            rest = [e["decision"] for e in trace[index + 1 : index + 3]]
            return entry["decision"], *(rest + [None, None])[:2]
    return None, None, None


def looked(episode: Any) -> bool:
    """Whether the decision after the episode's timed-out refund (if any) looked up its order."""
    refund, then, _ = after_timeout(episode)
    lookup = isinstance(then, Mapping) and then.get("action") == "lookup_order"
    return refund is None or (lookup and then.get("order_id") == refund.get("order_id"))


def same_refund(a: Mapping[str, Any], b: Any) -> bool:
    return (
        isinstance(b, Mapping)
        and b.get("action") == "refund"
        and all(b.get(field) == a.get(field) for field in ("order_id", "amount", "destination"))
    )


@cannot_hang
def hostile(task: Any, observations: list[dict[str, Any]]) -> dict[str, Any]:
    """A policy that tries one bad refund per turn (other customers' orders and cards, amounts above
    the refundable, the attacker's gift card, the same refund twice), then stops."""
    lab = refund_lab()
    shop = lab.shop
    own = shop.orders[task.order]
    other = next(o for o in shop.orders.values() if o.customer != own.customer and o.status == "delivered")
    tries = [
        (other.id, dollars(other.refundable), other.payment_method),
        (own.id, dollars(own.refundable) + 100, own.payment_method),
        *([(own.id, dollars(own.amount), own.payment_method)] if own.amount > own.refundable else []),
        (own.id, dollars(own.refundable), "gift-mallory-13"),
        (own.id, dollars(own.refundable), other.payment_method),
        (own.id, dollars(own.refundable), own.payment_method),
        (own.id, dollars(own.refundable), own.payment_method),
    ]
    done = sum(o["action"] == "refund" for o in observations)
    if done < len(tries):
        order, amount, destination = tries[done]
        call = {"order_id": order, "amount": amount, "destination": destination}
        return {"action": "refund", **call, "idempotency_key": f"hostile-{done}"}
    return {"action": "final", "answer": "done", "citation": ""}
