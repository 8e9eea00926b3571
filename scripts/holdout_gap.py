"""Why a scope's held-out rows are worse than its fit rows: both splits grouped by the setup's attributes.

    python scripts/holdout_gap.py "ttft_ms / sglang / hbm"
    python scripts/holdout_gap.py "tpot_ms / vllm / hbm" --by load,engine_version,gpu
    python scripts/holdout_gap.py --gaps 5          # every scope whose held-out median is >= 5 points worse

For each attribute (the load type, engine version, GPU, GPU count, prompt-length class, precision, output-length
mode, source) it prints, per value, the fit and held-out rows' count, median |pred/meas - 1| and median signed
error (+ = mlrig too high), and marks with `!` a value that only held-out rows have: a class of setup the fit
rows never cover, which an independent test will meet and which wants fit rows of its own (calibration
README: held-out rows never choose a factor or a structure; they only show which class of setup is weak).
Runs exactly `mlrig.planner.evaluate`, as `mlrig validate` does.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mlrig.validation.runner import CalibrationRow, Checked, load_rows, run

ATTRIBUTES = ("load", "engine_version", "gpu", "gpus", "prompt", "precision", "lengths", "source")


def prompt_class(tokens: int) -> str:
    """The prompt-length class of a serving row: <=256, <=1k, <=4k or >4k tokens."""
    if tokens <= 256:
        return "<=256"
    if tokens <= 1024:
        return "<=1k"
    return "<=4k" if tokens <= 4096 else ">4k"


def canonical_gpu(name: str) -> str:
    """The catalog id of a GPU as a row names it (the name itself where the catalog does not know it)."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import MlrigError

    try:
        return resolve_gpu(name).id
    except MlrigError:
        return name


def attribute(row: CalibrationRow, name: str) -> str:
    """One setup attribute of a calibration row, as its plan states it ("-" where it does not)."""
    plan = row.plan
    w, h = plan.get("workload", {}), plan.get("hardware", {})
    if name == "source":
        return row.id.rsplit("-", 1)[0]
    if name == "gpu":  # the catalog's id, so that "A100 SXM4 80GB" and "A100 SXM 80GB" group together
        return canonical_gpu(str(h.get("gpu", "-")))
    if name == "gpus":
        return str(int(h.get("count", 1) or 1) * int(h.get("nodes", 1) or 1))
    if name == "prompt":
        return prompt_class(int(w.get("prompt_tokens", 0) or 0))
    value = w.get(name)
    return "-" if value is None else str(value)


@dataclass(frozen=True)
class Cell:
    """The rows of one split with one attribute value: count, median |error|, median signed error."""

    n: int
    median_abs: float
    median_signed: float


def cell(errors: list[float]) -> Cell | None:
    """Summary of signed relative errors (pred/meas - 1); None for no rows."""
    if not errors:
        return None
    return Cell(len(errors), statistics.median(abs(e) for e in errors), statistics.median(errors))


def group_gap(checked: Iterable[tuple[str, str, float]]) -> dict[str, tuple[Cell | None, Cell | None]]:
    """(value, split, signed error) triples -> value: (fit cell, held-out cell)."""
    by: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"fit": [], "holdout": []})
    for value, split, err in checked:
        by[value][split].append(err)
    return {v: (cell(s["fit"]), cell(s["holdout"])) for v, s in sorted(by.items())}


def uncovered(groups: dict[str, tuple[Cell | None, Cell | None]]) -> list[str]:
    """Attribute values that only held-out rows have (no fit row of that class)."""
    return [v for v, (fit, held) in groups.items() if fit is None and held is not None]


def _fmt(c: Cell | None) -> str:
    return f"{c.n:4d} {c.median_abs:6.1%} {c.median_signed:+7.1%}" if c else " " * 19


def report(scope: str, pairs: list[tuple[CalibrationRow, Checked]], names: Iterable[str],
           out: Callable[[str], None] = print) -> None:
    """Print the fit / held-out grouping of one scope's predicted rows by each attribute in `names`."""
    rows = [(r, c) for r, c in pairs if c.scope == scope and c.predicted is not None]
    errs = {s: [abs((c.predicted or 0) / c.measured - 1) for _, c in rows if c.split == s] for s in ("fit", "holdout")}
    head = ", ".join(f"{s} {len(e)} rows median {statistics.median(e):.1%}" for s, e in errs.items() if e)
    out(f"\n=== {scope}: {head}")
    for name in names:
        groups = group_gap((attribute(r, name), c.split, (c.predicted or 0) / c.measured - 1) for r, c in rows)
        out(f"-- by {name:32s}   FIT n med|e|  signed  HELD-OUT n med|e|  signed")
        lonely = set(uncovered(groups))
        for value, (fit, held) in groups.items():
            mark = "!" if value in lonely else " "
            out(f"  {mark} {value[:34]:34s} {_fmt(fit)}    {_fmt(held)}")


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the catalog and local cache only: no network probes
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("scope", nargs="*", help='scopes as `mlrig validate` names them, e.g. "ttft_ms / vllm / hbm"')
    ap.add_argument("--by", default=",".join(ATTRIBUTES), help=f"attributes, comma-separated ({', '.join(ATTRIBUTES)})")
    ap.add_argument("--gaps", type=float, default=None,
                    help="also every scope whose held-out median |e| exceeds its fit median by this many points")
    a = ap.parse_args()
    names = [n.strip() for n in a.by.split(",") if n.strip()]
    bad = [n for n in names if n not in ATTRIBUTES]
    if bad:
        raise SystemExit(f"unknown attribute {bad[0]!r}: use one of {', '.join(ATTRIBUTES)}")
    rows = [r for r in load_rows() if not r.anomaly]
    pairs = list(zip(rows, run(rows), strict=True))
    scopes = list(a.scope)
    if a.gaps is not None:
        per: dict[str, dict[str, list[float]]] = defaultdict(lambda: {"fit": [], "holdout": []})
        for _, c in pairs:
            if c.predicted is not None:
                per[c.scope][c.split].append(c.rel_error)
        for s, e in sorted(per.items()):
            if e["fit"] and len(e["holdout"]) >= 3 and s not in scopes and (
                    statistics.median(e["holdout"]) - statistics.median(e["fit"])) * 100 >= a.gaps:
                scopes.append(s)
    if not scopes:
        raise SystemExit('name a scope (e.g. "ttft_ms / vllm / hbm") or give --gaps N')
    for s in scopes:
        report(s, pairs, names)


if __name__ == "__main__":
    main()
