"""A policy's two charts, its TrueSkill over time and its points per task, drawn on the
Space as SVG. No Gradio.

Why by hand rather than Gradio's `LinePlot`/`BarPlot`: those send Vega-Lite specs that the
browser compiles and evaluates as the Policy tab shows, about 0.1 s each on a 2-core machine
(`bench.ui_scale`'s `policy_page_ms` at 200,000 matches: docs/benchmarks.md); plotly's
figures cost the browser more still, and matplotlib would rasterise every figure on the
Space, where it is not a dependency. A line and grouped bars over labelled axes are a few
dozen elements of SVG that the browser only paints. Every mark says its values in a
`<title>` (the hover, and the text an API caller or a screen reader gets); text and axes
take the page's colour (`currentColor`), so they read in the light theme and the dark.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

import pandas as pd

from arena.schema import TASK_NAMES
from arena.scoring import TIER_POINTS

#: The charts' drawing box (SVG units; it scales to the column's width).
WIDTH, HEIGHT = 640, 240
#: Room for the axes' labels: left, right, top, bottom.
LEFT, RIGHT, TOP, BOTTOM = 46, 12, 30, 40
#: One colour per line or track, in order (Vega's first two, as the plots had).
COLOURS = ("#4c78a8", "#f58518", "#54a24b", "#e45756")
#: The rating line's marks: at most this many points are drawn (`leaderboard.tables.thinned`).
MARK_RADIUS = 2.2


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About `count` round values (1, 2 or 5 times a power of ten apart) covering
    [`low`, `high`].

    Example:
        >>> nice_ticks(21.3, 33.9)
        [20.0, 25.0, 30.0, 35.0]
        >>> nice_ticks(5, 5)
        [4.0, 4.5, 5.0, 5.5, 6.0]
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return []
    if high - low < 1e-9:
        low, high = low - 1, high + 1
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first, last = math.floor(low / step), math.ceil(high / step)
    return [float(round(k * step, 10)) for k in range(first, last + 1)]


def _number(value: float) -> str:
    """A tick's label: no trailing zeros."""
    return f"{value:.10g}"


def _frame(title: str, y_ticks: Sequence[float], y_of, legend: Sequence[tuple[str, str, bool]]) -> list[str]:
    """The chart's title, horizontal grid with its labels, and legend (name, colour, dashed)."""
    parts = [f'<text x="{LEFT}" y="16" font-size="13" font-weight="600">{html.escape(title)}</text>']
    for value in y_ticks:
        y = y_of(value)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="currentColor" '
                     f'stroke-opacity="0.15"/><text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_number(value)}</text>')
    x = WIDTH - RIGHT
    for name, colour, dashed in reversed(legend):  # right-aligned, in order
        width = 7 * len(name) + 22
        x -= width
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        parts.append(f'<line x1="{x}" x2="{x + 14}" y1="12" y2="12" stroke="{colour}" stroke-width="2.5"{dash}/>'
                     f'<text x="{x + 18}" y="16">{html.escape(name)}</text>')
    return parts


def _svg(label: str, parts: Sequence[str]) -> str:
    return (f'<svg class="arena-chart" role="img" aria-label="{html.escape(label)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'width="100%" style="max-width:{WIDTH * 1.5:.0f}px;height:auto;font:11px sans-serif" fill="currentColor" '
            f'xmlns="http://www.w3.org/2000/svg"><title>{html.escape(label)}</title>{"".join(parts)}</svg>')


def _time_format(span: pd.Timedelta) -> str:
    return "%b %d" if span >= pd.Timedelta(days=3) else "%b %d %H:%M" if span >= pd.Timedelta(hours=1) else "%H:%M:%S"


def rating_chart(trajectory: pd.DataFrame, title: str = "TrueSkill over PvP matches") -> str:
    """The rating after each PvP match: mu, and the conservative mu - 3 sigma the PvP table
    ranks by (dashed); "" with no rated match.

    Args:
        trajectory (`pd.DataFrame`): `time` (datetimes, ascending), `mu`, `sigma`, as
            `leaderboard.tables.policy_frames` gives it (thinned to the points worth drawing).
    """
    if trajectory.empty:
        return ""
    times = pd.to_datetime(trajectory["time"], utc=True)
    mu = trajectory["mu"].to_numpy(dtype=float)
    low = mu - 3 * trajectory["sigma"].to_numpy(dtype=float)
    ticks = nice_ticks(float(min(low.min(), mu.min())), float(max(low.max(), mu.max())))
    bottom, top = ticks[0], ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    start, span = times.iloc[0], times.iloc[-1] - times.iloc[0]
    seconds = span.total_seconds()

    def x_of(t: pd.Timestamp) -> float:
        return LEFT + (plot_w * (t - start).total_seconds() / seconds if seconds > 0 else plot_w / 2)

    def y_of(v: float) -> float:
        return TOP + plot_h * (1 - (v - bottom) / (top - bottom))

    xs = [x_of(t) for t in times]
    parts = _frame(title, ticks, y_of, [("mu", COLOURS[0], False), ("mu - 3 sigma", COLOURS[1], True)])
    form = _time_format(span)
    for k in range(4 if seconds > 0 else 1):
        t = start + span * (k / 3) if seconds > 0 else start
        x, anchor = x_of(t), ("start" if k == 0 and seconds > 0 else "end" if k == 3 else "middle")
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h + 4}" stroke="currentColor"/>'
                     f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="{anchor}">{t.strftime(form)}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 4}" text-anchor="middle" opacity="0.7">'
                 f'time of the match (UTC)</text>')
    for values, colour, dash in ((low, COLOURS[1], ' stroke-dasharray="5 3"'), (mu, COLOURS[0], "")):
        line = " ".join(f"{x:.1f},{y_of(v):.1f}" for x, v in zip(xs, values))
        parts.append(f'<polyline points="{line}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
    for x, t, m, c in zip(xs, times, mu, low):
        parts.append(f'<circle cx="{x:.1f}" cy="{y_of(m):.1f}" r="{MARK_RADIUS}" fill="{COLOURS[0]}">'
                     f'<title>{t.strftime("%Y-%m-%d %H:%M:%S")} UTC: mu {m:.2f}, mu - 3 sigma {c:.2f}</title></circle>')
    return _svg(f"{title}: mu from {mu[0]:.2f} to {mu[-1]:.2f} over {len(mu)} points", parts)


def task_chart(tasks: pd.DataFrame, title: str = "Mean points per task") -> str:
    """Each task's mean points per match, one bar per track, over the tiers' points (4, 10,
    21) as grid lines; "" with no match.

    Args:
        tasks (`pd.DataFrame`): `track`, `task`, `points`, as `leaderboard.tables.policy_frames`
            gives it.
    """
    if tasks.empty:
        return ""
    tracks = list(dict.fromkeys(tasks["track"]))
    names = [t for t in TASK_NAMES if t in set(tasks["task"])] + sorted(set(tasks["task"]) - set(TASK_NAMES))
    points = {(r.track, r.task): float(r.points) for r in tasks.itertuples()}
    ticks = [0.0, *map(float, TIER_POINTS)]
    top = ticks[-1]
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def y_of(v: float) -> float:
        return TOP + plot_h * (1 - min(max(v, 0.0), top) / top)

    colours = {track: COLOURS[i % len(COLOURS)] for i, track in enumerate(tracks)}
    parts = _frame(title, ticks, y_of, [(track, colours[track], False) for track in tracks])
    slot = plot_w / len(names)
    bar = min(40.0, slot * 0.8 / len(tracks))
    for i, name in enumerate(names):
        middle = LEFT + slot * (i + 0.5)
        parts.append(f'<text x="{middle:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{html.escape(name)}</text>')
        for j, track in enumerate(tracks):
            if (track, name) not in points:
                continue
            value = points[(track, name)]
            x = middle - bar * len(tracks) / 2 + j * bar
            y = y_of(value)
            parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar - 2:.1f}" height="{TOP + plot_h - y:.1f}" '
                         f'fill="{colours[track]}"><title>{html.escape(name)}, {html.escape(track)}: '
                         f'{value:.2f} points a match</title></rect>'
                         f'<text x="{x + (bar - 2) / 2:.1f}" y="{y - 3:.1f}" text-anchor="middle" font-size="10">{value:.1f}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 4}" text-anchor="middle" opacity="0.7">'
                 f'grid lines: the tiers\' points</text>')
    return _svg(f"{title}: " + "; ".join(f"{track} " + ", ".join(f"{n} {points[(track, n)]:.1f}" for n in names
                                                                    if (track, n) in points) for track in tracks), parts)
