"""TensorRT-LLM's KV pool (mlrig/estimators/memory.py): kv_cache_free_gpu_mem_fraction of the memory left once
the engine, with its embedding whole on every TP rank, and the TP communication buffers are allocated."""

from __future__ import annotations

import pytest

from mlrig.estimators.memory import (
    CAL,
    estimate_memory,
    split_weights,
    trtllm_tp_buffer_bytes,
    trtllm_weights_per_gpu_bytes,
)
from mlrig.planner import evaluate, resolve_plan
from mlrig.units import GiB

# Llama-3-70B fp16, TP 4 on A100 SXM4 40GB, TensorRT-LLM 0.11: 64 x (1,024 + 1,024), a static batch
TRT_70B = {"model": {"name": "meta-llama/Meta-Llama-3-70B"},
           "workload": {"task": "inference", "precision": "fp16", "engine": "trt-llm", "engine_version": "0.11.0",
                        "load": "static", "batch_size": 64, "prompt_tokens": 1024, "output_tokens": 1024,
                        "max_num_seqs": 64},
           "hardware": {"gpu": "NVIDIA A100 SXM4 40GB", "count": 4, "tensor_parallel": 4}}


def _with_engine(plan: dict, engine: str, tp: int) -> dict:
    return {**plan, "workload": {**plan["workload"], "engine": engine},
            "hardware": {**plan["hardware"], "count": tp, "tensor_parallel": tp}}


def test_embedding_whole_on_every_tp_rank() -> None:
    """convert_checkpoint's --use_parallel_embedding is off by default: each of 4 ranks holds the whole
    128,256 x 8,192 fp16 table, 3/4 of it (1.47 GiB) more than Megatron-style vocab-parallel splitting."""
    r, _ = resolve_plan(TRT_70B)
    extra = trtllm_weights_per_gpu_bytes(r.arch, r.weight_parts, 4, 1) - split_weights(r.arch, r.weight_parts, 4, 1)
    assert extra == pytest.approx(128_256 * 8_192 * 2 * 3 / 4, rel=1e-6)
    assert extra / GiB == pytest.approx(1.468, abs=0.001)
    # no TP: nothing to replicate
    assert trtllm_weights_per_gpu_bytes(r.arch, r.weight_parts, 1, 1) == split_weights(r.arch, r.weight_parts, 1, 1)


def test_pool_is_the_fraction_of_what_the_engine_and_tp_buffers_leave() -> None:
    """Hand check: 39.82 GiB card - 34.3219 GiB weights (with the whole embedding) - 0.7215 GiB activations (the
    0.11 engine's 8,192-token buffer: 8,192 x (2 x 8,192 + 3 x 28,672 / 4) x 2 B, plus 4.69 x the fp32 logits of
    64 rows of 128,256 for the runtime's and decoder's buffers: 774,746,276 B) - 0.45 GiB CUDA context - 0.41
    GiB TP buffers = 3.9166 GiB, x 0.9 = 3.5249 GiB; at 80 layers x 8 KV heads / 4 x 128 x 2 x 2 B = 81,920 B
    per token on each GPU that is 2,887 blocks of 16 = 46,192 tokens (67,952 before the embedding and the TP
    buffers were counted, 45,792 with vLLM's profile as the activation proxy)."""
    r, _ = resolve_plan(TRT_70B)
    m = estimate_memory(r)
    assert m.breakdown.weights_gib == pytest.approx(34.3219, abs=1e-3)
    free = (m.breakdown.gpu_capacity_gib - m.breakdown.weights_gib - m.breakdown.activations_gib
            - CAL.cuda_context_bytes / GiB - trtllm_tp_buffer_bytes(4) / GiB)
    assert m.breakdown.kv_cache_gib == pytest.approx(0.9 * free, abs=2e-3)
    assert m.breakdown.activations_gib == pytest.approx(774_746_276 / GiB, abs=1e-3)
    assert m.kv_cache_capacity_tokens == 46_192


def test_static_batch_past_the_pool_runs_in_more_waves() -> None:
    """The 46,192-token pool admits 46,192 // 2,048 = 22 sequences at full length (GUARANTEED_NO_EVICT), so the
    64 run as 22 + 22 + 20: three waves, where the pool without the whole embedding and the TP buffers
    (67,952 tokens: 33 + 31) gave two."""
    res = evaluate(TRT_70B)
    assert res.performance is not None
    assert "runs 22 of the 64 sequences at once" in res.performance.explanation
    assert "3 waves" in res.performance.explanation


def test_other_paged_engines_unchanged() -> None:
    """Only TensorRT-LLM's pool takes the replicated embedding and TP buffers: LMDeploy's (the same
    free-memory rule) and vLLM's keep the vocab-parallel split."""
    for engine in ("lmdeploy", "vllm"):
        r, _ = resolve_plan(_with_engine(TRT_70B, engine, 4))
        m = estimate_memory(r)
        assert m.breakdown.weights_gib == pytest.approx(split_weights(r.arch, r.weight_parts, 4, 1) / GiB, abs=1e-3)


def test_pytorch_backend_splits_the_embedding() -> None:
    """From 1.0 TensorRT-LLM runs the PyTorch backend by default, whose embedding is TP-split: the same plan at
    1.2 (or with no version: the current release) keeps the vocab-parallel weights; the TP buffers still count."""
    for version in ("1.2", None):
        plan = {**TRT_70B, "workload": {**TRT_70B["workload"], "engine_version": version}}
        r, _ = resolve_plan(plan)
        m = estimate_memory(r)
        assert m.breakdown.weights_gib == pytest.approx(split_weights(r.arch, r.weight_parts, 4, 1) / GiB, abs=1e-3)
        free = (m.breakdown.gpu_capacity_gib - m.breakdown.weights_gib - m.breakdown.activations_gib
                - CAL.cuda_context_bytes / GiB - trtllm_tp_buffer_bytes(4) / GiB)
        assert m.breakdown.kv_cache_gib == pytest.approx(0.9 * free, abs=2e-3)
