"""Server-rendered SVG charts for the console and the metrics-query page: no JavaScript to vendor,
readable without a network, and every text escaped here, so templates may mark the result safe.
One palette, so a series has the same colour in a chart and in the legend beside it.

Each chart carries role="img" and an aria-label that states its data in words, so a screen reader
gets the figures a sighted reviewer reads off the bars and lines."""

from datetime import datetime
from html import escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4d7c0f", "#be185d")
PASS_COLOUR, FAIL_COLOUR = "#16a34a", "#dc2626"


def percent(value: float) -> str:
    return f"{value:.0%}"


def compact_number(value: float) -> str:
    """A measured value short enough for an axis: 1.2k, 3.4M, 0.000123 as 0.000123 (3 digits)."""
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


def legend(names: list[str]) -> list[tuple[str, str]]:
    """(colour, name) for each series, the colours the charts here draw them in."""
    return [(PALETTE[n % len(PALETTE)], name) for n, name in enumerate(names)]


def _svg(width: int, height: int, label: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{escape(label)}" font-family="sans-serif" font-size="12">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def bar_chart(
    bars: list[tuple[str, float, str]], *, max_value: float = 1.0, value_format=percent, title: str = ""
) -> str:
    """Horizontal bars: (label, value, caption shown after the value). Values are clipped to
    0..max_value for drawing only; the printed value is the real one."""
    if not bars:
        return ""
    label_w, bar_w, row_h, width = 130, 300, 26, 620
    height = row_h * len(bars) + 8
    body = []
    for n, (label, value, caption) in enumerate(bars):
        y = 4 + n * row_h
        share = 0.0 if max_value <= 0 else max(0.0, min(1.0, value / max_value))
        colour = PASS_COLOUR if share >= 0.75 else ("#d97706" if share >= 0.5 else FAIL_COLOUR)
        body.append(
            f'<text x="{label_w - 6}" y="{y + 16}" text-anchor="end" fill="currentColor">{escape(label)}</text>'
        )
        body.append(f'<rect x="{label_w}" y="{y + 3}" width="{bar_w}" height="{row_h - 8}" fill="#e5e7eb"/>')
        body.append(
            f'<rect x="{label_w}" y="{y + 3}" width="{share * bar_w:.1f}" height="{row_h - 8}" fill="{colour}"/>'
        )
        body.append(
            f'<text x="{label_w + bar_w + 8}" y="{y + 16}" fill="currentColor">'
            f"{escape(value_format(value))} {escape(caption)}</text>"
        )
    words = "; ".join(f"{label} {value_format(value)} {caption}".strip() for label, value, caption in bars)
    return _svg(width, height, f"{title}: {words}" if title else words, body)


def column_chart(columns: list[tuple[str, int]], *, title: str = "") -> str:
    """Vertical columns of counts (a distribution), each labelled with its count."""
    if not columns:
        return ""
    width, height, left, bottom, top = 520, 220, 36, 34, 18
    plot_h = height - bottom - top
    slot = (width - left - 10) / len(columns)
    peak = max(count for _, count in columns) or 1
    body = [f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#9ca3af"/>']
    for n, (label, count) in enumerate(columns):
        h = plot_h * count / peak
        x = left + n * slot + slot * 0.15
        body.append(
            f'<rect x="{x:.1f}" y="{height - bottom - h:.1f}" width="{slot * 0.7:.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[n % len(PALETTE)]}"/>'
        )
        body.append(
            f'<text x="{x + slot * 0.35:.1f}" y="{height - bottom - h - 4:.1f}" text-anchor="middle" '
            f'fill="currentColor">{count}</text>'
        )
        body.append(
            f'<text x="{x + slot * 0.35:.1f}" y="{height - bottom + 16}" text-anchor="middle" '
            f'fill="currentColor">{escape(label)}</text>'
        )
    words = "; ".join(f"{label}: {count}" for label, count in columns)
    return _svg(width, height, f"{title}: {words}" if title else words, body)


def line_chart(
    series: dict[str, list[tuple[datetime, float]]], *, y_max: float = 1.0, value_format=percent, title: str = ""
) -> str:
    """One line per series over time, y from 0 to y_max, points marked (a series may have one point)."""
    points = [p for values in series.values() for p in values]
    if not points:
        return ""
    width, height, left, right, top, bottom = 620, 240, 46, 14, 12, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    t0 = min(t for t, _ in points).timestamp()
    t1 = max(t for t, _ in points).timestamp()
    span = (t1 - t0) or 1.0

    def xy(moment: datetime, value: float) -> tuple[float, float]:
        x = left + (plot_w * (moment.timestamp() - t0) / span if t1 > t0 else plot_w / 2)
        y = top + plot_h * (1 - max(0.0, min(1.0, value / y_max)))
        return x, y

    body = []
    for tick in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - tick)
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#e5e7eb"/>')
        body.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="currentColor">'
            f"{escape(value_format(tick * y_max))}</text>"
        )
    fmt = "%Y-%m-%d" if span > 86400 else "%H:%M"
    first, last = min(t for t, _ in points), max(t for t, _ in points)
    body.append(f'<text x="{left}" y="{height - bottom + 18}" fill="currentColor">{first.strftime(fmt)}</text>')
    if t1 > t0:
        body.append(
            f'<text x="{width - right}" y="{height - bottom + 18}" text-anchor="end" fill="currentColor">'
            f"{last.strftime(fmt)}</text>"
        )
    legend_x = left
    for n, (name, values) in enumerate(series.items()):
        colour = PALETTE[n % len(PALETTE)]
        coords = [xy(t, v) for t, v in sorted(values)]
        if len(coords) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)
            body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        body.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in coords)
        body.append(f'<rect x="{legend_x}" y="{height - 14}" width="10" height="10" fill="{colour}"/>')
        body.append(f'<text x="{legend_x + 14}" y="{height - 5}" fill="currentColor">{escape(name)}</text>')
        legend_x += 24 + 7 * len(name)
    words = "; ".join(
        f"{name}: " + ", ".join(f"{t.strftime(fmt)} {value_format(v)}" for t, v in sorted(values))
        for name, values in series.items()
    )
    return _svg(width, height, f"{title}: {words}" if title else words, body)


def metric_chart(
    series: list[tuple[str, list[tuple[datetime, float]]]], *, start: datetime, end: datetime, title: str, unit: str
) -> str:
    """A measured quantity over a time range (the metrics-query page): one line per series, points
    in the order given, y spanning the values' own range (not 0..1) with compact numbers, times at
    the start, middle and end of the range. No width or height: the page scales it to its column."""
    points = [point for _, values in series for point in values]
    if not points:
        return ""
    width, height, left, right, top, bottom = 760, 280, 78, 16, 16, 40
    t_start = start.timestamp()
    t_end = max(end.timestamp(), t_start + 1)
    low, high = min(v for _, v in points), max(v for _, v in points)
    if high == low:
        low, high = low - (abs(low) * 0.1 or 1), high + (abs(high) * 0.1 or 1)
    plot_w, plot_h = width - left - right, height - top - bottom

    def x(ts: float) -> float:
        return left + (ts - t_start) / (t_end - t_start) * plot_w

    def y(value: float) -> float:
        return top + (1 - (value - low) / (high - low)) * plot_h

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" role="img" '
        f'class="nlq-chart" aria-label="{escape(title)} over time">',
        f"<title>{escape(title)} ({escape(unit or 'no unit')})</title>",
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#ccc"/>',
    ]
    for fraction in (0, 0.5, 1):
        value = low + (high - low) * fraction
        yy = y(value)
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#eee"/>')
        parts.append(
            f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11">'
            f"{escape(compact_number(value))}</text>"
        )
    span = t_end - t_start
    fmt = "%Y-%m-%d %H:%M" if span > 86400 else "%H:%M:%S"
    for fraction, anchor in ((0, "start"), (0.5, "middle"), (1, "end")):
        moment = datetime.fromtimestamp(t_start + span * fraction, tz=start.tzinfo)
        parts.append(
            f'<text x="{left + plot_w * fraction:.1f}" y="{height - bottom + 16}" text-anchor="{anchor}" '
            f'font-size="11">{escape(moment.strftime(fmt))}</text>'
        )
    for (name, values), (colour, _) in zip(series, legend([name for name, _ in series]), strict=True):
        coords = " ".join(f"{x(t.timestamp()):.1f},{y(v):.1f}" for t, v in values)
        if len(values) == 1:
            cx, cy = coords.split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"><title>{escape(name)}</title></circle>')
        else:
            parts.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.6" points="{coords}">'
                f"<title>{escape(name)}</title></polyline>"
            )
    parts.append("</svg>")
    return "".join(parts)
