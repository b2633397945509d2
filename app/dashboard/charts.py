"""Server-side SVG charts over time: a line chart of rates and grouped volume bars.

Every chart is a string of SVG built here, styled by classes from dashboard.css (no inline
styles, no script), and every piece of text in it passes through `html.escape`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape

from markupsafe import Markup

from app.dashboard.filters import Bucket

LEFT, RIGHT, TOP, BOTTOM = 52, 16, 14, 40
MAX_X_LABELS = 8
MAX_DOTS = 90
MAX_BAR = 28
# A point label (dashboard.css: 12px, bold): the distance between two labels' baselines that
# keeps them apart, and a generous width per character, to keep a label inside the chart.
LABEL_GAP = 14
LABEL_CHAR_WIDTH = 7.5


@dataclass(frozen=True, slots=True)
class Series:
    """One line or one set of bars; `css` names its colour class in dashboard.css."""

    label: str
    values: Sequence[float | None]
    css: str
    details: Sequence[str] | None = None  # per point, shown in the hover title


def percent(value: float) -> str:
    return f"{value * 100:.0f}%"


def compact(value: float) -> str:
    """1234 -> 1.2k; keeps axis labels short."""
    for size, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".rstrip("0").rstrip(".") + suffix
    return f"{value:g}"


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to at least `top` (1, 2, 2.5 or 5 times a power of ten)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [step * i for i in range(math.ceil(top / step) + 1)]


def _time_label(start: datetime, bucket: Bucket, previous: datetime | None) -> tuple[str, str]:
    day = f"{start.day} {start:%b}"
    if bucket == "day":
        return day, ""
    new_day = previous is None or previous.date() != start.date()
    return f"{start:%H}:00", day if new_day else ""


def svg_open(width: int, height: int, title: str) -> list[str]:
    return [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]


class _Frame:
    """The plot area of a chart over `n` time buckets and a y range of 0..top."""

    def __init__(self, width: int, height: int, n: int, top: float) -> None:
        self.width, self.height, self.n, self.top = width, height, n, top
        self.plot_w = width - LEFT - RIGHT
        self.plot_h = height - TOP - BOTTOM

    def x(self, i: float) -> float:
        return LEFT + (i + 0.5) * self.plot_w / self.n

    def y(self, value: float) -> float:
        return TOP + self.plot_h * (1 - value / self.top)

    def axes(
        self,
        ticks: list[float],
        fmt: Callable[[float], str],
        starts: Sequence[datetime],
        bucket: Bucket,
    ) -> list[str]:
        out = []
        for tick in ticks:
            y = self.y(tick)
            out.append(
                f'<line class="grid" x1="{LEFT}" x2="{self.width - RIGHT}" '
                f'y1="{y:.1f}" y2="{y:.1f}"/>'
            )
            out.append(
                f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" '
                f'text-anchor="end">{escape(fmt(tick))}</text>'
            )
        step = max(1, math.ceil(self.n / MAX_X_LABELS))
        previous: datetime | None = None
        for i in range(0, self.n, step):
            top_line, bottom_line = _time_label(starts[i], bucket, previous)
            previous = starts[i]
            x, y = self.x(i), self.height - BOTTOM + 16
            out.append(
                f'<text class="tick" x="{x:.1f}" y="{y}" text-anchor="middle">'
                f"{escape(top_line)}"
                + (
                    f'<tspan x="{x:.1f}" dy="14">{escape(bottom_line)}</tspan>'
                    if bottom_line
                    else ""
                )
                + "</text>"
            )
        base = self.y(0)
        out.append(
            f'<line class="axis" x1="{LEFT}" x2="{self.width - RIGHT}" '
            f'y1="{base:.1f}" y2="{base:.1f}"/>'
        )
        return out


def empty_chart(width: int, height: int, title: str, message: str) -> Markup:
    parts = svg_open(width, height, title)
    parts.append(
        f'<text class="empty" x="{width / 2}" y="{height / 2}" '
        f'text-anchor="middle">{escape(message)}</text></svg>'
    )
    return Markup("".join(parts))


def _point_title(series: Series, start: datetime, i: int, text: str) -> str:
    detail = f" ({series.details[i]})" if series.details else ""
    return escape(f"{series.label}, {start:%Y-%m-%d %H:%M}: {text}{detail}")


@dataclass(frozen=True, slots=True)
class PointLabel:
    """The value written beside a point no line passes through (one with no neighbours)."""

    i: int
    y: float  # where the point is
    text: str
    css: str


def spread(wanted: Sequence[float], gap: float, low: float, high: float) -> list[float]:
    """Baselines for labels wanted at ``wanted``, each at least ``gap`` from the others and
    within ``low``..``high`` when they fit, each as near its point as that allows; in the
    order given. Two series with the same value at a point get their labels one above the
    other instead of one on top of the other."""
    order = sorted(range(len(wanted)), key=lambda k: wanted[k])
    placed: list[float] = []
    for k in order:  # downwards: each below the one before it
        placed.append(max(wanted[k], low, placed[-1] + gap if placed else low))
    for n in range(len(placed) - 1, -1, -1):  # upwards, from the bottom edge, if pushed past it
        limit = high if n == len(placed) - 1 else placed[n + 1] - gap
        placed[n] = min(placed[n], limit)
    out = [0.0] * len(wanted)
    for k, y in zip(order, placed, strict=True):
        out[k] = y
    return out


def _lone(values: Sequence[float | None], i: int) -> bool:
    """Whether the value at ``i`` has no value beside it (so no line is drawn through it)."""
    before = i == 0 or values[i - 1] is None
    after = i == len(values) - 1 or values[i + 1] is None
    return values[i] is not None and before and after


def _series_path(frame: _Frame, s: Series) -> str:
    path, pen_down = [], False
    for i, value in enumerate(s.values):
        if value is None:
            pen_down = False
            continue
        path.append(f"{'L' if pen_down else 'M'}{frame.x(i):.1f} {frame.y(value):.1f}")
        pen_down = True
    return f'<path class="line {s.css}" d="{" ".join(path)}"/>'


def _series_dots(frame: _Frame, s: Series, starts: Sequence[datetime]) -> list[str]:
    return [
        f'<circle class="dot {s.css}" cx="{frame.x(i):.1f}" cy="{frame.y(value):.1f}" r="3.5">'
        f"<title>{_point_title(s, starts[i], i, percent(value))}</title></circle>"
        for i, value in enumerate(s.values)
        if value is not None and (len(starts) <= MAX_DOTS or _lone(s.values, i))
    ]


def _point_labels(frame: _Frame, labels: Sequence[PointLabel]) -> list[str]:
    """The labels of lone points, those of one bucket spread apart so none covers another;
    right of the point, or left of it where the chart's edge is near."""
    out = []
    for i in sorted({label.i for label in labels}):
        here = [label for label in labels if label.i == i]
        ys = spread([label.y + 4 for label in here], LABEL_GAP, TOP + 10, frame.y(0) - 2)
        for label, y in zip(here, ys, strict=True):
            x = frame.x(i)
            fits = x + 8 + len(label.text) * LABEL_CHAR_WIDTH <= frame.width - RIGHT
            anchor = f'x="{x + 8:.1f}"' if fits else f'x="{x - 8:.1f}" text-anchor="end"'
            out.append(
                f'<text class="point {label.css}" {anchor} y="{y:.1f}">{escape(label.text)}</text>'
            )
    return out


def line_chart(
    starts: Sequence[datetime],
    series: Sequence[Series],
    *,
    bucket: Bucket,
    title: str,
    width: int = 820,
    height: int = 260,
) -> Markup:
    """Rates (0..1) over time; a bucket without data leaves a gap in its line."""
    if not starts:
        return empty_chart(width, height, title, "No feedback in this range yet")
    frame = _Frame(width, height, len(starts), 1.0)
    parts = svg_open(width, height, title)
    parts += frame.axes([0, 0.25, 0.5, 0.75, 1.0], percent, starts, bucket)
    labels: list[PointLabel] = []
    for s in series:
        parts.append(_series_path(frame, s))
        parts += _series_dots(frame, s, starts)
        labels += [
            PointLabel(i, frame.y(value), f"{s.label} {value:.1%}", s.css)
            for i, value in enumerate(s.values)
            if value is not None and _lone(s.values, i)
        ]
    parts += _point_labels(frame, labels)
    parts.append("</svg>")
    return Markup("".join(parts))


def bar_chart(
    starts: Sequence[datetime],
    series: Sequence[Series],
    *,
    bucket: Bucket,
    title: str,
    width: int = 820,
    height: int = 200,
) -> Markup:
    """Counts per time bucket, one bar per series side by side."""
    if not starts:
        return empty_chart(width, height, title, "No routes in this range yet")
    peak = max((v or 0 for s in series for v in s.values), default=0)
    ticks = nice_ticks(max(peak, 1))
    frame = _Frame(width, height, len(starts), ticks[-1])
    parts = svg_open(width, height, title)
    parts += frame.axes(ticks, compact, starts, bucket)
    slot = frame.plot_w / frame.n
    bar = min(slot * 0.8 / max(len(series), 1), MAX_BAR)
    margin = (slot - bar * len(series)) / 2
    for k, s in enumerate(series):
        for i, value in enumerate(s.values):
            if not value:
                continue
            x = LEFT + i * slot + margin + k * bar
            y = frame.y(value)
            parts.append(
                f'<rect class="bar {s.css}" x="{x:.1f}" y="{y:.1f}" '
                f'width="{max(bar - 0.5, 0.6):.1f}" height="{frame.y(0) - y:.1f}">'
                f"<title>{_point_title(s, starts[i], i, compact(value))}</title></rect>"
            )
    parts.append("</svg>")
    return Markup("".join(parts))
