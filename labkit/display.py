"""Readable renderings of episode results for notebooks: an HTML table, and plain text.

A `Result` displays itself through `result_html` in JupyterLab; `trace_text` gives the
same content as plain lines, which is what nbval compares in checked cells (timings are
left out of it on purpose: they differ on every run).
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

_MAX = 160


def _short(value: Any, limit: int = _MAX) -> str:
    try:
        text = value if type(value) is str else json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):
        # What a hostile policy proposed can be unprintable (10**5000 exceeds Python's int
        # string limit; an object's __str__ may raise): the trace still renders.
        text = f"<unprintable {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe(decision: Any) -> str:
    if not isinstance(decision, Mapping) or "action" not in decision:
        return _short(decision)
    args = ", ".join(
        f"{k}={_short(v, 60)!r}" if isinstance(v, str) else f"{k}={_short(v, 60)}"
        for k, v in decision.items()
        if k != "action"
    )
    return f"{decision['action']}({args})"


def _observed(entry: Mapping[str, Any]) -> str:
    if "error" in entry and "result" not in entry:
        return f"refused: {entry['error']}"
    if "result" not in entry:
        return ""
    result = entry["result"]
    if isinstance(result, list):
        return (
            f"{len(result)} hit(s): "
            + ", ".join(
                str(hit.get("id", hit)) if isinstance(hit, Mapping) else _short(hit, 40) for hit in result
            )
            if result
            else "0 hits"
        )
    if isinstance(result, Mapping) and "error" in result:
        return f"error: {_short(result['error'])}"
    if isinstance(result, Mapping) and "id" in result:
        return f"page {result['id']}: {_short(result.get('command', ''), 80)}"
    return _short(result)


def trace_text(result: Mapping[str, Any]) -> str:
    """The episode as plain text: one line per turn, then the stop line. No timings."""
    lines = []
    for entry in result.get("trace", []):
        line = f"{entry.get('turn', '?'):>2}  {_describe(entry.get('decision', '—'))}"
        seen = _observed(entry)
        lines.append(line + (f"  ->  {seen}" if seen else ""))
    stop = f"stop={result.get('stop')}  turns={result.get('turns')}  tool_calls={result.get('tool_calls')}"
    if result.get("stop") == "final":
        stop += f"  answer={result.get('answer')!r}  citation={result.get('citation')!r}"
    elif result.get("detail"):
        stop += f"  detail={result.get('detail')!r}"
    return "\n".join([*lines, stop])


def result_html(result: Mapping[str, Any]) -> str:
    """An HTML table of the trace (turn, decision, observation, time, tokens) and the stop."""
    esc = html.escape
    rows = []
    for entry in result.get("trace", []):
        elapsed = entry.get("elapsed")
        rows.append(
            "<tr>"
            f"<td>{esc(str(entry.get('turn', '')))}</td>"
            f"<td><code>{esc(_describe(entry.get('decision', '—')))}</code></td>"
            f"<td>{esc(_observed(entry))}</td>"
            f"<td>{'' if elapsed is None else f'{elapsed * 1000:.2f} ms'}</td>"
            f"<td>{esc(str(entry.get('tokens', '')))}</td>"
            "</tr>"
        )
    stop = esc(str(result.get("stop")))
    colour = "#1a7f37" if result.get("stop") == "final" else "#b35900"
    summary = (
        f"<b style='color:{colour}'>stop: {stop}</b> · turns {result.get('turns')} · "
        f"tool calls {result.get('tool_calls')}"
    )
    if result.get("stop") == "final":
        summary += (
            f" · answer <code>{esc(str(result.get('answer')))}</code> · citation "
            f"<code>{esc(str(result.get('citation')))}</code>"
        )
    elif result.get("detail"):
        summary += f" · {esc(str(result.get('detail')))}"
    head = "<tr><th>turn</th><th>decision</th><th>observation</th><th>time</th><th>tokens</th></tr>"
    table = f"<table>{head}{''.join(rows)}</table>" if rows else ""
    return f"<div>{summary}{table}</div>"
