"""A lab-03 guard as data: its verdicts tabulated over every refund call it can be asked about.

A submission must be data another laptop scores without running it: `guard_table(guard)` runs
the learner's guard on their own laptop over a finite domain and keeps one verdict per point;
`TableGuard(table)` answers by lookup, and `labkit class` runs it in real episodes.

A point: the request served, the call's order (every order), its destination (every card and
gift card), whether the order was refunded earlier in the episode, and the amount's class
relative to the order's *landmarks* (refundable, total, asked, refunded before): equal to one,
or between two (tabulated at one representative). A guard that compares amounts only with the
shop's figures is tabulated exactly; one with a constant of its own, or that reads other state
(other orders' refunds, untrusted text), is approximated. A guard is assumed deterministic.

Format: {"format": TABLE_FORMAT, "shop": <fingerprint of the domain>, "size": N, "verdicts": N
letters in domain order, "a" allowed, "r" refused, "e" raised (which refuses too)}: 9,456 points
for the course's shop.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from labkit.core.check import TimedOut, captured, time_limit
from labkit.refunds.cases import Request
from labkit.refunds.defenses import Defenses
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.shop import MAX_CENTS, Refund, RefundCall, Shop
from labkit.refunds.tools import EpisodeState

TABLE_FORMAT = "labkit-guard-table/1"
ALLOW, REFUSE, RAISED = "a", "r", "e"
_Point = tuple[str, str, str, bool, int]  # request, order, destination, refunded before, amount class


def landmarks(shop: Shop, request: Request, order: str) -> tuple[int, ...]:
    """The amounts (cents) at which a guard that reads only the records may change its mind."""
    record = shop.orders[order]
    points = {record.refundable, record.amount, *(r.amount for r in shop.ledger if r.order == order)}
    if request.amount is not None:
        points.add(request.amount)
    return tuple(sorted(p for p in points if 0 < p <= MAX_CENTS))


def amount_class(marks: tuple[int, ...], amount: int) -> int:
    """2i+1 if `amount` is the i-th landmark; 2i if it lies just below the i-th (2n: above all)."""
    i = bisect.bisect_left(marks, amount)
    return 2 * i + 1 if i < len(marks) and marks[i] == amount else 2 * i


def representatives(marks: tuple[int, ...]) -> list[tuple[int, int]]:
    """(class, amount) for every class that holds at least one positive amount <= MAX_CENTS."""
    out = []
    for i, mark in enumerate(marks):
        low = marks[i - 1] if i else 0
        if mark - low > 1:
            out.append((2 * i, (low + mark) // 2 if i else max(1, mark // 2)))
        out.append((2 * i + 1, mark))
    top = marks[-1] if marks else 0
    if top < MAX_CENTS:
        out.append((2 * len(marks), min(MAX_CENTS, 2 * top or 1)))
    return out


@dataclass(frozen=True)
class Domain:
    """Every point of the table, in order, and each point's representative call."""

    points: tuple[_Point, ...]
    amounts: tuple[int, ...]  # the representative amount of each point
    marks: dict[tuple[str, str], tuple[int, ...]]  # (request, order) -> landmarks
    index: dict[_Point, int]  # point -> its position in the verdicts
    fingerprint: str


def _instruments(shop: Shop) -> list[str]:
    return sorted({i for c in shop.customers.values() for i in (*c.payment_methods, *c.gift_cards)})


def domain(lab: RefundLab | None = None) -> Domain:
    """The table's domain for `lab` (default: the course's shop); cached for the course's."""
    return _course_domain() if lab is None else _build(lab)


@lru_cache(maxsize=1)
def _course_domain() -> Domain:
    return _build(refund_lab())


def _build(lab: RefundLab) -> Domain:
    shop = lab.shop
    points: list[_Point] = []
    amounts: list[int] = []
    marks: dict[tuple[str, str], tuple[int, ...]] = {}
    for request in sorted(lab.requests):
        for order in sorted(shop.orders):
            marks[request, order] = landmarks(shop, lab.requests[request], order)
            for destination in _instruments(shop):
                for before in (False, True):
                    for cls, amount in representatives(marks[request, order]):
                        points.append((request, order, destination, before, cls))
                        amounts.append(amount)
    text = json.dumps([points, amounts], separators=(",", ":"))
    index = {key: i for i, key in enumerate(points)}
    return Domain(tuple(points), tuple(amounts), marks, index, hashlib.sha256(text.encode()).hexdigest()[:16])


def _state(lab: RefundLab, request: Request, refunded: str | None) -> EpisodeState:
    """A fresh episode state for `request`, with one earlier refund of `refunded` if given."""
    state = EpisodeState(lab.shop, request, Defenses("tabulated guard"))
    if refunded is not None:
        order = lab.shop.orders[refunded]
        state.ledger.append(
            Refund("rf-table-0001", refunded, order.refundable or 1, order.payment_method, request.customer)
        )
    return state


def guard_table(
    guard: Callable[[Any, Any], Any], lab: RefundLab | None = None, *, limit: float | None = None
) -> dict[str, Any]:
    """Tabulate `guard` over the domain (see the module docstring): a JSON-able dict.

    A point where it raises or answers neither a str nor None is "e"; what it prints is
    discarded. Past `limit` seconds for the whole table: ValueError, and no table.
    """
    lab_ = lab or refund_lab()
    dom = domain(lab)
    verdicts = []
    states: dict[tuple[str, str | None], EpisodeState] = {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(captured(limit=0))
        if limit is not None:
            stack.enter_context(time_limit(limit))
        try:
            for (request, order, destination, before, _), amount in zip(dom.points, dom.amounts, strict=True):
                key = (request, order if before else None)
                if key not in states:
                    states[key] = _state(lab_, lab_.requests[request], key[1])
                try:
                    reason = guard(RefundCall(order, amount, destination), states[key].copy())
                except Exception:  # noqa: BLE001 - a crash inside the tool is a refusal; recorded as such
                    verdicts.append(RAISED)
                    continue
                if reason is not None and type(reason) is not str:
                    verdicts.append(RAISED)
                else:
                    verdicts.append(REFUSE if reason else ALLOW)
        except TimedOut:
            raise ValueError(f"the guard was not tabulated within {limit:g} s") from None
    return {
        "format": TABLE_FORMAT,
        "shop": dom.fingerprint,
        "size": len(verdicts),
        "verdicts": "".join(verdicts),
    }


def table_problem(table: Any, lab: RefundLab | None = None) -> str | None:
    """Why `table` cannot be used for this shop (one phrase), or None if it can."""
    dom = domain(lab)
    if not isinstance(table, dict):
        return f"a guard table is an object, not {type(table).__name__}"
    if table.get("format") != TABLE_FORMAT:
        return f"guard table format is not {TABLE_FORMAT!r}"
    if table.get("shop") != dom.fingerprint:
        return "guard table was made for another version of the shop's fixtures"
    verdicts = table.get("verdicts")
    if not isinstance(verdicts, str) or len(verdicts) != len(dom.points):
        return f"guard table must hold exactly {len(dom.points)} verdicts"
    if verdicts.strip(ALLOW + REFUSE + RAISED):
        return "guard table verdicts may only be the letters a, r and e"
    return None


class TableGuard:
    """A guard that answers from a guard table (no learner code runs); `crashes` counts "e" hits."""

    def __init__(self, table: dict[str, Any], name: str, lab: RefundLab | None = None) -> None:
        problem = table_problem(table, lab)
        if problem is not None:
            raise ValueError(problem)
        self.__name__ = name
        self._domain = domain(lab)
        self._verdicts: str = table["verdicts"]
        self.crashes = 0

    def __call__(self, call: RefundCall, state: EpisodeState) -> str | None:
        request = state.request.id
        before = any(refund.order == call.order for refund in state.new_refunds)
        cls = amount_class(self._domain.marks[request, call.order], call.amount)
        verdict = self._verdicts[self._domain.index[request, call.order, call.destination, before, cls]]
        if verdict == RAISED:
            self.crashes += 1
            return "the guard raised an error here"
        return "refused by the guard's table" if verdict == REFUSE else None
