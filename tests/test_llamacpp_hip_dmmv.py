"""llama.cpp's HIP builds before the F16 mat-vec rewrite (PR #10318, merged 2024-11-17) ran batch-1 F16 mat-vecs in
`dequantize_mul_mat_vec`'s 32-thread blocks, half of a wave64 on GCN / CDNA GPUs: a CU-bound rate (efficiency.py
1-HIP: NVIDIA's fitted bytes per SM-cycle x 32 live lanes per CU-cycle / 128 per SM-cycle, x CUs x clock) beside the
DRAM roof. Later builds (mmv.cu, physical warp size), quantised weights (mul_mat_vec_q, full wavefronts), RDNA
(wave32) and NVIDIA keep their figures."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import cu_cycles_per_s, hip_dmmv_f16, hip_dmmv_f16_fraction
from mlrig.planner import evaluate


def test_cu_cycles_follow_from_the_fp32_peak_and_the_architecture() -> None:
    """AMD data sheets: MI300X 304 CUs at 2.1 GHz (163.4 TFLOPS, 128 FP32 lanes a CU counting dual issue), MI210 104
    CUs at 1.7 GHz (22.6 TFLOPS, 64 lanes), MI50 60 CUs at 1.725 GHz (13.3 TFLOPS, 64 lanes)."""
    assert cu_cycles_per_s(resolve_gpu("mi300x")) == pytest.approx(304 * 2.1e9, rel=0.002)
    assert cu_cycles_per_s(resolve_gpu("AMD Instinct MI210")) == pytest.approx(104 * 1.7e9, rel=0.002)
    assert cu_cycles_per_s(resolve_gpu("mi50-32gb")) == pytest.approx(60 * 1.725e9, rel=0.005)
    # RDNA (wave32), NVIDIA: no CU roof
    for name in ("AMD Radeon RX 7900 XTX", "h100-sxm-80gb"):
        assert cu_cycles_per_s(resolve_gpu(name)) is None, name


def test_the_fraction_is_the_two_roofs_combined_by_hand() -> None:
    """MI300X: CU roof 8.75 x 32 / 128 = 2.1875 B x 638.4 G CU-cycles/s = 1,396.5 GB/s, DRAM roof 0.90 x 5,300 =
    4,770 GB/s; p-norm (p = 2) of the per-byte times: 1 / sqrt(1/1396.5^2 + 1/4770^2) = 1,340 GB/s = 0.253 of the
    peak (BW_EFF's HBM figure, 0.60, is 3,180 GB/s)."""
    assert eff.HIP_DMMV_BYTES_PER_CU_CYCLE == 8.75 * 32 / 128
    cu, dram = 2.1875 * 304 * 2.1e9, 0.90 * 5300e9
    expected = (1 / ((1 / cu) ** 2 + (1 / dram) ** 2) ** 0.5) / 5300e9
    assert hip_dmmv_f16_fraction(resolve_gpu("mi300x")) == pytest.approx(expected, rel=0.002)
    assert 0.25 < expected < 0.26


def test_only_f16_in_old_hip_builds_on_wave64_gpus() -> None:
    mi300x, xtx, h100 = resolve_gpu("mi300x"), resolve_gpu("AMD Radeon RX 7900 XTX"), resolve_gpu("h100-sxm-80gb")
    assert hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "2024-09")
    assert hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "2024-10")
    assert not hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "2024-11")  # PR #10318 merged mid-November
    assert not hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", None)  # current builds: mmv.cu
    assert not hip_dmmv_f16(mi300x, "llama.cpp-hip", "q8_0", "2024-09")  # mul_mat_vec_q, 128-thread blocks
    assert not hip_dmmv_f16(mi300x, "llama.cpp-hip", "bf16", "2024-09")  # not a dmmv type
    assert not hip_dmmv_f16(xtx, "llama.cpp-hip", "fp16", "2024-09")  # RDNA: wave32
    assert not hip_dmmv_f16(h100, "llama.cpp-2024", "fp16", "2024-09")


def _decode_tok_s(precision: str, version: str | None, gpu: str = "mi300x") -> float:
    workload = {"task": "inference", "precision": precision, "engine": "llama.cpp", "batch_size": 1,
                "load": "static", "prompt_tokens": 0, "output_tokens": 256}
    if version:
        workload["engine_version"] = version
    r = evaluate({"model": {"name": "meta-llama/Llama-2-7b-hf"}, "workload": workload,
                  "hardware": {"gpu": gpu, "count": 1}})
    assert r.performance is not None
    return float(r.performance.decode_tok_s)


def test_old_hip_f16_decode_is_cu_bound_and_later_builds_are_not() -> None:
    """Llama-2-7B F16 (13.5 GB) on an MI300X: the weights alone take 13.5 / 1.34 = 10.1 ms a token at the dmmv bound
    against 13.5 / 3.18 = 4.2 ms at the HBM figure, so a 2024-09 build decodes at well under 60 % of the current
    build's speed; Q8_0 in the same build is untouched."""
    old, new = _decode_tok_s("fp16", "2024-09"), _decode_tok_s("fp16", None)
    assert old / new < 0.6
    assert 60 < old < 90
    assert _decode_tok_s("q8_0", "2024-09") == pytest.approx(_decode_tok_s("q8_0", "2024-12"), rel=1e-9)
    nvidia_old = _decode_tok_s("fp16", "2024-09", "h100-sxm-80gb")
    assert nvidia_old == pytest.approx(_decode_tok_s("fp16", "2024-12", "h100-sxm-80gb"), rel=1e-9)  # CUDA: untouched
