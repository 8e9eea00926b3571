"""llama.cpp CUDA builds of early 2024 ("llama.cpp-2024") ran quantised prompts through de-quantise + cuBLAS on
GPUs with FP16 tensor cores (performance.llama_cpp_cublas_dequant / llama_cpp_dequant_copy_bytes)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.performance import (
    LLAMA_CPP_MMQ_MAX_BATCH_SIZE,
    llama_cpp_cublas_dequant,
    llama_cpp_dequant_copy_bytes,
)
from mlrig.validation.runner import check
from tests.calibration_lookup import row


def test_cublas_path_only_for_2024_builds_on_tensor_core_nvidia_gpus_above_32_rows() -> None:
    a100, p40, mi50 = resolve_gpu("a100-sxm-80gb"), resolve_gpu("tesla-p40"), resolve_gpu("mi50-32gb")
    assert LLAMA_CPP_MMQ_MAX_BATCH_SIZE == 32  # ggml-cuda.cu MMQ_MAX_BATCH_SIZE of the b2xxx builds
    assert llama_cpp_cublas_dequant(a100, "llama.cpp-2024", "kquant", 512)
    assert not llama_cpp_cublas_dequant(a100, "llama.cpp-2024", "kquant", 32)  # MMQ up to 32 rows
    assert llama_cpp_cublas_dequant(a100, "llama.cpp-2024", "kquant", 33)
    assert not llama_cpp_cublas_dequant(a100, "llama.cpp-2024", "f16", 512)  # F16 is cuBLAS already, no copy
    assert not llama_cpp_cublas_dequant(a100, "llama.cpp", "kquant", 512)  # current builds: int8 MMQ
    assert not llama_cpp_cublas_dequant(p40, "llama.cpp-2024", "kquant", 512)  # Pascal: no FP16 tensor cores
    assert not llama_cpp_cublas_dequant(mi50, "llama.cpp-hip", "kquant", 512)


def test_copy_bytes_hand_checked() -> None:
    """Llama-3-8B: 8.03 G parameters, 6.98 G in the body's GEMMs (7.50 G GEMM weights less the 0.525 G LM head,
    which runs for the last token only). A 4.92 GB Q4_K_M file averages 0.613 bytes a parameter, so one 512-token
    micro-batch's to_fp16 kernels read 4.28 GB and write 13.96 GB: 18.2 GB; 4096 tokens are 8 micro-batches."""
    arch = resolve_model("meta-llama/Meta-Llama-3-8B-Instruct")
    one = float(llama_cpp_dequant_copy_bytes(arch, 4.92e9, 512))
    assert one == pytest.approx(18.2e9, rel=0.02)
    assert float(llama_cpp_dequant_copy_bytes(arch, 4.92e9, 300)) == one  # a short prompt is one micro-batch
    assert float(llama_cpp_dequant_copy_bytes(arch, 4.92e9, 4096)) == pytest.approx(8 * one)


def test_h100_pays_more_for_the_copy_than_the_a100() -> None:
    """The copy is memory traffic beside a compute-bound GEMM, so the card with more FLOPs per byte loses more of
    its F16 speed to it: measured Q4_K_M / F16 pp512 of Llama-3-8B 0.773 on the A100 PCIe (XD-0370 / XD-0376) and
    0.751 on the H100 PCIe (XD-0538 / XD-0544); now 0.84 / 0.81. The MMQ factor (0.8) on the GEMM gave 0.89 / 0.96
    (the H100's compute share of the pass is smaller) and left the H100 Q4_K_M rows (XD-0550..0552) 23-31 % fast."""
    def ratio(q4: str, f16: str) -> float:
        return float(check(row(q4)).predicted or 0.0) / float(check(row(f16)).predicted or 1.0)

    a100, h100 = ratio("XD-0370", "XD-0376"), ratio("XD-0538", "XD-0544")
    assert h100 < a100
    assert 0.70 < h100 < 0.85 and 0.72 < a100 < 0.86
    for row_id in ("XD-0550", "XD-0551", "XD-0552"):
        c = check(row(row_id))
        assert c.predicted is not None and abs(c.predicted / c.measured - 1) < 0.20  # +7 % / +10 % / +16 %


def test_current_builds_mmq_on_hbm_centres_the_scoreboard_rows() -> None:
    """Current CUDA builds run every quantised prompt GEMM as MMQ (mmq.cu: `turing_mma_available` -> MMQ); on HBM
    cards that is efficiency.LLAMA_CPP_MMQ_PREFILL_EFF_HBM of the FP16 cuBLAS rate, fitted on the scoreboard's
    Llama-2-7B Q4_0 pp512 rows: their signed errors straddle zero (were +27..+67 % at QUANT_PREFILL_EFF's 0.8)."""
    from mlrig.estimators import efficiency as eff

    assert eff.LLAMA_CPP_MMQ_PREFILL_EFF_HBM == 0.52
    errors = sorted(float(check(row(i)).predicted or 0.0) / check(row(i)).measured - 1
                    for i in ("C15013-0013", "C15013-0015", "C15013-0025", "C15013-0027"))
    assert errors[0] < 0 < errors[-1]
    assert all(abs(e) < 0.25 for e in errors)
    # F16 keeps the cuBLAS rate: the factor is for quantised GEMMs only
    f16 = row("C15013-0013").model_copy(deep=True)
    f16.plan["workload"]["precision"] = "f16"
    q4 = check(row("C15013-0013")).predicted
    assert q4 is not None and (check(f16).predicted or 0.0) > 0.9 * q4
