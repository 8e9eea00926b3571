"""SGLang's eager extend passes (performance.sglang_prefill_host_layer_s, efficiency.SGLANG_EXTEND_HOST_LAYER_S) and its
fused-MoE expert read rate (efficiency.MOE_EXPERT_BW_REL["sglang"]), checked by hand and on the published rows they
were chosen on (TONYGH200, INFXR1H200: fit rows)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import prefill_pass, sglang_prefill_host_layer_s
from mlrig.estimators.resolved import ResolvedPlan
from mlrig.planner import resolve_plan
from mlrig.validation.runner import check, load_rows


def resolved(model: str, gpu: str, engine: str, prompt: int, precision: str = "bf16", **workload: Any) -> ResolvedPlan:
    w = {"task": "inference", "precision": precision, "engine": engine, "batch_size": 1, "prompt_tokens": prompt,
         "output_tokens": 64, **workload}
    return resolve_plan({"model": model, "workload": w, "hardware": {"gpu": gpu, "count": 1}})[0]


def test_only_sglang_pays_the_eager_extend_host_time() -> None:
    r = resolved("Qwen/Qwen2.5-3B-Instruct", "GH200", "sglang", 60, engine_version="0.5.5.post3")
    assert sglang_prefill_host_layer_s(r, "sglang") == 300e-6
    assert sglang_prefill_host_layer_s(r, "vllm") == 0.0
    assert sglang_prefill_host_layer_s(r, "trt-llm") == 0.0


def test_short_prompts_of_a_small_model_are_host_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    # Qwen2.5-3B (36 layers) on a GH200, one 60-token prompt: the GPU's work is ~2-3 ms, the host's launches
    # 36 x 300 us = 10.8 ms; the overlapped pass takes at least the host's time and at most ~1.19x the larger part
    r = resolved("Qwen/Qwen2.5-3B-Instruct", "GH200", "sglang", 60, engine_version="0.5.5.post3")
    assert r.arch.num_layers == 36
    with_host = prefill_pass(r, 1, 60).seconds
    monkeypatch.setattr(eff, "SGLANG_EXTEND_HOST_LAYER_S", 0.0)
    gpu_only = prefill_pass(r, 1, 60).seconds
    assert gpu_only < 5e-3
    host = 36 * 300e-6
    assert host <= with_host <= 1.2 * max(host, gpu_only)


def test_long_prompts_hide_the_host_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Llama-3.1-8B, 28,639 tokens on an A100 (ACCELMARK-0083's prompt): ~3 s of GPU work against 32 x 300 us
    r = resolved("meta-llama/Llama-3.1-8B-Instruct", "A100 SXM4 40GB", "sglang", 28639, engine_version="0.5.6")
    with_host = prefill_pass(r, 1, 28639).seconds
    monkeypatch.setattr(eff, "SGLANG_EXTEND_HOST_LAYER_S", 0.0)
    assert with_host == pytest.approx(prefill_pass(r, 1, 28639).seconds, rel=1e-3)


def _errors(ids: set[str]) -> dict[str, float]:
    out = {}
    for row in load_rows():
        if row.id in ids:
            c = check(row)
            assert c.predicted is not None, c.error
            out[row.id] = c.predicted / c.measured - 1
    assert set(out) == ids
    return out


def test_tonyli_gh200_tpot_grows_as_outputs_shorten() -> None:
    """TONYGH200-0006 / -0012 (32 users, 61-token prompts, 62 / 31 output tokens): 8.89 / 12.99 ms published; without
    the extend passes' host time mlrig gave 4.85 / 6.01 ms (-45 / -54 %)."""
    e = _errors({"TONYGH200-0006", "TONYGH200-0012"})
    assert all(abs(x) < 0.2 for x in e.values()), e


def test_inferencex_deepseek_tpot_from_4_to_64_users() -> None:
    """INFXR1H200-0006 / -0012 / -0021 (SGLang 0.5.7, 8x H200 TP 8): 10.93 / 12.8 / 34.6 ms published; at the expert
    read rate of 0.5 mlrig gave +3 / +29 / +49 %."""
    e = _errors({"INFXR1H200-0006", "INFXR1H200-0012", "INFXR1H200-0021"})
    assert all(abs(x) < 0.2 for x in e.values()), e


def test_vllm_keeps_its_own_expert_read_rate() -> None:
    assert eff.MOE_EXPERT_BW_REL["vllm"] == 0.5
    assert eff.MOE_EXPERT_BW_REL["sglang"] == 0.7
