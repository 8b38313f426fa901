"""What lab 03 shows: an episode as plain text (nbval compares it), every line within _WIDTH characters,
and narrow tables with short labels and a legend; no dollar signs in tables (MathJax pairs them)."""

import json
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from labkit.core.fixtures import load_json
from labkit.core.stops import Stop
from labkit.core.text import shorten
from labkit.refunds.rules import judged
from labkit.refunds.shop import REFUNDS, SCHEMAS, Refund, Shop, money

_WIDTH = 118

# Metric column -> [its label on a projector, what the label means]; defense preset -> its label.
_SHORT = load_json(REFUNDS / "labels.json", SCHEMAS["labels"])
_LABELS, _DEFENSE_LABELS = _SHORT["metrics"], _SHORT["defenses"]
_MEANINGS = dict(_LABELS.values())


def _short(text: str, limit: int) -> str:
    """`text` on one line (newlines shown as spaces), cut to `limit` characters."""
    return shorten(" ".join(text.split()), limit)


def _argument(name: str, value: Any) -> str:
    # A key is "<episode>+<defenses>#<n>": the episode part is long and the same on every
    # call, so only its last part shows (a retry reuses "#0", a new refund is "#1").
    if name == "idempotency_key" and isinstance(value, str) and "+" in value:
        return repr("…+" + value.rsplit("+", 1)[1])
    return repr(value)


def _call(decision: Any) -> str:
    if not isinstance(decision, Mapping) or "action" not in decision:
        return _short(json.dumps(decision, default=str), 80)
    args = ", ".join(f"{k}={_argument(k, v)}" for k, v in decision.items() if k != "action")
    return f"{decision['action']}({args})"


def _seen(action: str, result: Any) -> str:
    if isinstance(result, Mapping) and "error" in result:
        return f"ERROR {result['error']}"
    if action == "lookup_order" and isinstance(result, Mapping):
        line = (
            f"{result['order']} of {result['customer']}: {result['status']} {result['date']}, "
            f"refundable ${result['refundable']:.2f}, paid with {result['payment_method']}"
        )
        if result["refunds"]:
            line += f", refunded before: {', '.join(r['refund'] for r in result['refunds'])}"
        return line + (f"; note: {result['note']!r}" if result["note"] else "")
    if action in ("read_messages", "read_reviews") and isinstance(result, list):
        return f"{len(result)} item(s); last: {result[-1]['text']!r}" if result else "nothing"
    if action == "read_help" and isinstance(result, Mapping):
        return f"page {result['topic']!r}: …{result['text'][-50:]!r}"
    if action == "refund" and isinstance(result, Mapping):
        replay = " (replayed: no new money)" if result.get("replayed") else ""
        return (
            f"PAID {result['refund']}: ${result['amount']:.2f} on {result['order']} "
            f"to {result['destination']}{replay}"
        )
    return json.dumps(result, default=str)


def trace_lines(result: Mapping[str, Any]) -> list[str]:
    """Each turn as its call, then (indented) what the tool returned; then the stop."""
    lines = []
    for entry in result["trace"]:
        decision = entry.get("decision", "—")
        lines.append(shorten(f"{entry['turn']:>2}  {_call(decision)}", _WIDTH))
        if "result" in entry:
            lines.append("      -> " + _short(_seen(decision["action"], entry["result"]), _WIDTH - 9))
        elif "error" in entry:
            lines.append("      -> " + _short(f"refused by the runtime: {entry['error']}", _WIDTH - 9))
    stop = f"stop={result['stop']}  turns={result['turns']}  tool_calls={result['tool_calls']}"
    if result["stop"] == Stop.FINAL:
        stop += f"  answer={result['answer']!r}"
    elif result.get("detail"):
        stop += f"  detail={result['detail']!r}"
    return [*lines, shorten(stop, _WIDTH)]


def ledger_lines(shop: Shop, customer: str, new: Sequence[Refund]) -> list[str]:
    """One line per refund executed, marked with the rule it broke, if any."""
    if not new:
        return ["ledger: no refund executed"]
    lines = ["ledger (refunds executed in this episode):"]
    for refund, refusal in judged(shop, customer, shop.ledger, new):
        verdict = "authorised" if refusal is None else f"UNAUTHORISED ({refusal.rule}: {refusal.reason})"
        line = (
            f"  {refund.id} {money(refund.amount):>9} on {refund.order} to {refund.destination:<17} {verdict}"
        )
        lines.append(shorten(line, _WIDTH))
    return lines


def episode_text(episode: Any) -> str:
    """The whole episode as text: the request, the attack if any, the trace, the ledger."""
    request = episode.request
    head = [
        shorten(f"request {request.id} from {request.customer}: {request.message!r}", _WIDTH),
        f"defenses: {episode.defenses.name}" + (f"; fault: {episode.faults}" if episode.faults else ""),
    ]
    if episode.attack is not None:
        where = f"attack {episode.attack.id} in the {episode.place}: "
        head.append(where + repr(_short(episode.injected, _WIDTH - len(where) - 2)))
    tail = ledger_lines(episode.shop, request.customer, episode.refunds)
    said = [
        f"${a['amount']:.2f} on {a['order']} to {a['destination']}: {'yes' if a['approved'] else 'no'}"
        for a in episode.approvals
    ]
    if said:
        tail.append(shorten("approvals: " + "; ".join(said), _WIDTH))
    return "\n".join([*head, *trace_lines(episode.result), *tail])


def short(table: pd.DataFrame) -> pd.DataFrame:
    """A metrics table with the short labels of _LABELS (other columns unchanged)."""
    return table.rename(columns={column: label for column, (label, _) in _LABELS.items()})


def legend(labels: Any) -> str:
    """One or two lines saying what each short label among `labels` (a table's columns) stands for."""
    full = {label: name for name, label in _DEFENSE_LABELS.items() if name != label} | _MEANINGS
    text = "; ".join(f"{label} = {full[label]}" for label in labels if label in full)
    return "\n".join(textwrap.wrap(text, _WIDTH))


def success_by_attack(by_attack: pd.DataFrame, attacks: Sequence[str]) -> pd.DataFrame:
    """Attack success rate, a row per attack and a column per defense (short labels), from
    `matrix(..., by_attack=True)` for one policy; rows in the order of `attacks`."""
    rates = by_attack["attack_success_rate"].droplevel("policy").unstack("defense")
    order = [d for d in _DEFENSE_LABELS if d in rates.columns]
    order += [d for d in rates.columns if d not in _DEFENSE_LABELS]
    rates = rates.loc[list(attacks), order].rename(columns=_DEFENSE_LABELS)
    rates.columns.name = "defense"
    return rates


def family_table(comparisons: Sequence[Any], question: str = "03") -> pd.DataFrame:
    """`questions.answer_table` of `comparisons` (lab 03's questions by default: the declared rows get
    verdicts, the rest are exploratory), without the interval's method, so that each row stays on
    one line."""
    from labkit.core.questions import answer_table

    return answer_table(question, comparisons).drop(columns="interval")
