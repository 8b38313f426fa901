"""The lab's data in one validated bundle: the shop, its requests and the attacks on it, and the model
suite's own further requests (`requests-model.json`), which nothing scripted reads."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from labkit.core.errors import FixtureError, LabError
from labkit.refunds.attacks import Attack, load_attacks
from labkit.refunds.cases import Request, load_requests
from labkit.refunds.shop import REFUNDS, Shop, load_shop

MODEL_REQUESTS = "requests-model.json"  # in the lab's folder; optional (a learner's own shop has none)


@dataclass(frozen=True)
class RefundLab:
    """The shop, its requests and its attacks, by id; `model_requests`: the further legitimate requests
    only the model suite runs (`grid.request_cases`), kept out of `requests`, which the scripted matrix,
    the checkers and their exact figures read."""

    shop: Shop
    requests: Mapping[str, Request]
    attacks: Mapping[str, Attack]
    model_requests: Mapping[str, Request] = field(default_factory=dict)

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

    @property
    def every_request(self) -> Mapping[str, Request]:
        """`requests` and then `model_requests`, by id: what a model grid's case may name."""
        return {**self.requests, **self.model_requests}


def named(what: str, id: str, known: Mapping[str, Any]) -> Any:
    """`known[id]`, or a LabError listing the known names (serves: user — an unknown name is one line)."""
    try:
        return known[id]
    except KeyError:
        raise LabError(f"unknown {what} {id!r} (known: {', '.join(known)})") from None


def load_lab(folder: str | Path = REFUNDS) -> RefundLab:
    """Load and cross-check every file in `folder`; FixtureError names the first problem."""
    shop = load_shop(folder)
    requests = {request.id: request for request in load_requests(shop, Path(folder) / "requests.json")}
    attacks = load_attacks(shop, folder)
    more = Path(folder) / MODEL_REQUESTS
    extra = {request.id: request for request in load_requests(shop, more)} if more.is_file() else {}
    if clash := sorted(set(extra) & set(requests)):
        raise FixtureError(f"{more}: request id(s) {', '.join(clash)} already in requests.json")
    if refused := [request.id for request in extra.values() if not request.legitimate]:
        raise FixtureError(f"{more}: the model suite's further requests are legitimate ones, not {refused}")
    return RefundLab(shop, requests, attacks, extra)


@lru_cache(maxsize=1)
def refund_lab() -> RefundLab:
    """The course's own shop (`fixtures/refunds/`), loaded once per process."""
    return load_lab(REFUNDS)
