"""A deterministic stand-in for mlrig.planner.evaluate, for advisor tests (weights + optimizer bytes only)."""

from __future__ import annotations

from typing import Any

from mlrig.catalog.gpus import GPU
from mlrig.results import MemoryBreakdown, Performance, PlanResult

PARAMS = {"llama-3.1-70b": 70.6e9, "llama-3.1-8b": 8.03e9, "llama-3.2-3b": 3.21e9, "qwen2.5-32b": 32.8e9}
BYTES = {"bf16": 2.0, "fp16": 2.0, "q8_0": 1.0625, "q4_k_m": 0.6, "nf4": 0.55, "int4": 0.55}


def stub_evaluate(plan: dict[str, Any], gpu: GPU) -> PlanResult:
    """16 B/param for full Adam fine-tuning, 2 B (LoRA) or ~0.55 B (QLoRA) plus 10%; inference by precision."""
    name = plan["model"] if isinstance(plan["model"], str) else plan["model"]["name"]
    params = PARAMS[name]
    task = plan.get("workload", {}).get("task", "inference")
    method = (plan.get("training") or {}).get("method", "full")
    hw = plan["hardware"]
    split = hw.get("tensor_parallel", 1) * hw.get("pipeline_parallel", 1)
    if task == "inference":
        b = BYTES[plan.get("workload", {}).get("precision", "bf16")]
    else:
        b = {"full": 16.0, "lora": 2.2, "qlora": 0.6}[method]
    need = params * b * 1.1 / 2**30 / split + 1.0
    cap = gpu.capacity_gib
    fits = need <= cap
    perf = Performance()
    if task == "inference":
        perf.decode_tok_s = (
            gpu.memory_bandwidth_gb_s * 1e9 * 0.7 * split / (params * b)
            if split > 1
            else (gpu.memory_bandwidth_gb_s * 1e9 * 0.7 / (params * b))
        )
        perf.throughput_tok_s = perf.decode_tok_s
    else:
        tflops = gpu.tensor_tflops("bf16") or 10.0
        replicas = hw.get("count", 1) // split
        perf.train_tokens_per_s = tflops * 1e12 * 0.4 * max(replicas, 1) * (split if split > 1 else 1) / (6 * params)
    mem = MemoryBreakdown(per_gpu_gib=need, weights_gib=need, gpu_capacity_gib=cap, headroom_gib=cap - need)
    return PlanResult(fits=fits, gpu=gpu.id, memory=mem, performance=perf)
