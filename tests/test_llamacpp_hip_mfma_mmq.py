"""Quantised prompt GEMMs of llama.cpp's HIP build on CDNA 3 matrix cores (efficiency.HIP_MFMA_MMQ_PREFILL_EFF).

From PR #14624 (late July 2025) the HIP build runs a prompt's quantised GEMMs as MMQ tiles on CDNA 3's MFMA units; they
reach 0.65 of the rocBLAS-class FP16 rate mlrig prices, not QUANT_PREFILL_EFF's 0.80, fitted on AMD's pp512-pp4096 runs
on 8 MI300X (AMDLCPP-0004, -0008, -0012, -0013..-0021). Decode (MMVQ), other GPUs and builds before the PR keep
their figures."""

from __future__ import annotations

from typing import Any

import pytest
from llamacpp_moe_plans import moe_plan, prefill_tok_s

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import hip_mfma_mmq
from mlrig.planner import evaluate

LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


def test_the_mfma_mmq_is_cdna_in_builds_from_the_pr() -> None:
    mi300x, mi210 = resolve_gpu("mi300x"), resolve_gpu("AMD Instinct MI210")
    assert hip_mfma_mmq(mi300x, "llama.cpp-hip", None)
    assert hip_mfma_mmq(mi300x, "llama.cpp-hip", "2025-08")
    assert hip_mfma_mmq(mi300x, "llama.cpp-hip", "b6652")
    assert not hip_mfma_mmq(mi210, "llama.cpp-hip", None)  # CDNA 2: rocBLAS at a prompt's micro-batch
    assert not hip_mfma_mmq(mi300x, "llama.cpp-hip", "2025-07")
    assert not hip_mfma_mmq(mi300x, "llama.cpp-hip", "b5593")  # 2025-06-05: before the PR
    for name in ("mi50-32gb", "AMD Radeon RX 7900 XTX"):  # GCN / RDNA 3: dp4a MMQ (HIP_DP4A_MMQ_EFF)
        assert not hip_mfma_mmq(resolve_gpu(name), "llama.cpp-hip", None), name
    assert not hip_mfma_mmq(mi300x, "llama.cpp", None)  # the Vulkan build's figures
    assert not hip_mfma_mmq(resolve_gpu("h100-sxm-80gb"), "llama.cpp", None)


def _dense(version: str | None, prompt: int = 512, output: int = 0) -> dict[str, Any]:
    plan = moe_plan(LLAMA_70B, "AMD Instinct MI300X", version=version, count=8, prompt=prompt)
    plan["workload"]["output_tokens"] = output
    return plan


def test_a_dense_prompt_pass_differs_from_the_old_build_only_by_the_mmq_rate() -> None:
    """Llama-3.1-70B Q4_K_M: a 2025-07 label (before the PR) is priced at QUANT_PREFILL_EFF; the current build at
    HIP_MFMA_MMQ_PREFILL_EFF; with the two made equal the speeds match, so nothing else separates them."""
    new, old = prefill_tok_s(_dense(None)), prefill_tok_s(_dense("2025-07"))
    assert new < old
    saved = eff.HIP_MFMA_MMQ_PREFILL_EFF
    try:
        eff.HIP_MFMA_MMQ_PREFILL_EFF = eff.QUANT_PREFILL_EFF
        assert prefill_tok_s(_dense(None)) == pytest.approx(old, rel=1e-12)
    finally:
        eff.HIP_MFMA_MMQ_PREFILL_EFF = saved


def test_decode_does_not_take_the_mmq_rate() -> None:
    def decode(version: str | None) -> float:
        r = evaluate(_dense(version, prompt=0, output=128))
        assert r.performance is not None
        return float(r.performance.decode_tok_s)

    saved = eff.HIP_MFMA_MMQ_PREFILL_EFF
    try:
        base = decode(None)
        eff.HIP_MFMA_MMQ_PREFILL_EFF = 0.1
        assert decode(None) == pytest.approx(base, rel=1e-12)
    finally:
        eff.HIP_MFMA_MMQ_PREFILL_EFF = saved


@pytest.mark.parametrize(("model", "version", "flash_attention", "published_tok_s"), [
    (LLAMA_70B, "b6652", True, 1340.55),  # AMDLCPP-0012 (-fa 1)
    ("deepseek-ai/DeepSeek-V3", "b6652", False, 514.07),  # AMDLCPP-0008 (llama-bench's default: off)
    ("deepseek-ai/DeepSeek-V3", "b5997", False, 439.14),  # AMDLCPP-0004
])
def test_amds_pp512_runs_on_8_mi300x_come_within_15_percent(model: str, version: str, flash_attention: bool,
                                                            published_tok_s: float) -> None:
    plan = moe_plan(model, "AMD Instinct MI300X", version=version, count=8)
    plan["workload"]["flash_attention"] = flash_attention
    tok_s = prefill_tok_s(plan)
    assert tok_s == pytest.approx(published_tok_s, rel=0.15)  # +1 / +11 / +8 % (in the order above) when written
