"""llama.cpp's HIP (ROCm) build on AMD GPUs: no graph replay, the mat-vecs' unpacking as ALU time, dp4a MMQ prefill
and BF16 without BF16 arithmetic (engines.llama_cpp_backend, performance.hip_dp4a_mmq / hip_without_bf16)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import engine_family, llama_cpp_backend
from mlrig.estimators.performance import (
    decode_cost,
    hip_dp4a_mmq,
    hip_without_bf16,
    lm_head_params,
    matmul_params,
    matvec_dequant_s,
    prefill_pass,
)
from mlrig.estimators.resolved import resolve
from mlrig.validation.runner import check
from mlrig.workload import Plan
from tests.calibration_lookup import row


def test_amd_cards_run_the_hip_build_unless_the_label_says_vulkan() -> None:
    xtx, mi50, rtx = resolve_gpu("rx-7900-xtx"), resolve_gpu("mi50-32gb"), resolve_gpu("rtx-3090")
    assert llama_cpp_backend(xtx, None) == "hip" and llama_cpp_backend(xtx, "b5000+rocm") == "hip"
    assert llama_cpp_backend(xtx, "b5000+vulkan") == "vulkan" and llama_cpp_backend(rtx, None) == "cuda"
    assert engine_family("llama.cpp", "q4_k_m", xtx) == "llama.cpp-hip"
    assert engine_family("ollama", "q4_k_m", mi50, "b6000") == "llama.cpp-hip"
    assert engine_family("llama.cpp", "q4_0", xtx, "2024-12+vulkan") == "llama.cpp"  # the V10879-* rows' build
    assert engine_family("llama.cpp", "q4_0", rtx, "b5000+vulkan") == "llama.cpp"
    epyc = resolve_gpu("EPYC 9654")  # an AMD CPU: llama.cpp's CPU backend, not HIP
    assert llama_cpp_backend(epyc, None) == "other" and engine_family("llama.cpp", "q4_k_m", epyc) == "llama.cpp"


def test_hip_build_launches_every_kernel_as_cuda_builds_before_graphs_did() -> None:
    # ggml-cuda/common.cuh: USE_CUDA_GRAPH only with GGML_HIP_GRAPHS on HIP (opt-in)
    assert eff.LAYER_OVERHEAD_S["llama.cpp-hip"] == eff.LAYER_OVERHEAD_S["llama.cpp-2024"] == 90e-6
    assert eff.LAYER_OVERHEAD_S["llama.cpp"] == 25e-6
    assert eff.BW_EFF["llama.cpp-hip"] == eff.BW_EFF["llama.cpp"]
    # element-wise kernels are the current sources' (not launch-bound)
    assert eff.PREFILL_TOKEN_LAYER_S["llama.cpp-hip"] == eff.PREFILL_TOKEN_LAYER_S["llama.cpp"]


def test_hip_matvec_unpacking_time_hand_checked() -> None:
    """Llama-3-8B (7.50 G GEMM weights) on an MI50 (13.3 FP32 TFLOPS): Q4_0 14 ops per weight, 7.89 ms a token;
    Q4_K_M 20 ops, 11.3 ms; on an RX 7900 XTX (61.4 TFLOPS) Q4_K_M 2.44 ms; F16 none; CUDA builds none."""
    from mlrig.quant import parse_precision

    arch = resolve_model("meta-llama/Meta-Llama-3-8B-Instruct")
    mi50, xtx = resolve_gpu("mi50-32gb"), resolve_gpu("rx-7900-xtx")
    cost = decode_cost(arch, 5e9, 2.0, 1, 256)
    weights = matmul_params(arch)

    def unpack_s(gpu: object, precision: str, engine: str = "llama.cpp-hip") -> float:
        return float(matvec_dequant_s(cost, gpu, engine, parse_precision(precision).family, 1))

    assert unpack_s(mi50, "q4_0") == pytest.approx(weights * 14 / 13.3e12, rel=1e-6)
    assert unpack_s(mi50, "q4_0") == pytest.approx(7.89e-3, rel=0.01)
    assert unpack_s(mi50, "q4_k_m") == pytest.approx(11.3e-3, rel=0.01)
    assert unpack_s(xtx, "q4_k_m") == pytest.approx(2.44e-3, rel=0.01)
    assert unpack_s(mi50, "f16") == 0.0 and unpack_s(resolve_gpu("rtx-3090"), "q4_k_m", "llama.cpp") == 0.0


def test_dp4a_mmq_only_where_llama_cpp_has_no_matrix_core_mmq() -> None:
    assert hip_dp4a_mmq(resolve_gpu("mi50-32gb"), "llama.cpp-hip")  # gfx906: sdot4
    assert hip_dp4a_mmq(resolve_gpu("rx-7900-xtx"), "llama.cpp-hip")  # RDNA 3
    assert not hip_dp4a_mmq(resolve_gpu("MI300X"), "llama.cpp-hip")  # CDNA 3: MFMA MMQ
    assert not hip_dp4a_mmq(resolve_gpu("rx-9070-xt"), "llama.cpp-hip")  # RDNA 4: WMMA MMQ
    assert not hip_dp4a_mmq(resolve_gpu("rx-7900-xtx"), "llama.cpp")  # the Vulkan build
    assert hip_without_bf16(resolve_gpu("mi50-32gb"), "llama.cpp-hip")
    assert not hip_without_bf16(resolve_gpu("rx-7900-xtx"), "llama.cpp-hip")


def _prefill_compute_s(precision: str, gpu_id: str) -> tuple[float, float]:
    arch = resolve_model("meta-llama/Meta-Llama-3-8B-Instruct")
    plan = Plan.model_validate({"model": {"name": "meta-llama/Meta-Llama-3-8B-Instruct"},
                                "workload": {"precision": precision, "engine": "llama.cpp", "batch_size": 1,
                                             "prompt_tokens": 512, "output_tokens": 0},
                                "hardware": {"gpu": gpu_id, "count": 1}})
    t = prefill_pass(resolve(arch, plan, resolve_gpu(gpu_id)), 1, 512)
    # llama-bench's prompt computes logits for its last position only: the LM head once
    return float(t.compute_s), 2.0 * ((matmul_params(arch) - lm_head_params(arch)) * 512 + lm_head_params(arch))


def test_dp4a_mmq_prefill_rate_hand_checked() -> None:
    """A 512-token Q4_0 prompt of Llama-3-8B on an MI50: its GEMMs (2 x (7.50 - 0.53 G LM head) x 512 = 7.1 TFLOP,
    attention ~1 % more) at 0.30 of the 53 int8 TOPS: ~0.45 s; Q4_K_M at 0.13: 2.3 times that; BF16 at the FP32 rate
    (13.3 TFLOPS) x rocBLAS's untuned-kernel 0.24 (no vega20 BF16 logic): ~2.2 s, not COMPUTE_EFF's 0.40 (~1.35 s)."""
    q4_0, flops = _prefill_compute_s("q4_0", "mi50-32gb")
    assert q4_0 == pytest.approx(flops / (0.30 * 53e12), rel=0.03)
    q4_k, _ = _prefill_compute_s("q4_k_m", "mi50-32gb")
    assert q4_k == pytest.approx(0.30 / 0.13 * q4_0, rel=0.01)
    bf16, _ = _prefill_compute_s("bf16", "mi50-32gb")
    assert eff.HIP_BF16_FALLBACK_GEMM_EFF == 0.24
    assert bf16 == pytest.approx(flops / (0.24 * 13.3e12), rel=0.03)
    assert bf16 > 1.5 * flops / (eff.COMPUTE_EFF["llama.cpp-hip"]["hbm"] * 13.3e12)
    # F16 weights: tuned vega20 F16 kernels at the packed FP16 rate (26.5 TFLOPS) x COMPUTE_EFF
    f16, _ = _prefill_compute_s("f16", "mi50-32gb")
    assert f16 == pytest.approx(flops / (eff.COMPUTE_EFF["llama.cpp-hip"]["hbm"] * 26.5e12), rel=0.05)
    # RDNA 3 has BF16 arithmetic (and rocBLAS BF16 kernels): its BF16 prompt runs as fast as its F16 one
    xtx_bf16, _ = _prefill_compute_s("bf16", "rx-7900-xtx")
    xtx_f16, _ = _prefill_compute_s("f16", "rx-7900-xtx")
    assert xtx_bf16 == pytest.approx(xtx_f16, rel=0.01)


@pytest.mark.parametrize("row_id, tolerance", [
    ("RX7900X6-0002", 0.25), ("RX7900X6-0006", 0.20), ("RX7900X6-0010", 0.15),  # tg128, 2 / 2 / 4 GPUs
    ("MI50X2-0002", 0.10), ("MI50X2-0010", 0.10), ("MI50X2-0018", 0.05),  # Q8_0 / Q4_0 / F16 tg128
    ("MI50X2-0009", 0.10), ("RX7900X6-0007", 0.10),  # Q4_0 pp512 on MI50, MXFP4 pp512 on 6 RX 7900 XTX
    ("MI50X2-0013", 0.10), ("MI50X2-0015", 0.10),  # BF16 pp512 on MI50: +67 % at COMPUTE_EFF's rate
    ("MI50X2-0014", 0.10),  # BF16 tg128: decode's mat-vecs are not rocBLAS's, unchanged
])
def test_rocm_rows_near_published(row_id: str, tolerance: float) -> None:
    """Before the HIP build was modelled these were +35-104 % (decode) and -45 % / +149 % (prefill)."""
    c = check(row(row_id))
    assert c.predicted is not None
    assert abs(c.predicted / c.measured - 1) < tolerance, (row_id, c.predicted, c.measured)


def test_plan_says_which_amd_backend_it_assumed() -> None:
    from mlrig.planner import evaluate

    plan = {"model": {"name": "Qwen/Qwen3-14B"},
            "workload": {"precision": "q4_k_m", "engine": "llama.cpp", "batch_size": 1,
                         "prompt_tokens": 512, "output_tokens": 128},
            "hardware": {"gpu": "rx-7900-xtx", "count": 1}}
    assert any("HIP (ROCm) build assumed" in n for n in evaluate(plan).notes)
    plan["workload"]["engine_version"] = "b6000+vulkan"  # type: ignore[index]
    assert not any("HIP (ROCm) build" in n for n in evaluate(plan).notes)
