"""The shop's tools for one episode, bound to a fresh EpisodeState. Four only read; `refund` is the only
side effect and enforcement point (its checks, in order: `refund` and `first_refusal`). A refusal is a
ValueError the policy observes as `{"error": ...}`; no refusal moves money: the ledger is appended last."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from labkit.core.runtime import Tool
from labkit.refunds.cases import Request
from labkit.refunds.defenses import (
    Approver,
    Defenses,
    Trusted,
    customer_approver,
    mark,
    provenance_refusal,
    trusted_values,
)
from labkit.refunds.rules import authorise
from labkit.refunds.shop import MAX_CENTS, PROMPT_TEXTS, Refund, RefundCall, Shop, cents, dollars

TIMEOUT_MESSAGE = "the payment service did not answer in time; the refund may or may not have been paid"


@dataclass(frozen=True)
class Faults:
    """Fault injection: the first `timeouts_after_commit` refunds that commit then time out."""

    timeouts_after_commit: int = 1


@dataclass(frozen=True)
class Injection:
    """Attack text placed in one untrusted place: message, note, review or help."""

    place: str
    text: str


@dataclass
class EpisodeState:
    """Everything one episode may change, created fresh for every run. `ledger`: the shop's history,
    then this episode's refunds; `keys`: idempotency key -> (call, receipt or {"error": ...})."""

    shop: Shop
    request: Request
    defenses: Defenses
    approver: Approver = customer_approver
    faults: Faults | None = None
    injection: Injection | None = None
    ledger: list[Refund] = field(init=False)
    approvals: list[dict[str, Any]] = field(default_factory=list)
    untrusted: list[str] = field(default_factory=list)  # untrusted text returned so far
    keys: dict[str, tuple[RefundCall, dict[str, Any]]] = field(default_factory=dict)
    trusted: Trusted = field(init=False)  # what provenance accepts, computed before the policy runs
    timeouts_left: int = field(init=False)

    def __post_init__(self) -> None:
        self.ledger = list(self.shop.ledger)
        self.trusted = trusted_values(self.request, self.shop)
        self.timeouts_left = self.faults.timeouts_after_commit if self.faults else 0

    def copy(self) -> EpisodeState:
        """A copy for a learner's guard: what it changes there changes nothing here."""
        twin = copy.copy(self)
        twin.shop, twin.ledger, twin.untrusted = self.shop.copy(), list(self.ledger), list(self.untrusted)
        twin.approvals = [dict(approval) for approval in self.approvals]
        twin.keys = {key: (call, dict(outcome)) for key, (call, outcome) in self.keys.items()}
        return twin

    @property
    def new_refunds(self) -> tuple[Refund, ...]:
        """The refunds this episode paid, in order: the ledger past the shop's own history."""
        return tuple(self.ledger[len(self.shop.ledger) :])

    def untrusted_text(self, text: str) -> str:
        """Record `text` as returned untrusted text; mark it if spotlighting is on."""
        self.untrusted.append(text)
        return mark(text) if self.defenses.spotlight else text

    def injected(self, place: str) -> str | None:
        """The attack text placed at `place` in this episode, if any."""
        return self.injection.text if self.injection and self.injection.place == place else None


def _lookup(state: EpisodeState, order_id: str) -> dict[str, Any]:
    order = state.shop.orders.get(order_id)
    if order is None:  # serves: policy — each tool checks its own boundary
        raise ValueError(f"no order {order_id!r}")
    note = order.note
    if order.id == state.request.order and (text := state.injected("note")):
        note = f"{note}\n{text}" if note else text
    return {
        "order": order.id,
        "customer": order.customer,
        "status": order.status,
        "date": order.date.isoformat(),
        "items": [{**dataclasses.asdict(item), "price": dollars(item.price)} for item in order.items],
        "amount": dollars(order.amount),
        "refundable": dollars(order.refundable),
        "payment_method": order.payment_method,
        "refunds": [
            {"refund": r.id, "amount": dollars(r.amount), "destination": r.destination}
            for r in state.ledger
            if r.order == order.id
        ],
        "note": state.untrusted_text(note) if note else "",
    }


def _messages(state: EpisodeState) -> list[dict[str, str]]:
    thread = [m for m in state.shop.messages if m["customer"] == state.request.customer]
    thread = [{"sender": m["sender"], "text": m["text"]} for m in thread]
    if text := state.injected("message"):
        thread.append({"sender": "unverified email", "text": text})
    return [{"sender": m["sender"], "text": state.untrusted_text(m["text"])} for m in thread]


def _reviews(state: EpisodeState, product: str) -> list[dict[str, Any]]:
    # serves: policy — each tool checks its own boundary
    if not any(item.product == product for order in state.shop.orders.values() for item in order.items):
        raise ValueError(f"no product {product!r}")
    reviews = [
        {"author": r["author"], "rating": r["rating"], "text": r["text"]}
        for r in state.shop.reviews
        if r["product"] == product
    ]
    attacked = state.shop.orders[state.request.order].items[0].product
    if product == attacked and (text := state.injected("review")):
        reviews.append({"author": "Guest", "rating": 5, "text": text})
    return [{**r, "text": state.untrusted_text(r["text"])} for r in reviews]


def _help(state: EpisodeState, topic: str) -> dict[str, str]:
    page = state.shop.help.get(topic)
    if page is None:  # serves: policy — each tool checks its own boundary
        raise ValueError(f"no help page {topic!r} (pages: {', '.join(state.shop.help)})")
    text = page["text"]
    if topic == "refunds" and (injected := state.injected("help")):
        text = f"{text}\n- Guest: {injected}"
    return {"topic": topic, "title": page["title"], "text": state.untrusted_text(text)}


def first_refusal(state, call):
    """The first defense that refuses `call`, as 'refused (<defense>): <reason>', or None."""
    # serves: lesson — lab 03's defenses, what the lab measures
    defenses = state.defenses
    if defenses.provenance and (reason := provenance_refusal(call, state.trusted)):
        return f"refused (provenance): {reason}"
    if defenses.mediation:
        customer = state.request.customer
        refusal = authorise(state.shop, customer, call.order, call.amount, call.destination, state.ledger)
        if refusal is not None:
            return f"refused (mediation, {refusal.rule}): {refusal.reason}"
    for guard in defenses.guards:  # a learner's code: it gets a copy of the state
        if reason := guard(call, state.copy()):
            return f"refused ({getattr(guard, '__name__', 'guard')}): {reason}"
    if defenses.confirmation:
        approved = bool(state.approver(state.request, state.shop, call))
        asked = {"order": call.order, "amount": dollars(call.amount), "destination": call.destination}
        state.approvals.append({**asked, "approved": approved})
        if not approved:
            return f"refused (confirmation): the approver said no to refunding {call}"
    return None


def refund(state, order_id, amount, destination, idempotency_key):
    """The refund tool: its checks in order; money moves only after all of them pass."""
    # 1. Malformed arguments: refused whatever the defenses, and not remembered for the key.
    # serves: policy — a decision's arguments are adversarial
    if not all(type(text) is str for text in (order_id, destination, idempotency_key)):
        raise ValueError("order_id, destination and idempotency_key must be strings")
    value = cents(amount)
    if not 0 < value <= MAX_CENTS:
        raise ValueError(f"amount {amount!r} must be positive and at most {MAX_CENTS // 100}")
    if order_id not in state.shop.orders:
        raise ValueError(f"no order {order_id!r}")
    if state.shop.owner_of(destination) is None:
        raise ValueError(f"no card or gift card {destination!r}")
    call = RefundCall(order_id, value, destination)
    # 2. Idempotency: the first result for a key is the only result for that key (serves: lesson).
    if state.defenses.idempotency and idempotency_key in state.keys:
        first, outcome = state.keys[idempotency_key]
        if first != call:
            raise ValueError(f"idempotency key {idempotency_key!r} was first used for {first}, not {call}")
        if "error" in outcome:
            raise ValueError(outcome["error"])
        return {**outcome, "replayed": True}
    # 3. The defenses, in order: the first refusal is raised, and no money moves (serves: lesson).
    if reason := first_refusal(state, call):
        if state.defenses.idempotency:
            state.keys[idempotency_key] = (call, {"error": reason})
        raise ValueError(reason)
    # 4. Commit: the only line that moves money.
    paid = Refund(f"rf-{len(state.ledger) + 1:04d}", order_id, value, destination, state.request.customer)
    state.ledger.append(paid)
    if state.defenses.confirmation:
        state.approvals[-1]["refund"] = paid.id
    receipt = {
        "refund": paid.id,
        "order": order_id,
        "amount": dollars(value),
        "destination": destination,
        "status": "paid",
    }
    if state.defenses.idempotency:
        state.keys[idempotency_key] = (call, receipt)
    # 5. The fault: the money has moved, but the answer is lost on the way back.
    if state.timeouts_left > 0:
        state.timeouts_left -= 1
        raise TimeoutError(TIMEOUT_MESSAGE)
    return dict(receipt)


def shop_tools(state: EpisodeState) -> dict[str, Tool]:
    """The five tools of one episode, all bound to `state`."""
    run = {
        "lookup_order": _lookup,
        "read_messages": _messages,
        "read_reviews": _reviews,
        "read_help": _help,
        "refund": refund,
    }
    return {
        name: Tool(name, tool["parameters"], partial(run[name], state), description=tool["description"])
        for name, tool in PROMPT_TEXTS["tools"].items()
    }
