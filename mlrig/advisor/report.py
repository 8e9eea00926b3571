"""Reports for a budget holder: Markdown and self-contained HTML (inline SVG charts, no network).

The business case: the options and what they cost, local vs cloud break-even, and how the answer moves
with utilisation and price (sensitivity). Rendering only; all figures come from `recommend` and
`mlrig.advisor.cost`.
"""

from __future__ import annotations

import html
from typing import Any

from pydantic import BaseModel

from mlrig.advisor.cost import (
    HOURS_PER_MONTH,
    CloudSpec,
    LocalSpec,
    SensitivityRow,
    Usage,
    break_even_hours_per_month,
    break_even_text,
    sensitivity,
)
from mlrig.advisor.recommend import RankedOption, Recommendation


class BusinessCase(BaseModel):
    buy: str
    rent: str
    break_even_hours_per_month: float | None
    busy_hours_per_month: float
    sensitivity: list[SensitivityRow]


def business_case(rec: Recommendation, book: Any) -> BusinessCase | None:
    """Best feasible buy vs best feasible rent: break-even and the sensitivity table."""
    feas = [o for o in rec.options if o.feasible]
    buy = next((o for o in feas if o.kind == "buy" and o.category != "owned"), None)
    rent = next((o for o in feas if o.kind == "rent"), None)
    if buy is None or rent is None or rent.usd_per_hour is None:
        return None
    from mlrig.advisor.cost import PurchaseItem

    a = book.assumptions
    # The box exactly as recommend priced it (used GPUs at the used resale decline); the fallbacks
    # only serve Recommendation JSON written before these fields existed.
    items = buy.purchase_items or [
        PurchaseItem(name=buy.name, price_usd=buy.upfront_usd, annual_decline=a.resale_decline_new_per_year)]
    power_w = buy.busy_power_w if buy.busy_power_w is not None else _power(buy, a, rec.constraints.gpu_power_fraction)
    local = LocalSpec(
        name=buy.name,
        items=items,
        power_w=power_w,
        idle_power_w=buy.idle_power_w or 0.0,
        upkeep_fraction_per_year=a.upkeep_fraction_per_year,
    )
    cloud = CloudSpec(
        name=rent.name,
        usd_per_hour=rent.usd_per_hour,
        spot="(spot)" in rent.name,
        interruption_overhead=a.spot_interruption_overhead,
    )
    on = rec.constraints.on_hours_per_month
    usage = Usage(
        hours_per_month=min(rent.busy_hours_per_month, HOURS_PER_MONTH),
        on_hours_per_month=a.powered_on_hours_per_month if on is None else on,
        years=rec.years,
        usd_per_kwh=(
            rec.constraints.usd_per_kwh if rec.constraints.usd_per_kwh is not None else a.electricity_usd_per_kwh
        ),
    )
    return BusinessCase(
        buy=buy.name,
        rent=rent.name,
        busy_hours_per_month=rent.busy_hours_per_month,
        break_even_hours_per_month=break_even_hours_per_month(local, cloud, usage),
        sensitivity=sensitivity(local, cloud, usage),
    )


def _power(o: RankedOption, a: Any, gpu_power_fraction: float) -> float:
    """Busy wall power of a buy option, as recommend prices it: GPUs × TDP × draw fraction + rest of system."""
    from mlrig.advisor.build import UNKNOWN_GPU_TDP_W
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import MlrigError

    try:
        tdp = resolve_gpu(o.gpu).tdp_w or UNKNOWN_GPU_TDP_W
    except MlrigError:  # an unknown id only weakens the chart, never the report
        tdp = UNKNOWN_GPU_TDP_W
    return o.gpus * tdp * gpu_power_fraction + a.system_overhead_w


def render_markdown(rec: Recommendation, case: BusinessCase | None = None, top: int = 10) -> str:
    out = ["# Hardware business case", ""]
    out += [f"Workloads: {', '.join(rec.workloads)}. Objective: {rec.objective}; horizon {rec.years:g} years.", ""]
    out += ["## Summary", ""] + [f"- {s}" for s in rec.summary] + [""]
    out += [
        "## Options (best first)",
        "",
        "| # | option | buy/rent | GPUs | GPU mem GiB | upfront $ | $/month | total $ | speed | Pareto |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for o in [o for o in rec.options if o.feasible][:top]:
        out.append(
            f"| {o.rank} | {o.name} | {o.kind} | {o.gpus} | {o.total_gpu_memory_gib:.0f} | "
            f"{o.upfront_usd:,.0f} | {o.cost_per_month_usd:,.0f} | {o.total_cost_usd:,.0f} | "
            f"{o.speed} | {'★' if o.pareto else ''} |"
        )
    out.append("")
    out += [f"- {u}" for u in rec.uncertainty] + ([""] if rec.uncertainty else [])
    for o in [o for o in rec.options if o.feasible][:top]:
        out += [f"### {o.name}", ""] + [f"- {r}" for r in o.reasons] + [f"- ⚠ {w}" for w in o.warnings]
        out += [f"- build: {f.severity}: {f.what} — {f.fix}" for f in o.build_findings] + [""]
    if case:
        out += [
            "## Buy vs rent",
            "",
            f"{case.buy} vs {case.rent}: owning pays off {break_even_text(case.break_even_hours_per_month)};"
            f" planned usage is {case.busy_hours_per_month:,.0f} h/month.",
            "",
            "| busy h/month | price ×| local $/month | cloud $/month | cheaper |",
            "|---|---|---|---|---|",
        ]
        out += [
            f"| {r.hours_per_month:,.0f} | {r.price_factor:g} | {r.local_usd_per_month:,.0f} | "
            f"{r.cloud_usd_per_month:,.0f} | {r.cheaper} |"
            for r in case.sensitivity
        ]
        out.append("")
    out += ["## Prices and warnings", ""] + [f"- prices: {p}" for p in rec.prices_used]
    out += [f"- ⚠ price older than 6 months: {p}" for p in rec.stale_prices]
    out += [f"- assumption: {a}" for a in rec.assumptions]
    out += [f"- {w}" for w in rec.warnings] + [""]
    return "\n".join(out)


def _svg_scatter(opts: list[RankedOption], width: int = 640, height: int = 360) -> str:
    """Total cost (x, log) vs speed score (y); Pareto options filled."""
    import math

    pts = [o for o in opts if o.feasible and o.total_cost_usd > 0]
    if not pts:
        return ""
    lo, hi = math.log10(min(o.total_cost_usd for o in pts)), math.log10(max(o.total_cost_usd for o in pts))
    hi = hi if hi > lo else lo + 1
    pad = 50
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="12">total cost over horizon, $ '
        "(log scale)</text>",
        f'<text x="12" y="{height / 2}" font-size="12" transform="rotate(-90 12 {height / 2})" '
        'text-anchor="middle">speed relative to the fastest (tooltips: absolute)</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" stroke="black"/>',
        f'<line x1="{pad}" y1="10" x2="{pad}" y2="{height - pad}" stroke="black"/>',
    ]
    for o in pts:
        x = pad + (math.log10(o.total_cost_usd) - lo) / (hi - lo) * (width - pad - 20)
        y = height - pad - o.speed_score * (height - pad - 20)
        fill = "#d62728" if o.pareto else "#9fb7d9"
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="{fill}"><title>{html.escape(o.name)}: '
            f"${o.total_cost_usd:,.0f}, {html.escape(o.speed)}</title></circle>"
        )
        if o.pareto:
            parts.append(f'<text x="{x + 7:.1f}" y="{y - 6:.1f}" font-size="10">{html.escape(o.name[:32])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _svg_bars(opts: list[RankedOption], width: int = 640) -> str:
    """Cost per month of the top options."""
    rows = [o for o in opts if o.feasible][:10]
    if not rows:
        return ""
    h = 24 * len(rows) + 20
    vmax = max(o.cost_per_month_usd for o in rows) or 1.0
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{h}" role="img">']
    for i, o in enumerate(rows):
        w = (width - 330) * o.cost_per_month_usd / vmax
        y = 10 + i * 24
        color = "#2ca02c" if o.kind == "buy" else "#1f77b4"
        parts.append(
            f'<text x="0" y="{y + 14}" font-size="11">{html.escape(o.name[:44])}</text>'
            f'<rect x="260" y="{y}" width="{w:.1f}" height="18" fill="{color}"/>'
            f'<text x="{265 + w:.1f}" y="{y + 14}" font-size="11">${o.cost_per_month_usd:,.0f}/mo</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def render_html(rec: Recommendation, case: BusinessCase | None = None, top: int = 10) -> str:
    """One self-contained page: tables from the Markdown plus two inline SVG charts."""
    md = render_markdown(rec, case, top)
    body = []
    for line in md.splitlines():
        if line.startswith("# "):
            body.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{html.escape(line[3:])}</h2>")
            if line == "## Options (best first)":
                body.append("<p>Monthly cost (green: buy, blue: rent)</p>" + _svg_bars(rec.options))
                body.append("<p>Cost vs speed (red: Pareto front)</p>" + _svg_scatter(rec.options))
        elif line.startswith("### "):
            body.append(f"<h3>{html.escape(line[4:])}</h3>")
        elif line.startswith("|---"):
            continue
        elif line.startswith("|"):
            cells = [html.escape(c.strip()) for c in line.strip("|").split("|")]
            body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        elif line.startswith("- "):
            body.append(f"<li>{html.escape(line[2:])}</li>")
        elif line:
            body.append(f"<p>{html.escape(line)}</p>")
    text = "\n".join(body)
    text = text.replace("</p>\n<tr>", "</p>\n<table><tr>").replace("</h2>\n<tr>", "</h2>\n<table><tr>")
    text = _close_tables(text)
    style = (
        "body{font-family:system-ui,sans-serif;max-width:960px;margin:2em auto}table{border-collapse:collapse}"
        "td{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>mlrig business case</title>"
        f"<style>{style}</style></head><body>{text}</body></html>"
    )


def _close_tables(text: str) -> str:
    lines, out, open_ = text.splitlines(), [], False
    for line in lines:
        is_row = line.startswith("<tr>") or line.startswith("<table><tr>")
        if is_row and not open_:
            line = line if line.startswith("<table>") else "<table>" + line
            open_ = True
        elif not is_row and open_:
            out.append("</table>")
            open_ = False
        out.append(line)
    if open_:
        out.append("</table>")
    return "\n".join(out)
