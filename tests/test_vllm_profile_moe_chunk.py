"""vLLM's profile run for MoE models: fused_moe runs the routed experts in chunks of VLLM_FUSED_MOE_CHUNK_SIZE
tokens (vllm/envs.py, fused_moe.py `fused_experts_impl`), so their intermediates stop growing at the chunk
(mlrig.estimators.memory `_vllm_activation_bytes`)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import _vllm_activation_bytes, _vllm_fused_moe_chunk_tokens, estimate_memory
from mlrig.estimators.resolved import resolve
from mlrig.planner import evaluate
from mlrig.units import GiB
from mlrig.workload import Plan

H200 = resolve_gpu("H200 SXM")


def r1_plan(**workload: Any) -> Plan:
    """The dstack H200 server of DSTACKR1-0088: DeepSeek-R1 FP8, TP 8, vLLM 0.7.4 nightly (V0), 128 users."""
    w: dict[str, Any] = {"task": "inference", "precision": "fp8", "engine": "vllm", "engine_version": "0.7.4.dev181",
                         "batch_size": 128, "prompt_tokens": 3200, "output_tokens": 800, "load": "concurrency"}
    return Plan.model_validate({"model": {"name": "deepseek-ai/DeepSeek-R1"}, "workload": {**w, **workload},
                                "hardware": {"gpu": "H200 SXM", "count": 8, "tensor_parallel": 8}})


def test_chunk_size_by_release() -> None:
    assert _vllm_fused_moe_chunk_tokens("0.5.3") == 65536  # envs.py 0.5.3 - 0.5.5
    assert _vllm_fused_moe_chunk_tokens("0.6.0") == 32768  # from 0.6.0 (read up to 0.11.0)
    assert _vllm_fused_moe_chunk_tokens("0.7.4.dev181") == 32768
    assert _vllm_fused_moe_chunk_tokens(None) == 32768


def test_deepseek_r1_profile_past_the_chunk_hand_checked() -> None:
    """DeepSeek-R1 at TP 8 (hidden 7,168, 8 of 256 experts of 2,048, one shared expert of 2,048), V0 profiling
    max_model_len = 163,840 tokens. Per token, in units of 3.85 x 2 bytes: hidden + shared / 8 = 7,424 on every
    token, 8 x (2,048 / 8 + 7,168) = 59,392 for the routed experts on at most 32,768 tokens:
    3.85 x 2 x (163,840 x 7,424 + 32,768 x 59,392) = 24,351,290,163 B = 22.68 GiB (78.5 GiB if the experts'
    intermediates grew with all 163,840 tokens)."""
    plan = r1_plan(max_model_len=163840)
    arch = resolve_model("deepseek-ai/DeepSeek-R1")
    act = _vllm_activation_bytes(arch, H200, last_stage=False, plan=plan, tp=8)
    assert act == pytest.approx(24_351_290_163, rel=1e-6)
    unchunked = 3.85 * 2 * 163840 * (7424 + 59392)
    assert unchunked / GiB == pytest.approx(78.5, abs=0.1)
    # up to the chunk the profile stays linear in the tokens; past it only the unchunked part grows
    at_chunk = _vllm_activation_bytes(arch, H200, last_stage=False, plan=r1_plan(max_model_len=32768), tp=8)
    assert at_chunk == pytest.approx(3.85 * 2 * 32768 * (7424 + 59392), rel=1e-6)
    assert act - at_chunk == pytest.approx(3.85 * 2 * (163840 - 32768) * 7424, rel=1e-6)


def test_dense_model_profile_stays_linear() -> None:
    """A dense model has no fused-MoE chunk: Llama-3.1-8B's V0 profile at 131,072 tokens is 4 x that at 32,768."""
    def act(tokens: int) -> float:
        plan = Plan.model_validate({"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
                                    "workload": {"engine": "vllm", "engine_version": "0.7.3", "max_model_len": tokens}})
        return float(_vllm_activation_bytes(resolve_model("meta-llama/Llama-3.1-8B-Instruct"), H200, False, plan))
    assert act(131072) == pytest.approx(4 * act(32768), rel=1e-9)


def test_dstack_r1_server_starts_and_its_pool_caps_the_running_sequences() -> None:
    """The dstack H200 server ran `vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 8` at the model's
    max_model_len 163,840 (README @ 7f37e66) and started. Its throughput and TPOT at 128 users equal those at 64
    (DSTACKR1-0088/-0090 vs -0091/-0093), so 128 sequences of 3,200 + 800 tokens did not run at once, while 64 did:
    the KV pool holds more than 64 and fewer than 128 of them."""
    res = estimate_memory(resolve(resolve_model("deepseek-ai/DeepSeek-R1"), r1_plan(max_model_len=163840), H200))
    assert res.fits
    assert res.breakdown.activations_gib == pytest.approx(22.68, abs=0.1)  # 22.9 with V0's logits added
    assert res.kv_cache_capacity_tokens is not None
    assert 64 < res.kv_cache_capacity_tokens / 4000 < 128
    # the product path gives it a speed (a setup the engine refuses has none)
    assert evaluate(r1_plan(max_model_len=163840)).performance.throughput_tok_s is not None
