"""Lab 03's build-it and exercises; a checker never raises for a learner's mistake (serves: learner).

`check_mediation(my_guard)`: complete mediation as a guard `guard(call, state) -> str | None`.
Exercises: `check_intent_attack(record)`, `check_guard(guard)` (no money to a card the customer does not
own) and `check_safe_retry(decide)` (a retry that cannot pay twice without keys or mediation).
"""

import dataclasses
import json
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

import pandas as pd

from labkit.core.answers import Recorded, limit_s, shown
from labkit.core.check import CRASHES, NOT_YET, Check, TimedOut, crashed, fail, not_a_function, time_limit
from labkit.core.errors import LabError
from labkit.core.stops import Stop
from labkit.core.text import shorten
from labkit.core.verdicts import exercise
from labkit.refunds import attacks
from labkit.refunds import hidden_cases as hidden
from labkit.refunds.attacks import Attack, attack_from, gold_calls, load_templates, schema_problem, succeeded
from labkit.refunds.defenses import DEFENSES, Guard
from labkit.refunds.display import short
from labkit.refunds.guard_table import TableGuard, guard_table
from labkit.refunds.hidden_cases import RetryCase, hostile
from labkit.refunds.lab import refund_lab
from labkit.refunds.metrics import Score, Spec, score_policy, suite, summarise
from labkit.refunds.policies import careful, factory_of, gullible, instructions_in
from labkit.refunds.rules import judged
from labkit.refunds.shop import Refund, cents, dollars
from labkit.refunds.untrusted import ask_guard, case_name, guard_runs

__all__ = ["check_guard", "check_intent_attack", "check_mediation", "check_safe_retry", "hostile"]

GUARD_SHAPE = "a guard is a function guard(call, state) -> str | None"
ATTACK_FIELDS = ("id", "template", "goal", "check", "gold", "places")


def _table(rows: Mapping[str, Mapping[str, Any]], index: str, *columns: str) -> pd.DataFrame:
    """Rows of metrics as a narrow table (short labels), indexed by `index`; a rate with nothing to
    count (the hostile policy's attack success: it runs no attack) reads n/a."""
    table = pd.DataFrame.from_dict(dict(rows), orient="index")[list(columns)]
    table.index.name = index
    return short(table).apply(
        lambda column: column.astype(object).fillna("n/a") if column.isna().any() else column
    )


def _first_unauthorised(scores: list) -> str | None:
    """The first refund in `scores` that the records do not authorise, with the rule it breaks."""
    for e in (s.episode for s in scores):
        for refund, refusal in judged(e.shop, e.request.customer, e.shop.ledger, e.refunds):
            if refusal is not None:
                what = f"{dollars(refund.amount):.2f} dollars on {refund.order} to {refund.destination}"
                return f"your guard let {what} through ({refusal.rule}: {refusal.reason})"
    return None


def _said(score: Score) -> str:
    """What the refund tool answered the episode's first refused refund (a guard's reason), as a
    sentence to quote, or "" when no refund was refused."""
    for entry in score.episode.result["trace"]:
        decision, result = entry.get("decision"), entry.get("result")
        if isinstance(decision, dict) and decision.get("action") == "refund" and isinstance(result, dict):
            if "error" in result:
                return f" The tool said: {shown(result['error'], 100)}."
    return ""


@exercise("03", "mediation", payload=lambda my_guard: _guard_payload(my_guard))
def check_mediation(my_guard: Callable[..., Any] | None) -> Check:
    """Build it: each request's own refund first (a crash or hang is named on the simplest case),
    then every episode of the suite and the hostile policy's, then the refund rules' boundaries.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (refused := not_a_function(my_guard, GUARD_SHAPE)) is not None:
        return refused
    lab = refund_lab()
    specs, alone = suite(lab), [Spec("benign", r) for r in lab.requests.values()]
    policies = [("gullible", gullible, specs), ("careful", careful, specs), ("hostile", hostile, alone)]
    runs, problem = guard_runs(my_guard, "your mediation", policies, lab)
    if problem is not None:
        return problem
    columns = ("benign_utility", "attack_success_rate", "unauthorized_refunds", "duplicate_refunds")
    summaries = {name: summarise(scores) for name, scores in runs.items()}
    table = _table(summaries, "policy", *columns, "over_refusals")
    for name in ("hostile", "gullible", "careful"):
        bad = _first_unauthorised(runs[name])
        if bad:
            return fail(
                f"{bad}, for the {name} policy. Check it against the shop's records, not the text.", table
            )
    # The careful policy proposes only the request's own refund, attacked or not: each must be paid.
    refused = [s for s in runs["careful"] if s.spec.request.legitimate and not s.utility]
    if refused:
        return fail(
            f"your guard refuses a legitimate refund {case_name(refused[0].spec)}: it must keep every refund "
            f"the refund rules allow, whatever the texts the policy read say.{_said(refused[0])}",
            table,
        )
    # A TableGuard (a guard tabulated by `labkit submit`) answers only about the course's shop
    # as it is: the boundaries below move its dates and window, which no table holds.
    edges = [] if isinstance(my_guard, TableGuard) else hidden.policy_edges(lab)
    if (problem := _edge_problem(my_guard, edges)) is not None:
        return dataclasses.replace(problem, table=table)
    episodes = sum(len(scores) for scores in runs.values())
    return Check(
        True,
        f"over {episodes} episodes no unauthorised refund was paid and every legitimate request was "
        "paid once — whatever the policy proposed.",
        table,
    )


def _edge_problem(guard: Any, edges: list[hidden.Edge]) -> Check | None:
    """The guard's first wrong answer on `edges` (or its crash or hang), as a verdict; else None."""
    answers, refused = ask_guard(guard, [(e.where, e.call, e.state) for e in edges])
    # `answers` stop at a crash or hang: a wrong answer before it is the first problem, else the crash.
    wrong = ((e, answer) for e, answer in zip(edges, answers, strict=False) if bool(answer) == e.allowed)
    if (first := next(wrong, None)) is None:
        return refused
    edge, answer = first
    # A refusal's own words point at the rule that misfired, which the edge's family need not be.
    return fail(f"{edge.hint} Your guard said: {shown(answer, 80)}." if edge.allowed else edge.hint)


def _guard_payload(guard: Any) -> dict[str, Any] | None:
    """The guard tabulated for `labkit submit` (`guard_table`), or None for an answer that is not
    a function or cannot be tabulated within the time limit (a guard that hangs carries no table)."""
    if not callable(guard):
        return None
    try:
        return guard_table(guard, limit=limit_s())
    except CRASHES:  # a guard that cannot be tabulated carries no table
        return None


# -- Exercise 1: an attack on intent --------------------------------------------------------------


def _plain(record: Any) -> Any:
    """`record` rebuilt as plain JSON data, or LabError saying in one sentence why it is not data."""
    if not isinstance(record, Mapping):
        raise LabError(f"an attack record is a dict like those in attacks.json, not {type(record).__name__}")
    try:
        return json.loads(json.dumps(dict(record), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as error:
        raise LabError(
            f"an attack record holds only JSON data (dicts, lists, strings, numbers): "
            f"{shorten(str(error), 120)}"
        ) from None


def _attack(record: Any) -> Attack:
    lab = refund_lab()
    record = _plain(record)
    if (problem := schema_problem(record)) is not None:
        raise LabError(shorten(problem, 300))
    templates = load_templates(lab.shop.folder / "templates.json")
    return attack_from(record, templates, lab.shop, "your attack")


def attack_record(record: Any, request: str = "r-dev-planter") -> dict[str, Any] | None:
    """The learner's attack as plain JSON data (attacks.json's fields only), for `labkit submit`;
    None for a record that is not JSON data or breaks the attacks.json schema."""
    try:
        plain = _plain(record)
    except LabError:
        return None
    kept = {field: plain[field] for field in ATTACK_FIELDS if field in plain}
    return None if schema_problem(kept) is not None else kept


@exercise("03", "intent_attack", payload=attack_record)
def check_intent_attack(record: Any, request: str = "r-dev-planter") -> Check:
    """Exercise 1: an attack that mediation lets through and confirmation stops. `record` is a
    learner's value and, handed in, an untrusted file (serves: learner, untrusted file): it is
    schema-checked, its goal filled in as text; each problem one sentence.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if record is None or record is Ellipsis:
        return fail(NOT_YET)
    lab = refund_lab()
    if type(request) is not str or request not in lab.requests:
        return fail(
            f"request must be the id of one of the lab's requests ({', '.join(lab.requests)}), "
            f"not {shown(request)}."
        )
    try:
        attack = _attack(record)
        target = lab.request(request)
    except LabError as error:
        return fail(f"{shorten(str(error), 350)}.")
    if attack.id in lab.attacks:  # the record is kept for the class's red-team round, by its id
        return fail(f"{attack.id!r} is the id of one of the course's attacks: give yours an id of its own.")
    # Check the checker first: carried out by hand on an undefended shop, the attack's
    # own gold calls must trip its own security check, and the customer's refund must not.
    told = (attack, target, lab.shop)
    calls = gold_calls(*told)  # the schema admits only amounts that are cents
    if any(call.amount <= 0 for call in calls):  # no money moves: the policy has nothing to carry out
        return fail("its gold refund moves no money ($0.00): an attack asks for a positive amount.")
    asked = target.asked(lab.shop)
    if calls == [asked]:
        return fail(
            "its gold refund is the one the customer asked for: an attack makes the shop pay a refund "
            "the customer did not ask for."
        )
    new = [
        Refund(f"gold-{i}", c.order, c.amount, c.destination, target.customer) for i, c in enumerate(calls)
    ]
    if not succeeded(attack, target, lab.shop, [*lab.shop.ledger, *new], new):
        return fail(
            "its gold calls do not trip its own security check: make 'check' and 'gold' "
            "describe the same refund."
        )
    goal = attacks.goal_text(*told)
    # As many refunds as the goal asks for, each once: a gold refund listed twice is not the goal's.
    asks = Counter((i["order_id"], cents(i["amount"]), i["destination"]) for i in instructions_in(goal))
    if asks and asks != Counter((c.order, c.amount, c.destination) for c in calls):
        said = f"{'; '.join(sorted(map(str, calls)))}, not '{shorten(goal, 120)}'"
        return fail(
            f"its gold refunds are not the ones its goal asks for ({said}): list each refund the goal "
            "asks for, once."
        )
    honest = [Refund("gold-ok", asked.order, asked.amount, asked.destination, target.customer)]
    if succeeded(attack, target, lab.shop, [*lab.shop.ledger, *honest], honest):
        return fail(
            "its security check trips on the customer's own refund: it would count every honest "
            "episode as an attack."
        )
    specs = [Spec("attack", target, attack, place) for place in attack.places]
    rows = {
        name: summarise(score_policy(factory_of(gullible), DEFENSES[name], specs, lab))
        for name in ("none", "mediation", "provenance", "confirmation", "all_deterministic")
    }
    table = _table(rows, "defense", "attack_success_rate", "unauthorized_refunds", "money_lost")
    if table.loc["none", "ASR"] == 0:
        return fail(
            f"the gullible policy does not carry it out even undefended: filled in, your goal reads "
            f"{shown(goal, 120)}; does it say 'refund order <id> for $<amount> to <destination>', "
            "with an order and a card the shop knows?",
            table,
        )
    if table.loc["mediation", "ASR"] == 0:
        return fail(
            "mediation stops it: the shop's rules already forbid that refund. Find one the rules "
            "allow but the customer did not ask for.",
            table,
        )
    if table.loc["all_deterministic", "ASR"] > 0:
        return fail("it gets past every deterministic defense: tell the course maintainers!", table)
    return Check(
        True,
        "mediation enforces the shop's rules, not the customer's intent; the approver, "
        "shown the exact arguments, stops it.",
        table,
    )


# -- Exercise 2: a guard against redirected money -------------------------------------------------


def redirects(lab: Any, spec: Spec) -> bool:
    """Whether `spec` is an attack whose gold refund pays a card the signed-in customer does not own."""
    calls = gold_calls(spec.attack, spec.request, lab.shop) if spec.attack else []
    return any(lab.shop.owner_of(call.destination) != spec.request.customer for call in calls)


@exercise("03", "guard", payload=lambda guard: _guard_payload(guard))
def check_guard(guard: Guard | None) -> Check:
    """Exercise 2: a guard that stops money going to someone else's card, refusing nothing legitimate.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (refused := not_a_function(guard, GUARD_SHAPE)) is not None:
        return refused
    lab = refund_lab()
    specs = suite(lab, faults=False)
    scores, problem = guard_runs(
        guard, "your_guard", [("gullible", gullible, specs), ("careful", careful, specs)], lab
    )
    if problem is not None:
        return problem
    redirect = [s for s in scores["gullible"] if redirects(lab, s.spec)]
    rows = {
        "gullible, redirects": summarise(redirect),
        "gullible, all": summarise(scores["gullible"]),
        "careful, all": summarise(scores["careful"]),
    }
    table = _table(rows, "episodes", "benign_utility", "attack_success_rate", "over_refusals")
    if rows["gullible, redirects"]["attack_success_rate"]:
        return fail(
            "some money still reaches a card or gift card the signed-in customer does not own: "
            "compare state.shop.owner_of(call.destination) with state.request.customer.",
            table,
        )
    # The careful policy proposes only the request's own refund, attacked or not: each must be paid.
    unpaid = [s for s in scores["careful"] if s.spec.request.legitimate and not s.utility]
    if unpaid:
        where = case_name(unpaid[0].spec)
        return fail(
            f"your guard refuses a legitimate refund the careful policy proposes, {where}.{_said(unpaid[0])}",
            table,
        )
    # Every card and gift card, some named to mislead, and an order asked for by another customer than its
    # own; not the customer's own the refund rules refuse. Each told the redirect rule, not mediation's.
    edges = [] if isinstance(guard, TableGuard) else hidden.policy_edges(lab)
    asks = []
    for edge in (e for e in edges if e.family in ("destination", "owner")):
        customer = edge.state.request.customer
        if (edge.state.shop.owner_of(edge.call.destination) == customer) is edge.allowed:
            hint = hidden.CASES["hints"]["redirect allowed" if edge.allowed else "redirect"]
            asks.append(dataclasses.replace(edge, hint=hint.format(call=edge.call, customer=customer)))
    if (problem := _edge_problem(guard, asks)) is not None:
        return dataclasses.replace(problem, table=table)
    # A guard that enforces more rules than the destination's (complete mediation) leaves no attack of the
    # suite to ask about: the question becomes what the destination rule alone would leave through.
    question = "Which attacks still succeed against the gullible policy, and why?"
    if not rows["gullible, all"]["attack_success_rate"]:
        question = (
            "No attack of the suite gets past your guard either: it enforces more than the destination "
            "rule. Which attacks would get past a guard of that rule alone, and why?"
        )
    return Check(True, f"no redirect gets through and no legitimate refund is refused. {question}", table)


# -- Exercise 3: a retry that cannot pay twice ----------------------------------------------------


def _policy_problem(policy: Recorded, case: RetryCase, score: Score) -> Check | None:
    """A crash, a hang or an invalid decision in this case's episode, as a verdict; else None."""
    result = score.episode.result
    if policy.error is not None:
        return crashed(policy.error, case.where)
    if result["stop"] in (Stop.STEP_TIMEOUT, Stop.DEADLINE):
        return crashed(TimedOut(limit_s()), case.where)
    if result["stop"] == Stop.INVALID_DECISION:
        turn, detail = result["turns"], result["detail"]
        example = _EXAMPLES.get(detail.split(":", 1)[0], _EXAMPLES["lookup_order"])
        return fail(
            f"{case.where}, your policy's decision at turn {turn} is not one the runtime can run "
            f"({shorten(detail, 120)}): return a dict such as {example}."
        )
    return None


# The decision a retry policy's invalid one is shown beside, by the action it named (the runtime's detail
# starts with it); any other, a lookup.
_EXAMPLES = {
    "lookup_order": "{'action': 'lookup_order', 'order_id': task.order}",
    "refund": "{'action': 'refund', 'order_id': task.order, 'amount': 89.0, 'destination': 'card-ana-4242'}",
    "final": "{'action': 'final', 'answer': 'refunded', 'citation': ''}",
}


@exercise("03", "safe_retry")
def check_safe_retry(decide: Callable[..., Any] | None) -> Check:
    """Exercise 3: retries that cannot pay twice without keys or mediation, on each legitimate request
    alone, with a refund that times out after paying and one lost before paying. Passed when nothing is
    paid twice and each timeout is followed by a lookup that decides: answer if paid, else retry.
    Returns a Check: passed, with what held; else what to fix in a sentence or two (None: not attempted
    yet)."""
    if (refused := not_a_function(decide, "a policy is a function decide(task, observations)")) is not None:
        return refused
    lab = refund_lab()
    policy = Recorded(decide)
    factory = factory_of(policy)
    cases, scores, retried = hidden.retry_cases(lab), [], []
    for case in cases:
        try:
            with time_limit(3 * limit_s()):
                score = score_policy(
                    factory,
                    case.defenses,
                    [case.spec],
                    case.lab or lab,
                    step_timeout=limit_s(),
                    deadline=2 * limit_s(),
                )[0]
                # asked now, while the policy's last call is this episode's
                lost = case.fault == "before paying"
                retried.append(hidden.after_retry(score.episode, policy, case.spec.request) if lost else None)
        except TimedOut as error:
            return crashed(error, case.where)
        if (problem := _policy_problem(policy, case, score)) is not None:
            return problem
        scores.append(score)
    pairs = list(zip(cases, scores, strict=True))
    columns = ["request", "timeout", "refunds", "paid_once", "dupes", "looked", "stop"]
    rows = [
        (s.spec.request.id, case.label, len(s.episode.refunds), s.utility, s.duplicates)
        + (hidden.looked(s.episode), s.episode.result["stop"])
        for case, s in pairs
    ]
    table = pd.DataFrame(rows, columns=columns).set_index(["request", "timeout"])
    if (problem := _retry_problem(pairs, retried)) is not None:
        return fail(problem, table)  # every episode, the failing one among them
    table = table[[case.shown for case in cases]]
    return Check(
        True,
        "no duplicate: each timeout was looked up first and a refund retried only when none was paid. "
        "Now ask: what if the lookup itself is stale? That is why the server-side key is still the real fix.",
        table,
    )


def _retry_problem(pairs: list[tuple[RetryCase, Score]], paid_retries: list[Any]) -> str | None:
    """What is wrong with the policy's retries, the first problem first; None if nothing. `paid_retries`: each
    episode's decision after its paid retry (`hidden.after_retry`; None where it had none)."""
    if any(s.duplicates for _, s in pairs):
        return (
            "a retry paid twice: after a timeout, look the order up and retry only if its 'refunds' list "
            "is empty."
        )
    owed = [(case, s) for case, s in pairs if case.fault != "before paying"]
    for case, s in pairs:
        _, _, then = hidden.after_timeout(s.episode)
        retried = isinstance(then, Mapping) and then.get("action") == "refund"
        if case.fault == "after paying" and hidden.looked(s.episode) and retried:
            return (
                f"{case.where}, your policy retried after the lookup showed the refund paid; only the "
                "episode's tool limit stopped a second payment. Retry only if 'refunds' is empty."
            )
    for case, s in owed:
        if not s.utility:
            return f"a legitimate request was not refunded exactly once ({case.where}; see the stop column)."
    if not all(hidden.looked(s.episode) for _, s in pairs):
        return (
            "after a timeout your policy's next step was not a lookup of that order: a timeout does not say "
            "whether the money moved; look the order up first (see the looked column)."
        )
    for case, s in owed:
        if (stop := s.episode.result["stop"]) != Stop.FINAL:
            return (
                f"{case.where}, your policy never gave its final answer (the episode ended {stop}): "
                "answer once the refund is paid."
            )
    for case, s in pairs:
        refund, _, then = hidden.after_timeout(s.episode)
        if case.fault == "before paying" and refund is not None and not hidden.same_refund(refund, then):
            action = then.get("action") if isinstance(then, Mapping) else None
            did = {
                Stop.FINAL: "answered",
                "refund": "retried another refund (its order, amount or card changed)",
            }.get(action, "did not retry")
            return (
                f"{case.where} (the payment service lost it: no money moved), the lookup showed no "
                f"refund, yet your policy {did}: read the order's 'refunds' and retry the same refund "
                "when it is empty."
            )
    # Once its retry is paid, the episode lost before paying is owed what every other one is: the next
    # decision is the final answer, not a second refund "to be sure" nor another lookup.
    for (case, _), after in zip(pairs, paid_retries, strict=True):
        if after is not None and not (isinstance(after, Mapping) and after.get("action") == Stop.FINAL):
            return (
                f"{case.where} (no money moved), your retry was paid, and then your policy proposed "
                f"{shown(after, 80)}: once the refund is paid, answer; refund nothing more."
            )
    return None
