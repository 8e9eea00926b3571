"""How long "how to make it fit" (mlrig.fixes.make_it_fit) adds to `mlrig plan` for plans that do not fit.

For each plan below: the planner's evaluations the fixes cost (counted by wrapping mlrig.planner.evaluate)
and the median wall time of make_it_fit over N runs, next to one plain evaluate. Run:
python benchmarks/fixes.py [-n RUNS]. The LAST line is `fixes_ms_max=<N>` (the slowest plan's median).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

import mlrig.planner as planner
from mlrig.fixes import make_it_fit

PLANS: list[dict[str, Any]] = [
    {"model": "llama-3.1-8b", "gpu": "RTX 3060 12GB", "context_tokens": 32768},
    {"model": "llama-3.1-70b", "gpu": "RTX 3090", "count": 2, "precision": "q5_k_m", "context_tokens": 16384},
    {"model": "qwen2.5-32b", "gpu": "A100-SXM4-40GB", "engine": "vllm"},
    {"model": "llama-3.1-405b", "gpu": "H100 SXM", "count": 8},
    {"model": "llama-3.1-8b", "gpu": "RTX 4090", "task": "finetune", "method": "full"},
    {"model": "llama-3.1-70b", "gpu": "H100 SXM", "count": 4, "task": "finetune", "method": "full"},
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=10)
    args = ap.parse_args()
    real = planner.evaluate
    worst = 0.0
    for fields in PLANS:
        fields = dict(fields)
        model = fields.pop("model")
        plan = planner.parse_plan(planner.plan_from_fields(model, **fields))
        arch, gpu = planner.resolve_arch(plan), planner.resolve_hardware(plan)
        result = real(plan, arch=arch, gpu=gpu)
        lims = planner.limits(plan, arch=arch, gpu=gpu)
        calls = 0

        def counting(*a: Any, **k: Any) -> Any:
            nonlocal calls
            calls += 1
            return real(*a, **k)

        planner.evaluate = counting  # type: ignore[assignment]
        fixes = make_it_fit(plan, arch, gpu, result, lims)
        planner.evaluate = real  # type: ignore[assignment]
        times, one = [], []
        for _ in range(args.n):
            t = time.perf_counter()
            make_it_fit(plan, arch, gpu, result, lims)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            real(plan, arch=arch, gpu=gpu)
            one.append(time.perf_counter() - t)
        ms = statistics.median(times) * 1e3
        worst = max(worst, ms)
        label = " ".join(f"{k}={v}" for k, v in {"model": model, **fields}.items())
        print(f"{label}: {len(fixes)} fixes, {calls} evaluations, {ms:.1f} ms "
              f"(one evaluate {statistics.median(one) * 1e3:.2f} ms)")
    print(f"fixes_ms_max={worst:.1f}")


if __name__ == "__main__":
    main()
