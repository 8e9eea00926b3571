"""`mlrig validate`: the estimators against published measurements, median and p90 error per group."""

from __future__ import annotations

from typing import Annotated

import typer


def validate_cmd(
    suite: Annotated[str, typer.Option("--suite", help="memory | speed | all")] = "all",
    rows: Annotated[bool, typer.Option("--rows", help="also print every row's prediction and measurement")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Run the calibration rows in ../shared/data/calibration through the estimators."""
    from mlrig.errors import MlrigError
    from mlrig.validation import ValidationGroup

    if suite not in ("memory", "speed", "all"):
        raise MlrigError(f"--suite takes memory, speed or all, got {suite!r}")
    groups: list[ValidationGroup] = []
    if suite in ("memory", "all"):
        from mlrig.validation import memory

        groups += memory.run()
    if suite in ("speed", "all"):
        from mlrig.validation import speed

        groups += speed.run()
    if as_json:
        from mlrig.commands._common import print_json

        print_json([g.model_dump(mode="json", exclude=set() if rows else {"rows"}) for g in groups])
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(title="Estimates vs published measurements (|pred/meas - 1|)")
    for col in ("group", "rows", "median", "p90", "threshold", ""):
        t.add_column(col, justify="left" if col == "group" else "right")
    for g in groups:
        thr = f"{g.threshold_median * 100:.0f}%" if g.threshold_median is not None else "—"
        t.add_row(g.name, str(g.n), f"{g.median_error * 100:.1f}%", f"{g.p90_error * 100:.1f}%", thr,
                  "[green]ok[/]" if g.passes else "[red]over[/]")
    con = Console()
    con.print(t)
    if rows:
        for g in groups:
            for r in g.rows:
                con.print(f"{g.name:30s} {r.id:12s} pred {r.predicted:10.3f} meas {r.measured:10.3f} "
                          f"{r.rel_error * 100:6.1f}%  {r.note}")


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_cmd)
