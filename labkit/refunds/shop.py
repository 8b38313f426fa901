"""The fictional shop's records and texts, loaded and cross-checked before any policy runs.

A fixture folder (default `fixtures/refunds/`) holds the shop's *records* — what the
shop itself wrote and can be trusted: `shop.json` (name, today's date, refund window),
`customers.json`, `orders.json`, `ledger.json` (refunds already paid) — and its *texts*,
which anyone outside the shop can write and which are therefore untrusted:
`messages.json` (the customers' support threads, received by email), `reviews.json` and
`help.json` (help-centre pages with community answers).

Money is held in integer cents from the moment it is loaded, so that "refund at most the
refundable amount" is an exact comparison, never a float one.

Records are immutable once loaded: every record is a frozen dataclass or a `FrozenMap`,
every list a tuple. A policy runs in the same process as the shop, and the course's shop
is loaded once per process (`refund_lab()`): a record a policy could change would steer
every later episode, so none can be changed through any object labkit hands out. Loading refuses, with one
FixtureError naming file, record and field: a schema violation, a duplicate id, an order
of an unknown customer, a payment method that is not its customer's, an amount that is not
the sum of its items, a ledger refund that does not match its order's customer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from labkit.core.errors import FixtureError
from labkit.core.fixtures import FIXTURES, load_json, record_list, unique_ids

REFUNDS = FIXTURES / "refunds"
STATUSES = ("pending", "shipped", "delivered", "returned", "cancelled")
MAX_CENTS = 1_000_000_00  # no refund in this shop is ever above a million: larger is malformed
_MAX_DOLLARS = 10**13  # beyond this, dollars * 100 is no longer an exact float: refused before rounding

_ID = {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,59}$"}
_NAME = {"type": "string", "minLength": 1, "maxLength": 100}
_TEXT = {"type": "string", "maxLength": 2000}
_DATE = {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"}
_MONEY = {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_CENTS / 100}

SHOP = {
    "type": "object",
    "properties": {"name": _NAME, "today": _DATE, "window_days": {"type": "integer", "minimum": 0}},
    "required": ["name", "today", "window_days"],
    "additionalProperties": False,
}
CUSTOMERS = record_list({
    "id": _ID, "name": _NAME,
    "payment_methods": {"type": "array", "items": _ID, "minItems": 1},
    "gift_cards": {"type": "array", "items": _ID},
})
_ITEM = {
    "type": "object",
    "properties": {"product": _ID, "name": _NAME, "price": _MONEY, "final_sale": {"type": "boolean"}},
    "required": ["product", "name", "price", "final_sale"],
    "additionalProperties": False,
}
ORDERS = record_list({
    "id": _ID, "customer": _ID, "status": {"enum": list(STATUSES)}, "date": _DATE,
    "payment_method": _ID, "amount": _MONEY,
    "items": {"type": "array", "items": _ITEM, "minItems": 1}, "note": _TEXT,
})
LEDGER = record_list({
    "id": _ID, "order": _ID, "amount": _MONEY, "destination": _ID, "customer": _ID, "date": _DATE,
})
MESSAGES = record_list({"id": _ID, "customer": _ID, "sender": _NAME, "text": _TEXT})
REVIEWS = record_list({
    "id": _ID, "product": _ID, "author": _NAME,
    "rating": {"type": "integer", "minimum": 1, "maximum": 5}, "text": _TEXT,
})
HELP = record_list({"id": _ID, "title": _NAME, "text": _TEXT})


K = TypeVar("K")
V = TypeVar("V")


class FrozenMap(Mapping[K, V]):
    """A read-only mapping: no item can be set, replaced or removed after construction.

    The stdlib's `types.MappingProxyType` would do, but it can be neither pickled nor
    deep-copied, and lab results travel to worker processes and into notebooks' copies.
    """

    __slots__ = ("_items",)
    _items: dict[K, V]

    def __init__(self, items: Mapping[K, V] | Iterable[tuple[K, V]] = ()) -> None:
        object.__setattr__(self, "_items", dict(items))

    def __getitem__(self, key: K) -> V:
        return self._items[key]

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: K, default: Any = None) -> Any:
        return self._items.get(key, default)

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._items,))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"


def cents(amount: float) -> int:
    """`amount` in dollars as whole cents; ValueError if it is not a finite whole-cent amount.

    Accepts an exact int or float only (not a bool, not a subclass). A magnitude above
    10**13 dollars is refused before any arithmetic, so 10**400 or 1e307 is a ValueError,
    never an OverflowError.
    """
    if type(amount) not in (int, float) or amount != amount:  # NaN is the one value unequal to itself
        raise ValueError(f"amount {amount!r} is not a finite number")
    if not -_MAX_DOLLARS <= amount <= _MAX_DOLLARS:
        raise ValueError(f"amount is out of range: {'over' if amount > 0 else 'under -'}10**13 dollars")
    whole = round(amount * 100)
    if abs(amount * 100 - whole) > 1e-6:
        raise ValueError(f"amount {amount!r} is not a whole number of cents")
    return whole


def dollars(amount_cents: int) -> float:
    return amount_cents / 100


def money(amount_cents: int) -> str:
    """Cents as the text a customer reads: 8900 -> '$89.00'."""
    return f"${amount_cents / 100:,.2f}"


@dataclass(frozen=True)
class Customer:
    id: str
    name: str
    payment_methods: tuple[str, ...]
    gift_cards: tuple[str, ...]


@dataclass(frozen=True)
class Item:
    product: str
    name: str
    price: int  # cents
    final_sale: bool


@dataclass(frozen=True)
class Order:
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
    key: str | None = None  # the idempotency key it was sent with, if any

    @property
    def call(self) -> RefundCall:
        return RefundCall(self.order, self.amount, self.destination)

    def as_dict(self) -> dict[str, Any]:
        return {"refund": self.id, "order": self.order, "amount": dollars(self.amount),
                "destination": self.destination, "customer": self.customer}


@dataclass(frozen=True)
class Shop:
    """Everything the shop holds. Records are trusted; messages, reviews and help are not.

    Immutable, all the way down: `customers`, `orders` and `help` are FrozenMaps, `ledger`,
    `messages` and `reviews` tuples, each message, review and help page a FrozenMap.
    """

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

    def owner_of(self, instrument: str) -> str | None:
        """The customer a card or gift card belongs to, or None if the shop knows no such one."""
        for customer in self.customers.values():
            if instrument in customer.payment_methods or instrument in customer.gift_cards:
                return customer.id
        return None


def _date(path: Path, index: int, record: dict[str, Any], field: str) -> dt.date:
    try:
        return dt.date.fromisoformat(record[field])
    except ValueError:
        raise FixtureError(
            f"{path}: record {index} (id {record['id']!r}): field {field!r}: "
            f"{record[field]!r} is not a date"
        ) from None


def _fail(path: Path, index: int, record: dict[str, Any], field: str, message: str) -> FixtureError:
    return FixtureError(f"{path}: record {index} (id {record['id']!r}): field {field!r}: {message}")


def _load_list(folder: Path, name: str, schema: dict[str, Any]) -> list[dict[str, Any]]:
    records = load_json(folder / name, schema)
    unique_ids(folder / name, records)
    return records


def load_shop(folder: str | Path = REFUNDS) -> Shop:
    """Load and cross-check the shop in `folder`; raise FixtureError naming the first problem."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FixtureError(f"{folder}: not a folder")
    head = load_json(folder / "shop.json", SHOP)
    try:
        today = dt.date.fromisoformat(head["today"])
    except ValueError:
        raise FixtureError(f"{folder / 'shop.json'}: key 'today': {head['today']!r} is not a date") from None

    customers: dict[str, Customer] = {}
    owners: dict[str, str] = {}
    path = folder / "customers.json"
    for index, record in enumerate(_load_list(folder, "customers.json", CUSTOMERS)):
        for field in ("payment_methods", "gift_cards"):
            for instrument in record[field]:
                if instrument in owners:
                    raise _fail(path, index, record, field,
                                f"{instrument!r} already belongs to {owners[instrument]!r}")
                owners[instrument] = record["id"]
        customers[record["id"]] = Customer(record["id"], record["name"],
                                           tuple(record["payment_methods"]), tuple(record["gift_cards"]))

    orders: dict[str, Order] = {}
    path = folder / "orders.json"
    for index, record in enumerate(_load_list(folder, "orders.json", ORDERS)):
        if record["customer"] not in customers:
            raise _fail(path, index, record, "customer", f"unknown customer {record['customer']!r}")
        if record["payment_method"] not in customers[record["customer"]].payment_methods:
            raise _fail(path, index, record, "payment_method",
                        f"{record['payment_method']!r} is not a payment method of {record['customer']!r}")
        try:
            items = tuple(Item(i["product"], i["name"], cents(i["price"]), i["final_sale"])
                          for i in record["items"])
            amount = cents(record["amount"])
        except ValueError as error:
            raise _fail(path, index, record, "amount", str(error)) from None
        if amount != sum(item.price for item in items):
            raise _fail(path, index, record, "amount",
                        f"{record['amount']} is not the sum of its item prices "
                        f"({sum(item.price for item in items) / 100:.2f})")
        orders[record["id"]] = Order(record["id"], record["customer"], record["status"],
                                     _date(path, index, record, "date"), record["payment_method"],
                                     amount, items, record["note"])

    ledger = []
    path = folder / "ledger.json"
    for index, record in enumerate(_load_list(folder, "ledger.json", LEDGER)):
        order = orders.get(record["order"])
        if order is None:
            raise _fail(path, index, record, "order", f"unknown order {record['order']!r}")
        if record["customer"] != order.customer:
            raise _fail(path, index, record, "customer",
                        f"order {order.id!r} belongs to {order.customer!r}, not {record['customer']!r}")
        if record["destination"] not in owners:
            raise _fail(path, index, record, "destination",
                        f"unknown card or gift card {record['destination']!r}")
        try:
            amount = cents(record["amount"])
        except ValueError as error:
            raise _fail(path, index, record, "amount", str(error)) from None
        _date(path, index, record, "date")
        ledger.append(Refund(record["id"], record["order"], amount, record["destination"],
                             record["customer"]))

    messages = _load_list(folder, "messages.json", MESSAGES)
    for index, record in enumerate(messages):
        if record["customer"] not in customers:
            raise _fail(folder / "messages.json", index, record, "customer",
                        f"unknown customer {record['customer']!r}")
    products = {item.product for order in orders.values() for item in order.items}
    reviews = _load_list(folder, "reviews.json", REVIEWS)
    for index, record in enumerate(reviews):
        if record["product"] not in products:
            raise _fail(folder / "reviews.json", index, record, "product",
                        f"no order contains product {record['product']!r}")
    help_pages = _load_list(folder, "help.json", HELP)
    return Shop(head["name"], today, head["window_days"], FrozenMap(customers), FrozenMap(orders),
                tuple(ledger), tuple(map(FrozenMap, messages)), tuple(map(FrozenMap, reviews)),
                FrozenMap({page["id"]: FrozenMap(page) for page in help_pages}), folder)
