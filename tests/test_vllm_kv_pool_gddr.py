"""vLLM's KV pool on 16-48 GB cards: what vLLM multiplies gpu_memory_utilization by (the CUDA driver's total,
engines.CUDA_DRIVER_RESERVED_GIB below the board's memory), its default by release (0.9 before 0.20, 0.92 from
it), and V0's profile-run sampler, which sorts the fp32 logits of max_num_seqs rows like V1's torch sampler."""

from __future__ import annotations

import pytest

from mlrig.estimators.engines import CUDA_DRIVER_RESERVED_GIB, vllm_default_gpu_memory_utilization
from mlrig.estimators.memory import CAL, _vllm_activation_bytes, estimate_memory, vllm_gpu_memory_utilization
from mlrig.planner import evaluate, resolve_plan
from mlrig.units import GiB

# Qwen2.5-3B-Instruct fp16 on a T4 under vLLM 0.6.6 (V0), max_model_len 4,096, the default utilization
T4_V0 = {"model": {"name": "Qwen/Qwen2.5-3B-Instruct"},
         "workload": {"task": "inference", "engine": "vllm", "engine_version": "0.6.6.post1", "precision": "fp16",
                      "max_model_len": 4096, "context_tokens": 4096},
         "hardware": {"gpu": "Tesla T4", "count": 1}}


def _plan(version: str | None, util: float | None = None) -> dict:
    w: dict = {"task": "inference", "engine": "vllm", "precision": "bf16", "max_model_len": 8192,
               "context_tokens": 8192}
    if version:
        w["engine_version"] = version
    if util:
        w["gpu_memory_utilization"] = util
    return {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"}, "workload": w,
            "hardware": {"gpu": "NVIDIA GeForce RTX 4090", "count": 1}}


def test_default_utilization_by_release() -> None:
    """vllm/config/cache.py: default=0.9 in the 0.16.0 and 0.19.0 wheels, 0.92 in 0.20.0 ... 0.27.0."""
    assert vllm_default_gpu_memory_utilization("0.6.6.post1") == 0.9
    assert vllm_default_gpu_memory_utilization("0.19.0") == 0.9
    assert vllm_default_gpu_memory_utilization("0.19.1") == 0.9
    assert vllm_default_gpu_memory_utilization("0.20.0") == 0.92
    assert vllm_default_gpu_memory_utilization("0.29.1") == 0.92
    assert vllm_default_gpu_memory_utilization(None) == 0.92  # the current release


def test_reservation_is_a_share_of_the_driver_total() -> None:
    """An RTX 4090 (23.99 GiB on the board) reserves 0.9 x 23.53 = 21.18 GiB under 0.19 and 0.92 x 23.53 =
    21.65 GiB under 0.20 (vLLM logs: "Free memory on device (../23.53 GiB)", "Desired GPU memory utilization is
    (0.92, 21.64 GiB)"); a plan's own utilization wins."""
    for version, share in (("0.19.0", 0.9), ("0.20.0", 0.92), ("0.20.0", 0.8)):
        r, _ = resolve_plan(_plan(version, share if share == 0.8 else None))
        assert vllm_gpu_memory_utilization(r.plan) == share
        m = estimate_memory(r)
        assert m.breakdown.per_gpu_gib == pytest.approx(share * (23.99 - CUDA_DRIVER_RESERVED_GIB), abs=0.005)


def test_default_change_moves_the_pool() -> None:
    """The 0.02 more of 23.53 GiB that 0.20 reserves goes to the KV pool: 0.47 GiB, ~3,800 tokens of
    Llama-3.1-8B's 128 KiB (the other terms are the same in 0.19 and 0.20)."""
    old = evaluate(_plan("0.19.0"))
    new = evaluate(_plan("0.20.0"))
    assert old.kv_cache_capacity_tokens is not None and new.kv_cache_capacity_tokens is not None
    gained = (new.kv_cache_capacity_tokens - old.kv_cache_capacity_tokens) * 131_072 / GiB
    assert gained == pytest.approx(0.02 * (23.99 - CUDA_DRIVER_RESERVED_GIB), abs=0.01)


def test_v0_profile_sorts_the_sampler_logits() -> None:
    """V0 profiles 256 dummy prompts sampled with top_k = vocab - 1, top_p = 0.99 (worker/model_runner.py
    profile_run), so Sampler casts their logits to fp32 and sorts them: 38 B x 256 x 151,936 = 1.38 GiB for
    Qwen2.5-3B, far above the 4,096-token forward (~0.41 GiB) and the former 1.75 fp32 copies (0.25 GiB)."""
    r, _ = resolve_plan(T4_V0)
    act = float(_vllm_activation_bytes(r.arch, r.gpu, last_stage=True, plan=r.plan))
    assert act >= 38 * 256 * 151_936
    assert act == pytest.approx(38 * 256 * 151_936 + (4096 + 2 * 256) * 2048 * 2, rel=1e-6)
    forward = 4096 * CAL.vllm_act_per_token_factor * (2048 + 11_008) * 2
    assert act > 3 * forward


def test_v0_t4_pool_hand_check() -> None:
    """The whole pool for the T4 case: 0.9 x (15.0 - 0.46) = 13.09 GiB, less 5.75 GiB of weights, the 1.39 GiB
    sampler peak and 0.135 GiB of non-torch memory: ~5.8 GiB, 36,864 B per token -> ~169k tokens. A vLLM 0.6.6
    log of this setup reports 5.79 GiB of weights and of KV cache ("# GPU blocks: 10533", 168,528 tokens) out of
    a 14.56 GiB total; before the sampler's sort was counted the pool came out 21 % larger."""
    m = evaluate(T4_V0)
    assert m.kv_cache_capacity_tokens is not None
    assert m.kv_cache_capacity_tokens == pytest.approx(168_528, rel=0.02)
