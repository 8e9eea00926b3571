"""`mlrig prices`: the price book with the age of every entry, and which catalog GPUs it covers (render only)."""

from __future__ import annotations

from typing import Annotated

import typer

from mlrig.commands.advisor import JsonFlag, PricesOpt, _user_errors

SECTIONS = ("platform", "gpu", "system", "cloud", "api", "unpriced")


def prices_cmd(
    section: Annotated[str | None, typer.Option("--section", help=" | ".join(SECTIONS))] = None,
    stale: Annotated[bool, typer.Option("--stale", help="only prices older than 6 months (or undated)")] = False,
    show_coverage: Annotated[bool, typer.Option(
        "--coverage", help="every catalog GPU: priced, deliberately unpriced (and why), or missing")] = False,
    prices: PricesOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """List the price book: each price with its date, age and source; entries older than 6 months flagged."""
    import datetime as dt

    from mlrig.advisor.prices import coverage, load_prices, price_rows, resolved_entries
    from mlrig.catalog.gpus import gpu_ids, resolve_gpu
    from mlrig.commands._common import print_json
    from mlrig.errors import MlrigError

    if section is not None and section not in SECTIONS:
        raise MlrigError(f"unknown --section {section!r}; use one of {', '.join(SECTIONS)}")
    book = load_prices(prices)
    today = dt.date.today()
    rows = [r for r in price_rows(book, today, section) if r.stale or not stale]
    known = resolved_entries(book, resolve_gpu)
    for r in rows:
        e = book.entry(r.key)
        if getattr(e, "catalog_pending", False) and r.key not in known and r.section != "unpriced":
            r.item += " - GPU not in this catalog yet: not used until it is"
    cov = coverage(book, gpu_ids(), resolve_gpu)
    if as_json:
        print_json({"as_of": today.isoformat(), "stale_after_days": book.assumptions.stale_after_days,
                    "files": book.used_summary(), "entries": rows,
                    **({"coverage": cov} if show_coverage else {})})
        return
    from rich.markup import escape
    from rich.table import Table

    from mlrig.commands.advisor import _console

    con = _console()
    if not show_coverage:
        t = Table(title=f"price book: {len(rows)} entries · ⚠ = older than {book.assumptions.stale_after_days} days")
        for col in ("section", "key", "item", "price", "date", "age", "", "trust"):
            t.add_column(col, justify="right" if col in ("age",) else "left", overflow="fold")
        for r in rows:
            age = ("undated" if r.age_days is None
                   else f"{r.age_days / 30.44:.1f} mo" if r.age_days > 60 else f"{r.age_days} d")
            t.add_row(r.section, escape(r.key), escape(r.item), escape(r.price), r.date, age,
                      "⚠" if r.stale else "", r.verification)
        con.print(t)
    priced = sum(1 for c in cov if c.status == "priced")
    unpriced = [c for c in cov if c.status == "unpriced"]
    missing = [c for c in cov if c.status == "missing"]
    if show_coverage:
        t = Table(title="catalog GPUs and the price book")
        for col in ("GPU", "status", "price keys / why not"):
            t.add_column(col, overflow="fold")
        for c in cov:
            t.add_row(c.gpu, c.status, escape(", ".join(c.keys) if c.keys else (c.reason or "")))
        con.print(t)
    con.print(f"catalog coverage: {priced} GPUs priced to buy, {len(unpriced)} deliberately unpriced (reason given),"
              f" {len(missing)} missing" + (" (`--coverage` lists them)" if not show_coverage else ""))
    n_stale = sum(1 for r in price_rows(book, today) if r.stale)
    if n_stale:
        con.print(f"[yellow]{n_stale} prices are older than {book.assumptions.stale_after_days} days:[/] answers that"
                  " use them say so; override with --prices FILE or ~/.config/mlrig/prices.toml")
    for f in book.used_summary():
        con.print(f"file: {f}", style="dim", markup=False)


def register(app: typer.Typer) -> None:
    app.command("prices")(_user_errors(prices_cmd))
