"""MoE decode in llama.cpp's HIP builds (efficiency.py 1-HIP-MMID and 1-HIP-MOE).

Before PR #13014 (April 2025) a batch-1 MUL_MAT_ID copied the expert ids to the host, synchronised the stream and
launched one mat-vec per routed expert: host time per routed expert, per MUL_MAT_ID (three per MoE FFN), per MoE layer,
fitted on the PR's own RX 6800 table (DeepSeek-V2-Lite Q4_0 tg128: 27.26 t/s on master, 52.74 with the PR; the dense
Llama 8B control 62.02 / 60.90). Every HIP build also launches a MoE layer's routing kernels one by one (no graphs):
a fixed time per MoE layer. Dense models, CUDA builds and later builds keep their figures."""

from __future__ import annotations

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import hip_mmid_fallback
from mlrig.planner import evaluate


def _decode_tok_s(model: str, precision: str, version: str | None, gpu: str = "AMD Radeon RX 6800") -> float:
    workload = {"task": "inference", "precision": precision, "engine": "llama.cpp", "batch_size": 1,
                "load": "static", "prompt_tokens": 0, "output_tokens": 128, "flash_attention": False}
    if version:
        workload["engine_version"] = version
    r = evaluate({"model": {"name": model}, "workload": workload, "hardware": {"gpu": gpu, "count": 1}})
    assert r.performance is not None
    return float(r.performance.decode_tok_s)


def test_the_fallback_is_hip_builds_labelled_up_to_april_2025() -> None:
    assert hip_mmid_fallback("llama.cpp-hip", "2024-09")
    assert hip_mmid_fallback("llama.cpp-hip", "2025-04")  # the PR's own "master" column: mid-April
    assert not hip_mmid_fallback("llama.cpp-hip", "2025-05")
    assert not hip_mmid_fallback("llama.cpp-hip", None)  # current builds
    assert hip_mmid_fallback("llama.cpp-hip", "b3000")  # builds up to b4599 (2025-01-30) predate PR #13014
    assert hip_mmid_fallback("llama.cpp-hip", "b4599+rocm")
    assert not hip_mmid_fallback("llama.cpp-hip", "b4600")  # not known to predate it: the current path
    assert not hip_mmid_fallback("llama.cpp", "2024-09")  # CUDA builds: fitted without it


def test_the_pr_tables_step_time_difference_is_reproduced() -> None:
    """DeepSeek-V2-Lite: 26 MoE layers (the first is dense), 6 routed experts of 64. The published pair differs by
    1/27.26 - 1/52.74 s = 17.72 ms a token = 26 x 3 x 6 x 37.9 us; the model's pair must differ by that, whatever its
    (poor) absolute figure for the model."""
    model = "deepseek-ai/DeepSeek-V2-Lite"
    old, new = _decode_tok_s(model, "q4_0", "2025-04"), _decode_tok_s(model, "q4_0", "2025-05")
    assert 1 / old - 1 / new == pytest.approx(1 / 27.26 - 1 / 52.74, rel=0.02)
    per_token_s = eff.HIP_MMID_FALLBACK_S_PER_EXPERT * 26 * 3 * 6
    assert abs(per_token_s - 17.72e-3) < 0.2e-3


def test_dense_models_do_not_take_the_moe_costs() -> None:
    """The PR's control: Llama 8B Q4_0 moved from 62.02 to 60.90 t/s (noise); the model keeps one figure."""
    model = "meta-llama/Meta-Llama-3.1-8B"
    assert _decode_tok_s(model, "q4_0", "2025-04") == pytest.approx(_decode_tok_s(model, "q4_0", "2025-05"),
                                                                     rel=1e-9)


def test_hip_moe_layers_cost_a_fixed_host_time_that_cuda_does_not() -> None:
    """Mixtral-8x7B Q4_0 (32 MoE layers) on an MI300X, current builds: the HIP build's step is 32 x 50 us = 1.6 ms
    longer than it would be without the MoE layer's launches; a CUDA card (H100) is not charged (checked by setting
    the constant to 0 there and here)."""
    model = "mistralai/Mixtral-8x7B-v0.1"
    hip = _decode_tok_s(model, "q4_0", None, "mi300x")
    cuda = _decode_tok_s(model, "q4_0", None, "h100-sxm-80gb")
    saved = eff.HIP_MOE_LAYER_S
    try:
        eff.HIP_MOE_LAYER_S = 0.0
        hip0 = _decode_tok_s(model, "q4_0", None, "mi300x")
        cuda0 = _decode_tok_s(model, "q4_0", None, "h100-sxm-80gb")
    finally:
        eff.HIP_MOE_LAYER_S = saved
    assert 1 / hip - 1 / hip0 == pytest.approx(32 * 50e-6, rel=0.01)
    assert cuda == pytest.approx(cuda0, rel=1e-12)


def test_mixtral_on_an_old_hip_build_pays_the_per_expert_launches() -> None:
    """Mixtral's top-2 routing on the old path: 32 layers x 3 MUL_MAT_ID x 2 experts x 37.9 us = 7.28 ms a token more
    than the same plan labelled after the PR (both after the F16 mat-vec rewrite, so only this differs)."""
    model = "mistralai/Mixtral-8x7B-v0.1"
    old, new = _decode_tok_s(model, "fp16", "2025-04", "mi300x"), _decode_tok_s(model, "fp16", "2025-05", "mi300x")
    assert 1 / old - 1 / new == pytest.approx(32 * 3 * 2 * 37.9e-6, rel=0.01)
