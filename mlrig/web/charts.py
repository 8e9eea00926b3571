"""Charts as inline SVG, drawn on the server: no JavaScript, no external assets, readable without CSS.

Why not plotly or a JS chart library: every page must work offline and without JavaScript (the
numbers are also in plain HTML tables beside each chart), and plotly.js alone is ~4.7 MB to serve
and parse per page on a 2-core machine. The charts here are four shapes (a stacked bar, grouped bars
with error whiskers, lines/points on linear or log axes) in the style of
`mlrig.diagnose.report.svg_chart`. Each `<svg>` has `role="img"`, a `<title>` and a `<desc>` for screen
readers, scales with its container (viewBox), and carries `data-chart` / `data-value` attributes so a
test can read what was drawn. Colours: the Okabe–Ito colour-blind-safe palette (Okabe & Ito 2008).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#999933", "#000000")
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def fmt_tick(v: float) -> str:
    """Short axis label: 0.5, 12, 1.5k, 20M."""
    a = abs(v)
    if a >= 1e9:
        return f"{v / 1e9:g}G"
    if a >= 1e6:
        return f"{v / 1e6:g}M"
    if a >= 1e4:
        return f"{v / 1e3:g}k"
    if a >= 100 or v == int(v):
        return f"{v:,.0f}"
    return f"{v:.3g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About `n` round ticks (1, 2 or 5 × 10^k apart) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks: list[float] = []
    t = first
    while t <= hi + step * 1e-9 and len(ticks) < 50:
        ticks.append(round(t, 12))
        t += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Decades between lo and hi; 1-2-5 within them when the range is under three decades."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1, 2, 5) if b - a <= 3 else (1,)
    return [m * 10.0**e for e in range(a, b + 1) for m in mults if lo <= m * 10.0**e <= hi * (1 + 1e-9)]


@dataclass
class Axis:
    lo: float
    hi: float
    log: bool = False
    label: str = ""

    def ticks(self) -> list[float]:
        return log_ticks(self.lo, self.hi) if self.log else nice_ticks(self.lo, self.hi)

    def frac(self, v: float) -> float:
        """Position of v along the axis, 0..1 (clamped)."""
        if self.log:
            v = max(v, self.lo)
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return min(1.0, max(0.0, f))


def axis_for(values: Sequence[float], *, log: bool = False, label: str = "", zero: bool = True,
             pad: float = 0.08) -> Axis:
    """An axis spanning `values` (from 0 for linear axes unless zero=False), padded a little."""
    vals = [v for v in values if v is not None and math.isfinite(v) and (v > 0 or not log)]
    if not vals:
        return Axis(1.0, 10.0, log, label) if log else Axis(0.0, 1.0, log, label)
    lo, hi = min(vals), max(vals)
    if log:
        lo, hi = lo / (1 + 3 * pad), hi * (1 + 3 * pad)
        if hi / lo < 10:
            mid = math.sqrt(lo * hi)
            lo, hi = mid / math.sqrt(10), mid * math.sqrt(10)
        return Axis(lo, hi, True, label)
    if zero:
        lo = min(0.0, lo)
    if hi == lo:
        hi = lo + (abs(lo) or 1.0)
    hi += (hi - lo) * pad
    ticks = nice_ticks(lo, hi)
    return Axis(lo, max(hi, ticks[-1]), False, label)


def _open(kind: str, title: str, desc: str, width: int, height: int) -> list[str]:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" data-chart="{escape(kind)}" role="img" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {FONT}>',
            f"<title>{escape(title)}</title>", f"<desc>{escape(desc)}</desc>",
            f'<text x="8" y="16" font-weight="bold" font-size="13">{escape(title)}</text>']


def stacked_bar(title: str, segments: Sequence[tuple[str, float]], capacity: float | None, unit: str = "GiB",
                width: int = 720) -> str:
    """One horizontal bar made of `segments` (label, value), with the capacity as a marked line."""
    segs = [(n, v) for n, v in segments if v and v > 0]
    total = sum(v for _, v in segs)
    ax = axis_for([total, capacity or 0.0])
    left, right, top, bar_h = 12, 16, 30, 34
    legend_rows = math.ceil(len(segs) / 3) if segs else 0
    height = top + bar_h + 34 + 18 * legend_rows + 8
    w = width - left - right
    desc = f"total {total:.2f} {unit}" + (f" of {capacity:.2f} {unit}" if capacity else "") + ": " + ", ".join(
        f"{n} {v:.2f} {unit}" for n, v in segs)
    out = _open("stacked-bar", title, desc, width, height)
    x = float(left)
    for i, (name, v) in enumerate(segs):
        seg_w = w * v / (ax.hi - ax.lo)  # a linear axis from 0
        out.append(f'<rect x="{x:.1f}" y="{top}" width="{max(seg_w, 0.5):.1f}" height="{bar_h}" '
                   f'fill="{PALETTE[i % len(PALETTE)]}" data-name="{escape(name)}" data-value="{v:.4g}">'
                   f"<title>{escape(name)}: {v:.2f} {unit}</title></rect>")
        x += seg_w
    base = top + bar_h
    for t in ax.ticks():
        tx = left + w * ax.frac(t)
        out.append(f'<line x1="{tx:.1f}" y1="{base}" x2="{tx:.1f}" y2="{base + 4}" stroke="#555"/>'
                   f'<text x="{tx:.1f}" y="{base + 16}" text-anchor="middle">{fmt_tick(t)}</text>')
    out.append(f'<text x="{left + w}" y="{base + 30}" text-anchor="end">{escape(unit)}</text>')
    if capacity:
        cx = left + w * ax.frac(capacity)
        out.append(f'<line x1="{cx:.1f}" y1="{top - 6}" x2="{cx:.1f}" y2="{base + 6}" stroke="#000" '
                   f'stroke-width="2" stroke-dasharray="5 3" data-name="capacity" data-value="{capacity:.4g}"/>'
                   f'<text x="{cx - 4:.1f}" y="{top - 8}" text-anchor="end">capacity {capacity:.1f} {unit}</text>')
    for i, (name, v) in enumerate(segs):
        lx, ly = left + (i % 3) * (w / 3), base + 48 + 18 * (i // 3)
        out.append(f'<rect x="{lx:.1f}" y="{ly - 10}" width="10" height="10" fill="{PALETTE[i % len(PALETTE)]}"/>'
                   f'<text x="{lx + 14:.1f}" y="{ly}">{escape(name)} {v:.2f}</text>')
    out.append("</svg>")
    return "\n".join(out)


def bars(title: str, labels: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], unit: str,
         bands: Sequence[Sequence[float | None]] | None = None, ref: tuple[str, float] | None = None,
         width: int = 720) -> str:
    """Grouped horizontal bars: one group per label, one bar per series; `bands` (relative, e.g. 0.2 for
    ±20 %) draw whiskers; `ref` is a labelled vertical line (a capacity or a target). None is no bar."""
    values = [v for _, vs in series for v in vs if v is not None]
    hi_vals = values + [v * (1 + (b or 0)) for (_, vs), bs in zip(series, bands or [[]] * len(series), strict=False)
                        for v, b in zip(vs, bs, strict=False) if v is not None]
    ax = axis_for([*hi_vals, ref[1] if ref else 0.0])
    label_w = min(260, 12 + 7 * max((len(lbl) for lbl in labels), default=4))
    left, right, top = label_w, 20, 34
    bar_h, gap = 14, 10
    group_h = bar_h * len(series) + gap
    plot_h = group_h * len(labels)
    legend = 18 if len(series) > 1 else 0
    height = top + plot_h + 32 + legend
    w = width - left - right
    out = _open("bars", title, f"{', '.join(n for n, _ in series)} per {len(labels)} variants, {unit}", width, height)
    for t in ax.ticks():
        tx = left + w * ax.frac(t)
        out.append(f'<line x1="{tx:.1f}" y1="{top}" x2="{tx:.1f}" y2="{top + plot_h}" stroke="#ddd"/>'
                   f'<text x="{tx:.1f}" y="{top + plot_h + 14}" text-anchor="middle">{fmt_tick(t)}</text>')
    out.append(f'<text x="{left + w}" y="{top + plot_h + 28}" text-anchor="end">{escape(unit)}</text>')
    for gi, lbl in enumerate(labels):
        gy = top + gi * group_h
        out.append(f'<text x="{left - 6}" y="{gy + group_h / 2:.1f}" text-anchor="end">{escape(lbl[:40])}</text>')
        for si, (name, vs) in enumerate(series):
            v = vs[gi] if gi < len(vs) else None
            y = gy + si * bar_h
            if v is None:
                out.append(f'<text x="{left + 4}" y="{y + bar_h - 3}" fill="#777">—</text>')
                continue
            bw = w * ax.frac(v)
            colour = PALETTE[si % len(PALETTE)]
            out.append(f'<rect x="{left}" y="{y}" width="{max(bw, 0.5):.1f}" height="{bar_h - 2}" fill="{colour}" '
                       f'data-name="{escape(name)}" data-label="{escape(lbl)}" data-value="{v:.6g}">'
                       f"<title>{escape(lbl)} · {escape(name)}: {fmt_tick(v)} {escape(unit)}</title></rect>")
            b = bands[si][gi] if bands and gi < len(bands[si]) else None
            if b:
                x0, x1 = left + w * ax.frac(v * (1 - b)), left + w * ax.frac(v * (1 + b))
                cy = y + (bar_h - 2) / 2
                out.append(f'<path d="M{x0:.1f},{cy:.1f}H{x1:.1f}M{x0:.1f},{cy - 4:.1f}v8M{x1:.1f},{cy - 4:.1f}v8" '
                           f'stroke="#222" fill="none"/>')
    if ref:
        rx = left + w * ax.frac(ref[1])
        out.append(f'<line x1="{rx:.1f}" y1="{top - 4}" x2="{rx:.1f}" y2="{top + plot_h}" stroke="#000" '
                   f'stroke-width="2" stroke-dasharray="5 3" data-name="{escape(ref[0])}" data-value="{ref[1]:.4g}"/>'
                   f'<text x="{rx:.1f}" y="{top - 8}" text-anchor="middle">{escape(ref[0])}</text>')
    if legend:
        for si, (name, _) in enumerate(series):
            lx = left + si * 160
            ly = top + plot_h + 44
            out.append(f'<rect x="{lx}" y="{ly - 10}" width="10" height="10" fill="{PALETTE[si % len(PALETTE)]}"/>'
                       f'<text x="{lx + 14}" y="{ly}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out)


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    kind: str = "line"  # line | points
    dashed: bool = False
    labels: list[str] = field(default_factory=list)  # per point (points only)
    colour: str | None = None


@dataclass
class Mark:
    """A vertical (axis='x') or horizontal (axis='y') reference line with a label."""

    axis: str
    value: float
    label: str


def xy(title: str, series: Sequence[Series], x: Axis | None = None, y: Axis | None = None, *,
       x_label: str = "", y_label: str = "", log_x: bool = False, log_y: bool = False,
       marks: Sequence[Mark] = (), width: int = 720, height: int = 320,
       x_fmt: Callable[[float], str] = fmt_tick) -> str:
    """Lines and points on linear or log axes, with reference marks (targets, break-even, ridge point)."""
    xs = [p[0] for s in series for p in s.points] + [m.value for m in marks if m.axis == "x"]
    ys = [p[1] for s in series for p in s.points] + [m.value for m in marks if m.axis == "y"]
    x = x or axis_for(xs, log=log_x, zero=not log_x)
    y = y or axis_for(ys, log=log_y)
    x.label, y.label = x_label or x.label, y_label or y.label
    left, right, top, bottom = 64, 20, 30, 44
    legend_rows = math.ceil(len(series) / 3)
    total_h = height + 18 * legend_rows
    w, h = width - left - right, height - top - bottom
    desc = "; ".join(f"{s.name}: {len(s.points)} points" for s in series)
    out = _open("xy", title, desc, width, total_h)

    def px(v: float) -> float:
        return left + w * x.frac(v)

    def py(v: float) -> float:
        return top + h - h * y.frac(v)

    out.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="none" stroke="#999"/>')
    for t in x.ticks():
        out.append(f'<line x1="{px(t):.1f}" y1="{top}" x2="{px(t):.1f}" y2="{top + h}" stroke="#eee"/>'
                   f'<text x="{px(t):.1f}" y="{top + h + 14}" text-anchor="middle">{escape(x_fmt(t))}</text>')
    for t in y.ticks():
        out.append(f'<line x1="{left}" y1="{py(t):.1f}" x2="{left + w}" y2="{py(t):.1f}" stroke="#eee"/>'
                   f'<text x="{left - 4}" y="{py(t) + 4:.1f}" text-anchor="end">{fmt_tick(t)}</text>')
    out.append(f'<text x="{left + w / 2:.1f}" y="{top + h + 32}" text-anchor="middle">{escape(x.label)}</text>'
               f'<text x="14" y="{top + h / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 14 {top + h / 2:.1f})">{escape(y.label)}</text>')
    for m in marks:
        if m.axis == "x":
            mx = px(m.value)
            out.append(f'<line x1="{mx:.1f}" y1="{top}" x2="{mx:.1f}" y2="{top + h}" stroke="#000" '
                       f'stroke-dasharray="5 3" data-name="{escape(m.label)}" data-value="{m.value:.6g}"/>'
                       f'<text x="{mx + 4:.1f}" y="{top + 12}">{escape(m.label)}</text>')
        else:
            my = py(m.value)
            out.append(f'<line x1="{left}" y1="{my:.1f}" x2="{left + w}" y2="{my:.1f}" stroke="#000" '
                       f'stroke-dasharray="5 3" data-name="{escape(m.label)}" data-value="{m.value:.6g}"/>'
                       f'<text x="{left + w - 4}" y="{my - 4:.1f}" text-anchor="end">{escape(m.label)}</text>')
    placed: list[tuple[float, float]] = []  # point labels drawn so far: skip one that would overlap
    for i, s in enumerate(series):
        c = s.colour or PALETTE[i % len(PALETTE)]
        pts = [(a, b) for a, b in s.points if math.isfinite(a) and math.isfinite(b)]
        if s.kind == "line" and pts:
            d = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in pts)
            dash = ' stroke-dasharray="6 4"' if s.dashed else ""
            out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{d}" '
                       f'data-name="{escape(s.name)}"/>')
        if s.kind == "points":
            for j, (a, b) in enumerate(pts):
                lbl = s.labels[j] if j < len(s.labels) else ""
                out.append(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="5" fill="{c}" stroke="#fff" '
                           f'data-name="{escape(s.name)}" data-x="{a:.6g}" data-y="{b:.6g}">'
                           f"<title>{escape(lbl or s.name)}: {fmt_tick(a)}, {fmt_tick(b)}</title></circle>")
                lx, ly = px(a) + 7, py(b) - 6
                if lbl and len(pts) <= 12 and all(abs(ly - y0) > 13 or abs(lx - x0) > 7 * len(lbl)
                                                  for x0, y0 in placed):
                    placed.append((lx, ly))
                    out.append(f'<text x="{lx:.1f}" y="{ly:.1f}" font-size="11">{escape(lbl)}</text>')
    for i, s in enumerate(series):
        c = s.colour or PALETTE[i % len(PALETTE)]
        lx, ly = left + (i % 3) * (w / 3), height + 4 + 18 * (i // 3)
        swatch = (f'<circle cx="{lx + 5:.1f}" cy="{ly - 5}" r="5" fill="{c}"/>' if s.kind == "points" else
                  f'<line x1="{lx:.1f}" y1="{ly - 5}" x2="{lx + 12:.1f}" y2="{ly - 5}" stroke="{c}" stroke-width="3"/>')
        out.append(f'{swatch}<text x="{lx + 16:.1f}" y="{ly}">{escape(s.name)}</text>')
    out.append("</svg>")
    return "\n".join(out)
