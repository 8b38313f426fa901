"""The lab's data in one validated bundle: the shop, its requests and the attacks on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from labkit.core.errors import LabError
from labkit.refunds.attacks import Attack, load_attacks
from labkit.refunds.cases import Request, load_requests
from labkit.refunds.shop import REFUNDS, Shop, load_shop


@dataclass(frozen=True)
class RefundLab:
    """The shop, its requests and its attacks, by id."""

    shop: Shop
    requests: Mapping[str, Request]
    attacks: Mapping[str, Attack]

    def request(self, id: str | Request) -> Request:
        """The request with id `id` (a Request as it is); LabError listing the known ids otherwise."""
        return id if isinstance(id, Request) else named("request", id, self.requests)

    def attack(self, id: str | Attack) -> Attack:
        """The attack with id `id` (an Attack as it is); LabError listing the known ids otherwise."""
        return id if isinstance(id, Attack) else named("attack", id, self.attacks)

    @property
    def legitimate(self) -> list[Request]:
        """The requests to carry out (`Request.legitimate`), in the fixture's order."""
        return [request for request in self.requests.values() if request.legitimate]


def named(what: str, id: str, known: Mapping[str, Any]) -> Any:
    """`known[id]`, or a LabError listing the known names (guards: user — an unknown name is one line)."""
    try:
        return known[id]
    except KeyError:
        raise LabError(f"unknown {what} {id!r} (known: {', '.join(known)})") from None


def load_lab(folder: str | Path = REFUNDS) -> RefundLab:
    """Load and cross-check every file in `folder`; FixtureError names the first problem."""
    shop = load_shop(folder)
    requests = load_requests(shop, Path(folder) / "requests.json")
    attacks = load_attacks(shop, folder)
    return RefundLab(shop, {request.id: request for request in requests}, attacks)


@lru_cache(maxsize=1)
def refund_lab() -> RefundLab:
    """The course's own shop (`fixtures/refunds/`), loaded once per process."""
    return load_lab(REFUNDS)
