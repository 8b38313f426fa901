"""A lab-03 guard as data: one verdict ("a" allowed, "r" refused, "e" raised) per point of a finite domain
(request, order, destination, refunded before, the amount's class among the order's landmarks).
`TableGuard(table)` answers by lookup, so `labkit class` scores a submission without running it.

The domain covers every call that reaches a guard (the refund tool refuses an unknown order or card and
an amount outside 0 < cents <= MAX_CENTS first), for the course's shop as it is; the table is exact only
for a guard that stays within these approximations:

- Amounts: each class (a landmark, or the span between two: the order's refundable and paid amounts, the
  shop's ledger refunds on it, the request's amount) is tabulated at one representative amount: exact
  for a guard that compares amounts only with those figures.
- Refunded before: one bit, whether this episode already refunded the call's order, tabulated with one
  earlier refund of its refundable amount (1 cent if none) to its payment method; a guard that reads
  that refund's amount or destination, or this episode's refunds of other orders, is not exact.
- The rest of the state is a fresh episode's: no approvals, idempotency keys, untrusted text, injection
  or faults; the course shop's own date, window and ledger. `table_problem` refuses a table whose domain
  fingerprint differs, and the hidden `policy_edges`, which move the date and window, skip a TableGuard.
- Each point is asked once, in domain order: a guard with memory or randomness is tabulated as it
  answered then.
- Only the verdict is kept: a refusal reads "refused by the guard's table"; an "e" (the guard raised, or
  answered neither a str nor None, though the tool itself lets a falsy such answer through) is a
  refusal counted in `crashes`. What the guard prints is discarded.
"""

import bisect
import contextlib
import hashlib
import json
from collections.abc import Callable
from functools import cache
from typing import Any

from labkit.core.check import TimedOut, captured, time_limit
from labkit.refunds.defenses import Defenses
from labkit.refunds.lab import refund_lab
from labkit.refunds.shop import MAX_CENTS, Refund, RefundCall
from labkit.refunds.tools import EpisodeState

TABLE_FORMAT = "labkit-guard-table/1"
ALLOW, REFUSE, RAISED = "a", "r", "e"


def landmarks(request_id: str, order: str) -> tuple[int, ...]:
    """The amounts (cents) at which a guard that reads only the records may change its mind."""
    shop, request = refund_lab().shop, refund_lab().requests[request_id]
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


@cache
def _domain() -> tuple[list[tuple], dict[tuple, int], str]:
    """Every point of the course's shop with its representative amount, each point's index, and the
    domain's fingerprint."""
    shop = refund_lab().shop
    cards = sorted({i for c in shop.customers.values() for i in (*c.payment_methods, *c.gift_cards)})
    points = [
        (request, order, destination, before, cls, amount)
        for request in sorted(refund_lab().requests)
        for order in sorted(shop.orders)
        for destination in cards
        for before in (False, True)
        for cls, amount in representatives(landmarks(request, order))
    ]
    text = json.dumps([[p[:5] for p in points], [p[5] for p in points]], separators=(",", ":"))
    index = {point[:5]: i for i, point in enumerate(points)}
    return points, index, hashlib.sha256(text.encode()).hexdigest()[:16]


def _state(request_id: str, refunded: str | None) -> EpisodeState:
    """A fresh episode state for the request, with one earlier refund of `refunded` if given."""
    lab = refund_lab()
    request = lab.requests[request_id]
    state = EpisodeState(lab.shop, request, Defenses("tabulated guard"))
    if refunded is not None:
        order = lab.shop.orders[refunded]
        state.ledger.append(
            Refund("rf-table-0001", refunded, order.refundable or 1, order.payment_method, request.customer)
        )
    return state


def guard_table(guard: Callable[[Any, Any], Any], *, limit: float | None = None) -> dict[str, Any]:
    """Tabulate `guard` over the domain: a JSON-able dict. A point where it raises or answers neither
    a str nor None is "e"; what it prints is discarded. Past `limit` seconds: ValueError, no table.
    (serves: learner — a learner's guard is buggy, not hostile)"""
    points, _, fingerprint = _domain()
    verdicts, states = [], {}
    with contextlib.ExitStack() as stack:
        stack.enter_context(captured(limit=0))
        if limit is not None:
            stack.enter_context(time_limit(limit))
        try:
            for request, order, destination, before, _, amount in points:
                key = (request, order if before else None)
                if key not in states:
                    states[key] = _state(*key)
                try:
                    reason = guard(RefundCall(order, amount, destination), states[key].copy())
                    answered = reason is None or type(reason) is str
                    verdicts.append((REFUSE if reason else ALLOW) if answered else RAISED)
                except Exception:  # noqa: BLE001 - a crash inside the tool is a refusal; recorded as such
                    verdicts.append(RAISED)
        except TimedOut:
            raise ValueError(f"the guard was not tabulated within {limit:g} s") from None
    return {"format": TABLE_FORMAT, "shop": fingerprint, "size": len(verdicts), "verdicts": "".join(verdicts)}


def table_problem(table: Any) -> str | None:
    """Why `table` cannot be used for the course's shop (one phrase), or None if it can.
    (serves: untrusted file — a submission's guard table)"""
    points, _, fingerprint = _domain()
    if not isinstance(table, dict):
        return f"a guard table is an object, not {type(table).__name__}"
    if table.get("format") != TABLE_FORMAT:
        return f"guard table format is not {TABLE_FORMAT!r}"
    if table.get("shop") != fingerprint:
        return "guard table was made for another version of the shop's fixtures"
    verdicts = table.get("verdicts")
    if not isinstance(verdicts, str) or len(verdicts) != len(points):
        return f"guard table must hold exactly {len(points)} verdicts"
    if verdicts.strip(ALLOW + REFUSE + RAISED):
        return "guard table verdicts may only be the letters a, r and e"
    return None


class TableGuard:
    """A guard that answers from a guard table (no learner code runs); `crashes` counts "e" hits.
    ValueError for a table `table_problem` refuses (serves: untrusted file — a table comes from the
    room; `labkit class` read it through `submission.read`, a caller building one by hand did not)."""

    def __init__(self, table: dict[str, Any], name: str) -> None:
        if (problem := table_problem(table)) is not None:
            raise ValueError(problem)
        self.__name__, self._verdicts, self.crashes = name, table["verdicts"], 0

    def __call__(self, call: RefundCall, state: EpisodeState) -> str | None:
        request = state.request.id
        before = any(refund.order == call.order for refund in state.new_refunds)
        cls = amount_class(landmarks(request, call.order), call.amount)
        verdict = self._verdicts[_domain()[1][request, call.order, call.destination, before, cls]]
        if verdict == RAISED:
            self.crashes += 1
            return "the guard raised an error here"
        return "refused by the guard's table" if verdict == REFUSE else None
