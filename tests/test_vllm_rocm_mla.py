"""vLLM 0.7's MLA decode: the absorbed weights it materialised and its Triton latent-cache read on ROCm.

Hand-checked values for `performance.vllm_absorbed_mla_decode_params` (vllm/attention/backends/mla/utils.py of
the 0.7 releases, removed by vLLM PR #14770 in 0.8.0) and the vLLM entry of efficiency.MLA_DECODE_ATTN_BW_REL."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators.performance import (
    _decode_cost,
    decode_step,
    mla_decode_attention_bw_rel,
    vllm_absorbed_mla_decode_params,
)
from mlrig.estimators.resolved import ResolvedPlan
from mlrig.planner import resolve_plan

DEEPSEEK = "deepseek-ai/DeepSeek-R1"


def resolved(gpu: str, version: str | None, **workload: Any) -> ResolvedPlan:
    """DeepSeek-R1 FP8 at TP 8 as `evaluate` resolves it, on vLLM `version` unless the workload says otherwise."""
    w = {"task": "inference", "precision": "fp8", "engine": "vllm", "batch_size": 4, "prompt_tokens": 3200,
         "output_tokens": 800, **workload}
    if version is not None:
        w["engine_version"] = version
    hardware = {"gpu": gpu, "count": 8, "tensor_parallel": 8}
    return resolve_plan({"model": DEEPSEEK, "workload": w, "hardware": hardware})[0]


def test_absorbed_mla_decode_weights_hand_checked() -> None:
    # DeepSeek-V3/R1: Lq 1,536, Lkv 512, 128 heads of 128 (no RoPE) + 64, v 128, hidden 7,168, 61 layers.
    # W_UQ_UK 1536 x 128*512 + W_UV_O 128*512 x 7168 = 570,425,344 elements a layer, in place of
    # W_UQ's no-RoPE part 1536 x 128*128 + kv_b_proj 512 x 128*256 + o_proj 128*128 x 7168 = 159,383,552
    r = resolved("MI300X", "0.7.3.dev138")
    assert vllm_absorbed_mla_decode_params(r, "vllm") == (570_425_344 - 159_383_552) * 61
    # in FP8 that is ~25 GB more read per decode step over the 8 GPUs (3.1 GB each)
    base = _decode_cost(resolved("MI300X", "0.8.0"), "vllm", 4, 3600.0).weight_bytes
    extra = _decode_cost(r, "vllm", 4, 3600.0).weight_bytes - base
    assert extra == pytest.approx(25.07e9, rel=1e-3)


def test_absorbed_weights_only_on_vllm_0_7_mla() -> None:
    # vLLM PR #14770 (0.8.0) decodes with the unabsorbed weights; before 0.7.1 vLLM had no MLA decode path
    for version in ("0.8.0", "0.7.0", None):
        assert vllm_absorbed_mla_decode_params(resolved("MI300X", version), "vllm") == 0.0
    # SGLang multiplies per head (w_kc / w_vc BMMs), nothing materialised
    sglang = resolved("MI300X", "0.4.2.post4", engine="sglang")
    assert vllm_absorbed_mla_decode_params(sglang, "sglang") == 0.0
    # the vendor does not matter: DSTACKR1's H200 nightly (0.7.4.dev181) ran the same code
    assert vllm_absorbed_mla_decode_params(resolved("H200 SXM", "0.7.4.dev181"), "vllm") > 0


def test_vllm_rocm_triton_mla_read_rate() -> None:
    # vLLM's TritonMLABackend on ROCm (the ported SGLang split-KV kernel) before AITER's MLA decode
    early = resolved("MI300X", "0.7.3.dev138")
    assert mla_decode_attention_bw_rel(early, "vllm") == pytest.approx(0.30)
    assert mla_decode_attention_bw_rel(resolved("MI300X", "0.8.3"), "vllm") == 1.0
    assert mla_decode_attention_bw_rel(resolved("H200 SXM", "0.7.4.dev181"), "vllm") == 1.0

    # DSTACKR1-0054 / -0057 (vLLM 0.7.3, 8x MI300X): median TPOT 108.6 / 76.7 ms at 128 / 64 users, ~0.5 ms per
    # extra sequence at ~3,600 tokens of context; the full-rate latent read gives a step well under that
    def per_seq_ms(r: ResolvedPlan) -> float:
        return (decode_step(r, 128, 3600).seconds - decode_step(r, 64, 3600).seconds) / 64 * 1e3
    late = resolved("MI300X", "0.8.3")
    assert per_seq_ms(late) < 0.3
    assert 0.3 < per_seq_ms(early) < 0.7
