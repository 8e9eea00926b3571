"""Write a diagnosis to disk: a timeline CSV and a self-contained HTML page with inline SVG charts."""

from __future__ import annotations

import csv
import html
from pathlib import Path

from mlrig.diagnose.models import DiagnoseReport, Sample


def timeline_rows(samples: list[Sample]) -> list[dict[str, float | int | str]]:
    """One flat row per sample; GPU columns are prefixed gpu<index>_. Units are in the names."""
    rows: list[dict[str, float | int | str]] = []
    for s in samples:
        h = s.host
        row: dict[str, float | int | str] = {
            "t_s": round(s.t_s, 3),
            "cpu_percent_mean": round(h.cpu_percent_mean, 1),
            "cpu_percent_max_core": round(max(h.cpu_percent_per_core, default=0.0), 1),
            "iowait_percent": "" if h.iowait_percent is None else round(h.iowait_percent, 1),
            "ram_used_gib": round(h.ram_used_bytes / 2**30, 3),
            "swap_used_gib": round(h.swap_used_bytes / 2**30, 3),
            "disk_read_mb_s": round(h.disk_read_bytes_s / 1e6, 3),
            "disk_write_mb_s": round(h.disk_write_bytes_s / 1e6, 3),
            "job_cpu_percent": round(h.tree_cpu_percent, 1),
            "job_io_mb_s": round((h.proc_read_bytes_s + h.proc_write_bytes_s) / 1e6, 3),
            "job_n_procs": len(h.procs),
        }
        for g in s.gpus:
            p = f"gpu{g.index}_"

            def v(x: float | int | None, scale: float = 1.0) -> float | str:
                return "" if x is None else round(x * scale, 3)

            row.update({
                p + "util_percent": v(g.util_percent),
                p + "memory_used_gib": v(g.memory_used_bytes, 1 / 2**30),
                p + "pcie_rx_gb_s": v(g.pcie_rx_kb_s, 1e3 / 1e9),
                p + "pcie_tx_gb_s": v(g.pcie_tx_kb_s, 1e3 / 1e9),
                p + "power_w": v(g.power_w),
                p + "sm_clock_mhz": v(g.sm_clock_mhz),
                p + "temperature_c": v(g.temperature_c),
                p + "throttle_reasons": "" if g.throttle_reasons is None else g.throttle_reasons,
            })
        rows.append(row)
    return rows


def write_csv(samples: list[Sample], path: Path) -> None:
    rows = timeline_rows(samples)
    fields: list[str] = []
    for r in rows:
        fields += [k for k in r if k not in fields]
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields or ["t_s"], restval="")
        w.writeheader()
        w.writerows(rows)


_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf"]


def svg_chart(title: str, series: dict[str, list[tuple[float, float]]], y_label: str,
              y_max: float | None = None, width: int = 760, height: int = 200) -> str:
    """A line chart as inline SVG (no JavaScript, no external assets)."""
    pts = [p for s in series.values() for p in s]
    if not pts:
        return ""
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    top = y_max if y_max is not None else max(max(p[1] for p in pts), 1e-9) * 1.1
    left, right, up, down = 50, 10, 24, 22
    w, h = width - left - right, height - up - down

    def xy(t: float, v: float) -> str:
        x = left + (w * (t - x0) / (x1 - x0) if x1 > x0 else 0)
        y = up + h - h * min(max(v, 0.0), top) / top
        return f"{x:.1f},{y:.1f}"

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'font-family="sans-serif" font-size="11">',
             f'<text x="{left}" y="14" font-weight="bold">{html.escape(title)}</text>',
             f'<rect x="{left}" y="{up}" width="{w}" height="{h}" fill="none" stroke="#999"/>',
             f'<text x="4" y="{up + 10}">{top:.0f}</text><text x="4" y="{up + h}">0</text>',
             f'<text x="4" y="{up + h // 2}">{html.escape(y_label)}</text>',
             f'<text x="{left}" y="{height - 6}">{x0:.0f} s</text>',
             f'<text x="{left + w - 40}" y="{height - 6}">{x1:.0f} s</text>']
    for i, (name, s) in enumerate(series.items()):
        c = _COLOURS[i % len(_COLOURS)]
        parts.append(f'<polyline fill="none" stroke="{c}" stroke-width="1.5" '
                     f'points="{" ".join(xy(t, v) for t, v in s)}"/>')
        parts.append(f'<text x="{left + 120 + 150 * i}" y="14" fill="{c}">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "\n".join(parts)


def _charts(samples: list[Sample]) -> list[str]:
    cores = max((len(s.host.cpu_percent_per_core) for s in samples), default=1) or 1
    cpu = {
        "machine mean": [(s.t_s, s.host.cpu_percent_mean) for s in samples],
        "busiest core": [(s.t_s, max(s.host.cpu_percent_per_core, default=0.0)) for s in samples],
        "job (÷ cores)": [(s.t_s, s.host.tree_cpu_percent / cores) for s in samples],
    }
    io = {
        "disk read": [(s.t_s, s.host.disk_read_bytes_s / 1e6) for s in samples],
        "disk write": [(s.t_s, s.host.disk_write_bytes_s / 1e6) for s in samples],
        "job I/O": [(s.t_s, (s.host.proc_read_bytes_s + s.host.proc_write_bytes_s) / 1e6) for s in samples],
    }
    charts = [svg_chart("CPU", cpu, "%", 100.0), svg_chart("Storage", io, "MB/s")]
    gpu_idx = sorted({g.index for s in samples for g in s.gpus})
    util: dict[str, list[tuple[float, float]]] = {}
    mem: dict[str, list[tuple[float, float]]] = {}
    temp: dict[str, list[tuple[float, float]]] = {}
    for i in gpu_idx:
        rows = [(s.t_s, g) for s in samples for g in s.gpus if g.index == i]
        util[f"GPU{i} util"] = [(t, g.util_percent) for t, g in rows if g.util_percent is not None]
        mem[f"GPU{i} VRAM"] = [(t, 100 * f) for t, g in rows if (f := g.memory_used_fraction) is not None]
        temp[f"GPU{i} °C"] = [(t, g.temperature_c) for t, g in rows if g.temperature_c is not None]
    if gpu_idx:
        charts += [svg_chart("GPU utilisation", util, "%", 100.0),
                   svg_chart("GPU memory used", mem, "%", 100.0),
                   svg_chart("GPU temperature", temp, "°C")]
    return [c for c in charts if c]


def write_html(report: DiagnoseReport, samples: list[Sample], path: Path) -> None:
    e = html.escape
    items = "".join(
        f"<li><b>{e(f.kind)}</b> ({e(f.severity)}): {e(f.summary)}<br><small>rule: {e(f.rule)}</small>"
        f"<br>remedies: {e('; '.join(f.remedies))}</li>" for f in report.findings)
    notes = "".join(f"<li>{e(n)}</li>" for n in report.notes)
    cmd = e(" ".join(report.command)) if report.command else f"pid {report.pid}"
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>mlrig diagnose</title></head>"
            f"<body><h1>mlrig diagnose</h1><p>job: <code>{cmd}</code>, exit status {report.exit_status}, "
            f"{report.summary.n_samples} samples every {report.interval_s} s</p>"
            f"<h2>Findings</h2><ul>{items}</ul>"
            + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
            + "<h2>Timeline</h2>" + "<br>".join(_charts(samples)) + "</body></html>")
    path.write_text(page)
