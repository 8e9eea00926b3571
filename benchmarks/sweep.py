"""Benchmark of `mlrig sweep`: configurations per second through the planner (the path `plan` runs).

Run: python benchmarks/sweep.py. Prints inference and training figures; the LAST line is
`configs_per_s=<N>` (inference). One process, one core. The former vectorised sweep answered a
different question than `plan` (a simplified memory model) and was removed; issue 15's batch path
is what would raise these figures.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mlrig.commands.sweep import match_gpus, sweep_rows


def rate(task: str, models: list[str], gpus: str, precisions: list[str], contexts: list[int],
         batches: list[int], counts: list[int]) -> float:
    g = match_gpus(gpus)
    list(sweep_rows(models[:1], g[:1], precisions[:1], [None], contexts[:1], batches[:1], counts[:1], task))
    t0 = time.perf_counter()
    rows = list(sweep_rows(models, g, precisions, [None], contexts, batches, counts, task))
    dt = time.perf_counter() - t0
    errors = sum(r["error"] is not None for r in rows)
    print(f"{task}: {len(rows):,} configurations in {dt:.2f} s = {len(rows) / dt:,.0f} configs/s "
          f"({errors} with an error)")
    return len(rows) / dt


def main() -> None:
    models = ["llama-3.1-8b", "qwen2.5-32b", "llama-3.1-70b"]
    rate("finetune", models, "RTX 40*,h100*,a100*", ["bf16"], [2048, 4096], [1, 4], [1, 8])
    per_s = rate("inference", models, "RTX 40*,h100*,a100*,mi300x", ["bf16", "fp8", "q4_k_m"],
                 [4096, 32768], [1, 16, 64], [1, 2, 4])
    print(f"configs_per_s={per_s:.0f}")


if __name__ == "__main__":
    main()
