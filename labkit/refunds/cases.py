"""Refund requests and their expected ledger outcomes, written before any policy runs: `expected` lists
the refunds the ledger must gain (none for a request to refuse, whose `rule` names the rule it breaks).
Loading checks each against the policy in code: a wrong expectation is a FixtureError."""

from dataclasses import dataclass
from pathlib import Path

from labkit.refunds.rules import authorise
from labkit.refunds.shop import SCHEMAS, RefundCall, Shop, cents, fixture_records, require_known


@dataclass(frozen=True)
class Request:
    """One authenticated refund request (amounts in cents; None = not stated by the customer)."""

    id: str
    kind: str
    customer: str
    order: str
    amount: int | None
    destination: str | None
    message: str
    expected: tuple[RefundCall, ...]
    rule: str | None

    @property
    def legitimate(self) -> bool:
        """True for a request to carry out (`kind` "legitimate"), False for one to refuse."""
        return self.kind == "legitimate"

    def asked(self, shop: Shop) -> RefundCall:
        """The refund the customer asked for, with unstated fields taken from the order's record."""
        order = shop.orders[self.order]
        return RefundCall(
            self.order,
            order.refundable if self.amount is None else self.amount,
            order.payment_method if self.destination is None else self.destination,
        )


def load_requests(shop: Shop, path: str | Path | None = None) -> list[Request]:
    """Load `requests.json` (default: in the shop's folder) and check it against `shop`.
    (serves: ours — each expectation agrees with the rules in code)"""
    path = Path(path) if path is not None else Path(shop.folder) / "requests.json"
    requests = []
    for record, fail in fixture_records(path, SCHEMAS["requests"]):
        require_known(record, fail, "customer", shop.customers, "customer")
        require_known(record, fail, "order", shop.orders, "order")
        if record["destination"] is not None and shop.owner_of(record["destination"]) is None:
            raise fail("destination", f"unknown card or gift card {record['destination']!r}")
        try:
            amount = None if record["amount"] is None else cents(record["amount"])
            expected = tuple(
                RefundCall(e["order"], cents(e["amount"]), e["destination"]) for e in record["expected"]
            )
        except ValueError as error:
            raise fail("amount", str(error)) from None
        fields = (record["customer"], record["order"], amount, record["destination"], record["message"])
        request = Request(record["id"], record["kind"], *fields, expected, record["rule"])
        asked = request.asked(shop)
        refusal = authorise(shop, request.customer, asked.order, asked.amount, asked.destination, shop.ledger)
        if request.legitimate:
            if request.rule is not None:
                raise fail("rule", "a legitimate request names no rule")
            if expected != (asked,):
                raise fail(
                    "expected", f"a legitimate request expects exactly the refund it asks for ({asked})"
                )
            if refusal is not None:
                raise fail("kind", f"the refund rules refuse it ({refusal.rule}: {refusal.reason})")
        elif expected:
            raise fail("expected", "a request to refuse expects no refund")
        elif refusal is None or refusal.rule != request.rule:
            found = "nothing" if refusal is None else f"rule {refusal.rule!r}"
            raise fail("rule", f"expected the policy to break rule {request.rule!r}, but it breaks {found}")
        requests.append(request)
    return requests
