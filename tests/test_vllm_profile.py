"""vLLM V1's memory profile by release: the sampler warm-up's peak, the larger of it and the forward, the
non-torch memory before and after CUDA graphs joined the profile (mlrig.estimators.engines / memory)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.engines import vllm_graphs_in_profile, vllm_sampler_path
from mlrig.estimators.memory import estimate_memory
from mlrig.estimators.resolved import resolve
from mlrig.units import GiB
from mlrig.workload import Plan

# the llm-d-planner H100 (torch reports 79.18 GiB)
H100 = resolve_gpu("h100-pcie-80gb").model_copy(update={"memory_gib": 79.18})


def vllm(model: str, version: str | None, tp: int = 1, **workload: Any) -> Any:
    data: dict[str, Any] = {"model": model,
                            "workload": {"engine": "vllm", "precision": "bf16", "engine_version": version, **workload},
                            "hardware": {"count": tp, "tensor_parallel": tp}}
    return estimate_memory(resolve(resolve_model(model), Plan.model_validate(data), H100))


def test_sampler_path_by_release() -> None:
    assert vllm_sampler_path("0.11.0") == "sort"  # FlashInfer only as the wheel's extra
    assert vllm_sampler_path("0.16.0") == "sort"  # FlashInfer's sampler opt-in from 0.12
    assert vllm_sampler_path("0.17.0") == "triton"
    assert vllm_sampler_path(None) == "triton"  # current release
    assert vllm_sampler_path("0.10.1.1+flashinfer") == "flashinfer"
    assert not vllm_graphs_in_profile("0.17.1") and vllm_graphs_in_profile("0.18.0")
    assert vllm_graphs_in_profile("0.26.1") and not vllm_graphs_in_profile("0.27.0")
    assert not vllm_graphs_in_profile(None)  # the current release (0.33) profiles graphs afterwards


def test_sort_sampler_peak_hand_checked() -> None:
    """vLLM 0.11.0, Qwen3-32B on one H100: the profile's peak is the sampler's sort of 1,024 x 151,936 fp32
    logits, 38 B per element (engines.VLLM_SAMPLER_BYTES_PER_LOGIT) = 5.507 GiB, plus the dummy forward's
    hidden states (8,192 + 2 x 1,024) x 5,120 x 2 B = 0.098 GiB: 5.60 GiB. llm-d-planner measured 5.64 (m0083)."""
    est = vllm("Qwen/Qwen3-32B", "0.11.0", max_model_len=16000, context_tokens=16000)
    expected = (38 * 1024 * 151936 + (8192 + 2 * 1024) * 5120 * 2) / GiB
    assert est.breakdown.activations_gib == pytest.approx(expected, rel=1e-3)
    assert est.breakdown.activations_gib == pytest.approx(5.64, rel=0.02)


def test_triton_sampler_peak_is_smaller_than_the_sort() -> None:
    """From 0.17 the top-k/top-p mask is a Triton kernel in place: 14 B per element + 128 scratch rows
    (Llama-3.1-8B: 1.71 + 0.06 + 0.08 = 1.85 GiB; llm-d-planner 0.19.0 measured 1.89, m0107)."""
    new = vllm("meta-llama/Llama-3.1-8B-Instruct", "0.19.0", max_model_len=8192, gpu_memory_utilization=0.95)
    old = vllm("meta-llama/Llama-3.1-8B-Instruct", "0.11.0", max_model_len=8192, gpu_memory_utilization=0.95)
    expected = ((14 * 1024 + 4 * 128) * 128256 + (8192 + 2 * 1024) * 4096 * 2) / GiB
    assert new.breakdown.activations_gib == pytest.approx(expected, rel=1e-3)
    assert new.breakdown.activations_gib == pytest.approx(1.89, rel=0.03)
    assert old.breakdown.activations_gib == pytest.approx(4.76, rel=0.02)  # m0073
    assert old.kv_cache_capacity_tokens < new.kv_cache_capacity_tokens


def test_peak_is_the_larger_of_forward_and_sampler() -> None:
    """A 32k-vocab model's 14-byte sampler warm-up (0.43 GiB) is small next to its 8,192-token forward:
    the peak is the forward's, 3.85 x (4,096 + 11,008) x 2 B x 8,192 tokens = 0.89 GiB, not their sum.
    The sort's 38 B per logit (1.16 GiB with the hidden states) exceeds it."""
    forward = 3.85 * (4096 + 11008) * 2 * 8192 / GiB
    for version in ("0.19.0", "0.10.1+flashinfer"):
        est = vllm("codellama/CodeLlama-7b-hf", version, max_model_len=8192)
        assert est.breakdown.activations_gib == pytest.approx(forward, rel=1e-3), version
    sort = vllm("codellama/CodeLlama-7b-hf", "0.11.0", max_model_len=8192)
    assert sort.breakdown.activations_gib == pytest.approx((38 * 1024 * 32016 + 10240 * 4096 * 2) / GiB, rel=1e-3)


def test_non_torch_memory_by_release() -> None:
    """0.11: 0.135 GiB alone, 0.545 with TP 2 (m0059 / m0069); 0.19 (graphs captured in the profile): 0.25
    alone, 2.1 with TP 2-4 (m0108 / m0111 / m0114)."""
    assert vllm("Qwen/Qwen3-32B", "0.11.0").breakdown.overhead_gib == pytest.approx(0.135)
    assert vllm("Qwen/Qwen3-32B", "0.11.0", tp=2).breakdown.overhead_gib == pytest.approx(0.545)
    assert vllm("Qwen/Qwen3-32B", "0.19.0").breakdown.overhead_gib == pytest.approx(0.25)
    assert vllm("Qwen/Qwen3-32B", "0.19.0", tp=2).breakdown.overhead_gib == pytest.approx(2.1)


def test_qwen3_32b_on_one_h100_starts_by_release_and_sampler() -> None:
    """llm-d-planner, vLLM 0.11.0: Qwen3-32B on one H100 starts at max-model-len 16000 (4.45 GiB of KV,
    m0086) and fails at 32000 ('No KV cache room', m0103). With FlashInfer's sampler (14 B per logit, not
    the sort's 38) the profile leaves ~3.5 GiB more: 30,000 tokens (7.3 GiB at 256 KiB/token) then fit, of a
    reservation taken of the CUDA driver's 79.19 GiB (32,000 did when it was taken of the board's 79.65)."""
    assert vllm("Qwen/Qwen3-32B", "0.11.0", max_model_len=16000, context_tokens=16000).fits
    assert not vllm("Qwen/Qwen3-32B", "0.11.0", max_model_len=32000, context_tokens=32000).fits
    assert not vllm("Qwen/Qwen3-32B", "0.11.0", max_model_len=30000, context_tokens=30000).fits
    assert vllm("Qwen/Qwen3-32B", "0.11.0+flashinfer", max_model_len=30000, context_tokens=30000).fits


def test_v0_profile_at_long_max_model_len_is_sharded_by_tp() -> None:
    """vLLM 0.6.3 (V0, no chunked prefill): the profile run pushes max_num_batched_tokens = max(max_model_len,
    2048) = 91,680 tokens through the model. Llama-3.1-405B (hidden 16,384, MLP 53,248) at TP 8 holds 1/8 of the
    MLP intermediates per GPU: 91,680 x 3.85 x (16,384 + 53,248 / 8) x 2 B = 15.15 GiB, more than V0's sampler
    warm-up after it (38 x 256 x 128,256 B = 1.16 GiB; unsharded it would be 45.99 GiB, and 0.9 x 79.19 GiB
    less 47.7 GiB of FP8 weights leaves no KV pool). dstack ran this setup (DSTACKCMP-0001..0017), and V0 refuses to
    start unless the pool holds one max_model_len sequence, so the pool must hold at least 91,680 tokens."""
    plan = Plan.model_validate({
        "model": {"name": "meta-llama/Llama-3.1-405B"},
        "workload": {"engine": "vllm", "precision": "fp8", "engine_version": "0.6.3",
                     "max_model_len": 91680, "context_tokens": 34832},
        "hardware": {"gpu": "NVIDIA H100 SXM", "count": 8, "tensor_parallel": 8}})
    est = estimate_memory(resolve(resolve_model("meta-llama/Llama-3.1-405B"), plan, resolve_gpu("NVIDIA H100 SXM")))
    expected = max(91680 * 3.85 * (16384 + 53248 / 8) * 2, 38 * 256 * 128256) / GiB
    assert est.breakdown.activations_gib == pytest.approx(expected, rel=1e-3)
    assert est.kv_cache_capacity_tokens >= 91680
    # at TP 1 the sharded and the fitted forms are the same: Llama-3.1-8B, V0 at 8,192 tokens, where the sampler's
    # sort of 256 x 128,256 logits (1.23 GiB with the hidden states) is the larger
    one = vllm("meta-llama/Llama-3.1-8B-Instruct", "0.6.3", max_model_len=8192)
    assert one.breakdown.activations_gib == pytest.approx(
        max(8192 * 3.85 * (4096 + 14336) * 2, 38 * 256 * 128256 + (8192 + 2 * 256) * 4096 * 2) / GiB, rel=1e-3)
