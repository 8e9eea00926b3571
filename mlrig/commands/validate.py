"""`mlrig validate`: every packaged published measurement through the planner (what users run), the
error per scope (figure x engine x memory class) against its target, pass or fail shown as it is."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from mlrig.validation.runner import Checked
    from mlrig.validation.scopes import ScopeRecord

# Short labels, so a scope line fits 80 columns. The errors are relative, so the unit adds nothing.
FIGURE_LABELS = {
    "decode_tok_s": "decode", "prefill_tok_s": "prefill", "throughput_tok_s": "throughput",
    "ttft_ms": "TTFT", "tpot_ms": "TPOT", "requests_per_s": "requests/s", "train_tokens_per_s": "train tok/s",
    "step_time_s": "step time", "mfu": "MFU", "hfu": "HFU", "per_gpu_gib": "peak memory",
    "weights_gib": "weights", "kv_cache_gib": "KV cache", "kv_cache_capacity_tokens": "KV tokens",
    "activations_gib": "activations", "overhead_gib": "overhead", "host_ram_gib": "host RAM",
    "time_to_train_s": "time to train",
}
MEMORY_FIGURES = {"per_gpu_gib", "weights_gib", "kv_cache_gib", "kv_cache_capacity_tokens", "activations_gib",
                  "overhead_gib", "host_ram_gib"}


def _pct(x: float | None) -> str:
    return "—" if x is None or math.isnan(x) else f"{x * 100:.0f}%" if x >= 0.1 else f"{x * 100:.1f}%"


def verdict(s: ScopeRecord) -> str:
    """'pass' when median and p90 meet the figure's target, else which is over; 'few rows' below the
    validation threshold, '—' where a figure has no target."""
    from mlrig.validation.runner import target
    from mlrig.validation.scopes import MIN_ROWS

    if s.rows < MIN_ROWS:
        return "few rows"
    t = target(s.figure, s.engine)
    if t is None:
        return "—"
    over_median, over_p90 = s.median_error > t[0], s.p90_error > t[1]
    if over_median and over_p90:
        return "over both"
    return "over median" if over_median else "over p90" if over_p90 else "pass"


def print_scopes(con: Console, title: str, records: list[ScopeRecord]) -> None:
    from rich import box
    from rich.table import Table

    from mlrig.validation.runner import target

    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 0, 0, 1), title_justify="left")
    for col in ("figure", "engine", "class", "rows", "median", "p90", "target", "result"):
        t.add_column(col, justify="right" if col in ("rows", "median", "p90", "target") else "left",
                     no_wrap=True, overflow="ellipsis", min_width=5 if col in ("median", "p90") else None)
    last = None
    for s in records:
        tg = target(s.figure, s.engine)
        v = verdict(s)
        style = "green" if v == "pass" else "red" if v.startswith("over") else "dim"
        t.add_row(FIGURE_LABELS.get(s.figure, s.figure) if s.figure != last else "",
                  s.engine.removeprefix("training-"), s.memory_class, str(s.rows), _pct(s.median_error),
                  _pct(s.p90_error), f"{_pct(tg[0])}/{_pct(tg[1])}" if tg else "—", f"[{style}]{v}[/]")
        last = s.figure
    con.print(f"[bold]{title}[/]")
    con.print(t)


def row_json(c: Checked) -> dict[str, object]:
    """One row of `validate --rows --json`: `relative_error` = predicted / measured - 1 (signed; null without a
    prediction) and `refusal`, why the planner gave no prediction (null when it gave one). `error` is kept as
    before (the refusal text), for readers of the old output; it was never the relative error."""
    rel = c.predicted / c.measured - 1.0 if c.predicted is not None and c.measured else None
    return {**c.model_dump(), "relative_error": rel, "refusal": c.error}


def validate_cmd(
    suite: Annotated[str, typer.Option("--suite", help="memory | speed | all")] = "all",
    figure: Annotated[str | None, typer.Option("--figure", help="only this figure, e.g. decode_tok_s")] = None,
    rows: Annotated[bool, typer.Option(
        "--rows", help="also print every row: predicted, measured, relative error or why no prediction")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON: scopes, and rows with --rows")] = False,
    write: Annotated[bool, typer.Option(
        "--write", help="store the scope records where `mlrig plan` reads them (for maintainers)")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="exit 1 when any scope misses its target")] = False,
    markdown: Annotated[bool, typer.Option(
        "--markdown", help="the scope table as Markdown (docs/ACCURACY.md)")] = False,
) -> None:
    """Run the published measurements packaged with mlrig through the planner, exactly as `mlrig plan`
    runs, and show the error of each scope (figure x engine x memory class) against its target.

    Held-out sources (never used to choose a factor) are also shown apart. docs/ACCURACY.md explains
    the figures."""
    from mlrig.errors import MlrigError
    from mlrig.validation.runner import load_rows, run, scopes, write_scope_table

    if suite not in ("memory", "speed", "all"):
        raise MlrigError(f"--suite takes memory, speed or all, got {suite!r}")
    all_rows = load_rows()
    checked = run(all_rows)
    if write:
        path = write_scope_table(scopes(checked), len(all_rows))
        typer.echo(f"wrote {path}", err=True)

    def wanted(c: Checked) -> bool:
        is_memory = c.figure in MEMORY_FIGURES
        return ((suite == "all" or (suite == "memory") == is_memory)
                and (figure is None or c.figure == figure))

    shown = [c for c in checked if wanted(c)]
    records = scopes(shown)
    refused = [c for c in shown if c.predicted is None]
    if as_json:
        from mlrig.commands._common import print_json

        out: dict[str, object] = {
            "scopes": [{**r.model_dump(), "verdict": verdict(r)} for r in records],
            "rows_predicted": len(shown) - len(refused), "rows_refused": len(refused)}
        if rows:
            out["rows"] = [row_json(c) for c in shown]
        print_json(out)
        return
    if markdown:
        from mlrig.validation.runner import target

        typer.echo("| figure | engine | memory | rows | median | p90 | target | held-out rows (median) | result |")
        typer.echo("|---|---|---|---|---|---|---|---|---|")
        for r in records:
            tg = target(r.figure, r.engine)
            held_cell = f"{r.holdout_rows} ({_pct(r.holdout_median_error)})" if r.holdout_rows else ""
            typer.echo(f"| {FIGURE_LABELS.get(r.figure, r.figure)} | {r.engine} | {r.memory_class} | {r.rows} | "
                       f"{_pct(r.median_error)} | {_pct(r.p90_error)} | "
                       f"{f'{_pct(tg[0])} / {_pct(tg[1])}' if tg else ''} | {held_cell} | {verdict(r)} |")
        typer.echo(f"\n{len(shown) - len(refused)} rows predicted, {len(refused)} not expressible yet.")
        return
    from rich.console import Console

    con = Console()
    print_scopes(con, "Estimates vs published measurements, through the planner: |pred/meas - 1|", records)
    held = [r for r in records if r.holdout_rows]
    if held:
        con.print()
        con.print("[bold]Of which held-out sources[/] (never used to choose a factor): median error")
        for r in held:
            con.print(f"  {FIGURE_LABELS.get(r.figure, r.figure):12s} {r.engine.removeprefix('training-'):12s} "
                      f"{r.memory_class:8s} {r.holdout_rows:4d} rows  {_pct(r.holdout_median_error)}")
    verdicts = [verdict(r) for r in records]
    passing, failing = verdicts.count("pass"), sum(v.startswith("over") for v in verdicts)
    con.print()
    con.print(f"{len(shown) - len(refused)} published runs predicted. Scopes: [green]{passing} within "
              f"target[/], [red]{failing} over[/], {len(records) - passing - failing} with too few rows "
              "or no target.")
    if refused:
        from collections import Counter

        reasons = Counter((c.error or "").split(";")[0][:70] for c in refused)
        con.print(f"{len(refused)} rows cannot be evaluated (--rows lists them); most often:")
        for reason, n in reasons.most_common(3):
            con.print(f"  {n:5d} x {reason}", markup=False)
    if rows:
        for c in shown:
            got = f"pred {c.predicted:10.4g}  {abs(c.predicted / c.measured - 1) * 100:6.1f}%" \
                if c.predicted is not None else f"no prediction: {c.error}"
            con.print(f"{c.id:24s} {c.scope[:36]:36s} meas {c.measured:10.4g} {got}", markup=False,
                      soft_wrap=True)
    if strict and failing:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_cmd)
