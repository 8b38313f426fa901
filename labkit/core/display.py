"""Episode results for notebooks: an HTML table (`result_html`), and plain text (`trace_text`).

The text is what nbval compares, so it leaves timings out. `final` means the runtime accepted a
well-formed answer, not that it is right: a result that carries a grade (attributes `correct`
and `expected`, as `labkit.baseline.grading.graded` sets them) renders as *final, correct* or
*final, wrong*. In the HTML, text columns are left-aligned and a time, a command or an argument
never breaks inside itself; a replayed decision's `recorded_s` is shown as its time.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

from labkit.core.answers import shown
from labkit.core.colours import OUTCOMES
from labkit.core.text import shorten

_MAX = 160
_UNGRADED = "#455a64"  # a final nobody has graded yet: neither right nor wrong
_STOPPED = "#b35900"  # any other stop reason
_LEFT = "text-align:left;vertical-align:top"
_KEEP = "white-space:nowrap"


def _short(value: Any, limit: int = _MAX) -> str:
    """`value` as the trace writes it: a str as it is, anything else as JSON, or by `shown`."""
    try:
        text = value if type(value) is str else json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # noqa: BLE001 - a tool's result may not print (10**5000, a raising __str__)
        return shown(value, limit)
    return shorten(text, limit)


def _pieces(decision: Any) -> list[str]:
    """A decision in pieces that must not break inside: `search(query='deploy'`, `n=3)`."""
    if not (isinstance(decision, Mapping) and "action" in decision):
        return [_short(decision)]
    args = [
        f"{k}={_short(v, 60)!r}" if isinstance(v, str) else f"{k}={_short(v, 60)}"
        for k, v in decision.items()
        if k != "action"
    ] or [""]
    pieces = [f"{decision['action']}({args[0]}", *args[1:]]
    pieces[-1] += ")"
    return pieces


def _observed_parts(entry: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(a lead-in, the pieces that must not break inside) of what the runtime observed."""
    if "error" in entry and "result" not in entry:
        return "refused: ", [str(entry["error"])]
    if "result" not in entry:
        return "", []
    result = entry["result"]
    if isinstance(result, list):
        if not result:
            return "0 hits", []
        ids = [str(hit.get("id", hit)) if isinstance(hit, Mapping) else _short(hit, 40) for hit in result]
        return f"{len(result)} hit(s): ", ids
    if isinstance(result, Mapping) and "error" in result:
        return "error: ", [_short(result["error"])]
    if isinstance(result, Mapping) and "id" in result:
        return f"page {result['id']}: ", [_short(result.get("command", ""), 80)]
    return "", [_short(result)]


def _grade(result: Mapping[str, Any]) -> bool | None:
    """The result's grade (`correct`), or None for a result nobody graded."""
    return getattr(result, "correct", None)


def _expected(result: Mapping[str, Any]) -> str:
    answer, citation = result.expected  # type: ignore[attr-defined]
    return f"{answer!r} citing {citation!r}"


def trace_text(result: Mapping[str, Any]) -> str:
    """The episode as plain text: one line per turn, the stop line, and a graded result's outcome."""
    lines = []
    for entry in result.get("trace", []):
        line = f"{entry.get('turn', '?'):>2}  {', '.join(_pieces(entry.get('decision', '—')))}"
        lead, parts = _observed_parts(entry)
        seen = lead + ", ".join(parts)
        lines.append(line + (f"  ->  {seen}" if seen else ""))
    stop = f"stop={result.get('stop')}  turns={result.get('turns')}  tool_calls={result.get('tool_calls')}"
    if result.get("stop") == "final":
        stop += f"  answer={result.get('answer')!r}  citation={result.get('citation')!r}"
    elif result.get("detail"):
        stop += f"  detail={result.get('detail')!r}"
    lines.append(stop)
    correct = _grade(result)
    if correct is not None:
        if correct:
            lines.append("outcome: correct")
        else:
            what = "wrong answer" if result.get("stop") == "final" else "no answer"
            lines.append(f"outcome: {what}, expected {_expected(result)}")
    return "\n".join(lines)


_KEPT_WHOLE = 50  # a piece longer than this may wrap inside, or it pushes the other columns out of view


def _kept(pieces: list[str], joiner: str = ", ") -> str:
    """Pieces joined where a line may break, each piece unbreakable unless it is longer than _KEPT_WHOLE."""
    styles = [_KEEP if len(piece) <= _KEPT_WHOLE else "overflow-wrap:anywhere" for piece in pieces]
    spans = zip(styles, pieces, strict=True)
    return joiner.join(f"<span style='{style}'>{html.escape(piece)}</span>" for style, piece in spans)


def _time(entry: Mapping[str, Any]) -> str:
    recorded, elapsed = entry.get("recorded_s"), entry.get("elapsed")
    if isinstance(recorded, int | float):
        return f"{recorded:.2f} s recorded"
    if elapsed is None:
        return ""
    ms = elapsed * 1000
    return f"{ms:.3f} ms" if ms < 0.1 else f"{ms:.2f} ms"  # a scripted decision takes microseconds


def _stop_label(result: Mapping[str, Any]) -> tuple[str, str]:
    """(label, colour) of how an episode ended: 'final, correct' / 'final, wrong' once graded."""
    stop, correct = str(result.get("stop")), _grade(result)
    if stop != "final":
        return stop, _STOPPED
    if correct is None:
        return stop, _UNGRADED
    return ("final, correct", OUTCOMES["correct"]) if correct else ("final, wrong", OUTCOMES["wrong"])


def result_html(result: Mapping[str, Any]) -> str:
    """An HTML table of the trace (turn, decision, observation, time, tokens) and the stop."""
    esc = html.escape
    rows = []
    for entry in result.get("trace", []):
        lead, parts = _observed_parts(entry)
        rows.append(
            "<tr>"
            f"<td style='{_LEFT}'>{esc(str(entry.get('turn', '')))}</td>"
            f"<td style='{_LEFT}'><code>{_kept(_pieces(entry.get('decision', '—')))}</code></td>"
            f"<td style='{_LEFT}'>{esc(lead)}{_kept(parts)}</td>"
            f"<td style='{_KEEP};vertical-align:top'>{_time(entry)}</td>"
            f"<td style='vertical-align:top'>{esc(str(entry.get('tokens', '')))}</td>"
            "</tr>"
        )
    label, colour = _stop_label(result)
    summary = (
        f"<b style='color:{colour}'>stop: {esc(label)}</b> · turns {result.get('turns')} · "
        f"tool calls {result.get('tool_calls')}"
    )
    if result.get("stop") == "final":
        summary += (
            f" · answer <code style='{_KEEP}'>{esc(str(result.get('answer')))}</code> · citation "
            f"<code style='{_KEEP}'>{esc(str(result.get('citation')))}</code>"
        )
        if _grade(result) is False:
            answer, citation = result.expected  # type: ignore[attr-defined]
            summary += (
                f" · expected <code style='{_KEEP}'>{esc(str(answer))}</code> citing "
                f"<code style='{_KEEP}'>{esc(str(citation))}</code>"
            )
    elif result.get("detail"):
        summary += f" · {esc(str(result.get('detail')))}"
    # Numbers keep JupyterLab's right alignment; text columns are read from the left.
    head = "".join(f"<th style='{_LEFT}'>{name}</th>" for name in ("turn", "decision", "observation"))
    head += "<th>time</th><th>tokens</th>"
    table = f"<table><tr>{head}</tr>{''.join(rows)}</table>" if rows else ""
    return f"<div>{summary}{table}</div>"
