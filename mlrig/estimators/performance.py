"""Inference speed: a roofline per forward pass, with calibrated efficiency factors.

A forward pass over `n` new tokens of `batch` sequences takes (Williams, Waterman & Patterson
2009, "Roofline"; applied to LLMs by e.g. Pope et al. 2022 "Efficiently Scaling Transformer
Inference"):

    t = max(FLOPs / (eff_compute x peak_tensor), bytes / (eff_bw x fmt_eff x bandwidth))
        + layers x per-layer overhead + per-step overhead + communication

with the max (a smooth one near the ridge, `_soft_max`) taken per kernel group and the groups added:
the GEMMs (weights, 2 x params FLOPs per token) and the attention kernels (KV cache, QK^T / AV FLOPs)
run one after another (`pass_time`). In eager engines (HF transformers) the per-layer overhead is the
host's launch time, which runs ahead of the GPU: a pass takes about the longer of the two
(efficiency.HOST_LAUNCH_OVERLAPPED).

- Decode reads every weight a token touches (only the routed experts actually selected for MoE)
  and the KV cache of every sequence; FLOPs are 2 x active params per token plus attention.
- Prefill is 2 x active params per prompt token plus attention (causal: 2 s^2 H d_h per layer
  with flash attention; without it the engines compute the full s x s score matrix and spill it).
- Tensor parallelism splits weights and FLOPs and adds two activation all-reduces per layer
  (Megatron-LM, Shoeybi et al. 2019); llama.cpp's default layer split runs layers in sequence,
  so it adds capacity, not decode speed.
The efficiency factors (mlrig/estimators/efficiency.py) are per engine family and memory class.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from mlrig import quant, vec
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import (
    MLX_SERVER_ENGINES,
    before,
    sglang_custom_allreduce_on_amd,
    sglang_default_chunked_prefill,
    transformers_full_logits,
    trtllm_custom_allreduce,
    trtllm_one_shot_allreduce,
    turbomind_kv_reads_per_step,
    vllm_custom_allreduce_on_amd,
    vllm_multi_step,
    vllm_v1,
)
from mlrig.estimators.expert_parallel import experts_touched_fraction
from mlrig.estimators.hardware import (
    DEFAULT_HOST_BW_GB_S,
    board_power_tflops,
    gpu_memory_class,
    graph_replay_missing,
)
from mlrig.estimators.score_traffic import DEFAULT_PREFILL_SCORE_BYTES, prefill_score_bytes
from mlrig.results import Performance
from mlrig.vec import Num

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.interconnects import Interconnect
    from mlrig.catalog.models import ModelArch
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.quant import Precision


# Offloaded weights streamed host -> GPU reach ~80 % of the PCIe link's per-direction peak
# (128b/130b encoding and TLP headers; pinned-memory copies in NVIDIA's `bandwidthTest` sample).
# A typical figure, not fitted on the calibration data.
PCIE_COPY_EFF = 0.8

# llama.cpp's defaults for a prompt: logical batches of n_batch = 2048 tokens, each split into
# micro-batches of n_ubatch = 512 (common/common.h; llama-bench uses the same defaults). The layer
# split's pipeline runs over micro-batches across batches (`llama_cpp_pipeline_speedup`).
LLAMA_CPP_N_UBATCH = 512
# Rows of a GEMM up to which llama.cpp's CUDA builds of early 2024 kept MMQ on GPUs with FP16 tensor cores
# (MMQ_MAX_BATCH_SIZE in ggml-cuda.cu; `llama_cpp_cublas_dequant`).
LLAMA_CPP_MMQ_MAX_BATCH_SIZE = 32


def model_weight_bytes(arch: ModelArch, precision: str | Precision) -> float:
    """Bytes of all weights at `precision` (a weights file's exact size when it matches; see mlrig.quant)."""
    return float(quant.weight_bytes(arch, precision))


def is_intel_arc(gpu: GPU) -> bool:
    """Intel's GDDR cards (Arc): the class behind efficiency.INTEL_GDDR_BW_EFF_CAP; not Gaudi (HBM)."""
    return gpu.hardware_class == "intel" and gpu_memory_class(gpu) == "gddr"


def bandwidth_efficiency(gpu: GPU, engine: str) -> float:
    """Fraction of peak DRAM bandwidth the engine's decode kernels reach on this GPU.

    efficiency.BW_EFF by engine family and memory class, capped for llama.cpp on Intel Arc cards
    (efficiency.INTEL_GDDR_BW_EFF_CAP, fitted on its Vulkan scoreboard rows); Apple's narrow
    and wide chips apart for llama.cpp (efficiency.UNIFIED_BW_EFF_BY_WIDTH, fitted on its Metal rows)."""
    memory_class = gpu_memory_class(gpu)
    if memory_class == "unified" and gpu.hardware_class == "apple" and engine in eff.UNIFIED_BW_EFF_BY_WIDTH:
        narrow, wide, two_die = eff.UNIFIED_BW_EFF_BY_WIDTH[engine]
        if gpu.memory_bandwidth_gb_s <= eff.UNIFIED_NARROW_MAX_GB_S:
            return narrow
        return two_die if gpu.memory_bandwidth_gb_s >= eff.UNIFIED_TWO_DIE_MIN_GB_S else wide
    if engine in eff.LLAMA_CPP_SM_BOUND_ENGINES and memory_class == "hbm":
        sm_bound = llama_cpp_sm_bound_fraction(gpu)
        if sm_bound is not None:
            return sm_bound
    fraction = eff.BW_EFF[engine][memory_class]
    capped = is_intel_arc(gpu) and engine.startswith(eff.INTEL_CAPPED_ENGINES)
    return min(fraction, eff.INTEL_GDDR_BW_EFF_CAP) if capped else fraction


def sm_cycles_per_s(gpu: GPU) -> float | None:
    """SMs x boost clock (SM-cycles per second) of an NVIDIA GPU, from its catalog FP32 peak = SMs x FP32 lanes
    per SM x 2 x clock (efficiency.FP32_LANES_PER_SM, NVIDIA's whitepapers); None where either is unknown."""
    if gpu.vendor != "NVIDIA" or not gpu.fp32_tflops:
        return None
    arch = str(gpu.architecture or "")
    lanes = next((n for prefix, n in eff.FP32_LANES_PER_SM.items() if arch.startswith(prefix)), None)
    return gpu.fp32_tflops * 1e12 / (2.0 * lanes) if lanes else None


def llama_cpp_sm_bound_fraction(gpu: GPU) -> float | None:
    """Fraction of peak bandwidth llama.cpp's CUDA mat-vecs reach at batch 1 on an NVIDIA HBM card: the DRAM roof
    (BW_EFF["llama.cpp"]["gddr"] of the peak) and the SM roof (efficiency.LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE x
    SMs x clock, `sm_cycles_per_s`) combined as the roofline's p-norm of times (ROOFLINE_SMOOTHING_P). Derivation
    and fit rows: efficiency.py, 1''. None where SMs x clock is unknown (BW_EFF's HBM figure applies)."""
    return _dram_and_core_roof_fraction(gpu, eff.BW_EFF["llama.cpp"]["gddr"],
                                        eff.LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE, sm_cycles_per_s(gpu))


def _dram_and_core_roof_fraction(gpu: GPU, dram_eff: float, bytes_per_cycle: float,
                                 cycles_per_s: float | None) -> float | None:
    """Fraction of peak bandwidth a mat-vec reaches under two roofs, the DRAM's (`dram_eff` of the peak) and the
    cores' (`bytes_per_cycle` x SM- or CU-cycles per second), combined as the roofline's p-norm of times
    (ROOFLINE_SMOOTHING_P); None where the cycle rate is unknown."""
    if cycles_per_s is None:
        return None
    peak_b_s = gpu.memory_bandwidth_gb_s * 1e9
    dram_s = 1.0 / (dram_eff * peak_b_s)  # seconds per byte at each roof
    core_s = 1.0 / (bytes_per_cycle * cycles_per_s)
    return float(1.0 / (_p_norm(dram_s, core_s, eff.ROOFLINE_SMOOTHING_P) * peak_b_s))


def cu_cycles_per_s(gpu: GPU) -> float | None:
    """CUs x boost clock (CU-cycles per second) of an AMD GCN / CDNA GPU, from its catalog FP32 peak = CUs x FP32
    lanes per CU x 2 x clock (efficiency.FP32_LANES_PER_CU, AMD's data sheets); None for other GPUs (RDNA runs
    wave32 natively) or where the peak is unknown."""
    if gpu.vendor != "AMD" or not gpu.fp32_tflops:
        return None
    arch = str(gpu.architecture or "")
    lanes = next((n for prefix, n in eff.FP32_LANES_PER_CU.items() if arch.startswith(prefix)), None)
    return gpu.fp32_tflops * 1e12 / (2.0 * lanes) if lanes else None


def llama_cpp_before_change(engine_version: str | None, last_old_month: tuple[int, int], last_old_build: int) -> bool:
    """Whether a llama.cpp version label names a build that predates a change: a month label up to `last_old_month`,
    or a build number up to `last_old_build`, the latest build known to predate the change's merge (efficiency.py
    LLAMA-CPP-BUILDS: the merge's own build number is not established, so a build between that bound and the merge is
    read as the current code). No label, a release of a front-end or a later one: the current code."""
    from mlrig.estimators.engines import parse_version

    v = parse_version(engine_version)
    if v is None:
        return False
    if v.month is not None:
        return v.month <= last_old_month
    return v.build is not None and v.build <= last_old_build


def _month_before(month: tuple[int, int]) -> tuple[int, int]:
    """The calendar month before `month`: (2025, 5) -> (2025, 4), (2025, 1) -> (2024, 12)."""
    year, m = month
    return (year - 1, 12) if m == 1 else (year, m - 1)


def hip_dmmv_f16(gpu: GPU, engine: str, precision_name: str, engine_version: str | None) -> bool:
    """Whether a batch-1 decode's weight reads run through llama.cpp HIP's old F16 `dequantize_mul_mat_vec`
    (32-thread blocks on a wave64 GPU, efficiency.py 1-HIP): F16 weights, the HIP build on a GCN / CDNA GPU, and a
    month label up to efficiency.LLAMA_CPP_HIP_DMMV_F16_UNTIL or a build number up to
    efficiency.LLAMA_CPP_HIP_DMMV_F16_UNTIL_BUILD (`llama_cpp_before_change`; no label or a later one: the current
    mmv.cu kernel)."""
    if engine != "llama.cpp-hip" or precision_name != "fp16" or cu_cycles_per_s(gpu) is None:
        return False
    return llama_cpp_before_change(engine_version, eff.LLAMA_CPP_HIP_DMMV_F16_UNTIL,
                                   eff.LLAMA_CPP_HIP_DMMV_F16_UNTIL_BUILD)


def hip_dmmv_f16_fraction(gpu: GPU) -> float | None:
    """Fraction of peak bandwidth llama.cpp HIP's old F16 mat-vec reaches at batch 1 on a GCN / CDNA GPU: the DRAM
    roof (BW_EFF["llama.cpp-hip"]["gddr"] of the peak) and the CU roof (efficiency.HIP_DMMV_BYTES_PER_CU_CYCLE x CUs
    x clock, `cu_cycles_per_s`) combined as the roofline's p-norm of times (ROOFLINE_SMOOTHING_P), as
    `llama_cpp_sm_bound_fraction` does on NVIDIA. Derivation: efficiency.py, 1-HIP. None where CUs x clock is
    unknown."""
    return _dram_and_core_roof_fraction(gpu, eff.BW_EFF["llama.cpp-hip"]["gddr"], eff.HIP_DMMV_BYTES_PER_CU_CYCLE,
                                        cu_cycles_per_s(gpu))


def hip_mmid_fallback(engine: str, engine_version: str | None) -> bool:
    """Whether llama.cpp's HIP build runs a batch-1 MoE layer's expert mat-vecs through the host-synchronising
    per-expert fallback of `ggml_cuda_mul_mat_id` (efficiency.py 1-HIP-MMID): the HIP build with a month label up to
    efficiency.LLAMA_CPP_HIP_MMID_SYNC_UNTIL or a build number up to efficiency.LLAMA_CPP_HIP_MMID_SYNC_UNTIL_BUILD
    (`llama_cpp_before_change`; no label or a later one: the current path, PR #13014's single MMV / MMVQ launch
    without a stream synchronisation)."""
    if engine != "llama.cpp-hip":
        return False
    return llama_cpp_before_change(engine_version, eff.LLAMA_CPP_HIP_MMID_SYNC_UNTIL,
                                   eff.LLAMA_CPP_HIP_MMID_SYNC_UNTIL_BUILD)


def hip_mmid_fallback_layer_s(r: ResolvedPlan, engine: str, tokens_in_pass: Num, decode: bool) -> Num:
    """Host time per layer (averaged over all layers) of a decode step's MoE layers on the per-expert fallback
    (`hip_mmid_fallback`): efficiency.LLAMA_CPP_MUL_MAT_ID_PER_MOE_FFN MUL_MAT_IDs per MoE layer, each
    efficiency.HIP_MMID_FALLBACK_S_PER_EXPERT per routed expert the step's tokens touch (k at one token;
    `expert_parallel.experts_touched_fraction` x E for more). 0 for dense models, prefill and other builds.
    Source and fit: efficiency.py 1-HIP-MMID (llama.cpp PR #13014's RX 6800 rows)."""
    a = r.arch
    if not decode or not a.is_moe or not a.num_experts or not a.num_layers:
        return 0.0
    if not hip_mmid_fallback(engine, r.workload.engine_version):
        return 0.0
    touched = experts_touched_fraction(a, tokens_in_pass) * a.num_experts
    per_moe_layer = eff.LLAMA_CPP_MUL_MAT_ID_PER_MOE_FFN * touched * eff.HIP_MMID_FALLBACK_S_PER_EXPERT
    return per_moe_layer * a.num_moe_layers / a.num_layers


def hip_moe_layer_s(r: ResolvedPlan, engine: str) -> float:
    """Fixed host time per layer (averaged over all layers) of a MoE model in llama.cpp's HIP build: the routing and
    expert-combining kernels a MoE FFN launches beside a dense FFN's, each launched from the host (no graphs),
    efficiency.HIP_MOE_LAYER_S per MoE layer (efficiency.py 1-HIP-MOE, fitted on the HIP MoE fit rows); 0 for dense
    models and other engines."""
    a = r.arch
    if engine != "llama.cpp-hip" or not a.is_moe or not a.num_layers:
        return 0.0
    return eff.HIP_MOE_LAYER_S * a.num_moe_layers / a.num_layers


def format_efficiency(engine: str, family: str, gpu: GPU) -> float:
    """Fraction of the bandwidth figure that weight reads of a format family reach
    (efficiency.FORMAT_DECODE_EFF); MXFP4 under vLLM's XPU build on Intel GPUs reads prepacked at
    the full figure (efficiency.XPU_PREPACKED_FP4_ENGINES); vLLM's Marlin and LMDeploy's TurboMind read
    4-bit GPTQ / AWQ weights at the full figure on NVIDIA Ampere and newer
    (efficiency.REGISTER_DEQUANT_4BIT_ENGINES)."""
    if family == "fp4" and gpu.hardware_class == "intel" and engine in eff.XPU_PREPACKED_FP4_ENGINES:
        return 1.0
    if (family == "gpu4" and engine in eff.REGISTER_DEQUANT_4BIT_ENGINES and gpu.vendor == "NVIDIA"
            and not str(gpu.architecture or "").startswith(eff.PRE_AMPERE_ARCHITECTURES)):
        return 1.0
    return eff.FORMAT_DECODE_EFF.get(engine, eff.FORMAT_DECODE_EFF["default"])[family]


def gemm_dtype_on(gpu: GPU, precision: Precision, engine: str, engine_version: str | None = None) -> str:
    """The dtype the GEMMs run in on this GPU: `Precision.gemm_dtype`, with FP4 (W4A4 NVFP4) only where the GPU
    has an FP4 tensor rate (Blackwell), in an engine release with the kernels (quant.FP4_GEMM_FROM); elsewhere the
    4-bit weights de-quantise to 16-bit (fp16). W8A8 int8 runs int8 GEMMs (quant.INT8_GEMM_ENGINES) only on NVIDIA
    GPUs from Turing to Hopper with an int8 tensor rate; elsewhere fp16. MXFP8 runs FP8
    GEMMs only on GPUs with block-scaled MMA (`mx_tensor_cores`) in an engine release with MXFP8 kernels
    (quant.MXFP8_GEMM_FROM; no version: the current release); elsewhere it is de-quantised to 16-bit."""
    dtype = precision.gemm_dtype(engine)
    if dtype == "fp4":
        from mlrig.estimators.engines import series_before
        from mlrig.quant import FP4_GEMM_FROM

        old_release = engine in FP4_GEMM_FROM and series_before(engine_version, FP4_GEMM_FROM[engine])
        if not gpu.fp4_tflops_dense or old_release:
            return "fp16"
    if dtype == "int8" and (gpu.vendor != "NVIDIA" or not gpu.int8_tops_dense
                            or str(gpu.architecture or "").startswith(
                                ("Volta", "Pascal", "Maxwell", "Kepler", "Blackwell"))):
        # CUTLASS int8 kernels need int8 MMA (sm75+) and exist up to sm90 (quant.INT8_GEMM_ENGINES); vLLM refuses
        # W8A8 int8 on Blackwell (planner.vllm_int8_refusal)
        return "fp16"
    if precision.name == "mxfp8" and dtype == "fp8":
        from mlrig.estimators.engines import series_before
        from mlrig.quant import MXFP8_GEMM_FROM

        if not mx_tensor_cores(gpu) or series_before(engine_version, MXFP8_GEMM_FROM[engine]):
            return "fp16"
    return dtype


def mx_tensor_cores(gpu: GPU) -> bool:
    """Whether the GPU's tensor cores read OCP MX block scales (E8M0 per 32 values) in the MMA itself, with an FP8
    rate: NVIDIA Blackwell (sm_100 / sm_103 / sm_110 / sm_120; the engines' MXFP8 kernels require compute
    capability 10.0 or newer, quant.MXFP8_GEMM_FROM). Hopper and Ada have FP8 but no block-scaled MMA."""
    return (gpu.vendor == "NVIDIA" and str(gpu.architecture or "").startswith("Blackwell")
            and bool(gpu.fp8_tflops_dense))


def peak_tflops(gpu: GPU, dtype: str, engine: str, gemm_duty: float = 1.0) -> float | None:
    """Dense tensor peak for the GEMM dtype. llama.cpp's cuBLAS path accumulates in FP16, which
    GeForce cards run at twice their FP32-accumulate rate (NVIDIA Ampere/Ada/Blackwell GeForce
    whitepapers); professional cards run both at the same rate. Apple GPUs: FP16 = FP32 ALU rate.
    Intel Arc under llama.cpp: its Vulkan backend did not drive the XMX matrix engines in the
    scoreboard builds (pp512 of Llama-2-7B Q4_0 reaches 74 % of the A770's and 61 % of the B580's
    FP32 *vector* rate, V10879-0015/0017), so the vector rate is the ceiling there; the SYCL
    backend's oneMKL GEMMs may do better, which this under-states. A card whose board power bounds its
    dense GEMMs below its rating is priced at that bound (`hardware.board_power_tflops`) unless `gemm_duty`, the
    share of the board's sustained power its load asks for (`serving.board_power_duty`; 1: a sustained load), is
    below 1: the bound is on power averaged over about a second, which such a load stays under at any clock."""
    t = gpu.tensor_tflops(dtype)
    if engine.startswith("llama.cpp") and gpu.hardware_class == "intel" and gpu.fp32_tflops:
        t = gpu.fp32_tflops
    if t is None:
        t = gpu.fp32_tflops
    if t is None:
        return None
    if dtype == "fp16" and engine.startswith("llama.cpp") and gpu.hardware_class == "geforce":
        t *= 2.0
    bound = board_power_tflops(gpu, dtype)
    if bound is not None and gemm_duty >= 1.0:
        t = min(t, bound)
    return t * apple_neural_accel_speedup(gpu, engine)


def apple_neural_accel_speedup(gpu: GPU, engine: str) -> float:
    """Matmul rate over the Apple GPU's SIMD figure where the engine drives the GPU cores' Neural Accelerators
    (Metal GPU family Apple10 and later, efficiency.APPLE_NEURAL_ACCEL_FAMILIES; llama.cpp's Metal 4 tensor-API
    mat-mat kernels, efficiency.APPLE_NEURAL_ACCEL_GEMM_SPEEDUP, which has the sources), else 1."""
    if gpu.hardware_class != "apple":
        return 1.0
    arch = gpu.architecture or ""
    if not any(f"family Apple{n})" in arch for n in eff.APPLE_NEURAL_ACCEL_FAMILIES):
        return 1.0
    fam = "llama.cpp" if engine.startswith("llama.cpp") else engine
    return eff.APPLE_NEURAL_ACCEL_GEMM_SPEEDUP.get(fam, 1.0)


def gemm_rate_rel(gpu: GPU) -> float:
    """The GPU's achievable matmul rate relative to what efficiency.COMPUTE_EFF (fitted on NVIDIA cards) assumes of
    its data-sheet peak: efficiency.AMD_CDNA3_GEMM_REL_EFF on AMD Instinct CDNA 3 (MI300X, MI325X), else 1."""
    arch = (gpu.architecture or "").strip()
    if gpu.vendor == "AMD" and arch.startswith(eff.AMD_CDNA3_ARCHITECTURE):
        return eff.AMD_CDNA3_GEMM_REL_EFF
    return 1.0


def vllm_rocm_hipblaslt_matvec(gpu: GPU, engine: str, precision: Precision, engine_version: str | None,
                               rows: Num) -> Num:
    """The rate at which vLLM's dense 16-bit linear layers stream their weights in a decode step of `rows` tokens,
    relative to the engine's mat-vec rate: efficiency.VLLM_ROCM_HIPBLASLT_MATVEC_REL where the step's GEMMs run
    through F.linear (hipBLASLt) on AMD CDNA 3, 1 where vLLM's skinny kernels take them, and 1 elsewhere.

    Skinny kernels (efficiency.py, at VLLM_ROCM_HIPBLASLT_MATVEC_REL, read in the release wheels): upstream from
    0.8.5 (efficiency.VLLM_ROCM_SKINNY_GEMM_FROM; the current release when no version is given) for fp16 / bf16 at
    up to efficiency.VLLM_ROCM_SKINNY_MAX_ROWS rows; AMD's fork ("rocm/vllm ...", `engines.vllm_custom_allreduce_on_amd`
    reads the same names) before 0.8.5 for fp16 only at up to efficiency.VLLM_ROCM_FORK_SKINNY_MAX_ROWS rows. Other
    weight formats (fp8 `torch._scaled_mm`, quantised kernels) keep 1: not measured."""
    arch = (gpu.architecture or "").strip()
    if engine != "vllm" or gpu.vendor != "AMD" or not arch.startswith(eff.AMD_CDNA3_ARCHITECTURE):
        return 1.0
    if precision.name not in ("fp16", "bf16"):
        return 1.0
    fork = bool(engine_version and "rocm/vllm" in engine_version.lower())
    if not before(engine_version, eff.VLLM_ROCM_SKINNY_GEMM_FROM):
        skinny_rows = eff.VLLM_ROCM_SKINNY_MAX_ROWS
    elif fork and precision.name == "fp16":
        skinny_rows = eff.VLLM_ROCM_FORK_SKINNY_MAX_ROWS
    else:
        skinny_rows = 0
    return vec.where(rows <= skinny_rows, 1.0, eff.VLLM_ROCM_HIPBLASLT_MATVEC_REL)


def moe_expert_bw_rel(engine: str, gpu: GPU) -> float:
    """Rate at which an engine's fused MoE kernels stream routed-expert weights, relative to its dense
    GEMMs' (efficiency.MOE_EXPERT_BW_REL): vLLM's and SGLang's Triton `fused_moe` kernels on NVIDIA and AMD
    GPUs (efficiency.FUSED_MOE_VENDORS); 1 elsewhere (vLLM's XPU build on Intel runs its own MoE kernels)."""
    if gpu.vendor not in eff.FUSED_MOE_VENDORS:
        return 1.0
    return eff.MOE_EXPERT_BW_REL.get(engine, 1.0)


def apple_gpu_family(gpu: GPU) -> int | None:
    """The Metal GPU family number of an Apple chip (7 = M1, 8 = M2, 9 = M3 / M4, 10 = M5), read from the catalog's
    `architecture` ("... (Metal GPU family Apple9)"); None for other GPUs or an entry that does not name it."""
    if gpu.hardware_class != "apple":
        return None
    m = re.search(r"family Apple(\d+)", gpu.architecture or "")
    return int(m.group(1)) if m else None


def layer_overhead_s(engine: str, gpu: GPU) -> float:
    """Fixed time per layer per pass (efficiency.LAYER_OVERHEAD_S); on a device where the engine's graph
    replay does not happen, the host's per-kernel launches instead (`graph_replay_missing`); MLX on an Apple GPU
    before family Apple9 (M1, M2) its own figure (efficiency.MLX_PRE_APPLE9_LAYER_OVERHEAD_S), and from Apple10 (M5)
    the Apple9 figure x `mlx_apple_dispatch_scale`."""
    if graph_replay_missing(engine, gpu):
        return eff.NO_GRAPH_LAYER_OVERHEAD_S_INTEL
    if engine == "mlx":
        family = apple_gpu_family(gpu)
        if family is not None and family < eff.MLX_FAST_DISPATCH_FROM_APPLE_FAMILY:
            return eff.MLX_PRE_APPLE9_LAYER_OVERHEAD_S
        return eff.LAYER_OVERHEAD_S[engine] * mlx_apple_dispatch_scale(gpu)
    return eff.LAYER_OVERHEAD_S[engine]


def mlx_apple_dispatch_scale(gpu: GPU) -> float:
    """Scale of MLX's dependent-dispatch times (per layer, per MoE layer and GPU core) on an Apple GPU against the
    Apple9 (M3 / M4) figures: efficiency.MLX_APPLE10_DISPATCH_SCALE from family Apple10 (M5, M5 Pro, M5 Max; fitted on
    MLXCELM5MAX and ZISKIND-0036..0040, efficiency.py), else 1."""
    family = apple_gpu_family(gpu)
    if family is not None and family >= eff.MLX_FASTER_DISPATCH_FROM_APPLE_FAMILY:
        return eff.MLX_APPLE10_DISPATCH_SCALE
    return 1.0


def hip_dp4a_mmq(gpu: GPU, engine: str) -> bool:
    """Whether llama.cpp's quantised prefill GEMMs (MMQ) run on packed int8 dot products (dp4a: sdot4 / sudot4)
    rather than matrix cores: its HIP build ("llama.cpp-hip") on AMD GPUs other than CDNA (MFMA MMQ,
    `amd_mfma_available`) and RDNA 4 (WMMA MMQ, `amd_wmma_available`) - ggml/src/ggml-cuda/common.cuh and
    mmq.cu `ggml_cuda_should_use_mmq`, which keeps MMQ for every quantised type on these GPUs (gfx906: `return
    !GGML_CUDA_CC_IS_CDNA(cc) || ...`). RDNA 3 is taken here as dp4a: the RX7900X6-* build's rate says so; newer
    upstream builds route RDNA 3 through WMMA as well (not modelled: the release that did is not established)."""
    if engine != "llama.cpp-hip" or gpu.vendor != "AMD":
        return False
    arch = (gpu.architecture or "").strip()
    return not arch.startswith(eff.HIP_MATRIX_CORE_MMQ_ARCHITECTURES)


def hip_mfma_mmq(gpu: GPU, engine: str, engine_version: str | None) -> bool:
    """Whether llama.cpp's HIP build runs a prompt's quantised GEMMs as MMQ tiles on CDNA's matrix cores (MFMA) at a
    prompt's micro-batch: CDNA 3 (efficiency.HIP_MMQ_ID_MFMA_ARCHITECTURES: `ggml_cuda_should_use_mmq` returns true
    there at every batch size) in builds from ggml-org/llama.cpp PR #14624 ("HIP: Enable Matrix cores for MMQ Kernels,
    Enable stream-K for CDNA 3") and #14949, merged late July 2025: month labels from
    efficiency.LLAMA_CPP_HIP_MMQ_ID_MFMA_FROM, build numbers after efficiency.LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD, no
    label. CDNA 1-2 take MFMA MMQ only at small batches (PR #14949: "only enables the path on datatype and batch sizes
    where tested to be more performant"; its MI100 table is level with rocBLAS from 512 tokens) and keep the rocBLAS
    path here. Their rate: efficiency.HIP_MFMA_MMQ_PREFILL_EFF."""
    arch = (gpu.architecture or "").strip()
    if engine != "llama.cpp-hip" or gpu.vendor != "AMD" or not arch.startswith(eff.HIP_MMQ_ID_MFMA_ARCHITECTURES):
        return False
    return not llama_cpp_before_change(engine_version, _month_before(eff.LLAMA_CPP_HIP_MMQ_ID_MFMA_FROM),
                                       eff.LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD)


def llama_cpp_cublas_dequant(gpu: GPU, engine: str, family: str, tokens_in_pass: Num) -> Num:
    """Whether llama.cpp's quantised GEMMs of a pass go through de-quantise + cuBLAS rather than MMQ: its
    builds before CUDA graphs ("llama.cpp-2024", b2xxx, spring 2024) on NVIDIA GPUs with FP16 tensor cores
    (Volta on). ggml-cuda.cu `ggml_cuda_mul_mat` of those builds kept MMQ only for `!fp16_performance_good ||
    src1->ne[1] <= MMQ_MAX_BATCH_SIZE` (32 rows; llama.cpp PR #3776, "when tensor cores are available, use them
    for large batch size"), so a micro-batch of more than 32 prompt tokens ran `ggml_cuda_op_mul_mat_cublas`:
    `to_fp16_cuda` writes the whole weight matrix as FP16 into a pool buffer, then cublasGemmEx multiplies at
    the FP16 tensor rate (the SYCL backend's `ggml_sycl_mul_mat` still carries the same rule under
    SYCL_USE_XMX). Int8 tensor-core MMQ for every batch size came in June 2024 (PRs #7676 / #7860), after the
    2024 label's builds. The copy is priced by `llama_cpp_dequant_copy_bytes`; the GEMM takes no
    efficiency.QUANT_PREFILL_EFF (that is MMQ's shortfall)."""
    if engine != "llama.cpp-2024" or gpu.vendor != "NVIDIA" or family == "f16":
        return False
    arch = (gpu.architecture or "").strip()
    if arch.startswith(("Pascal", "Maxwell", "Kepler")) or not gpu.tensor_tflops("fp16"):
        return False
    return tokens_in_pass > LLAMA_CPP_MMQ_MAX_BATCH_SIZE


def llama_cpp_dequant_copy_bytes(arch: ModelArch, weight_bytes: float, tokens: Num) -> Num:
    """Memory traffic of the de-quantise kernels on llama.cpp's cuBLAS path (`llama_cpp_cublas_dequant`) for a
    prompt of `tokens`: every micro-batch of LLAMA_CPP_N_UBATCH tokens is a graph run of its own, and each of its
    GEMMs re-runs `to_fp16_cuda` over its weight matrix, reading the quantised blocks and writing 2 bytes per
    parameter (a kernel of its own, not hidden under the GEMM). cuBLAS's read of the FP16 copy belongs to the GEMM,
    compute-bound at hundreds of rows, so it is not counted here. The LM head runs for the last token only (a
    mat-vec, no copy). Quantised bytes per parameter: the file's average."""
    body = matmul_params(arch) - lm_head_params(arch)
    per_param = weight_bytes / max(float(arch.params().total), 1.0)
    return vec.ceil_int(tokens / LLAMA_CPP_N_UBATCH) * body * (per_param + 2.0)


def hip_without_bf16(gpu: GPU, engine: str) -> bool:
    """Whether llama.cpp's HIP build runs BF16 weights' GEMMs on a GPU without BF16 arithmetic: AMD GPUs before
    CDNA / RDNA 3 (ggml/src/ggml-cuda/common.cuh `bf16_mma_hardware_available`: CDNA or cc >= RDNA3). The BF16
    GEMM then goes to rocBLAS (ggml_cuda_op_mul_mat_cublas, cublasGemmEx with BF16 inputs and FP32 compute,
    hipified); with no BF16 instructions the library can only convert the operands and multiply in FP32, so it is
    priced at the FP32 vector rate (an inference from the instruction set, not a rocBLAS measurement), not the
    packed FP16 one. rocBLAS has no tuned BF16 kernels for these architectures (no BBS logic for vega20), so the
    prefill GEMMs reach efficiency.HIP_BF16_FALLBACK_GEMM_EFF of that rate, not COMPUTE_EFF (Tensile's generic
    fallback kernels; fitted on MI50X2-0013 / -0015, Qwen3-14B BF16 pp512, 118 / 119 tok/s on 2x MI50, against
    the F16 Gemma-3-27B's 237 tok/s, MI50X2-0017 / -0019, whose F16 GEMMs have tuned vega20 kernels). Attention
    stays at the F16 rate (the KV cache is F16). Decode's mat-vecs are llama.cpp's own kernels, not rocBLAS."""
    if engine != "llama.cpp-hip" or gpu.vendor != "AMD":
        return False
    return not (gpu.architecture or "").strip().startswith(eff.HIP_BF16_ARCHITECTURES)


def hip_dp4a_mmq_eff(family: str) -> float:
    """Fraction of the int8 dot-product peak llama.cpp HIP's dp4a MMQ kernels reach, by weight format family
    (efficiency.HIP_DP4A_MMQ_EFF: legacy formats apart from the others)."""
    return eff.HIP_DP4A_MMQ_EFF.get(family, eff.HIP_DP4A_MMQ_EFF["other"])


def matvec_dequant_s(cost: PassCost, gpu: GPU, engine: str, family: str, tokens_in_pass: Num) -> Num:
    """ALU time of a decode pass's mat-vec kernels unpacking their weights, beside the 2 FLOPs per weight
    the roofline's compute side already counts: efficiency.MATVEC_DEQUANT_OPS (ALU operations per
    weight, by engine and weight format) at the GPU's FP32 vector rate (times
    efficiency.APPLE_CONCURRENT_ALU_SPEEDUP on GPUs whose shader core issues FP and integer work
    concurrently). The weights a pass reads are its GEMM FLOPs / 2 per token; ggml-metal's mat-vec
    kernels unpack each weight again for every token column, up to efficiency.METAL_MATVEC_MAX_TOKENS
    columns (beyond, its mat-mat kernel unpacks a tile once for many tokens). 0 where no figure is known."""
    ops = eff.MATVEC_DEQUANT_OPS.get(engine, {}).get(family, 0.0)
    if not ops or not gpu.fp32_tflops:
        return 0.0
    tokens = vec.maximum(tokens_in_pass, 1)
    weights = (cost.flops - cost.attn_flops) / (2.0 * tokens)
    rate = gpu.fp32_tflops * 1e12 * apple_alu_speedup(gpu)
    return weights * ops * vec.minimum(tokens, eff.METAL_MATVEC_MAX_TOKENS) / rate


def apple_alu_speedup(gpu: GPU) -> float:
    """efficiency.APPLE_CONCURRENT_ALU_SPEEDUP on Apple GPUs of family Apple9 or later (M3, M4, M5: the
    catalog's `architecture` names the family), else 1."""
    arch = (gpu.architecture or "")
    if gpu.hardware_class == "apple" and any(f"Apple{n}" in arch for n in (9, 10, 11)):
        return eff.APPLE_CONCURRENT_ALU_SPEEDUP
    return 1.0


# ---- per-pass costs -----------------------------------------------------------------------------
@dataclass(frozen=True)
class PassCost:
    """What one forward pass moves and computes (whole model, before any parallel split)."""

    flops: Num
    weight_bytes: Num
    kv_bytes: Num
    other_bytes: Num  # moved beside the weights by kernels of their own (de-quantised copies): DEQUANT_COPY_BW_EFF
    attn_flops: Num = 0.0  # the part of `flops` done by the attention kernels (QK^T, AV)
    spill_bytes: Num = 0.0  # attention scores written and read back without flash attention
    expert_bytes: Num = 0.0  # the part of `weight_bytes` that is routed experts (MoE grouped GEMMs)
    expert_flops: Num = 0.0  # the part of `flops` done by the routed experts' grouped GEMMs (`expert_gemm_flops`)
    # the part of `weight_bytes` stored at 16 bits in a mixed-width checkpoint (gpt-oss MXFP4: attention, router,
    # head in bf16): read at the plain bandwidth, without the format's de-quantisation penalty (FORMAT_DECODE_EFF)
    plain_weight_bytes: Num = 0.0

    @property
    def bytes(self) -> Num:
        return self.weight_bytes + self.kv_bytes + self.other_bytes + self.spill_bytes


def read_fraction(arch: ModelArch, tokens_in_pass: Num, touched: Num | None = None) -> Num:
    """Fraction of all weights read by one pass of `tokens_in_pass` tokens (`touched`: its
    `experts_touched_fraction`, where the caller has it already).

    The input embedding is a row lookup, so its table is not streamed (unless tied to the head).
    MoE: each token routes to k of E experts; with n tokens the expected fraction of experts
    touched per layer is 1 - (1 - k/E)^n (uniform routing assumption; real routers are skewed,
    so this slightly overstates bytes at mid batch).

    A vision tower (Qwen-VL, Gemma 3, Mistral 3: `ParamBreakdown.vision`) is loaded but runs only on image
    inputs (the engines encode images once, before the language model's prefill), so no text token reads it."""
    pb = arch.params()
    total = max(1, pb.total)
    read: Num = float(pb.total - pb.vision)
    if not arch.tie_word_embeddings:
        read -= pb.embedding
    if arch.is_moe and pb.experts_routed:
        if touched is None:
            touched = experts_touched_fraction(arch, tokens_in_pass)
        read = read - pb.experts_routed * (1.0 - touched)
    return vec.maximum(0.0, read) / total


def read_weight_bytes(arch: ModelArch, weight_bytes: float, tokens_in_pass: Num,
                      embedding_bytes: float | None = None, expert_bytes: float | None = None,
                      touched: Num | None = None, vision_bytes: float | None = None) -> Num:
    """Bytes of weights one pass of `tokens_in_pass` tokens streams: `weight_bytes` x `read_fraction`,
    with the untied input embedding taken out at its own bytes when they are known (`embedding_bytes`,
    quant.weight_bytes_by_component). `read_fraction` removes the embedding's share of the *parameters*,
    which is its share of the bytes only when every weight has the same width: weight-only 4-bit formats
    (AWQ, GPTQ, MLC q4f16, EXL2) keep the embedding at 16 bits, so a quarter-size body carries a full-size
    table. Llama-3-8B AWQ (4.156 bpw linears, fp16 embedding and head, 128k vocabulary): the embedding is
    6.5 % of the parameters but 18 % of the 5.73 GB file, so a decode step reads 4.68 GB, not 5.35 GB
    (the AWQ row TINYCHAT-0002, 6.39 ms per token on an RTX 4090, reaches 0.73 of the card's bandwidth
    on 4.68 GB where 5.35 GB would need 0.83).

    MoE checkpoints whose experts are stored narrower than the rest (`expert_bytes`, the routed experts'
    own bytes, quant.routed_expert_bytes) are read by component: everything but the input embedding at its
    own width, the experts at their touched share (`experts_touched_fraction`). A parameter share prices every
    weight at the file's average width: gpt-oss-20b in MXFP4 averages 5.3 bits per parameter, but a decode
    step reads its bf16 attention (0.64 B parameters) and output head (0.58 B) at 16 bits and only 2.4 B of its
    19.1 B expert parameters at 4.25 (model card, arXiv 2508.10925, Table 1: 3.6 B active of 20.9 B). That is
    3.7 GB per token, not the 1.6 GB the share gave (Ollama decodes it at 205-215 tok/s on an RTX 5090 / RTX
    PRO 6000 Blackwell, LMSYSSPARK-0004/-0006, predicted 482 tok/s at 1.6 GB).

    A vision tower is never read by a text token (`read_fraction`); `vision_bytes` (quant.vision_bytes: 16-bit
    in quantised checkpoints, so more than its parameter share) takes it out at its own bytes where known.

    `touched`: the pass's `experts_touched_fraction`, where the caller has it already (`moe_touched`)."""
    pb = arch.params()
    if expert_bytes and embedding_bytes is not None and arch.is_moe and pb.experts_routed:
        emb = 0.0 if arch.tie_word_embeddings else embedding_bytes
        if touched is None:
            touched = experts_touched_fraction(arch, tokens_in_pass)
        skipped = expert_bytes * (1.0 - touched)
        vision = vision_bytes if vision_bytes is not None else weight_bytes * pb.vision / max(1, pb.total)
        return vec.maximum(0.0, weight_bytes - emb - skipped - vision)
    read = weight_bytes * read_fraction(arch, tokens_in_pass, touched)
    if vision_bytes is not None and pb.vision:
        read = read + weight_bytes * pb.vision / max(1, pb.total) - vision_bytes  # its bytes for its share
    if embedding_bytes is None or arch.tie_word_embeddings:
        return vec.maximum(0.0, read)
    share = weight_bytes * pb.embedding / max(1, pb.total)  # what read_fraction took out
    return vec.maximum(0.0, read + share - embedding_bytes)


def expert_read_bytes(arch: ModelArch, weight_bytes: float, tokens_in_pass: Num,
                      routed_bytes: float | None = None, touched: Num | None = None) -> Num:
    """Bytes of routed-expert weights one pass of `tokens_in_pass` tokens streams: the experts' own
    bytes (`routed_bytes`, quant.routed_expert_bytes, where known; else their parameter share of
    `weight_bytes`) times the fraction of experts the pass touches (`experts_touched_fraction`). They are
    read by the fused / grouped MoE GEMM kernels, not the dense ones (efficiency.MOE_EXPERT_BW_REL). 0 for
    a dense model. `touched`: as in `read_weight_bytes`."""
    pb = arch.params()
    if not (arch.is_moe and pb.experts_routed):
        return 0.0
    own = routed_bytes if routed_bytes else weight_bytes * pb.experts_routed / max(1, pb.total)
    return own * (experts_touched_fraction(arch, tokens_in_pass) if touched is None else touched)


def moe_touched(arch: ModelArch, tokens_in_pass: Num) -> Num | None:
    """`experts_touched_fraction` of a pass, worked out once for the weight and expert reads of one
    `PassCost` (an array pass evaluates Python's `**` per distinct token count, `vec.power`); None for a
    model without routed experts (the reads then take none)."""
    return experts_touched_fraction(arch, tokens_in_pass) if arch.is_moe and arch.params().experts_routed else None


def kv_read_replication(arch: ModelArch, tp: int) -> float:
    """How many times the whole model's KV bytes are moved, summed over `tp` tensor-parallel ranks,
    relative to one copy: 1 where TP splits the KV heads, more where ranks hold copies.
    - MLA (DeepSeek-V2/V3, Kimi K2) caches one latent vector per token and layer shared by all query
      heads (DeepSeek-V2 paper, arXiv 2405.04434, sec. 2.1.2): TP splits the query heads but every rank
      keeps and reads the whole latent cache, tp copies (LMSYS blog "SGLang v0.4", 2024-12-04, section on
      data-parallel attention: with one KV head, TP duplicates the KV cache on every GPU, which DP attention
      avoids; vLLM's MLA backend keeps the latent on every rank too).
    - GQA with fewer KV heads than ranks: each rank keeps one head, replicated tp / kv_heads times
      (Qwen3-235B-A22B's 4 KV heads on 8 GPUs: 2 copies).
    memory.kv_bytes_per_token sizes the cache the same way."""
    if tp <= 1:
        return 1.0
    if arch.is_mla:
        return float(tp)
    heads = max(1, arch.kv_heads)
    return tp * math.ceil(heads / tp) / heads


def expert_gemm_flops(arch: ModelArch, tokens: Num) -> Num:
    """FLOPs of the routed experts' GEMMs for `tokens` tokens: 2 x the routed-expert parameters one token
    uses (k of E experts in every MoE layer, ParamBreakdown.experts_routed_active). 0 for a dense model."""
    if not arch.is_moe:
        return 0.0
    return 2.0 * arch.params().experts_routed_active * tokens


def lm_head_params(arch: ModelArch) -> float:
    """Parameters of the output projection: the untied head, else the tied embedding, else 0."""
    pb = arch.params()
    return float(pb.lm_head if pb.lm_head else (pb.embedding if arch.tie_word_embeddings else 0))


def matmul_params(arch: ModelArch) -> float:
    """Parameters in per-token GEMMs: active params minus the input embedding lookup and any vision tower
    (which runs on images only, `read_fraction`)."""
    pb = arch.params()
    return float(pb.active - pb.vision - (0 if arch.tie_word_embeddings else pb.embedding))


def attention_flops(arch: ModelArch, new_tokens: Num, context: Num, causal: bool = True) -> Num:
    """QK^T and AV: 2 x (QK width + AV width) FLOPs per (query, key) pair per layer, 4 x H x d_h for
    standard attention (Vaswani 2017; `ModelArch.attention_widths`). A prefill of
    s tokens on top of `context - s` cached has s x (context - s) + s^2/2 pairs when causal.
    Sliding-window layers cap the keys at the window."""
    qk_width, v_width = arch.attention_widths
    past = vec.maximum(0, context - new_tokens)
    pairs_full = new_tokens * past + (new_tokens * new_tokens / 2.0 if causal else 1.0 * (new_tokens * new_tokens))
    full_layers = arch.num_layers - arch.num_sliding_layers
    pairs = pairs_full * full_layers
    if arch.num_sliding_layers:
        w = arch.sliding_window or context
        pairs = pairs + vec.minimum(pairs_full, new_tokens * (1.0 * w)) * arch.num_sliding_layers
    return 2.0 * (qk_width + v_width) * pairs


def kv_bytes(arch: ModelArch, context: Num, kv_bytes_per_element: float) -> Num:
    """KV cache bytes of one sequence holding `context` tokens."""
    return arch.kv_values_per_token(context) * context * kv_bytes_per_element


def decode_kv_read_factor(arch: ModelArch, engine: str, flash_attention: bool = True,
                          engine_version: str | None = None, kv_bytes_per_element: float = 2.0) -> float:
    """How many times a decode step moves each cached KV byte: 1, or the GQA group size for engines
    whose decode attention reads a KV head once per query head (`efficiency.KV_READ_PER_QUERY_HEAD`;
    llama.cpp with flash attention off, `efficiency.UNFUSED_GQA_DECODE_ENGINES`), or, for LMDeploy's
    TurboMind, the group over the query heads one thread block serves in that release
    (`engines.turbomind_kv_reads_per_step`), plus the passes of a cache grown by concatenation
    (`efficiency.KV_EXTRA_PASSES_PER_STEP`)."""
    extra = eff.KV_EXTRA_PASSES_PER_STEP.get(engine, 0.0)
    if engine == "lmdeploy" and not arch.is_mla and arch.num_kv_heads:
        group = arch.num_heads // arch.num_kv_heads
        return turbomind_kv_reads_per_step(group, engine_version, kv_bytes_per_element <= 1.0) + extra
    per_query_head = engine in eff.KV_READ_PER_QUERY_HEAD or (
        not flash_attention and engine.startswith(eff.UNFUSED_GQA_DECODE_ENGINES))
    if per_query_head and not arch.is_mla and arch.num_kv_heads:
        return arch.num_heads / arch.num_kv_heads + extra
    return 1.0 + extra


def decode_cost(
    arch: ModelArch, weight_bytes: float, kv_bytes_per_element: float, batch: Num, context: Num,
    kv_read_factor: float = 1.0, embedding_bytes: float | None = None, expert_bytes: float | None = None,
    plain_bytes: float = 0.0, vision_bytes: float | None = None,
) -> PassCost:
    """One decode step: `batch` sequences each add one token at `context` tokens held; the cache is
    read `kv_read_factor` times (`decode_kv_read_factor`). `weight_bytes`: the whole model's;
    `embedding_bytes` / `expert_bytes` / `vision_bytes`: its input embedding's, routed experts' and vision
    tower's (`read_weight_bytes`);
    `plain_bytes`: what of the rest is stored at 16 bits in a mixed-width checkpoint (`PassCost.plain_weight_bytes`)."""
    touched = moe_touched(arch, batch)
    w = read_weight_bytes(arch, weight_bytes, batch, embedding_bytes, expert_bytes, touched, vision_bytes)
    kv = batch * kv_bytes(arch, context, kv_bytes_per_element) * kv_read_factor
    attn = batch * attention_flops(arch, 1, context)
    flops = batch * 2.0 * matmul_params(arch) + attn
    return PassCost(flops=flops, weight_bytes=w, kv_bytes=kv, other_bytes=0.0, attn_flops=attn,
                    expert_bytes=expert_read_bytes(arch, weight_bytes, batch, expert_bytes, touched),
                    expert_flops=expert_gemm_flops(arch, batch),
                    plain_weight_bytes=plain_bytes)


def prefill_cost(
    arch: ModelArch, weight_bytes: float, kv_bytes_per_element: float, batch: Num, prompt: Num,
    flash_attention: bool = True, all_logits: bool = False, embedding_bytes: float | None = None,
    expert_bytes: float | None = None, plain_bytes: float = 0.0, score_bytes: float = DEFAULT_PREFILL_SCORE_BYTES,
    vision_bytes: float | None = None,
) -> PassCost:
    """Prefill of `prompt` tokens for `batch` sequences. Logits only for the last token (the LM
    head runs once per sequence), or for every prompt token with `all_logits` (transformers before
    4.45, engines.transformers_full_logits). Without flash attention engines compute the full s x s
    scores and move `score_bytes` per element per head per layer (`score_traffic.prefill_score_bytes`: 24 B
    for transformers' eager attention, the fp32 write and read, 4 bytes x 2, elsewhere)."""
    head = lm_head_params(arch)
    body = matmul_params(arch) - head
    attn = batch * attention_flops(arch, prompt, prompt, causal=flash_attention)
    head_tokens = prompt if all_logits else 1.0
    flops = batch * (2.0 * body * prompt + 2.0 * head * head_tokens) + attn
    tokens = batch * prompt
    touched = moe_touched(arch, tokens)
    w = read_weight_bytes(arch, weight_bytes, tokens, embedding_bytes, expert_bytes, touched, vision_bytes)
    kv = batch * kv_bytes(arch, prompt, kv_bytes_per_element)
    spill = 0.0 if flash_attention else batch * score_bytes * arch.num_heads * (1.0 * prompt) ** 2 * arch.num_layers
    return PassCost(flops=flops, weight_bytes=w, kv_bytes=kv, other_bytes=0.0, attn_flops=attn, spill_bytes=spill,
                    expert_bytes=expert_read_bytes(arch, weight_bytes, tokens, expert_bytes, touched),
                    expert_flops=expert_gemm_flops(arch, tokens),
                    plain_weight_bytes=plain_bytes)


# ---- timing --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PassTime:
    seconds: Num
    compute_s: Num
    memory_s: Num
    overhead_s: Num
    comm_s: Num
    bound: Num  # "compute" | "memory-bandwidth" | "interconnect" | "offload" (an array of them in a sweep)
    compute_known: bool = True  # False when the catalog has no compute figure for the GPU


def _p_norm(a: Num, b: Num, p: float) -> Num:
    """(a^p + b^p)^(1/p) of two non-negative times: their max where one dominates, more where alike.
    For p a power of two, by squarings and square roots, which floats and numpy arrays round alike (a
    sweep's figures equal `evaluate`'s to the bit); other p through `vec.power`."""
    hi = vec.maximum(a, b)
    safe = vec.where(hi > 0, hi, 1.0)
    x, y = a / safe, b / safe
    k = round(math.log2(p))
    if k >= 1 and 2 ** k == p:
        for _ in range(k):
            x, y = x ** 2, y ** 2
        total = x + y
        for _ in range(k):
            total = total ** 0.5
        return hi * total
    return hi * vec.power(vec.power(x, p) + vec.power(y, p), 1.0 / p)


def _soft_max(a: Num, b: Num) -> Num:
    """`_p_norm` with p = efficiency.ROOFLINE_SMOOTHING_P: the max of two non-negative times where one
    dominates, more where they are alike (a kernel near the roofline's ridge reaches neither roof)."""
    return _p_norm(a, b, eff.ROOFLINE_SMOOTHING_P)


def pass_time(
    cost: PassCost,
    gpu: GPU,
    engine: str,
    precision: Precision,
    *,
    layers: int,
    tp: int = 1,
    link: Interconnect | None = None,
    hidden: int = 0,
    tokens_in_pass: Num = 1,
    decode: bool = True,
    serial_gpus: int = 1,
    seq_step_s: float = 0.0,
    extra_layer_s: Num = 0.0,
    fp8_attention: bool = False,
    block_fp8_eff: float | None = None,
    moe_compute_rel: float = 1.0,
    peer_allreduce: bool | None = None,
    prefill_host_layer_s: float = 0.0,
    engine_version: str | None = None,
    attn_eff_rel: float = 1.0,
    gemm_duty: float = 1.0,
) -> PassTime:
    """Roofline time of one pass on `tp` GPUs (each holding 1/tp of weights, KV and FLOPs).

    `serial_gpus` > 1 is llama.cpp's layer split: the pass visits each GPU in turn, so time is
    unchanged by the split except for (n-1) hidden-state hand-offs. `seq_step_s`: host time per
    sequence per decode step that is not overlapped with the GPU (`host_seq_step_s`). `extra_layer_s`: per-layer
    time beyond the engine's LAYER_OVERHEAD_S (`eager_attention_layer_s`). Routed-expert weights
    (`cost.expert_bytes`) stream at efficiency.MOE_EXPERT_BW_REL of the dense kernels' rate (`moe_expert_bw_rel`).
    `fp8_attention`: the attention kernels run in FP8 (an FP8 KV cache). Otherwise they run at the 16-bit
    tensor rate whatever the weights' GEMMs do: FP8 weights make the projections and MLP FP8 GEMMs (W8A8),
    but attention multiplies queries with the cached K and V, which stay 16-bit unless the cache is FP8;
    FlashAttention-3 runs FP8 attention on FP8 inputs only (Shah et al. 2024, arXiv 2407.08608, sec. 3.3)
    and vLLM / SGLang choose it with `--kv-cache-dtype fp8`. On Hopper / Ada / Blackwell that is half the
    FP8 rate; a 32k-token prompt of a 14B model spends ~30 % of its prefill FLOPs in attention.
    TensorRT-LLM follows the same rule by default (read in NVIDIA/TensorRT-LLM, undated snapshots of the 1.x tree,
    so for the 1.2.0 of the MKTRTLAT rows): its prompt (context) attention runs FP8 exactly when the KV cache is
    FP8 and the weights' GEMMs are FP8 or NVFP4. TensorRT backend: `trtllm-bench build -q FP8` (or NVFP4) sets
    `plugin_config.use_fp8_context_fmha = True` and an FP8 KV cache (tensorrt_llm/bench/build/build.py @ 7eb710f),
    and tensorrt_llm/builder.py `build` keeps it only for the FP8 / W4A8-AWQ / NVFP4 quantisation workflows on
    SM >= 89, turns it off without an FP8 cache and on with an FP8 cache under paged context FMHA. PyTorch backend:
    the attention op sets `mFP8ContextFMHA = is_fp8_out || is_fp4_out || (hasFp8KvCache && use_paged_context_fmha)`
    (cpp/tensorrt_llm/thop/attentionOp.cpp) and `TrtllmAttention.get_quantize_output_dtype`
    (tensorrt_llm/_torch/attention_backend/trtllm.py) asks for FP8 output only when o_proj is FP8/NVFP4-quantised
    and the cache is FP8. So `fp8_attention = r.kv_bytes_per_element <= 1.0` (`_pass`) holds for TensorRT-LLM's FP8
    and NVFP4 checkpoints too; an FP8 cache under 16-bit or weight-only GEMMs keeps the 16-bit rate here (`dtype`
    fp16), as the TensorRT backend does (the PyTorch backend there differs by snapshot: an early trtllm.py raises
    for paged context FMHA on an FP8 cache without FP8 weights, later ones run FP8 context FMHA: not priced).
    `block_fp8_eff`: the ceiling on the FP8 GEMMs' fraction of peak where the engine runs a block-scaled FP8
    checkpoint through its early kernels; `moe_compute_rel`: the prefill rate of the routed experts' fused-MoE
    GEMMs (`cost.expert_flops`) relative to the dense GEMMs' (both `prefill_gemm_rates`). `peer_allreduce`:
    whether the tensor-parallel all-reduce is the engine's own peer-to-peer kernel
    (`interconnects.allreduce_time_s`); None: the engines of efficiency.PEER_ALLREDUCE_ENGINES on NVIDIA NVLink.
    `prefill_host_layer_s`: the host's time per layer of an eager prefill pass, run ahead of the GPU and
    overlapped with it as HOST_LAUNCH_OVERLAPPED's host time is (`vllm_v0_prefill_host_layer_s`); prefill only.
    `engine_version`: the release, for the GEMM dtype (`gemm_dtype_on`). `attn_eff_rel`: the attention kernels'
    rate relative to the GEMMs' (`vllm_rocm_prefix_attention_rel`); prefill only. `gemm_duty`: the share of the
    board's sustained power the load's tensor work asks for (`serving.board_power_duty`; 1, a sustained load, by
    default): below 1 the board-power bound of `peak_tflops` does not apply."""
    mclass = gpu_memory_class(gpu)
    fraction = bandwidth_efficiency(gpu, engine)
    matvec_rel = 1.0  # the weights' mat-vecs relative to `fraction`
    if decode and hip_dmmv_f16(gpu, engine, precision.name, engine_version):
        # F16 mat-vecs on half-empty wavefronts in HIP builds before late 2024 (`hip_dmmv_f16_fraction`); the KV
        # cache's reads run in other kernels (rocBLAS batched GEMMs without flash attention) and keep `fraction`
        matvec_rel = min(1.0, (hip_dmmv_f16_fraction(gpu) or fraction) / fraction)
    if not decode and mclass == "hbm" and engine.startswith("llama.cpp"):
        # prefill GEMMs launch full grids: not llama.cpp's batch-1 mat-vec shortfall on HBM
        fraction = max(fraction, eff.LLAMA_CPP_PREFILL_GEMM_BW_EFF_HBM)
    bw = gpu.memory_bandwidth_gb_s * 1e9 * fraction
    fam = precision.family
    w_bw = bw * format_efficiency(engine, fam, gpu) * matvec_rel
    moe_rel = moe_expert_bw_rel(engine, gpu)
    plain = cost.plain_weight_bytes
    # routed experts at the fused-MoE rate, 16-bit parts of a mixed-width checkpoint at the plain rate
    # vLLM's dense 16-bit linear layers through hipBLASLt on AMD CDNA 3 where its skinny kernels do not take them
    linear_rel = vllm_rocm_hipblaslt_matvec(gpu, engine, precision, engine_version, tokens_in_pass) if decode else 1.0
    weights_s = ((cost.weight_bytes - plain - cost.expert_bytes) / (w_bw * linear_rel)
                 + cost.expert_bytes / (w_bw * moe_rel)
                 + plain / (bw * matvec_rel)) / tp
    # bitsandbytes writes its 16-bit copy in a de-quantise kernel of its own before the GEMM reads it:
    # memory-bound, not hidden under the GEMM's arithmetic (NF4 prefill at batch 1 takes 141 ms
    # against fp16's 99 ms, OPTGPTQ-0034 / -0031: ~52 GB of copy traffic; efficiency.DEQUANT_COPY_BW_EFF)
    copy_eff = eff.DEQUANT_COPY_BW_EFF_BY_ENGINE.get(engine, eff.DEQUANT_COPY_BW_EFF)
    if engine == "llama.cpp-2024":
        # its to_fp16 kernels (`llama_cpp_cublas_dequant`) stream as its mat-vecs do: the engine's own figure
        copy_eff = bandwidth_efficiency(gpu, engine)
    other_s = cost.other_bytes / (gpu.memory_bandwidth_gb_s * 1e9 * copy_eff) / tp
    attn_mem_s = (cost.kv_bytes + cost.spill_bytes) / bw / tp
    memory_s = weights_s + other_s + attn_mem_s
    dtype = gemm_dtype_on(gpu, precision, engine, engine_version)
    peak = peak_tflops(gpu, dtype, engine, gemm_duty)
    hip_bf16_fallback = bool(precision.name == "bf16" and hip_without_bf16(gpu, engine) and gpu.fp32_tflops)
    if hip_bf16_fallback:
        peak = gpu.fp32_tflops  # rocBLAS converts BF16 to FP32 where the GPU has no BF16 instructions
    geforce = gpu.hardware_class == "geforce"
    fp16_acc = engine in eff.FP16_ACCUMULATE_4BIT and fam != "f16" and geforce
    if peak and fp16_acc:
        peak *= 2.0  # their 4-bit prefill GEMMs accumulate in FP16 (efficiency.FP16_ACCUMULATE_4BIT), 2x on GeForce
    # GEMMs accumulating in FP32 at GeForce's half tensor rate (efficiency.GEFORCE_HALF_RATE_GEMM_EFF)
    half_rate = geforce and not fp16_acc and dtype == "fp16" and (
        engine in eff.GEFORCE_HALF_RATE_ENGINES or (engine in eff.GEFORCE_HALF_RATE_SERVING_ENGINES and fam == "f16"))
    compute_s: Num = 0.0
    attn_compute_s: Num = 0.0
    if peak:
        ce = eff.COMPUTE_EFF[engine][mclass] * gemm_rate_rel(gpu)
        if half_rate:
            ce = max(ce, eff.GEFORCE_HALF_RATE_GEMM_EFF)
        elif (fam != "f16" and dtype == "fp16" and engine not in eff.DEQUANT_TO_FP16_GEMM_ENGINES
              and (fp16_acc or engine not in eff.FUSED_W4A16_FULL_RATE_ENGINES)):
            quant_eff = eff.QUANT_PREFILL_EFF_BY_ENGINE.get(engine, eff.QUANT_PREFILL_EFF)
            if engine == "llama.cpp" and mclass == "hbm" and gpu.vendor == "NVIDIA":
                quant_eff = eff.LLAMA_CPP_MMQ_PREFILL_EFF_HBM  # current builds' MMQ on HBM cards (see there)
            if not decode and hip_mfma_mmq(gpu, engine, engine_version):
                quant_eff = eff.HIP_MFMA_MMQ_PREFILL_EFF  # matrix-core MMQ on CDNA (see there)
            # cuBLAS on the de-quantised copy runs at the FP16 rate (`llama_cpp_cublas_dequant`)
            cublas = False if decode else llama_cpp_cublas_dequant(gpu, engine, fam, tokens_in_pass)
            ce = ce * vec.where(cublas, 1.0, quant_eff)
        if not decode and fam != "f16" and hip_dp4a_mmq(gpu, engine):
            # llama.cpp HIP's MMQ on integer dot products, not matrix cores (efficiency.HIP_DP4A_MMQ_EFF)
            ce = hip_dp4a_mmq_eff(fam) * (gpu.int8_tops_dense or peak) / peak
        attn_ce = ce
        if hip_bf16_fallback and not decode:
            # rocBLAS's untuned BF16 kernels (`hip_without_bf16`); attention reads the F16 KV cache: F16 GEMMs
            attn_ce, ce = ce, eff.HIP_BF16_FALLBACK_GEMM_EFF
        # attention on a 16-bit KV cache runs at the 16-bit rate even when the weights' GEMMs are FP8
        # (W4A4 FP4 GEMMs: attention runs FP8 on an FP8 KV cache, else 16-bit; calibration.md cited at FP4_GEMM_ENGINES)
        if dtype == "fp4":
            attn_peak = peak_tflops(gpu, "fp8" if fp8_attention else "fp16", engine, gemm_duty) or peak
        elif hip_bf16_fallback and not decode:
            attn_peak = peak_tflops(gpu, "fp16", engine, gemm_duty) or peak
        elif dtype == "int8":  # W8A8 int8: attention reads a 16-bit KV cache in 16-bit kernels
            attn_peak = peak_tflops(gpu, "fp16", engine, gemm_duty) or peak
            if gpu.hardware_class == "geforce" and engine in eff.GEFORCE_HALF_RATE_SERVING_ENGINES:
                attn_ce = max(attn_ce, eff.GEFORCE_HALF_RATE_GEMM_EFF)
        else:
            attn_peak = peak if (dtype != "fp8" or fp8_attention) else (
                peak_tflops(gpu, "fp16", engine, gemm_duty) or peak)
        attn_compute_s = cost.attn_flops / (attn_ce * attn_peak * (1.0 if decode else attn_eff_rel) * 1e12) / tp
        # MoE prefill (`prefill_gemm_rates`): block-scaled FP8 GEMMs of the engine's early kernels, routed experts
        # in its fused-MoE kernel
        gemm_ce = ce if block_fp8_eff is None or dtype != "fp8" else min(ce, block_fp8_eff)
        expert_ce = gemm_ce if decode else gemm_ce * moe_compute_rel
        compute_s = ((cost.flops - cost.attn_flops - cost.expert_flops) / (gemm_ce * peak * 1e12)
                     + cost.expert_flops / (expert_ce * peak * 1e12)) / tp + attn_compute_s
    if decode:
        compute_s = compute_s + matvec_dequant_s(cost, gpu, engine, fam, tokens_in_pass) / tp
    layer_s: Num = layers * (layer_overhead_s(engine, gpu) + extra_layer_s)
    if engine == "transformers" and fam in ("gpu4", "q8"):
        # eager PyTorch calls a quantised linear (AutoGPTQ / bitsandbytes) through Python wrappers and
        # several kernels each: a fixed cost per linear, 7 per layer (q, k, v, o, gate, up, down)
        # (bitsandbytes' 4-bit linears more than the GPTQ kernels': efficiency.BNB4_LINEAR_S)
        per_linear = eff.BNB4_LINEAR_S if precision.name.startswith("nf4") else eff.TRANSFORMERS_QUANT_LINEAR_S
        layer_s = layer_s + layers * 7 * per_linear
    step_s = eff.STEP_OVERHEAD_S[engine] + tokens_in_pass * seq_step_s if decode else 0.0
    host_s: Num = 0.0
    overlapped = engine in eff.HOST_LAUNCH_OVERLAPPED
    if overlapped:
        host_s, overhead_s = layer_s, step_s  # runs ahead of the GPU; only what the GPU does not cover shows
    else:
        overhead_s = layer_s + step_s
    if not decode and prefill_host_layer_s > 0:
        overlapped = True  # vLLM V0's eager prefill at TP > 1 (`vllm_v0_prefill_host_layer_s`)
        host_s = host_s + layers * prefill_host_layer_s
    if not decode:
        overhead_s = overhead_s + (tokens_in_pass * layers * eff.PREFILL_TOKEN_LAYER_S[engine] * hidden
                                   / eff.PREFILL_REF_HIDDEN / tp)
    comm_s: Num = 0.0
    if link is not None and tp > 1:
        from mlrig.catalog.interconnects import allreduce_time_s, nccl_ring_allreduce_time_s, pcie_allreduce_time_s

        p2p = (engine in eff.PEER_ALLREDUCE_ENGINES and link.kind == "nvlink" and gpu.vendor == "NVIDIA"
               if peer_allreduce is None else peer_allreduce)
        if link.kind == "pcie" and engine in eff.PCIE_NCCL_RING_ENGINES:  # one NCCL call per all-reduce
            comm_s = 2 * layers * nccl_ring_allreduce_time_s(2.0 * hidden * tokens_in_pass, tp, link,
                                                             eff.NCCL_PCIE_RING_PROTOCOLS)
        elif link.kind == "pcie":  # staged through host memory, NCCL's protocol by size (efficiency.py)
            comm_s = 2 * layers * pcie_allreduce_time_s(2.0 * hidden * tokens_in_pass, tp, link,
                                                        eff.PCIE_ALLREDUCE_PROTOCOLS,
                                                        eff.NCCL_PCIE_P2P_BANDWIDTH_FRACTIONS)
        elif link.kind == "nvlink" and not p2p and engine in eff.NVLINK_NCCL_RING_ENGINES:
            # one ncclAllReduce per call: the ring's latency and barrier as below, the message at the bandwidth of
            # the protocol NCCL picks for its size (efficiency.NCCL_NVLINK_RING_PROTOCOLS)
            from mlrig.catalog.interconnects import nccl_ring_allreduce_excess_s

            comm_s = 2 * layers * (2 * (tp - 1) * link.latency_us * 1e-6 + eff.ALLREDUCE_SYNC_S["nvlink"]
                                   + nccl_ring_allreduce_excess_s(2.0 * hidden * tokens_in_pass, tp, link,
                                                                  eff.NCCL_NVLINK_RING_PROTOCOLS))
        else:
            message = 2.0 * hidden * tokens_in_pass
            sync_s: Num = eff.ALLREDUCE_SYNC_S.get(link.kind, eff.ALLREDUCE_SYNC_S["pcie"])
            if p2p and link.kind == "nvlink" and engine in eff.ONE_SHOT_ALLREDUCE_ENGINES:
                # TensorRT-LLM's one-shot kernel (engines.trtllm_one_shot_allreduce): its one flag barrier is the
                # first of allreduce_time_s's two hops, the peers' reads the second; no hand-shake beyond them
                sync_s = vec.where(trtllm_one_shot_allreduce(message, tp), 0.0, sync_s)
            elif p2p and decode and link.kind == "nvlink" and gpu.vendor == "NVIDIA":
                # vLLM's one-shot kernel: its two barriers are the two hops priced above (`vllm_one_shot_allreduce`)
                one_shot = vllm_one_shot_allreduce(engine, tp, message, engine_version)
                sync_s = vec.where(one_shot, 0.0, sync_s)
            comm_s = 2 * layers * (allreduce_time_s(message, tp, link, peer_to_peer=p2p) + sync_s)
    if link is not None and serial_gpus > 1:
        from mlrig.catalog.interconnects import p2p_time_s

        comm_s = comm_s + (serial_gpus - 1) * p2p_time_s(2.0 * hidden * tokens_in_pass, link)
        if engine.startswith("llama.cpp"):
            # the backend scheduler's copy + synchronise at each GPU boundary (efficiency.LLAMA_CPP_SPLIT_BOUNDARY_S)
            comm_s = comm_s + (serial_gpus - 1) * llama_cpp_split_boundary_s(gpu)
    # The roofline holds per kernel, and a pass runs its kernels one after another: the GEMMs (weights
    # streamed, 2 x params FLOPs per token) and the attention kernels (the KV cache read or written,
    # QK^T / AV FLOPs) each take the max of their own compute and memory times, and the two add.
    # A decode step of many sequences has compute-bound GEMMs but memory-bound attention; one max over
    # the pass's totals would let the GEMMs' arithmetic hide the KV reads, which no kernel does
    # (Williams et al. 2009 bound each kernel; vLLM's and FlashInfer's decode attention are kernels
    # of their own, launched between the projections). Where both parts sit on the same side (batch-1
    # decode: both memory-bound; a long prefill: both compute-bound) this is the single max again.
    # Within a group, compute and memory overlap only partly near the ridge: a smooth max
    # (`_soft_max`, efficiency.ROOFLINE_SMOOTHING_P), equal to the max where one side dominates.
    core = _soft_max(compute_s - attn_compute_s, weights_s) + other_s + _soft_max(attn_compute_s, attn_mem_s)
    bound = vec.where(comm_s > core, "interconnect", vec.where(compute_s >= memory_s, "compute", "memory-bandwidth"))
    gpu_s = core + overhead_s
    if overlapped:
        # the host's launches run ahead of the GPU (efficiency.HOST_LAUNCH_OVERLAPPED): about the longer of
        # the two shows, a p-norm of them
        both = _p_norm(gpu_s, host_s, eff.HOST_OVERLAP_P)
        bound = vec.where(host_s > gpu_s, "host", bound)  # results.Performance.bound: the host's launches
        overhead_s = overhead_s + both - gpu_s
        gpu_s = both
    return PassTime(gpu_s + comm_s, compute_s, memory_s, overhead_s, comm_s, bound, peak is not None)


def vllm_one_shot_allreduce(engine: str, tp: int, message_bytes: Num, version: str | None = None) -> Num:
    """Whether vLLM's tensor-parallel all-reduce of `message_bytes` (a decode step's hidden states, 16-bit) runs
    its custom kernel's one-shot form, whose cost is the two peer-to-peer hops of `interconnects.allreduce_time_s`
    alone (efficiency.VLLM_ONE_SHOT_ALLREDUCE_MAX_BYTES, read in vLLM's csrc/custom_all_reduce.cuh).

    `CustomAllreduce::allreduce` (its `REDUCE_CASE`) runs `cross_device_reduce_1stage` at 2 ranks whatever the
    size, and on fully NVLink-connected GPUs below 512 KiB at up to 4 ranks and below 256 KiB at up to 8; above
    that `cross_device_reduce_2stage` (reduce-scatter, a barrier, all-gather). The one-shot kernel is one launch
    inside the step's CUDA graph: `barrier_at_start` (each rank writes a flag into every peer's signal buffer and
    spins on its own), every thread loads its 16-byte packet from each rank's registered buffer over NVLink and
    reduces it, `barrier_at_end`. Its synchronisation is those two one-way flag exchanges, which are the two hops
    (2 x `Interconnect.latency_us`) `allreduce_time_s(peer_to_peer=True)` already prices; the further
    efficiency.ALLREDUCE_SYNC_S (10 us on NVLink, read off NCCL- and PyTorch-kernel rows: LMDeploy's TurboMind,
    gpt-fast's intra-node comm) is not paid. Above the custom kernel's buffer (`max_size`, 8 MiB,
    vllm/distributed/device_communicators/custom_all_reduce.py `should_custom_ar`) vLLM calls NCCL: False.
    Engines other than vLLM: False. SGLang runs a copy of the kernel (its custom_all_reduce.py: "Adapted from vLLM
    v0.6.4.post1", the same `should_custom_ar`), but its one fit source on NVLink disagrees (branch s38b-allreduce):
    with this rule INFXR1H200-* (SGLang 0.5.7, DeepSeek-R1 FP8 on 8 H200) went at 4 users from -11 / -12 % to
    -22 / -22 % TPOT (-0006, -0009) and +15 / +17 % to +31 / +32 % throughput (-0004, -0007), the 32-64-user rows
    unmoved; so SGLang keeps the barrier figure (held out, not choosing: DATACRUNCH-* TP 4 TPOT +15 % -> +5 %,
    BENHAMMB200-* TP 8 -6 % -> -27 %). SGLang's scheduler broadcasts each iteration's new requests to the TP ranks
    (`broadcast_pyobj` in recv_requests), a per-step cost like V0's below that may be what the figure stands for.

    V1 engine only (`engines.vllm_v1`, `version`; the current release when none is given). V0 (< 0.8, or a
    "+v0" label) runs the same kernel, but its driver worker broadcasts every step's inputs to the other
    tensor-parallel workers (vllm/worker/worker_base.py, `LocalOrDistributedWorkerBase.
    _get_driver_input_and_broadcast`: `broadcast_tensor_dict(broadcast_data, src=0)` every step, read at 0.6.x), a
    per-step cost of tensor parallelism that no term prices apart and that the barrier figure has stood for on V0's
    fit rows: without it AccelMark's vLLM 0.7.3 Llama-3-70B at TP 8 (ACCELMARK-0087 / -0098 / -0109 / -0111, one
    user to 1 req/s) go from -3 / -6 / -12 / -28 % to -11 / -15 / -25 / -39 % TPOT and dstack's 0.6.3 405B at TP 8
    (DSTACKCMP-0001..-0004, -0011) from +13..+66 % to +23..+74 % throughput.
    V1 hands each step's scheduler output to every worker through a shared-memory queue
    (vllm/v1/executor/multiproc_executor.py `rpc_broadcast_mq`), each worker preparing its own inputs.

    Size of the change: an all-reduce of a decode step on 2 H100 SXM (NVLink 4, 5 us per hop) 20 -> 10 us; NCCL's
    NVLS all-reduce of small messages on 2 H100s measures ~6 us (NVIDIA/nccl issue #1259, nccl-tests under CUDA
    graphs, 2024-04-22). Fit rows: WAYNETRT-* vLLM on H100 SXM at TP 2 (Llama-3.1-8B bf16 / FP8, Qwen3-8B bf16 /
    FP8: 64 / 72 all-reduces per step) and TP 4 (Qwen2.5-32B, 128), whose TPOT at 1-128 users came out
    +13..+58 % slow, TP 1 +10..+20 %: at TP 2 the 1.3 ms of all-reduces per step was most of the excess over TP 1."""
    if engine != "vllm" or tp not in (2, 4, 6, 8) or not vllm_v1(version):  # the kernel's world sizes; V1 only
        return False
    limit: float = eff.VLLM_CUSTOM_ALLREDUCE_MAX_BYTES
    if tp > 2:
        limit = min(limit, eff.VLLM_ONE_SHOT_ALLREDUCE_MAX_BYTES[4 if tp <= 4 else 8])
    return vec.where(message_bytes < limit, True, False)


# ---- public API ------------------------------------------------------------------------------------
class ServingPoint(BaseModel):
    model_config = ConfigDict(defer_build=True)  # serving sweeps only: `mlrig plan` never builds it

    concurrency: int
    throughput_tok_s: float  # generated tokens/s, all sequences
    tok_s_per_user: float
    tpot_ms: float
    ttft_ms: float
    bound: str
    fits: bool  # KV cache holds this many sequences at the plan's context


@dataclass(frozen=True)
class _Setup:
    """How the plan's GPUs share a pass: tensor-parallel ranks, or GPUs a pass visits in turn."""

    engine: str
    tp: int
    serial: int
    link: Interconnect | None
    seq_step_s: float = 0.0
    peer_allreduce: bool | None = None  # the engine's own all-reduce kernel (None: `pass_time`'s NVIDIA rule)


def host_seq_step_s(engine: str, version: str | None, scheduler_steps: int | None = None) -> float:
    """Host time per running sequence per decode step left exposed (efficiency.SEQ_STEP_OVERHEAD_S).
    vLLM from 0.14 schedules step N+1 while step N runs on the GPU (async scheduling on by default,
    vllm-project/vllm PR #27614; engines.VLLM_ASYNC_SCHEDULING_FROM, read in the 0.13.0 / 0.14.0 wheels), hiding
    this host time (so does the current release assumed when none is given). The boundary here stays at 0.12, a
    measured one: 0.12 and 0.13 still schedule synchronously, yet AZIR5070TI's vLLM 0.13 TPOT rows (fit, RTX 5070
    Ti, 1-64 users) leave no per-sequence time above the GPU's step (with VLLM_V1_SEQ_STEP_OVERHEAD_S their TPOT at
    32-64 users goes from -5..+18 % to +13..+39 %, their throughput from -14..+7 % to -27..-7 %); which change of
    0.12 hides it is not established. Earlier releases serialise it.
    `scheduler_steps` (vLLM --num-scheduler-steps, 0.6.0 to 0.10.0: `engines.vllm_multi_step`): multi-step
    scheduling "performs scheduling and input preparation once and runs the model for n consecutive steps",
    spreading that part of the host time over the n steps (vLLM blog, 2024-09-05, "vLLM v0.6.0: 2.7x Throughput
    Improvement and 5x Latency Reduction": +28 % throughput for Llama 70B on 4 x H100; its benchmarks ran
    `--num-scheduler-steps 10`); each step's outputs are still brought back and processed per step, so
    efficiency.VLLM_MULTI_STEP_AMORTISED_SHARE of it is divided by n and the rest stays. Multi-step is V0's:
    from 0.8 asking for it runs V0 (vllm/engine/arg_utils.py `_is_v1_supported_oracle`, 0.8.0:
    `--num-scheduler-steps` falls back). vLLM's V1 engine (0.8 to 0.11) leaves less per sequence than V0
    (efficiency.VLLM_V1_SEQ_STEP_OVERHEAD_S)."""
    if engine == "vllm" and not before(version, (0, 12)):
        return 0.0
    if engine == "lmdeploy":
        # LMDeploy's PyTorch engine before v0.6 handles each sequence in Python every step
        # (efficiency.LMDEPLOY_PYTORCH_OLD_SEQ_STEP_S); TurboMind and the refactored engine: none priced
        from mlrig.estimators.engines import LMDEPLOY_PYTORCH_GRAPHS_FROM, lmdeploy_pytorch_engine, series_before

        old_torch = lmdeploy_pytorch_engine(engine, version) and series_before(version, LMDEPLOY_PYTORCH_GRAPHS_FROM)
        return eff.LMDEPLOY_PYTORCH_OLD_SEQ_STEP_S if old_torch else 0.0
    per_seq = eff.SEQ_STEP_OVERHEAD_S.get(engine, 0.0)
    if engine == "vllm" and scheduler_steps and scheduler_steps > 1 and vllm_multi_step(version):
        share = eff.VLLM_MULTI_STEP_AMORTISED_SHARE  # the scheduling / input part; output processing stays per step
        return per_seq * (1.0 - share) + per_seq * share / scheduler_steps
    if engine == "vllm" and vllm_v1(version):
        return eff.VLLM_V1_SEQ_STEP_OVERHEAD_S
    return per_seq


def _setup(r: ResolvedPlan) -> _Setup:
    engine = r.engine
    if engine is None:
        raise MlrigError("inference speed needs an inference plan (workload.task = inference)")
    hw = r.hardware
    tp = hw.tensor_parallel
    serial = 1
    if tp == 1 and hw.count > 1 and engine.startswith("llama.cpp"):
        serial = hw.count  # llama.cpp --split-mode layer (default)
    elif hw.pipeline_parallel > 1:
        serial = hw.pipeline_parallel
    link = r.link if tp > 1 or serial > 1 else None
    seq_step_s = host_seq_step_s(engine, r.workload.engine_version, r.workload.num_scheduler_steps)
    named = (r.workload.engine or "").strip().lower().replace(" ", "").replace("_", "-")
    if named == "ollama":
        seq_step_s += eff.OLLAMA_SEQ_STEP_S  # Ollama's Go runner: graph building and CPU sampling per token
    elif named in MLX_SERVER_ENGINES:
        seq_step_s += eff.MLX_SERVER_SEQ_STEP_S  # vllm-mlx / Rapid-MLX: the serving engine's loop per token
    peer = None
    if link is not None and link.kind == "xgmi":
        # vLLM's and SGLang's own kernels run over Infinity Fabric from the releases named (PEER_ALLREDUCE_ENGINES)
        peer = ((engine == "vllm" and vllm_custom_allreduce_on_amd(r.workload.engine_version))
                or (engine == "sglang" and sglang_custom_allreduce_on_amd(r.workload.engine_version)))
    elif link is not None and engine == "trt-llm" and link.kind == "nvlink" and r.gpu.vendor == "NVIDIA":
        peer = trtllm_custom_allreduce(r.workload.engine_version)
    return _Setup(engine, tp, serial, link, seq_step_s, peer)


def offload_fraction(fits: Num, cpu_share: float, per_gpu_gib: Num, capacity_gib: float, weights_gib: Num) -> Num:
    """Fraction of weights run from host memory: what -ngl leaves on the CPU, else what does not fit
    in VRAM (spilled as llama.cpp users do by lowering -ngl); 0 when it fits. From the reported
    (rounded) GiB figures, as `mlrig plan` shows them."""
    if cpu_share > 0:
        return cpu_share
    over = (per_gpu_gib - capacity_gib) / vec.where(weights_gib > 0, weights_gib, 1.0)
    spilled = vec.minimum(1.0, vec.maximum(0.0, over))
    return vec.where(fits, 0.0, vec.where(weights_gib > 0, spilled, 0.0))


def offload_of(memory: Any) -> float:
    """`offload_fraction` of a memory estimate; 0 when there is none."""
    if memory is None:
        return 0.0
    if getattr(memory, "offload_fraction", 0.0) > 0:
        return float(memory.offload_fraction)
    if getattr(memory, "fits", True):
        return 0.0
    b = memory.breakdown
    return float(offload_fraction(False, 0.0, b.per_gpu_gib, b.gpu_capacity_gib, b.weights_gib))


def eager_attention_layer_s(r: ResolvedPlan, engine: str) -> float:
    """Host time per layer of an unfused attention (`flash_attention` false) in an eager engine:
    efficiency.EAGER_ATTENTION_LAYER_S, 0 elsewhere."""
    return 0.0 if r.workload.flash_attention else eff.EAGER_ATTENTION_LAYER_S.get(engine, 0.0)


def eager_kernels_per_layer(r: ResolvedPlan) -> int:
    """Kernels a serving engine launches per decode layer without graphs (efficiency.EAGER_KERNELS_PER_LAYER, counted
    in vLLM's Llama model code): the layer's own, the two tensor-parallel all-reduces, FP8 W8A8's input
    quantisations."""
    n = eff.EAGER_KERNELS_PER_LAYER
    if r.hardware.tensor_parallel > 1:
        n += eff.EAGER_TP_KERNELS_PER_LAYER
    if r.precision.name == "fp8":
        n += eff.EAGER_FP8_QUANT_KERNELS_PER_LAYER
    return n


def eager_decode_layer_s(r: ResolvedPlan, engine: str, batch: Num, context: Num) -> Num:
    """Host launch time per layer a decode step adds when it runs without CUDA / HIP graphs
    (`engines.decode_runs_eager`: `workload.cuda_graphs` false, or a step vLLM's or SGLang's capture does not cover:
    SGLang decodes a batch above its largest captured one eagerly, `engines.sglang_cuda_graph_max_bs`):
    `eager_kernels_per_layer` x efficiency.EAGER_HOST_S_PER_KERNEL for vLLM / SGLang / TGI on NVIDIA and AMD GPUs.
    llama.cpp without its CUDA graphs (NVIDIA; `cuda_graphs` false, GGML_CUDA_DISABLE_GRAPHS=1, or a GPU below compute
    capability 8.0, whose graphs the build turns off: `engines.llama_cpp_graphs_on_gpu`) launches each
    kernel as its builds before the graphs did: the per-layer time of "llama.cpp-2024" beyond the graph one's
    (efficiency.LAYER_OVERHEAD_S). 0 elsewhere (Intel GPUs: vLLM's and SGLang's XPU builds of the calibration rows
    capture no graphs either way, and their figures were fitted so)."""
    from mlrig.estimators.engines import decode_runs_eager, sglang_cuda_graph_max_bs

    w = r.workload
    if r.gpu.vendor not in ("NVIDIA", "AMD"):
        return 0.0
    if engine == "llama.cpp":
        from mlrig.estimators.engines import llama_cpp_graphs_on_gpu

        graphs = w.cuda_graphs and llama_cpp_graphs_on_gpu(r.gpu, w.engine_version)
        if graphs or r.gpu.vendor != "NVIDIA":
            return 0.0
        return eff.LAYER_OVERHEAD_S["llama.cpp-2024"] - eff.LAYER_OVERHEAD_S["llama.cpp"]
    if engine == "lmdeploy":
        # LMDeploy's PyTorch engine decodes kernel by kernel before v0.6.0 or with eager_mode
        # (engines.lmdeploy_pytorch_decode_eager): the same per-kernel launch time as vLLM's eager steps
        from mlrig.estimators.engines import lmdeploy_pytorch_decode_eager

        if not lmdeploy_pytorch_decode_eager(w.engine, w.engine_version, w.cuda_graphs):
            return 0.0
        return eager_kernels_per_layer(r) * eff.EAGER_HOST_S_PER_KERNEL
    graph_max_bs = None
    if engine == "sglang":
        graph_max_bs = sglang_cuda_graph_max_bs(r.gpu.memory_gib, r.hardware.tensor_parallel, w.engine_version)
    off = decode_runs_eager(engine, w.engine_version, w.cuda_graphs, batch, context, graph_max_bs)
    if not vec.is_array(off) and not off:
        return 0.0
    return vec.where(off, eager_kernels_per_layer(r) * eff.EAGER_HOST_S_PER_KERNEL, 0.0)


def trtllm_eager_host_s(r: ResolvedPlan, engine: str) -> float:
    """Host time of a TensorRT-LLM PyTorch-backend decode step that no CUDA graph replays (`workload.cuda_graphs`
    false; releases from 1.0, `engines.trtllm_tensorrt_engine`), NVIDIA GPUs: layers x
    efficiency.TRTLLM_EAGER_HOST_LAYER_S, overlapped with the GPU's time by `decode_step` (p-norm
    efficiency.HOST_OVERLAP_P, as HF transformers' eager decode is). 0 elsewhere."""
    from mlrig.estimators.engines import trtllm_tensorrt_engine

    w = r.workload
    if engine != "trt-llm" or w.cuda_graphs or r.gpu.vendor != "NVIDIA" or trtllm_tensorrt_engine(w.engine_version):
        return 0.0
    return r.arch.num_layers * eff.TRTLLM_EAGER_HOST_LAYER_S


def early_block_fp8_mla_moe_layer_s(r: ResolvedPlan, engine: str) -> float:
    """Fixed time per layer (averaged over all layers) of a DeepSeek-V3-style model (MLA, MoE, block-scaled FP8)
    on the engines' early block-FP8 path (efficiency.BLOCK_FP8_EARLY_BEFORE) on NVIDIA / AMD GPUs: its MoE
    layers' many small kernels (efficiency.EARLY_BLOCK_FP8_MLA_MOE_LAYER_S); 0 elsewhere."""
    a = r.arch
    limit = eff.BLOCK_FP8_EARLY_BEFORE.get(engine)
    if (limit is None or r.gpu.vendor not in eff.FUSED_MOE_VENDORS or not (a.is_moe and a.is_mla)
            or not a.weight_block_size or r.precision.name != "fp8" or not before(r.workload.engine_version, limit)):
        return 0.0
    return eff.EARLY_BLOCK_FP8_MLA_MOE_LAYER_S * a.num_moe_layers / a.num_layers


def apple_gpu_cores(gpu: GPU) -> float:
    """GPU cores of an Apple chip: the catalog name's "<n>-core GPU" (Apple's own configuration names), else
    the FP32 rate over 128 FP32 ALUs x 2 FLOP x 1.4 GHz per core (the catalog's derivation of that rate,
    data/gpus.json notes, at a mid-range clock of the M1-M5 GPUs)."""
    m = re.search(r"(\d+)-core GPU", gpu.name)
    if m:
        return float(m.group(1))
    return max(1.0, round((gpu.fp32_tflops or 0.0) * 1e12 / (128 * 2 * 1.4e9)))


GEMMA_MODEL_TYPES = frozenset({"gemma", "gemma2", "gemma3", "gemma3_text"})


def mlx_layer_dispatches(arch: ModelArch) -> int:
    """Metal dispatches mlx-lm builds for one dense layer of one decode token (efficiency.py at
    MLX_REFERENCE_LAYER_DISPATCHES, counted from ml-explore/mlx-lm @ d78bf58): 17 for a Llama-shaped layer, the
    reference the fitted per-layer figures stand for; Gemma's layers more, because each of their RMSNorms is two ops
    (`1.0 + weight`, then `mx.fast.rms_norm`) and the GELU product one more than the compiled `swiglu`: Gemma 3 (4 norms
    and q/k norms) 28, Gemma 2 (4 norms, attention by hand for its logit softcap) 30, Gemma 20."""
    ref = eff.MLX_REFERENCE_LAYER_DISPATCHES
    if arch.model_type not in GEMMA_MODEL_TYPES:
        return ref
    norms = arch.norms_per_layer + (2 if arch.qk_norm else 0)
    dispatches = ref - 2 + 2 * norms + 1  # the reference's 2 one-op norms out, Gemma's two-op norms and GELU product in
    if arch.model_type == "gemma2":
        dispatches += 6  # gemma2.py: scale, matmul, / cap, tanh, * cap, softmax, matmul for sdpa's one kernel
    return dispatches


def llama_cpp_layer_nodes(arch: ModelArch) -> int:
    """ggml graph nodes (kernels, before any backend fuses them) llama.cpp builds for one dense layer of one decode
    token without flash attention (efficiency.py at LLAMA_CPP_REFERENCE_LAYER_NODES, counted from ggml-org/llama.cpp
    src/models/llama.cpp and gemma3.cpp): 22 for a Llama layer, the reference the fitted per-layer figures stand for;
    Gemma 3 31 (q/k norms, post-attention and post-feedforward norms, an rms_norm and a mul each, the scale of Q)."""
    ref = eff.LLAMA_CPP_REFERENCE_LAYER_NODES
    if arch.model_type in ("gemma3", "gemma3_text"):
        return ref + 4 * 2 + 1
    return ref


def layer_dispatch_s(r: ResolvedPlan, engine: str) -> float:
    """Per-layer time beyond the engine's fitted per-layer figure that a layer of more dispatches than the reference
    Llama layer takes, each dispatch costing what the figure's do: `layer_overhead_s` x (dispatches / reference - 1),
    MLX by `mlx_layer_dispatches`, llama.cpp's builds by `llama_cpp_layer_nodes`. 0 for other engines and for
    Llama-shaped layers."""
    if engine == "mlx":
        ratio = mlx_layer_dispatches(r.arch) / eff.MLX_REFERENCE_LAYER_DISPATCHES
    elif engine.startswith("llama.cpp"):
        ratio = llama_cpp_layer_nodes(r.arch) / eff.LLAMA_CPP_REFERENCE_LAYER_NODES
    else:
        return 0.0
    return layer_overhead_s(engine, r.gpu) * (ratio - 1.0)


def mlx_moe_layer_s(r: ResolvedPlan, engine: str) -> float:
    """Fixed time per layer (averaged over all layers) of a MoE model on MLX on an Apple GPU: the routing
    and gathered-expert kernels each MoE layer dispatches beside a dense layer's, each waiting for the one
    before it on every GPU core, efficiency.MLX_MOE_LAYER_S_PER_GPU_CORE x the chip's GPU cores
    (`apple_gpu_cores`), x `mlx_apple_dispatch_scale` (M5 generation: half); 0 for dense models and other
    engines."""
    a = r.arch
    if engine != "mlx" or r.gpu.vendor != "Apple" or not a.is_moe or not a.num_layers:
        return 0.0
    return (eff.MLX_MOE_LAYER_S_PER_GPU_CORE * apple_gpu_cores(r.gpu) * mlx_apple_dispatch_scale(r.gpu)
            * a.num_moe_layers / a.num_layers)


def _timed(cost: PassCost, r: ResolvedPlan, s: _Setup, tokens_in_pass: Num, decode: bool,
           sequences: Num | None = None) -> PassTime:
    """`pass_time` of `cost` with the plan's engine, precision, parallel split and link; an expert-parallel
    plan's busiest GPU and all-to-alls (`expert_parallel.expert_parallel_cost`; `sequences`: the pass's
    sequences, default one per token as in decode)."""
    rep = kv_read_replication(r.arch, s.tp)
    if rep != 1.0:
        cost = replace(cost, kv_bytes=cost.kv_bytes * rep)  # ranks holding copies each read their own
    if r.plan.hardware.expert_parallel > 1 and r.arch.is_moe:
        from mlrig.estimators.expert_parallel import expert_parallel_cost

        cost, a2a_s = expert_parallel_cost(r, cost, tokens_in_pass,
                                           tokens_in_pass if sequences is None else sequences)
        t = _pass(cost, r, s, tokens_in_pass, decode)
        bound = vec.where(a2a_s > t.seconds - t.comm_s, "interconnect", t.bound)
        return PassTime(t.seconds + a2a_s, t.compute_s, t.memory_s, t.overhead_s, t.comm_s + a2a_s, bound,
                        t.compute_known)
    return _pass(cost, r, s, tokens_in_pass, decode)


def _pass(cost: PassCost, r: ResolvedPlan, s: _Setup, tokens_in_pass: Num, decode: bool) -> PassTime:
    block_eff, moe_rel = prefill_gemm_rates(r, s.engine)
    return pass_time(cost, r.gpu, s.engine, r.precision, layers=r.arch.num_layers, tp=s.tp, link=s.link,
                     hidden=r.arch.hidden_size, tokens_in_pass=tokens_in_pass, decode=decode,
                     serial_gpus=s.serial, seq_step_s=s.seq_step_s, extra_layer_s=eager_attention_layer_s(r, s.engine)
                     + early_block_fp8_mla_moe_layer_s(r, s.engine) + mlx_moe_layer_s(r, s.engine)
                     + layer_dispatch_s(r, s.engine)
                     + hip_mmid_fallback_layer_s(r, s.engine, tokens_in_pass, decode) + hip_moe_layer_s(r, s.engine),
                     fp8_attention=r.kv_bytes_per_element <= 1.0, block_fp8_eff=block_eff, moe_compute_rel=moe_rel,
                     peer_allreduce=s.peer_allreduce,
                     prefill_host_layer_s=vllm_v0_prefill_host_layer_s(s.engine, r.workload.engine_version, s.tp,
                                                                       r.gpu.vendor)
                     + trtllm_prefill_host_layer_s(r, s.engine) + sglang_prefill_host_layer_s(r, s.engine),
                     engine_version=r.workload.engine_version,
                     attn_eff_rel=1.0 if decode else vllm_rocm_prefix_attention_rel(r, s.engine),
                     gemm_duty=r.gemm_duty)


def trtllm_stream_host_s(r: ResolvedPlan, engine: str, batch: Num) -> Num:
    """Host time per decode step that trtllm-serve's server process spends streaming the step's tokens: `batch` x
    efficiency.TRTLLM_STREAM_TOKEN_S (x efficiency.DESKTOP_HOST_SERIAL_REL on a GeForce / workstation host, as
    `serving.host_serial_rel`), for TensorRT-LLM from efficiency.TRTLLM_REQUEST_PATH_FROM (the LLM API executor that
    trtllm-serve runs on) under a served load (`load` concurrency or rate: clients of a server); 0 for static and
    offline runs (trtllm-bench in process, which streams nothing by default) and other engines. The worker sends
    each iteration's responses, one per running request, over one IPC message; the server's proxy thread hands them
    to their requests one by one (tensorrt_llm/executor/proxy.py `dispatch_result_task`: `process_res` per
    response), and each is detokenised and written as a server-sent event on the one asyncio loop of the OpenAI
    server (tensorrt_llm/serve/openai_server.py): serial Python work per streamed token, in a process of its own,
    so it overlaps the GPU's step (p-norm in `decode_step`) and sets TPOT only once the running batch is large."""
    w = r.workload
    if engine != "trt-llm" or w.load not in ("concurrency", "rate") or before(w.engine_version,
                                                                             eff.TRTLLM_REQUEST_PATH_FROM):
        return 0.0
    rel = eff.DESKTOP_HOST_SERIAL_REL if r.gpu.hardware_class in eff.DESKTOP_HOST_CLASSES else 1.0
    return batch * eff.TRTLLM_STREAM_TOKEN_S * rel


def vllm_stream_host_s(r: ResolvedPlan, engine: str, batch: Num) -> Num:
    """Host time per decode step that vLLM's front-end process spends on the step's outputs, for the releases whose
    per-sequence host time is no longer serialised with the step (from 0.12, `host_seq_step_s`; the current release
    when none is given): `batch` x efficiency.VLLM_STREAM_TOKEN_S_DESKTOP on a GeForce / workstation host,
    x efficiency.VLLM_STREAM_TOKEN_S_CLOUD_GDDR on a datacentre GDDR card's cloud host, 0 on HBM servers (see
    there: the host's speed, by the host class the GPU implies). The V1 engine core sends each step's outputs, one
    EngineCoreOutput per running request, to the front end (the API server, or `LLM`'s own process), whose output
    handler turns them into RequestOutputs one request after another (vllm/v1/engine/async_llm.py `output_handler` ->
    output_processor.py `OutputProcessor.process_outputs`: incremental detokenising, stop strings, the request's
    queue) and, when serving, writes each as a server-sent event: serial Python work per generated token in a
    process of its own, beside the engine's busy loop, so it overlaps the GPU's step (p-norm in `decode_step`) and
    sets TPOT only when the GPU's step is short (small models) or the running batch large. 0 for other engines and
    for releases before 0.12, where `host_seq_step_s` adds the per-sequence time to the step."""
    if engine != "vllm" or before(r.workload.engine_version, (0, 12)):
        return 0.0
    if r.gpu.hardware_class in eff.DESKTOP_HOST_CLASSES:
        return batch * eff.VLLM_STREAM_TOKEN_S_DESKTOP
    if r.gpu.hardware_class == "datacenter" and gpu_memory_class(r.gpu) == "gddr":
        return batch * eff.VLLM_STREAM_TOKEN_S_CLOUD_GDDR
    return 0.0


def trtllm_prefill_host_layer_s(r: ResolvedPlan, engine: str) -> float:
    """Host time per layer of a TensorRT-LLM PyTorch-backend pass that holds a prompt (NVIDIA GPUs; releases from
    1.0 or a run labelled "+pytorch", `engines.trtllm_tensorrt_engine`): efficiency.TRTLLM_EAGER_HOST_LAYER_S, the
    figure of an eager decode step (`trtllm_eager_host_s`), overlapped with the GPU's work by `pass_time`.

    The PyTorch backend replays a CUDA graph only for a batch with no context request:
    tensorrt_llm/_torch/pyexecutor/scheduler.py `ScheduledRequests.can_run_cuda_graph` is `not
    self.context_requests`, and the model engine's CUDA-graph runner (`maybe_get_cuda_graph`) declines any other
    batch (the sources read are undated snapshots of the 1.x tree; the newest adds graphs for some "promoted"
    final-context batches, `_can_run_cuda_graph_batch`, a later change of unknown release, not priced). So an
    iteration that prefills a prompt, or a chunk of one, runs the model's Python modules kernel by kernel, whatever
    `workload.cuda_graphs` says: its host time is the eager decode step's, run ahead of the GPU, and shows where the
    GPU's share is the smaller (short prompts, a few at a time). A TensorRT engine (before 1.0, or "+tensorrt")
    enqueues its context pass from C++: 0. No factor of its own. Rows it moves: AZIR5070TI's TTFT at 2-16 users
    (fit, 1.3.0rc15 on WSL2, ~60-token prompts with 59 cached: GPU work ~1 ms; measured 44-54 ms, -8..-35 % before,
    -26..-9 % now, with the front end read again, efficiency.API_FRONTEND_S); against: WAYNETRT's PyTorch-backend
    single-user rows (fit, 0.20 on a native H100 host) +28..+51 % (the per-layer figure is AZIR's host's)."""
    from mlrig.estimators.engines import trtllm_tensorrt_engine

    if engine != "trt-llm" or r.gpu.vendor != "NVIDIA" or trtllm_tensorrt_engine(r.workload.engine_version):
        return 0.0
    return eff.TRTLLM_EAGER_HOST_LAYER_S


def sglang_prefill_host_layer_s(r: ResolvedPlan, engine: str) -> float:
    """Host time per layer of an SGLang pass that holds a prompt (an *extend* pass) on NVIDIA and AMD GPUs:
    efficiency.SGLANG_EXTEND_HOST_LAYER_S, overlapped with the GPU's work by `pass_time` (p-norm
    efficiency.HOST_OVERLAP_P), as vLLM V0's eager prefill is (`vllm_v0_prefill_host_layer_s`).

    SGLang replays a captured CUDA graph only for decode, target-verify and idle batches: ModelRunner's
    `_forward_raw` runs the graph runner when `forward_batch.forward_mode.is_cuda_graph()` (DECODE / TARGET_VERIFY /
    IDLE, model_executor/forward_batch_info.py) and otherwise calls `forward_extend`, which runs `self.model.forward`
    module by module unless the piecewise CUDA-graph runner exists, and `--enable-piecewise-cuda-graph` is off by
    default (server_args.py `enable_piecewise_cuda_graph: bool = False`; read in the 0.5.5.post3 wheel,
    python/sglang/srt/model_executor/model_runner.py). The overlap scheduler (managers/scheduler.py
    `event_loop_overlap`) launches a batch from the scheduler's own thread and processes the previous batch's
    results after that launch, so the launch of an eager extend pass is not hidden behind other host work: the
    GPU runs its kernels as the host issues them. A long prompt hides it (the GPU's share is the larger); a small
    model's short prompts (a few ms of GPU work) show it. The extend pass is eager whether or not decode replays
    graphs (`workload.cuda_graphs`), so it is taken either way. 0 for other engines."""
    if engine != "sglang" or r.gpu.vendor not in ("NVIDIA", "AMD"):
        return 0.0
    return eff.SGLANG_EXTEND_HOST_LAYER_S


def vllm_rocm_prefix_attention_rel(r: ResolvedPlan, engine: str) -> float:
    """The prefill attention's rate relative to the GEMMs' where vLLM V0 on an AMD GPU runs every prompt through
    its Triton prefix-prefill kernel (efficiency.VLLM_ROCM_PREFIX_PREFILL_ATTN_REL), else 1.

    vLLM V0's ROCm attention backend (vllm/attention/backends/rocm_flash_attn.py `ROCmFlashAttentionImpl.forward`,
    read in the 0.6.3.post1 wheel) runs a prompt through its flash-attention kernel only while the prompt's block
    tables are empty; otherwise it calls `PagedAttention.forward_prefix`, the Triton kernel `context_attention_fwd`
    (vllm/attention/ops/prefix_prefill.py) that reads the earlier tokens from the paged KV cache. The metadata
    builder fills a prompt's block tables whenever chunked prefill is on (vllm/attention/backends/utils.py
    `CommonMetadataBuilder._add_seq_group`: `(chunked_prefill_enabled or not is_prompt) and block_tables is not
    None`), so under chunked prefill every prompt, chunked or not, goes through that kernel. vLLM stopped turning
    chunked prefill on by default on ROCm for that kernel (PR #11146, 0.6.5: "poor performance due to a suboptimal
    triton kernel"; engines.VLLM_V0_NO_ROCM_DEFAULT_FROM). Applied where the plan's prompts are chunked
    (`vllm_v0_chunks_prompts`: V0's long-context default before 0.6.5, or `enable_chunked_prefill`), in V0
    releases (`engines.vllm_v1` false), not to MLA models (their own attention backend)."""
    from mlrig.estimators.engines import vllm_v1

    if engine != "vllm" or r.gpu.vendor.lower() != "amd" or vllm_v1(r.workload.engine_version) or r.arch.is_mla:
        return 1.0
    if r.workload.task != "inference" or not vllm_v0_chunks_prompts(r):
        return 1.0
    return eff.VLLM_ROCM_PREFIX_PREFILL_ATTN_REL


def vllm_v0_chunks_prompts(r: ResolvedPlan) -> bool:
    """Whether a vLLM V0 plan runs with chunked prefill on, read as `serving.prefill_budget` reads V0's budget:
    `enable_chunked_prefill = false` never, a given max_num_batched_tokens always, else V0's own default by
    release and max_model_len (`engines.vllm_v0_default_budget`)."""
    from mlrig.estimators.engines import vllm_v0_default_budget

    w = r.workload
    if w.enable_chunked_prefill is False:
        return False
    if w.max_num_batched_tokens is not None:
        return True
    return vllm_v0_default_budget(r.plan, r.gpu, r.arch.max_position_embeddings, r.arch) is not None


def vllm_v0_prefill_host_layer_s(engine: str, version: str | None, tp: int, vendor: str = "NVIDIA") -> float:
    """Host time per layer of a vLLM V0 (< 0.8) prefill pass under tensor parallelism
    (efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S); 0 for V1, for one GPU and for other engines.

    V0 replays captured CUDA graphs for decode batches only: a step with a prompt in it runs eagerly
    (vllm/worker/model_runner.py, ModelRunner.execute_model: `if prefill_meta is None and decode_meta.use_cuda_graph`
    picks the graph runner, else the plain nn.Module), so each of the tp worker processes launches every kernel of
    every layer from Python. The rank-0 driver prepares the inputs and broadcasts them each step
    (`broadcast_tensor_dict`), and each layer's two all-reduces wait for all tp ranks, so the pass moves at the
    slowest of the tp hosts. Overlapped with the GPU's work (`pass_time`): hidden where the GPU's share is the
    larger (one GPU, long prompts), exposed where tensor parallelism leaves each GPU little work. `vendor`: the
    GPUs' vendor; upstream ROCm builds without vLLM's custom all-reduce on AMD (`engines.vllm_custom_allreduce_on_amd`
    false: each layer's two eager all-reduces through torch.distributed / RCCL) take their own figure
    (efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S_AMD); AMD's fork, which has the kernel, the NVIDIA one."""
    from mlrig.estimators.engines import vllm_custom_allreduce_on_amd, vllm_v1

    if engine != "vllm" or tp <= 1 or vllm_v1(version):
        return 0.0
    if vendor.lower() == "amd" and not vllm_custom_allreduce_on_amd(version):
        return eff.VLLM_V0_TP_PREFILL_HOST_LAYER_S_AMD
    return eff.VLLM_V0_TP_PREFILL_HOST_LAYER_S


def prefill_gemm_rates(r: ResolvedPlan, engine: str) -> tuple[float | None, float]:
    """(block_fp8_eff, moe_compute_rel) of `pass_time` for a plan: MoE-serving kernel paths of vLLM and SGLang
    on NVIDIA and AMD GPUs (efficiency.FUSED_MOE_VENDORS).
    - A checkpoint whose FP8 weights carry block scales (ModelArch.weight_block_size, DeepSeek-V3's 128 x 128)
      under a release before the engine's DeepGEMM default (efficiency.BLOCK_FP8_EARLY_BEFORE) runs its GEMMs
      at most at efficiency.BLOCK_FP8_GEMM_EFF of the FP8 peak (its experts at efficiency.BLOCK_FP8_EARLY_MOE_REL
      of that where the engine has a figure of its own).
    - The routed experts' grouped GEMMs of a prefill run at efficiency.MOE_EXPERT_COMPUTE_REL of the dense rate
      where they go through the Triton `fused_moe` kernel: 16-bit and 8-bit weights (efficiency.FUSED_MOE_FAMILIES).
    (None, 1.0) elsewhere."""
    if r.gpu.vendor not in eff.FUSED_MOE_VENDORS:
        return None, 1.0
    fused = r.arch.is_moe and r.precision.family in eff.FUSED_MOE_FAMILIES
    moe_rel = eff.MOE_EXPERT_COMPUTE_REL.get(engine, 1.0) if fused else 1.0
    block_eff = None
    limit = eff.BLOCK_FP8_EARLY_BEFORE.get(engine)
    if (r.arch.weight_block_size and r.precision.name == "fp8" and limit is not None
            and before(r.workload.engine_version, limit)):
        block_eff = eff.BLOCK_FP8_GEMM_EFF
        if fused:  # that release's fused-MoE kernel on block-scaled experts (efficiency.BLOCK_FP8_EARLY_MOE_REL)
            moe_rel = eff.BLOCK_FP8_EARLY_MOE_REL.get(engine, moe_rel)
    return block_eff, moe_rel


def vllm_rocm_generic_paged_decode(r: ResolvedPlan, engine: str, context: Num) -> Num:
    """How many times vLLM V0's decode attention on an AMD GPU loads each cached KV byte: the query heads per KV
    head on one GPU where its custom ROCm kernel does not take the step and the hipified generic kernel loads a KV
    head once per query head, else 1 (efficiency.py, at VLLM_ROCM_CUSTOM_PAGED_ATTN_FROM: upstream V0 releases
    before 0.6.2 always; from 0.6.2 past efficiency.VLLM_ROCM_CUSTOM_PAGED_ATTN_MAX_LEN tokens of context, or with a
    head size or group the kernel does not take). `context`: the step's context, standing for the batch's longest.
    1 for other engines and vendors, V1, AMD's fork, MLA models and 8-bit KV caches (the kernel's fp8 cache path
    not read)."""
    from mlrig.estimators.engines import vllm_v1

    version = r.workload.engine_version
    a = r.arch
    if engine != "vllm" or r.gpu.vendor != "AMD" or vllm_v1(version) or a.is_mla or not a.num_kv_heads:
        return 1.0
    if (version and "rocm/vllm" in version.lower()) or r.kv_bytes_per_element < 2.0:
        return 1.0
    tp = max(1, r.hardware.tensor_parallel)
    group = (a.num_heads / tp) / max(1.0, a.num_kv_heads / tp)  # query heads per KV head on one GPU
    if before(version, eff.VLLM_ROCM_CUSTOM_PAGED_ATTN_FROM):
        return group
    limit = eff.VLLM_ROCM_CUSTOM_PAGED_ATTN_MAX_LEN[not before(version, eff.VLLM_ROCM_CUSTOM_PAGED_ATTN_128K_FROM)]
    kernel_takes = (a.head_dim in eff.VLLM_ROCM_CUSTOM_PAGED_ATTN_HEAD_SIZES
                    and 1 <= group <= eff.VLLM_ROCM_CUSTOM_PAGED_ATTN_MAX_GQA)
    if not kernel_takes:
        return group
    return vec.where(context > limit, group, 1.0)


def _decode_cost(r: ResolvedPlan, engine: str, batch: Num, context: Num) -> PassCost:
    cost = decode_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, batch, context,
                       decode_kv_read_factor(r.arch, engine, r.workload.flash_attention, r.workload.engine_version,
                                             r.kv_bytes_per_element),
                       embedding_bytes=r.weight_parts.get("embedding"),
                       expert_bytes=r.weight_parts.get("experts_routed"),
                       plain_bytes=r.weight_parts.get("plain_16bit_read", 0.0),
                       vision_bytes=r.weight_parts.get("vision"))
    absorbed = vllm_absorbed_mla_decode_params(r, engine)
    if absorbed > 0:
        # vLLM 0.7's absorbed MLA matrices: read once per step, multiplied by every decode token
        cost = replace(cost, weight_bytes=cost.weight_bytes + absorbed * r.precision.scheme.linear_bpw / 8.0,
                       flops=cost.flops + batch * 2.0 * absorbed)
    per_query_head = vllm_rocm_generic_paged_decode(r, engine, context)
    if vec.is_array(per_query_head) or per_query_head != 1.0:
        cost = replace(cost, kv_bytes=cost.kv_bytes * per_query_head)
    copy = exllama_reconstruct_bytes(r, engine, batch)
    if vec.is_array(copy) or copy > 0:
        cost = replace(cost, other_bytes=cost.other_bytes + copy)
    padded = mlc_padded_gemm_rows(r, engine, batch)
    if padded is not None:
        # the GEMMs' arithmetic at the padded row count (efficiency.MLC_GEMM_ROW_TILE), in waves of thread blocks
        # (`mlc_gemm_wave_util`: above the GEMV's rows only); attention stays per sequence
        util = vec.where(batch > eff.MLC_LOW_BATCH_GEMV_MAX_ROWS, mlc_gemm_wave_util(r, engine, padded, True), 1.0)
        gemm = 2.0 * matmul_params(r.arch)
        cost = replace(cost, flops=cost.flops + padded * gemm / util - batch * gemm)
        # the low-batch GEMV streams the weights once per block of rows (efficiency.MLC_LOW_BATCH_GEMV_BUCKETS)
        extra_passes = mlc_gemv_weight_passes(batch) - 1
        if vec.is_array(extra_passes) or extra_passes > 0:
            streamed = matmul_params(r.arch) * r.precision.scheme.linear_bpw / 8.0
            cost = replace(cost, weight_bytes=cost.weight_bytes + extra_passes * streamed)
    if engine == "transformers" and r.precision.name.startswith("nf4"):
        # bitsandbytes de-quantises to a 16-bit copy once more than one token is in the pass
        # (efficiency.BNB4_DEQUANT_BYTES_PER_PARAM); the lm_head stays 16-bit (llm_int8_skip_modules)
        quantised = (matmul_params(r.arch) - lm_head_params(r.arch)) * read_fraction(r.arch, batch)
        extra = vec.where(batch > 1, quantised * eff.BNB4_DEQUANT_BYTES_PER_PARAM, 0.0)
        cost = replace(cost, other_bytes=cost.other_bytes + extra)
    if engine == "transformers":
        cost = _gptq_rows_cost(r, cost, batch)
    return cost


def mlc_padded_gemm_rows(r: ResolvedPlan, engine: str, batch: Num) -> Num | None:
    """The rows MLC-LLM's decode GEMMs compute for `batch` running sequences with quantised weights: `batch`
    up to efficiency.MLC_LOW_BATCH_GEMV_MAX_ROWS (8; its GEMV-style low-batch schedule), above that `batch`
    rounded up to a multiple of efficiency.MLC_GEMM_ROW_TILE (128; the padded tensor-core GEMM), as
    LowBatchGemvSpecialize dispatches (efficiency.py has the source). None for other engines, 16-bit
    weights (which MLC can hand to cuBLAS) and MoE models (their experts' kernels are not this GEMM)."""
    if engine != "mlc" or r.precision.family == "f16" or r.arch.is_moe:
        return None
    tiles = vec.ceil_int(batch / eff.MLC_GEMM_ROW_TILE)
    return vec.where(batch > eff.MLC_LOW_BATCH_GEMV_MAX_ROWS, tiles * eff.MLC_GEMM_ROW_TILE, batch)


def mlc_gemm_wave_util(r: ResolvedPlan, engine: str, rows: Num, with_head: bool) -> Num:
    """Fraction of the SMs MLC-LLM's padded tensor-core GEMMs keep busy at `rows` (already a multiple of
    efficiency.MLC_GEMM_ROW_TILE) on this GPU, over a dense layer's linears (fused QKV, o_proj, fused gate/up or up,
    down) and, with `with_head` (decode: every row's logits), the lm_head: each linear is ceil(rows / 128) x
    ceil(N / 128) blocks run one per SM in waves, its busy fraction blocks / (waves x SMs), and the linears' FLOPs
    weigh their times (a harmonic mean). 1.0 where it does not apply: other engines, 16-bit weights, MoE models,
    non-NVIDIA GPUs (the tensorized schedule is CUDA's) and GPUs without `sm_count`. efficiency.MLC_GEMM_COL_TILE
    has the source."""
    a, sms = r.arch, r.gpu.sm_count
    if engine != "mlc" or r.precision.family == "f16" or a.is_moe or r.gpu.vendor != "NVIDIA" or not sms:
        return 1.0
    head_dim = a.head_dim or a.hidden_size // a.num_heads
    kv_heads = a.num_kv_heads or a.num_heads
    up = (2 if a.mlp == "gated" else 1) * a.intermediate_size
    shapes = [((a.num_heads + 2 * kv_heads) * head_dim, a.hidden_size), (a.hidden_size, a.num_heads * head_dim),
              (up, a.hidden_size), (a.hidden_size, a.intermediate_size)]
    weighted = [(n * k * a.num_layers, n) for n, k in shapes]
    if with_head:
        weighted.append((a.vocab_size * a.hidden_size, a.vocab_size))
    row_tiles = vec.ceil_int(rows / eff.MLC_GEMM_ROW_TILE)
    work: Num = 0.0
    busy_time: Num = 0.0
    for flops, n in weighted:
        blocks = row_tiles * vec.ceil_int(n / eff.MLC_GEMM_COL_TILE)
        util = blocks / (vec.ceil_int(blocks / sms) * sms)
        work = work + flops
        busy_time = busy_time + flops / util
    return work / busy_time


def mlc_gemv_weight_passes(batch: Num) -> Num:
    """How many times MLC-LLM's low-batch GEMV streams a quantised linear's weights for `batch` rows: the schedule
    for a bucket of b rows binds ceil(batch / b) blocks along blockIdx.y, each de-quantising and reading the whole
    weight for its b rows (efficiency.MLC_LOW_BATCH_GEMV_BUCKETS: b = 2 up to 2 rows, 4 up to 8). 1 above 8 rows
    (the padded GEMM reads them once: `mlc_padded_gemm_rows`) and at 1-4 rows."""
    small, large = eff.MLC_LOW_BATCH_GEMV_BUCKETS
    bucket = vec.where(batch <= small, small, large)
    passes = vec.ceil_int(batch / bucket)
    return vec.where(batch > eff.MLC_LOW_BATCH_GEMV_MAX_ROWS, 1, passes)


def mmq_expert_tile(r: ResolvedPlan, engine: str) -> int | None:
    """Maximum column tile (mmq_x) of the single MMQ launch that runs a MoE micro-batch's expert GEMMs in
    llama.cpp's HIP and CUDA builds, where the GPU takes MUL_MAT_ID through MMQ at a prompt's micro-batch.
    HIP (efficiency.py 1-HIP-MMQ-TILE): efficiency.HIP_MMQ_X_MAX_MFMA on CDNA 3 (month labels from
    efficiency.LLAMA_CPP_HIP_MMQ_ID_MFMA_FROM, builds after efficiency.LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD),
    efficiency.HIP_MMQ_X_MAX_DP4A on GCN and RDNA 1-2 (from efficiency.LLAMA_CPP_HIP_MMQ_ID_DP4A_FROM, builds after
    efficiency.LLAMA_CPP_MMQ_ID_UNTIL_BUILD). CUDA (1-CUDA-MMQ-TILE): efficiency.CUDA_MMQ_X_MAX_MMA on Turing and
    later, efficiency.CUDA_MMQ_X_MAX_DP4A on Pascal GP102-GP108, month labels from
    efficiency.LLAMA_CPP_CUDA_MMQ_ID_FROM, builds after efficiency.LLAMA_CPP_MMQ_ID_UNTIL_BUILD. None elsewhere
    (other engines, "llama.cpp-2024", vendors and architectures, dense models, weight types MMQ does not take
    (`mmq_takes`: 16-bit among them), and earlier labels: `llama_cpp_before_change`). No label: the current code."""
    a = r.arch
    if not a.is_moe or not a.num_experts or not mmq_takes(r.precision.name, r.precision.llama_cpp_only):
        return None
    gpu_arch = (r.gpu.architecture or "").strip()
    if engine == "llama.cpp-hip" and r.gpu.vendor == "AMD":
        if gpu_arch.startswith(eff.HIP_MMQ_ID_MFMA_ARCHITECTURES):
            tile, since = eff.HIP_MMQ_X_MAX_MFMA, eff.LLAMA_CPP_HIP_MMQ_ID_MFMA_FROM
            last_old_build = eff.LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD
        elif gpu_arch.startswith(eff.HIP_MMQ_ID_DP4A_ARCHITECTURES):
            tile, since = eff.HIP_MMQ_X_MAX_DP4A, eff.LLAMA_CPP_HIP_MMQ_ID_DP4A_FROM
            last_old_build = eff.LLAMA_CPP_MMQ_ID_UNTIL_BUILD
        else:
            return None
    elif engine == "llama.cpp" and r.gpu.vendor == "NVIDIA":
        if gpu_arch.startswith(eff.CUDA_MMQ_ID_MMA_ARCHITECTURES):
            tile = eff.CUDA_MMQ_X_MAX_MMA
        elif gpu_arch.startswith(eff.CUDA_MMQ_ID_DP4A_ARCHITECTURES):
            tile = eff.CUDA_MMQ_X_MAX_DP4A
        else:
            return None
        since, last_old_build = eff.LLAMA_CPP_CUDA_MMQ_ID_FROM, eff.LLAMA_CPP_MMQ_ID_UNTIL_BUILD
    else:
        return None
    if llama_cpp_before_change(r.workload.engine_version, _month_before(since), last_old_build):
        return None
    return tile


def mmq_takes(precision: str, gguf_block_type: bool) -> bool:
    """Whether llama.cpp's MMQ runs this weight type (mmq.cu `ggml_cuda_should_use_mmq`'s list at 4227c9be): the GGUF
    block types (legacy, Q8_0, K- and IQ-quants) and MXFP4, less the IQ1_M mix (efficiency.LLAMA_CPP_MMQ_NOT_TAKEN);
    16-bit and float types go to cuBLAS / hipBLAS."""
    return (gguf_block_type or precision == "mxfp4") and precision not in eff.LLAMA_CPP_MMQ_NOT_TAKEN


def mmq_expert_rows_factor(r: ResolvedPlan, engine: str, tokens_in_pass: Num) -> Num:
    """Token columns the routed experts' MMQ launch of a prompt pass computes in llama.cpp's HIP and CUDA builds,
    per routed row (token x chosen expert), >= 1 (efficiency.py 1-HIP-MMQ-TILE and 1-CUDA-MMQ-TILE: one launch per
    MUL_MAT_ID, every expert's tokens in tiles of mmq_x columns, each computed whole). With T tokens in a
    micro-batch of at most LLAMA_CPP_N_UBATCH, mmq_x = J = the smallest multiple of 8 covering T, capped at
    `mmq_expert_tile` (mmq.cuh `mul_mat_q_case`, which takes the fewest tiles over the launch's columns); n = T k
    rows land on E_t = E x `experts_touched_fraction` experts, lam = n / E_t each (uniform routing), and an expert
    with c rows computes J x ceil(c / J) columns: ~max(J, lam + J / 2) for Poisson counts (as
    `apple_expert_gemm_rows_factor`). DeepSeek-V3 (8 of 256) at 512 tokens on an MI300X or an H100: lam = 16,
    J = 128: 8.0. 1 where the tile does not apply."""
    tile_max = mmq_expert_tile(r, engine)
    if tile_max is None:
        return 1.0
    a = r.arch
    tokens = vec.minimum(vec.maximum(1, tokens_in_pass), LLAMA_CPP_N_UBATCH)
    tile = vec.minimum(float(tile_max), 8.0 * vec.ceil_int(tokens / 8.0))
    rows = tokens * a.experts_per_token
    touched = a.num_experts * experts_touched_fraction(a, tokens)
    computed = touched * vec.maximum(tile, rows / touched + tile / 2.0)
    return vec.maximum(1.0, computed / rows)


def llama_cpp_host_id_sort(r: ResolvedPlan, engine: str) -> bool:
    """Whether llama.cpp's MUL_MAT_IDs of more than one token sort the expert ids on the host with the GPU drained
    (efficiency.py 1-HIP-IDS): builds before PR #15525 (month labels up to efficiency.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL,
    build numbers up to efficiency.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD) of the HIP build, and of the CUDA build on
    NVIDIA GPUs from PR #13199 on (before it the CUDA build counted each expert's rows between that expert's launches,
    overlapped with the GPU's work: not priced). MoE models only."""
    a = r.arch
    if not a.is_moe or not a.num_experts:
        return False
    version = r.workload.engine_version
    if not llama_cpp_before_change(version, eff.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL,
                                   eff.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD):
        return False
    if engine == "llama.cpp-hip":
        return True
    return (engine == "llama.cpp" and r.gpu.vendor == "NVIDIA"
            and not llama_cpp_before_change(version, _month_before(eff.LLAMA_CPP_CUDA_MMQ_ID_FROM),
                                            eff.LLAMA_CPP_MMQ_ID_UNTIL_BUILD))


def hip_moe_host_sort_s(r: ResolvedPlan, engine: str, tokens_in_pass: Num) -> Num:
    """Host time of a MoE prompt pass's expert-id sorts in llama.cpp's HIP builds, and CUDA builds from PR #13199,
    before the device-side ids helper (`llama_cpp_host_id_sort`, efficiency.py 1-HIP-IDS): per micro-batch of T <=
    LLAMA_CPP_N_UBATCH tokens, E x T x k comparisons x efficiency.HIP_HOST_ID_SORT_S_PER_COMPARISON for each of
    efficiency.LLAMA_CPP_MUL_MAT_ID_PER_MOE_FFN MUL_MAT_IDs of each MoE layer, with the GPU idle behind the stream
    synchronisation. 0 for one token (batch-1 decode: 1-HIP-MMID), dense models, other engines and builds after the
    PR. DeepSeek-V3 (256 experts, top 8, 58 MoE layers) at 512 tokens: 256 x 512 x 8 x 1 ns x 3 x 58 = 0.182 s."""
    a = r.arch
    if not llama_cpp_host_id_sort(r, engine):
        return 0.0
    tokens = vec.maximum(1, tokens_in_pass)
    full, rest = tokens // LLAMA_CPP_N_UBATCH, tokens % LLAMA_CPP_N_UBATCH  # micro-batches: full ones and the rest
    token_sum = full * LLAMA_CPP_N_UBATCH + vec.where(rest > 1, rest, 0)  # a 1-token rest takes the bs1 path
    comparisons = a.num_experts * a.experts_per_token * token_sum
    per_pass = comparisons * eff.HIP_HOST_ID_SORT_S_PER_COMPARISON * eff.LLAMA_CPP_MUL_MAT_ID_PER_MOE_FFN
    return vec.where(tokens > 1, per_pass * a.num_moe_layers, 0.0)


def apple_expert_gemm_rows_factor(r: ResolvedPlan, engine: str, tokens_in_pass: Num) -> Num:
    """Token rows the routed experts' grouped GEMMs of a prompt pass compute on an Apple GPU, per routed row
    (token x chosen expert), >= 1: both Metal engines tile each expert's tokens, and a tile is computed (its weight
    tile de-quantised and multiplied) whole however few of its rows hold tokens. With T tokens in a (micro-)batch,
    n = T k routed rows land on E_t = E x `experts_touched_fraction` experts, lam = n / E_t each (uniform routing).
    - llama.cpp (ggml/src/ggml-metal/ggml-metal-ops.cpp `ggml_metal_op_mul_mat_id`, read at 6340ab1): from
      ne21_mm_id_min = 32 tokens it maps tokens to experts (kernel_mul_mm_id_map0) and dispatches kernel_mul_mm_id
      over (ne21 + 31) / 32 token tiles x (ne01 + 63) / 64 weight-row tiles x every expert; a tile past its expert's
      token count returns at once, so an expert with c tokens computes ceil(c / 32) tiles of 32 rows. For Poisson
      counts of mean lam that is ~max(32, lam + 16) rows per touched expert (32 x E[ceil(c / 32)]: 32 at lam 8 or
      16, 48 at 32, 80 at 64). Per micro-batch of LLAMA_CPP_N_UBATCH tokens. Below 32 tokens it runs the mat-vec
      kernel_mul_mv_id per (token, expert) pair instead: 1 here.
    - MLX (mlx/backend/metal/quantized.cpp `GatherQMM::eval_gpu`, read at 846d176): mlx-lm's SwitchGLU sorts the
      routed rows by expert from 64 of them (mlx_lm/models/switch_layers.py, `do_sort = indices.size >= 64`), and
      with at least 4 rows per expert (`B / E >= 4`) runs `gather_qmm_rhs`, whose threadgroups take BM = 16
      sorted rows and run the full 16-row GEMM once for every expert segment inside them
      (kernels/quantized.h `affine_gather_qmm_rhs`): ~n / 16 + E_t segments, n + 16 E_t rows. Per mlx-lm
      prefill step (memory.MLX_PREFILL_STEP). Fewer rows per expert go through per-pair mat-vecs: 1 here. The
      same file's Neural-Accelerator variant (`gather_qmm_rhs_nax`, macOS 26.2+ on M5) tiles 32 or 64 rows: not
      priced (no row of that setup).
    1 for other engines, vendors and dense models. Physics from the engines' source, no fitted figure."""
    a = r.arch
    if r.gpu.vendor != "Apple" or not a.is_moe or not a.num_experts or engine not in ("llama.cpp-metal", "mlx"):
        return 1.0
    from mlrig.estimators.memory import MLX_PREFILL_STEP

    k, experts = a.experts_per_token, a.num_experts
    step = LLAMA_CPP_N_UBATCH if engine == "llama.cpp-metal" else MLX_PREFILL_STEP
    tokens = vec.minimum(vec.maximum(1, tokens_in_pass), step)
    rows = tokens * k
    touched = experts * experts_touched_fraction(a, tokens)
    if engine == "llama.cpp-metal":
        tile = float(eff.METAL_MUL_MM_ID_TOKEN_TILE)
        computed = touched * vec.maximum(tile, rows / touched + tile / 2.0)
        grouped = tokens >= eff.METAL_MUL_MM_ID_MIN_TOKENS
    else:
        computed = rows + eff.MLX_GATHER_QMM_RHS_BM * touched
        grouped = (rows >= eff.MLX_SWITCH_SORT_MIN_ROWS) & (rows >= 4 * experts)
    return vec.where(grouped, vec.maximum(1.0, computed / rows), 1.0)


def exllama_reconstruct_bytes(r: ResolvedPlan, engine: str, tokens_in_pass: Num) -> Num:
    """Bytes ExLlamaV2 moves to de-quantise its weights for a pass of more than MAX_Q_GEMM_ROWS (32)
    tokens: gemm_half_q_half_cuda (exllamav2_ext/cuda/q_gemm.cu, @b9c025b) then reconstructs each
    quantised matrix as FP16 into a scratch buffer (`b->reconstruct(stream, temp_dq, ...)`) and multiplies
    with cublasHgemm, so every quantised parameter is written and read back at 2 bytes each
    (efficiency.EXLLAMA_RECONSTRUCT_BYTES_PER_PARAM) besides its 4-bit read; at 32 tokens or fewer its
    fused q_gemm kernel reads the 4-bit weights only. The output head is not reconstructed (the
    prefill's logits are one token's)."""
    if engine != "exllamav2" or r.precision.family == "f16":
        return 0.0
    quantised = matmul_params(r.arch) - lm_head_params(r.arch)
    return vec.where(tokens_in_pass > eff.EXLLAMA_MAX_Q_GEMM_ROWS,
                     quantised * eff.EXLLAMA_RECONSTRUCT_BYTES_PER_PARAM, 0.0)


def transformers_gptq_kernel(precision: Precision, version: str | None) -> str | None:
    """The GPTQ kernel HF transformers runs a plan's 4-bit GPTQ weights with (efficiency.GPTQ_KERNEL_ROWS'
    keys), or None where batched decode costs nothing beyond one pass (Marlin, or a release whose kernel
    choice is not modelled): "gptq-exllamav2" names ExLlamaV2; plain "gptq" before transformers 4.49 is
    the default ExLlama (v1) kernel (GPTQConfig `exllama_config` version 1, AutoGPTQ / optimum)."""
    if precision.name == "gptq-exllamav2":
        return "exllamav2"
    if precision.name == "gptq" and before(version, (4, 49)):
        return "exllama"
    return None


def _gptq_rows_cost(r: ResolvedPlan, cost: PassCost, batch: Num) -> PassCost:
    """A transformers GPTQ decode step of `batch` rows per linear (efficiency.GPTQ_KERNEL_ROWS): the fused
    kernel reads and de-quantises the 4-bit weights once per block of rows, each pass at
    efficiency.GPTQ_FUSED_PASS_REL_EFF of the mat-vec rate, or, from its threshold, reconstructs a 16-bit
    copy that cuBLAS reads (efficiency.GPTQ_RECONS_BYTES_PER_PARAM)."""
    kernel = transformers_gptq_kernel(r.precision, r.workload.engine_version)
    if kernel is None:
        return cost
    rows_per_pass, recons_from = eff.GPTQ_KERNEL_ROWS[kernel]
    # linear weights the step reads (all but the untouched experts), less the 16-bit head
    params = r.arch.params().total * read_fraction(r.arch, batch) - lm_head_params(r.arch)
    quantised_bytes = params * r.precision.scheme.linear_bpw / 8.0
    fused = batch < recons_from
    passes = vec.ceil_int(batch / rows_per_pass)
    # the fused passes stream at GPTQ_FUSED_PASS_REL_EFF of the mat-vec rate: priced as that many more bytes
    weights = cost.weight_bytes + vec.where(fused, passes * quantised_bytes / eff.GPTQ_FUSED_PASS_REL_EFF
                                            - quantised_bytes, 0.0)
    other = cost.other_bytes + vec.where(fused, 0.0, params * eff.GPTQ_RECONS_BYTES_PER_PARAM)
    return replace(cost, weight_bytes=weights, other_bytes=other)


VLLM_MLA_FIRST = (0, 7, 1)  # vLLM PR #12528 (MLA decode with latent MQA), first in 0.7.1
VLLM_MLA_UNABSORBED_FROM = (0, 8, 0)  # vLLM PR #14770 (2025-03-13), first in 0.8.0


def vllm_absorbed_mla_decode_params(r: ResolvedPlan, engine: str) -> float:
    """Extra weight elements (whole model) a decode step of vLLM 0.7.1-0.7.x reads for an MLA model: those
    releases decoded MLA with materialised absorbed matrices (vllm/attention/backends/mla/utils.py,
    `MLACommonImpl.process_weights_after_loading`, VLLM_MLA_PERFORM_MATRIX_ABSORPTION on by default, and "Currently
    fp8 requires matrix absorption"): W_UQ_UK = W_UQ x W_UK (Lq x N*Lkv) in place of q_b_proj's no-RoPE part and
    kv_b_proj's key half, and W_UV_O = W_UV x W_O (N*Lkv x H) in place of kv_b_proj's value half and o_proj, FP8
    weights requantised in the checkpoint's block shape. For DeepSeek-V3 (Lq 1,536, Lkv 512, 128 heads of 128 + 64,
    hidden 7,168) that is 570M elements a layer in place of 159M, 3.1 GB more per GPU and step at TP 8 in FP8
    (`_decode_cost` reads them once a step and multiplies every decode token by them).
    vLLM PR #14770 ("[Attention] MLA get rid of materialization", 2025-03-13, in 0.8.0) replaced them with the
    per-head BMMs over the unabsorbed weights. 0 for other engines, releases, non-MLA models, and weights that
    vLLM's MLA path refused (neither FP8 nor 16-bit: `VLLM_MLA_DISABLE` then runs MHA)."""
    a = r.arch
    if (engine != "vllm" or not a.is_mla or a.kv_lora_rank is None or not a.q_lora_rank
            or r.precision.name not in ("fp8", "bf16", "fp16")
            or before(r.workload.engine_version, VLLM_MLA_FIRST)
            or not before(r.workload.engine_version, VLLM_MLA_UNABSORBED_FROM)):
        return 0.0
    lq, lkv, n, h = a.q_lora_rank, a.kv_lora_rank, a.num_heads, a.hidden_size
    nope = a.qk_nope_head_dim or a.dim_head
    v_dim = a.v_head_dim or a.dim_head
    absorbed = lq * n * lkv + n * lkv * h
    replaced = lq * n * nope + lkv * n * (nope + v_dim) + n * v_dim * h
    return float(max(0, absorbed - replaced) * a.num_layers)


def mla_decode_attention_bw_rel(r: ResolvedPlan, engine: str) -> float:
    """Fraction of the memory rate a decode step's attention reads an MLA latent cache at: below 1 for the
    engine releases that decoded MLA on AMD GPUs with the Triton split-KV decode kernel before AITER's MLA
    decode kernel (efficiency.MLA_DECODE_ATTN_BW_REL, efficiency.MLA_DECODE_ATTN_EARLY_BEFORE); 1 elsewhere
    (unknown versions: the current release, 1)."""
    rel = eff.MLA_DECODE_ATTN_BW_REL.get(engine)
    limit = eff.MLA_DECODE_ATTN_EARLY_BEFORE.get(engine)
    if (rel is None or limit is None or not r.arch.is_mla or r.gpu.vendor not in eff.MLA_DECODE_ATTN_EARLY_VENDORS
            or not before(r.workload.engine_version, limit)):
        return 1.0
    return rel


def chunk_prefix_pairs(prompt: Num, budget: int | None) -> Num:
    """(query, key) pairs of a prompt of `prompt` new tokens whose key was prefilled in an earlier chunk, where
    prompts are packed back to back into chunked-prefill passes of `budget` tokens (SGLang's `PrefillAdder`
    chunks the prompt that overflows a pass; `serving.sglang_prefill_first`): with the prompt's offset in its
    pass uniform, P^3 / (6 B) for P <= B (it straddles a boundary with probability P / B, split at a uniform
    point u: (P - u) u pairs, P^2 / 6 on average), P^2 / 2 - P B / 2 + B^2 / 6 above (all pairs but those within
    a chunk). Hand check: P = B gives B^2 / 6 on both sides; no budget, none."""
    if budget is None or budget <= 0:
        return 0.0 * prompt
    b = float(budget)
    return vec.where(prompt <= b, prompt ** 3 / (6.0 * b), prompt * prompt / 2.0 - prompt * b / 2.0 + b * b / 6.0)


def early_mla_prefix_attention_s(r: ResolvedPlan, engine: str, prompt: Num) -> Num:
    """Seconds per prompt of `prompt` new tokens that the early ROCm absorbed-MLA extend kernel spends on the
    attention to tokens already in the cache (efficiency.MLA_PREFIX_ATTN_EARLY_EFF: SGLang before 0.4.5 on AMD
    GPUs, MLA models): the plan's `cached_prompt_tokens` (a radix-cache hit) and the earlier chunks of the
    prompt itself (`chunk_prefix_pairs` at the plan's chunked-prefill budget, SGLang's default unless the plan
    sets max_num_batched_tokens: serving.prefill_budget), 2 x (kv_lora_rank + rope + kv_lora_rank)
    FLOPs per pair, head and layer, each GPU its heads' share. 0 elsewhere."""
    rate = eff.MLA_PREFIX_ATTN_EARLY_EFF.get(engine)
    limit = eff.MLA_DECODE_ATTN_EARLY_BEFORE.get(engine)
    a = r.arch
    if (rate is None or limit is None or a.kv_lora_rank is None or r.gpu.vendor not in eff.MLA_DECODE_ATTN_EARLY_VENDORS
            or not before(r.workload.engine_version, limit)):
        return 0.0 * prompt
    peak = peak_tflops(r.gpu, "fp16", engine)
    if not peak:
        return 0.0 * prompt
    w = r.workload
    budget = w.max_num_batched_tokens or sglang_default_chunked_prefill(r.gpu.memory_gib, w.engine_version)
    pairs = w.cached_prompt_tokens * prompt + chunk_prefix_pairs(prompt, budget)
    per_pair = 2.0 * (2 * a.kv_lora_rank + (a.qk_rope_head_dim or 0)) * a.num_heads * a.num_layers
    return pairs * per_pair / (rate * peak * 1e12) / max(1, r.hardware.tensor_parallel)


def fp8_kv_decode_attention_bw_rel(r: ResolvedPlan, engine: str) -> float:
    """Fraction of the memory rate a decode step reads an FP8 KV cache at, where the engine's decode attention
    reads it slower than the weights stream (efficiency.FP8_KV_DECODE_ATTN_BW_REL: TensorRT-LLM's XQA on an FP8
    cache, fitted on the TRTBENCH70-* trtllm-bench runs); 1 for 16-bit caches, MLA and other engines."""
    rel = eff.FP8_KV_DECODE_ATTN_BW_REL.get(engine)
    if rel is None or r.arch.is_mla or r.kv_bytes_per_element > 1.0:
        return 1.0
    return rel


def xqa_cta_bw_rel(r: ResolvedPlan, engine: str, batch: Num, context: Num) -> Num:
    """Fraction of the memory rate TensorRT-LLM's XQA decode attention (v0.8 on, NVIDIA) reads the KV cache at when
    it launches too few thread blocks to fill the card: multi_block (`context` // efficiency.XQA_MIN_HISTORY_PER_BLOCK,
    at most round(sqrt(8 x that)), at least 1; decoderXQAImplCommon.h `computeMultiBlockCount`) x KV heads per GPU
    x `batch` CTAs, each reading at efficiency.XQA_CTA_READ_GB_S, against the card's rate (bandwidth_efficiency).
    1 elsewhere (other engines, MLA, TensorRT-LLM before XQA)."""
    from mlrig.estimators.engines import trt_llm_pre_xqa

    a = r.arch
    if (engine != "trt-llm" or a.is_mla or not a.num_kv_heads or r.gpu.vendor != "NVIDIA"
            or trt_llm_pre_xqa(r.workload.engine_version)):
        return 1.0
    kv_heads = max(1.0, a.num_kv_heads / max(1, r.hardware.tensor_parallel))
    blocks = vec.trunc_int(vec.maximum(context, 0) / eff.XQA_MIN_HISTORY_PER_BLOCK)
    blocks = vec.maximum(vec.minimum(blocks, vec.round_int(vec.power(8.0 * blocks, 0.5))), 1)
    ctas = blocks * kv_heads * vec.maximum(batch, 1)
    card_gb_s = r.gpu.memory_bandwidth_gb_s * bandwidth_efficiency(r.gpu, engine)
    return vec.minimum(ctas * eff.XQA_CTA_READ_GB_S / card_gb_s, 1.0)


def decode_step(r: ResolvedPlan, batch: Num, context: Num, offload_fraction: Num = 0.0) -> PassTime:
    """One decode step of `batch` sequences at `context` tokens; `offload_fraction` of the weights
    served from host memory (see `_offload_time`)."""
    s = _setup(r)
    cost = _decode_cost(r, s.engine, batch, context)
    attn_rel = mla_decode_attention_bw_rel(r, s.engine) * fp8_kv_decode_attention_bw_rel(r, s.engine)
    cta_rel = xqa_cta_bw_rel(r, s.engine, batch, context)
    if vec.is_array(cta_rel) or cta_rel < 1.0:
        attn_rel = attn_rel * cta_rel
    # the early ROCm MLA decode kernel's slow latent-cache read, TensorRT-LLM's FP8-cache read: priced as that
    # many more bytes
    timed_cost = cost if not vec.is_array(attn_rel) and attn_rel == 1.0 else replace(cost,
                                                                                      kv_bytes=cost.kv_bytes / attn_rel)
    t = _timed(timed_cost, r, s, batch, decode=True)
    eager = eager_decode_layer_s(r, s.engine, batch, context)
    if vec.is_array(eager) or eager > 0:
        extra_s = eager * r.arch.num_layers
        t = PassTime(t.seconds + extra_s, t.compute_s, t.memory_s, t.overhead_s + extra_s, t.comm_s, t.bound,
                     t.compute_known)
    sort_s = mlc_top_p_sort_s(r, s.engine, batch)
    if vec.is_array(sort_s) or sort_s > 0:
        t = PassTime(t.seconds + sort_s, t.compute_s, t.memory_s, t.overhead_s + sort_s, t.comm_s, t.bound,
                     t.compute_known)
    host_s = trtllm_eager_host_s(r, s.engine)
    stream_s = trtllm_stream_host_s(r, s.engine, batch) + vllm_stream_host_s(r, s.engine, batch)
    if vec.is_array(stream_s) or stream_s > 0:
        # the server process's per-token work runs beside the worker's step: the p-norm of the two, as below
        both = _p_norm(t.seconds, stream_s, eff.HOST_OVERLAP_P)
        t = PassTime(both, t.compute_s, t.memory_s, t.overhead_s + both - t.seconds, t.comm_s,
                     vec.where(stream_s > t.seconds, "host", t.bound), t.compute_known)
    if host_s > 0:
        both = _p_norm(t.seconds, host_s, eff.HOST_OVERLAP_P)
        t = PassTime(both, t.compute_s, t.memory_s, t.overhead_s + both - t.seconds, t.comm_s,
                     vec.where(host_s > t.seconds, "host", t.bound), t.compute_known)
    if vec.is_array(offload_fraction) or offload_fraction > 0:
        extra = _offload_time(cost.weight_bytes * offload_fraction, s.engine, r.gpu,
                              r.hardware.host_memory_bandwidth_gb_s)
        off = offload_fraction > 0
        return PassTime(vec.where(off, t.seconds + extra, t.seconds), t.compute_s, t.memory_s, t.overhead_s, t.comm_s,
                        vec.where(off, "offload", t.bound), vec.where(off, True, t.compute_known))
    return t


def mlc_top_p_sort_s(r: ResolvedPlan, engine: str, batch: Num) -> Num:
    """GPU time per decode step of MLC-LLM's top-p argsort of every running sequence's whole probability vector,
    in nightlies before the pivot-based renormalization (engines.mlc_sorts_for_top_p): batch x vocabulary elements
    at efficiency.MLC_TOP_P_SORT_BYTES_PER_ELEMENT (read in TVM's thrust sort and MLC's sampler, see there) at the
    engine's decode bandwidth. 0 for other engines and later MLC releases."""
    from mlrig.estimators.engines import mlc_sorts_for_top_p

    if engine != "mlc" or not mlc_sorts_for_top_p(r.workload.engine_version):
        return 0.0
    bytes_moved = batch * r.arch.vocab_size * eff.MLC_TOP_P_SORT_BYTES_PER_ELEMENT
    return bytes_moved / (r.gpu.memory_bandwidth_gb_s * 1e9 * bandwidth_efficiency(r.gpu, engine))


def _offload_time(offloaded_bytes: Num, engine: str, gpu: GPU, host_bw_gb_s: float | None) -> Num:
    """Offloaded weights: llama.cpp runs those layers on the CPU at host memory bandwidth (-ngl;
    measured by `mlrig probe` when known, else dual-channel DDR5-4800); other engines (accelerate,
    vLLM cpu-offload) stream them over the card's PCIe link (x16 of its generation) every pass."""
    if engine.startswith("llama.cpp"):
        return offloaded_bytes / ((host_bw_gb_s or DEFAULT_HOST_BW_GB_S) * 1e9 * eff.BW_EFF[engine]["host"])
    from mlrig.catalog.interconnects import pcie_x16_link

    return offloaded_bytes / (pcie_x16_link(gpu.pcie_gen).bandwidth_gb_s * 1e9 * PCIE_COPY_EFF)


def llama_cpp_split_boundary_s(gpu: GPU) -> float:
    """Fixed time per GPU boundary a llama.cpp layer split crosses in one pass, beyond the hidden state's wire
    time: ggml's backend scheduler copies each split's inputs to the next device and synchronises the two
    (ggml-backend.cpp, ggml_backend_sched_compute_splits). Measured per vendor: efficiency.LLAMA_CPP_SPLIT_BOUNDARY_S
    on NVIDIA (XD-* tg512, 1 vs N GPUs), efficiency.LLAMA_CPP_SPLIT_BOUNDARY_S_AMD on AMD (RX7900X6-* tg128 against
    the source's single-GPU row); other vendors take NVIDIA's."""
    return eff.LLAMA_CPP_SPLIT_BOUNDARY_S_AMD if gpu.vendor == "AMD" else eff.LLAMA_CPP_SPLIT_BOUNDARY_S


def llama_cpp_pipeline_speedup(tokens: Num, gpus: int) -> Num:
    """Prompt-processing speed-up of llama.cpp's layer split over `gpus` GPUs (pipeline parallelism,
    llama.cpp PR #6017, March 2024): the prompt's micro-batches flow through the GPUs' layer ranges
    concurrently, so m micro-batches ideally take (m + G - 1) stage times instead of m x G. The
    pipeline spans the whole prompt, not one logical batch of n_batch tokens: llama_decode returns
    without synchronising ("wait for the computation to finish (automatically done when obtaining the
    model output)", llama_decode_internal, 2024 builds; llama_context::decode since), and llama-bench
    synchronises once after the prompt's last batch, so the next batch's micro-batches enter the
    pipeline while the previous one drains (the scheduler keeps GGML_SCHED_MAX_COPIES = 4 sets of
    inputs in flight). A 512-token prompt is one micro-batch (no gain); 4096 tokens on 4 GPUs ideally
    gain 32/11 = 2.9x. Only `eff.LLAMA_CPP_PIPELINE_EFF` of the ideal gain is credited (see there)."""
    if gpus <= 1:
        return 1.0
    m = vec.ceil_int(tokens / LLAMA_CPP_N_UBATCH)
    ideal = m * gpus / (m + gpus - 1)
    return 1.0 + eff.LLAMA_CPP_PIPELINE_EFF * (ideal - 1.0)


def llama_cpp_moe_host_sync(r: ResolvedPlan, engine: str) -> bool:
    """Whether a MoE prompt pass of llama.cpp's CUDA or HIP build synchronises the host on the GPU's stream in every
    MUL_MAT_ID, which takes away the layer split's pipelining (`llama_cpp_pipeline_speedup`, efficiency.py
    1-MOE-SYNC-PIPELINE): builds before PR #15525 (month labels up to efficiency.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL,
    build numbers up to efficiency.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD) of the HIP build ("llama.cpp-hip") and of
    the CUDA build on NVIDIA GPUs ("llama.cpp", "llama.cpp-2024"); dense models, other backends (Vulkan, Metal, CPU)
    and later builds: False."""
    a = r.arch
    if not a.is_moe or not a.num_experts:
        return False
    if engine != "llama.cpp-hip" and not (engine in ("llama.cpp", "llama.cpp-2024") and r.gpu.vendor == "NVIDIA"):
        return False
    if engine == "llama.cpp-2024":
        return True  # builds before CUDA graphs (mid-2024): long before the PR
    return llama_cpp_before_change(r.workload.engine_version, eff.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL,
                                   eff.LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD)


def xpu_moe_activation_s(r: ResolvedPlan, engine: str, tokens: Num) -> Num:
    """Seconds a prefill of `tokens` tokens spends, per GPU, in the memory-bound kernels around the routed experts'
    GEMMs of vLLM's XPU MoE path on Intel GPUs (efficiency.XPU_MOE_ENGINES; pad, scatter to k rows, SwiGLU, gather,
    slice): 3 H + 3 Hp + 2 k Hp + 3 k Ip bf16 elements per token and MoE layer (Hp, Ip: hidden and per-rank
    intermediate sizes padded to efficiency.XPU_MOE_PAD), streamed at the engine's bandwidth figure. 0 elsewhere
    (dense models, other vendors or engines, non-MXFP4 weights: the path read is vLLM's `IpexMxfp4MoEMethod`)."""
    arch = r.arch
    if not (arch.is_moe and r.gpu.vendor == "Intel" and engine in eff.XPU_MOE_ENGINES
            and r.precision.family == "fp4"):
        return 0.0
    tp = max(1, r.hardware.tensor_parallel)
    pad = eff.XPU_MOE_PAD
    hidden = arch.hidden_size
    hidden_p = math.ceil(hidden / pad) * pad
    inter = arch.moe_intermediate_size or arch.intermediate_size
    inter_p = math.ceil(math.ceil(inter / tp) / pad) * pad
    k = arch.experts_per_token
    elements = 3 * hidden + 3 * hidden_p + 2 * k * hidden_p + 3 * k * inter_p
    moe_layers = arch.num_layers - arch.first_dense_layers
    moved = tokens * moe_layers * elements * eff.XPU_MOE_ACT_BYTES
    return moved / (r.gpu.memory_bandwidth_gb_s * 1e9 * bandwidth_efficiency(r.gpu, engine))


def prefill_pass(r: ResolvedPlan, batch: Num, prompt: Num) -> PassTime:
    """The prefill of `prompt` tokens for each of `batch` sequences, with the plan's engine and split.
    A llama.cpp layer split pipelines the prompt's micro-batches (`llama_cpp_pipeline_speedup`)."""
    s = _setup(r)
    transformers = s.engine == "transformers"
    cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, batch, prompt, r.workload.flash_attention,
                        all_logits=transformers and transformers_full_logits(r.workload.engine_version),
                        embedding_bytes=r.weight_parts.get("embedding"),
                        expert_bytes=r.weight_parts.get("experts_routed"),
                        plain_bytes=r.weight_parts.get("plain_16bit_read", 0.0),
                        score_bytes=prefill_score_bytes(s.engine), vision_bytes=r.weight_parts.get("vision"))
    copy = exllama_reconstruct_bytes(r, s.engine, batch * prompt)
    if vec.is_array(copy) or copy > 0:
        cost = replace(cost, other_bytes=cost.other_bytes + copy)
    cublas = llama_cpp_cublas_dequant(r.gpu, s.engine, r.precision.family, batch * prompt)
    if vec.is_array(cublas) or cublas:
        copy = llama_cpp_dequant_copy_bytes(r.arch, r.weight_bytes, batch * prompt)
        cost = replace(cost, other_bytes=cost.other_bytes + vec.where(cublas, copy, 0.0))
    if transformers and r.precision.name.startswith("nf4"):
        # a prompt is more than one token: bitsandbytes de-quantises every 4-bit linear to a 16-bit copy
        # once per pass (efficiency.BNB4_DEQUANT_BYTES_PER_PARAM), as for batched decode (`_decode_cost`)
        copy = (matmul_params(r.arch) - lm_head_params(r.arch)) * eff.BNB4_DEQUANT_BYTES_PER_PARAM
        extra = vec.where(batch * prompt > 1, copy, 0.0)  # one token goes through the fused gemv
        cost = replace(cost, other_bytes=cost.other_bytes + extra)
    padded = mlc_padded_gemm_rows(r, s.engine, batch * prompt)
    if padded is not None:
        # MLC's prompt GEMMs above the GEMV's rows: padded to the 128-row tile, in waves of thread blocks
        # (`mlc_gemm_wave_util`), as its batched decode's
        rows = batch * prompt
        util = vec.where(rows > eff.MLC_LOW_BATCH_GEMV_MAX_ROWS, mlc_gemm_wave_util(r, s.engine, padded, False), 1.0)
        gemm = cost.flops - cost.attn_flops - cost.expert_flops
        cost = replace(cost, flops=cost.flops + gemm * (padded / rows / util - 1.0))
    tiled = apple_expert_gemm_rows_factor(r, s.engine, batch * prompt) * mmq_expert_rows_factor(
        r, s.engine, batch * prompt)
    if vec.is_array(tiled) or tiled != 1.0:
        # the grouped expert GEMMs compute whole tiles of each expert's tokens (`apple_expert_gemm_rows_factor`,
        # `mmq_expert_rows_factor`)
        cost = replace(cost, flops=cost.flops + cost.expert_flops * (tiled - 1.0),
                       expert_flops=cost.expert_flops * tiled)
    t = _timed(cost, r, s, batch * prompt, decode=False, sequences=batch)
    moe_act_s = xpu_moe_activation_s(r, s.engine, batch * prompt)
    if vec.is_array(moe_act_s) or moe_act_s > 0:
        # vLLM's XPU MoE kernels around the expert GEMMs: work that grows with the tokens, not a read of the weights,
        # so it is counted with the pass's per-token time (compute_s), which a chunk fused into a decode iteration
        # adds (serving.fused_prefill_s_per_token), as early_mla_prefix_attention_s's is below
        t = replace(t, seconds=t.seconds + moe_act_s, compute_s=t.compute_s + moe_act_s)
    sort_s = hip_moe_host_sort_s(r, s.engine, batch * prompt)
    if vec.is_array(sort_s) or sort_s > 0:  # the host's expert-id sort with the GPU drained (1-HIP-IDS)
        t = replace(t, seconds=t.seconds + sort_s, overhead_s=t.overhead_s + sort_s)
    prefix_s = early_mla_prefix_attention_s(r, s.engine, prompt)
    if vec.is_array(prefix_s) or prefix_s > 0:  # attention to cached tokens on the early ROCm MLA path
        t = replace(t, seconds=t.seconds + batch * prefix_s, compute_s=t.compute_s + batch * prefix_s)
    if s.serial > 1 and s.engine.startswith("llama.cpp") and not llama_cpp_moe_host_sync(r, s.engine):
        gain = llama_cpp_pipeline_speedup(batch * prompt, s.serial)
        return PassTime(t.seconds / gain, t.compute_s, t.memory_s, t.overhead_s, t.comm_s, t.bound, t.compute_known)
    return t


@dataclass(frozen=True)
class StaticInference:
    """The figures of `static_inference` (numbers for one plan, arrays for a sweep)."""

    prefill_tok_s: Num
    decode_tok_s: Num
    ttft_ms: Num
    tpot_ms: Num
    throughput_tok_s: Num
    bound: Num
    decode: PassTime
    mid_context: Num
    decode_bytes_one_sequence: Num  # what one sequence's decode step reads at mid_context (the explanation's)


def request_path_s(r: ResolvedPlan) -> float:
    """Host time on a request's way to its first token inside the engine's own API, which a static run's TTFT
    includes but its prefill rate does not: TensorRT-LLM's LLM API / executor path from 0.12
    (efficiency.TRTLLM_REQUEST_PATH_S, fitted on MKTRTLAT-*); 0 elsewhere. A served run's front end
    (`serving.frontend_s`) counts it within its own figure."""
    from mlrig.estimators.engines import before

    if r.engine != "trt-llm" or before(r.workload.engine_version, eff.TRTLLM_REQUEST_PATH_FROM):
        return 0.0
    return eff.TRTLLM_REQUEST_PATH_S


def vllm_chunked_iterations_extra_s(r: ResolvedPlan, batch: Num, prompt: Num) -> Num:
    """What a static batch's prefill under vLLM's chunked prefill costs beyond one pass of all its tokens; 0 without
    chunking.

    Chunked prefill runs a prompt, or a batch of them, as J = ceil(batch x prompt / budget) iterations of at most
    `budget` tokens (max_num_batched_tokens: vllm/core/scheduler.py `_schedule_chunked_prefill` in V0, vllm/v1/core/
    sched/scheduler.py `Scheduler.schedule` in V1; the budget by release, `engines.vllm_prefill_budget`), each a forward
    pass of its own, so each pays again what a pass costs whatever its tokens: its per-layer launches and all-reduce
    latencies, and in V0, where a step holding a prompt runs eagerly, the host time of that eager pass
    (vllm_v0_prefill_host_layer_s). `prefill_pass(r, batch, prompt)` counts those once.
    - Prompts no longer than the budget (a burst of short prompts): the scheduler packs each iteration FCFS with
      budget / prompt of them (chunking the last), so the batch's prefill is the sum of those passes, J - 1 full
      ones and the rest, each priced by `prefill_pass` with its own tokens; the extra is that sum less the one pass.
      Where an iteration is host-bound (`pass_time`'s overlap: the host's eager layers longer than the GPU's share of
      so few tokens), each costs that floor, which one pass of all the tokens, GPU-bound, hides. Fit rows (vLLM 0.6.3
      on 8x MI300X, Llama-3.1-405B at TP 8, ~80-token prompts, V0's 512-token long-context budget, where an iteration
      prices at ~257 ms and one pass of 5,120 tokens at 1.4 s): LHLMI300X-0017 / -0020 / -0023 / -0026 (32-256
      prompts, 5-40 iterations; measured ~185-210 ms an iteration) +46 / +59 / +73 / +52 % -> +36 / +39 / +46 /
      +27 %; against: the 1,024- and 2,048-token budgets' bursts (-0050..-0062, -0095..-0101) a few points up
      (-8..+16 % -> +7..+22 %), -0014 +25 -> +31 %, and the burst past the cap -0029 (512 prompts, the first wave's
      prefill in `serving.offline_backlog`) -26 -> -37 %. Held out, checked only: DSTACK405B-0016..-0025 (the same
      node, 16-256 prompts) +8 / +14 / +30 / +22 % -> +1 / -0 / +10 / +2 %; -0028 (512, past the cap) -46 -> -53 %.
      An earlier form, one pass of all the tokens plus (J - 1) x a, a = 2 x pass(budget) - pass(2 x budget) (the part
      of a pass that does not grow with its tokens), counted a host-bound iteration's floor as a fixed cost on top of
      the GPU-bound pass (branch s37-vhbm: the sum of passes instead).
    - A prompt longer than the budget (its chunks attend to the prefix before them, which one pass of the whole prompt
      prices): (J - 1) x a, as above, chosen when it priced short prompts too (LHLMI300X-0011 / -0014, 8 / 16
      prompts in 2 / 3 iterations: 270 / 391 -> 447 / 745 ms against 468 / 749 measured; 487 / 984 ms now, with
      `serving.burst_stagger_s`); DSTACK405B's single 10,000-token prompt (held out) 3.8 -> 7.2 s with it (12.3 s
      measured: 20 iterations).
    The batch's first tokens still come at the end of its prefill, as `static_inference` has them (an offline burst
    served at once, `serving.serving_performance`'s one-wave branch; LHLMI300X's bursts at 1,024- and 2,048-token
    budgets measure median TTFTs at the whole burst's prefill: 3.28 / 2.77 s for 128 prompts). No factor: the pass
    model's own figures."""
    from mlrig.estimators.engines import vllm_prefill_budget, vllm_v1

    if r.engine != "vllm":
        return 0.0
    budget = vllm_prefill_budget(r.plan, r.gpu, vllm_v1(r.workload.engine_version), r.arch.max_position_embeddings,
                                 r.arch)
    if budget is None:
        return 0.0
    further = vec.maximum(0, -(-(batch * prompt) // budget) - 1)  # J - 1, J = ceil(batch x prompt / budget)
    fixed = max(0.0, 2.0 * prefill_pass(r, 1, budget).seconds - prefill_pass(r, 1, 2 * budget).seconds)
    long_prompts = further * fixed
    # Prompts no longer than the budget: each iteration is a pass of its own budget's worth of whole prompts
    # (FCFS packs it full, chunking the last one), so the burst costs the sum of those passes
    per_iter = budget / vec.maximum(1, prompt)  # prompts per full iteration
    last = vec.maximum(0.0, batch - further * per_iter)  # the last iteration's prompts
    summed = (further * prefill_pass(r, per_iter, prompt).seconds + prefill_pass(r, last, prompt).seconds
              - prefill_pass(r, batch, prompt).seconds)
    return vec.where(prompt <= budget, vec.maximum(0.0, summed), long_prompts)


def static_inference(r: ResolvedPlan, batch: Num, prompt_tokens: Num, output_tokens: Num,
                     offload: Num = 0.0) -> StaticInference:
    """A static batch: the prefill of `batch` prompts, which samples each one's first token, then
    `output_tokens` - 1 decode steps at the mean context (prompt + half the output); `offload` of the weights
    run from host memory (`offload_fraction`). The run lasts its TTFT (the prefill and the engine's request path,
    `request_path_s`) and the decode steps, so its throughput is batch x O / (TTFT + (O - 1) x TPOT), as a
    benchmark's duration over the tokens it counts (vLLM's benchmark_latency and `generate`, TensorRT-LLM's
    context phase and HF transformers' `generate` all take the first token from the prompt's forward pass).
    LHLMI300X-0001 (one request, vLLM on 8x MI300X: 66 tokens over 4.53 s with a 240 ms TTFT and 65.9 ms TPOT)
    shows the count: 0.240 + 65 x 0.0659 = 4.52 s."""
    prompt = vec.maximum(1, prompt_tokens)
    pre = prefill_pass(r, batch, prompt)
    mid_ctx = vec.maximum(1, prompt + output_tokens // 2)
    dec = decode_step(r, batch, mid_ctx, offload)
    pre_s = pre.seconds + vllm_chunked_iterations_extra_s(r, batch, prompt)
    if vec.is_array(offload) or offload > 0:
        pre_s = pre_s + _offload_time(r.weight_bytes * offload, _setup(r).engine, r.gpu,
                                      r.hardware.host_memory_bandwidth_gb_s)
    ttft_s = pre_s + request_path_s(r)
    total_s = ttft_s + vec.maximum(0, output_tokens - 1) * dec.seconds
    throughput = vec.where(output_tokens > 0, batch * output_tokens / total_s, batch * prompt / pre_s)
    return StaticInference(prefill_tok_s=batch * prompt / pre_s, decode_tok_s=1.0 / dec.seconds, ttft_ms=ttft_s * 1e3,
                           tpot_ms=dec.seconds * 1e3, throughput_tok_s=throughput, bound=dec.bound, decode=dec,
                           mid_context=mid_ctx,
                           decode_bytes_one_sequence=_decode_cost(r, _setup(r).engine, 1, mid_ctx).bytes)


def estimate_inference(r: ResolvedPlan, memory: Any | None = None, f: StaticInference | None = None) -> Performance:
    """Speed of a static inference batch (`static_inference`), with the explanation of its decode. Serving
    loads are `serving.serving_performance`, training `training_speed.estimate_training`; the one
    entry point for all three is `mlrig.estimators.speed.estimate_performance`. `f`: this plan's
    `static_inference` already worked out (one element of an array pass, `mlrig.grid`)."""
    w, gpu = r.workload, r.gpu
    b = w.batch_size
    off = offload_of(memory)
    if f is None:
        f = static_inference(r, b, w.prompt_tokens, w.output_tokens, off)
    dec = f.decode
    s = _setup(r)
    per_tok_gb = f.decode_bytes_one_sequence / 1e9
    eff_bw = bandwidth_efficiency(gpu, s.engine)
    tp, pp = r.hardware.tensor_parallel, r.hardware.pipeline_parallel
    split = ""
    if tp > 1:
        per_gpu_gb = per_tok_gb / tp
        rep = kv_read_replication(r.arch, tp)
        if rep != 1.0:  # ranks holding copies of the KV cache each read their own (`kv_read_replication`)
            per_gpu_gb += float(_decode_cost(r, s.engine, 1, f.mid_context).kv_bytes) * (rep - 1.0) / tp / 1e9
        split = f" ({per_gpu_gb:.2f} GB on each of {tp} GPUs in parallel)"
    elif pp > 1:
        split = f" (layers split over {pp} GPUs that run one after another)"
    ep = r.hardware.expert_parallel
    if ep > 1 and r.arch.is_moe:  # expert_parallel.expert_parallel_cost: the busiest GPU's experts set the pace
        split += f"; experts split whole over {ep} GPUs, the busiest reading more than its share"
    fmt_eff = format_efficiency(s.engine, r.precision.family, gpu)
    # the weights' de-quantisation lowers the bandwidth their reads reach (efficiency.FORMAT_DECODE_EFF)
    dequant = f" ({fmt_eff:.0%} of that for {r.precision.name} weights)" if fmt_eff < 1.0 else ""
    plain_gb = r.weight_parts.get("plain_16bit_read", 0.0) / 1e9
    if fmt_eff < 1.0 and plain_gb > 0:  # a mixed-width checkpoint (PassCost.plain_weight_bytes)
        dequant = (f" ({fmt_eff:.0%} of that for the {r.precision.name} experts; its {plain_gb:.2f} GB of 16-bit "
                   f"weights at the full figure)")
    # the mat-vecs' unpacking as ALU time (efficiency.MATVEC_DEQUANT_OPS, llama.cpp Metal)
    unpack_s = 0.0
    if eff.MATVEC_DEQUANT_OPS.get(s.engine, {}).get(r.precision.family):  # one scalar pass, only where it counts
        unpack_s = float(matvec_dequant_s(_decode_cost(r, s.engine, b, f.mid_context), gpu, s.engine,
                                          r.precision.family, b)) / max(1, tp)
    speedup = apple_alu_speedup(gpu)
    issue = f" x {speedup:g} dual issue" if speedup > 1 else ""
    alu = (f" against {unpack_s * 1e3:.1f} ms of ALU time unpacking {r.precision.name} weights "
           f"({eff.MATVEC_DEQUANT_OPS[s.engine][r.precision.family]:g} ops each at {gpu.fp32_tflops:g} FP32 TFLOPS"
           f"{issue})" if unpack_s > 0 else "")
    if hip_dmmv_f16(gpu, s.engine, r.precision.name, w.engine_version):
        dmmv = hip_dmmv_f16_fraction(gpu) or eff_bw
        if dmmv < eff_bw:  # the weights' mat-vecs (efficiency.py 1-HIP); the KV cache keeps eff_bw
            dequant = (f" ({dmmv:.0%} for its F16 weights: this build's F16 mat-vec fills half of each 64-lane "
                       f"wavefront)")
    hipblaslt = float(vllm_rocm_hipblaslt_matvec(gpu, s.engine, r.precision, w.engine_version, b))
    if hipblaslt < 1.0:  # efficiency.VLLM_ROCM_HIPBLASLT_MATVEC_REL: no skinny kernel takes this step's GEMMs
        dequant = f" ({hipblaslt:.0%} of that for its linear layers: hipBLASLt GEMMs, no skinny kernel at batch {b})"
    ollama = (w.engine or "").strip().lower() == "ollama"
    engine_label = f"Ollama: {s.engine} kernels, its runner's host time included" if ollama else s.engine
    comm = f" and {dec.comm_s * 1e3:.1f} ms of all-reduce" if dec.comm_s > 0 else ""
    expl = (
        f"decode reads {per_tok_gb:.2f} GB per token{split}; at {eff_bw:.0%}{dequant} of "
        f"{gpu.memory_bandwidth_gb_s:g} GB/s{alu} "
        f"plus {dec.overhead_s * 1e3:.1f} ms overhead{comm} that is ~{f.decode_tok_s:.0f} tok/s per sequence "
        f"({engine_label}, batch {b}): {dec.bound} bound"
    )
    if dec.bound == "host":
        expl += " (the host's Python and kernel launches take longer than the GPU's work)"
    if off > 0:
        expl += f"; {off:.0%} of weights offloaded"
    return Performance(
        prefill_tok_s=f.prefill_tok_s,
        decode_tok_s=f.decode_tok_s,
        ttft_ms=f.ttft_ms,
        tpot_ms=f.tpot_ms,
        throughput_tok_s=f.throughput_tok_s,
        bound=f.bound,
        explanation=expl,
        error_band=error_band(gpu),
    )


# The ± band of a figure whose own scope has too few published runs (planner.attach_validation widens
# it further to the nearest validated scope's p90): p90 of |pred/meas - 1| over every calibration row of
# that figure, all engines and hardware classes together (`mlrig validate --json --rows`, 2,827 rows at
# stop 23: decode 0.195, prefill 0.37, TTFT 0.73, TPOT 0.41, throughput 0.63; serving under load is the
# least certain, chiefly SGLang and MoE models at high load). tests/test_validation_runner.py checks it is
# not narrower than today's rows say. Stop 24 added held-out static-batch / offline sources (ROCm vLLM on
# MI300X, Argonne) and dstack's DeepSeek-R1 runs (DSTACKR1, fit): early-2025 vLLM and SGLang prefilled
# DeepSeek's FP8 weights far slower than the roofline says and ROCm vLLM 0.6 batches outgrew the KV pool,
# so TTFT and throughput p90s widened; the default bands say so. The MoE prefill paths (efficiency.BLOCK_FP8_GEMM_EFF,
# MOE_EXPERT_COMPUTE_REL) and the V0 engine read from dstack's '0.7.4.dev181' versions narrowed them again (all rows:
# TTFT p90 0.68, throughput 0.73). The fixed per-layer time of DeepSeek-style models on that early path
# (efficiency.EARLY_BLOCK_FP8_MLA_MOE_LAYER_S) narrowed throughput again (all rows: p90 0.65, TTFT 0.65, TPOT 0.38).
# Branch s25-gpustack: the drain of varied-length offline runs (serving.varied_offline_throughput) and SGLang's
# card-sized KV pool (engines.sglang_mem_fraction_static) bring GPUStack's SGLang rows in (all rows: throughput p90
# 0.58): 0.65. Branch s25-rocmvllm: AMD's offline tables read as output tokens/s, CDNA 3's measured GEMM rate
# (efficiency.AMD_CDNA3_GEMM_REL_EFF) and Argonne's vLLM 0.6.1 versions (all rows: throughput p90 0.50): 0.60.
# Branch s25-data2 added dstack's Llama-3.1-405B runs on MI300X / H100 (vLLM 0.6.3-0.6.4, enforce-eager offline runs,
# slow early-ROCm prefill) and an L4 closed-loop sweep (all rows: throughput p90 0.60, TTFT 0.69, TPOT 0.42):
# the bands still cover them, unchanged.
# Branch s25-eager: decode without CUDA / HIP graphs (`cuda_graphs`, efficiency.EAGER_HOST_S_PER_KERNEL) moved the
# vLLM HBM throughput and TPOT scopes closer; the bands are unchanged.
# Branch s27-trtbench: TensorRT-LLM's fixed-length offline waves (serving.fixed_length_waves) and FP8-cache decode
# read (efficiency.FP8_KV_DECODE_ATTN_BW_REL) bring the TRTBENCH70 rows in (all rows: throughput p90 0.51 -> 0.46):
# 0.55.
# Stop 28: vLLM V1's 50 µs per running sequence per step (efficiency.VLLM_V1_SEQ_STEP_OVERHEAD_S), 104 GH200 static-
# batch rows of Argonne's (held out, 5.7% median) and AccelMark's GDDR runs (held out) bring all rows' throughput p90
# to 0.415 (TTFT 0.675, TPOT 0.416, prefill 0.33, decode 0.18): 0.45. NCCL's per-step PCIe latency in vLLM's
# all-reduce (efficiency.PCIE_ALLREDUCE_PROTOCOLS, branch s28-pcietp) leaves throughput there and moves TPOT's p90
# to 0.39: TPOT unchanged. Finite rate runs of varied output lengths end in the drain of their longest requests
# (serving.varied_drain_s, branch s28-overload; dstack's 405B rate runs were 34-63 % high without it): throughput
# p90 0.401, the band stays 0.45.
# Branch s29-servedata added 684 serving rows (TensorRT-LLM 0.20 / 1.x behind trtllm-serve, whose front end costs
# 10-40 ms per first token that mlrig does not price; early-ROCm vLLM 0.6 on MI300X; closed loops on RTX 5070 Ti /
# 5090 / PRO 6000 and H100): all rows' TTFT p90 0.75 (throughput 0.41, TPOT 0.43, decode 0.18): TTFT 0.75.
# Branch s30-ttft: vLLM NVFP4's FP4 GEMMs (quant.FP4_GEMM_FROM), V0's eager prefill host time on upstream ROCm
# (efficiency.VLLM_V0_TP_PREFILL_HOST_LAYER_S_AMD) and its prefix-prefill attention (VLLM_ROCM_PREFIX_PREFILL_ATTN_REL):
# all rows' TTFT p90 0.598: TTFT 0.65.
# Branch s32-llamacppmulti: 46 multi-GPU llama.cpp rows (calibration/llamacpp_multigpu.jsonl; ROCm 7900 XTX / MI50
# and llama.cpp b7199 on A30 / L40S, whose one-GPU prefill mlrig prices 1.4-2.9x fast) bring all rows' prefill p90
# to 0.439 (decode 0.21): prefill 0.45.
# Branch s33-llamahbm: llama.cpp 2024 builds' de-quantise + cuBLAS prompt path (performance.llama_cpp_cublas_dequant)
# and current builds' MMQ on HBM cards (efficiency.LLAMA_CPP_MMQ_PREFILL_EFF_HBM) bring all rows' prefill p90 to
# 0.325: prefill 0.40.
# Branch s34-vllmhbm: closed loops of fixed lengths under chunked prefill paced by the budget (serving.
# chunk_paced_ttft_s) and an offline burst past the cap prefilled in chunk iterations (serving.offline_backlog):
# all rows' TTFT p90 0.524: TTFT 0.60.
# Branch s38-sglttft: SGLang 0.4.0-0.5.3 Poisson arrivals wait for the iteration already scheduled (serving.
# sglang_arrival_behind_queued_batch): all rows' TTFT p90 0.472 (0.484 on main before it): TTFT 0.55.
# Branch s38-vgddr: vLLM V1's one-shot custom all-reduce without the NVLink barrier figure (vllm_one_shot_allreduce)
# brings all rows' TPOT p90 to 0.313: TPOT 0.40.
# Branch s38-gddrdata: 274 held-out AccelMark GDDR rows (vLLM 0.7.3 / 0.19.1; tiny models, W8A8, RTX 5090 bursts)
# bring all rows' TTFT p90 to 0.590: TTFT 0.60.
# Branch s38b-quant: vLLM's W8A8 int8 GEMMs at the int8 rate (quant.INT8_GEMM_ENGINES) bring it to 0.572: TTFT 0.60.
ERROR_BAND: dict[str, float] = {
    "decode_tok_s": 0.20,
    "prefill_tok_s": 0.40,
    "ttft_ms": 0.60,
    "tpot_ms": 0.40,
    "throughput_tok_s": 0.45,
}
# Intel Arc decode: the two Vulkan rows behind efficiency.INTEL_GDDR_BW_EFF_CAP miss by 24 % each.
INTEL_GDDR_DECODE_BAND = 0.25


def error_band(gpu: GPU) -> dict[str, float]:
    """The ± band of each speed figure: ERROR_BAND, widened where the GPU's own class validates worse."""
    band = dict(ERROR_BAND)
    if is_intel_arc(gpu):
        band["decode_tok_s"] = max(band["decode_tok_s"], INTEL_GDDR_DECODE_BAND)
    return band


def speculative_speedup(k: int, acceptance_rate: float, draft_cost_ratio: float) -> float:
    """Leviathan, Kalman & Matias 2023 ("Fast Inference from Transformers via Speculative
    Decoding", Thm 3.8 / eq. 1): expected tokens per target step (1 - a^(k+1)) / (1 - a); each
    step costs k draft passes (ratio c of a target pass) + one target pass, so the speed-up is
    (1 - a^(k+1)) / ((1 - a)(k c + 1)). Assumes the target verify pass costs as much as a decode
    step (true while memory-bound)."""
    if k < 0 or not 0.0 <= acceptance_rate <= 1.0 or draft_cost_ratio < 0:
        raise MlrigError("speculative decoding needs k >= 0, 0 <= acceptance_rate <= 1, draft_cost_ratio >= 0")
    a = acceptance_rate
    tokens = float(k + 1) if a >= 1.0 else (1.0 - a ** (k + 1)) / (1.0 - a)
    return tokens / (k * draft_cost_ratio + 1.0)


def draft_cost_ratio(r: ResolvedPlan, draft: ModelArch) -> float:
    """Cost of one draft decode pass relative to one target pass (the plan's model), as the ratio of
    bytes each reads per token at batch 1 (weights + KV at the mean context): decode is memory-bound
    there. The draft runs at the target's precision and KV dtype."""
    ctx = r.workload.mean_decode_context
    t = decode_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, ctx).bytes
    d = decode_cost(draft, model_weight_bytes(draft, r.precision), r.kv_bytes_per_element, 1, ctx).bytes
    return d / t if t > 0 else 0.0


def verify_cost_ratio(r: ResolvedPlan, batch: int, k: int) -> float:
    """Time of the target's verify pass (k + 1 tokens for each of `batch` sequences) relative to a
    plain decode step, from the roofline. ~1 while memory-bound (Leviathan et al.'s assumption);
    it grows towards k + 1 once the batch makes decode compute-bound, which is why speculative
    decoding buys little at high concurrency."""
    s = _setup(r)
    ctx = r.workload.mean_decode_context
    step = decode_step(r, batch, ctx)
    one = _decode_cost(r, s.engine, batch, ctx)
    tokens = batch * (k + 1)
    weights = r.weight_bytes * read_fraction(r.arch, tokens)
    cost = PassCost(flops=one.flops * (k + 1), weight_bytes=weights, kv_bytes=one.kv_bytes, other_bytes=0.0,
                    attn_flops=one.attn_flops * (k + 1))
    return _timed(cost, r, s, tokens, decode=True).seconds / step.seconds


def speculative_speedup_at_batch(
    r: ResolvedPlan, batch: int, k: int, acceptance_rate: float, draft_ratio: float
) -> float:
    """Leviathan et al. 2023's speed-up with the verify pass priced by the roofline at `batch`
    concurrent sequences: tokens per step / (k c + v), v = `verify_cost_ratio` (v = 1 gives
    `speculative_speedup`). Can fall below 1: speculation then costs throughput."""
    base = speculative_speedup(k, acceptance_rate, draft_ratio)  # validates the arguments
    v = verify_cost_ratio(r, batch, k)
    return base * (k * draft_ratio + 1.0) / (k * draft_ratio + v)


def cpu_decode_tok_s(arch: ModelArch, precision: str | Precision, host_bw_gb_s: float = DEFAULT_HOST_BW_GB_S) -> float:
    """CPU-only llama.cpp decode: weights streamed from DRAM at ~65 % of its peak bandwidth."""
    if host_bw_gb_s <= 0 or not math.isfinite(host_bw_gb_s):
        raise MlrigError("host memory bandwidth must be a positive number of GB/s")
    bytes_ = model_weight_bytes(arch, precision) * read_fraction(arch, 1)
    return host_bw_gb_s * 1e9 * eff.BW_EFF["llama.cpp"]["host"] / bytes_
