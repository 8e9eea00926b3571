"""Benchmark of the sweep path: configurations per second with the same numbers as `mlrig plan`.

Run: python benchmarks/sweep.py. One process, one core. Prints
- `mlrig sweep`'s rows (`sweep_rows`: the planner's figures plus building each row's dict), for training
  and inference (`mlrig.grid.evaluate_grid`: every context x batch of a model, GPU, count, precision and
  engine at once);
- the array path alone (`evaluate_grid`, no rows) on large grids: 100,000 (batch, context, prompt, output)
  configurations of one plan, for a vLLM, a llama.cpp and a transformers plan and a tensor-parallel MoE,
  and 100,000 (micro-batch, sequence length) configurations of three training plans.
The last two lines are `training_grid_configs_per_s=<N>` and `grid_configs_per_s=<N>` (inference): the
slowest plan's array-path rate of each kind.
tests/test_batch.py checks that the array path's figures equal `evaluate`'s exactly.
"""

from __future__ import annotations

import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from mlrig.commands.sweep import match_gpus, sweep_rows
from mlrig.grid import evaluate_grid


def rate(task: str, models: list[str], gpus: str, precisions: list[str], contexts: list[int],
         batches: list[int], counts: list[int]) -> float:
    g = match_gpus(gpus)
    list(sweep_rows(models[:1], g[:1], precisions[:1], [None], contexts[:1], batches[:1], counts[:1], task))
    t0 = time.perf_counter()
    rows = list(sweep_rows(models, g, precisions, [None], contexts, batches, counts, task))
    dt = time.perf_counter() - t0
    errors = sum(r["error"] is not None for r in rows)
    print(f"sweep rows, {task}: {len(rows):,} configurations in {dt:.2f} s = {len(rows) / dt:,.0f} configs/s "
          f"({errors} with an error)")
    return len(rows) / dt


def grid_rate(name: str, plan: dict, n: int = 100_000) -> float:
    rng = np.random.default_rng(0)
    batch = rng.integers(1, 257 if plan["workload"].get("task", "inference") == "inference" else 17, n)
    context = rng.choice([2048, 4096, 8192, 16384, 32768], n)
    output = np.minimum(128, context // 4)
    prompt = context - output
    evaluate_grid(plan, batch[:100], context[:100], prompt[:100], output[:100])  # warm-up
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        g = evaluate_grid(plan, batch, context, prompt, output)
        best = min(best, time.perf_counter() - t0)
    assert all(e is None for e in g.error)
    print(f"array path, {name}: {n:,} configurations in {best:.3f} s = {n / best:,.0f} configs/s (best of 3)")
    return n / best


def main() -> None:
    models = ["llama-3.1-8b", "qwen2.5-32b", "llama-3.1-70b"]
    rate("finetune", models, "RTX 40*,h100*,a100*", ["bf16"], [2048, 4096], [1, 4], [1, 8])
    rate("inference", models, "RTX 40*,h100*,a100*,mi300x", ["bf16", "fp8", "q4_k_m"],
         [4096, 32768], [1, 16, 64], [1, 2, 4])
    rate("inference", models[:1], "RTX 40*,h100*", ["bf16", "q4_k_m"],
         [1024 * 2 ** i for i in range(8)], list(range(1, 65)), [1])
    rates = [
        grid_rate("vLLM, Llama-3.1-8B bf16 on H100", {
            "model": "llama-3.1-8b", "workload": {"engine": "vllm"}, "hardware": {"gpu": "h100-sxm-80gb"}}),
        grid_rate("llama.cpp, Llama-3.1-8B Q4_K_M on RTX 4090", {
            "model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"}, "hardware": {"gpu": "rtx-4090"}}),
        grid_rate("transformers, Llama-3.1-8B bf16 on A100", {
            "model": "llama-3.1-8b", "workload": {"engine": "transformers"}, "hardware": {"gpu": "a100-sxm-80gb"}}),
        grid_rate("vLLM TP4, Qwen3-30B-A3B fp8 on 4x H100", {
            "model": "qwen3-30b-a3b", "workload": {"precision": "fp8", "engine": "vllm"},
            "hardware": {"gpu": "h100-sxm-80gb", "count": 4}}),
    ]
    training = [
        grid_rate("full fine-tune, Llama-3.1-8B on 8x H100, ZeRO-3", {
            "model": "llama-3.1-8b", "workload": {"task": "finetune"}, "training": {"zero_stage": 3},
            "hardware": {"gpu": "h100-sxm-80gb", "count": 8}}),
        grid_rate("QLoRA, Llama-3.1-70B on RTX 4090, paged AdamW", {
            "model": "llama-3.1-70b", "workload": {"task": "finetune"},
            "training": {"method": "qlora", "optimizer": "paged-adamw-8bit"}, "hardware": {"gpu": "rtx-4090"}}),
        grid_rate("pretrain, Llama-3.1-70B on 64x H100, TP8 PP2", {
            "model": "llama-3.1-70b", "workload": {"task": "pretrain"}, "training": {"global_batch_tokens": 4194304},
            "hardware": {"gpu": "h100-sxm-80gb", "count": 8, "nodes": 8, "tensor_parallel": 8,
                         "pipeline_parallel": 2}}),
    ]
    print(f"training_grid_configs_per_s={min(training):.0f}")
    print(f"grid_configs_per_s={min(rates):.0f}")


if __name__ == "__main__":
    main()
