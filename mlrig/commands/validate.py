"""`mlrig validate`: the estimators against published measurements, median and p90 error per group."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from mlrig.validation import ValidationGroup

# Short labels for the speed metrics, so a row of metric / engine / hardware class fits 80 columns.
# The errors are relative, so the unit adds nothing.
METRIC_LABELS = {
    "decode_tok_s": "decode",
    "prefill_tok_s": "prefill",
    "tokens_per_s_per_gpu": "train/GPU",
    "total_throughput_tok_s": "throughput",
    "ttft_ms": "TTFT",
}
SKIPPED_PREFIX = "skipped:"


def split_group(name: str) -> tuple[str, str, str]:
    """'decode_tok_s / llama.cpp-metal / apple' → ('decode', 'llama.cpp-metal', 'apple'); an overall
    group (just the metric) → (label, '', ''). Metrics without a label (memory's) keep their name."""
    metric, _, rest = name.partition(" / ")
    engine, _, hw_class = rest.partition(" / ")
    return METRIC_LABELS.get(metric, metric), engine, hw_class


def _pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{x * 100:.1f}%"


def print_groups(con: Console, title: str, groups: list[ValidationGroup]) -> None:
    """One table, a section per metric (its overall row in bold, then per engine x hardware class),
    engine and class columns only when some group has them; 'skipped: ...' pseudo-groups as lines below.
    The title is a line of its own: as a table title it would wrap to the narrow memory table."""
    from rich import box
    from rich.table import Table

    shown = [g for g in groups if not (g.n == 0 and g.name.startswith(SKIPPED_PREFIX))]
    parts = {g.name: split_group(g.name) for g in shown}
    split = any(engine for _, engine, _ in parts.values())
    sections: dict[str, list[ValidationGroup]] = {}
    for g in shown:  # each metric's overall group first, then its breakdown in the given order
        sections.setdefault(g.name.partition(" / ")[0], []).append(g)
    for rows in sections.values():
        rows.sort(key=lambda g: " / " in g.name)

    # No vertical rules and one space of padding: the speed table is 76 columns wide.
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0, 0, 1))
    cols = ["metric", *(["engine", "class"] if split else []), "rows", "median", "p90", "target", ""]
    for col in cols:
        left = col in ("metric", "engine", "class", "")
        t.add_column(col, justify="left" if left else "right", no_wrap=True, overflow="ellipsis")
    blocks = list(sections.values())
    for i, rows in enumerate(blocks):
        # a blank separator around metrics that have a breakdown
        gap = split and (len(rows) > 1 or (i + 1 < len(blocks) and len(blocks[i + 1]) > 1))
        for j, g in enumerate(rows):
            metric, engine, hw_class = parts[g.name]
            overall = " / " not in g.name
            thr = f"{g.threshold_median * 100:.0f}%" if g.threshold_median is not None else "—"
            cells = [metric, *([engine or "all", hw_class or "all"] if split else []), str(g.n),
                     _pct(g.median_error), _pct(g.p90_error), thr, "[green]ok[/]" if g.passes else "[red]over[/]"]
            t.add_row(*cells, style="bold" if overall and split else None,
                      end_section=gap and j == len(rows) - 1 and i + 1 < len(blocks))
    con.print(f"[bold]{title}[/]")
    con.print(t)
    for g in groups:
        if g not in shown:
            con.print(f"[dim]{g.name}[/]")


def validate_cmd(
    suite: Annotated[str, typer.Option("--suite", help="memory | speed | all")] = "all",
    rows: Annotated[bool, typer.Option("--rows", help="also print every row's prediction and measurement")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Run the published measurements packaged with mlrig (docs/ACCURACY.md) through the estimators."""
    from mlrig.errors import MlrigError

    if suite not in ("memory", "speed", "all"):
        raise MlrigError(f"--suite takes memory, speed or all, got {suite!r}")
    suites: list[tuple[str, list[ValidationGroup]]] = []
    if suite in ("memory", "all"):
        from mlrig.validation import memory

        suites.append(("Memory", memory.run()))
    if suite in ("speed", "all"):
        from mlrig.validation import speed

        suites.append(("Speed", speed.run()))
    groups = [g for _, gs in suites for g in gs]
    if as_json:
        from mlrig.commands._common import print_json

        print_json([g.model_dump(mode="json", exclude=set() if rows else {"rows"}) for g in groups])
        return
    from rich.console import Console

    con = Console()
    for i, (name, gs) in enumerate(suites):
        if i:
            con.print()
        print_groups(con, f"{name}: estimates vs published measurements, error |pred/meas - 1|", gs)
    if rows:
        for g in groups:
            for r in g.rows:
                con.print(f"{g.name:30s} {r.id:12s} pred {r.predicted:10.3f} meas {r.measured:10.3f} "
                          f"{r.rel_error * 100:6.1f}%  {r.note}")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_cmd)
