"""The defenses, each a switch. In the prompt: ``rules_text``, ``spotlight`` (untrusted text between
``<<`` and ``>>``). In the refund tool, where no policy can talk its way past: ``mediation``,
``provenance`` (values from the request or this customer's records only), ``confirmation`` (the approver
sees the exact arguments), ``idempotency``; `guards` run after provenance and mediation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from labkit.refunds.cases import Request
from labkit.refunds.lab import named
from labkit.refunds.shop import PROMPT_TEXTS, RefundCall, Shop

# A guard reads the call and a copy of the episode's state (`tools.EpisodeState`, which holds the defenses:
# typed Any here so that this module does not import the tool that imports it).
Guard = Callable[[RefundCall, Any], "str | None"]
Approver = Callable[[Request, Shop, RefundCall], bool]

OPEN, CLOSE = "<<", ">>"
SPOTLIGHT_TEXT = "\n".join(PROMPT_TEXTS["spotlight"])  # names OPEN and CLOSE


@dataclass(frozen=True)
class Defenses:
    """Which defenses are on. Combine with `|`: `DEFENSES["mediation"] | DEFENSES["provenance"]`."""

    name: str = "custom"
    rules_text: bool = False
    spotlight: bool = False
    mediation: bool = False
    provenance: bool = False
    confirmation: bool = False
    idempotency: bool = False
    guards: tuple[Guard, ...] = ()

    def __or__(self, other: Defenses) -> Defenses:
        flags = {
            f.name: getattr(self, f.name) or getattr(other, f.name)
            for f in fields(self)
            if f.name not in ("name", "guards")
        }
        return Defenses(name=f"{self.name}+{other.name}", guards=self.guards + other.guards, **flags)


DEFENSES: Mapping[str, Defenses] = MappingProxyType(
    {
        "none": Defenses("none"),
        "policy_prompt": Defenses("policy_prompt", rules_text=True),
        "spotlighting": Defenses("spotlighting", spotlight=True),
        "mediation": Defenses("mediation", mediation=True),
        "provenance": Defenses("provenance", provenance=True),
        "confirmation": Defenses("confirmation", confirmation=True),
        "idempotency": Defenses("idempotency", idempotency=True),
        "all_deterministic": Defenses(
            "all_deterministic", mediation=True, provenance=True, confirmation=True, idempotency=True
        ),
    }
)


def defenses_named(name: str) -> Defenses:
    """The preset called `name`; LabError listing the known names otherwise (serves: user)."""
    return named("defense", name, DEFENSES)


def mark(text: str) -> str:
    """Untrusted text between spotlight marks, with any marks inside it removed."""
    return OPEN + text.replace(OPEN, "").replace(CLOSE, "") + CLOSE


@dataclass(frozen=True)
class Trusted:
    """Values the provenance defense accepts: found in the request or this customer's records."""

    orders: frozenset[str]
    amounts: frozenset[int]
    destinations: frozenset[str]


def trusted_values(request: Request, shop: Shop) -> Trusted:
    """Computed once per episode, before the policy runs, from the request and the records only."""
    customer = shop.customers[request.customer]
    own = [order for order in shop.orders.values() if order.customer == customer.id]
    requested = shop.orders[request.order]
    orders = {request.order, *(order.id for order in own)}
    amounts = {request.amount, *(figure for o in (requested, *own) for figure in (o.amount, o.refundable))}
    destinations = {
        request.destination,
        requested.payment_method,
        *customer.payment_methods,
        *customer.gift_cards,
        *(order.payment_method for order in own),
    }
    return Trusted(frozenset(orders), frozenset(amounts - {None}), frozenset(destinations - {None}))


def provenance_refusal(call: RefundCall, trusted: Trusted) -> str | None:
    """Why `call`'s order, amount or destination (checked in that order) is not among the `trusted` values,
    or None if all three are."""
    if call.order not in trusted.orders:
        return f"order {call.order} does not come from the request or the customer's records"
    if call.amount not in trusted.amounts:
        return f"amount {call.amount / 100:.2f} does not come from the request or the shop's records"
    if call.destination not in trusted.destinations:
        return f"destination {call.destination} does not come from the request or the customer's records"
    return None


def customer_approver(request: Request, shop: Shop, call: RefundCall) -> bool:
    """The simulated approver: the signed-in customer, shown the exact arguments, says yes only to
    the refund their request asked for (τ-bench's explicit "yes"; a real one might say yes to more)."""
    return call == request.asked(shop)


def rubber_stamp(request: Request, shop: Shop, call: RefundCall) -> bool:
    """An approver who approves everything: confirmation fatigue, for the exercises."""
    return True
