"""W8A8 int8 under vLLM runs int8 x int8 CUTLASS GEMMs (`cutlass_scaled_mm`, compressed-tensors
CompressedTensorsW8A8Int8, min capability 75) at the GPU's int8 tensor rate (quant.INT8_GEMM_ENGINES); int8
weight-only ("int8-wo") and other engines' int8 are de-quantised to 16 bits."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import gemm_dtype_on, peak_tflops
from mlrig.planner import evaluate
from mlrig.quant import parse_precision

INT8 = parse_precision("int8")


@pytest.mark.parametrize(("gpu", "tops"), [("rtx-3090", 284.0), ("rtx-4090", 660.6), ("rtx-a6000", 309.7)])
def test_vllm_w8a8_runs_at_the_int8_tensor_rate(gpu: str, tops: float) -> None:
    """The catalog's dense int8 rate (NVIDIA Ampere GA102 / Ada AD102 whitepapers): 4x the FP32-accumulate 16-bit
    figure on GeForce cards, 2x on the professional ones."""
    g = resolve_gpu(gpu)
    assert gemm_dtype_on(g, INT8, "vllm", "0.7.3") == "int8"
    assert peak_tflops(g, "int8", "vllm") == pytest.approx(tops)
    assert gemm_dtype_on(g, INT8, "transformers") == "fp16"  # LLM.int8 (bitsandbytes): not this path
    assert gemm_dtype_on(g, parse_precision("int8-wo"), "vllm") == "fp16"


def test_pre_turing_and_other_vendors_dequantise() -> None:
    """CUTLASS's int8 kernels need int8 MMA (sm75+); vLLM's ROCm / XPU int8 paths are not priced as int8 here."""
    assert gemm_dtype_on(resolve_gpu("v100-sxm2-32gb"), INT8, "vllm") == "fp16"
    assert gemm_dtype_on(resolve_gpu("mi300x"), INT8, "vllm") == "fp16"


def _prefill(precision: str, gpu: str = "rtx-3090") -> tuple[float, list[str]]:
    w = {"task": "inference", "engine": "vllm", "engine_version": "0.7.3", "precision": precision,
         "batch_size": 1, "prompt_tokens": 4000, "output_tokens": 100}
    res = evaluate({"model": "llama-3.1-8b", "workload": w, "hardware": {"gpu": gpu}})
    assert res.performance is not None and res.performance.prefill_tok_s
    return res.performance.prefill_tok_s, res.notes


def test_a_compute_bound_prefill_is_faster_in_w8a8_than_bf16_and_says_why() -> None:
    """A 4,000-token prompt of an 8B model is GEMM-bound: on an RTX 3090 the int8 GEMMs (284 TOPS) run well above
    bf16's 71 TFLOPS FP32-accumulate rate (attention stays 16-bit), where int8 was priced below bf16 before."""
    int8, notes = _prefill("int8")
    bf16, _ = _prefill("bf16")
    wo, wo_notes = _prefill("int8-wo")
    assert int8 > 2.0 * bf16
    assert wo < bf16
    assert any("int8 x int8 GEMMs" in n for n in notes)
    assert not any("int8 x int8" in n for n in wo_notes)


def test_vllm_refuses_w8a8_int8_on_blackwell() -> None:
    """vLLM's docs: INT8 W8A8 is not supported on compute capability >= 10.0; fp8 on the same card is priced."""
    w = {"task": "inference", "engine": "vllm", "precision": "int8", "batch_size": 1, "prompt_tokens": 500,
         "output_tokens": 100}
    res = evaluate({"model": "llama-3.1-8b", "workload": w, "hardware": {"gpu": "rtx-5090"}})
    assert res.performance is None or not res.performance.decode_tok_s
    assert any("would refuse to start" in n and "no int8 (W8A8) GEMMs on Blackwell" in n for n in res.notes)
    ok = evaluate({"model": "llama-3.1-8b", "workload": {**w, "precision": "fp8"}, "hardware": {"gpu": "rtx-5090"}})
    assert ok.performance is not None and ok.performance.decode_tok_s
