"""Where mlrig's estimates stand against every calibration row, grouped so a physics change can be judged.

    python scripts/calibration_report.py                      # every row, by figure x engine x source
    python scripts/calibration_report.py --metric decode_tok_s --engine vllm --worst 15
    python scripts/calibration_report.py --strip-unknown      # drop plan keys the planner does not know yet

Each group prints rows, median and p90 of |pred/meas - 1| and the median signed error (+ = mlrig too
high); then the planner's refusals, counted by message. Runs exactly `mlrig.planner.evaluate`.
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections import Counter, defaultdict

from mlrig.validation.runner import CalibrationRow, Checked, load_rows, run


def _source(row_id: str) -> str:
    return row_id.rsplit("-", 1)[0]


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the catalog and local cache only: no network probes
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--metric", help="only rows measuring this figure (e.g. decode_tok_s)")
    ap.add_argument("--engine", help="only rows whose plan names this engine (or training method)")
    ap.add_argument("--source", help="only rows whose id starts with this")
    ap.add_argument("--strip-unknown", action="store_true", help="drop plan keys the planner rejects")
    ap.add_argument("--worst", type=int, default=0, help="also list the N worst rows")
    ap.add_argument("--by", choices=["source", "scope"], default="source")
    a = ap.parse_args()

    rows = [r for r in load_rows() if not r.anomaly]
    if a.metric:
        rows = [r for r in rows if r.metric == a.metric]
    if a.source:
        rows = [r for r in rows if r.id.startswith(a.source)]
    if a.engine:
        def eng(r: CalibrationRow) -> str:
            plan = r.plan
            w, t = plan.get("workload", {}), plan.get("training", {})
            return str(w.get("engine") or (t.get("method") if w.get("task") != "inference" else "") or "")
        rows = [r for r in rows if eng(r).lower() == a.engine.lower()]
    checked = run(rows, strip_unknown=a.strip_unknown)

    groups: dict[tuple[str, ...], list[Checked]] = defaultdict(list)
    refused: Counter[str] = Counter()
    for c in checked:
        if c.predicted is None:
            refused[(c.error or "?")[:110]] += 1
            continue
        key: tuple[str, ...] = (c.scope, c.split) if a.by == "scope" else (c.scope, _source(c.id), c.split)
        groups[key].append(c)
    print(f"{'scope':44s} {'source' if a.by == 'source' else '':14s} {'split':7s} {'n':>4s} "
          f"{'med|e|':>7s} {'p90|e|':>7s} {'signed':>8s}")
    all_err: list[float] = []
    for gkey, cs in sorted(groups.items()):
        errs = sorted(c.rel_error for c in cs)
        all_err += errs
        signed = statistics.median((c.predicted or 0) / c.measured - 1 for c in cs)
        p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
        src = gkey[1] if a.by == "source" else ""
        print(f"{gkey[0][:44]:44s} {src[:14]:14s} {gkey[-1]:7s} {len(cs):4d} "
              f"{statistics.median(errs):7.1%} {p90:7.1%} {signed:+8.1%}")
    if all_err:
        print(f"\nall: {len(all_err)} rows predicted, median |e| {statistics.median(all_err):.1%}; "
              f"{sum(refused.values())} refused")
    for msg, n in refused.most_common(25):
        print(f"  refused x{n}: {msg}")
    if a.worst:
        worst = sorted((c for c in checked if c.predicted), key=lambda c: -c.rel_error)
        print(f"\nworst {a.worst}:")
        for c in worst[: a.worst]:
            print(f"  {c.id:28s} {c.scope[:40]:40s} meas {c.measured:10.4g} pred {c.predicted or 0:10.4g} "
                  f"({(c.predicted or 0) / c.measured - 1:+.0%})")


if __name__ == "__main__":
    main()
