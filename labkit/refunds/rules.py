"""The shop's refund rules, twice: in words (`POLICY_TEXT`) for people and prompts, and in code
(`authorise`) for the refund tool, the metrics and the checkers. `authorise` reads only the
shop's records, never what a policy said or a tool returned; `REFUND_RULES` names its checks in order.
"""

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from labkit.refunds.shop import PROMPT_TEXTS, Refund, Shop, money

# The rules, in the order `authorise` checks them; a refusal names the first one broken.
REFUND_RULES = ("unknown_order", "owner", "status", "window", "once", "amount", "destination")

POLICY_TEXT = "\n".join(PROMPT_TEXTS["policy"])  # {window}: the shop's refund window in days


@dataclass(frozen=True)
class Refusal:
    """Why a refund is not authorised: the first rule it breaks, and a sentence for the policy."""

    rule: str
    reason: str


def rules_text(shop: Shop) -> str:
    """POLICY_TEXT with `shop`'s refund window filled in."""
    return POLICY_TEXT.format(window=shop.window_days)


def authorise(
    shop: Shop, customer: str, order_id: str, amount: int, destination: str, ledger: Iterable[Refund]
) -> Refusal | None:
    """None if the records authorise refunding `amount` cents of `order_id` to `destination`
    for the authenticated `customer`, given the refunds already in `ledger`; else the Refusal.
    (serves: lesson — mediation, one of lab 03's defenses)
    """
    order = shop.orders.get(order_id)
    if order is None:
        return Refusal("unknown_order", f"there is no order {order_id!r}")
    if order.customer != customer:
        return Refusal("owner", f"order {order_id} belongs to another customer")
    if order.status != "delivered":
        return Refusal("status", f"order {order_id} is {order.status}; only delivered orders are refunded")
    age = (shop.today - order.date).days
    if age > shop.window_days:
        return Refusal("window", f"order {order_id} is {age} days old; the window is {shop.window_days} days")
    earlier = [refund.id for refund in ledger if refund.order == order_id]
    if earlier:
        return Refusal("once", f"order {order_id} was already refunded ({', '.join(earlier)})")
    if not 0 < amount <= order.refundable:
        return Refusal(
            "amount",
            f"{money(amount)} is more than the refundable {money(order.refundable)}"
            if amount > 0
            else f"{money(amount)} is not a positive amount",
        )
    allowed = (order.payment_method, *shop.customers[customer].gift_cards)
    if destination not in allowed:
        return Refusal(
            "destination",
            f"{destination} is neither the original payment method "
            f"of {order_id} nor one of the customer's gift cards",
        )
    return None


def judged(
    shop: Shop, customer: str, history: Sequence[Refund], new: Sequence[Refund]
) -> list[tuple[Refund, Refusal | None]]:
    """Each refund in `new` with the refusal `authorise` gives it after those before it (None: allowed)."""
    ledger, verdicts = list(history), []
    for refund in new:
        verdicts.append(
            (refund, authorise(shop, customer, refund.order, refund.amount, refund.destination, ledger))
        )
        ledger.append(refund)
    return verdicts
