"""Plans and readings shared by the llama.cpp MoE prompt-pass tests (HIP and CUDA builds)."""

from __future__ import annotations

from typing import Any

from mlrig.estimators.performance import mmq_expert_rows_factor
from mlrig.planner import evaluate, resolve_plan


def moe_plan(model: str, gpu: str, precision: str = "q4_k_m", version: str | None = None, count: int = 1,
             prompt: int = 512) -> dict[str, Any]:
    """A llama.cpp prompt pass of `prompt` tokens (no output), batch 1, flash attention off."""
    workload: dict[str, Any] = {"task": "inference", "precision": precision, "engine": "llama.cpp", "batch_size": 1,
                                "load": "static", "prompt_tokens": prompt, "output_tokens": 0,
                                "flash_attention": False}
    if version:
        workload["engine_version"] = version
    return {"model": {"name": model}, "workload": workload, "hardware": {"gpu": gpu, "count": count}}


def tile_factor(model: str, gpu: str, tokens: int = 512, **kw: Any) -> float:
    """`mmq_expert_rows_factor` of that plan's resolved setup at `tokens` per micro-batch."""
    r, _ = resolve_plan(moe_plan(model, gpu, **kw))
    return float(mmq_expert_rows_factor(r, r.engine, tokens))


def prefill_tok_s(plan: dict[str, Any]) -> float:
    res = evaluate(plan)
    assert res.performance is not None
    return float(res.performance.prefill_tok_s)
