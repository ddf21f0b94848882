"""apps.core.charts: the one SVG chart module the console and the metrics-query page both draw with."""

import re
from datetime import UTC, datetime, timedelta

from apps.core.charts import PALETTE, compact_number, legend, line_chart, metric_chart

T0 = datetime(2026, 1, 1, 12, tzinfo=UTC)


def test_metric_chart_draws_each_series_in_its_legend_colour():
    series = [
        ('{code="200"}', [(T0, 1200.0), (T0 + timedelta(minutes=5), 1800.0)]),
        ('{code="500"}', [(T0 + timedelta(minutes=1), 3.0)]),
    ]
    svg = metric_chart(series, start=T0, end=T0 + timedelta(minutes=10), title="http_requests_total", unit="requests")
    # A line for the series with two points, a dot for the one with one: each in the colour the
    # legend beside the chart shows for it, so the reader can tell them apart.
    (colour_200, _), (colour_500, _) = legend([name for name, _ in series])
    assert re.search(f'<polyline fill="none" stroke="{colour_200}"[^>]*>', svg)
    assert re.search(f'<circle [^>]*fill="{colour_500}"><title>{{code=&quot;500&quot;}}</title>', svg)
    # The y axis spans the values' own range, in compact numbers; times at start, middle and end.
    assert ">1.8k</text>" in svg and ">3</text>" in svg
    assert ">12:00:00</text>" in svg and ">12:10:00</text>" in svg


def test_metric_chart_escapes_names_and_draws_nothing_without_points():
    svg = metric_chart(
        [('{job="<script>"}', [(T0, 1.0)])], start=T0, end=T0 + timedelta(hours=1), title="m<x>", unit=""
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "m&lt;x&gt; (no unit)" in svg
    assert metric_chart([("series", [])], start=T0, end=T0, title="m", unit="") == ""


def test_a_flat_series_gets_a_visible_range_around_its_value():
    svg = metric_chart(
        [("series", [(T0, 0.0), (T0 + timedelta(hours=1), 0.0)])],
        start=T0,
        end=T0 + timedelta(hours=1),
        title="m",
        unit="",
    )
    # high == low would divide by zero; the axis is widened to -1..1 and the line sits in the middle.
    assert ">-1</text>" in svg and ">1</text>" in svg
    assert 'points="78.0,128.0 744.0,128.0"' in svg


def test_console_and_metric_charts_share_one_palette():
    day = timedelta(days=1)
    console = line_chart({"a": [(T0, 0.5)], "b": [(T0 + day, 0.7)]})
    metric = metric_chart([("a", [(T0, 0.5)]), ("b", [(T0 + day, 0.7)])], start=T0, end=T0 + day, title="m", unit="")
    assert PALETTE[0] in console and PALETTE[1] in console
    assert PALETTE[0] in metric and PALETTE[1] in metric
    assert [colour for colour, _ in legend(["a", "b"])] == list(PALETTE[:2])


def test_compact_number():
    assert [compact_number(v) for v in (0, 0.5, 1234, 2_500_000, 3e9, 0.0001)] == [
        "0",
        "0.5",
        "1.23k",
        "2.5M",
        "3e+09",
        "0.0001",
    ]
