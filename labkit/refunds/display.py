"""Plain-text views of a refund episode: its trace, its ledger, and who was authorised.

Plain text on purpose: it is what nbval compares in checked cells. No timings appear.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from labkit.refunds.policy import authorise
from labkit.refunds.shop import Refund, Shop, dollars, money

_WIDTH = 110


def _short(text: str, limit: int = _WIDTH) -> str:
    """`text` on one line (newlines shown as spaces), cut to `limit` characters."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _call(decision: Any) -> str:
    if not isinstance(decision, Mapping) or "action" not in decision:
        return _short(json.dumps(decision, default=str), 80)
    args = ", ".join(f"{k}={v!r}" for k, v in decision.items() if k != "action")
    return f"{decision['action']}({args})"


def _seen(action: str, result: Any) -> str:
    if isinstance(result, Mapping) and "error" in result:
        return f"ERROR {result['error']}"
    if action == "lookup_order" and isinstance(result, Mapping):
        line = (f"{result['order']} of {result['customer']}: {result['status']} {result['date']}, "
                f"refundable ${result['refundable']:.2f}, paid with {result['payment_method']}")
        if result["refunds"]:
            line += f", refunded before: {', '.join(r['refund'] for r in result['refunds'])}"
        return line + (f"; note: {result['note']!r}" if result["note"] else "")
    if action in ("read_messages", "read_reviews") and isinstance(result, list):
        return f"{len(result)} item(s); last: {result[-1]['text']!r}" if result else "nothing"
    if action == "read_help" and isinstance(result, Mapping):
        return f"page {result['topic']!r}: …{result['text'][-70:]!r}"
    if action == "refund" and isinstance(result, Mapping):
        replay = " (replayed: no new money)" if result.get("replayed") else ""
        return (f"PAID {result['refund']}: ${result['amount']:.2f} on {result['order']} "
                f"to {result['destination']}{replay}")
    return json.dumps(result, default=str)


def trace_lines(result: Mapping[str, Any]) -> list[str]:
    lines = []
    for entry in result["trace"]:
        decision = entry.get("decision", "—")
        line = f"{entry['turn']:>2}  {_call(decision)}"
        if "result" in entry:
            line += "  ->  " + _short(_seen(decision["action"], entry["result"]), 2 * _WIDTH)
        elif "error" in entry:
            line += f"  ->  refused by the runtime: {_short(str(entry['error']))}"
        lines.append(_cut(line, 3 * _WIDTH))
    stop = f"stop={result['stop']}  turns={result['turns']}  tool_calls={result['tool_calls']}"
    if result["stop"] == "final":
        stop += f"  answer={result['answer']!r}"
    elif result.get("detail"):
        stop += f"  detail={result['detail']!r}"
    return [*lines, stop]


def ledger_lines(shop: Shop, customer: str, new: Sequence[Refund]) -> list[str]:
    """One line per refund executed, marked with the rule it broke, if any."""
    if not new:
        return ["ledger: no refund executed"]
    ledger, lines = list(shop.ledger), ["ledger (refunds executed in this episode):"]
    for refund in new:
        refusal = authorise(shop, customer, refund.order, refund.amount, refund.destination, ledger)
        verdict = "authorised" if refusal is None else f"UNAUTHORISED ({refusal.rule}: {refusal.reason})"
        lines.append(f"  {refund.id}  {money(refund.amount):>9} on {refund.order} "
                     f"to {refund.destination:<18} {verdict}")
        ledger.append(refund)
    return lines


def episode_text(episode: Any) -> str:
    """The whole episode as text: the request, the attack if any, the trace, the ledger."""
    request = episode.request
    head = [f"request {request.id} from {request.customer}: {request.message!r}",
            f"defenses: {episode.defenses.name}" + (f"; fault: {episode.faults}" if episode.faults else "")]
    if episode.attack is not None:
        head.append(f"attack {episode.attack.id} in the {episode.place}: {_short(episode.injected, 90)!r}")
    tail = ledger_lines(episode.shop, request.customer, episode.refunds)
    if episode.approvals:
        tail += ["approvals: " + "; ".join(
            f"${a['amount']:.2f} on {a['order']} to {a['destination']}: {'yes' if a['approved'] else 'no'}"
            for a in episode.approvals)]
    return "\n".join([*head, *trace_lines(episode.result), *tail])


def ledger_frame(refunds: Sequence[Refund]) -> pd.DataFrame:
    """Refunds as a table (amounts in dollars)."""
    return pd.DataFrame([{**r.as_dict(), "amount": dollars(r.amount)} for r in refunds],
                        columns=["refund", "order", "amount", "destination", "customer"])
