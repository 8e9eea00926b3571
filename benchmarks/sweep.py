"""Benchmark of mlrig's vectorised sweep (one core); optionally against llm-analysis.

Run: python benchmarks/sweep.py. The LAST line is `configs_per_s=<N>`.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from mlrig.catalog.gpus import load_gpus
from mlrig.catalog.models import load_model_catalog
from mlrig.estimators.sweep import sweep


def main() -> None:
    archs = [a for a in load_model_catalog() if a.kind == "decoder"][:20]
    gpus = [g for g in load_gpus() if g.hardware_class in ("geforce", "workstation", "datacenter")][:40]
    precs = ["bf16", "fp8", "int8", "awq", "q4_k_m", "q8_0"]
    batches = [1, 4, 16, 64, 256]
    contexts = [512, 2048, 8192, 32768]
    tps = [1, 2, 4, 8]
    n = len(archs) * len(gpus) * len(precs) * len(batches) * len(contexts) * len(tps)
    sweep(archs[:1], gpus[:1], precs[:1], batches[:1], contexts[:1], tps[:1])  # warm-up
    t0 = time.perf_counter()
    res = sweep(archs, gpus, precs, batches, contexts, tps, engine="vllm")
    dt = time.perf_counter() - t0
    print(
        f"grid: {len(archs)} models x {len(gpus)} GPUs x {len(precs)} precisions x {len(batches)} batches "
        f"x {len(contexts)} contexts x {len(tps)} TP = {n:,} configurations"
    )
    print(
        f"sweep time: {dt:.3f} s; fits: {int(res.fits.sum()):,}; "
        f"median decode {float(__import__('numpy').median(res.decode_tok_s)):.1f} tok/s"
    )
    per_s = n / dt
    try:
        from llm_analysis.analysis import infer  # type: ignore[import-not-found,unused-ignore]

        sample = 20
        t1 = time.perf_counter()
        done = 0
        for _a in archs[:sample]:
            try:
                infer(
                    model_name="facebook_opt-1.3b",
                    gpu_name="a100-sxm-40gb",
                    dtype_name="w16a16e16",
                    batch_size_per_gpu=1,
                    seq_len=512,
                    num_tokens_to_generate=128,
                    log_level="ERROR",
                )
                done += 1
            except Exception:
                break
        dt1 = time.perf_counter() - t1
        if done:
            la = done / dt1
            print(
                f"llm-analysis: {la:.1f} configs/s on {done} configurations; mlrig sweep is {per_s / la:,.0f}x faster"
            )
        else:
            print("llm-analysis: failed to run; comparison skipped")
    except ImportError:
        print("llm-analysis not installed (pip install --no-deps llm-analysis 'fire<0.6' six termcolor);"
              " comparison skipped")
    print(f"configs_per_s={per_s:.0f}")


if __name__ == "__main__":
    main()
