"""A server-rendered SVG line chart: no JavaScript, nothing to vendor, works offline."""

from collections import defaultdict
from datetime import datetime
from html import escape

from .schemas import MetricsQueryResult

WIDTH, HEIGHT = 760, 280
LEFT, RIGHT, TOP, BOTTOM = 78, 16, 16, 40
PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d")


def series_label(labels: dict[str, str]) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}" if labels else "series"


def _format_value(value: float) -> str:
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    if magnitude >= 1e9 or magnitude < 1e-3:
        return f"{value:.3g}"
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:.3g}k"
    return f"{value:.4g}"


def _format_time(moment: datetime, span_seconds: float) -> str:
    return moment.strftime("%Y-%m-%d %H:%M" if span_seconds > 86400 else "%H:%M:%S")


def render_svg(result: MetricsQueryResult) -> str:
    """The chart as an SVG string (all text escaped); empty string when there is nothing to draw."""
    if result.is_empty:
        return ""
    grouped: dict[tuple, list] = defaultdict(list)
    for point in result.datapoints:
        grouped[tuple(sorted(point.labels.items()))].append(point)
    start = result.time_range.start_time.timestamp()
    end = max(result.time_range.end_time.timestamp(), start + 1)
    low = min(p.value for p in result.datapoints)
    high = max(p.value for p in result.datapoints)
    if high == low:
        low, high = low - (abs(low) * 0.1 or 1), high + (abs(high) * 0.1 or 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(ts: float) -> float:
        return LEFT + (ts - start) / (end - start) * plot_w

    def y(value: float) -> float:
        return TOP + (1 - (value - low) / (high - low)) * plot_h

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'class="nlq-chart" aria-label="{escape(result.metric_name)} over time">',
             f"<title>{escape(result.metric_name)} ({escape(result.unit or 'no unit')})</title>",
             f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#ccc"/>']
    for fraction in (0, 0.5, 1):
        value = low + (high - low) * fraction
        yy = y(value)
        parts.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{LEFT - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11">'
                     f"{escape(_format_value(value))}</text>")
    span = end - start
    for fraction, anchor in ((0, "start"), (0.5, "middle"), (1, "end")):
        moment = datetime.fromtimestamp(start + span * fraction, tz=result.time_range.start_time.tzinfo)
        parts.append(f'<text x="{LEFT + plot_w * fraction:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="{anchor}" '
                     f'font-size="11">{escape(_format_time(moment, span))}</text>')
    for index, (labels, points) in enumerate(grouped.items()):
        colour = PALETTE[index % len(PALETTE)]
        coords = " ".join(f"{x(p.timestamp.timestamp()):.1f},{y(p.value):.1f}" for p in points)
        name = escape(series_label(dict(labels)))
        if len(points) == 1:
            cx, cy = coords.split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"><title>{name}</title></circle>')
        else:
            parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{coords}">'
                         f"<title>{name}</title></polyline>")
    parts.append("</svg>")
    return "".join(parts)


def legend(result: MetricsQueryResult) -> list[tuple[str, str]]:
    seen: dict[tuple, None] = {}
    for point in result.datapoints:
        seen.setdefault(tuple(sorted(point.labels.items())), None)
    return [(PALETTE[i % len(PALETTE)], series_label(dict(labels))) for i, labels in enumerate(seen)]
