"""The report's plots as geometry: bars, ticks, a line and markers in an SVG's user units.

Pure and deterministic (coordinates rounded to 0.1 unit, labels formatted the same way
every time); the HTML template only writes these out as `<rect>`, `<polyline>` and
`<circle>` elements, so no plotting library and nothing fetched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from openenvgen_schemas.doctor_report import CapacityPoint

WIDTH, HEIGHT = 480.0, 240.0
LEFT, RIGHT, TOP, BOTTOM = 56.0, 16.0, 16.0, 40.0
"""The plot area's margins: room for the y tick labels (left) and the x ones (bottom)."""
MAX_BINS = 20


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    """The bar's range and count, shown as its tooltip."""


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    refused: bool
    label: str


@dataclass(frozen=True)
class Plot:
    """One plot: `kind` (a CSS class), its axes' labels and ticks, and its marks; `empty`
    when there was nothing to draw (the page says so instead)."""

    kind: str
    title: str
    x_label: str
    y_label: str
    x_ticks: tuple[Tick, ...] = ()
    y_ticks: tuple[Tick, ...] = ()
    bars: tuple[Bar, ...] = ()
    line: str = ""
    """A polyline's `points` attribute."""
    markers: tuple[Marker, ...] = ()
    width: float = WIDTH
    height: float = HEIGHT
    left: float = LEFT
    top: float = TOP
    plot_width: float = WIDTH - LEFT - RIGHT
    plot_height: float = HEIGHT - TOP - BOTTOM

    @property
    def empty(self) -> bool:
        return not (self.bars or self.markers)

    @property
    def bottom(self) -> float:
        return self.top + self.plot_height


def number(value: float) -> str:
    """A tick or tooltip number: 3 significant digits, no exponent below a million."""
    if value == 0:
        return "0"
    if abs(value) >= 1e6 or abs(value) < 1e-3:
        return f"{value:.2e}"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _round(value: float) -> float:
    return round(value, 1) + 0.0  # + 0.0: never "-0.0"


def histogram(values: Sequence[float], bins: int | None = None) -> list[tuple[float, float, int]]:
    """`(low, high, count)` per bin over the values' range; about √n bins (at most MAX_BINS);
    one bin of width 1 around a single distinct value; none for no values."""
    if not values:
        return []
    low, high = min(values), max(values)
    if low == high:
        return [(low - 0.5, high + 0.5, len(values))]
    count = bins or max(1, min(MAX_BINS, math.ceil(math.sqrt(len(values)))))
    width = (high - low) / count
    counts = [0] * count
    for value in values:
        counts[min(count - 1, int((value - low) / width))] += 1
    return [(low + i * width, low + (i + 1) * width, n) for i, n in enumerate(counts)]


def _count_ticks(top: int, plot: Plot) -> tuple[Tick, ...]:
    steps = sorted({0, math.ceil(top / 2), top})
    return tuple(Tick(_round(plot.bottom - plot.plot_height * s / top), str(s)) for s in steps)


def histogram_plot(kind: str, title: str, values: Sequence[float], x_label: str) -> Plot:
    """A histogram of `values`, its y axis the count."""
    plot = Plot(kind=kind, title=title, x_label=x_label, y_label="count")
    counted = histogram(values)
    if not counted:
        return plot
    low, high, tallest = counted[0][0], counted[-1][1], max(n for _, _, n in counted)
    span = plot.plot_width / len(counted)
    bars = tuple(
        Bar(
            x=_round(plot.left + i * span + 1),
            y=_round(plot.bottom - plot.plot_height * n / tallest),
            width=_round(max(span - 2, 1.0)),
            height=_round(plot.plot_height * n / tallest),
            label=f"{number(lo)} – {number(hi)}: {n}",
        )
        for i, (lo, hi, n) in enumerate(counted)
    )
    x_ticks = tuple(
        Tick(_round(plot.left + plot.plot_width * f), number(low + (high - low) * f)) for f in (0.0, 0.5, 1.0)
    )
    return Plot(
        kind=kind,
        title=title,
        x_label=x_label,
        y_label="count",
        bars=bars,
        x_ticks=x_ticks,
        y_ticks=_count_ticks(tallest, plot),
    )


def capacity_plot(points: Sequence[CapacityPoint]) -> Plot:
    """Median reset latency against sessions open at once; a refused step is a red marker."""
    plot = Plot(kind="capacity", title="Capacity curve", x_label="sessions open at once", y_label="reset ms")
    if not points:
        return plot
    most = max(max(p.sessions for p in points), 1)
    latencies = [p.latency_ms for p in points if p.latency_ms is not None]
    slowest = max(latencies) if latencies and max(latencies) > 0 else 1.0

    def at(point: CapacityPoint) -> tuple[float, float]:
        latency = point.latency_ms or 0.0
        return (
            _round(plot.left + plot.plot_width * point.sessions / most),
            _round(plot.bottom - plot.plot_height * latency / slowest),
        )

    ordered = sorted(points, key=lambda p: p.sessions)
    markers = tuple(
        Marker(
            *at(p),
            refused=bool(p.refused or p.failed),
            label=f"{p.sessions} sessions: {p.ok} ok, {p.refused} refused, {p.failed} failed"
            + (f", {number(p.latency_ms)} ms" if p.latency_ms is not None else ""),
        )
        for p in ordered
    )
    line = " ".join(f"{m.x},{m.y}" for m, p in zip(markers, ordered, strict=True) if p.latency_ms is not None)
    x_ticks = tuple(
        Tick(_round(plot.left + plot.plot_width * s / most), str(s)) for s in sorted({0, math.ceil(most / 2), most})
    )
    y_ticks = tuple(Tick(_round(plot.bottom - plot.plot_height * f), number(slowest * f)) for f in (0.0, 0.5, 1.0))
    return Plot(
        kind="capacity",
        title=plot.title,
        x_label=plot.x_label,
        y_label=plot.y_label,
        markers=markers,
        line=line,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
    )
