"""The fictional shop, loaded and cross-checked from a fixture folder (default `fixtures/refunds/`).
*Records* (shop, customers, orders, ledger) are trusted; *texts* (messages, reviews, help) are not.
Money is integer cents; every fixture problem is one FixtureError naming file, record and field."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from labkit.core.errors import FixtureError
from labkit.core.fixtures import FIXTURES, load_json, read_json, unique_ids

REFUNDS = FIXTURES / "refunds"
MAX_CENTS = 1_000_000_00  # no refund in this shop is ever above a million (the schemas' maximum)
_MAX_DOLLARS = 10**13  # beyond this, dollars * 100 is no longer an exact float: refused before rounding

# Every fixture file's JSON schema, by name ("orders": orders.json); attacks.json's is `attacks.ATTACKS`.
SCHEMAS = read_json(REFUNDS / "schemas.json")
# What a model is shown, each text a list of lines: its instructions, the refund rules, the spotlight
# note, and each tool's parameters and description.
PROMPT_TEXTS = load_json(REFUNDS / "prompts.json", SCHEMAS["prompts"])


def cents(amount: float) -> int:
    """`amount` in dollars (an int or float, not a bool) as whole cents; ValueError otherwise,
    never OverflowError (10**400 is refused before any arithmetic).
    (serves: policy — a refund's amount; untrusted file — a fixture's amounts)"""
    if type(amount) not in (int, float) or amount != amount:  # NaN is the one value unequal to itself
        raise ValueError(f"amount {amount!r} is not a finite number")
    if not -_MAX_DOLLARS <= amount <= _MAX_DOLLARS:
        raise ValueError(f"amount is out of range: {'over' if amount > 0 else 'under -'}10**13 dollars")
    whole = round(amount * 100)
    if abs(amount * 100 - whole) > 1e-6:
        raise ValueError(f"amount {amount!r} is not a whole number of cents")
    return whole


def dollars(amount_cents: int) -> float:
    """Cents as dollars, a float: 8900 -> 89.0 (what a policy is shown)."""
    return amount_cents / 100


def money(amount_cents: int) -> str:
    """Cents as the text a customer reads: 8900 -> '$89.00'."""
    return f"${amount_cents / 100:,.2f}"


@dataclass(frozen=True)
class Customer:
    """One customer: their cards (`payment_methods`) and gift cards, which `load_shop` refuses to share
    between customers."""

    id: str
    name: str
    payment_methods: tuple[str, ...]
    gift_cards: tuple[str, ...]


@dataclass(frozen=True)
class Item:
    """One item of an order, its price in cents; a `final_sale` item is not refundable."""

    product: str
    name: str
    price: int  # cents
    final_sale: bool


@dataclass(frozen=True)
class Order:
    """One order record, amounts in cents; `load_shop` refuses one whose `amount` is not its items' sum or
    whose payment method is not the customer's. `note` is untrusted text."""

    id: str
    customer: str
    status: str
    date: dt.date
    payment_method: str
    amount: int  # cents paid
    items: tuple[Item, ...]
    note: str  # written by the customer at checkout: untrusted text inside a record

    @property
    def refundable(self) -> int:
        """Cents that may be refunded: every item except final-sale ones."""
        return sum(item.price for item in self.items if not item.final_sale)


@dataclass(frozen=True)
class RefundCall:
    """The three arguments that decide where money goes: order, amount (cents), destination."""

    order: str
    amount: int
    destination: str

    def __str__(self) -> str:
        return f"{money(self.amount)} on {self.order} to {self.destination}"


@dataclass(frozen=True)
class Refund:
    """One line of the shop's ledger: money that actually left the shop."""

    id: str
    order: str
    amount: int  # cents
    destination: str
    customer: str  # the authenticated customer the refund was executed for

    @property
    def call(self) -> RefundCall:
        """This refund's order, amount and destination, as the RefundCall that made it."""
        return RefundCall(self.order, self.amount, self.destination)


@dataclass(frozen=True)
class Shop:
    """Everything the shop holds. Records are trusted; messages, reviews and help are not."""

    name: str
    today: dt.date
    window_days: int
    customers: Mapping[str, Customer]
    orders: Mapping[str, Order]
    ledger: tuple[Refund, ...]
    messages: tuple[Mapping[str, str], ...]
    reviews: tuple[Mapping[str, Any], ...]
    help: Mapping[str, Mapping[str, str]]
    folder: Path = REFUNDS

    def copy(self) -> Shop:
        """A copy for a learner's guard: the customers and orders in new dicts it may change (the records
        in them are frozen, so they are shared); the untrusted texts (messages, reviews, help) are the
        same read-only views, where a write raises TypeError, a bug the guard's verdict then shows. A
        guard table asks a guard at 9,456 points with a copy each: copying the texts too took 60% of it."""
        return dataclasses.replace(self, customers=dict(self.customers), orders=dict(self.orders))

    def owner_of(self, instrument: str) -> str | None:
        """The customer a card or gift card belongs to, or None if the shop knows no such one."""
        for customer in self.customers.values():
            if instrument in customer.payment_methods or instrument in customer.gift_cards:
                return customer.id
        return None


def fixture_records(path: Path, schema: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    """Each record of the file at `path` (schema-checked, ids unique), with `fail(field, message)`:
    the FixtureError that names the file, the record and the field."""
    records = load_json(path, schema)
    unique_ids(path, records)

    def failing(index: int, record: dict[str, Any]) -> Any:
        def fail(field: str, message: str) -> FixtureError:
            return FixtureError(f"{path}: record {index} (id {record['id']!r}): field {field!r}: {message}")

        return fail

    return [(record, failing(index, record)) for index, record in enumerate(records)]


def require_known(record: dict[str, Any], fail: Any, field: str, names: Any, what: str) -> None:
    """FixtureError unless `record[field]` is one of `names` (another file's ids)."""
    if record[field] not in names:
        raise fail(field, f"unknown {what} {record[field]!r}")


def _cents(record: dict[str, Any], fail: Any, *amounts: Any) -> list[int]:
    try:
        return [cents(amount) for amount in amounts]
    except ValueError as error:
        raise fail("amount", str(error)) from None


def _date(record: dict[str, Any], fail: Any, field: str) -> dt.date:
    try:
        return dt.date.fromisoformat(record[field])
    except ValueError:
        raise fail(field, f"{record[field]!r} is not a date") from None


def load_shop(folder: str | Path = REFUNDS) -> Shop:
    """Load and cross-check the shop in `folder`; raise FixtureError naming the first problem.
    (serves: untrusted file — its records are trusted only once checked here)"""
    folder = Path(folder)
    if not folder.is_dir():
        raise FixtureError(f"{folder}: not a folder")
    head = load_json(folder / "shop.json", SCHEMAS["shop"])
    try:
        today = dt.date.fromisoformat(head["today"])
    except ValueError:
        raise FixtureError(f"{folder / 'shop.json'}: key 'today': {head['today']!r} is not a date") from None
    customers: dict[str, Customer] = {}
    owners: dict[str, str] = {}
    for record, fail in fixture_records(folder / "customers.json", SCHEMAS["customers"]):
        for field in ("payment_methods", "gift_cards"):
            for instrument in record[field]:
                if instrument in owners:
                    raise fail(field, f"{instrument!r} already belongs to {owners[instrument]!r}")
                owners[instrument] = record["id"]
        customers[record["id"]] = Customer(
            record["id"], record["name"], tuple(record["payment_methods"]), tuple(record["gift_cards"])
        )
    orders: dict[str, Order] = {}
    for record, fail in fixture_records(folder / "orders.json", SCHEMAS["orders"]):
        customer, method = record["customer"], record["payment_method"]
        require_known(record, fail, "customer", customers, "customer")
        if method not in customers[customer].payment_methods:
            raise fail("payment_method", f"{method!r} is not a payment method of {customer!r}")
        amount, *prices = _cents(record, fail, record["amount"], *(i["price"] for i in record["items"]))
        items = tuple(
            Item(i["product"], i["name"], price, i["final_sale"])
            for i, price in zip(record["items"], prices, strict=True)
        )
        if amount != sum(prices):
            raise fail(
                "amount", f"{record['amount']} is not the sum of its item prices ({sum(prices) / 100:.2f})"
            )
        date = _date(record, fail, "date")
        orders[record["id"]] = Order(
            record["id"], customer, record["status"], date, method, amount, items, record["note"]
        )
    ledger = []
    for record, fail in fixture_records(folder / "ledger.json", SCHEMAS["ledger"]):
        require_known(record, fail, "order", orders, "order")
        order = orders[record["order"]]
        if record["customer"] != order.customer:
            raise fail(
                "customer", f"order {order.id!r} belongs to {order.customer!r}, not {record['customer']!r}"
            )
        require_known(record, fail, "destination", owners, "card or gift card")
        (amount,) = _cents(record, fail, record["amount"])
        _date(record, fail, "date")
        ledger.append(Refund(record["id"], order.id, amount, record["destination"], record["customer"]))
    messages = fixture_records(folder / "messages.json", SCHEMAS["messages"])
    for record, fail in messages:
        require_known(record, fail, "customer", customers, "customer")
    products = {item.product for order in orders.values() for item in order.items}
    reviews = fixture_records(folder / "reviews.json", SCHEMAS["reviews"])
    for record, fail in reviews:
        require_known(record, fail, "product", products, "product")
    pages = {
        page["id"]: read_only(page) for page, _ in fixture_records(folder / "help.json", SCHEMAS["help"])
    }
    texts = tuple(read_only(m) for m, _ in messages), tuple(read_only(r) for r, _ in reviews)
    return Shop(
        head["name"],
        today,
        head["window_days"],
        read_only(customers),
        read_only(orders),
        tuple(ledger),
        *texts,
        read_only(pages),
        folder,
    )


def read_only(records: dict[str, Any]) -> Mapping[str, Any]:
    """A view of `records` that refuses writes (TypeError), so a learner's buggy policy that assigns
    into the course's shop fails in its own episode instead of changing every later one's records
    (threat model: a learner's code is buggy). `Shop.copy` gives a guard
    writable dicts of the customers and orders."""
    return MappingProxyType(records)
