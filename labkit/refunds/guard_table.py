"""A lab-03 guard as data: its verdicts tabulated over every refund call it can be asked about.

A guard is Python (`guard(call, state) -> reason | None`), and a submission must be data
that another laptop can score without running anything it was sent. So `guard_table(guard)`
runs the learner's own guard, on the learner's own laptop, over a finite domain built from
the shop's fixtures, and keeps one verdict per point; `TableGuard(table)` is then a guard
that answers by looking its call up, which `labkit class` runs in real episodes against
every submitted attack.

The domain. The refund tool asks a guard only about calls that name a known order, a known
card or gift card and a positive amount (it refuses anything else first), during an episode
of one of the shop's requests. So a point is:

- the request being served (it fixes the signed-in customer and what they asked for);
- the call's order: every order of the shop;
- the call's destination: every card and gift card the shop knows (attackers' included);
- whether the call's order was already refunded earlier in this episode;
- the call's amount, as a class: equal to one of the order's *landmarks* (its refundable
  amount, its total, the amount the request asked for, any amount already refunded on it),
  or strictly between two neighbouring landmarks, below the smallest or above the largest.
  Each class is tabulated at one representative amount (the landmark itself; the midpoint
  of a gap; half the smallest; twice the largest).

What this approximates, stated rather than hidden:

- A guard that compares the amount only against the shop's own figures (the policy's rules,
  "what the customer asked") is tabulated exactly. One with a constant of its own
  (`amount < 500_00`) is judged at each class's representative, so an attack's amount in the
  same class gets the verdict of the representative, which may differ.
- The ledger is summarised by one bit per call: was this order refunded earlier in this
  episode (tabulated with one earlier refund of the order's refundable amount to its payment
  method). A guard that counts refunds on *other* orders, or reads their amounts, is judged
  as if there were none.
- The state is otherwise fresh: no untrusted text read yet, no approvals. A guard that reads
  `state.untrusted` (the injected text) is judged as if nothing had been read.
- A guard is assumed deterministic: it is called once per point.

Format: {"format": "labkit-guard-table/1", "shop": <fingerprint of the domain>, "size": N,
"verdicts": a string of N letters, in domain order, "a" (allowed), "r" (refused) or "e"
(the guard raised: inside the tool that refuses too)}. 9,456 points for the course's shop
(10 requests x 11 orders x 12 cards and gift cards x 2 ledger states x 3-5 amount classes):
a string of that many letters, about 9.5 kB, checked letter by letter when read back.
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

FORMAT = "labkit-guard-table/1"
ALLOW, REFUSE, RAISED = "a", "r", "e"
Key = tuple[str, str, str, bool, int]  # request, order, destination, refunded before, amount class


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

    points: tuple[Key, ...]
    amounts: tuple[int, ...]  # the representative amount of each point
    marks: dict[tuple[str, str], tuple[int, ...]]  # (request, order) -> landmarks
    index: dict[Key, int]  # point -> its position in the verdicts
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
    points: list[Key] = []
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
        # Module-private on purpose: an episode gains refunds only through the refund tool,
        # and this is the one other place that writes a ledger, to tabulate "refunded before".
        state._ledger.append(Refund("rf-table-0001", refunded, order.refundable or 1,
                                    order.payment_method, request.customer))
    return state


def guard_table(guard: Callable[[Any, Any], Any], lab: RefundLab | None = None, *,
                limit: float | None = None) -> dict[str, Any]:
    """Tabulate `guard` over the domain (see the module docstring): a JSON-able dict.

    Calls the guard once per point (9,456 for the course's shop; 25 ms for a guard that
    applies the refund policy). A point where it raises (LabError included) or answers
    something other than a str or None is recorded as "e" and the tabulation goes on.
    Whatever the guard prints is discarded: a table is data, and one debug print would
    otherwise be 9,456 lines. `limit`: seconds for the whole tabulation; past it, ValueError
    and no table (a guard that hangs is never half tabulated). Expose it as the payload of a
    checker: `@exercise("03", "mediation", payload=guard_table)`.
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
                    reason = guard(RefundCall(order, amount, destination), states[key])
                except Exception:  # noqa: BLE001 - a crash inside the tool is a refusal; recorded as such
                    verdicts.append(RAISED)
                    continue
                if reason is not None and type(reason) is not str:
                    verdicts.append(RAISED)
                else:
                    verdicts.append(REFUSE if reason else ALLOW)
        except TimedOut:
            raise ValueError(f"the guard was not tabulated within {limit:g} s") from None
    return {"format": FORMAT, "shop": dom.fingerprint, "size": len(verdicts), "verdicts": "".join(verdicts)}


def table_problem(table: Any, lab: RefundLab | None = None) -> str | None:
    """Why `table` cannot be used for this shop (one phrase), or None if it can."""
    dom = domain(lab)
    if not isinstance(table, dict):
        return f"a guard table is an object, not {type(table).__name__}"
    if table.get("format") != FORMAT:
        return f"guard table format is not {FORMAT!r}"
    if table.get("shop") != dom.fingerprint:
        return "guard table was made for another version of the shop's fixtures"
    verdicts = table.get("verdicts")
    if not isinstance(verdicts, str) or len(verdicts) != len(dom.points):
        return f"guard table must hold exactly {len(dom.points)} verdicts"
    if verdicts.strip(ALLOW + REFUSE + RAISED):
        return "guard table verdicts may only be the letters a, r and e"
    return None


class TableGuard:
    """A guard that answers from a guard table: no learner code runs.

    `crashes` counts lookups that hit a point where the original guard raised.
    """

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
