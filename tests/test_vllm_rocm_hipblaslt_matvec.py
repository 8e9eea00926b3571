"""vLLM's 16-bit linear layers on AMD CDNA 3 outside its skinny kernels (efficiency.VLLM_ROCM_HIPBLASLT_MATVEC_REL):
F.linear (hipBLASLt) streams the weights at 0.82 of the skinny kernels' rate (vllm-project/vllm PR #15830's
benchmark_latency figures), and the skinny kernels take 1-3 rows from vLLM 0.8.5 (fp16 / bf16), 1-4 rows of fp16 in
AMD's fork before that, none upstream before 0.8.5."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import decode_step, vllm_rocm_hipblaslt_matvec
from mlrig.planner import resolve_plan
from mlrig.quant import parse_precision
from mlrig.validation.runner import check, load_rows

MI300X = resolve_gpu("AMD Instinct MI300X")
BF16 = parse_precision("bf16")
FP16 = parse_precision("fp16")
REL = eff.VLLM_ROCM_HIPBLASLT_MATVEC_REL


def test_rate_from_the_pull_requests_own_latencies() -> None:
    """PR #15830: Llama 3.1 70B fp16 at TP 8, 32 in / 128 out: 1.4118 -> 1.2892 s at batch 1, 1.4460 -> 1.3445 s at
    batch 2 over 127 decode steps; 68.4 B linear parameters, 17.1 GB per GPU, 4.03 ms at 0.80 x 5.3 TB/s."""
    skinny_ms = 68.4e9 * 2 / 8 / (eff.BW_EFF["vllm"]["hbm"] * 5300e9) * 1e3
    assert skinny_ms == pytest.approx(4.03, abs=0.01)
    rel_b1 = skinny_ms / (skinny_ms + (1.4118 - 1.2892) / 127 * 1e3)
    rel_b2 = skinny_ms / (skinny_ms + (1.4460 - 1.3445) / 127 * 1e3)
    assert rel_b1 == pytest.approx(0.81, abs=0.005)
    assert rel_b2 == pytest.approx(0.83, abs=0.005)
    assert pytest.approx((rel_b1 + rel_b2) / 2, abs=0.005) == REL


@pytest.mark.parametrize(("version", "precision", "rows", "expected"), [
    ("0.6.3.dev114", BF16, 1, REL),  # upstream before 0.8.5: F.linear at every batch
    ("0.8.4", FP16, 1, REL),
    ("0.8.5", BF16, 1, 1.0),  # rocm_unquantized_gemm: wvSplitK / LLMM1 for 0 < n < 4
    ("0.8.5", BF16, 3, 1.0),
    ("0.8.5", BF16, 4, REL),
    (None, FP16, 2, 1.0),  # the current release
    (None, FP16, 64, REL),
    ("rocm/vllm 0.6.4.dev4", FP16, 4, 1.0),  # the fork's tuned_gemm: fp16 up to 4 rows
    ("rocm/vllm 0.6.4.dev4", FP16, 5, REL),
    ("rocm/vllm 0.6.4.dev4", BF16, 1, REL),  # bf16 never skinny in the fork's tuned_gemm
])
def test_which_steps_run_hipblaslt(version: str | None, precision: object, rows: int, expected: float) -> None:
    assert vllm_rocm_hipblaslt_matvec(MI300X, "vllm", precision, version, rows) == expected  # type: ignore[arg-type]


def test_only_vllm_16bit_on_cdna3() -> None:
    for gpu in ("H100 SXM", "MI355X", "MI250X"):
        assert vllm_rocm_hipblaslt_matvec(resolve_gpu(gpu), "vllm", BF16, "0.6.3", 1) == 1.0, gpu
    assert vllm_rocm_hipblaslt_matvec(resolve_gpu("MI325X"), "vllm", BF16, "0.6.3", 1) == REL
    assert vllm_rocm_hipblaslt_matvec(MI300X, "sglang", BF16, "0.4.0", 1) == 1.0
    assert vllm_rocm_hipblaslt_matvec(MI300X, "vllm", parse_precision("fp8"), "0.6.3", 1) == 1.0


def _plan(version: str) -> dict[str, object]:
    return {"model": {"name": "meta-llama/Llama-3.1-405B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": version,
                         "load": "static", "batch_size": 1, "prompt_tokens": 80, "output_tokens": 66},
            "hardware": {"gpu": "AMD Instinct MI300X", "count": 8, "tensor_parallel": 8}}


def test_405b_decode_step_pays_the_weights_at_the_hipblaslt_rate() -> None:
    """Llama-3.1-405B bf16 at TP 8, batch 1: 0.6.3 streams the same weights as 0.8.5 (whose skinny kernels take the
    step) at 0.82 of the rate. Hand check: the 811.7 GB checkpoint less its 128,256 x 16,384 embedding table (not
    streamed by a decode step), over 8 GPUs at 0.80 x 5.3 TB/s, is 23.8 ms; x (1 / 0.82 - 1) = 5.2 ms more."""
    old, _ = resolve_plan(_plan("0.6.3.dev114"))
    new, _ = resolve_plan(_plan("0.8.5"))
    streamed_bytes = old.weight_bytes - 128_256 * 16_384 * 2
    skinny_s = streamed_bytes / 8 / (0.80 * 5300e9)
    assert skinny_s == pytest.approx(23.8e-3, abs=0.05e-3)
    extra_s = decode_step(old, 1, 100).memory_s - decode_step(new, 1, 100).memory_s
    assert extra_s == pytest.approx(skinny_s * (1 / REL - 1), rel=1e-3)
    assert extra_s == pytest.approx(5.2e-3, abs=0.05e-3)


def test_lhl_405b_tpot_rows_closer() -> None:
    """LHLMI300X's vLLM 0.6.3 Llama-3.1-405B TPOT rows (fit, 8 x MI300X, 1-2,048 prompts): median -23 % before this
    term; with it no worse than -20 %."""
    rows = [r for r in load_rows() if r.id.startswith("LHLMI300X-") and r.metric == "tpot_ms"]
    assert len(rows) == 48
    errors = sorted(c.predicted / r.value - 1 for r in rows if (c := check(r)).predicted is not None)
    assert errors[len(errors) // 2] > -0.20


# vLLM V0's decode attention on AMD past its custom ROCm kernel's limits (efficiency.VLLM_ROCM_CUSTOM_PAGED_ATTN_*):
# the hipified generic kernel loads each KV head once per query head of its group.

def _long_plan(version: str, model: str = "meta-llama/Llama-3.1-405B-Instruct", tp: int = 8,
               gpu: str = "AMD Instinct MI300X") -> dict[str, object]:
    return {"model": {"name": model},
            "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": version,
                         "load": "static", "batch_size": 1, "prompt_tokens": 64_000, "output_tokens": 150},
            "hardware": {"gpu": gpu, "count": tp, "tensor_parallel": tp}}


@pytest.mark.parametrize(("version", "context", "expected"), [
    ("0.6.3.dev116", 32_000, 1.0),  # the custom kernel up to 32,768 tokens (0.6.2 - 0.9.1)
    ("0.6.3.dev116", 64_000, 16.0),  # 405B at TP 8: 16 query heads on one KV head per GPU
    ("0.9.1+v0", 64_000, 16.0),  # V0 named by its label (VLLM_USE_V1=0)
    ("0.9.2+v0", 64_000, 1.0),  # 128 x 1,024 from 0.9.2
    ("0.9.2+v0", 140_000, 16.0),
    ("0.6.1", 1_000, 16.0),  # no custom kernel before 0.6.2
    ("0.8.0+v0", 64_000, 16.0),
    ("0.8.0", 64_000, 1.0),  # V1: not this kernel
    ("rocm/vllm 0.6.4.dev4", 64_000, 1.0),  # AMD's fork: not read
])
def test_generic_kernel_group_factor(version: str, context: int, expected: float) -> None:
    from mlrig.estimators.performance import vllm_rocm_generic_paged_decode

    r, _ = resolve_plan(_long_plan(version))
    assert vllm_rocm_generic_paged_decode(r, "vllm", context) == expected


def test_generic_kernel_group_per_gpu_and_vendor() -> None:
    """Llama-3.1-8B (32 query / 8 KV heads) at TP 8: one KV head and 4 query heads per GPU, so 4; NVIDIA: 1."""
    from mlrig.estimators.performance import vllm_rocm_generic_paged_decode

    r, _ = resolve_plan(_long_plan("0.6.3", model="meta-llama/Llama-3.1-8B-Instruct"))
    assert vllm_rocm_generic_paged_decode(r, "vllm", 64_000) == 4.0
    r, _ = resolve_plan(_long_plan("0.6.3", gpu="H100 SXM"))
    assert vllm_rocm_generic_paged_decode(r, "vllm", 64_000) == 1.0


def test_64k_decode_step_reads_the_cache_16_times() -> None:
    """Hand check, 405B at TP 8 and 64,075 tokens of context: 126 layers x 1 KV head x 128 x (K, V) x 2 bytes =
    64,512 bytes per token on each GPU, 4.13 GB; the generic kernel moves it 16 times, 15 more at 0.80 x 5.3 TB/s =
    14.6 ms on top of the custom kernel's step."""
    r, _ = resolve_plan(_long_plan("0.6.3.dev116"))
    kv_gb = 64_075 * 126 * 128 * 2 * 2 / 1e9
    assert kv_gb == pytest.approx(4.13, abs=0.01)
    generic = decode_step(r, 1, 64_075).memory_s
    custom = decode_step(r, 1, 32_000).memory_s + (64_075 - 32_000) * 126 * 128 * 2 * 2 / (0.80 * 5300e9)
    assert generic - custom == pytest.approx(15 * kv_gb * 1e9 / (0.80 * 5300e9), rel=0.01)
