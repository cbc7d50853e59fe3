# Copyright: phasekit.kube contributors
# Apache License 2.0 (see LICENSE)
"""A run's timeline as a picture (issue #41): one row per cluster, one bar per phase from its start to its end,
coloured by its result, in a self-contained HTML page (inline SVG, no script, nothing fetched) that a person opens
in a browser. Made from the report's entries (``report.report_entries``), which carry each phase's start and end
per cluster; nothing secret is in them (messages are left out: a bar's tooltip says the result and times)."""

from __future__ import annotations

import html
from dataclasses import dataclass
from datetime import datetime, timezone

ROW, BAR, LEFT, TOP, WIDTH = 28, 18, 170, 56, 900     # pixels
COLOURS = {"changed": "#2e7d32", "ok": "#81c784", "failed": "#c62828", "skipped": "#9e9e9e"}
OTHER_COLOUR = "#5c6bc0"
TICKS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200)


@dataclass(frozen=True)
class Bar:
    """One phase on one cluster: seconds from the run's first start."""

    phase: str
    cluster: str
    result: str
    start: float
    end: float


def iso_stamp(epoch: float) -> str:
    """A UTC time with milliseconds, as the reports give a phase's start and end."""
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def epoch_of(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def bars_of(entries: list[dict]) -> tuple[list[Bar], list[dict]]:
    """The entries that ran, as bars (seconds from the first start), and those that did not."""
    ran = [entry for entry in entries if entry.get("started") and entry.get("ended")]
    if not ran:
        return [], list(entries)
    first = min(epoch_of(entry["started"]) for entry in ran)
    bars = [Bar(entry["phase"], entry["cluster"], entry["result"], epoch_of(entry["started"]) - first,
                epoch_of(entry["ended"]) - first) for entry in ran]
    return bars, [entry for entry in entries if entry not in ran]


def tick_step(seconds: float) -> float:
    """A round interval that puts about eight ticks on the axis."""
    return next((step for step in TICKS if seconds / step <= 8), TICKS[-1])


def timeline_html(entries: list[dict], *, plan: str, mode: str) -> str:
    """The page: the title, the axis, a row per cluster (in the order they first started), the legend, and what
    never ran."""
    bars, not_run = bars_of(entries)
    clusters = list(dict.fromkeys(drawn.cluster for drawn in sorted(bars, key=lambda drawn: (drawn.start, drawn.cluster))))
    span = max([drawn.end for drawn in bars] + [0.001])
    scale = WIDTH / span
    height = TOP + ROW * len(clusters) + 20
    title = f"Plan {plan or '(unnamed)'}: {mode} timeline"
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{LEFT + WIDTH + 20}" height="{height}" '
           f'role="img" aria-label="{html.escape(title)}">']
    svg += _axis(span, scale, height)
    for row, cluster in enumerate(clusters):
        y = TOP + row * ROW
        svg.append(f'<text class="cluster" x="{LEFT - 8}" y="{y + BAR - 4}" text-anchor="end">'
                   f'{html.escape(cluster)}</text>')
        svg += [_bar(drawn, y, scale) for drawn in bars if drawn.cluster == cluster]
    svg.append("</svg>")
    return _page(title, svg, not_run, span)


def _axis(span: float, scale: float, height: int) -> list[str]:
    step = tick_step(span)
    parts = []
    tick = 0.0
    while tick <= span + 1e-9:
        x = LEFT + tick * scale
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 8}" x2="{x:.1f}" y2="{height - 16}" class="grid"/>')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{TOP - 14}" text-anchor="middle">{tick:g}s</text>')
        tick = round(tick + step, 3)
    return parts


def _bar(drawn: Bar, y: int, scale: float) -> str:
    x, width = LEFT + drawn.start * scale, max((drawn.end - drawn.start) * scale, 2.0)
    label = html.escape(drawn.phase)
    tip = html.escape(f"{drawn.phase} on {drawn.cluster}: {drawn.result}, {drawn.start:.2f}s to {drawn.end:.2f}s "
                      f"({drawn.end - drawn.start:.2f}s)")
    text = (f'<text class="phase" x="{x + 4:.1f}" y="{y + BAR - 5}">{label}</text>'
            if width > 7 * len(drawn.phase) + 8 else "")
    return (f'<g class="bar" data-phase="{label}" data-cluster="{html.escape(drawn.cluster)}" '
            f'data-result="{html.escape(drawn.result)}" data-start="{drawn.start:.3f}" data-end="{drawn.end:.3f}">'
            f'<title>{tip}</title><rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{BAR}" rx="3" '
            f'fill="{COLOURS.get(drawn.result, OTHER_COLOUR)}"/>{text}</g>')


def _page(title: str, svg: list[str], not_run: list[dict], span: float) -> str:
    legend = " ".join(f'<span class="key"><i style="background:{colour}"></i>{name}</span>'
                      for name, colour in COLOURS.items())
    never = "".join(f"<li>{html.escape(entry['phase'])} on {html.escape(entry['cluster'])}: "
                    f"{html.escape(str(entry.get('summary') or entry['result']))}</li>" for entry in not_run)
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', f"<title>{html.escape(title)}</title>",
        "<style>body{font:14px sans-serif;margin:24px;color:#212121}.tick,.cluster{font-size:12px;fill:#424242}"
        ".phase{font-size:11px;fill:#fff}.grid{stroke:#e0e0e0}.key{margin-right:14px}"
        ".key i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}</style>",
        "</head><body>", f"<h1>{html.escape(title)}</h1>",
        f"<p>Each row is a cluster, each bar a phase from its start to its end ({span:.1f}s in all). {legend}</p>",
        *svg,
        f'<h2>Not run</h2><ul id="not-run">{never}</ul>' if never else "",
        "</body></html>", ""])
