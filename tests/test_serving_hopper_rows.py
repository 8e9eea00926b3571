"""vLLM on Hopper against Ampere in one harness (AccelMark, serving_accelmark.jsonl): what fraction of the
dense bf16 peak a long prefill reaches on each, from the published TTFT and mlrig's own FLOP accounting.

Hand check (Llama-3.1-8B: 6.98 B parameters in the per-token GEMMs once the embedding and the LM head,
run for the last token only, are left out; 32 layers, 32 x 128 query dims): a 28,639-token prompt is
2 x 6.98e9 = 13.96 GFLOP of GEMMs per token plus causal attention 4 x 4096 x 32 x 28,639 / 2 = 7.5 GFLOP
per token, 6.15e14 FLOP in all. Measured p50 TTFT one request at a time, vLLM 0.7.3: 1,076.72 ms on an
H100 SXM (989.4 TFLOPS) -> 0.58 of peak; 2,838.69 ms on an A100 SXM4 80GB (312 TFLOPS) -> 0.69. The
Hopper card reaches ~0.83 of the Ampere card's fraction, not less than that: the fit rows give no room
for a Hopper compute factor far below 1 (the held-out GPUStack H100 rows, checked only, come out fast for
a reason these rows do not show)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.performance import prefill_cost
from mlrig.validation.runner import load_rows


def _long_prefill_rows() -> dict[str, tuple[float, dict]]:
    out = {}
    for r in load_rows():
        w = r.plan["workload"]
        long_prompt = w.get("prompt_tokens") == 28639 and w.get("load") == "concurrency"
        if (r.id.startswith("ACCELMARK-") and r.metric == "ttft_ms" and long_prompt
                and w.get("engine") == "vllm" and w.get("engine_version") == "0.7.3"):
            out[r.plan["hardware"]["gpu"]] = (r.value, r.plan)
    return out


def _fraction_of_peak(ttft_ms: float, plan: dict) -> float:
    arch = resolve_model(plan["model"]["name"])
    cost = prefill_cost(arch, 0.0, 2.0, 1, plan["workload"]["prompt_tokens"])
    gpu = resolve_gpu(plan["hardware"]["gpu"])
    peak = gpu.tensor_tflops("bf16") or gpu.tensor_tflops("fp16")
    assert peak
    return float(cost.flops) / (ttft_ms / 1e3) / (peak * 1e12)


def test_long_prefill_flops_match_the_hand_count() -> None:
    rows = _long_prefill_rows()
    _, plan = rows["H100 SXM"]
    arch = resolve_model(plan["model"]["name"])
    cost = prefill_cost(arch, 0.0, 2.0, 1, 28639)
    assert cost.flops == pytest.approx(6.15e14, rel=0.02)
    assert cost.attn_flops == pytest.approx(4 * 4096 * 32 * 28639**2 / 2, rel=0.01)


def test_hopper_reaches_most_of_amperes_fraction_of_peak_in_a_long_vllm_prefill() -> None:
    rows = _long_prefill_rows()
    h100 = _fraction_of_peak(*rows["H100 SXM"])
    a100 = _fraction_of_peak(*rows["A100 SXM4 80GB"])
    assert h100 == pytest.approx(0.58, abs=0.02)
    assert a100 == pytest.approx(0.69, abs=0.02)
    assert h100 / a100 == pytest.approx(0.83, abs=0.03)
    # the other Ampere cards of the same harness agree with the A100 80GB
    for gpu in ("A100 SXM4 40GB", "A800 SXM4 80GB"):
        assert _fraction_of_peak(*rows[gpu]) == pytest.approx(a100, rel=0.03)
