"""Server-side SVG charts without a time axis: latency percentiles, shares of a whole.

Styled by classes from dashboard.css, every text escaped, as in :mod:`app.dashboard.charts`.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from markupsafe import Markup

from app.dashboard.charts import empty_chart, nice_ticks, svg_open


def latency_chart(
    values: Sequence[tuple[str, float | None]],
    *,
    title: str,
    width: int = 380,
    height: int = 126,
) -> Markup:
    """Horizontal bars for latency percentiles, labelled in milliseconds."""
    known = [v for _, v in values if v is not None]
    if not known:
        return empty_chart(width, height, title, "No routes in this range yet")
    top = nice_ticks(max(known))[-1]
    parts = svg_open(width, height, title)
    row = (height - 10) / len(values)
    left, span = 48, width - 48 - 78
    for i, (label, value) in enumerate(values):
        y = 5 + i * row
        parts.append(f'<text class="label" x="0" y="{y + row / 2 + 5:.1f}">{escape(label)}</text>')
        parts.append(
            f'<rect class="track" x="{left}" y="{y + row * 0.2:.1f}" width="{span}" '
            f'height="{row * 0.6:.1f}" rx="3"/>'
        )
        if value is None:
            continue
        bar_w = max(span * value / top, 2)
        parts.append(
            f'<rect class="bar lat{i}" x="{left}" y="{y + row * 0.2:.1f}" '
            f'width="{bar_w:.1f}" height="{row * 0.6:.1f}" rx="3"/>'
        )
        parts.append(
            f'<text class="value" x="{left + span + 8}" y="{y + row / 2 + 5:.1f}">'
            f"{escape(f'{value:,.1f} ms')}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def share_chart(
    segments: Sequence[tuple[str, int, str]], *, title: str, width: int = 380
) -> Markup:
    """One 100% bar split into parts, with a legend row (count and share) per part."""
    height = 36 + 21 * len(segments)
    total = sum(count for _, count, _ in segments)
    if not total:
        return empty_chart(width, height, title, "No feedback in this range yet")
    parts = svg_open(width, height, title)
    x = 0.0
    for label, count, css in segments:
        part = width * count / total
        if part > 0:
            parts.append(
                f'<rect class="bar {css}" x="{x:.1f}" y="0" width="{part:.1f}" '
                f'height="18"><title>{escape(f"{label}: {count}")}</title></rect>'
            )
        x += part
    for i, (label, count, css) in enumerate(segments):
        y = 38 + i * 21
        parts.append(f'<rect class="bar {css}" x="0" y="{y - 10}" width="12" height="12" rx="2"/>')
        parts.append(f'<text class="value" x="20" y="{y}">{escape(label)}</text>')
        parts.append(
            f'<text class="value num" x="{width - 70}" y="{y}" text-anchor="end">{count:,}</text>'
        )
        parts.append(
            f'<text class="tick" x="{width}" y="{y}" text-anchor="end">'
            f"{count / total * 100:.1f}%</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
