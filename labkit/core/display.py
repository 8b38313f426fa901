"""Episode results for notebooks: plain text without timings (`trace_text`: nbval compares it) and an
HTML table (`result_html`). A result carrying a grade (attributes `correct` and `expected`, as
`labkit.baseline.grading.graded` sets them) shows as *final, correct* or *wrong*, not just `final`."""

import html
import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from labkit.core.answers import shown
from labkit.core.cells import unbroken
from labkit.core.colours import OUTCOMES
from labkit.core.stops import Stop
from labkit.core.text import shorten

TRACE_WIDTH = 110  # characters of a stop line before its answer goes on the next line
_UNGRADED, _STOPPED = "#455a64", "#b35900"  # a final nobody has graded; any other stop reason


def _short(value: Any, limit: int = 160) -> str:
    """`value` as the trace writes it: a str as it is, anything else as JSON, or by `shown`."""
    try:
        text = value if type(value) is str else json.dumps(value, ensure_ascii=False, default=str)
    except Exception:  # noqa: BLE001 - a tool's result may not print (10**5000, a raising __str__)
        return shown(value, limit)
    return shorten(text, limit)


def _decision(decision: Any) -> str:
    """A decision as a call: `search(query='deploy', n=3)`."""
    if not (isinstance(decision, Mapping) and "action" in decision):
        return _short(decision)
    args = (
        f"{k}={_short(v, 60)!r}" if isinstance(v, str) else f"{k}={_short(v, 60)}"
        for k, v in decision.items()
        if k != "action"
    )
    return f"{decision['action']}({', '.join(args)})"


def _observed(entry: Mapping[str, Any]) -> str:
    """What the runtime observed in one turn."""
    if "result" not in entry:
        return f"refused: {entry['error']}" if "error" in entry else ""
    result = entry["result"]
    if isinstance(result, list):
        ids = [str(hit.get("id", hit)) if isinstance(hit, Mapping) else _short(hit, 40) for hit in result]
        return f"{len(result)} hit(s): {', '.join(ids)}" if result else "0 hits"
    if isinstance(result, Mapping) and "error" in result:
        return f"error: {_short(result['error'])}"
    if isinstance(result, Mapping) and "id" in result:
        return f"page {result['id']}: {_short(result.get('command', ''), 80)}"
    return _short(result)


def trace_text(result: Mapping[str, Any]) -> str:
    """The episode as plain text: one line per turn, the stop line, and a graded result's outcome."""
    lines = []
    for entry in result.get("trace", []):
        seen = _observed(entry)
        line = f"{entry.get('turn', '?'):>2}  {_decision(entry.get('decision', '—'))}"
        lines.append(f"{line}  ->  {seen}" if seen else line)
    stop = f"stop={result.get('stop')}  turns={result.get('turns')}  tool_calls={result.get('tool_calls')}"
    if result.get("stop") == Stop.FINAL:
        said = f"answer={result.get('answer')!r}  citation={result.get('citation')!r}"
        # Past about 118 characters a notebook at 1366 px breaks the line mid-word: a long answer
        # goes on a line of its own.
        stop += f"  {said}" if len(stop) + len(said) <= TRACE_WIDTH else f"\n      {said}"
    elif result.get("detail"):
        stop += f"  detail={result.get('detail')!r}"
    lines.append(stop)
    correct, expected = getattr(result, "correct", None), getattr(result, "expected", None)
    if correct:
        lines.append("outcome: correct")
    elif correct is not None and expected is not None:
        answer, citation = expected
        what = "wrong answer" if result.get("stop") == Stop.FINAL else "no answer"
        lines.append(f"outcome: {what}, expected {answer!r} citing {citation!r}")
    return "\n".join(lines)


def _time(entry: Mapping[str, Any]) -> str:
    """A replayed decision's recorded time, else the time the turn took."""
    recorded, elapsed = entry.get("recorded_s"), entry.get("elapsed")
    if isinstance(recorded, int | float):
        return f"{recorded:.2f} s recorded"
    if elapsed is None:
        return ""
    ms = elapsed * 1000
    return f"{ms:.3f} ms" if ms < 0.1 else f"{ms:.2f} ms"  # a scripted decision takes microseconds


def _code(text: Any) -> str:
    return f"<code>{html.escape(str(text))}</code>"


def result_html(result: Mapping[str, Any]) -> str:
    """An HTML table of the trace (turn, decision, observation, time, tokens) and the stop."""
    rows = [
        (
            entry.get("turn", ""),
            _decision(entry.get("decision", "—")),
            _observed(entry),
            _time(entry),
            entry.get("tokens", ""),
        )
        for entry in result.get("trace", [])
    ]
    stop, correct = str(result.get("stop")), getattr(result, "correct", None)
    expected = getattr(result, "expected", None)  # a plain dict is not graded: neither is set
    label, colour = stop, _STOPPED if stop != Stop.FINAL else _UNGRADED
    if stop == Stop.FINAL and correct is not None:
        label, colour = (
            ("final, correct", OUTCOMES["correct"]) if correct else ("final, wrong", OUTCOMES["wrong"])
        )
    summary = (
        f"<b style='color:{colour}'>stop: {html.escape(label)}</b> · turns {result.get('turns')} · "
        f"tool calls {result.get('tool_calls')}"
    )
    if stop == Stop.FINAL:
        summary += f" · answer {_code(result.get('answer'))} · citation {_code(result.get('citation'))}"
        if correct is False and expected is not None:
            answer, citation = expected
            summary += f" · expected {_code(answer)} citing {_code(citation)}"
    elif result.get("detail"):
        summary += f" · {html.escape(str(result.get('detail')))}"
    columns = ["turn", "decision", "observation", "time", "tokens"]
    table = unbroken(pd.DataFrame(rows, columns=columns).to_html(index=False)) if rows else ""
    return f"<div>{summary}{table}</div>"
