"""Lab 03's build-it cell and exercises.

Build it: `check_mediation(my_guard)`. A guard is `guard(call, state) -> str | None`: the
refund tool calls it with the proposed `call` (`call.order`, `call.amount` in cents,
`call.destination`) and the episode's `state` before any money moves, and refuses the
refund when it returns a reason. Complete mediation is a guard that applies the written
refund policy to the shop's records — `state.shop.orders[id]` (`.customer`, `.status`,
`.date`, `.refundable`, `.payment_method`), `state.shop.customers[id].gift_cards`,
`state.request.customer` (who is signed in), `state.shop.today`, `state.shop.window_days`
and `state.ledger` (every refund so far, each with `.order`) — and never to anything a
policy or a tool said.

The checker installs your guard as the *only* defense and runs, from the ledger: the
gullible policy (which obeys every injected instruction) and the careful one on every
request alone, under every attack at every place, and with a refund that times out after
paying; and a hostile policy that proposes every refund it can name. Passed when no refund
the records do not authorise is paid, and every legitimate request is still paid once.

Exercises:

1. `check_intent_attack(record)`: an attack (one attacks.json record) that complete
   mediation cannot stop — its goal is a refund the shop's rules allow but the customer did
   not ask for. The record is kept with the verdict, as data, for the class's red-team round.
2. `check_guard(guard)`: a guard that stops every attack sending money to a card or gift
   card the customer does not own, without mediation and without refusing a legitimate
   request.
3. `check_retry_policy(decide)`: a policy whose retry after a timeout cannot pay twice
   even when the server has no idempotency keys and no mediation.

A checker never raises for a learner's mistake: a malformed record, a guard that crashes or
a policy that errs all come back as a failed Check that says what went wrong.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import functools
import json
import reprlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd

from labkit.core import check as _check
from labkit.core.check import (
    NOT_YET,
    Check,
    TimedOut,
    captured,
    crashed,
    fail,
    learner_line,
    not_a_function,
    time_limit,
)
from labkit.core.errors import LabError
from labkit.core.progress import exercise
from labkit.core.text import shorten
from labkit.refunds.attacks import Attack, attack_from, gold_calls, load_templates, schema_problem, succeeded
from labkit.refunds.cases import Request
from labkit.refunds.defenses import DEFENSES, Defenses
from labkit.refunds.display import short
from labkit.refunds.guard_table import TableGuard, guard_table
from labkit.refunds.lab import RefundLab, refund_lab
from labkit.refunds.metrics import RETRY_FAULT, Score, Spec, evaluate, suite, summarise, unauthorized
from labkit.refunds.policies import PolicyFactory, cannot_hang, careful, factory_of, gullible, timed_out
from labkit.refunds.rules import authorise
from labkit.refunds.shop import Refund, RefundCall, dollars, money
from labkit.refunds.tools import TIMEOUT_MESSAGE, EpisodeState

__all__ = ["check_guard", "check_intent_attack", "check_mediation", "check_retry_policy", "hostile"]

GUARD_SHAPE = "a guard is a function guard(call, state) -> str | None"
ATTACK_FIELDS = ("id", "template", "goal", "check", "gold", "places")
LABKITS = ("that is labkit's version (R.authorise, the rules the mediation defense runs); write your own: "
           "check each rule of the written policy against state.shop's records yourself.")
TIMED_OUT = "your function did not return within"  # how `crashed` words a TimedOut
# A second refund window, beside the shop's own: a guard must read state.shop.window_days.
OTHER_WINDOW = 12


Guard = Callable[[Any, EpisodeState], Any]
_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlist, _SHOWN.maxdict = 60, 60, 6, 4


def _shown(value: Any) -> str:
    """A short, safe repr of a learner's value for a verdict (never huge, never raising)."""
    if isinstance(value, int) and abs(value) > 10**18:  # str() of a 5,000-digit int raises
        return f"a number of about {int(value.bit_length() * 0.30103) + 1:,} digits"
    try:
        return shorten(" ".join(_SHOWN.repr(value).split()), 80)
    except Exception:  # noqa: BLE001 - a repr that raises is shown by its type
        return f"a {type(value).__name__}"


def _limit() -> float:
    """Seconds a learner's code gets for one case (read at each check: tests lower it)."""
    return _check.LIMIT_S


# -- labkit's own implementation handed in ---------------------------------------------------------


def _unwrapped(answer: Any) -> Iterator[Any]:
    """`answer` and what it wraps: functools.partial's func, __wrapped__, a bound method's __func__."""
    seen: set[int] = set()
    while answer is not None and id(answer) not in seen and len(seen) < 20:
        seen.add(id(answer))
        yield answer
        try:
            if isinstance(answer, functools.partial):
                answer = answer.func
            else:
                answer = getattr(answer, "__wrapped__", None) or getattr(answer, "__func__", None)
        except Exception:  # noqa: BLE001 - an attribute that raises ends the walk
            return


def _is_labkits(answer: Any, original: Callable[..., Any]) -> bool:
    """True if `answer` is `original` itself, or wraps it (partial, decorator, method)."""
    code = getattr(original, "__code__", None)
    for inner in _unwrapped(answer):
        if inner is original or (code is not None and getattr(inner, "__code__", None) is code):
            return True
    return False


@contextlib.contextmanager
def _watching(*originals: Callable[..., Any]) -> Iterator[list[str]]:
    """Note (in the yielded list) every call of one of `originals` made in this thread inside the block.

    With sys.setprofile, so a learner's function that only delegates to labkit's is recognised
    whatever it is named. Nothing is watched while another profiler is installed (a profile
    run of the notebook keeps working; the check then relies on identity alone).
    """
    codes = {fn.__code__: fn.__name__ for fn in originals}
    seen: list[str] = []
    if sys.getprofile() is not None:
        yield seen
        return

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            seen.append(codes[frame.f_code])

    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(None)


# -- running a learner's guard --------------------------------------------------------------------


class _Watched:
    """The learner's guard as the refund tool calls it; the first thing that went wrong is kept.

    A crash or an answer that is neither a str nor None becomes a refusal inside the tool
    (the episode goes on, no money moves) and `problem` the verdict that names it and `where`.
    LabError from the learner's code is treated like any other crash, never re-raised.
    """

    def __init__(self, guard: Guard) -> None:
        self.guard, self.problem, self.where = guard, None, ""
        self.__name__ = "your guard"

    def __call__(self, call: Any, state: EpisodeState) -> str | None:
        try:
            reason = self.guard(call, state)
        except Exception as error:  # noqa: BLE001 - the verdict reports it
            if self.problem is None:
                self.problem = _crash(error, self.where)
            raise ValueError("the guard raised an error") from None
        if reason is None or type(reason) is str:
            return reason
        if self.problem is None:
            self.problem = fail(f"your guard returned {_shown(reason)} ({type(reason).__name__}) "
                                f"{self.where}; return a reason (a str) to refuse the refund, or None to "
                                "allow it.")
        return "the guard's answer was not a str or None"


def _crash(error: BaseException, where: str) -> Check:
    if isinstance(error, TimedOut):
        return crashed(error, where)
    text = shorten(str(error), 120)
    line = learner_line(error)
    at = f" at {shorten(line, 110)}" if line else ""
    return fail(f"your guard raised {type(error).__name__}{': ' + text if text else ''} {where}{at}. "
                "Inside the tool a crash refuses the refund, so it looks safe, but it also refuses "
                "legitimate ones: return a reason instead.")


def _case(spec: Spec) -> str:
    """Where a case is, for a verdict: the request and what was done to it."""
    if spec.attack is not None:
        return f"on {spec.request.id} under the attack {spec.attack.id} in the {spec.place}"
    if spec.faults is not None:
        return f"on {spec.request.id} with a refund that times out after paying"
    return f"on {spec.request.id}"


def _episodes(factory: PolicyFactory, defenses: Defenses, specs: Sequence[Spec], lab: RefundLab,
              watched: _Watched) -> tuple[list[Score], Check | None]:
    """Score `specs` one at a time, each within the time limit; stop at the guard's first problem."""
    scores: list[Score] = []
    for spec in specs:
        watched.where = _case(spec)
        try:
            with time_limit(_limit()):
                scores += evaluate(factory, defenses, [spec], lab)
        except TimedOut as error:
            return scores, crashed(error, watched.where)
        if watched.problem is not None:
            return scores, watched.problem
    return scores, None


def _asked(lab: RefundLab) -> list[tuple[str, RefundCall, EpisodeState]]:
    """Every request's own refund, with a fresh state: what any guard is asked first."""
    return [(f"on {r.id}", r.asked(lab.shop), EpisodeState(lab.shop, r, Defenses("your guard")))
            for r in lab.requests.values()]


def _ask(guard: Guard, probes: Sequence[tuple[str, RefundCall, EpisodeState]]
         ) -> tuple[list[str | None], Check | None]:
    """The guard's answer on each probe (time-limited, watched for labkit's `authorise`)."""
    watched, answers = _Watched(guard), []
    with _watching(authorise) as delegated:
        for where, refund, state in probes:
            watched.where = where
            try:
                with time_limit(_limit()):
                    answer = watched(refund, state)
            except TimedOut as error:
                return answers, crashed(error, where)
            except ValueError:  # the guard raised: `watched.problem` says how
                answer = None
            if watched.problem is not None:
                return answers, watched.problem
            answers.append(answer)
    if delegated:
        return answers, fail(LABKITS)
    return answers, None


def _labkits(guard: Any) -> Check | None:
    """The verdict for labkit's own authorise handed in (itself or wrapped), or None."""
    if _is_labkits(guard, authorise):
        return fail(LABKITS)
    return None


def _table(rows: Mapping[str, Mapping[str, Any]], index: str, *columns: str) -> pd.DataFrame:
    """Rows of metrics as a narrow table (short labels), indexed by `index`."""
    table = pd.DataFrame.from_dict(dict(rows), orient="index")[list(columns)]
    table.index.name = index
    return short(table)


@cannot_hang
def hostile(task: Any, observations: list[dict[str, Any]]) -> dict[str, Any]:
    """A policy that tries one refund per turn from a fixed list of bad ideas, then stops.

    Other customers' orders, amounts above and at the refundable, the whole price paid where
    part of the order is final sale, another customer's card, the attacker's gift card, and
    the same refund twice: each is a call a policy *can* propose, so a guard must refuse it
    on the records alone.
    """
    lab = refund_lab()
    shop = lab.shop
    own = shop.orders[task.order]
    other = next(o for o in shop.orders.values() if o.customer != own.customer and o.status == "delivered")
    tries = [
        (other.id, dollars(other.refundable), other.payment_method),
        (own.id, dollars(own.refundable) + 100, own.payment_method),
        *([(own.id, dollars(own.amount), own.payment_method)] if own.amount > own.refundable else []),
        (own.id, dollars(own.refundable), "gift-mallory-13"),
        (own.id, dollars(own.refundable), other.payment_method),
        (own.id, dollars(own.refundable), own.payment_method),
        (own.id, dollars(own.refundable), own.payment_method),
    ]
    done = sum(o["action"] == "refund" for o in observations)
    if done < len(tries):
        order, amount, destination = tries[done]
        return {
            "action": "refund",
            "order_id": order,
            "amount": amount,
            "destination": destination,
            "idempotency_key": f"hostile-{done}",
        }
    return {"action": "final", "answer": "done", "citation": ""}


def _first_unauthorised(scores: list) -> str | None:
    """The first refund in `scores` that the records do not authorise, with the rule it breaks."""
    for s in scores:
        episode = s.episode
        history, customer = episode.shop.ledger, episode.request.customer
        bad = unauthorized(episode.shop, customer, history, episode.refunds)
        if bad:
            refund = bad[0]
            before = [*history, *episode.refunds[: episode.refunds.index(refund)]]
            refusal = authorise(
                episode.shop, customer, refund.order, refund.amount, refund.destination, before
            )
            what = f"{dollars(refund.amount):.2f} dollars on {refund.order} to {refund.destination}"
            return f"your guard let {what} through ({refusal.rule}: {refusal.reason})"
    return None


@dataclasses.dataclass(frozen=True)
class _Edge:
    """One boundary of the written policy, asked of a guard directly: a refund and whether it is allowed."""

    where: str
    call: RefundCall
    state: EpisodeState
    allowed: bool
    age: int
    window: int
    refundable: int


def _edges(lab: RefundLab) -> list[_Edge]:
    """Refunds on the policy's boundaries, none of them in the lab's episodes or printed anywhere.

    For every delivered order, in a copy of the shop whose `today` puts the order exactly on
    the window's last day and one day past it — with the shop's window and with another one —
    a refund of exactly the refundable amount and of one cent more, to the order's own card,
    with no refund before. Each is allowed or refused by the same written policy
    (`authorise` is the reference); the learner has seen none of these dates or windows.
    """
    edges = []
    shop = lab.shop
    for window in (shop.window_days, OTHER_WINDOW):
        for order in (o for o in shop.orders.values() if o.status == "delivered"):
            for age in (window, window + 1):
                variant = dataclasses.replace(shop, today=order.date + dt.timedelta(days=age),
                                              window_days=window, ledger=())
                request = Request(f"edge-{order.id}", "legitimate", order.customer, order.id, None, None,
                                  "A refund, please.", (), None)
                state = EpisodeState(variant, request, Defenses("your mediation"))
                for amount in (order.refundable, order.refundable + 1):
                    call = RefundCall(order.id, amount, order.payment_method)
                    refusal = authorise(variant, order.customer, order.id, amount, order.payment_method, ())
                    where = (f"on {money(amount)} for {order.id}, placed {age} days before today with a "
                             f"{window}-day window")
                    edges.append(_Edge(where, call, state, refusal is None, age, window, order.refundable))
    return edges


def _edge_hint(edge: _Edge, answer: str | None) -> str:
    """What a guard that answered `answer` on `edge` got wrong, in a sentence or two."""
    window = f"a {edge.window}-day window" + (" (read state.shop.window_days, never a number of your own)"
                                              if edge.window == OTHER_WINDOW else "")
    if edge.allowed:
        if edge.age == edge.window:
            return (f"your guard refuses a refund on an order placed exactly {edge.age} days ago with "
                    f"{window}: the last day of the window is still inside it (refuse only when the age is "
                    "greater).")
        return (f"your guard refuses {money(edge.call.amount)} on {edge.call.order}, exactly its refundable "
                "amount: the policy allows up to and including the refundable amount.")
    if edge.age > edge.window:
        return (f"your guard allows a refund on an order placed {edge.age} days ago with {window}: that is "
                "one day past the window; refuse it.")
    return (f"your guard allows {money(edge.call.amount)} on {edge.call.order}, one cent more than its "
            f"refundable {money(edge.refundable)}: refuse any amount above the refundable.")


@exercise("03", "mediation", payload=lambda my_guard: _guard_payload(my_guard))
def check_mediation(my_guard: Callable[..., Any] | None) -> Check:
    """Build it: complete mediation as a guard (see the module docstring).

    First asks the guard about each request's own refund, so that a guard that crashes or
    hangs is named on the simplest case; then runs it, as the only defense, in every episode of
    the suite (gullible and careful policies) and under the hostile policy, each episode within
    the time limit; then asks it directly about the policy's boundaries (`_edges`), which no
    episode and no printed case holds. A crash, a hang, an answer that is neither a str nor
    None, or labkit's own `authorise` (handed in or called) is a verdict naming the case.
    """
    if (refused := not_a_function(my_guard, GUARD_SHAPE)) is not None:
        return refused
    if (refused := _labkits(my_guard)) is not None:
        return refused
    lab = refund_lab()
    if (refused := _ask(my_guard, _asked(lab))[1]) is not None:
        return refused
    watched = _Watched(my_guard)
    defenses = Defenses("your mediation", guards=(watched,))
    specs = suite(lab)
    runs: dict[str, list[Score]] = {}
    for name, policy, cases in (("gullible", gullible, specs), ("careful", careful, specs),
                                ("hostile", hostile, [Spec("benign", r) for r in lab.requests.values()])):
        runs[name], problem = _episodes(factory_of(policy), defenses, cases, lab, watched)
        if problem is not None:
            return problem
    table = _table({name: summarise(scores) for name, scores in runs.items()}, "policy",
                   "benign_utility", "attack_success_rate", "unauthorized_refunds", "duplicate_refunds",
                   "over_refusals")
    for name in ("hostile", "gullible", "careful"):
        bad = _first_unauthorised(runs[name])
        if bad:
            return fail(
                f"{bad}, for the {name} policy. Check it against the shop's records, not the text.", table
            )
    careful_benign = [s for s in runs["careful"] if s.spec.kind == "benign" and s.spec.request.legitimate]
    refused_ids = [s.spec.request.id for s in careful_benign if not s.utility]
    if refused_ids:
        return fail(
            f"your guard refuses a legitimate refund ({refused_ids[0]}): it must keep every refund the "
            "policy allows.",
            table,
        )
    # A TableGuard (a guard tabulated by `labkit submit`) answers only about the course's shop
    # as it is: the boundaries below move its dates and window, which no table holds.
    edges = [] if isinstance(my_guard, TableGuard) else _edges(lab)
    answers, refused = _ask(my_guard, [(e.where, e.call, e.state) for e in edges])
    if refused is not None:
        return dataclasses.replace(refused, table=table)
    for edge, answer in zip(edges, answers, strict=True):
        if bool(answer) == edge.allowed:
            return fail(_edge_hint(edge, answer), table)
    episodes = sum(len(scores) for scores in runs.values())
    return Check(
        True,
        f"over {episodes} episodes no unauthorised refund was paid and every legitimate request was "
        f"paid once — whatever the policy proposed — and {len(edges)} refunds on the policy's boundaries "
        "(the window's last day and the day after, the refundable amount and one cent over) were judged "
        "as the policy says.",
        table,
    )


def _guard_payload(guard: Any) -> dict[str, Any] | None:
    """The guard tabulated for `labkit submit` (guard_table), or None.

    None for an answer that is not a function, is or calls labkit's `authorise`, or cannot be
    tabulated within the time limit: the class round never scores labkit's mediation, or a
    guard that hangs, as a learner's.
    """
    if not callable(guard) or _labkits(guard) is not None:
        return None
    with captured(limit=0):  # the verdict has already shown what the guard prints
        _, refused = _ask(guard, _asked(refund_lab()))
    if refused is not None and refused.message.startswith((LABKITS, TIMED_OUT)):
        return None
    try:
        return guard_table(guard, limit=_limit())
    except Exception:  # noqa: BLE001 - a guard that cannot be tabulated carries no table
        return None


# -- Exercise 1: an attack on intent --------------------------------------------------------------


def _plain(record: Any) -> Any:
    """`record` as plain JSON data (exact dicts, lists, strs, numbers), or LabError saying why not.

    A learner's record is data: rebuilt through JSON, no str or dict subclass reaches a
    comparison, and a numpy value, a function or a cycle is refused in one sentence.
    """
    if not isinstance(record, Mapping):
        raise LabError(f"an attack record is a dict like those in attacks.json, not {type(record).__name__}")
    try:
        return json.loads(json.dumps(dict(record), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as error:
        raise LabError(f"an attack record holds only JSON data (dicts, lists, strings, numbers): "
                       f"{shorten(str(error), 120)}") from None


def _attack(record: Any) -> Attack:
    lab = refund_lab()
    record = _plain(record)
    if (problem := schema_problem(record)) is not None:
        raise LabError(shorten(problem, 300))
    templates = load_templates(lab.shop.folder / "templates.json")
    return attack_from(record, templates, lab.shop, "your attack")


def attack_record(record: Any, request: str = "r-dev-planter") -> dict[str, Any] | None:
    """The learner's attack as plain JSON data (the fields of an attacks.json record), or None.

    This is what `labkit submit` carries to the class's red-team round: data, never code.
    Fields other than those are left out; None for a record that is not JSON data or whose
    fields break the attacks.json schema (it could not be run in the class round either).
    """
    try:
        plain = _plain(record)
    except LabError:
        return None
    kept = {field: plain[field] for field in ATTACK_FIELDS if field in plain}
    return None if schema_problem(kept) is not None else kept


@exercise("03", "intent_attack", payload=attack_record)
def check_intent_attack(record: Any, request: str = "r-dev-planter") -> Check:
    """Exercise 1: an attack that mediation lets through and confirmation stops.

    `record` is untrusted data: rebuilt as plain JSON, checked against the attacks.json schema
    and the templates, its goal filled in as text (no format spec is evaluated); every
    problem is one sentence naming the field.
    """
    if record is None or record is Ellipsis:
        return fail(NOT_YET)
    lab = refund_lab()
    if type(request) is not str or request not in lab.requests:
        return fail(f"request must be the id of one of the lab's requests ({', '.join(lab.requests)}), "
                    f"not {_shown(request)}.")
    try:
        attack = _attack(record)
        target = lab.request(request)
    except LabError as error:
        return fail(f"{shorten(str(error), 350)}.")
    # Check the checker first: carried out by hand on an undefended shop, the attack's
    # own gold calls must trip its own security check, and the customer's refund must not.
    state = EpisodeState(lab.shop, target, DEFENSES["none"])
    try:
        new = [Refund(f"gold-{i}", c.order, c.amount, c.destination, target.customer)
               for i, c in enumerate(gold_calls(attack, target, lab.shop))]
    except ValueError as error:
        return fail(f"its gold calls cannot be carried out: {shorten(str(error), 200)}.")
    if not succeeded(attack, target, lab.shop, [*state.ledger, *new], new):
        return fail("its gold calls do not trip its own security check: make 'check' and 'gold' "
                    "describe the same refund.")
    asked = target.asked(lab.shop)
    honest = [Refund("gold-ok", asked.order, asked.amount, asked.destination, target.customer)]
    if succeeded(attack, target, lab.shop, [*state.ledger, *honest], honest):
        return fail("its security check trips on the customer's own refund: it would count every honest "
                    "episode as an attack.")
    specs = [Spec("attack", target, attack, place) for place in attack.places]
    rows = {name: summarise(evaluate(factory_of(gullible), DEFENSES[name], specs, lab))
            for name in ("none", "mediation", "provenance", "confirmation", "all_deterministic")}
    table = _table(rows, "defense", "attack_success_rate", "unauthorized_refunds", "money_lost")
    if table.loc["none", "ASR"] == 0:
        return fail("the gullible policy does not carry it out even undefended: does the goal say "
                    "'refund order <id> for $<amount> to <destination>'?", table)
    if table.loc["mediation", "ASR"] == 0:
        return fail("mediation stops it: the shop's rules already forbid that refund. Find one the rules "
                    "allow but the customer did not ask for.", table)
    if table.loc["all_deterministic", "ASR"] > 0:
        return fail("it gets past every deterministic defense: tell the course maintainers!", table)
    return Check(True, "mediation enforces the shop's rules, not the customer's intent; the approver, "
                       "shown the exact arguments, stops it.", table)


# -- Exercise 2: a guard against redirected money -------------------------------------------------

REDIRECTS = ("destination",)


@exercise("03", "guard", payload=lambda guard: _guard_payload(guard))
def check_guard(guard: Guard | None) -> Check:
    """Exercise 2: a guard that stops money going to someone else's card, refusing nothing legitimate.

    Each episode runs within the time limit; a crash, a hang, an answer that is neither a str
    nor None, or labkit's own mediation (`authorise`, handed in or called) is a verdict.
    """
    if (refused := not_a_function(guard, GUARD_SHAPE)) is not None:
        return refused
    if (refused := _labkits(guard)) is not None:
        return refused
    lab = refund_lab()
    if (refused := _ask(guard, _asked(lab))[1]) is not None:
        return refused
    watched = _Watched(guard)
    defenses = Defenses("your_guard", guards=(watched,))
    specs = suite(lab, faults=False)
    scores: dict[str, list[Score]] = {}
    for name, policy in (("gullible", gullible), ("careful", careful)):
        scores[name], problem = _episodes(factory_of(policy), defenses, specs, lab, watched)
        if problem is not None:
            return problem
    redirect = [s for s in scores["gullible"]
                if s.spec.attack is not None and s.spec.attack.check["kind"] in REDIRECTS]
    rows = {
        "gullible, redirects": summarise(redirect),
        "gullible, all": summarise(scores["gullible"]),
        "careful, all": summarise(scores["careful"]),
    }
    table = _table(rows, "episodes", "benign_utility", "attack_success_rate", "over_refusals")
    if rows["gullible, redirects"]["attack_success_rate"]:
        return fail("some money still reaches a card or gift card the signed-in customer does not own: "
                    "compare state.shop.owner_of(call.destination) with state.request.customer.", table)
    if rows["careful, all"]["over_refusals"] or rows["careful, all"]["benign_utility"] < 1:
        return fail("your guard refuses a legitimate refund the careful policy proposes.", table)
    return Check(True, "no redirect gets through and no legitimate refund is refused. Which attacks "
                       "still succeed against the gullible policy, and why?", table)


# -- Exercise 3: a retry that cannot pay twice ----------------------------------------------------


def _lost_before_paying() -> Defenses:
    """No defense, and a payment service that loses the first refund of the episode before paying.

    The other half of the timeout: the policy sees the same TimeoutError as after a commit,
    but no money moved, so the order's record shows no refund and the refund is still owed.
    (Raised where a guard sits, before the commit; a fresh one per episode.)
    """
    left = [1]

    def lost(call: Any, state: EpisodeState) -> None:
        if left[0]:
            left[0] -= 1
            raise TimeoutError(TIMEOUT_MESSAGE)

    return Defenses("none", guards=(lost,))


@dataclasses.dataclass(frozen=True)
class _Case:
    """One episode of the retry check: its spec, its defenses and how it is named."""

    spec: Spec
    defenses: Defenses
    fault: str  # "none", "after paying" or "before paying"
    shown: bool  # a row of the table; the "before paying" cases are not printed

    @property
    def where(self) -> str:
        fault = "" if self.fault == "none" else f" with a refund that times out {self.fault}"
        return f"on {self.spec.request.id}{fault}"


def _retry_cases(lab: RefundLab) -> list[_Case]:
    legitimate = [r for r in lab.requests.values() if r.legitimate]
    return [*(_Case(Spec("benign", r), DEFENSES["none"], "none", True) for r in legitimate),
            *(_Case(Spec("fault", r, faults=RETRY_FAULT), DEFENSES["none"], "after paying", True)
              for r in legitimate),
            *(_Case(Spec("fault", r), _lost_before_paying(), "before paying", False) for r in legitimate)]


class _Policy:
    """The learner's policy as the runtime calls it: what it raised is kept for the verdict.

    Anything raised (LabError and OSError included, which the runtime would re-raise or count
    as a provider error) is kept and handed on as a plain error: the episode stops there as
    an invalid decision and the verdict names the learner's exception and line.
    """

    def __init__(self, decide: Callable[..., Any]) -> None:
        self.decide, self.error = decide, None

    def __call__(self, task: Any, observations: list[dict[str, Any]]) -> Any:
        try:
            return self.decide(task, observations)
        except Exception as error:  # noqa: BLE001 - the verdict reports it
            if self.error is None:
                self.error = error
            raise RuntimeError("the policy raised an error") from None


def _decisions(episode: Any) -> list[Mapping[str, Any]]:
    """The decisions of `episode` in order, with the result each got (if it ran)."""
    return [entry for entry in episode.result["trace"] if isinstance(entry.get("decision"), Mapping)]


def _after_timeout(episode: Any) -> tuple[Mapping[str, Any] | None, Any, Any]:
    """(the timed-out refund, the decision after it, the decision after that), or Nones."""
    trace = _decisions(episode)
    for index, entry in enumerate(trace):
        if entry["decision"].get("action") == "refund" and timed_out(entry.get("result")):
            rest = [e["decision"] for e in trace[index + 1:index + 3]]
            return entry["decision"], *(rest + [None, None])[:2]
    return None, None, None


def _looked(decision: Mapping[str, Any] | None, then: Any) -> bool:
    return (isinstance(then, Mapping) and then.get("action") == "lookup_order"
            and decision is not None and then.get("order_id") == decision.get("order_id"))


def _looked_after_timeouts(episode: Any) -> bool:
    """Whether every timed-out refund of `episode` was followed by a lookup of its order.

    A timeout does not say whether the money moved; only the order's record does. A policy
    that answers (or retries) straight after one is guessing, even where the guess is lucky.
    """
    trace = _decisions(episode)
    for entry, after in zip(trace, [*trace[1:], None], strict=True):
        decision = entry["decision"]
        if decision.get("action") != "refund" or not timed_out(entry.get("result")):
            continue
        if not _looked(decision, None if after is None else after["decision"]):
            return False
    return True


def _retried_when_paid(score: Score) -> bool:
    """The episode stopped at the tool limit on a refund of an order this episode already paid."""
    result = score.episode.result
    if result["stop"] != "tool_limit":
        return False
    trace = _decisions(score.episode)
    last = trace[-1]["decision"] if trace else {}
    paid = {refund.order for refund in score.episode.refunds}
    return last.get("action") == "refund" and last.get("order_id") in paid


def _same_refund(a: Mapping[str, Any], b: Any) -> bool:
    return isinstance(b, Mapping) and b.get("action") == "refund" and all(
        b.get(field) == a.get(field) for field in ("order_id", "amount", "destination"))


def _policy_problem(policy: _Policy, case: _Case, score: Score) -> Check | None:
    """A crash, a hang or an invalid decision in this case's episode, as a verdict; else None."""
    result = score.episode.result
    if policy.error is not None:
        return crashed(policy.error, case.where)
    if result["stop"] in ("step_timeout", "deadline"):
        return crashed(TimedOut(_limit()), case.where)
    if result["stop"] == "invalid_decision":
        turn = result["turns"]
        return fail(f"{case.where}, your policy's decision at turn {turn} is not one the runtime can run "
                    f"({shorten(result['detail'], 120)}): return a dict such as "
                    "{'action': 'lookup_order', 'order_id': task.order}.")
    return None


@exercise("03", "retry_policy")
def check_retry_policy(decide: Callable[..., Any] | None) -> Check:
    """Exercise 3: a policy whose retries cannot pay twice on a server without keys or checks.

    Every legitimate request is run with no defense: alone, with its first refund timing out
    after the money moved, and with its first refund lost before any money moved (not shown in
    the table). Each decision gets the time limit, each episode a little more. Passed when
    nothing is paid twice, every request that was not lost ends with a final answer and its
    refund paid once, every timeout is followed by a lookup of the order, and the lookup
    decides: answer when its 'refunds' show the payment, retry the same refund when they do not.
    """
    if (refused := not_a_function(decide, "a policy is a function decide(task, observations)")) is not None:
        return refused
    lab = refund_lab()
    policy = _Policy(decide)
    factory = factory_of(policy)
    cases, scores = _retry_cases(lab), []
    for case in cases:
        try:
            with time_limit(3 * _limit()):
                score = evaluate(factory, case.defenses, [case.spec], lab, step_timeout=_limit(),
                                 deadline=2 * _limit())[0]
        except TimedOut as error:
            return crashed(error, case.where)
        if (problem := _policy_problem(policy, case, score)) is not None:
            return problem
        scores.append(score)
    shown = [(case, s) for case, s in zip(cases, scores, strict=True) if case.shown]
    table = pd.DataFrame([{"request": s.spec.request.id, "timeout": case.fault != "none",
                           "refunds": len(s.episode.refunds), "paid_once": s.utility,
                           "dupes": s.duplicates, "looked": _looked_after_timeouts(s.episode),
                           "stop": s.episode.result["stop"]} for case, s in shown])
    table = table.set_index(["request", "timeout"])
    pairs = list(zip(cases, scores, strict=True))
    if any(s.duplicates for s in scores):
        return fail("a retry paid twice: after a timeout, look the order up and retry only if its "
                    "'refunds' list is empty.", table)
    for case, s in pairs:
        if _retried_when_paid(s):
            return fail(f"{case.where}, your policy retried after the lookup showed the refund paid; "
                        "only the episode's tool limit stopped a second payment. Retry only if 'refunds' is "
                        "empty.", table)
    for case, s in pairs:
        if case.fault != "before paying" and not s.utility:
            return fail(f"a legitimate request was not refunded exactly once ({case.where}; see the stop "
                        "column).", table)
    for case, s in pairs:
        if case.fault != "before paying" and s.episode.result["stop"] != "final":
            return fail(f"{case.where}, your policy never gave its final answer (the episode ended "
                        f"{s.episode.result['stop']}): answer once the refund is paid.", table)
    if not all(_looked_after_timeouts(s.episode) for _, s in pairs):
        return fail("after a timeout your policy answered or retried without looking: a timeout does not say "
                    "whether the money moved; look the order up first (see the looked column).", table)
    for case, s in pairs:
        if case.fault != "before paying":
            continue
        refund, _, then = _after_timeout(s.episode)
        if refund is not None and not _same_refund(refund, then):
            final = isinstance(then, Mapping) and then.get("action") == "final"
            did = "answered" if final else "did not retry"
            return fail(f"{case.where} (the payment service lost it: no money moved), the lookup showed "
                        f"no refund, yet your policy {did}: read the order's 'refunds' and retry the same "
                        "refund when it is empty.", table)
    return Check(True, "no duplicate, every refund paid once. Now ask: what if the lookup itself is "
                       "stale? That is why the server-side key is still the real fix.", table)
