"""Trace time and extrapolation error of `mlrig trace` for 1B / 8B / 70B (CPU only, fake tensors).

For each model: a full fine-tune (pure bf16 AdamW, checkpointing, 1 x 2048 tokens) and an HF
generate replay (prompt 2048, 256 new tokens), each traced two ways: two short stacks extended per
layer (what `mlrig trace` does) and, with --direct, every layer. Prints wall seconds per trace and
the extended figures' error against the direct trace. The first trace in a process also pays the
torch/transformers import (reported on its own line).

    python benchmarks/trace.py            # extended traces only
    python benchmarks/trace.py --direct   # also direct traces (70B direct takes minutes)
"""

from __future__ import annotations

import argparse
import time

MODELS = ["llama-3.2-1b", "llama-3.1-8b", "llama-3.1-70b"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--direct", action="store_true", help="also trace every layer and report the error")
    ap.add_argument("--models", nargs="*", default=MODELS)
    args = ap.parse_args()
    t0 = time.perf_counter()
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from mlrig.commands.trace import run_trace_for_plan
    from mlrig.planner import plan_from_fields

    print(f"import torch+transformers: {time.perf_counter() - t0:.1f} s")
    cases = {"finetune": dict(task="finetune", optimizer="adamw-bf16", seq_len=2048),
             "inference": dict(task="inference", prompt_tokens=2048, output_tokens=256)}
    for model in args.models:
        for label, fields in cases.items():
            plan = plan_from_fields(model, gpu="H100 SXM", **fields)
            t = time.perf_counter()
            _, ext = run_trace_for_plan(plan, optimizer_impl="fused", attention=None, use_cache=False)
            t_ext = time.perf_counter() - t
            line = (f"{model:14s} {label:9s} extended {t_ext:6.1f} s (layers {ext.layers_traced} of {ext.layers}) "
                    f"allocated {ext.peak_allocated_gib:8.2f} GiB reserved {ext.peak_reserved_gib:8.2f} GiB")
            if args.direct:
                t = time.perf_counter()
                _, d = run_trace_for_plan(plan, optimizer_impl="fused", attention=None, use_cache=False, direct=True)
                t_d = time.perf_counter() - t
                err = ext.peak_allocated_gib / d.peak_allocated_gib - 1
                line += (f" | direct {t_d:6.1f} s: error allocated {err:+.3%}"
                         f" reserved {ext.peak_reserved_gib / d.peak_reserved_gib - 1:+.3%}")
            print(line, flush=True)


if __name__ == "__main__":
    main()
