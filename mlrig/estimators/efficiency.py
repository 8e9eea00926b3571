"""Calibrated efficiency factors of the performance model: few, physical, documented.

Every factor here is a fraction of a vendor peak (memory bandwidth, dense tensor rate) or a fixed
time, fitted by hand on mlrig/data/calibration only (inference_speed.csv, training_speed.csv)
and checked by `mlrig.validation.speed`. There is NO factor per individual GPU or per model: the
keys are engine families, hardware classes and weight-format families. The calibration rows that
justify each value are named next to it (row ids of the CSVs).

Engines differ in three physical ways that the factors capture:
1. how close their weight-streaming mat-vec kernels come to peak DRAM bandwidth (decode),
2. how close their GEMMs come to peak dense tensor throughput (prefill, batched decode),
3. fixed per-layer / per-step overheads (kernel launches, small element-wise kernels, sampling)
   that do not shrink with bandwidth: they dominate small models on fast GPUs.
"""

from __future__ import annotations

# --------------------------------------------------------------------------------------------
# Engine families. Names users type are normalised by `engine_family` in performance.py.
ENGINES = (
    "llama.cpp",
    "llama.cpp-2024",
    "llama.cpp-hip",
    "llama.cpp-metal",
    "vllm",
    "sglang",
    "trt-llm",
    "trt-llm-2023",
    "transformers",
    "exllamav2",
    "mlc",
    "lmdeploy",
    "tgi",
    "mlx",
    "gpt-fast",
    "tinychat",
    "tinychat-2024",
)

# Memory classes: what limits a mat-vec's achievable bandwidth is the memory system, not the brand.
#   gddr    : GeForce / workstation / AMD / Intel discrete cards (GDDR6/6X/7)
#   hbm     : datacentre cards (HBM2e/3/3e)
#   unified : Apple silicon and other SoCs with LPDDR shared memory (DGX Spark, Jetson)
#   host    : CPU DRAM (CPU-only inference, offloaded layers)


def memory_class(hardware_class: str, memory_type: str | None = None) -> str:
    """Map the catalog's hardware class (and memory type) to the memory class used below."""
    mt = (memory_type or "").lower()
    if hardware_class == "cpu":
        return "host"
    if "hbm" in mt:
        return "hbm"
    if "lpddr" in mt or hardware_class == "apple":
        return "unified"
    if hardware_class == "datacenter" and not mt:
        return "hbm"
    return "gddr"


# 1. Fraction of peak DRAM bandwidth reached by an engine's decode mat-vec kernels on 16-bit
#    weights (large matrices; per-layer overhead is separate, see LAYER_OVERHEAD_S).
#    llama.cpp CUDA: F16 decode of Llama-3-8B vs 70B on the same cards separates bandwidth from
#    per-layer overhead: GDDR cards (RTX 3090 XD-0082/XD-0088/XD-0034, RTX 4080 XD-0100/0106,
#    RTX 6000 Ada XD-0331/0337/0343, RTX A6000 XD-0499/0505/0511, A40 XD-0457/0463/0469) reach
#    ~85-90 % of peak; HBM cards (A100 PCIe XD-0373/0379/0385, A100 SXM XD-0415/0421/0427, H100
#    PCIe XD-0541/0547/0553) only ~55-70 % (fitted 0.60): llama.cpp's mat-vec grids are too small to keep 5 HBM
#    stacks busy at batch 1 (for its CUDA builds on NVIDIA HBM cards whose SMs x clock the catalog gives, the
#    SM-bound roof of 1'' below replaces the 0.60: branch s34-llamahbm). Apple (Metal, A4167-* and XD-018x..024x
#    F16/Q8_0 rows): ~80 %.
#    Serving engines (vLLM, SGLang, TensorRT-LLM) with CUDA graphs reach ~80 % on HBM at batch 1
#    (TensorRT-LLM TRT061-* throughput rows; vLLM/SGLang are assumed equal, no calibration rows).
#    GDDR refitted 0.86 -> 0.90 once decode attention read a GQA cache once per query head without
#    flash attention (UNFUSED_GQA_DECODE_ENGINES): that re-read had been absorbed here, leaving the XD-*
#    GDDR decode rows at a median predicted/measured of 0.93 (0.97 before) and the C15013-* GDDR rows
#    (current builds, tg128) at 0.95; 0.90 recentres both: `mlrig validate` decode llama.cpp gddr
#    7.3 % / 16 % -> 4.8 % / 13 %; held out, Jan's llama.cpp throughput rows (JANTRT-*) 9.9 % -> 8.3 %
#    median (p90 45 % -> 47 %: the eGPU row over Thunderbolt, which a plan cannot state).
BW_EFF: dict[str, dict[str, float]] = {
    "llama.cpp": {"gddr": 0.90, "hbm": 0.60, "unified": 0.80, "host": 0.65},
    "llama.cpp-2024": {"gddr": 0.90, "hbm": 0.60, "unified": 0.80, "host": 0.65},
    "llama.cpp-metal": {"gddr": 0.80, "hbm": 0.70, "unified": 0.80, "host": 0.65},
    "vllm": {"gddr": 0.82, "hbm": 0.80, "unified": 0.75, "host": 0.60},
    "sglang": {"gddr": 0.82, "hbm": 0.80, "unified": 0.75, "host": 0.60},
    "trt-llm": {"gddr": 0.85, "hbm": 0.82, "unified": 0.75, "host": 0.60},
    "transformers": {"gddr": 0.60, "hbm": 0.60, "unified": 0.55, "host": 0.50},  # eager PyTorch: no graphs;
    # hbm: fitted with LAYER_OVERHEAD_S's host time overlapped (HOST_LAUNCH_OVERLAPPED), see there
    "exllamav2": {"gddr": 0.82, "hbm": 0.75, "unified": 0.70, "host": 0.60},
    "mlc": {"gddr": 0.80, "hbm": 0.75, "unified": 0.80, "host": 0.60},
}

# 1'. llama.cpp's HBM figure above is its batch-1 mat-vec grids' shortfall. A prefill's GEMMs (hundreds of
#    tokens per pass, cuBLAS or MMQ tiles over the whole weight matrix) launch full grids and stream their
#    weight tiles as the serving engines' kernels do, so their weight reads take that HBM figure
#    (BW_EFF["vllm"]["hbm"], 0.80) in the prefill roofline (performance.pass_time). It matters near the
#    roofline's ridge (ROOFLINE_SMOOTHING_P), where F16 prompts of a few hundred tokens sit on HBM cards:
#    with 0.60 the XD-* F16 pp512 rows of Llama-3-8B on A100 PCIe / H100 PCIe came out 21-23 % slow while
#    Q4_K_M (a quarter of the bytes) fit, i.e. the model's Q4_K_M / F16 prefill ratio was 0.90-0.98
#    where the rows measure 0.75-0.77 (XD-0370/0376, XD-0538/0544), the GEMM-efficiency ratio that
#    QUANT_PREFILL_EFF = 0.80 states. With 0.80 they are 19-21 % slow (most of a pp512 pass there is
#    PREFILL_TOKEN_LAYER_S's per-token time); `mlrig validate` prefill llama.cpp hbm 21 % -> 19 % median.
LLAMA_CPP_PREFILL_GEMM_BW_EFF_HBM = BW_EFF["vllm"]["hbm"]

# 1''. Why llama.cpp's batch-1 decode reaches only ~half of an NVIDIA HBM card's bandwidth, and why that half is
#    not one fraction of the peak. The F16 rows of Llama-3-8B / Llama-2-7B (F16: no de-quantisation work) read
#    ~0.85 TB/s on every A100 whatever its HBM (A100 SXM4 40GB 1,555 GB/s ARGONNE-0286..0291; A100 PCIe 80GB
#    1,935 GB/s XD-0379..0381; A100 SXM4 80GB 2,039 GB/s XD-0421..0423), ~1.1 TB/s on an H100 PCIe (XD-0547..0549),
#    ~1.65 TB/s on H100 SXM and GH200 (ARGONNE-0295..0303, -0319..0327; 3.35 and 4.0 TB/s peaks): the speed follows
#    the SMs x clock (A100 108 x 1.41 GHz, H100 PCIe 114 x 1.755, H100 SXM / GH200 132 x 1.98: 152 / 200 / 261
#    SM-GHz), ~5.5-6.5 GB/s per SM-GHz, not the DRAM. By Little's law a kernel that keeps a bounded number of
#    loads in flight per SM (its occupancy and unrolling) moves a bounded number of bytes per cycle of memory
#    latency, and GA100/GH100 latencies in core cycles are alike, so the mat-vecs stream at most
#    LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE bytes per SM per cycle (`performance.llama_cpp_sm_bound_fraction`); the
#    DRAM roof is the GDDR figure above (BW_EFF["llama.cpp"]["gddr"], 0.90: what the same kernels reach where the
#    DRAM is the limit), and the two roofs combine as the roofline's (ROOFLINE_SMOOTHING_P). On GDDR cards the SM
#    roof lies near or above the DRAM roof (RTX 3090: 82 SMs x 1.70 GHz) and BW_EFF's fitted 0.90 holds it;
#    it is applied to NVIDIA HBM cards whose catalog FP32 peak and architecture give SMs x clock
#    (FP32_LANES_PER_SM); others keep BW_EFF's 0.60. Fitted on the fit rows of `mlrig validate` decode llama.cpp
#    hbm (XD-* A100 PCIe / SXM4 80GB and H100 PCIe, 1 and 4 GPUs; C15013-* A100 SXM4 / H100 SXM; MI50X2-* are AMD,
#    unchanged) by the median + p90 of |error| on a 0.25 grid: 8.75 B per SM-cycle (8: 0.074 + 0.169; 8.5: 0.061 +
#    0.163; 8.75: 0.055 + 0.156; 9: 0.062 + 0.156; 9.5: 0.070 + 0.175); the held-out rows chose nothing. It is 0.53
#    of the peak on an A100 SXM4 80GB, 0.62 on the 40GB, 0.63 on an H100 PCIe, 0.54 on an H100 SXM, 0.48 on a
#    GH200, 0.42 on an H200, 0.58 on an A30 (56 SMs x 1.44 GHz: 73 tok/s for ORCAQ3's single-GPU baseline, 74.6).
LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE = 8.75
LLAMA_CPP_SM_BOUND_ENGINES = ("llama.cpp", "llama.cpp-2024")  # the CUDA builds (not HIP, Vulkan, Metal)
# FP32 lanes (CUDA cores) per SM, by the catalog's architecture prefix, from NVIDIA's architecture whitepapers
# (Volta V100: 64 FP32 cores per SM; Ampere GA100: 64; Hopper GH100: 128). SMs x clock = FP32 peak / (2 x lanes):
# A100 19.5 TFLOPS / 128 = 108 SMs x 1.41 GHz; H100 SXM 67 / 256 = 132 x 1.98; A30 10.3 / 128 = 56 x 1.44.
FP32_LANES_PER_SM: dict[str, int] = {"Volta": 64, "Ampere (GA100)": 64, "Hopper": 128}
# 1-HIP. The same mat-vec kernel on AMD's wave64 GPUs (GCN, CDNA) in llama.cpp's HIP builds before the F16 mat-vec was
#    rewritten. Until ggml-org/llama.cpp PR #10318 ("CUDA: remove DMMV, consolidate F16 mult mat vec", merged about
#    2024-11-17, its review thread's last comments) a batch-1 F16 mat-vec ran `dequantize_mul_mat_vec<GGML_TYPE_F16>`
#    (ggml/src/ggml-cuda/dmmv.cu, read at ggerganov/llama.cpp 0c85a869: `convert_mul_mat_vec_f16_cuda` launches
#    `block_dims(WARP_SIZE, GGML_CUDA_MMV_Y, 1)`, one row per block, each thread 2*GGML_CUDA_DMMV_X / WARP_SIZE = 2
#    halves per step; ggml-cuda.cu `ggml_cuda_mul_mat` at 044fc38b picks it for F16 when src1->ne[1] == 1, since
#    mul_mat_vec_q takes only quantised types), and ggml-cuda/common.cuh defines `WARP_SIZE 32` for every target (still
#    at 03ac153a, early 2025, beside its own note "GCN/CNDA, wave size is 64"). HIP runs a 32-thread block on a wave64
#    GPU as one 64-lane wavefront with half its lanes masked off; the mmv.cu kernel that replaced it sizes blocks by
#    `ggml_cuda_get_physical_warp_size()` (64 there) and up to 128-256 threads, and quantised types went through
#    mul_mat_vec_q with 4 warps (128 threads: two full wavefronts) per block on GCN / CDNA (mmvq.cu at 175391d4,
#    `mul_mat_vec_q_cuda`: `nwarps = 4` where cc < CC_RDNA2) in both periods. So only F16 weights in the old builds meet
#    the masked lanes. An NVIDIA SM issues one 32-thread warp instruction per cycle in each of its 4 sub-partitions (128
#    lanes a cycle; Volta / Ampere / Hopper whitepapers); a GCN / CDNA CU has 4 SIMD16 units, each taking 4 cycles over
#    a wave64 instruction (AMD's Vega and CDNA 3 instruction-set guides, chapter 1: one wavefront instruction per SIMD
#    every 4 cycles), i.e. 64 lanes a cycle, 32 of them live under this kernel. Taking the kernel's rate as proportional
#    to the live lanes its instructions carry, a CU streams LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE x 32 / 128 bytes per
#    cycle (`performance.hip_dmmv_f16_fraction`), against the DRAM roof BW_EFF["llama.cpp-hip"]["gddr"] by the
#    roofline's p-norm: a CU roof of 1.40 TB/s on an MI300X (304 CUs x 2.1 GHz; 0.25 of its 5.3 TB/s with the DRAM
#    roof), 0.23 TB/s on an MI50 (60 x 1.725 GHz). Not fitted: the 32 / 128 is the two architectures' issue widths, the
#    8.75 NVIDIA's fit (1''), whose rows ran this kernel family too; no fit row of this setup exists (the MI50X2-* rows
#    are 2025 builds: mmv.cu, not affected; no public non-reserved CDNA F16 run of a 2024 build was found). An
#    assumption, not a measurement: a latency-bound reading (Little's law) would scale by wave slots, grid size and
#    memory latency instead. Held out, ARGONNE-0304..0318 (MI300X, llama.cpp master Sept 2024, F16) came out +90..+219 %
#    before and +6..+63 % after (median +17 %); the rows still fast are the 2048 + 2048-token runs and Mixtral
#    (attention over a long cache without flash attention, MoE routing): not addressed here. Taken for month labels up
#    to LLAMA_CPP_HIP_DMMV_F16_UNTIL (a 2024-11 label is read as the new kernel: merged mid-month); build numbers are
#    mapped by LLAMA-CPP-BUILDS below: up to LLAMA_CPP_HIP_DMMV_F16_UNTIL_BUILD the old kernel.
HIP_DMMV_LIVE_LANES_PER_CU_CYCLE = 4 * 16 // 2  # 4 SIMD16 per CU, half of each wave64 live under 32-thread blocks
NVIDIA_WARP_LANES_PER_SM_CYCLE = 4 * 32  # 4 sub-partitions issuing a 32-thread warp instruction each cycle
HIP_DMMV_BYTES_PER_CU_CYCLE = (LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE * HIP_DMMV_LIVE_LANES_PER_CU_CYCLE
                               / NVIDIA_WARP_LANES_PER_SM_CYCLE)
LLAMA_CPP_HIP_DMMV_F16_UNTIL = (2024, 10)
LLAMA_CPP_HIP_DMMV_F16_UNTIL_BUILD = 3887  # LLAMA-CPP-BUILDS: 2024-10-05, before PR #10318 (mid-November 2024)
# 1-HIP-MMID. Batch-1 MoE decode in llama.cpp's HIP builds before the expert mat-vecs took the routing ids on the
#    device. Until ggml-org/llama.cpp PR #13014 ("CUDA: noncont MMVQ + batched bs1 MUL_MAT_ID", JohannesGaessler,
#    opened 2025-04-18, merged in April 2025) `ggml_cuda_mul_mat_id` copied the router's expert ids to the host
#    (cudaMemcpyAsync device -> host, then cudaStreamSynchronize) and launched one `ggml_cuda_mul_mat` per routed
#    expert (each its own src1 quantisation and mat-vec, with the row gathers around them); the PR's description:
#    batch-1 MUL_MAT_ID in MMV / MMVQ "reduces the number of kernel launches needed by a factor equal to the number of
#    used src0 matrices. It also eliminates the need for a call to cudaStreamSynchronize". The September 2024 code
#    (ggml-cuda.cu at 6481eb4c, read for this) had the same shape at one token: ids to the host, a stream sync, then a
#    loop over the token's experts calling ggml_cuda_mul_mat. Each synchronisation drains the GPU's queue, so the
#    launches after it are not hidden behind kernels still running: host time, not GPU time. Priced per routed expert
#    a pass touches, per MUL_MAT_ID (a llama.cpp MoE FFN has three: gate, up and down experts, llm_build_moe_ffn),
#    per MoE layer (`performance.hip_mmid_fallback_layer_s`), the synchronisation's share folded into the per-expert
#    figure. Fitted on the PR's own table (LCPPHIPPR-0001 / -0002, RX 6800, DeepSeek-V2-Lite Q4_0 tg128: 27.26 t/s on
#    master, 52.74 with the PR): 1/27.26 - 1/52.74 s = 17.7 ms per token over 26 MoE layers x 3 MUL_MAT_ID x 6 routed
#    experts = 37.9 us each; its dense control (Llama 8B Q4_0, LCPPHIPPR-0003 / -0004: 62.02 / 60.90 t/s) does not
#    move. Taken from the difference of the two columns, so not from mlrig's (poor, +179 %) figure for that model
#    with the PR: MLA + MoE decode on HIP has further costs not modelled here (both rows are marked anomaly and not
#    scored: the PR's author noted that in these runs DeepSeek-V2's RoPE ran on the CPU, a master bug fixed inside
#    the PR; that cost is common to both columns, so their difference still isolates the fallback). One GPU (RDNA 2
#    on a desktop host);
#    the host's speed is part of the figure. HIP builds only (the CUDA builds' MoE rows were fitted without it, and
#    their launches are cheaper); month labels up to LLAMA_CPP_HIP_MMID_SYNC_UNTIL (a 2025-04 label is read as the
#    old path: the PR's "master" column is mid-April) and build numbers up to LLAMA_CPP_HIP_MMID_SYNC_UNTIL_BUILD
#    (LLAMA-CPP-BUILDS below; later builds and no label: the current path). Held out, not used here: ARGONNE-0313..0315
#    (Mixtral F16 on an MI300X, September 2024) came out +36..+63 % before.
HIP_MMID_FALLBACK_S_PER_EXPERT = 37.9e-6
LLAMA_CPP_MUL_MAT_ID_PER_MOE_FFN = 3  # gate, up and down expert matrices: one GGML_OP_MUL_MAT_ID each
LLAMA_CPP_HIP_MMID_SYNC_UNTIL = (2025, 4)
LLAMA_CPP_HIP_MMID_SYNC_UNTIL_BUILD = 4599  # LLAMA-CPP-BUILDS: 2025-01-30, before PR #13014 (April 2025)
# 1-HIP-MOE. Fixed host time per MoE layer per pass in llama.cpp's HIP builds (`performance.hip_moe_layer_s`): a
#    llama.cpp MoE FFN (llm_build_moe_ffn) launches, beside a dense FFN's three mat-vecs and activation, the router's
#    mat-vec, its softmax / sigmoid (and bias add), the top-k argsort and its view, the weights' get_rows (and their
#    normalisation: sum_rows, div), the weighting mul, the adds that sum the k experts' outputs and, where the model
#    has them, the shared expert's mat-vecs: ~10-20 more kernels per layer. The HIP build replays no graphs (see
#    LAYER_OVERHEAD_S["llama.cpp-hip"] below), so each costs its host launch on the step's critical path, as a dense
#    layer's kernels do in LAYER_OVERHEAD_S. One constant, not a kernel count: the fit rows show no trend with k (Llama
#    4 Scout, top-1 with a shared expert, is the slowest per layer). Fitted on the HIP MoE decode fit rows of builds
#    after PR #13014 (no synchronising fallback, 1-HIP-MMID): RX7900X6-0006/-0008/-0010/-0012 (gpt-oss-20b / -120b
#    MXFP4 on 2-6 RX 7900 XTX), AMDLCPP-0005..0007 (DeepSeek-V3 Q4_K_M on 8 MI300X, b6652), MI50X2-0022/-0024 (Llama 4
#    Scout Q3_K_M on 2 MI50) and LCPPHIPPR-0005/-0006 (gpt-oss-20b on one MI100 at 32k context, September 2026): the
#    value minimising their median |error|, scanned in 5 us steps (0 / 10 / 30 / 50 / 60 / 80 us: 12 / 8 / 9 / 6 / 7
#    / 10 %). At 50 us gpt-oss comes out -3 / -15 / -4 / -5 % on the 7900 XTX (was +12 / -6 / +10 / +8 %) and -13 %
#    on the MI100 (was -1 %), DeepSeek-V3 b6652 +3..+6 % (+19..+21 %), Scout +13 / +14 % (+21 / +20 %). The rows
#    disagree by model: gpt-oss wants ~0-10 us, DeepSeek-V3 and Scout 60-100 us. A likely cause, not modelled:
#    llama.cpp fused the softmax -> top-k -> get_rows routing into one kernel for softmax-gated MoE (PR #16130,
#    2025-09-20, "CUDA: add a fused top-K MoE kernel"; gpt-oss's softmax-after-top-k in PR #16649, 2025-10-18), which
#    the gpt-oss builds here post-date, while DeepSeek-V3's sigmoid + bias routing and Scout's top-1 sigmoid were not
#    covered then; mlrig's model cards carry no gating function to key it on. AMDLCPP-0001..0003 (the DeepSeek-V3 runs
#    on b5997) are left out of the choice: AMD's blog attributes part of b6652's gain to "a substantial reduction
#    (~10x) in the number of calls to the hipMemcpyAsync API" upstream, a cost not modelled; they stay +19..+21 %
#    (were +36..+39 %). Every pass (a prefill pass launches the same kernels once). HIP builds only: CUDA builds
#    replay these launches in a graph where MoE allows it, and their MoE rows were fitted without it. LCPPHIPPR-0002
#    (DeepSeek-V2-Lite on an RX 6800, +179 % before) keeps most of its gap: MLA + MoE on HIP costs more, not
#    identified here.
HIP_MOE_LAYER_S = 50e-6
# 1-HIP-MMQ-TILE. Column tiles of a MoE prompt pass's expert GEMMs in llama.cpp's HIP build
#    (`performance.mmq_expert_rows_factor`). Since ggml-org/llama.cpp PR #13199 ("CUDA: batched+noncont MMQ,
#    refactor bs>1 MoE code", JohannesGaessler, 2025-04-29) `ggml_cuda_mul_mat_id` hands a micro-batch's routed rows,
#    sorted by expert, to ONE MMQ launch (`ggml_cuda_mul_mat_q` with ids): the grid runs every expert's column tiles of
#    mmq_x token columns, a tile past its expert's count returns at once ("if (jt*mmq_x >= col_diff)"), and a tile is
#    computed whole however few of its columns hold tokens (mmq.cuh `mul_mat_q` / `mul_mat_q_process_tile`, read at
#    4227c9be, 2025-08-14, the llama.cpp vendored in llama-cpp-python 0.3.16; the same in ROCm/llama.cpp's later
#    `mul_mat_q_switch_J`, mmq.cuh at 8202ec27). mmq_x is chosen for the whole launch, not per expert: the smallest
#    multiple of 8 up to `get_mmq_x_max_host` that covers the launch's column count in the fewest tiles
#    (`mul_mat_q_case`: from `args.ncols_y`, the routed rows, at 4227c9be; from `ncols_max`, the micro-batch's tokens,
#    after the device-side ids helper; both 128 for a 512-token micro-batch). get_mmq_x_max_host is 128 with MFMA (CDNA)
#    and 64 on AMD's dp4a GPUs (GCN, RDNA 1-3). So DeepSeek-V3's 512-token micro-batch (8 of 256 experts: ~16 rows per
#    expert) computes 128-column tiles: ~8x the routed rows' arithmetic; Llama-4-Scout's (1 of 16: 32 rows) 64-column
#    tiles, 2x. Which HIP GPUs take MUL_MAT_ID through MMQ at a 512-token micro-batch (mmq.cu
#    `ggml_cuda_should_use_mmq`): CDNA 3 always (`if (GGML_CUDA_CC_IS_CDNA3(cc)) return true;`, ggml-org/llama.cpp PR
#    #14949, July 2025, on the MFMA MMQ of PR #14624; the ROCm/llama.cpp fork the AMDLCPP b5997 rows were built from
#    carries the same gate today; its code at b5997 was not read); GCN and RDNA 1-2 always (the final `(!RDNA4 && !RDNA3
#    && !CDNA) || ...`). RDNA 3 / 4 and CDNA 1-2 are left out: at 512 tokens they take the per-expert fallback (`ne11 <
#    MMQ_DP4A_MAX_BATCH_SIZE` fails) or a gate by type and batch not modelled here. Month labels before these PRs keep
#    the old path (1 here), as do build numbers up to LLAMA_CPP_MMQ_ID_UNTIL_BUILD (GCN, RDNA 1-2) and
#    LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD (CDNA 3; LLAMA-CPP-BUILDS below); later builds and no label take the current
#    code. No fitted figure: tile widths from
#    the source. The NVIDIA CUDA build runs the same MMQ code: 1-CUDA-MMQ-TILE below. Later upstream PRs size the tile
#    by the mean rows per expert on RDNA 3 / 4 only (ggml-org/llama.cpp #28552, 2026-09; for NVIDIA #26977 and for CDNA
#    #28709 were open when read): not modelled. Fit rows moved (not chosen by them): AMDLCPP-0004 / -0008 (DeepSeek-V3
#    Q4_K_M pp512 on 8 MI300X) +443 / +364 % -> +27 / +35 % (with 1-HIP-IDS), MI50X2-0021 / -0023 (Scout Q3_K_M on 2
#    MI50) +38 / +17 % -> 0 / -16 %.
HIP_MMQ_X_MAX_MFMA = 128  # mmq.cuh get_mmq_x_max_host: amd_mfma_available
HIP_MMQ_X_MAX_DP4A = 64  # mmq.cuh get_mmq_x_max_host: other AMD GPUs
HIP_MMQ_ID_MFMA_ARCHITECTURES = ("CDNA 3",)  # should_use_mmq: CDNA3 -> MMQ at every batch size (PR #14949)
HIP_MMQ_ID_DP4A_ARCHITECTURES = ("GCN", "RDNA 1", "RDNA 2")  # should_use_mmq's final return: MMQ at every batch
LLAMA_CPP_HIP_MMQ_ID_MFMA_FROM = (2025, 8)  # PR #14949 merged at the end of July 2025
LLAMA_CPP_HIP_MMQ_ID_DP4A_FROM = (2025, 5)  # PR #13199 merged at the end of April 2025
# the latest builds known to predate those PRs (LLAMA-CPP-BUILDS): up to them the old path, later builds the current
LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD = 5593  # 2025-06-05, before PR #14949
LLAMA_CPP_MMQ_ID_UNTIL_BUILD = 4599  # 2025-01-30, before PR #13199 (HIP dp4a and CUDA alike)
# 1-CUDA-MMQ-TILE. The same column tiles in llama.cpp's CUDA build on NVIDIA GPUs (`performance.mmq_expert_tile`,
#    `performance.mmq_expert_rows_factor`): 1-HIP-MMQ-TILE's launch is the CUDA code (ggml-cuda is compiled for HIP).
#    Read at 4227c9be (2025-08-14, vendored in llama-cpp-python 0.3.16): `ggml_cuda_mul_mat_id` (ggml-cuda.cu) sends a
#    MUL_MAT_ID of more than one token to `ggml_cuda_mul_mat_q` with the ids whenever `ggml_cuda_should_use_mmq(type,
#    cc, ne12)` holds, and that is true at every batch size for the MMQ types (Q4_0..Q8_0, MXFP4, K-quants, IQ-quants;
#    not F16 / BF16) once `turing_mma_available(cc)` (NVIDIA, compute capability >= 7.5: Turing, Ampere, Ada, Hopper,
#    Blackwell), where `get_mmq_x_max_host` is 128; on Pascal with dp4a (cc 6.1: GP102-GP108) MMQ is taken too
#    (`!fp16_mma_hardware_available(cc) || ...`) with mmq_x up to 64 (the highest compiled arch is below Volta). Volta
#    (fp16 MMA, no int8 MMA) takes MMQ only below MMQ_DP4A_MAX_BATCH_SIZE = 64 tokens and GP100 (cc 6.0, no dp4a) never:
#    at a prompt's micro-batch both run the per-expert cuBLAS fallback, not tiled here. With stream-k (NVIDIA Volta+) a
#    tile past its expert's rows is skipped (`if (jt*mmq_x >= col_diff)`) and a partly filled one is computed whole, as
#    on HIP; the widest tiles fit the shared memory of every MMA GPU (Q3_K at mmq_y = mmq_x = 128: ~62 KB of Turing's 64
#    KB per block). Before PR #13199 (llama-cpp-python 0.3.8, llama.cpp at 7841fc72, March 2025, read for this)
#    `ggml_cuda_mul_mat_id` copied the ids to the host, synchronised, and looped over the experts: each expert's rows
#    gathered (k_copy_src1_to_contiguous) and multiplied by their own `ggml_cuda_mul_mat`, whose MMQ picked mmq_x for
#    that expert's row count, so no tile wider than its rows (under 8-16 columns of padding: not modelled); its host
#    sync and launches per expert are not priced here either. Month labels before LLAMA_CPP_CUDA_MMQ_ID_FROM keep that
#    path (factor 1), as do build numbers up to LLAMA_CPP_MMQ_ID_UNTIL_BUILD (LLAMA-CPP-BUILDS below; later builds
#    take the current code); "llama.cpp-2024" (builds before CUDA graphs, mid-2024) is the old path. Upstream PR
#    #26977 ("CUDA:
#    Improve selection of routed MoE MMQ tile widths", anavp-nvidia, 2026-08-12) sizes the tile by the mean rows per
#    expert on Ampere (>= 8.6), Ada and Blackwell; it was open when read (its description: "Once the mean columns per
#    expert reaches 43 (Blackwell) or 64 (Ampere/Ada) the formula returns 128, which is the width upstream already
#    picks"), so the current code is the 128-column tile. No fitted figure. Fit rows moved (not chosen by them): the
#    only llama.cpp-family MoE prompt rows on NVIDIA, LMSYSSPARK-0001 / -0003 / -0005 (Ollama, gpt-oss-20b MXFP4 on a
#    DGX Spark, an RTX PRO 6000 Blackwell and an RTX 5090; prompt length and Ollama version not stated), were
#    already too fast and move toward their measurements: +194 / +164 / +186 % -> +130 / +90 / +98 % (each expert's
#    64 rows in a 128-column tile: 2x the routed arithmetic); no CUDA MoE prompt row contradicts the tiles.
CUDA_MMQ_X_MAX_MMA = 128  # mmq.cuh get_mmq_x_max_host: turing_mma_available
CUDA_MMQ_X_MAX_DP4A = 64  # mmq.cuh get_mmq_x_max_host: NVIDIA below Volta
CUDA_MMQ_ID_MMA_ARCHITECTURES = ("Turing", "Ampere", "Ada", "Hopper", "Blackwell")  # cc >= 7.5: MMQ at every batch
CUDA_MMQ_ID_DP4A_ARCHITECTURES = ("Pascal (GP102", "Pascal (GP104", "Pascal (GP106", "Pascal (GP107",
                                  "Pascal (GP108")  # cc 6.1: no FP16 MMA -> MMQ at every batch; GP100 (6.0) not
LLAMA_CPP_CUDA_MMQ_ID_FROM = (2025, 5)  # PR #13199 merged at the end of April 2025
# IQ1_M's expert tensors (type 29) are not in should_use_mmq's list at 4227c9be (IQ1_S is): cuBLAS, not tiled
LLAMA_CPP_MMQ_NOT_TAKEN = ("iq1_m",)
# 1-HIP-IDS. The host-side sort of a MoE prompt pass's expert ids in llama.cpp's HIP build before ggml-org/llama.cpp
#    PR #15525 ("CUDA: MoE helper in device code, better tile sizes", JohannesGaessler, opened 2025-08-23: "moves the
#    helper code for the MoE MMQ kernel from host code to device code. This eliminates the need for
#    synchronization"). Before it, every MUL_MAT_ID of more than one token (mmq.cu `ggml_cuda_mul_mat_q` with ids, and
#    the per-expert fallback in ggml-cuda.cu `ggml_cuda_mul_mat_id` alike; read at 4227c9be, 2025-08-14, and at
#    79e0b68c, 2025-07-16, the llama.cpp vendored in llama-cpp-python 0.3.16 / 0.3.14) copied the ids to the host,
#    cudaStreamSynchronize'd, sorted them by expert in a triple loop (`for i02 < ne02` experts, `for i12 < ne12`
#    tokens, `for iex < n_expert_used`, break on a match: ~E x T x k comparisons), copied the result back and
#    synchronised again. The GPU has drained at the first synchronisation and waits for the host's loop, so the loop is
#    on the pass's critical path: E x T x k x HIP_HOST_ID_SORT_S_PER_COMPARISON per MUL_MAT_ID (3 per MoE FFN), per
#    micro-batch (`performance.hip_moe_host_sort_s`). 1 ns a comparison (a few cycles of a ~3-4 GHz host core for a
#    load, compare and branch): an assumption from the loop's shape, not fitted. DeepSeek-V3 at 512 tokens: 256 x 512 x
#    8 = 1.05 M comparisons, 1.05 ms per MUL_MAT_ID, 0.18 s over 58 MoE layers x 3. The AMDLCPP fit rows' two builds
#    (DeepSeek-V3 pp512 on 8 MI300X: b5997 439.14 t/s, before the PR; b6652 514.07 t/s, after it) differ by 1.166 -
#    0.996 = 0.170 s a pass, 0.93 ns a comparison, though other host costs changed between them too (AMD's Dec 2025
#    blog credits b6652 with ~10x fewer hipMemcpyAsync calls). Builds: month labels up to
#    LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL (a 2025-08 label is read as the old code: the PR is from the month's last
#    week) and build numbers up to LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD, the latest build known to predate it (b5997:
#    AMD's Sept 2025 blog shows that build's llama-server answering with "created": 1754694593, 2025-08-08); later
#    builds and no label: the current code. The CUDA build (engine "llama.cpp" on NVIDIA) ran the same code (ggml-cuda
#    is one source for both: the 4227c9be and 79e0b68c reads above are its files) and is priced alike, from PR
#    #13199 (month labels from LLAMA_CPP_CUDA_MMQ_ID_FROM, builds after LLAMA_CPP_MMQ_ID_UNTIL_BUILD) to PR #15525
#    (the same bounds as HIP's). Before #13199 `ggml_cuda_mul_mat_id` counted each expert's rows on the host and
#    launched that expert's gather, GEMM and scatter before counting the next (ggml-cuda.cu at 6481eb4c, September
#    2024: `for i02 < n_as` { count over `ids->ne[1]` x `n_ids` ... launches }), so the counting overlaps the GPU's
#    work on earlier experts, and is left unpriced on CUDA (the per-expert launches are not priced either,
#    1-CUDA-MMQ-TILE); the HIP builds keep their month rule. No CUDA MoE prompt row of those builds is in the
#    calibration (the LMSYSSPARK Ollama rows state no version: the current code), so no CUDA row moves.
HIP_HOST_ID_SORT_S_PER_COMPARISON = 1e-9
LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL = (2025, 8)
LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD = 5997
# LLAMA-CPP-BUILDS. llama.cpp's build number is its master commit count (engines.py), so a change's first build is its
#    merge commit's count. That count is not read here for the PRs above (the repository's history is not at hand);
#    each gate instead takes the latest build KNOWN to have existed before the PR was merged: a build number up to it
#    takes the old code, a later one the current code (as an unlabelled build does), so a build between that bound
#    and the merge is read as the current code. The builds' dates come from node-llama-cpp's release notes, whose
#    every release states "Shipped with llama.cpp release bNNNN", the newest release when it was built (so that build
#    existed on the release's date): github.com/withcatai/node-llama-cpp/releases v3.1.0 (2024-10-05): b3887;
#    newreleases.io/project/github/withcatai/node-llama-cpp/release/v3.4.3 (2025-01-30): b4599;
#    github.com/axonzeta/node-llama-cpp/releases/tag/v1.1.2 (2025-05-09): b5331; .../v1.4.0 (2025-06-05): b5593;
#    newreleases.io/.../node-llama-cpp/release/v3.14.2 (2025-10-26): b6845. Bounds, by PR (merge month, latest build
#    known before it, earliest build known to include it):
#    - #10318, F16 mat-vec rewrite (mid-November 2024): b3887 (LLAMA_CPP_HIP_DMMV_F16_UNTIL_BUILD); b4599;
#    - #13014, batch-1 MUL_MAT_ID without the host sync (April 2025): b4599 (LLAMA_CPP_HIP_MMID_SYNC_UNTIL_BUILD);
#      b5331;
#    - #13199, batched MoE MMQ (end of April 2025): b4599 (LLAMA_CPP_MMQ_ID_UNTIL_BUILD); b5331;
#    - #14949, CDNA 3 MMQ at every batch size (end of July 2025): b5593 (LLAMA_CPP_HIP_MMQ_ID_MFMA_UNTIL_BUILD); b6652
#      (AMD's December 2025 blog build, after it);
#    - #15525, the device-side ids helper (end of August 2025): b5997 (LLAMA_CPP_HIP_HOST_ID_SORT_UNTIL_BUILD, above);
#      b6652.
#    The windows between the two bounds (b3888-b4598, b4600-b5330, b5594-b6651, b5998-b6651) are where a build number
#    may be read as the wrong side; a month label is exact to the month.
# FP32 lanes per CU behind the catalog's FP32 peak (CUs x lanes x 2 x clock), by architecture prefix, first match:
# GCN and CDNA 1-2 64 (MI50 13.3 TFLOPS = 60 x 64 x 2 x 1.725 GHz; MI210 22.6 = 104 x 64 x 2 x 1.7); CDNA 3-4 count
# 128 (MI300X 163.4 = 304 x 128 x 2 x 2.1: AMD quotes the dual-issue vector FP32 rate). Used for CUs x clock only.
FP32_LANES_PER_CU: dict[str, int] = {"CDNA 3": 128, "CDNA 4": 128, "CDNA": 64, "GCN": 64}
# vLLM on GDDR cards: 0.82 above was assumed (no rows); its batch-1 decode rows on GDDR, now fit rows, all
#    come out 10 % slow at it and recentre at 0.90, llama.cpp's GDDR figure (a CUDA-graph decode step of
#    cuBLAS / Marlin mat-vecs streams the weights as llama.cpp's do): Qwen2.5-7B AWQ (Marlin) on an RTX 5060
#    Ti, 78.8-79.1 tok/s against 71.0-71.3 (HOMELAB5060-0001..0004, vLLM 0.11), and Qwen2.5-7B bf16 on an RTX
#    A6000, 45.7 tok/s against 41.4 (LDSINGH-0004, the same source's TPOT 21.9-22.3 ms at 1-8 users,
#    LDSINGH-0002/-0006/-0009/-0012, against 24.3-24.9). Set after the engines copied from vLLM's table
#    below (TGI, gpt-fast) took theirs: they keep 0.82.
VLLM_GDDR_BW_EFF = 0.90

# 1a. Apple silicon by bus width and die count: one unified factor left base/Pro chips (68-273 GB/s,
#    64-256-bit LPDDR) 10-17 % too slow and Max/Ultra chips too fast in llama.cpp Metal decode
#    (A4167-* and XD-018x..024x). The narrow chips' GPU reaches ~90 % of the figure. A Max (one die,
#    400-546 GB/s, 512-bit) reaches less: its fabric does not hand the full figure to one block
#    (AnandTech, "Apple M1 Max performance review", 2021-10-25, "Huge Memory Bandwidth, but not for every
#    Block"). An Ultra (two Max dies joined by UltraFusion, 800-819 GB/s; Apple newsroom, "Apple unveils
#    M1 Ultra", 2022-03-08) less again: half its memory sits behind the die-to-die link. F16 tg128 of
#    Llama-2-7B shows the three tiers before any de-quantisation work: M2 / M2 Pro 0.82-0.89 of the figure
#    (A4167-0050/0056/0062), M2 Max 0.80-0.81 (A4167-0068/0074), M2 Ultra 0.66-0.68 (A4167-0080/0086), M1
#    Ultra 0.56-0.61 (A4167-0034/0040), counting the per-layer time (LAYER_OVERHEAD_S) the Max and Ultra
#    rows reach ~0.85 and ~0.75. Fitted together with MATVEC_DEQUANT_OPS on the fit rows only (the
#    k-quant rows had hidden the Max's figure: fitted alone it was 0.75, with the de-quantisation time
#    left inside it). Any Apple chip above UNIFIED_TWO_DIE_MIN_GB_S is an Ultra. Fitted for llama.cpp
#    only: MLX's rows (mostly wide chips) reach 0.85, and other engines keep their one "unified" figure.
UNIFIED_NARROW_MAX_GB_S = 300.0
UNIFIED_TWO_DIE_MIN_GB_S = 600.0
# (narrow, wide one-die, two-die)
UNIFIED_BW_EFF_BY_WIDTH: dict[str, tuple[float, float, float]] = {"llama.cpp-metal": (0.90, 0.85, 0.75)}

# 1b. Intel Arc (GDDR) cards reach far less of their peak bandwidth than NVIDIA or AMD GDDR cards:
#    llama.cpp Vulkan tg128 of Llama-2-7B Q4_0 gives 36 % on the Arc A770 (V10879-0016) and 59 %
#    on the Arc B580 (V10879-0018). No single class factor fits both (the cards differ 1.6x);
#    0.50 splits the miss evenly (A770 +24 %, B580 -24 % in `mlrig validate`). It applies to
#    llama.cpp only (`INTEL_CAPPED_ENGINES`): vLLM's XPU build (Intel's own SYCL/oneDNN kernels) on an
#    Arc Pro B60 decodes gpt-oss-20b at 34-54 ms TPOT (VLLMARC-*, vLLM blog 2025-11-11), which the cap
#    made 78-103 ms; without it the engine's own GDDR figure applies (those rows, first held out, now
#    fit this scope). Gaudi (HBM) is not capped: no rows. A hardware-class factor fitted on two rows
#    from one source, so Arc decode figures carry a wider band (performance.INTEL_GDDR_DECODE_BAND).
INTEL_GDDR_BW_EFF_CAP = 0.50
INTEL_CAPPED_ENGINES = ("llama.cpp",)  # engine families starting with these names

# 2. Fraction of the peak dense tensor rate reached by prefill GEMMs (16-bit weights).
#    llama.cpp uses cuBLAS with FP16 accumulation for F16 GEMMs, so on GeForce cards the
#    reference peak is the FP16-accumulate rate (2x the FP32-accumulate figure the catalog holds;
#    see `performance.peak_tflops`). Rows: F16 pp512/pp1024 of RTX 3090 XD-0085, RTX 4080 XD-0103
#    (~50 % of FP16-acc peak), RTX 6000 Ada XD-0334, RTX A6000 XD-0502, A40 XD-0460 (~30-40 %),
#    A100 PCIe XD-0376 (~40 %), H100 PCIe XD-0544 (~23 %: llama.cpp's mma.sync kernels do not use
#    Hopper's wgmma path). Apple (Metal): M1/M2 F16 pp512 rows A4167-00xx against the GPU's FP16
#    rate. TensorRT-LLM: TTFT rows TRT061-0039..0057.
#    "llama.cpp-2024" (the XD-* builds b2836-b2843): its Q4_K_M prompts ran the same cuBLAS FP16 GEMM as F16
#    behind a de-quantise copy (performance.llama_cpp_cublas_dequant), so both formats fit one GEMM rate, refitted
#    when QUANT_PREFILL_EFF left that path (it had stood in for the copy, and F16 rows came out ~20 % slow at the
#    0.50 / 0.55 fitted with it): hbm 0.65 centres the single-GPU fit rows (A100 PCIe / SXM4, H100 PCIe; Q4_K_M
#    XD-0370..0372, -0382..0384, -0412..0414, -0424..0426, -0538..0540, -0550..0552 signed median +1 %, F16
#    XD-0376..0378, -0544..0546 -6 %); gddr 0.60 the GeForce / RTX / A40 ones (F16 +0 %, Q4_K_M -3 %).
COMPUTE_EFF: dict[str, dict[str, float]] = {
    "llama.cpp": {"gddr": 0.70, "hbm": 0.40, "unified": 0.70, "host": 0.50},
    "llama.cpp-2024": {"gddr": 0.60, "hbm": 0.65, "unified": 0.70, "host": 0.50},
    "llama.cpp-metal": {"gddr": 0.55, "hbm": 0.50, "unified": 0.85, "host": 0.50},
    "vllm": {"gddr": 0.55, "hbm": 0.55, "unified": 0.45, "host": 0.40},
    "sglang": {"gddr": 0.55, "hbm": 0.55, "unified": 0.45, "host": 0.40},
    "trt-llm": {"gddr": 0.60, "hbm": 0.60, "unified": 0.45, "host": 0.40},
    "transformers": {"gddr": 0.40, "hbm": 0.65, "unified": 0.35, "host": 0.30},  # hbm: OPTGPTQ-0031..0050
    # (Llama-2-13B prefill of 512 tokens on an A100 SXM4 at batch 1-16, fp16 / GPTQ / NF4: 43-52 % of peak
    # over the whole pass, element-wise kernels included). Those kernels are PREFILL_TOKEN_LAYER_S below
    # (~25 ms of the 83 ms per 512-token sequence at batch 4-16), so the GEMMs themselves reach ~0.65 of
    # the peak (~200 TFLOPS, cuBLAS on large fp16 GEMMs). It was 0.50, the whole-pass rate, which counted
    # the element-wise time twice (prefill 29 % / 36 % median / p90 error -> 6 % / 17 %).
    "exllamav2": {"gddr": 0.45, "hbm": 0.40, "unified": 0.40, "host": 0.30},
    "mlc": {"gddr": 0.45, "hbm": 0.40, "unified": 0.50, "host": 0.30},
}

# 3. Fixed time per transformer layer per forward pass. "llama.cpp-2024" is llama.cpp CUDA before
#    CUDA graphs were enabled for single-GPU decode (builds < ~b3000, mid-2024; the XD-* rows);
#    current builds ("llama.cpp", the scoreboard rows C15013-*) launch a step as one graph.
#    The overhead is kernel launches and small element-wise kernels (norms, RoPE, residual adds,
#    KV writes), in seconds. llama.cpp CUDA: solving
#    t = bytes / (eff x bandwidth) + layers x tau on the 8B (32 layers) and 70B (80 layers)
#    Q4_K_M/F16 pairs above gives tau ~ 0.08-0.11 ms on RTX 3090, RTX 6000 Ada and H100 PCIe.
#    Engines with CUDA graphs (vLLM, SGLang, TensorRT-LLM) launch a whole step at once: ~20 us.
#    llama.cpp Metal encodes every kernel of every layer into command buffers on the CPU each token
#    (ggml-metal has no graph replay): 120 us, fitted on the fit rows with MATVEC_DEQUANT_OPS (the M1
#    Max and M3 Max 8B / 70B Q4_K_M pairs XD-0187/0199 and XD-0230/0242 separate it from the per-weight
#    time); 90 us before the de-quantisation time was separated.
LAYER_OVERHEAD_S: dict[str, float] = {
    "llama.cpp": 25e-6,
    "llama.cpp-2024": 90e-6,
    "llama.cpp-metal": 120e-6,
    "vllm": 25e-6,
    "sglang": 25e-6,
    "trt-llm": 20e-6,
    "transformers": 750e-6,  # host time, overlapped with the GPU's: HOST_LAUNCH_OVERLAPPED below
    "exllamav2": 40e-6,
    "mlc": 40e-6,
}

# HF transformers with quantised weights (GPTQ through AutoGPTQ / Optimum, int8 bitsandbytes): each
# quantised linear is a Python module launching its own kernels; host time per call beyond nn.Linear's
# (part of the host time that HOST_LAUNCH_OVERLAPPED overlaps with the GPU). GPTQ kernels: ~5 us - with
# the host time per layer overlapped, Llama-2-13B GPTQ decodes at batch 1 on an A100 at fp16's speed,
# as measured (ExLlama v1 OPTGPTQ-0004, ExLlamaV2 -0052, Marlin -0053: 29.7-34.5 tok/s; fp16 27.1-32.9,
# -0002/-0051): both host-bound. (65 us when that time was added to the GPU's instead.)
TRANSFORMERS_QUANT_LINEAR_S = 5e-6
# bitsandbytes' 4-bit linear (NF4 / FP4) costs more per call: Linear4bit casts its input and bias,
# unpacks the quant state and calls its kernels through ctypes (bitsandbytes functional.py, gemv_4bit /
# dequantize_4bit). Llama-2-13B FP4 decodes at 22.2 tok/s at batch 1 (OPTGPTQ-0054: 45 ms, against GPTQ's
# 29-32 ms for the same bytes): ~55 us per linear more than GPTQ's. One source (the optimum benchmark,
# bitsandbytes 0.41.1); an independent report has NF4 batch-1 decode at 0.75x fp16 (Mistral-7B, 36.5 vs
# 48.6 tok/s, bitsandbytes-foundation/bitsandbytes issue #611, 2023-11-22); this gives 0.7x here.
BNB4_LINEAR_S = 55e-6

# GPTQ kernels under HF transformers (AutoGPTQ / optimum) at more than one row per linear (batched decode).
#    Their fused 4-bit kernels stream and de-quantise the weights once per block of input rows, and above a row
#    count they reconstruct a 16-bit weight and call cuBLAS instead:
#    - ExLlama (v1), transformers' default kernel (GPTQConfig `exllama_config` version 1): q4_matmul gives each
#      input row its own block row, so the weights are read and de-quantised once per row; from
#      `matmul_recons_thd` = 8 rows it reconstructs (AutoGPTQ's autogptq_post_init: "Using the default from
#      exllama repo here. matmul_recons_thd = 8").
#    - ExLlamaV2 (`exllama_config={"version": 2}`): the GPTQ q_gemm kernel takes BLOCK_M_SIZE_MAX = 8 rows per
#      weight pass and reconstructs above MAX_Q_GEMM_ROWS = 50 (q_gemm.cu, as AutoGPTQ and vLLM carry it).
#    - Marlin (`use_marlin=True`): one pass for all rows (a mixed-precision GEMM built for batches to ~32):
#      no extra cost, and so "gptq" under transformers from 4.49 (GPTQModel's kernel choice) is not priced.
#    (rows per weight pass, rows from which it reconstructs). Rows: Llama-2-13B on an A100 SXM4 (optimum
#    benchmark): ExLlama v1 from batch 4 slower than fp16 where Marlin / fp16 are not (OPTGPTQ-0016/0022/0028
#    against -0014/0020/0026), ExLlamaV2 at batch 16 48.1 ms per step against Marlin's 31.7 and its own 32.6
#    at batch 8 (OPTGPTQ-0082 / -0084 / -0074): the second 8-row pass.
GPTQ_KERNEL_ROWS: dict[str, tuple[int, int]] = {"exllama": (1, 8), "exllamav2": (8, 51)}
# Rate of one such pass relative to the engine's batch-1 mat-vec rate (BW_EFF x FORMAT_DECODE_EFF): each pass
#    de-quantises every weight again and multiplies it into up to 8 rows, arithmetic the 4-bit stream does not
#    hide. Fitted on the rows above: ExLlama v1 at batch 4 (OPTGPTQ-0016, 4 passes) wants ~0.6, ExLlamaV2 at
#    batch 16 (OPTGPTQ-0081/0082, 2 passes of 8 rows) ~0.38; 0.5 between them leaves both within ~15 %.
#    At batch 1 the pass hides under the host's launches (HOST_LAUNCH_OVERLAPPED), as the rows show.
GPTQ_FUSED_PASS_REL_EFF = 0.5
# Reconstruction: the 4-bit weight read, a 16-bit copy written and read back by cuBLAS (as bitsandbytes'
# BNB4_DEQUANT_BYTES_PER_PARAM), at DEQUANT_COPY_BW_EFF.
GPTQ_RECONS_BYTES_PER_PARAM = 4.0

# bitsandbytes 4-bit (NF4 / FP4) under HF transformers: its fused gemv_4bit kernel serves a forward of
# one token only; for more tokens (batch > 1 decode, prefill) matmul_4bit de-quantises each linear's
# whole weight to a 16-bit copy and calls cuBLAS (bitsandbytes autograd/_functions.py, matmul_4bit), so
# every step also writes and reads that copy: 2 + 2 bytes per quantised parameter beyond the 4-bit
# read. Llama-2-13B NF4 on an A100 SXM4 decodes batch 2-16 in 68-82 ms per step against fp16's 30-40
# ms (OPTGPTQ-0062/0070/0078/0086 vs -0056/0064/0072/0080): ~2.3x fp16's weight traffic, as
# (0.56 + 4) / 2 bytes per parameter gives; at batch 1 (gemv) NF4 takes 45 ms (OPTGPTQ-0054).
BNB4_DEQUANT_BYTES_PER_PARAM = 4.0
# Fraction of peak bandwidth that copy moves at (bitsandbytes' blockwise de-quantisation: 4-bit unpack,
# code-table lookup and absmax scale per element, then cuBLAS reading the result). Fitted on the NF4
# batched decode rows, where it dominates the step: OPTGPTQ-0062/0070/0078/0086 (batch 2-16, 68-82 ms)
# come out 6-14 % fast at 0.50, 15-23 % at the eager mat-vecs' 0.60; the batch-1 prefill (-0034) -1 %.
DEQUANT_COPY_BW_EFF = 0.50
# ExLlamaV2 prompts (performance.exllama_reconstruct_bytes): above MAX_Q_GEMM_ROWS = 32 rows
#    (exllamav2_ext/config.h) each 4-bit matrix is rebuilt as FP16 in a scratch buffer and multiplied by
#    cublasHgemm, 2 bytes written and 2 read per parameter, and the HGEMM runs at the FP16 rate
#    (DEQUANT_TO_FP16_GEMM_ENGINES: no QUANT_PREFILL_EFF). Rows: Llama-3-8B 4-bit on an RTX 4090 (TinyChat
#    README, TINYCHAT-0075..0079) takes 40 / 51 / 77 / 139 / 294 ms for 256 / 512 / 1,024 / 2,048 / 4,096
#    tokens: ~48 us per token (~0.89 of the 330 TFLOPS FP16-accumulate peak) on top of ~28 ms per pass,
#    the time 28 GB of copy traffic (6.98 B parameters x 4 bytes) takes at the card's full 1,008 GB/s.
#    Fitted at 1.0 of peak (0.82, the engine's decode figure, leaves the rows 6-20 % slow): the scratch of
#    an attention matrix (8-32 MB in FP16) is read back by cuBLAS from the 72 MB L2 before it reaches
#    DRAM, so the copy moves somewhat less than 4 bytes per parameter; 1.0 of peak stands for that. Its
#    element-wise work per token-layer is fused (RMSNorm, RoPE, flash attention): PREFILL_TOKEN_LAYER_S
#    0.1 us, as TinyChat 2.0's, where the inherited 0.8 us was half the per-token time. Without the copy
#    the 256-token row came out 1.56x fast and the 2,048-token row 0.75x slow; with it -11..+12 %.
EXLLAMA_MAX_Q_GEMM_ROWS = 32
EXLLAMA_RECONSTRUCT_BYTES_PER_PARAM = 4.0
DEQUANT_COPY_BW_EFF_BY_ENGINE: dict[str, float] = {"exllamav2": 1.0}
# MLC-LLM's batched decode with quantised weights (performance.mlc_padded_gemm_rows): its compiler builds each
#    de-quantise+matmul for a dynamic number of rows and dispatches on it at run time
#    (python/mlc_llm/compiler_pass/low_batch_specialization.py, LowBatchGemvSpecialize, added 2024-03-08
#    @3f05a1f5 and unchanged to 2026): up to 8 rows a GEMV-style schedule (buckets of 2 / 4 rows) that
#    streams the 4-bit weights, above 8 the default dlight GEMM rule `dl.gpu.Matmul`, which on CUDA sm_70+
#    hands a float16 GEMM to MatmulTensorization, whose schedule (python/tvm/dlight/gpu/matmul.py of
#    mlc-ai/relax, read at 27417fc; the 2024-04 pin ced07e8 is not stored: i_factors [None, 1, 4, 2] x
#    16-row MMA tiles) pads the row count to a multiple of 128 (`sch.pad_einsum`). So from 9 running
#    sequences a decode step does the arithmetic of 128 rows, as a 128-token prefill of the same GEMMs does,
#    priced with the engine's own prefill GEMM figures (COMPUTE_EFF["mlc"] = TinyChat's on GDDR, which MLC's
#    prefill rows TINYCHAT-0066..0069 match; FP16_ACCUMULATE_4BIT). Structure from the source only: no factor
#    is fitted to it. Later upstream TVM schedules sm_80+ GEMMs with other tiles; not separated by release.
#    Checked by the held-out RTX 3090 serving rows
#    (ZHJUNQIN-0037..0045, MLC 0.1.dev1166, Llama-3-8B q4f16_1): their median TPOT jumps from 12.8 ms at
#    ~3 running sequences to 36 ms at ~13 and 53 ms at ~44 (output throughput x TPOT), where a weights-read
#    step stays near 10 ms. With the GEMV's two weight passes at 5-8 rows (MLC_LOW_BATCH_GEMV_BUCKETS), the GEMM's
#    waves (MLC_GEMM_COL_TILE) and that release's separate prefill steps and top-p sort (engines.py) the 5 req/s
#    row (-0045) comes out +1 % (was -44 %). Left: at 2 req/s (-0042, -50 %) the fluid rate model settles at
#    ~5-6 running sequences (16 ms steps keep up), while the run sat at ~13 (36 ms): above 8 rows the slow step
#    holds more requests in flight, a second steady state that the deterministic model does not reach from an
#    idle engine. A discrete-event run of the same step times with Poisson arrivals (branch s38-mlc, not product
#    code) gives a 22-26 ms median there: the fluctuations across the 8-row jump explain part of it, not all.
MLC_LOW_BATCH_GEMV_MAX_ROWS = 8
# The low-batch GEMV's buckets (LowBatchGemvSpecialize: `low_batch_range = [2, 8]`, `buckets = [2, 4]`: up to 2 rows
#    the bucket-2 schedule, up to 8 the bucket-4 one). The schedule (dlight.gpu.LowBatchGEMV, python/tvm/dlight/gpu/
#    low_batch_gemv.py of apache/tvm at 072f027, `sch_inner_reduction`: `by, batch = sch.split(batch_loop,
#    factors=[None, batch_pad]); sch.bind(by, "blockIdx.y")`, the de-quantisation computed at the reduction loop
#    inside each block) gives each block of `bucket` rows its own pass over the whole weight, so 5-8 rows stream
#    the 4-bit weights twice (performance.mlc_gemv_weight_passes). The blocks along blockIdx.x (the output
#    columns) are launched before the next row block's, so the second pass finds the first's weights gone from
#    L2 (6 MB on an RTX 3090; a 72 MB RTX 4090 L2 may keep part of them: not priced). Structure from the source
#    (the mlc-ai/relax pin ced07e8 of the 2024-04 nightlies is not stored; apache/tvm's later copy read), no
#    factor fitted.
MLC_LOW_BATCH_GEMV_BUCKETS = (2, 4)
# The padded GEMM's thread blocks (MatmulTensorization, python/tvm/dlight/gpu/matmul.py of mlc-ai/relax at 27417fc:
#    i_factors [None, 1, 4, 2] and j_factors [1, None, 4, 2] of 16 x 16 wmma tiles, so a block computes a 128 x 128
#    output tile over the whole K with 16 warps (512 threads) and double-buffered 128 x 64 fp16 A and B tiles in
#    dynamic shared memory (64 KB): one block per SM on GA102 / AD102 (100 KB of shared memory per SM). A linear of
#    N outputs at M rows is ceil(M / 128) x ceil(N / 128) blocks, run in waves of one block per SM; the last wave's
#    idle SMs cost time as if the GEMM did that much more arithmetic (performance.mlc_gemm_wave_util). At 128 rows
#    Llama-3-8B's o_proj and down_proj (N = 4,096) are 32 blocks: 39 % of an RTX 3090's 82 SMs, 25 % of an RTX
#    4090's 128. This is what separates MLC's 256-token prompt on a 4090 (TINYCHAT-0065: 9.1k tok/s) from its
#    512-2,048-token ones (12.2-12.6k), and a 10-sequence decode step on an RTX 3090 (MLCI2004-0002: 30.7 ms, the
#    arithmetic of 128 rows) from a full-wave rate. Structure from the source and the GPUs' SM counts (catalog
#    `sm_count`; GPUs without one are not de-rated); COMPUTE_EFF["mlc"]["gddr"] is refitted with it (see there).
MLC_GEMM_COL_TILE = 128
MLC_GEMM_ROW_TILE = 128
# MLC-LLM nightlies from its GPU sampler to the pivot renormalization (engines.MLC_SORT_TOP_P_FROM_DEV, 2024-03-12, to
#    MLC_SORT_TOP_P_BEFORE_DEV, 2024-05-04) sample top-p by argsorting each running
#    sequence's whole fp32 probability vector every decode step (performance.mlc_top_p_sort_s). The argsort of a
#    batch is TVM's thrust segmented sort (src/runtime/contrib/thrust/thrust.cu, `thrust_sort`, the "back-to-back
#    stable_sort_by_key strategy"): of batch x vocab elements, a copy of the values (8 bytes read + written per
#    element), an int64 order vector filled twice (16), a stable radix sort of float keys with int64 values (CUB's,
#    4 passes of 8-bit digits reading and writing 12 bytes, and a histogram read: ~100), the indices gathered and
#    the segment ids built (~32), a second stable sort keyed by the int32 segment ids carrying (float, int32) pairs
#    (copied into and out of contiguous temporaries, 4 passes of 12 bytes each way: ~130), then the model
#    library's `take_sorted_probs` gather, `renormalize_by_top_p` and `sample_with_top_p` (~32): ~320 bytes per
#    element, streamed at the engine's decode bandwidth fraction (radix sort is memory-bound: CUB's one-sweep sort
#    moves its passes at most of DRAM bandwidth). The README's own failure fits the first sort's buffers: at
#    --max-batch-size 64 thrust asked the workspace for 99,121,664 bytes, 12.08 per element of 64 x 128,256, the
#    float key and int64 value double buffer. Byte count from the source, not fitted; the two cudaMalloc / cudaFree
#    of the thrust::device_vector temporaries per step are not priced. Requests are taken to sample with
#    top_p < 1 (MLC takes top_p from the model's generation config when the request has none: Llama-3-Instruct's
#    0.9; python/mlc_llm/protocol/openai_api_protocol.py `openai_api_get_generation_config`).
MLC_TOP_P_SORT_BYTES_PER_ELEMENT = 320.0

# Prefill time per token per layer not covered by the GEMM roofline (element-wise kernels on the
# activations, non-flash attention softmax, row-wise de-quantisation), seconds. XD-* F16 pp512
# rows leave 60-85 us per token over 32 layers after the GEMM term (RTX 3090, A6000, A40, A100,
# H100 PCIe): ~2 us per token-layer; scaled by hidden size / PREFILL_REF_HIDDEN.
PREFILL_REF_HIDDEN = 4096  # hidden size of Llama-3-8B, the model of the rows above
PREFILL_TOKEN_LAYER_S: dict[str, float] = {
    "llama.cpp": 0.5e-6,
    "llama.cpp-2024": 2.0e-6,
    "llama.cpp-metal": 2.0e-6,
    "vllm": 0.3e-6,
    "sglang": 0.3e-6,
    "trt-llm": 0.2e-6,
    "transformers": 1.0e-6,
    "exllamav2": 0.8e-6,
    "mlc": 0.8e-6,
}

# Fixed time per decode step (sampling, detokenisation, scheduler), seconds. Order-of-magnitude
# figures from the engines' own profiling notes; not separable from LAYER_OVERHEAD_S in the rows.
STEP_OVERHEAD_S: dict[str, float] = {
    "llama.cpp": 0.3e-3,
    "llama.cpp-2024": 0.3e-3,
    "llama.cpp-metal": 0.3e-3,
    "vllm": 1.0e-3,
    "sglang": 0.8e-3,
    "trt-llm": 0.5e-3,
    "transformers": 2.0e-3,
    "exllamav2": 0.5e-3,
    "mlc": 0.5e-3,
}

# Host-side time per running sequence per decode iteration (scheduling, block tables, sampling,
# detokenising and streaming each sequence's output): it grows with the batch, unlike the per-step
# figure above. vLLM (Python scheduler and output processing): its offline runs on one A100 80GB at
# 50-232 running sequences (DLVLLM-0076/0078/0080/0082/0086) leave 96-110 us per sequence per step
# above the roofline; at 10-20 sequences the same rows leave more (fixed costs). With the roofline
# taken per kernel group and smoothed near the ridge (performance.pass_time, ROOFLINE_SMOOTHING_P) the
# same rows leave 92 / 78 / 63 / 55 us at 50 / 75 / 100 / 200 sequences and -30..+26 us at 256: the
# figure, kept, over-states vLLM < 0.12's host time beyond ~75 sequences (those TPOT rows are 7-59 %
# high). Engines with a C++
# batch loop (TensorRT-LLM, LMDeploy TurboMind) show none in their rows (LMDEPLOY-* TPOT at 64-256
# users within ~12 %): 0. vLLM from 0.12 leaves none of it exposed (async scheduling hides it from 0.14; the 0.13
# rows show none either: performance.host_seq_step_s), so it applies to older vLLM releases only. SGLang (overlapped
# scheduler since 0.4): no rows, 0. TGI (before 3.0): 330 us, below.
SEQ_STEP_OVERHEAD_S: dict[str, float] = {"vllm": 100e-6}
# vLLM's V1 engine (default from 0.8.0, `engines.vllm_v1`; up to 0.11, performance.host_seq_step_s) does less host
#    work per running sequence per step than V0: it keeps a persistent batch whose input tensors it updates by
#    the step's differences, builds them with NumPy, and detokenises / streams in the API-server process,
#    beside the engine's busy loop (vLLM blog 2025-01-27, "vLLM V1: A Major Upgrade to vLLM's Core
#    Architecture": "Persistent Batch", "Optimized execution loop & API server"). 50 us, from the V1 fit rows:
#    a per-sequence cost c caps a step's output at 1 / c tokens/s whatever the GPU, and AMDPERF-0001 (rocm/vllm
#    0.9.0.1, Llama 3.1 70B FP8 on 8 x MI300X, 3,200 prompts) measured 16,582 output tokens/s, so c <= 60 us
#    there (AMDPERF-0009/-0017, 0.10.1/0.10.2: <= 72 / 76 us); DLVLLM-0081/-0082 (0.10.1.1, Qwen2-7B on one A100
#    80GB, 200 sequences: 4,443 tok/s, TPOT 42.0 ms) leave ~55 us per sequence above the roofline (the V1 rows
#    of DLVLLM at 50-232 sequences, 55-92 us, fell with the batch: fixed costs spread). The V0 rows (ACCELMARK
#    0.7.3, DSTACKCMP 0.6.x, DSTACKR1 0.7.x) keep SEQ_STEP_OVERHEAD_S["vllm"]: at 75 or 130 us instead of 100
#    their throughput / TPOT errors grow.
VLLM_V1_SEQ_STEP_OVERHEAD_S = 50e-6
# LMDeploy's PyTorch engine before its v0.6.0 refactor (PR #2104, "Refactor pytorch engine": CUDA graphs, the
#    engine loop rewritten; `engines.LMDEPLOY_PYTORCH_GRAPHS_FROM`) handles every running sequence in Python after
#    every decode step: v0.2.3's `Engine.update_running` (lmdeploy/pytorch/engine/engine.py) appends each
#    sequence's token, counts down its remaining length and runs `_stopping_criteria` on it one sequence at a time,
#    and the step's outputs go back to each request through the engine's response queue; v0.3-v0.5 keep that per
#    step inside their 15-iteration blocks (`_async_step_background`: sampling, `_batch_stopping_criteria`, the
#    tokens brought to the host and queued every iteration). FITTED on the two PyTorch-engine sources of that era,
#    both at the engine's default batch cap of 128 (PytorchEngineConfig max_batch_size=128 before v0.6): LMDI1165
#    (v0.2.3, Llama-2-13B on an A100-SXM4-80GB, 128 users: 705 output tok/s against 1,687 priced without it, i.e.
#    ~181 ms per decode iteration where the GPU's is ~76 ms: ~0.82 ms per sequence) and LMDPR1621 (v0.4.2 PR branch,
#    DeepSeek-V2-Lite MoE on one A100, a 1,000-prompt burst: 965 tok/s against 3,656, ~0.76 ms per sequence): two
#    models (dense / MoE) and two releases leave the same time per sequence, which a GPU-kernel shortfall would not
#    (it scales with the model's work). The held-out LMDTQH200 (v0.12.3) is outside it. Both rows run at 128
#    sequences, so a cost per step rather than per sequence is not excluded by them; per sequence is taken because
#    the code's loops are per sequence. Scanned on those fit rows' output throughput: 0.7 / 0.8 / 0.9 ms put
#    LMDI1165 at +10 / +2 / -5 % and LMDPR1621 at +6 / -4 / -12 % (LMDPR1621's median TTFT, not used to choose it,
#    at -2 % with 0.8 ms). Not applied to TurboMind (C++ loop: SEQ_STEP_OVERHEAD_S note).
LMDEPLOY_PYTORCH_OLD_SEQ_STEP_S = 0.8e-3
# Share of vLLM V0's host time per running sequence per step (SEQ_STEP_OVERHEAD_S) that multi-step scheduling
#    (`--num-scheduler-steps n`, performance.host_seq_step_s) spreads over its n steps. Multi-step runs the
#    scheduler and builds the model inputs once per n steps, but each of the n steps still brings its sampled
#    tokens back to the host and turns them into Python objects (vllm/worker/multi_step_model_runner.py,
#    ModelOutput.pythonize / maybe_pythonize, called per step for every sequence of the batch), and the engine
#    processes each step's outputs (appending the token, detokenising, checking stop conditions) as it does
#    without multi-step. FITTED on LHLMI300X's paired runs of AMD's fork (ROCm/vllm 0.6.4.dev5, Llama-3.1-8B at
#    TP 8 on 8 x MI300X, benchmark_throughput, 1,000 prompts): the same nine input/output lengths without and with
#    --num-scheduler-steps 15 (LHLMI300X-0159..0167 against -0168..0176) gain 1.17-2.03x (median 1.75x); fitted on
#    that ratio, which cancels what the two runs share (GPU work, prefill), so the base rows' own error does not
#    choose it. Spreading all of it over the 15 steps (the former model) put every pair's gain at 1.6-1.9x the
#    measured one; 0.6 puts the median pair at 0.98 (0.5 / 0.7: 0.87 / 1.09), every pair within 0.88-1.02, since
#    the rows say that neither run chunked its prompts (the notebook's logs: `chunked_prefill_enabled=False` at
#    max_seq_len 131,072; with the plans leaving it unset, the runs without multi-step had been priced with V0's
#    long-context chunking and the pairs with 2,048- and 4,096-token prompts came out 1.5-1.7x high). Checks, not
#    used to choose it: DSTACKCMP's multi-step rows (fit, rocm/vllm 0.6.4, 405B FP8 at TP 4 / 8) go from 14 % to 8 %
#    median throughput error and their TPOT from 13 % to 5 % (their TTFT from 7 % to 12 %).
VLLM_MULTI_STEP_AMORTISED_SHARE = 0.6
# Ollama runs llama.cpp's ggml kernels (engine family llama.cpp) from its own Go runner, which per generated
#    token builds the step's ggml graph through cgo and samples on the CPU: the last position's logits (a
#    vocabulary's worth of floats) come back to the host, and sample/samplers.go fills a token slice as long as
#    the vocabulary and passes it through a top-k heap in Go (ollama/ollama, sample/samplers.go and
#    transforms.go). llama-bench, where the llama.cpp factors come from, samples nothing. Host time per
#    sequence per step, beside SEQ_STEP_OVERHEAD_S. Fitted on Ollama's gpt-oss-20b decode (LMSYS blog
#    2025-10-13): with the weights read by component (performance.read_weight_bytes) the DGX Spark, RTX PRO
#    6000 Blackwell and RTX 5090 rows leave 1.14 / 1.30 / 1.53 ms per token beyond the bandwidth and layer
#    times (LMSYSSPARK-0002/-0004/-0006) - alike on a 273 GB/s SoC and two 1,792 GB/s cards, as a host cost
#    is; 1.3 ms, their middle. One model and one source: not separated into its graph-building and sampling
#    parts (the sampling part grows with the vocabulary, 201k tokens here).
OLLAMA_SEQ_STEP_S = 1.3e-3
# vllm-mlx and its fork Rapid-MLX serve MLX models from an engine of their own (vllm_mlx/engine: a scheduler
#    step per token, a detokeniser and an async output stream per request around mlx-lm's model call), where
#    mlx-lm's generate loop, which the MLX factors come from, only samples and yields. Host time per sequence per
#    step, beside SEQ_STEP_OVERHEAD_S. Fitted on Rapid-MLX's community bench (engine.stream_outputs, 128 / 512
#    tokens at ~530 / ~2,150 tokens of context, M3 Ultra 60-core, mlx 0.31): its decode of the 0.6-8B models
#    leaves 0.3-1.7 ms per token beyond mlx-lm's bandwidth and per-layer times (RAPIDMLX-0001/-0003/-0005/-0007/
#    -0013/-0015/-0021..-0031 odd), median 0.9 ms (the 14B / 27B rows leave 1.2-2.2 ms: part of that is the
#    two-die chip's bandwidth, not separated). One chip, one source.
MLX_SERVER_SEQ_STEP_S = 0.9e-3

# Routed-expert weights of a MoE model are read by the engines' fused MoE kernels, not by their dense
#    GEMMs: vLLM's and SGLang's Triton `fused_moe` (one launch for all experts, tokens sorted by expert with
#    `moe_align_block_size`, each program a BLOCK_M x BLOCK_N tile of one expert's weight). In decode each
#    touched expert sees only B k / E tokens (1-16 at a serving batch of 32-512 for DeepSeek-V3's 256
#    experts, top-8), so its tile rows are mostly padding and each expert's slice under TP is small and
#    skinny (DeepSeek-V3 at TP 8: a 7168 x 512 gate/up and 256 x 7168 down projection per expert, 5.5 MB in
#    FP8): the kernel streams those weights well below the rate the dense projections reach (MegaBlocks, Gale
#    et al. 2022, arXiv 2211.15841, sec. 3, on padding and small per-expert GEMMs; the fused_moe kernels are
#    tuned per shape, vLLM's `benchmark_moe.py` configs). The fraction of the dense rate is fitted on the
#    decode-only rows of DSTACKR1 (dstack's DeepSeek-R1 FP8 runs on 8x H200 and 8x MI300X, vLLM 0.7 and SGLang
#    0.4, median TPOT at 4-128 users, 33 rows). The rows hold two things: a fixed ~15 ms per step at 4 users
#    (H200) that no MoE term explains (DeepSeek's MLA, grouped routing and block-FP8 quantisation kernels
#    of those releases: EARLY_BLOCK_FP8_MLA_MOE_LAYER_S, fitted with this factor kept), and a part growing
#    with the experts touched. The rows
#    do not separate the two: fitted jointly with a free fixed time per layer, every pair from (200 us, 0.4)
#    to (400 us, 0.8) leaves a 14-17 % median error; fitted alone, with no fixed term, the expert factor
#    takes 0.4 (27 %) and so carries that fixed time into every expert byte, which grows with the batch.
#    0.5 sits in the joint fit's valley (350 us) and near the lone fit: the rows' median predicted/measured
#    TPOT 0.45 -> 0.75 (H200) and 0.44 -> 0.60 (MI300X), 0.80 / 0.64 at 64-128 users; the shortfall left is
#    the fixed time. Only where these kernels run (NVIDIA, AMD); vLLM's XPU build on Intel GPUs has its own
#    MoE kernels, and its gpt-oss rows (VLLMARC-*, fit) are met at the dense rate.
#    SGLang: 0.7 (branch s36-sglfit), chosen on its own fit rows once a release without the early fixed term
#    separates the two. INFXR1H200 (InferenceX, DeepSeek-R1-0528 FP8, SGLang 0.5.7, 8x H200, TP 8 with the MoE
#    tensor-parallel, EP 1, no DP attention: dsr1_fp8_h200.sh @ 161e7f6) runs the same kernel with the same tuned
#    tile table as DSTACKR1's SGLang 0.4.3 (layers/moe/fused_moe_triton/configs `E=256,N=256,device_name=
#    NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128, 128].json`, identical entries for 1-64 tokens in the 0.4.3 and
#    0.5.7 wheels, the latter under triton_3_1_0/; in 0.5.7 Fp8MoEMethod (layers/quantization/fp8.py) turns
#    moe_runner_backend "auto" into TRITON unless a DeepEP / Mooncake all-to-all is on, and server_args picks
#    flashinfer_trtllm for DeepSeek FP8 only on sm100) but is past BLOCK_FP8_EARLY_BEFORE, so no
#    fixed term: its TPOT growth from 4 to 64 users (10.9 -> 34.6 ms, ~31 -> ~222 experts touched per layer) is
#    the expert read alone, at ~0.6-0.7 of the dense rate. Median |error| of SGLang's HBM fit scopes
#    (throughput / TPOT) at 0.5 / 0.65 / 0.7 / 0.75 / 0.8: 13.3 / 14.8 / 14.2 / 15.3 / 15.5 % and 10.7 / 8.8 / 7.8 /
#    8.1 / 7.6 %, p90 31.5 / 27.1 / 26.9 / 29.0 / 30.3 % and 36.9 / 20.9 / 15.5 / 15.5 / 15.6 %; INFXR1H200 TPOT
#    38 -> 13 %, DSTACKR1's SGLang 0.4.3 H200 offline throughput -27 -> ~-20 % (signed median), its 0.4.2 MI300X
#    throughput +5 -> ~+12 % (the ROCm MLA decode read, MLA_DECODE_ATTN_BW_REL, was fitted with 0.5 and is not
#    refitted here) and TPOT 9 -> 6 %. vLLM keeps 0.5 (its own rows; its early term is shared, unchanged).
MOE_EXPERT_BW_REL: dict[str, float] = {"vllm": 0.5, "sglang": 0.7}
FUSED_MOE_VENDORS = ("NVIDIA", "AMD")

# MoE prefill compute (performance.prefill_gemm_rates). Two kernel paths the dense rate (COMPUTE_EFF) does not see:
# - Block-scaled FP8 GEMMs. DeepSeek-V3's FP8 weights carry one scale per 128 x 128 block and its activations one
#   per 1 x 128 group (DeepSeek-V3 report, arXiv 2412.19437, sec. 3.3.2): the GEMM multiplies partial sums by
#   both scales every 128 elements of K on the CUDA cores beside the tensor cores. The engines' kernels for it
#   before DeepGEMM (Triton `w8a8_block_fp8_matmul`, vLLM's CUTLASS block kernel) reach a fifth of the FP8 peak on
#   DeepSeek-V3's shapes at prefill sizes: SGLang PR #3893 (2025-02-26, H200): M=4,096, N=24,576, K=7,168 in
#   4,067 us with SGLang's and 4,034 us with vLLM's kernel, 355 TFLOPS = 0.18 of 1,979 (DeepGEMM: 1,354 us,
#   1,066 TFLOPS); vLLM PR #23939 (2025-08-29, H100, N=2,112, K=7,168): Triton 305-357 TFLOPS at M 4k-16k with
#   the default config, 0.15-0.18; vLLM PR #23280 (2025-09-10, same shape, tuned): Triton 403-407, CUTLASS
#   457-490 TFLOPS at M 4k-8k, 0.20-0.25, where bf16 cuBLAS reaches 667-716 (0.7 of its own peak). DeepGEMM
#   (deepseek-ai/DeepGEMM README, 2025-02-25, H800) reaches 990-1,358 TFLOPS on the same shapes at M=4,096:
#   COMPUTE_EFF's rate. BLOCK_FP8_GEMM_EFF caps the FP8 GEMMs' fraction of peak where that early path runs:
#   SGLang before 0.4.6 (DeepGEMM on by default on Hopper from PR #5628, 2025-04-22, after PR #4613 2025-03-20
#   and its revert PR #5263); vLLM before 0.11 (DeepGEMM is the default FP8 MoE backend for DeepSeek-R1 by
#   vLLM PR #29346's log, 2025-11-24; the release that switched it is not pinned here, so 0.8-0.10 may be
#   priced too fast). AMD GPUs of those releases ran the Triton kernels too (AITER's block-scaled GEMMs came
#   later): the same cap, unmeasured there.
BLOCK_FP8_GEMM_EFF = 0.20
BLOCK_FP8_EARLY_BEFORE: dict[str, tuple[int, ...]] = {"vllm": (0, 11), "sglang": (0, 4, 6)}
# - Routed experts in the fused-MoE kernel (Triton `fused_moe`: tokens sorted by expert with `moe_align_block_size`,
#   each program a BLOCK_M x BLOCK_N tile of one expert, its A rows gathered by index, not by TMA). At prefill
#   sizes each expert sees T k / E tokens (DeepSeek-V3 at 12,800 tokens: 400 each), padded to BLOCK_M, and under
#   TP its slices are thin: DeepSeek-V3 at TP 8 multiplies 7,168 x 512 (gate/up) and 256 x 7,168 (down, a K loop of
#   two 128-wide blocks) per expert (MegaBlocks, Gale et al. 2022, arXiv 2211.15841, sec. 3: padding and small
#   per-expert GEMMs). vLLM's own kernel benchmark (PR #24700, 2025-09-11, benchmarks/kernels/benchmark_moe.py,
#   Qwen3-30B-A3B FP8 at TP 1, default config) takes 1,648 us for one layer of 4,096 tokens: 4,096 x 8 experts x
#   2 x (2,048 x 1,536 + 768 x 2,048) FLOPs = 309 GFLOP at 188 TFLOPS, ~0.1 of an H100's FP8 peak where dense
#   GEMMs reach COMPUTE_EFF's 0.55. Relative to the dense GEMMs of the same path (BLOCK_FP8_GEMM_EFF's cap where it
#   applies). Fitted on DSTACKR1's prefill-bound rows, the vLLM 0.7 TTFTs at 4-64 users of 3,200-token prompts on 8x
#   H200 and 8x MI300X (-0053..-0068, -0092..-0104, -0143..-0149: one wave of 12,800-204,800 prompt tokens prefilled
#   at 10-14k tokens/s, where the plain roofline said 45-50k; 14 rows): with the cap at 0.20, a relative rate of 0.15 /
#   0.2 / 0.25 / 0.3 / 0.4 gives their median predicted/measured TTFT 1.46 / 1.18 / 1.01 / 0.89 / 0.75 (median error
#   46 / 21 / 7 / 11 / 25 %). 0.25: the experts
#   then run at 0.05 of the FP8 peak on the early block path and at 0.14 elsewhere, near the kernel benchmark's 0.1.
#   SGLang 0.4.2's TTFTs on MI300X (-0071..-0140) stay ~2.5x longer than predicted (median 0.39): a cost of that
#   engine and GPU pair (ROCm kernels of early 2025) not found here and not fitted.
#   Only for the weights that kernel serves: 16-bit and 8-bit (FP8 / INT8 W8A8) experts. MXFP4 experts (gpt-oss) run
#   in other MoE kernels (vLLM's gpt-oss path: OpenAI's `triton_kernels` matmul_ogs on Hopper, Marlin on Ampere,
#   FlashInfer's on Blackwell), not priced here.
MOE_EXPERT_COMPUTE_REL: dict[str, float] = {"vllm": 0.25, "sglang": 0.25}
FUSED_MOE_FAMILIES = ("f16", "q8")
# SGLang's releases before its DeepGEMM default (0.4.2 / 0.4.3, BLOCK_FP8_EARLY_BEFORE) ran DeepSeek's block-scaled
#   experts slower than vLLM 0.7 on the same GPUs: its TTFT waves on 8x MI300X (SGLang 0.4.2, -0071..-0140) prefill
#   at ~7k tokens/s where vLLM 0.7 reached 10-14k on the same machine type, and its offline runs on 8x H200 (0.4.3,
#   -0013..-0024) take longer than vLLM 0.7.4's at every batch. Relative rate of its experts on that path, fitted on
#   both sets together: 0.25 / 0.15 / 0.12 / 0.10 / 0.08 give the H200 offline throughput median predicted/measured
#   1.26 / 1.08 / 1.00 / 0.96 / 0.89 and the MI300X TTFT 0.39 / 0.57 / 0.68 / 0.79 / 0.95; 0.10 between them. The
#   cause inside the kernel (untuned Triton configs for E=256 block-FP8 shapes in those releases is the likely one)
#   is not measured directly. Current SGLang takes MOE_EXPERT_COMPUTE_REL, as vLLM (the same Triton kernel lineage).
BLOCK_FP8_EARLY_MOE_REL: dict[str, float] = {"sglang": 0.10}
# Fixed time per MoE layer of DeepSeek-V3-style models (MLA attention, grouped top-k routing, block-scaled FP8
#   weights) on that same early path (BLOCK_FP8_EARLY_BEFORE, NVIDIA / AMD), every pass, whatever the batch: the
#   layer's many small kernels, each with a floor of a few microseconds even when a CUDA / HIP graph replays the
#   step. The path launches, per MoE layer, a per-token-group FP8 activation quantisation before each of its ~8
#   block-scaled linears (q_a, kv_a, q_b, o, shared gate/up/down, router), the absorbed MLA's extra BMMs, RoPE,
#   cache write and two-stage Triton decode attention, the grouped top-k routing as ~12 separate PyTorch ops
#   (vLLM fused_moe.py `grouped_topk`, SGLang's copy in topk.py: sigmoid, bias add, group scores, group top-k,
#   zeros + scatter mask, expand, masked_fill, top-k, gather, renormalise),
#   moe_align_block_size with its buffer fills, two fused_moe launches with their quantisations, SiLU-and-mul
#   and the expert sum: ~60 kernels against a dense Llama layer's ~12 (LAYER_OVERHEAD_S's 25 us). At ~4 us each
#   that is ~250 us per layer. Fitted on DSTACKR1's fit rows (dstack, DeepSeek-R1 FP8 on 8x H200 / 8x MI300X,
#   vLLM 0.7.3 / 0.7.4, SGLang 0.4.2 / 0.4.3) with MOE_EXPERT_BW_REL kept at 0.5, the low-concurrency TPOT rows
#   pinning it: H200 vLLM at 4 / 8 users 25.7 / 31.3 ms measured against 11.8 / 17.3 predicted without it
#   (-0105 / -0102, ~230 us per layer), MI300X SGLang at 4 users 34.9 against 18.6 (-0072, ~270 us); vLLM on
#   MI300X leaves ~450 us (-0069), not separated here (ROCm kernels of early 2025; ~200 us beyond this figure
#   remain with vLLM 0.7's absorbed MLA weights and its slow latent read priced, MLA_DECODE_ATTN_BW_REL).
#   Independent check, not fitted: SGLang's v0.4.1.post2 release note (sgl-project/sglang PR #2643, 2024-12-29)
#   gives DeepSeek-V3 on 8x H200 with CUDA graphs at batch 1 30.29 tok/s (33 ms per token) where the weights' bytes
#   take ~1 ms.
#   Only MLA + MoE + block-FP8 checkpoints on those releases; other MoE models (Qwen3-MoE FP8: one fused top-k
#   kernel, GQA flash attention) are not priced with it.
EARLY_BLOCK_FP8_MLA_MOE_LAYER_S = 250e-6

# MLA decode attention on AMD GPUs before AITER's MLA decode kernel (performance.mla_decode_attention_bw_rel).
#   SGLang's releases of early 2025 decoded DeepSeek's absorbed MLA on ROCm with its Triton decode-attention kernel
#   (python/sglang/srt/layers/attention/triton_ops/decode_attention.py: `decode_attention_fwd_grouped`, a two-stage
#   split-KV kernel adapted from LightLLM's gqa_flash_decoding, with `is_hip` tile settings): FlashInfer, SGLang's
#   CUDA default, had no ROCm build, so its Triton backend served MLA there until the `aiter` attention backend
#   (layers/attention/aiter_backend.py; read from the code's layout, not from a release note). AMD's ROCm blog
#   "Supercharge DeepSeek-R1 Inference on AMD Instinct MI300X" (rocm.blogs.amd.com/artificial-intelligence/
#   DeepSeekR1-Part2, 2025-03-21) lists AITER's MLA decode kernel as "+17x" for SGLang on MI300X (a kernel figure,
#   its baseline not restated here; the rows below give ~5x for the whole read); vLLM took AITER's `mla_decode_fwd`
#   in vLLM PR #15893 (2025-04-01).
#   The old kernel reads the latent cache (576 values per token and layer, every TP rank the whole of it,
#   performance.kv_read_replication) far below the HBM rate: DSTACKR1's SGLang 0.4.2 TPOT on 8x MI300X grows
#   ~0.8 ms per extra sequence at ~3,600 tokens of context (-0087 vs -0084: 136 vs 85 ms at 128 vs 64 users),
#   where a bandwidth-limited read of 3,600 x 70 KB takes ~0.06 ms. Fraction of the rate the cache read reaches
#   there, fitted on DSTACKR1's SGLang 0.4.2 MI300X fit rows (offline output throughput of 32-1024 requests,
#   -0034..-0048, and the 4-128-user throughput and median TPOT, -0070..-0141; 39 rows, their TTFT left aside):
#   1.0 (none) / 0.15 / 0.17 / 0.20 / 0.25 give those rows a median error of 24 / 12 / 10 / 10 / 11 % (p90 90 / 24 /
#   22 / 30 / 39 %); offline runs alone want ~0.12 (median predicted/measured 0.98), TPOT alone ~0.25 (1.06; the
#   fixed EARLY_BLOCK_FP8_MLA_MOE_LAYER_S above was fitted partly on -0072 with this read at full rate). 0.20 sits
#   in the joint valley and leaves both validated scopes better than without it (throughput / sglang / hbm median
#   23 -> 17 %, p90 89 -> 56 %; TPOT / sglang / hbm 7.6 -> 6.5 %, 24 -> 20 %); 0.17 would give TPOT's median 11 %.
#   Not separated: the shared-prefix rows (-0106..-0114) decode faster than the plain ones at equal users, likely
#   the 3,200-token shared latent (~220 MB) held in MI300X's 256 MB Infinity Cache, not modelled. The release where
#   SGLang's ROCm MLA decode moved to AITER is not pinned from release notes here: 0.4.5 is taken (the blog above ran
#   AITER MLA with SGLang in March 2025; 0.4.3-0.4.4 on ROCm may be priced too slow). NVIDIA GPUs (FlashInfer /
#   Triton MLA on CUDA; DSTACKR1's H200 SGLang 0.4.3 rows) are not priced with it; vLLM's ROCm Triton MLA of the
#   same era is not fitted here.
# vLLM (branch s38b-rocmmoe): on ROCm vLLM decoded MLA with a port of the same kernel. vllm/platforms/rocm.py
#   `get_attn_backend_cls` returned `TritonMLABackend` for every MLA model (0.7.1 on; read at the releases of early
#   2025), whose decode calls `decode_attention_fwd` from vllm/attention/ops/triton_decode_attention.py (vLLM PR
#   #12528, 2025-01-28, credits SGLang "for the triton decode attention kernel"); vLLM's copy reads the latent cache
#   through its block table (16-token pages) where SGLang's indexes every token. Fitted on DSTACKR1's vLLM
#   0.7.3.dev138 MI300X fit rows (offline output throughput -0001..-0012, -0049..-0051; 4-128-user throughput and
#   median TPOT -0052..-0069, -0142..-0150: 24 throughput and 9 TPOT rows), with the absorbed decode weights of that
#   release priced (performance.vllm_absorbed_mla_decode_params): 1.0 (none) / 0.20 (SGLang's) / 0.25 / 0.30 / 0.35 /
#   0.40 / 0.50 give the throughput rows a median error of 22 / 9.2 / 6.7 / 7.9 / 7.0 / 7.6 / 13 % (p90 38 / 17 / 14 /
#   12 / 17 / 21 / 27 %) and the TPOT rows 13.5 / 18 / 13 / 9.4 / 7.3 / 6.0 / 9.5 % (p90 26 / 25 / 20 / 21 / 21 / 22 /
#   22 %); 0.30 leaves both signed medians at 0 (vLLM's TPOT at 128 users, 103-129 ms, is below SGLang's 122-136 on
#   the same machine, so SGLang's 0.20 prices vLLM's 128-user steps 10-30 % slow). Which part of the gap to SGLang is
#   the paging is not separated. vLLM took AITER's `mla_decode_fwd` in PR #15893 (2025-04-01), behind
#   VLLM_ROCM_USE_AITER (off by default): 0.8.3 is taken as the first release priced at the full rate, so later V0
#   releases run without AITER are priced too fast. The 4-8-user TPOT rows stay 21-26 % fast (-0066, -0069): a
#   fixed ~11 ms per step beyond EARLY_BLOCK_FP8_MLA_MOE_LAYER_S that nothing read here explains.
MLA_DECODE_ATTN_BW_REL: dict[str, float] = {"sglang": 0.20, "vllm": 0.30}
MLA_DECODE_ATTN_EARLY_VENDORS = ("AMD",)
MLA_DECODE_ATTN_EARLY_BEFORE: dict[str, tuple[int, ...]] = {"sglang": (0, 4, 5), "vllm": (0, 8, 3)}

# Prefill attention over cached tokens on the same early ROCm path (performance.early_mla_prefix_attention_s): SGLang
#   before 0.4.5 (MLA_DECODE_ATTN_EARLY_BEFORE) prefills DeepSeek's MLA in one of two ways (python/sglang/srt/models/
#   deepseek_v2.py `DeepseekV2AttentionMLA.forward`, read at 0.4.2.post4): an extend batch in which no request has a
#   cached prefix runs `forward_normal` (K and V decompressed, 192-wide heads), any other (a radix-cache hit, or the
#   next chunk of a prompt the chunked-prefill budget split) runs `forward_absorb`: every head multiplies its
#   576-wide query (kv_lora_rank 512 + rope 64) with the latent cache and reads 512-wide values, through the Triton
#   `extend_attention_fwd` kernel (layers/attention/triton_ops/extend_attention.py), whose ROCm tiles are 64 x 64
#   with 4 warps for every head width. Its prefix stage (queries against the tokens already cached) is priced
#   here at this fraction of the 16-bit tensor peak, 2 x (576 + 512) FLOPs per (query, cached key) pair per head
#   and layer. Fitted on DSTACKR1's three shared-prefix TTFT rows on 8x MI300X (SGLang 0.4.2, 32 / 64 / 128 users
#   of 1,275 new tokens after a cached 2,000-token system prompt, -0113 / -0110 / -0107), whose median TTFT is
#   1.4-1.6x what the same passes without the prefix give (predicted/measured 0.64-0.73 without this term): 0.04 /
#   0.06 / 0.08 / 0.12 / 0.20 give them a median predicted/measured of 1.14 / 0.99 / 0.91 / 0.83 / 0.77; 0.06 (about
#   80 TFLOPS on an MI300X; the kernel's own rate is not measured here). Refitted on the same three rows to 0.10
#   (~130 TFLOPS) once a wave's first tokens wait for the next prefill pass under the overlap scheduler
#   (serving.sglang_consecutive_prefill_s), which puts part of their excess there: with that wait 0.06 / 0.08 / 0.10
#   / 0.12 / 0.15 give them a median predicted/measured of 1.15 / 1.06 / 1.00 / 0.96 / 0.93 (without the term 0.78).
#   Checked, not fitted, on the nine plain 3,200-token TTFT rows of the same runs (-0071..-0140), whose chunk
#   continuations take the same path (`performance.chunk_prefix_pairs`): median error 11 % -> 7 %; the scope's fit
#   rows (with ACCELMARK's) TTFT median 11.0 -> 6.8 %, p90 29 -> 16 %, throughput p90 29.9 -> 27.0 %; TPOT p90
#   30.5 -> 32.1 % (the shared-prefix rows' decode, already priced slow: MLA_DECODE_ATTN_BW_REL's note).
MLA_PREFIX_ATTN_EARLY_EFF: dict[str, float] = {"sglang": 0.10}

# Decode attention over an FP8 KV cache in TensorRT-LLM (v0.8 on: XQA, `engines.trt_llm_pre_xqa` false): fraction
#   of the memory rate (BW_EFF) at which a decode step reads the paged cache. The weights stream at BW_EFF; the
#   cache is read in 64-token pages per sequence and KV head, each converted from FP8 before the attention
#   arithmetic, and trtllm-bench's long-output runs decode far slower than a cache read at BW_EFF: TRTBENCH70-*
#   (TensorRT-LLM 0.16.0, Llama-3.1-70B FP8 with FP8 KV, TP 8 on 8x H100, 63 fixed-length offline shapes) at 128
#   prompt tokens implies ~29 ms a step for 165 sequences at a mean 8.3k context (the logged pool, 3 waves of
#   16,384 iterations in 1,438 s), where weights + cache at BW_EFF take ~13 ms and the all-reduce and per-layer
#   time ~7 ms: the cache read reaches ~0.4-0.6 of BW_EFF. Fitted on those fit rows with
#   `serving.fixed_length_waves` in place: 1.0 (none) / 0.6 / 0.5 / 0.45 / 0.4 give TRTBENCH70 a median
#   predicted/measured of 1.30 / 1.13 / 1.07 / 1.04 / 1.00 and median error 30 / 13 / 8 / 6 / 6 % (max 79 / 41 /
#   27 / 20 / 18 %; 0.4 leaves the long-prompt, long-output corner 15-18 % slow); the same with the pool that
#   run logged (2,730,752 tokens, where mlrig's sizing gives 3.1M) instead of mlrig's: 1.04 / 6 % at 0.45. Held to
#   an FP8 cache: the TensorRT-LLM fit rows with a 16-bit cache (QSERVETRT-0019..0040, A100, 1,024 + 512 tokens)
#   come out 0.98 median as they are and 0.87 at 0.6 (their cache read is not slow), and one source is all that
#   speaks for an FP8 cache; which part is the FP8 page conversion and which the XQA grid at TP 8 (one KV head per
#   GPU) is not separated. Held-out rows were not looked at to choose it.
FP8_KV_DECODE_ATTN_BW_REL: dict[str, float] = {"trt-llm": 0.45}
# TensorRT-LLM's XQA decode attention (v0.8 on) launches multi_block x KV heads x batch thread blocks (CTAs):
#   tensorrt_llm/kernels/decoderMaskedMultiheadAttention/decoderXQAImplCommon.h `computeMultiBlockCount`:
#   multi_block = history // 512 (kMinHistoryTokensPerBlock), at most round(sqrt(8 x that)), at least 1 (reduced
#   only past 8 waves of CTAs, where the read is not short of CTAs anyway). Each CTA streams its share of the cache
#   with a bounded number of bytes in flight, so a step with few CTAs (one sequence of a model with 2 KV heads)
#   cannot reach the card's bandwidth: it reads at CTAs x this rate (performance.xqa_cta_bw_rel). FITTED on
#   MKTRTLAT's BF16 rows (fit split; trtllm-bench latency, Qwen2.5-0.5B, 2 KV heads, 24 layers, batch 1, RTX PRO
#   6000; 16-bit cache): per-token time over the 8-128-token prompts' grows by 0.10 / 0.12 / 0.14 / 0.21 / 0.25 ms
#   at 256 / 1,024 / 2,048 / 4,096 / 8,192 prompt tokens (-0014/-0020/-0022/-0024/-0028), reading 3 / 12 / 25 /
#   49 / 99 MB of cache with 2 / 4 / 8 / 16 / 22 CTAs: 15-27 GB/s per CTA (the 1.6 TB/s card's figure would take
#   0.002-0.06 ms).
XQA_CTA_READ_GB_S = 20.0
XQA_MIN_HISTORY_PER_BLOCK = 512

# The OpenAI-compatible front end's share of TTFT (serving.frontend_s): the API server's HTTP handling,
# chat template and tokenisation, the hand-off to the engine core process (ZMQ in vLLM V1) and the first
# token's detokenisation and server-sent event, as the benchmark client's clock sees it. vLLM:
# InferenceBench's single-user H100 run (INFBENCH-0001: vLLM 0.21, Llama-3.1-8B-Instruct through its
# chat endpoint with a LiteLLM client, ~43-token prompts) has a median TTFT of 13.98 ms where the GPU
# work, a ~43-token prefill and the first decode iteration, is ~8.5 ms: ~5.5 ms. A host-side cost, so one
# figure for every GPU class: over the vLLM TTFT fit rows (INFBENCH-0001/-0003 on an H100, LDSINGH-* on an
# RTX A6000, VLLMARC-* on an Arc Pro B60) the median error is 38 % at 0, 25 % at 5.5 ms, 31 % at 10 ms,
# 51 % at 15 ms. LDSINGH-0001 (vLLM 0.23, 1 user, ~40-token prompt) would want ~20 ms: hosts differ.
# Not separable per part; other engines have no rows: 0 (SGLang: below). GPUStack's vLLM 0.11 runs at 1-8 users (held
# out, checked only) show ~45 ms more than the GPU work (SGLang: 27 ms median TTFT on the same machine and
# prompts); the public vLLM 0.21 measurement above does not reproduce it, so it is not the front end's size.
# That analysis predates the V1 figure below: 5.5 ms now prices vLLM V0 (before 0.8) only.
API_FRONTEND_S: dict[str, float] = {"vllm": 5.5e-3}
# vLLM's V1 engine (0.8+, `engines.vllm_v1`) adds to that path: the API server (AsyncLLM) hands each request
# to a separate engine-core process over ZMQ (msgpack) and gets the step outputs back the same way, then
# detokenises them in its own event loop before the first server-sent event (vllm/v1/engine/async_llm.py
# `_run_output_handler`: pull EngineCoreOutputs, OutputProcessor.process_outputs, per-request queues;
# vllm/v1/engine/core_client.py AsyncMPClient; vllm/v1/engine/core.py EngineCoreProc's input/output threads
# around the busy loop). Its size is the host's, so it is taken from the single-user V1 fit rows over
# HTTP or the async engine, whose GPU work is small: measured minus the planner's GPU part leaves ~5.5 ms on
# InferenceBench's H100 host (INFBENCH-0001, vLLM 0.21), ~16 ms on AccelMark's A100 (ACCELMARK-0038, 0.20.1),
# ~20 ms on an RTX A6000 workstation (LDSINGH-0001, 0.23) and ~22 ms on a 4-vCPU GKE node with an L4
# (WMXL4-0002, 0.23): hosts differ by 4x. Over the 33 V1 TTFT fit rows the median / p90 error is 31 % / 60 %
# at 5.5 ms, 30 % / 54 % at 10, 30 % / 52 % at 12, 27 % / 64 % at 15, 25 % / 68 % at 20 (the fast host's
# two rows go over as the others come in): 12 ms, the value that lowers both. V0 releases (ACCELMARK-*
# vLLM 0.7.3 single-user rows sit at -5..+7 ms with 5.5) keep API_FRONTEND_S. Held out, checked only:
# A10GVS (vLLM 0.18, 1 user) -7..-8 ms with 5.5, GPUSTACK (0.10-0.11, 1-8 users) ~-40 ms.
API_FRONTEND_V1_S = 12e-3
# SGLang's server has the same shape as vLLM V1's: the HTTP server's TokenizerManager tokenises and sends each
# request over ZMQ to the Scheduler process, whose outputs go over ZMQ to a DetokenizerManager process and back to
# the TokenizerManager before the first server-sent event (sglang/srt/entrypoints/http_server.py,
# managers/tokenizer_manager.py, scheduler.py, detokenizer_manager.py). Its size from the SGLang TTFT fit rows whose
# GPU work is small (short prompts, all but one token in the radix cache, low load): AccelMark's A100 40GB host
# (SGLang 0.5.6, Llama-3-8B-Instruct, 255-token prompts with 254 cached) leaves 5.9 / 8.0 / 5.7 ms between the
# measured median TTFT and the planner's GPU part at 1 user, 5 and 25 req/s (ACCELMARK-0074 / -0076 / -0078):
# their median, 6 ms. The other SGLang TTFT fit rows (DSTACKR1, long prompts and waves) are seconds long and
# indifferent to it (fit median error 11.1 % at 0, 11.0 % at 6 ms). Since the extend pass's host time
# (SGLANG_EXTEND_HOST_LAYER_S, 32 x 300 us overlapped with ~13 ms of GPU work on these rows) is in the planner's part,
# the three residuals are ~5.0 / 6.9 / 1.1 ms: their median, 5 ms (branch s36-sglfit; the rows' predicted - measured
# TTFT at 5 ms: -0.0 / -1.8 / +3.9 ms, at 6 ms +1.0 / -0.9 / +4.9).
API_FRONTEND_S["sglang"] = 5e-3

# TensorRT-LLM's own request path, in process (serving.trtllm_request_path_s): a request through the LLM API
# (tensorrt_llm/llmapi/llm.py `generate_async` -> executor/executor.py `GenerationExecutor.generate_async` ->
# `submit`) is enqueued to the executor, whose background loop schedules it (PyExecutor for the PyTorch backend,
# the C++ executor's await_responses thread for a TensorRT engine), and its first token comes back as a Python
# response object that the LLM API's result handler (executor/result.py `GenerationResult`) turns into the
# streamed output. trtllm-bench latency times exactly that path. Fit rows: MKTRTLAT-* (TensorRT-LLM 1.2.0,
# `trtllm-bench latency`, Qwen2.5-0.5B on an RTX PRO 6000, one request at a time, TLLM_WORKER_USE_SINGLE_PROCESS=1
# so no process boundary), whose short prompts (8-128 tokens) leave a GPU part of ~1.0-1.4 ms: measured minus the
# planner's prefill is 2.0-2.3 ms with a bf16 engine and 1.3-1.4 ms with an FP8 one (the smaller engine also takes
# less host time per step); their median over the 12 short-prompt rows is ~1.8 ms. From 0.12 (trtllm-bench, the
# LLM API's executor path), before that the C++ benchmarks (TRT061-*: gptSessionBenchmark of 0.5, no executor).
TRTLLM_REQUEST_PATH_S = 1.8e-3
TRTLLM_REQUEST_PATH_FROM = (0, 12)
# trtllm-serve's front end (serving.frontend_s): a FastAPI/uvicorn process (tensorrt_llm/serve/openai_server.py
# `OpenAIServer`: the request's pydantic model, the chat/completion prompt's tokenisation, `llm.generate_async`
# with streaming) hands the request over ZMQ IPC to the executor's worker process(es) (executor/proxy.py
# `GenerationExecutorProxy`: MPI workers spawned by the LLM API, `executor/ipc.py` queues both ways; rank 0 shares
# new requests with the other TP ranks), and the first token comes back the same way, is detokenised in the server
# (or its post-processing workers) and leaves as a server-sent event. The path is the same for both backends
# (`--backend pytorch | tensorrt`, engines.TRTLLM_BACKEND_LABELS); what differs is the engine behind it: the
# PyTorch backend prefills in an eager pass (performance.trtllm_prefill_host_layer_s), a TensorRT engine from C++.
# So the figure is read where that pass is absent: the single-user closed loops of a TensorRT engine behind
# trtllm-serve, measured minus the planner's GPU part, WAYNETRT-0146 / -0164 (0.20 compiled engine, TP 2 on H100s,
# with and without CUDA graphs) 10.2 / 10.7 ms: 10.5 ms. Held out, checked only: CHINMAY5090-0002 (1.2.0 TensorRT
# engine, one RTX 5090) ~11 ms. With the eager prefill pass priced at the eager decode step's host time per layer,
# the PyTorch-backend single-user rows come out at WAYNETRT-0002 / -0038 (0.20, TP 2) +29 / +28 %, -0074 (TP 4,
# 64 layers) +51 %, AZIR5070TI-0002 / -0026 (1.3.0rc15 on WSL2) -30 / -28 % (its 4-16-user rows -9..-26 %): the
# hosts' launch and HTTP costs differ (the per-layer figure was fitted on AZIR's), which a plan does not name.
# The earlier single figure, 20 ms (the median of those PyTorch-backend rows with no eager pass priced), read the
# TP 4 row's 24 ms against the TP 2 rows' 20 and the compiled-engine rows' 10 as a growth with TP: at the same TP 2
# the two backends differ by ~10 ms, the eager pass.
# Over the TensorRT-LLM TTFT rows (fit and held out; median / p90 error, branch s30-trt): GDDR 17 / 54 % at 20 ms
# without the eager pass -> 15 / 38 % at 10.5 ms with it, HBM 15 / 45 % -> 17 / 42 %.
API_FRONTEND_S["trt-llm"] = 10.5e-3
# The serving front end's serial work per request (serving.front_end_queue_s): vLLM's API server, SGLang's
# TokenizerManager and trtllm-serve each run one Python asyncio event loop that parses every request, tokenises
# its prompt, hands it to the engine and later turns its first token into a server-sent event, one request after
# another; a benchmark client written the same way (httpx / aiohttp coroutines in one loop) adds its own share.
# A wave of m requests sent together therefore reaches the engine one by one, and its member of rank k waits for
# the k - 1 ahead of it: (k - 1) x this. The stage runs beside the GPU, so a member waits for the longer of the
# two (the GPU's wave, `serving.wave_rank_ttft_s`), which leaves long-prompt waves (LDSINGH-0023's 512 users, where
# the GPU's prefills dominate) as they were. One figure for the Python front ends, a host-side cost.
# Fit rows: the closed-loop waves of short prompts, where the GPU's part is small and TTFT grows linearly with
# the users: WAYNETRT-* (vLLM and trtllm-serve 0.20 on H100s, 1-128 users, 12-13-token prompts; 1.6-2.2 ms more
# median TTFT per user, i.e. ~3.5-4 ms per request ahead of the median member), WMXL4-* (vLLM 0.23 on a 4-vCPU
# L4 node, ~3.5 ms), AZIR5070TI-* (an aiohttp client on a workstation: ~0.7 ms under trtllm-serve, ~2 ms under
# vLLM), LDSINGH-*. Over all 335 vLLM / SGLang / TensorRT-LLM TTFT fit rows the median / p90 error is 28.9 / 68.2 %
# at 0, 24.2 / 57.1 % at 2 ms, 17.8 / 57.6 % at 3, 17.0 / 57.9 % at 3.5, 19.4 / 60.7 % at 4, 20.0 / 64.6 % at 4.5
# (with the 20 ms trtllm-serve front end above): 3.5 ms (rechecked below). Hosts differ ~5x (AZIR's against
# WAYNETRT's); a plan does not name the host. SGLang's fit rows (DSTACKR1-*, seconds-long waves; ACCELMARK-* rate
# runs) do not move.
# What the stage is, read in vLLM's V1 front end (vllm/v1/engine/async_llm.py, output_processor.py): a wave's prompts
# are tokenised together (serving_engine `_get_async_tokenizer`, later the renderer's `get_async_tokenizer` ->
# AsyncMicrobatchTokenizer: one batched encode of up to 32 prompts queued within 2 ms), so tokenising is not what
# grows with the rank; each request's `AsyncLLM.add_request` (input processing, a ZMQ send to the engine process) and,
# once the wave's first tokens come back in one EngineCoreOutputs, `output_handler` turning them into RequestOutputs
# one request after another (`OutputProcessor.process_outputs`, chunks of VLLM_V1_OUTPUT_PROC_CHUNK_SIZE, incremental
# detokenising), then each request's generator building and writing its server-sent event, are serial per request on
# the one event loop; the benchmark client (aiohttp / httpx in one loop) reads the events one after another. Rank k's
# first token therefore leaves (k - 1) x (server + client per request) after the first's: the linear form above, with
# a host- and client-dependent slope the plan does not name.
# Rechecked 2026-11-25 (branch s33-vllmgddr2) after the KV-admission and async-scheduling changes, over the 335 vLLM /
# SGLang / TensorRT-LLM TTFT fit rows (median / p90 error): 2.5 ms 17.8 / 44.6 %, 3.0 ms 16.2 / 45.7 %, 3.5 ms 16.3 /
# 48.5 %, 4.0 ms 16.6 / 50.7 %. 3.0 ms was tried and not kept: it moves the scopes the other way (all rows, median /
# p90: vLLM GDDR TTFT 20 / 72 % -> 22 / 70 %, TensorRT-LLM HBM 17 / 42 % -> 22 / 42 %, WAYNETRT-0017's 128 H100 users
# -29 %), so the fit rows do not choose between 3.0 and 3.5 ms and 3.5 stays. The fit hosts' slopes differ:
# AZIR5070TI-0077..-0110 (aiohttp client on a WSL2 workstation, vLLM 0.13, 16-64 users) measure 1.3-1.8 ms per request
# ahead, WAYNETRT's H100 rows (httpx client) ~3.5-4 ms.
# trtllm-serve's own figure (branch s38-trt): its OpenAI server hands each request to `LLM.generate_async`, which
# tokenises the prompt there and then, one request at a time (tensorrt_llm/llmapi/llm.py: `self.input_processor(
# inputs, sampling_params)` per call), and submits it to the executor over its own IPC message; vLLM's front end
# tokenises a wave's prompts in one batched call (above). WAYNETRT's TensorRT-LLM rows on the same H100 host and
# client as its vLLM rows grow by 4.1 ms (PyTorch backend, -0050 / -0053) and 5.7 / 6.4 ms (TensorRT engine, -0158 /
# -0161, -0176 / -0179) of median TTFT per request ahead between 64 and 128 users, against vLLM's 3.0-3.6 ms.
# Scanned over the 101 TensorRT-LLM TTFT fit rows (median / p90 error; HBM | GDDR): 3.5 ms 17.3 / 33.6 | 15.2 / 28.0,
# 4.0 ms 13.1 / 33.6 | 13.5 / 30.5, 4.5 ms 11.4 / 33.2 | 15.2 / 30.5, 5.0 ms 13.8 / 37.0 | 15.6 / 36.0; all of them
# 15.7 / 30.6 % at 3.5, 13.4 / 31.1 at 4.0 and 4.5, 15.2 / 36.6 at 5.0: 4.0 ms, the smaller step. Against: AZIR5070TI's
# desktop (aiohttp client) measures ~0.7 ms per request ahead under trtllm-serve, below even the desktop figure
# (x DESKTOP_HOST_SERIAL_REL): the TTFT trt-llm gddr scope's p90 goes 30 -> 34 % (its fit rows 28.0 -> 30.5 %; the
# held-out CHINMAY5090-* rows do not move, 5.1 / 55.8 %).
FRONTEND_SERIAL_S_PER_REQUEST: dict[str, float] = {"vllm": 3.5e-3, "sglang": 3.5e-3, "trt-llm": 4.0e-3}
# The serial stage on a desktop or workstation host (serving.host_serial_rel: GPU catalog classes below), relative to
# FRONTEND_SERIAL_S_PER_REQUEST's server hosts. The same client on two hosts separates host from client:
# WAYNETRT's bench/bench.py (httpx, 13-token prompts, 256 outputs, closed-loop waves) adds per request ahead of the
# median member, between 64 and 128 users where the GPU's wave is small, 3.0-3.6 ms on its H100 server (vLLM rows
# WAYNETRT-0032/-0035, -0068/-0071, -0104/-0107, -0122/-0125, -0140/-0143, -0188/-0191: median ~3.2 ms) and
# 1.7-2.1 ms on its RTX PRO 6000 workstation (vLLM 0.18, FP8 / NVFP4: WAYNETRT-0236/-0239, -0254/-0257; the BF16
# pair's 2.3 ms carries a ~100 ms prefill wave of its own): ~0.6 of the server's. AZIR5070TI's desktop (aiohttp
# client, vLLM 0.13, NVFP4 16-64 users, a small GPU wave) measures 1.2-1.3 ms, ~0.4 (its faster client is part of it).
# Chosen on the fit rows (TTFT of vLLM / SGLang / TensorRT-LLM; median / p90 error, branch s36-vgddr, with the m = 2
# wave median of serving.wave_stagger_s): GeForce / workstation vLLM fit rows (42) 17.6 / 53.3 % at 1.0, 16.2 / 50.3 %
# at 0.8, 18.8 / 48.5 % at 0.7, 19.3 / 48.7 % at 0.6; TensorRT-LLM (51: AZIR's, MKTRTLAT's) 16.6 / 36.6, 15.6 / 30.7,
# 15.7 / 28.0, 16.0 / 28.0 %; all 335 TTFT fit rows 15.6 / 43.5, 15.2 / 41.1, 15.6 / 40.8, 15.6 / 41.1 %. 0.7 (the
# lowest p90s, between the same-client ratio and AZIR's). Held-out GeForce / workstation rows (CHINMAY5090,
# ACCELMARKGD, ZHJUNQIN) do not move: their waves are GPU-bound.
# trtllm-serve's host time per streamed token in its server process (performance.trtllm_stream_host_s: the proxy's
# per-response hand-off, detokenising, the server-sent event), overlapped with the GPU's step by a p-norm. Fit rows:
# WAYNETRT-* (trtllm-serve 0.20, H100 SXM, TP 2, httpx client, 13-token prompts, 256 outputs). Their TPOT stops
# following the GPU's step at 128 users: Llama-3.1-8B FP8 3.59 -> 7.82 ms from 64 to 128 users (-0015 / -0018), the
# BF16 PyTorch backend 5.45 -> 7.88 (-0051 / -0054), the TensorRT engine 6.00 -> 7.06 and 5.89 -> 6.73 (-0159 /
# -0162, -0177 / -0180), output throughput flat at 13.9k / 13.8k tok/s (FP8 -0013 / -0016); the same client on the
# same box reaches 19.7k tok/s through vLLM at 128 users (-0070), so the ceiling is the server's, not the client's.
# Solving p-norm(GPU step, 128 x c) = measured at the planner's GPU step gives c = 60 / 57 / 49 / 45 us for the four
# 128-user rows. Scanned over the fit rows (median / p90 error): TPOT trt-llm hbm 10.2 / 27.9 % at 30 us, 9.3 / 21.8
# at 45, 8.8 / 21.6 at 55, 8.6 / 30.3 at 65; throughput trt-llm hbm 7.5 / 24.2, 7.5 / 22.4, 7.4 / 21.5, 6.8 / 20.7:
# 55 us. Not explained: WAYNETRT-0090 (Qwen2.5-32B, TP 4, 128 users: 11.3 -> 21.2 ms from 64 users, throughput
# flat at 5.3k -> 5.7k tok/s) would need ~160 us per token, a limit of another kind; it stays -41 %. GDDR rows
# (AZIR5070TI-*, <= 64 users on a desktop host, 9-22 ms GPU steps) move by < 0.5 %.
TRTLLM_STREAM_TOKEN_S = 55e-6
# vLLM's front-end host time per generated token from 0.12 (performance.vllm_stream_host_s: V1's output handler
#    turning each running request's EngineCoreOutput into a RequestOutput - incremental detokenising, stop checks,
#    the request's queue - and, when serving, its server-sent event; vllm/v1/engine/async_llm.py `output_handler`,
#    output_processor.py `OutputProcessor.process_outputs`), in a process beside the engine core's busy loop, so
#    overlapped with the GPU's step by a p-norm (HOST_OVERLAP_P), as TRTLLM_STREAM_TOKEN_S is for trtllm-serve. It
#    shows only where the GPU's step is short: small models, large running batches. Before 0.12 the per-sequence
#    host time is serialised with the step instead (SEQ_STEP_OVERHEAD_S / VLLM_V1_SEQ_STEP_OVERHEAD_S). The figure
#    is the host's, which a plan does not name; it is priced by the host class the GPU implies (as
#    DESKTOP_HOST_SERIAL_REL is), and the fit rows separate three:
#    - datacentre GDDR cards (A10G, L4, T4, A10, L40S: cloud instances of one card and 4-8 vCPUs, shared by the
#      engine core, the API server and the benchmark client): 150 us. FITTED on LLMSERVE-* (A10G, release not
#      stated: priced as current; gemma-3-1b-it at 32 / 64 users, where the GPU's step is ~6-7 ms, measured TPOT
#      7.27 / 10.18 ms: inverting the p-norm leaves 190 / 147 us per token) and WMXL4-* (vLLM 0.23 on a 4-vCPU L4
#      node, Qwen2.5-0.5B at 16 / 32 users: ~236 / ~175 us). Scanned over the vLLM GDDR fit rows (TPOT median /
#      p90, throughput median / p90): 0 -> 8.3 / 19.3, 9.7 / 27.1 %; 100 us 8.2 / 19.1, 8.8 / 25.8; 150 us 8.1 /
#      19.2, 9.1 / 25.6; 200 us 8.2 / 23.0, 9.3 / 24.5 (with the desktop figure at 0); 150, the rows' middle;
#      LLMSERVE-0014 -28 % -> +1 %, WMXL4-0018 -12 % -> -3 %.
#    - GeForce / workstation desktops (DESKTOP_HOST_CLASSES): 70 us. FITTED on WAYNETRT's RTX PRO 6000 workstation
#      (vLLM 0.18, Llama-3.1-8B FP8 / NVFP4 at 128 users: TPOT 12.0 / 9.26 ms, -0240 / -0258, which bound it: at
#      105 us (0.7 x 150) they go to +24 / +50 %) and AZIR5070TI-* (vLLM 0.13). With the cloud figure at 150 us,
#      GDDR fit rows (TPOT, throughput median / p90): desktop 50 us 8.0 / 18.3, 9.4 / 25.1 %; 70 us 8.1 / 18.3,
#      8.8 / 25.1; 90 us 8.1 / 19.1, 9.1 / 25.0: 70.
#    - HBM servers: 0. WAYNETRT's H100 host measures 4.67 ms TPOT for Llama-3.1-8B at 128 users (-0036), so at
#      most ~30 us per token there, and KVCACHEDH100-* (vLLM 0.19, H100, ~500 running Qwen3-0.6B sequences at a
#      median TPOT of 5.71 ms) at most ~11 us: 20 us moved no HBM scope by more than 0.2 points, 40 us put
#      WAYNETRT-0036 from +19 % to +37 %.
#    Hosts within a class still differ (AccelMark's RTX 4090 / A6000 boxes measure 3-5x the one-user step of others).
VLLM_STREAM_TOKEN_S_CLOUD_GDDR = 150e-6
VLLM_STREAM_TOKEN_S_DESKTOP = 70e-6
DESKTOP_HOST_CLASSES = ("geforce", "workstation")
DESKTOP_HOST_SERIAL_REL = 0.7

# Requests of an offline burst (`vllm bench serve` / benchmark_serving.py at --request-rate inf: every request sent at
# once into an idle engine) that reach vLLM's engine before its first iteration starts (serving.burst_stagger_s); the
# rest wait for that iteration and are prefilled after it, as a closed loop's wave waits for its first arrival
# (serving.wave_stagger_s, whose closed-loop fit rows take one). The engine loop wakes on the first request and drains
# what else is queued at that instant (V1 v1/engine/core.py `_process_input_queue`; V0's MQLLMEngine
# `run_engine_loop` -> `handle_new_input`, read at 0.6.3), so the count is a race of host timings a plan does not name.
# Chosen on the fit rows LHLMI300X-* (vLLM 0.6.3 on 8x MI300X, Llama-3.1-405B, ~80-token prompts, one burst of 1-16;
# median TTFT measured against the whole burst's prefill, which the model priced alone): 2 prompts 258 / 261 / 259 ms
# at the 512- / 1,024- / 2,048-token budgets against 240 for one (-0005 / -0041 / -0077: neither middle member waits),
# 4 prompts 319 / 329 / 322 ms (-0008 / -0044 / -0080: about half a ~240 ms wait), 8 prompts 468 / 463 / 472 ms
# (-0011 / -0047 / -0083: a whole one). With 1: the 2-prompt rows -7 % -> +81 %, the 4-prompt rows +44..+48 %;
# with 2: -0044 / -0047 / -0050 / -0080 / -0083 / -0086 -25 / -42 / -36 / -24 / -43 / -41 % -> +9 / +5 / -8 / +11 /
# +3 / -11 %, the multi-step rows -0116 / -0119 / -0122 (--num-scheduler-steps 15, whose prompts run as single
# steps) -49 / -55 / -50 % -> -26 / -17 / -22 %; against: -0014 / -0017 (16 / 32 prompts at the 512-token budget,
# whose chunk iterations this model prices ~30 % above the measured ~200 ms) -0 / +29 % -> +25 / +46 %. vLLM TTFT
# on HBM fit rows, median / p90: 16.9 / 49.2 % -> 14.1 / 45.4 % (branch s37-vhbm). Held out, checked only:
# DSTACK405B-0007 / -0010 / -0013 (the same MI300X setup measured by dstack, 0.6.3.dev116, bursts of 4 / 8 / 16)
# -38 / -25 / -39 % -> -10 / -19 / -22 %; the vLLM TTFT HBM held-out median 23 -> 21 %. Only TTFT moves.
BURST_FIRST_DRAIN_REQUESTS = 2

# TensorRT-LLM before v0.8 shares every factor above with the current engine; its one difference
# (GQA decode attention) is KV_READ_PER_QUERY_HEAD below.
BW_EFF["trt-llm-2023"] = BW_EFF["trt-llm"]
COMPUTE_EFF["trt-llm-2023"] = COMPUTE_EFF["trt-llm"]
LAYER_OVERHEAD_S["trt-llm-2023"] = LAYER_OVERHEAD_S["trt-llm"]
PREFILL_TOKEN_LAYER_S["trt-llm-2023"] = PREFILL_TOKEN_LAYER_S["trt-llm"]
STEP_OVERHEAD_S["trt-llm-2023"] = STEP_OVERHEAD_S["trt-llm"]

# Engines added for the calibration rows' vocabulary (issue 10). Each starts from the engine it is
# built like and keeps that engine's factors unless named rows say otherwise (below, after fitting):
# - LMDeploy (TurboMind: C++/CUDA, persistent batch, its own GEMM tuning) and TGI (Rust router,
#   flash/paged attention kernels shared with vLLM, CUDA graphs for decode) are serving engines:
#   LMDeploy starts from TensorRT-LLM's factors, TGI from vLLM's.
# - gpt-fast (torch.compile mode="reduce-overhead": one CUDA graph per decode step, Triton int4/int8
#   mat-vecs) and TinyChat (AWQ's W4A16 kernels, fused attention, eager PyTorch launch) are
#   single-batch engines: gpt-fast starts from vLLM's kernels/overheads, TinyChat from ExLlamaV2's.
# - MLX (mlx-lm, Apple silicon only) starts from llama.cpp Metal's factors.
for _new, _base in (("lmdeploy", "trt-llm"), ("tgi", "vllm"), ("gpt-fast", "vllm"), ("tinychat", "exllamav2"),
                    ("mlx", "llama.cpp-metal")):
    BW_EFF[_new] = dict(BW_EFF[_base])
    COMPUTE_EFF[_new] = dict(COMPUTE_EFF[_base])
    LAYER_OVERHEAD_S[_new] = LAYER_OVERHEAD_S[_base]
    PREFILL_TOKEN_LAYER_S[_new] = PREFILL_TOKEN_LAYER_S[_base]
    STEP_OVERHEAD_S[_new] = STEP_OVERHEAD_S[_base]
BW_EFF["vllm"] = {**BW_EFF["vllm"], "gddr": VLLM_GDDR_BW_EFF}
# llama.cpp's HIP build (ROCm, AMD GPUs; engine_family "llama.cpp-hip", `engines.llama_cpp_backend`) compiles the
#    CUDA backend (ggml/src/ggml-cuda) with hipcc, but not its graphs: ggml-cuda/common.cuh defines USE_CUDA_GRAPH
#    only `#if (defined(GGML_CUDA_USE_GRAPHS) || defined(GGML_HIP_GRAPHS)) || defined(GGML_MUSA_GRAPHS)`, and
#    GGML_HIP_GRAPHS is an opt-in CMake option (off by default), so every kernel of a token is launched from the
#    host, as in the CUDA builds before graphs: it takes "llama.cpp-2024"'s launch-bound figures (LAYER_OVERHEAD_S,
#    STEP_OVERHEAD_S), and the current builds' bandwidth figures and per-token element-wise time
#    (PREFILL_TOKEN_LAYER_S: kernel work, compiled from the same current sources, not launches). Its quantised
#    prefill GEMMs: HIP_DP4A_MMQ_EFF; BF16 without BF16 arithmetic: performance.hip_without_bf16.
BW_EFF["llama.cpp-hip"] = dict(BW_EFF["llama.cpp"])
COMPUTE_EFF["llama.cpp-hip"] = dict(COMPUTE_EFF["llama.cpp"])
LAYER_OVERHEAD_S["llama.cpp-hip"] = LAYER_OVERHEAD_S["llama.cpp-2024"]
PREFILL_TOKEN_LAYER_S["llama.cpp-hip"] = PREFILL_TOKEN_LAYER_S["llama.cpp"]
STEP_OVERHEAD_S["llama.cpp-hip"] = STEP_OVERHEAD_S["llama.cpp-2024"]
# TGI, fitted on its own rows (DSTACKTGI-*: TGI sha-11d7af7, the ROCm build of 2024-10-04 with
# ROCM_USE_FLASH_ATTN_V2_TRITON, Llama-3.1-405B bf16 on 8x MI300X; the only TGI serving source in the fit set,
# so these are TGI x HBM factors, not MI300X ones, and the held-out DSTACK405B vLLM rows of the same node keep
# vLLM's):
# - prefill GEMM / attention rate 0.43 of peak (vLLM's 0.55 / 1.28): its single-request TTFTs of 10,000 /
#   16,000 / 32,000 / 64,000 / 128,000-token prompts (DSTACKTGI-0036/-0062/-0060/-0058/-0056) are 1.34 / 1.29 /
#   1.28 / 1.28 / 1.28 x what vLLM's factor gives, flat in the length (so not the attention's share alone);
# - 330 us per running sequence per decode step: TGI's Python shard ends every step with a loop over the batch's
#   requests after a GPU -> CPU sync (server/text_generation_server/models/flash_causal_lm.py `generate_token`:
#   per request the incremental detokenisation `decode_token`, the stopping criteria, a `Generation` message),
#   not overlapped with the GPU (v3.0.0 keeps the same loop: taken for every release); the router then filters and
#   streams each. The short-prompt bursts
#   whose batch decodes with no prefill after it leave 0.39 / 0.32 / 0.33 ms per sequence per step above the
#   roofline at 256 / 512 / 1,024 running (DSTACKTGI-0026/-0029/-0032, with the prefill rate above): their
#   median. At 64-128 running they leave 0.5-0.75 ms (fixed costs not separated).
COMPUTE_EFF["tgi"] = {**COMPUTE_EFF["tgi"], "hbm": 0.43}
SEQ_STEP_OVERHEAD_S["tgi"] = 330e-6
# gpt-fast's LAYER_OVERHEAD_S above assumes torch.compile(mode="reduce-overhead") replays each decode step as
#    one CUDA graph. On Intel GPUs (PyTorch's XPU backend) that mode captures nothing: Inductor's cudagraph
#    trees accept only CUDA devices (torch/_inductor/cudagraph_utils.py, check_multiple_devices_or_any_cpu_nodes;
#    "Inductor cudagraphs silently no-op on XPU", intel/torch-xpu-ops issue #5338, and "mode='reduce-overhead'
#    silently no-ops on XPU", intel/intel-xpu-backend-for-triton issue #1721), so every Triton kernel of a step
#    is launched from the host through the XPU launcher. What that launching costs per layer on an Intel GPU
#    comes from SGLang's XPU graph runner (sgl-project/sglang PR #25853, 2026-05-20): capturing the decode
#    step as one XPUGraph took Llama-3.2-3B (28 layers) on an Arc Pro B60 from 18 to 13 ms per token at
#    batch 1, ~5 ms / 28 = ~180 us per layer of dispatch left exposed without a graph. Host-side (Level Zero /
#    SYCL submission), so it is taken for the HBM Max series as well. Not fitted on any calibration row; the
#    held-out torchao XPU rows (TORCHAO-0027/0029/0031/0033, Max 1100) are its check.
NO_GRAPH_LAYER_OVERHEAD_S_INTEL = 180e-6
GRAPH_REPLAY_ENGINES = frozenset({"gpt-fast"})  # engines whose LAYER_OVERHEAD_S is a graph replay's

# A serving engine's decode step without CUDA / HIP graphs (vLLM --enforce-eager, SGLang --disable-cuda-graph,
#    `workload.cuda_graphs = false`; and the steps vLLM's own capture does not cover, engines.decode_runs_eager): the
#    host launches every kernel of every layer through PyTorch, so the step costs, beside the graph replay's
#    LAYER_OVERHEAD_S, about kernels per layer x layers x the host time per kernel
#    (performance.eager_decode_layer_s). Kernels per decode layer of a dense Llama-style model in vLLM's model code
#    (vllm/model_executor/models/llama.py, 0.6: LlamaDecoderLayer.forward): input RMSNorm (fused add + norm, 1),
#    qkv_proj (1), rotary embedding (1), attention (cache write `reshape_and_cache` + paged decode attention, 2),
#    o_proj (1), post-attention RMSNorm (1), gate_up_proj (1), SiluAndMul (1), down_proj (1) = 10, plus the two
#    RowParallelLinear all-reduces under tensor parallelism (2). FP8 W8A8 checkpoints (Fp8LinearMethod) quantise each
#    linear's input first (`scaled_fp8_quant`): 4 more. SGLang's Llama (python/sglang/srt/models/llama.py) has the
#    same modules. Host time per kernel: one figure, the host's PyTorch dispatch and launch left exposed per kernel.
#    Fitted on DSTACKCMP's --enforce-eager MI300X runs (fit split, dstack 2024-11, vLLM 0.6.4 ROCm, Llama-3.1-405B
#    FP8 at TP 4 and 8: 16 kernels x 126 layers): at 4 sequences they run 33.1 / 46.0 ms per step at TP 8 / 4 against
#    22.8 / 35.9 ms predicted with graphs, the same ~10 ms at both TP sizes, i.e. a cost per layer and not a share of
#    the GPU's time (so added, not overlapped as HOST_LAUNCH_OVERLAPPED is for HF transformers, whose Python per
#    layer is ~0.75 ms). Over the 38 scored eager rows (DSTACKCMP-0037..0074, offline, 4-256 prompts of 128 / 2,048 /
#    32,784 tokens) the median |error| is 20 / 15 / 10 / 6.5 / 8 / 12 % at 3 / 4 / 5 / 6 / 6.5 / 8 us per kernel: 6
#    us (96 us per layer of this FP8 model). The rows at 128+ sequences stay 10-25 % fast at TP 8 (the gap grows with
#    the batch, which a launch cost does not explain) and the TP 4 rows whose KV cache overflows (long prompts, 128+
#    sequences) 60-70 % fast: not this cause. It is of the order of a kernel launch's few microseconds (CUDA / HIP
#    launch latency, as in llama.cpp's pre-graph builds: LAYER_OVERHEAD_S 90 against 25 us for ~22 ggml kernels per
#    layer, ~3 us each). One figure for NVIDIA and AMD: the cost is host work (Python, PyTorch's dispatcher, the
#    driver's launch) and no fit row runs NVIDIA with --enforce-eager. Checks there, not used to choose it:
#    AccelMark's vLLM 0.7.3 runs on H100 / H200 with 28.6k-token prompts (fit rows, eager past V0's 8,192-token
#    capture) go from 0.42-0.95 to 0.50-1.05 of the measured TPOT (ACCELMARK-0012/-0024/-0036/-0060/-0072); the
#    held-out INFBENCHL4 SGLang runs on an L4 (--disable-cuda-graph, a 7B at 28 layers, GPU-bound) move by 2-3 %, and
#    DSTACK405B's single-request long-prompt TPOTs (held out, MI300X, V0 eager past 8,192) from 0.51-0.68 to
#    0.60-0.81 (its multi-request long-prompt TPOTs stay 2-10x too low: not this cause). MoE layers launch more
#    kernels (routing, fused-MoE) and are not counted beyond these.
EAGER_KERNELS_PER_LAYER = 10
EAGER_TP_KERNELS_PER_LAYER = 2
EAGER_FP8_QUANT_KERNELS_PER_LAYER = 4
EAGER_HOST_S_PER_KERNEL = 6e-6
# SGLang's extend (prefill) passes run eagerly (performance.sglang_prefill_host_layer_s, source cited there: only
#    DECODE / TARGET_VERIFY / IDLE batches replay a CUDA graph, piecewise graphs for extend are off by default in
#    0.5.5): the host's time per layer of such a pass, overlapped with the GPU's (p-norm HOST_OVERLAP_P). FITTED on
#    TONYGH200's closed-loop fit rows (TonyLi15/sglang-benchmark, SGLang 0.5.5.post3, Qwen2.5-3B-Instruct, 36 layers,
#    one GH200, 8 / 32 users, ~60 / ~270-token prompts, ~30 / ~60-token outputs; -0004..-0051): a pass of a few
#    short prompts is ~2 ms of GPU work there, and SGLang pauses the running decodes for it (serving.
#    sglang_prefill_first), so every new request costs the others a host-bound pass: the rows' TPOT grows as the
#    outputs shorten (32 users: 8.9 ms at 62 output tokens, 13.0 ms at 31, -0006 / -0012), i.e. more passes per
#    decode step. Median |error| of TONYGH200's throughput / TTFT / TPOT rows at 0 / 150 / 250 / 300 / 350 us per
#    layer: throughput 57 / 45 / 19 / 14 / 12 %, TTFT 41 / 36 / 22 / 12 / 19 %, TPOT 34 / 27 / 17 / 12 / 5 %: 300 us,
#    where the three balance (~25 us per eager kernel of a ~12-kernel layer, Python and PyTorch dispatch included,
#    against vLLM's 6 us per kernel for an eager decode step, EAGER_HOST_S_PER_KERNEL). The other SGLang fit rows
#    hide it under longer GPU work: ACCELMARK's A100 single-user TTFTs (x86 host, Llama-3-8B) move +2..+5 points,
#    DSTACKR1 (DeepSeek-R1 at TP 8) not at all. ONE host (a Grace CPU, ARM Neoverse V2): an x86 host's Python
#    dispatch is likely faster and a plan does not name the host, so short-prompt small-model TTFTs on x86 may come
#    out somewhat slow. Checks (held out, not used): GPUSTACK-0128/-0132 (Qwen3-8B on one H100, 4 users) +0.03 ->
#    +0.11 and -0.36 -> -0.24; DATACRUNCH's 70B / 405B at TP 4 / 8 on H200 move both ways (TTFT closer, TPOT at
#    ~1 req/s -0039 -0.11 -> +0.26).
SGLANG_EXTEND_HOST_LAYER_S = 300e-6
# TensorRT-LLM's PyTorch backend (the default from 1.0, engines.trtllm_tensorrt_engine) decodes from captured CUDA
#    graphs (tensorrt_llm/llmapi/llm_args.py CudaGraphConfig: batch sizes 1-31, 32, 64, 128 unless padding is on);
#    a step it does not replay (`workload.cuda_graphs` false: no graph for that batch) runs the model's Python
#    modules kernel by kernel. As for HF transformers (HOST_LAUNCH_OVERLAPPED), that host time runs ahead of the
#    GPU and overlaps with it (performance.trtllm_eager_decode_s: p-norm HOST_OVERLAP_P): a step takes about the
#    longer of the two, not their sum. FITTED on AZIR5070TI's default-config runs (fit split, TensorRT-LLM
#    1.3.0rc15 under WSL2 + Docker, Llama-3.1-8B-Instruct, 32 layers, RTX 5070 Ti), whose batches of 40-56 fell
#    between the captured 32 and 64 (the source's README 'debug' section: "33-63 never captured -> eager"): NVFP4 at
#    40 / 48 / 56 users decodes in 22.4 / 21.9 / 22.3 ms (AZIR5070TI-0051/-0045/-0054) against 9.0 / 10.0 / 9.3 ms
#    with padding to a captured graph (-0057/-0060/-0063): flat while the GPU's share grows, i.e. host-bound at ~22
#    ms, ~0.65 ms per layer; FP8 at 48 users (-0021, GPU time ~16 ms) takes 18.1 ms, so the host time is not added
#    to the GPU's. 600 us per layer, chosen on those 12 rows (TPOT, throughput, TTFT of the four runs): see
#    tests/test_trtllm_gddr.py. One source, one host (WSL2's paravirtualised launches may cost more than a native
#    Linux host's): a check on other hosts is owed. The TensorRT-engine runtime (before 1.0) enqueues the engine
#    from C++: no change there. The same host time prices the PyTorch backend's prefill passes, which never replay
#    a graph (performance.trtllm_prefill_host_layer_s, branch s30-trt): WAYNETRT's single-user PyTorch-backend rows
#    (native Linux H100 host) then come out 28-51 % slow, AZIR's 1-16-user rows -30..-9 %: hosts differ.
TRTLLM_EAGER_HOST_LAYER_S = 600e-6

# LMDeploy's TurboMind prefill (its own tuned GEMMs, tune_gemm=1 in the rows) on HBM, fitted on its
# batch-1 TTFT rows alone, where nothing but the prompt's forward pass is timed: 2,048-token prompts of
# Llama-2-7B / 13B, InternLM-20B (TP 2) and Llama-2-70B (TP 4) on A100 SXM4 in 139 / 242 / 217 / 402 ms
# (LMDEPLOY-0007/0009/0045/0047/0087/0089/0132/0135): 0.68 of the fp16 peak leaves them within
# -4..+14 % (TensorRT-LLM's 0.60, which it started from, put them 7-28 % slow).
COMPUTE_EFF["lmdeploy"]["hbm"] = 0.68
# SGLang's prefill on HBM (cuBLAS / CUTLASS GEMMs, FlashInfer prefill attention), fitted on its own single-user
# TTFT rows, where SGLang runs the prompt as a pass of its own (serving.sglang_prefill_first) and the client sees
# its first token one decode iteration later (serving.first_token_emission_s): Llama-3.1-8B on an A100 SXM4 40GB
# under SGLang 0.5.6 (AccelMark) prefilled 28,639 tokens in ~2.97 s (ACCELMARK-0083: TTFT 2,988 ms less a 15.7 ms
# TPOT, -0084), ~4.0e14 GEMM + ~2.2e14 causal-attention FLOPs at ~207 TFLOPS, and 255 tokens in ~19.6 ms
# (ACCELMARK-0074: TTFT 32.5 ms less the 12.9 ms TPOT of -0075), ~4.1e12 FLOPs at ~209 TFLOPS: 0.66-0.67 of the
# A100's 312 TFLOPS in wall time, everything included (the best-shape A100 matmul reaches 0.87: S. Bekman's
# "Maximum Achievable Matmul FLOPS", cited at AMD_CDNA3_GEMM_REL_EFF). vLLM's 0.55, which SGLang inherited, puts
# -0083 at 1.30 and -0074 at 1.26 (predicted / measured); 0.62 / 0.70 / 0.75 give -0083 1.16 / 1.04 / 0.98 and
# -0074 1.20 / 1.15 / 1.12 (the short prompt sits at the roofline's ridge, ROOFLINE_SMOOTHING_P). At 0.70 the fit
# TTFT rows of the scope (ACCELMARK, DSTACKR1) go from 21 % to 15 % median error; the offline static batch of 100
# ShareGPT prompts (ACCELMARK-0073) moves the other way, 1.14 -> 1.25 (its varied outputs drain; a plan of fixed
# lengths cannot say so). DeepSeek's block-FP8 GEMMs of early releases keep their cap (BLOCK_FP8_GEMM_EFF).
COMPUTE_EFF["sglang"] = {**COMPUTE_EFF["sglang"], "hbm": 0.70}
# vLLM's GEMMs on full-rate GDDR cards (RTX A6000 and the like; GeForce cards take GEFORCE_HALF_RATE_GEMM_EFF
#    below): 0.55 was vLLM's HBM prefill figure, assumed here. Fitted on the closed-loop rows where big
#    batched iterations bind on the tensor rate: Qwen2.5-7B bf16 on an RTX A6000 under vLLM 0.23 at 64-512
#    users (~40-token prompts, ~52 outputs: iterations of ~110-450 tokens) served 2,128 / 3,138 / 4,040 /
#    3,896 tok/s at TPOT 27.5 / 36.0 / 53.1 / 56.4 ms (LDSINGH-0015..0025): at 0.55 -8..-21 % and +18..+38 %,
#    at 0.70 -4..0 % and -2..+14 % (4,040 tok/s x (1 + 40 / 52) tokens x 14.2 GFLOP is ~100 TFLOPS, 0.65 of
#    the 154.8 TFLOPS peak over whole iterations, attention and element-wise work included). Intel's Arc Pro
#    B60 rows under vLLM's XPU build (VLLMARC-*, same class) gain on TPOT (+10..+34 % -> +8..+33 %) and lose
#    on TTFT (-23..-51 % -> -39..-58 %); their median TTFT is ~8 s on one GPU and on four alike, at 1k-5k-token
#    prompts, which a GEMM rate does not explain, so they do not pin this figure.
COMPUTE_EFF["vllm"] = {**COMPUTE_EFF["vllm"], "gddr": 0.70}

# AMD Instinct CDNA 3 (MI300X, MI325X): the matrix cores' achievable rate is a smaller fraction of the data-sheet
#    peak than on the NVIDIA cards COMPUTE_EFF was fitted on (TensorRT-LLM, LMDeploy and vLLM rows on A100 / H100).
#    AMD's own account of the gap (ROCm blogs, "Measuring Max-Achievable FLOPs - Part 2", 2025) is the GEMM libraries'
#    efficiency and the clock the part holds under a sustained matmul load, below the boost clock of the peak.
#    S. Bekman's "Maximum Achievable Matmul FLOPS" table (stas00/ml-engineering, compute/accelerator/README.md, MI300X
#    row added 2025-01-06 in faa7ddf; read at 744d01e): BF16 best-shape matmul 668.4 of 1,300 TFLOPS on an MI300X
#    (51.4 %, ROCm 6.3, PYTORCH_TUNABLEOP_ENABLED=1; "450TFLOPS using ROCm-6.1"), against 794.5 of 989 on an H100 SXM
#    (80.3 %) and 271.2 of 312 on an A100 SXM (86.9 %). The engines' GEMMs on CDNA 3 therefore reach 0.514 / 0.803 =
#    0.64 of the fraction COMPUTE_EFF gives them on NVIDIA (taken for FP8 alike: the table has no MI300X FP8 figure).
#    Not fitted. The MI325X (same compute, 1,000 W) reaches 60.4 % in the same table (0.75): one figure for the
#    architecture, so its compute-bound estimates are on the slow side. CDNA 4 (MI355X, 68.0 %) and CDNA 2 are left at
#    COMPUTE_EFF. Fit rows it meets: AMD's vLLM offline runs on 8x MI300X (AMDPERF-0001..0024), where 405B's decode
#    steps of 500-2,000 sequences are compute-bound.
AMD_CDNA3_GEMM_REL_EFF = 0.514 / 0.803
AMD_CDNA3_ARCHITECTURE = "CDNA 3"
# vLLM's 16-bit linear layers in a decode step on AMD CDNA 3 (`performance.vllm_rocm_hipblaslt_matvec`): where its
#    skinny mat-vec kernels do not take a GEMM, it runs through PyTorch's F.linear, i.e. hipBLASLt (PyTorch's
#    default BLAS on gfx94x), whose small-M GEMMs stream the weights slower than the skinny kernels' split-K
#    dot products. Read in the release wheels:
#    - vLLM 0.6.3 / 0.8.4 `UnquantizedLinearMethod.apply` is `F.linear(x, layer.weight, bias)` on every platform
#      (vllm/model_executor/layers/linear.py): no skinny kernel upstream.
#    - vLLM 0.8.5 (2025-04-28) routes it through `dispatch_unquantized_gemm()` -> `rocm_unquantized_gemm`
#      (vllm/model_executor/layers/utils.py): on MI250 / MI300 (`on_mi250_mi300`), fp16 or bf16 activations, K % 8
#      == 0 and no bias, `ops.wvSplitK` for `0 < n < 4` rows (tokens of the step) and `ops.LLMM1` for n == 1,
#      F.linear otherwise (VLLM_ROCM_USE_SKINNY_GEMM, on by default). Added by vllm-project/vllm PR #15830 ("Add
#      skinny gemms for unquantized linear on ROCm", opened 2025-03-31); the lm_head (vocab_parallel_embedding.py)
#      keeps F.linear.
#    - AMD's fork (ROCm/vllm, rocm/vllm images) had them since ROCm/vllm PR #54 (2024-06-17, `wvSpltK`) in
#      vllm/model_executor/layers/tuned_gemm.py `apply_skinny`: fp16 activations only (`inp_view.dtype !=
#      torch.float16` returns None), n <= 4; bf16 runs hipBLASLt / rocBLAS (its tuned solutions) at every n.
#    The rate: PR #15830's own measurement (benchmark_latency, Llama 3.1 70B fp16, TP 8, 32 prompt / 128 output
#    tokens; the GPU is not named, the kernels are gated to MI250 / MI300 and taken as MI300X's): 1.4118 s without
#    skinny kernels against 1.2892 s with them at batch 1, 1.4460 against 1.3445 s at batch 2, i.e. 0.97 / 0.80 ms
#    per decode step (127 steps; the 32-token prefill runs F.linear either way). The linear layers hold 68.4 B
#    parameters (70.6 B less the 128,256 x 8,192 embedding and lm_head), 17.1 GB per GPU in fp16, 4.03 ms at the
#    rate BW_EFF["vllm"]["hbm"] gives an MI300X (0.80 x 5.3 TB/s): taking the skinny kernels to reach that rate,
#    F.linear streams them at 4.03 / (4.03 + 0.97) = 0.81 (batch 1) and 4.03 / (4.03 + 0.80) = 0.83 (batch 2) of it.
#    0.82. Not fitted on calibration rows. Applied at every n hipBLASLt takes, not only the measured 1 and 2: its
#    small-M tiles pad the step's rows to a tile, so a memory-bound GEMM costs the same from 1 to a few dozen rows
#    (LHLMI300X's vLLM 0.6.3 TPOTs sit ~18 ms above the model from 1 to 32 sequences alike). fp8 / quantised
#    weights (torch._scaled_mm and the quantisation kernels) and CDNA 2 / 4 are not priced by it (no measurement).
#    Effect (branch s38-rocmtpot): LHLMI300X TPOT (fit, vLLM 0.6.3, Llama-3.1-405B bf16 on 8 x MI300X) median -23 ->
#    -17 %; its output tok/s rows -15 -> -22 % (their duration already came out long: the drain of exponential output
#    lengths, serving.varied_drain_s, is longer than the sonnet outputs' spread). Held out, checked only: DSTACK405B's
#    1-16-request TPOTs on the same node and build -4..-8 % -> +0..+7 %; the same node under TGI (DSTACKTGI, fit)
#    decodes at 43.5 ms and LHLMI300X's vLLM at 66 ms, so the rest of LHLMI300X's gap (~13 ms at batch 1) is not taken
#    for vLLM's.
VLLM_ROCM_HIPBLASLT_MATVEC_REL = 0.82
VLLM_ROCM_SKINNY_GEMM_FROM = (0, 8, 5)
VLLM_ROCM_SKINNY_MAX_ROWS = 3  # upstream `rocm_unquantized_gemm`: wvSplitK for 0 < n < 4
VLLM_ROCM_FORK_SKINNY_MAX_ROWS = 4  # ROCm/vllm tuned_gemm.py `apply_skinny`: n <= 4, fp16 only
# vLLM V0's decode attention on AMD GPUs (`performance.vllm_rocm_generic_paged_decode`). The ROCm backend
#    (vllm/attention/backends/rocm_flash_attn.py `ROCmFlashAttentionImpl.forward`) runs a decode step through its
#    own `ops.paged_attention_rocm` when `_use_rocm_custom_paged_attention` (0.6.2 - 0.8.4; vllm/platforms/rocm.py
#    `use_rocm_custom_paged_attention` from 0.8.5) allows it: fp16 / bf16 queries, head size 64 or 128, KV block 16
#    or 32, 1 <= query heads per KV head <= 16 and the batch's longest sequence at most 32,768 tokens (0.6.2 - 0.9.1)
#    or 128 x 1,024 (0.9.2 - 0.10.0); otherwise `PagedAttention.forward_decode`, the CUDA kernel vLLM hipifies
#    (csrc/attention/attention_kernels.cu `paged_attention_kernel`), whose grid has one block per query head
#    (`head_idx = blockIdx.x; kv_head_idx = head_idx / num_queries_per_kv`), so each KV head is loaded once per
#    query head of its group, as KV_READ_PER_QUERY_HEAD's engines do (the full group: an upper bound where the
#    re-reads hit the caches). 0.6.1 has no custom kernel (rocm_flash_attn.py calls `PagedAttention.forward_decode`
#    for every decode; read in the 0.6.1 and 0.6.2 wheels). Limits read in the 0.6.2, 0.6.3, 0.8.5, 0.9.0, 0.9.1,
#    0.9.2 and 0.10.0 wheels. AMD's fork (rocm/vllm builds) is left out (its kernel's limits not read). No fit row
#    reaches it (branch s38-rocmtpot: no fit row moved). Held out, checked only: DSTACK405B's single 64K / 128K-token
#    requests (0.6.3) -27 / -40 % -> -2 / -5 % TPOT; ARGONNE (0.6.1, every decode on the generic kernel) output tok/s
#    median +45 -> +39 %.
VLLM_ROCM_CUSTOM_PAGED_ATTN_FROM = (0, 6, 2)
VLLM_ROCM_CUSTOM_PAGED_ATTN_128K_FROM = (0, 9, 2)
VLLM_ROCM_CUSTOM_PAGED_ATTN_MAX_LEN = {False: 32_768, True: 128 * 1024}  # by "from 0.9.2"
VLLM_ROCM_CUSTOM_PAGED_ATTN_HEAD_SIZES = (64, 128)
VLLM_ROCM_CUSTOM_PAGED_ATTN_MAX_GQA = 16

# Board power bounds the tensor rate of dense GEMMs (hardware.board_power_tflops). Under a long dense GEMM a card
#    draws its board power (TDP) before it reaches its rated boost clock when its tensor cores are wide for that
#    power, and GPU Boost then lowers the clock: NVIDIA's own forum answer for the 70 W T4 (65 TFLOPS FP16 rated,
#    ~24 TFLOPS from a long cuBLAS loop): "the performance of ~24T is arising due to power capping of the GPU"
#    (forums.developer.nvidia.com/t/about-gpu-peak-performance/264462). The sustained rate is then the energy per
#    dense tensor FLOP of the architecture times the board power, whatever the rated clock: BOARD_TFLOP_PER_J, per
#    architecture (catalog `architecture` prefix), from published long torch.matmul loops (zzc0721/
#    torch-performance-test-data issues, 100 x 8192^3 GEMMs per size, each card at its default power limit):
#    - Ada: L4 (72 W, 121 TFLOPS rated) BF16 59.4 TFLOPS at 8192 (issue #120, 2026-01-12): 0.83 TFLOP/J; L40S
#      (350 W, 362 rated) FP16 264-269 (issue #43, 2025-10-05): 0.77 TFLOP/J. Two Ada dies (AD104 at 72 W, AD102
#      at 350 W) at one energy per FLOP: at these limits the clock, not the voltage, gives way, so the bound is
#      linear in the watts. 0.80, their middle.
#    - Blackwell GB20x: RTX PRO 6000 Blackwell Server Edition (600 W, 504 rated) BF16 417 TFLOPS (issue #162,
#      2026-04-09): 0.70 TFLOP/J, a LOWER bound (417 is 0.83 of its rating, not visibly power-bound). Taken: it
#      leaves the 600 W cards unbound and bounds the 300 W Max-Q at 262 TFLOPS (60 % of its 439 rating), the most
#      the public GEMM figures allow. The Workstation Edition's 350-368 at 600 W (issue #160) would give 0.60, but
#      bound the 600 W cards that the fit rows LLMQPRO6000X1-* (llm.q training) and C15013-* (llama.cpp prefill)
#      show unbound (1.02x / 0.97x of measured before, 0.95x / 0.90x at 0.60).
#    - Ampere GA10x (GA102/GA104/GA106, Samsung 8 nm): 0.42, one figure for the three dies. The NVIDIA A10 (150 W,
#      125 rated, full-rate FP32 accumulate) reaches BF16 56 / FP16 54 TFLOPS in chsasank/device-benchmarks'
#      torch.matmul sweep (README at 02b8262, row 'Nvidia A10 24GB'; its FP32 14 of 31.2 is the same 0.45 of
#      rating: the card holds about its 885 MHz base clock): 0.37 TFLOP/J. Its siblings at 8192^3 (zzc0721
#      issues): RTX A4000 (140 W) BF16 56.1 / FP16 60.9 (#97): 0.40-0.43; A40 (300 W) 110.6-122.3 (#185): 0.37-0.41;
#      RTX A6000 (300 W) 123.3 (database.md): 0.41. 0.40 would bind the RTX A6000 at 150 of 154.8 TFLOPS, which its
#      fit rows do not show (XD-0472..0513 llama.cpp prefill median |error| 6.3 -> 7.5 %, LDSINGH-* vLLM
#      throughput 5.5 -> 6.3 %, PRIMERL-* training, all already slow); 0.42 is the lowest figure that leaves it and
#      the A40 unbound. Bound: A10 at 78.75 of 125 TFLOPS (0.63), RTX A4000 at 73.5 of 76.7; A5000, A10G (70 rated:
#      half-rate FP32 accumulate, measured 69.5 BF16 at 10240^3, #126) and GeForce (half-rate) unbound. Jetson
#      (GA10B SoC, module power) is left out. The bound GA10x card's fit rows are MOONCAKEA10-* (A10, Poisson-rate
#      runs, priced at the load's duty: below).
#    - Ampere GA100: 0.86. A100 PCIe 40GB (250 W, 312 rated) BF16 215.3 TFLOPS at 8192^3 (211.7 at 10240, 234.1
#      at 4096; issue #108, 2026-01-05): 0.86. The 400 W SXM parts reach 264.5-266.5 (database.md, A100 / A800
#      SXM4 80GB): 0.66 TFLOP/J, unbound, as the figure says (0.86 x 400 > 312 x 0.8). Bound: only the A100 PCIe
#      40GB (269 of 312); A30 (165 W, 165 rated) and the 300 W PCIe 80GB parts stay unbound.
#    - Hopper GH100: NOT applied, though the GEMM runs show the bound. H100 PCIe (350 W, 756.5 rated) BF16 492.8 at
#      8192^3, 495.9 at 4096 (issue #95, 2025-12-14): 1.41-1.42 TFLOP/J; H800 PCIe (350 W) 503.8 (database.md,
#      AutoDL): 1.44; the 700 W SXM's 797.5 (#79) is 1.14, unbound. 1.42 would price the H100 / H800 PCIe at 621 of
#      756.5 and the H100 NVL (400 W) at 710 of 835.5. The only fit rows on those cards, llama.cpp-2024 prefill on
#      the H100 PCIe (XD-0514..0555), get worse with it: single-GPU XD-0538 0.95x -> 0.92x, XD-0544 0.87x -> 0.84x
#      of measured, `mlrig validate` prefill llama.cpp hbm fit median 9.5 -> 11 % (s34). llama.cpp's mma.sync
#      kernels reach ~23-65 % of the H100's rating (COMPUTE_EFF below), about the bound's 1.42 x 350 = 497 TFLOPS
#      or less, so the power limit need not bind them; a bound on the ACHIEVED rate (min(eff x rating, TFLOP/J x
#      W)) rather than on the rating would express that, and is not built.
#    GeForce desktop cards and other architectures: no bound (it would lie above their rating for the figures above).
#    The bound is on the GEMMs' ACHIEVED rate; the engine efficiencies (COMPUTE_EFF, TRAIN_GEMM_EFF, ...) are
#    fractions of a rating that an unbound card's cuBLAS reaches BOARD_BOUND_GEMM_EFF of (S. Bekman,
#    ml-engineering, 'Maximum Achievable Matmul FLOPS': H100 SXM 792 of 989 TFLOPS), so the rating a bound card
#    is priced at is min(rating, TFLOP/J x watts / BOARD_BOUND_GEMM_EFF). Not fitted on calibration rows. Fit rows
#    that check it: WAYNETRT-0205..0258 (vLLM on the Max-Q at 1-128 users: median |error| of the throughput rows
#    28 % -> 20 %), WMXL4-* (vLLM, L4: TTFT 64 % -> 40 %), FSDPQLORA-0045/-0046 (70B QLoRA on RTX 6000 Ada: 2.2x
#    -> 1.9x of measured, the rest is not this), XD-0304..0345 (llama.cpp prefill, RTX 6000 Ada: median 1.06x ->
#    0.98x). Bound Ada / Blackwell cards in the catalog (16-bit): L4 (0.60 of its rating), RTX 6000 Ada (0.82), RTX
#    PRO 6000 Max-Q (0.60), L40S (0.97), RTX 5000 Ada (0.96); GeForce laptop parts only on llama.cpp's doubled
#    FP16-accumulate rate (performance.peak_tflops).
#    The bound is on power averaged over a window, not on a pass (serving.board_power_duty has the sources): a
#    Poisson-rate load below the card's capacity that asks for a share d < 1 of the sustained rate runs at the
#    rating (performance.peak_tflops' `gemm_duty`); closed loops and saturated runs keep the bound. Fit rows:
#    MOONCAKEA10-* (vLLM 0.6.2 on an A10 at 2-8 req/s, d = 0.10-0.43; median TTFT 0.25-1.55 over -> within 0.24).
AMPERE_GA10X_TFLOP_PER_J = 0.42
BOARD_TFLOP_PER_J: dict[str, float] = {
    "Ada Lovelace": 0.80, "Blackwell (GB20": 0.70, "Ampere (GA100)": 0.86,
    "Ampere (GA102)": AMPERE_GA10X_TFLOP_PER_J, "Ampere (GA104)": AMPERE_GA10X_TFLOP_PER_J,
    "Ampere (GA106)": AMPERE_GA10X_TFLOP_PER_J,
}
BOARD_BOUND_GEMM_EFF = 0.80

# Decode attention over a GQA/MQA cache: current kernels (FlashInfer/FlashAttention decode in
#    vLLM and SGLang, TensorRT-LLM's XQA, llama.cpp's flash-attention kernels) load each KV head once
#    for all the query heads of its group. TensorRT-LLM before v0.8 ("trt-llm-2023", the v0.5/v0.6.1
#    TRT061-* tables) ran GQA decode through its multi-head kernel, which reads a KV head once per
#    query head: the KV bytes of a step are multiplied by num_heads / num_kv_heads (8 for Llama-2-70B,
#    29 for Falcon-180B, 1 for the MHA GPT-J and Llama-2-7B). Source: TensorRT-LLM's XQA blog
#    (docs/source/blogs/XQA-kernel.md, Jan 2024): XQA "reduc[es] data loading" for MQA/GQA generation
#    and gives 1.9-2.4x Llama-70B throughput at ISL/OSL 128/2048. The full group factor is an upper
#    bound (L2 hits between query heads of a group are ignored).
#    LMDeploy's TurboMind sits between the two by release: its decode kernel serves up to 4 query heads per
#    thread block in v0.1-v0.2, so Llama-2-70B's group of 8 reads its cache twice (engines.
#    turbomind_kv_reads_per_step). Fit rows: LMDeploy's own A100 table, Llama-2-70B TP 4 (v0.1.0a1,
#    LMDEPLOY-0124..0172): TPOT at 16-64 users -11..-24 % -> -5..-11 %, its MHA models (7B / 13B / 20B) unchanged.
KV_READ_PER_QUERY_HEAD = frozenset({"trt-llm-2023"})
# llama.cpp without flash attention (-fa 0: llama-bench's default before 2025, LocalScore/llamafile's
#    only mode, every build before FA existed in April 2024) runs decode attention as two ggml_mul_mat
#    calls, KQ = K x Q and KQV = V x softmax(KQ), that broadcast each KV head over the query heads of its
#    group (ggml's mul_mat broadcasts src0 over dim 2 with ratio ne12 / ne02, one mat-vec per query head),
#    so the cache is read once per query head, as in TensorRT-LLM before XQA. The XD-* llama-bench rows
#    (b2795-b2843) measure it: tg4096 minus tg512 of the same model and card (KV at ~2048 vs ~256 tokens)
#    costs 2.3-5.5x (median ~2.8x) what one read of the added cache at the card's decode bandwidth costs for
#    Llama-3-8B (group 4: RTX 3090, A6000, A40, RTX 6000 Ada, A100, H100 PCIe, M1/M3 Max) and 3.1-6.8x for
#    Llama-3-70B (group 8); the big-L2 Ada cards (RTX 4070 Ti / 4080 / 4000-5000 Ada) show 1.3-1.9x (the
#    re-reads partly hit L2; not modelled: the full group factor is an upper bound, as above).
#    The flash-attention kernels (ggml_flash_attn_ext) load a KV head once for its query heads.
UNFUSED_GQA_DECODE_ENGINES = ("llama.cpp",)  # engine families starting with these names, flash attention off

# HF transformers' default (dynamic) KV cache grows by concatenation: every decode step each layer runs
#    `torch.cat([past, new], dim=-2)` (the legacy tuples before 4.36, `DynamicCache.update` since), which
#    reads the whole cache and writes a new copy of it, besides the attention kernel's own read: passes
#    over the cache per step beyond that read, at plain bandwidth (`performance.decode_kv_read_factor`).
#    The static cache (`cache_implementation="static"`) writes in place; it is not the default. Rows:
#    Llama-2-13B fp16 on an A100 SXM4, batch 16 (optimum benchmark): 40.2 ms TPOT at 1-512 tokens
#    (OPTGPTQ-0080, 3.3 GB of cache at the mean context) and 69.9 ms per token at 512-1,024 tokens
#    (OPTGPTQ-0026: 9.8 GB) - ~30 ms for ~6.5 GB more cache, three passes over it at ~0.85 TB/s.
KV_EXTRA_PASSES_PER_STEP: dict[str, float] = {"transformers": 2.0}

# Near the roofline's ridge a kernel reaches neither roof: a GEMM whose compute and memory times are
#    alike streams its tiles and runs its tensor-core math with only partial overlap (tile and wave
#    quantisation, pipeline fill; NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001,
#    2023, ch. 2-3: measured GEMM throughput bends below the two bounds around the ridge). Each kernel
#    group's time is the p-norm of its compute and memory times, (c^p + m^p)^(1/p) (performance.pass_time):
#    the max when one side dominates (batch-1 decode, long prefill), up to 2^(1/p) x the max where they
#    are equal. p = 2 from the rows that sit near the ridge: TensorRT-LLM's 128-token prompts on A100/H100
#    (TRT061-0038/0040/0050/0052/0054: TTFT 25-46 % under the max), LMDeploy's 70B TP 4 decode at 32-64
#    users (LMDEPLOY-0160/0162/0164/0172: TPOT 18-28 % under) and its ShareGPT request rates
#    (LMDEPLOY-0173..0208: 8-38 % over); held out, LMDeploy 0.2's request rates (LMDEPLOY2) go from
#    15 % to 5 % median error (11 % once COMPUTE_EFF['lmdeploy'] was fitted). p = 3 or 4 leave most of
#    those errors in place. Cost: llama.cpp's HBM prefill rows, whose COMPUTE_EFF was fitted under the
#    plain max, move from 18.1 % to 20.0 % median error.
ROOFLINE_SMOOTHING_P = 2.0

# Tensor-parallel synchronisation: every one of the 2 all-reduces per layer (Megatron-LM) is also a
#    barrier. Besides the ring's wire time and per-step link latency (interconnects.allreduce_time_s)
#    it costs the collective kernel's launch and hand-shake and the wait for the slowest rank
#    (GPUs drift apart within a layer), a fixed time per all-reduce that does not shrink with the
#    model. Seconds per all-reduce, by link kind:
#    - NVLink: small. gpt-fast (torch.compile, NCCL over NVSwitch) decodes Llama-2-7B at 328 tok/s
#      on 8 A100s (GPTFAST-0011: 3.0 ms per token for 64 all-reduces) and 70B at 62.5 tok/s
#      (GPTFAST-0014), which leaves at most ~20 us per all-reduce including the ring latency of
#      interconnects.allreduce_time_s; LMDeploy 0.1 Llama-2-70B on 4 x A100 SXM4 (29-31 ms,
#      LMDEPLOY-0124..0136) leaves ~30 us. 10 us of barrier on top of the ring's latency.
#    - PCIe: see PCIE_ALLREDUCE_PROTOCOLS below (`pcie_allreduce_time_s` replaces this figure for PCIe
#      links); the "pcie" entry stays the fallback for other link kinds and the base of "network".
#    - network (across nodes): the PCIe figure plus a NIC hop.
#    - xgmi (AMD Infinity Fabric mesh): the NVLink figure. Same mechanism (a kernel's launch and flag
#      handshake over direct GPU-GPU load/store links); no fit row isolates it. Until the catalog had an
#      Infinity Fabric entry, MI300X got NVLink's, so 10 us is what it paid before too.
#    Checked against NCCL's own model (branch s36-lmdgddr, no change): NVIDIA/nccl v2.18.3-1 (ea38312, 2023-06)
#    src/graph/tuning.cc prices a single-node NVLink ring all-reduce per protocol as baseLat + 2(N-1) x hwLat +
#    bytes / (busBw x N / 2(N-1)): LL 6.6 + 0.6 us/step at busBw / 4, LL128 14.0 + 1.9 us/step at 0.92 busBw,
#    Simple 8.4 + 3.4 us/step at busBw, with busBw = 12 links x 20 GB/s on A100 (src/graph/topo.h SM80_NVLINK_BW;
#    NCCL's maintainer: "with the protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s"
#    of H100's 450, NVIDIA/nccl-tests issue #212, 2024-05-06). On 4 A100s that is 10.6 us at 16 KiB (a batch-1
#    70B decode), 32.5 us at 1 MiB (64 sequences) and 54 us at 4 MiB, against 40 / 45 / 61 us here (ring latency
#    + wire time + the 10 us above): the price here is at or above NCCL's own for every decode-sized message
#    (tests/test_nvlink_nccl_allreduce.py); it falls under NCCL's only past ~9 MiB (13 % at 32 MiB, a 2,048-token
#    prefill of a 70B: 5 ms of a ~400 ms pass). So the LMDeploy TP ShareGPT bias is not this term: those rows
#    (LMDEPLOY-0189..0208, fit) are over-predicted by +9..+11 % throughput at TP 2 and +21..+25 % at TP 4 (TTFT
#    -20..-29 %) while TP 1 ShareGPT throughput (LMDEPLOY-0173..0188) is -9..-1 % and the fixed-length TP 4 closed
#    loops at the same 1 MiB decode messages (LMDEPLOY-0137..0172) have TPOT and throughput within -12..+13 %: a
#    per-request cost that grows with TP, not a per-step one. Doubling this whole term would
#    close the ShareGPT rows but put the batch-1 TP 4 rows (LMDEPLOY-0123..0136) 22 % slow.
#    Branch s36-lmdtp: the level is at or above NCCL's, but its growth with the message was not: 5 us from 16 KiB
#    to 1 MiB here against NCCL's 22 us (LL moves at a quarter of the link), and the fixed-length TP 4 TPOT rows
#    grow from batch 1 to 64 as NCCL's does (-1..-12 %, all low, before). TurboMind now pays NCCL's growth on top
#    of this fixed part (NVLINK_NCCL_RING_ENGINES): ShareGPT TP 4 throughput +21..+25 % -> +15..+19 %, TP 2
#    +9..+11 % -> +7..+8 %, TTFT hardly moves. No per-request cost that grows with TP was found in TurboMind's
#    source (SOURCES-inference.md, s36-lmdtp), so the rest stays unexplained.
#    vLLM's V1 engine does not pay the NVLink figure where its custom kernel runs one-shot (decode-sized messages):
#    that kernel's barriers are its two peer hops (performance.vllm_one_shot_allreduce, branch s38-vgddr).
ALLREDUCE_SYNC_S: dict[str, float] = {"nvlink": 10e-6, "xgmi": 10e-6, "pcie": 100e-6, "network": 150e-6}
# PCIe all-reduce through NCCL's ring, per NCCL protocol (`interconnects.pcie_allreduce_time_s`): (fixed seconds
#    per all-reduce, seconds per ring step, host-staging bandwidth in GB/s), on top of the ring's PCIe wire time.
#    Where GPUs lack peer-to-peer access vLLM disables its custom all-reduce ("Custom allreduce is disabled
#    because your platform lacks GPU P2P capability", the DLVLLM-* startup logs), and on more than two GPUs
#    without a full NVLink mesh it disables it whatever P2P allows ("Custom allreduce is disabled because it's
#    not supported on more than two PCIe-only GPUs"; `should_custom_ar`: "for 4 or more non NVLink-capable
#    GPUs, custom allreduce provides little performance improvement over NCCL"; vllm/distributed/
#    device_communicators/custom_all_reduce.py @ 0ad8064; the same warning is in the startup logs of vLLM
#    builds on NCCL 2.21.5, i.e. torch 2.5's vLLM 0.6.4-0.7): the all-reduce is one pynccl call. NCCL chooses
#    per message size the protocol it predicts fastest (NCCL docs, NCCL_PROTO: LL, LL128, Simple; LL128 only
#    where NVLink allows it): LL's 8-byte flag+data stores need no handshake but move
#    half their bytes and poll (low fixed cost, low bandwidth); Simple moves whole chunks behind a flag and fence
#    per step (higher fixed cost, the path's bandwidth). Without P2P the steps go through host memory.
#    - Per ring step: NCCL's own latency for a PCIe ring, LL 1.0 us / Simple 5.7 us (NVIDIA/nccl
#      src/graph/tuning.cc `hwLat` PCI Ring, unchanged from v2.18.3-1 through v2.21.5-1, the NCCL of vLLM 0.7's
#      torch 2.5, and v2.26.2-1, that of vLLM 0.10's torch 2.7; NCCL_PCIE_RING_PROTOCOLS below), 2(N-1) of
#      them. Until 2026-11 the ring's steps were priced at the link catalog's generic PCIe latency, 12 us
#      each: at TP 2 the fixed costs absorb the difference, but at TP 8 the 14 steps cost 168 us of a ~210 us
#      all-reduce, three to eight times NCCL's own figure.
#    - Fixed and bandwidth: fitted on vLLM 0.10 on two A100s without P2P, which decodes one sequence at
#      8.8 / 29.2 / 58.0 ms per token (Qwen2-7B / Qwen2.5-32B / Qwen2-72B, DLVLLM-0002 / -0088 / -0110), ~44 us
#      per all-reduce beyond the wire time at 7-16 KB, while 10-200 sequences (70 KB-1.6 MB per all-reduce;
#      DLVLLM-0004..0030, -0090..-0100, -0112..-0118) add ~84 us plus the bytes at ~12 GB/s: the small
#      messages take LL, the rest Simple (the two lines cross at ~58 KB). With NCCL's steps taken out, LL
#      keeps 42 us and Simple 72.6 us per call (the former 20 / 60 us plus two 12 us steps less two of NCCL's:
#      the TP-2 rows' predictions are unchanged; median error 11 % -> 4 % when fitted). That per-call part
#      (NCCL's base latency, 6.6 / 8.4 us, the kernel's launch in the step's graph, the wait for the slowest
#      rank) does not grow with the ring. The LL bandwidth (1.3 GB/s) only shapes the crossover.
#    - The Intel Arc TP-4 rows (VLLMARC-*, oneCCL) get the same path. Their TPOT was over-priced by 19-30 %
#      (VLLMARC-0012 / -0015 / -0018) with six 12 us steps, 17-28 % with NCCL's, throughput 12-20 % -> 11-19 %
#      under; their TTFT moved from 51 % to ~18 % under when the protocols were introduced.
#    - Peer-to-peer (branch s34-vllmgddr): where the cards have PCIe P2P (`interconnects.pcie_peer_to_peer`: NVIDIA
#      data-centre / professional boards, Intel Arc Pro) NCCL's P2P transport writes each ring step into the next
#      GPU's buffer, so the staging term goes and the ring's bytes cross the link once at the protocol's share of
#      it (NCCL_PCIE_RING_PROTOCOLS' fractions); the fixed and per-step costs stay (`pcie_allreduce_time_s`).
#      Fit rows: VLLMARC-0010..-0018 (4 Arc Pro B60, whose host the source says is P2P): TPOT +17 / +28 / +18 % ->
#      +4 / +16 / +3 %, throughput -11 / -19 / -13 % -> +3 / -8 / +1 %; their TTFT moves -19 % -> -55 % (the
#      single-B60 rows' TTFT is -30..-34 % already: the Arc's long prefills are under-priced whatever the link,
#      and the staging term had hidden that at TP 4). Held out, checked only: ACCELMARKGD-0075..-0085 (vLLM 0.7.3,
#      Llama-3-70B on 8 RTX A6000): TTFT at 1 user +69 % -> +5 %, at 2-25 req/s +56 / +423 / +1271 / +132 % ->
#      -4 / -12 / -30 / -23 %, TPOT +19..+116 % -> -17..+11 %, offline throughput -37 % -> -5 %; the GeForce
#      RTX 4090 x 8 rows of the same source (no P2P) do not move.
#    Not modelled: the host-memory contention of 8 GPUs staging through host memory at once (no fit row
#    runs more than 4 GPUs on this path).
PCIE_ALLREDUCE_PROTOCOLS: tuple[tuple[float, float, float], ...] = ((42e-6, 1.0e-6, 1.3), (72.6e-6, 5.7e-6, 12.0))
# Engines whose tensor-parallel all-reduce on PCIe is one plain NCCL / RCCL call issued by a compiled runtime on
#    the decode step's own stream, priced by NCCL's own ring model (`interconnects.nccl_ring_allreduce_time_s`,
#    NCCL_PCIE_RING_PROTOCOLS) instead of PCIE_ALLREDUCE_PROTOCOLS' host-staging figures, which were fitted
#    on vLLM's rows.
#    - MLC-LLM: TVM Unity's disco runtime lowers each of the two all-reduces per layer to ncclAllReduce /
#      RCCL's on the worker's default stream (apache/tvm src/runtime/disco/ccl/ccl.cc, `AllReduce`;
#      MLC blog 2023-10-19: "reduces collective library calls to NCCL/RCCL"), of a batch-1 fp16 activation
#      (hidden x 2 bytes: 16 KB for a 70B), the step captured with --use-cuda-graph. Its 2023 rows:
#      Llama-2-70B q4f16_1 at 34.5 tok/s on 2 x RTX 4090 and 29.9 on 2 x RX 7900 XTX over PCIe
#      (MLCBLOG-0007 / -0008, 29.0 / 33.4 ms per token). With the weights' time scaled by what the same
#      source's single-GPU rows on the same cards measure against the model (RTX 4090 0.88 x, MLCBLOG-0002
#      / -0005; RX 7900 XTX 1.02 x, -0001 / -0004), ~2.7 / ~1.3 ms remain for 160 all-reduces: ~17 / ~8 us
#      each. NCCL's model gives ~10.7 us at TP 2 (LL: 6.6 + 2 x 1.0 us and 16 KB at a quarter of PCIe 4.0's
#      31.5 GB/s); PCIE_ALLREDUCE_PROTOCOLS gave 57 us (MLCBLOG-0007 / -0008 at -26 % / -18 %; now -9 % / +1 %).
#      Not explained here: vLLM 0.10's NCCL path on A100s without P2P (DLVLLM-*) pays ~57 us at the same
#      size, though NVIDIA's driver gives GeForce RTX 40 cards no P2P either (NCCL's shared-memory transport
#      in both cases); a host difference (e.g. GPUs on two CPU sockets) would explain it but is not stated.
PCIE_NCCL_RING_ENGINES = frozenset({"mlc"})
# NCCL's ring latency model on PCI, as in NCCL 2.18 (the release of the CUDA 12.1 time the MLC rows ran on;
#    NVIDIA/nccl v2.18.3-1 = ea38312, src/graph/tuning.cc: `baseLat` Ring LL 6.6 / Simple 8.4 us, `hwLat` PCI
#    Ring LL 1.0 / Simple 5.7 us per step, Ring LL's bus bandwidth x 1/4 for an all-reduce; LL128 is off on
#    PCIe; an older tuning.cc, 01afd20a, had 3.6 us for LL's base): (base s, per ring step s, fraction of
#    the link's bandwidth) for LL and Simple. The link's PCIe figure stands in for NCCL's per-channel topology speeds.
NCCL_PCIE_RING_PROTOCOLS: tuple[tuple[float, float, float], ...] = ((6.6e-6, 1.0e-6, 0.25), (8.4e-6, 5.7e-6, 1.0))
# The same protocols' shares of a PCIe link when NCCL's P2P transport writes GPU to GPU (LL 1/4, Simple the whole
#    link), in the order of PCIE_ALLREDUCE_PROTOCOLS (LL, Simple): interconnects.pcie_allreduce_time_s.
NCCL_PCIE_P2P_BANDWIDTH_FRACTIONS: tuple[float, ...] = tuple(p[2] for p in NCCL_PCIE_RING_PROTOCOLS)
# NCCL's ring protocols on a single-node NVLink ring, as NCCL 2.18 prices them (NVIDIA/nccl v2.18.3-1 = ea38312,
#    src/graph/tuning.cc: `baseLat` Ring LL 6.6 / LL128 14.0 / Simple 8.4 us, `hwLat` NVLink Ring LL 0.6 / LL128 1.9
#    / Simple 3.4 us per ring step, bus-bandwidth share LL 1/4 for an all-reduce (8-byte lines of 4 data bytes and
#    a flag, both directions), LL128 0.92, Simple 1): (base s, per ring step s, fraction of the link's bandwidth).
#    NCCL runs the protocol its model predicts fastest, so a decode step's all-reduce (hidden x 2 bytes x the
#    running sequences: 16 KiB - 4 MiB for a 70B) moves at a quarter of the link up to ~0.8 MiB at TP 4 and pays
#    LL128's higher latency above it. Used for the part of the all-reduce that grows with the message
#    (`interconnects.nccl_ring_allreduce_excess_s`) in NVLINK_NCCL_RING_ENGINES; the link's catalogued bandwidth
#    stands in for NCCL's per-channel figure (12 links x 20 GB/s = 240 GB/s on A100, topo.h SM80_NVLINK_BW) as for
#    PCIe. LL's bandwidth cap (tuning.cc llMaxBws: 87.7 GB/s on one A100 node) is above a quarter of 300 GB/s.
NCCL_NVLINK_RING_PROTOCOLS: tuple[tuple[float, float, float], ...] = (
    (6.6e-6, 0.6e-6, 0.25), (14.0e-6, 1.9e-6, 0.92), (8.4e-6, 3.4e-6, 1.0))
# Engines whose NVLink tensor-parallel all-reduce is one ncclAllReduce per call, its message growth priced by NCCL's
#    protocols (NCCL_NVLINK_RING_PROTOCOLS) rather than at the whole link's bandwidth; the fixed part per call (the
#    ring's per-step link latency and ALLREDUCE_SYNC_S, pinned by LMDeploy's batch-1 TP 2 / 4 rows) stays.
#    - LMDeploy's TurboMind: each layer's two all-reduces are ftNcclAllReduceSum on the step's stream
#      (src/turbomind/models/llama/LlamaDecoderSelfAttentionLayer.cc and LlamaFfnLayer.cc at v0.1.0a1 = 9c46b27 and
#      v0.2.0 = b319dce); its custom all-reduce is off unless `enable_custom_all_reduce` is set (default 0,
#      triton_backend/llama/LlamaTritonModel.cc), and later releases keep `communicator: str = 'nccl'` as the default
#      (lmdeploy/messages.py TurbomindEngineConfig, v0.7.2 to v0.12.3). Its fixed-length TP 4 rows showed the
#      message growth: the TPOT of Llama-2-70B on 4 x A100 grows from batch 1 to 64 by 8 ms measured (29 -> 37 ms,
#      LMDEPLOY-0124 / -0162 and -0127 / -0164) against 3.7 predicted with the whole link (every batch >= 16 TPOT
#      row of LMDEPLOY-0137..0172 was low, -1..-12 %; now -5..+1 %).
#      TensorRT-LLM before 0.12 also calls NCCL (TRT061-* TP rows) but is not listed: its rows were not checked.
NVLINK_NCCL_RING_ENGINES = frozenset({"lmdeploy"})
# Engines whose tensor-parallel all-reduce over NVLink is their own peer-to-peer kernel rather than NCCL's
#    ring (interconnects.allreduce_time_s, peer_to_peer): its latency does not grow with the GPU count.
#    - gpt-fast: its TP rows run with ENABLE_INTRA_NODE_COMM=1 (PyTorch's intra-node all-reduce; the
#      README's tensor-parallel table). Llama-2-7B decodes at 169 / 254 / 328 tok/s on 2 / 4 / 8 A100s
#      (GPTFAST-0009..0011): after the weights' share, ~14 / 19 / 22 us per all-reduce, where a ring's
#      2(N-1) NVLink steps would be 22 / 46 / 94 us (with ALLREDUCE_SYNC_S).
#    - vLLM (custom_all_reduce since v0.3, NVLink-connected NVIDIA GPUs; --disable-custom-all-reduce
#      turns it off) and SGLang (the same kernel; --disable-custom-all-reduce). On AMD Infinity Fabric
#      only where vLLM runs it there (`engines.vllm_custom_allreduce_on_amd`): upstream vLLM disabled it
#      on ROCm until 2025 (its log: "Disabled the custom all-reduce kernel because it is not supported
#      on AMD GPUs", 0.6.x), so vLLM 0.6.2 on 8 x MI300X (VLLMMI300X-0001/0003) keeps RCCL's ring; AMD's
#      ROCm/vllm fork has had it since ROCm/vllm PR #27 (2024-05-30, "custom all reduce on AMD GPUs
#      which are connected via 1-hop XGMI"), upstream since PR #14125 / #16010 (gfx94x, April 2025).
#      SGLang's HIP port of the kernel from 0.4.3 (`engines.sglang_custom_allreduce_on_amd`, SGLang PR #3406); its
#      0.4.2.post4 runs on 8 x MI300X (DSTACKR1-*) are RCCL's. Not modelled: AMD's AITER all-reduce and QuickReduce
#      (opt-in quantised all-reduce for large messages) in later vLLM / SGLang ROCm builds.
#    LMDeploy's TurboMind (the LMDEPLOY-* TP rows, v0.1) and TensorRT-LLM before 0.12 (the TRT061-* TP rows,
#    0.5 / 0.6.1) use NCCL: not listed. TensorRT-LLM from 0.12 picks its own kernel by itself
#    (`engines.trtllm_custom_allreduce`, applied in performance._setup, NVIDIA NVLink only).
PEER_ALLREDUCE_ENGINES = frozenset({"gpt-fast", "vllm", "sglang"})
# Engines whose own all-reduce kernel on NVLink is one-shot for small messages, with no hand-shake beyond the
#    two link hops `interconnects.allreduce_time_s` already prices, so ALLREDUCE_SYNC_S (fitted on NCCL's launch,
#    hand-shake and rank drift: GPTFAST-*, LMDEPLOY-*) is not added (performance.pass_time): TensorRT-LLM from 0.12
#    (`engines.trtllm_one_shot_allreduce`: the AUTO strategy's size rule and the kernel's one block_barrier, read
#    in its source). Larger messages (the two-shot kernel's second barrier, NCCL) keep it. Evidence, fit rows only:
#    WAYNETRT-* TPOT (trtllm-serve 0.20, PyTorch backend and TensorRT engine, H100 SXM NVLink, TP 2 / 4) was
#    over-predicted at 1-16 users by +20..+61 % with the 10 us on each of the 64 (TP 2) / 128 (TP 4) all-reduces
#    of a step; the TRTBENCH70-* offline runs (TP 8, passes of hundreds of tokens, above the one-shot size) do not
#    move. Not a fitted figure: the rule follows the kernel. vLLM's custom all-reduce has its own rule
#    (`performance.vllm_one_shot_allreduce`, below).
ONE_SHOT_ALLREDUCE_ENGINES = frozenset({"trt-llm"})
# vLLM's custom all-reduce picks its one-shot kernel (`performance.vllm_one_shot_allreduce`) below these message
#    sizes, by rank count (2, 4, 6 or 8 ranks; vllm csrc/custom_all_reduce.cuh, `CustomAllreduce::allreduce`:
#    `world_size_ == 2` always; fully connected `world_size_ <= 4 && bytes < 512 * 1024` or
#    `world_size_ <= 8 && bytes < 256 * 1024`; the same rule since the kernel's first version, vllm-project/vllm
#    PR #2192, to the 2025-26 trees), and calls NCCL above its registered buffer
#    (vllm/distributed/device_communicators/custom_all_reduce.py: `max_size=8192 * 1024`).
VLLM_ONE_SHOT_ALLREDUCE_MAX_BYTES: dict[int, float] = {4: 512 * 1024, 8: 256 * 1024}
VLLM_CUSTOM_ALLREDUCE_MAX_BYTES: float = 8192 * 1024

# Fraction of the ideal pipeline speed-up that llama.cpp's layer split reaches on prompts longer than
#    one micro-batch (`performance.llama_cpp_pipeline_speedup`). The XD-* multi-GPU rows disagree by
#    model: Llama-3-8B on 4 GPUs reaches 80-95 % of the ideal at pp4096 (RTX 3090 XD-0045 vs XD-0086,
#    A100 PCIe XD-0354 vs XD-0378, RTX 6000 Ada, A40, H100 PCIe), Llama-3-70B Q4_K_M only 0-40 %
#    (A40 XD-0444 vs XD-0468, A100 SXM4 XD-0402, RTX A6000). 0.5 lay between them; with Q4_K_M priced on the
#    cuBLAS path (performance.llama_cpp_cublas_dequant, COMPUTE_EFF["llama.cpp-2024"] refitted) 0.6 centres the
#    multi-GPU fit rows (signed medians: GDDR F16 -2 %, Q4_K_M +5 %; HBM Q4_K_M +3 %) and lowers the
#    median error of prefill llama.cpp hbm 14 % -> 11 % and gddr 10.3 % -> 9.7 % (0.7: gddr p90 38 % -> 41 %).
#    The 70B Q4_K_M rows stay the disagreement: A100 SXM4 x4 (XD-0400..0402) measures slower than A100 PCIe x4
#    (XD-0358..0360) of the same source, model and quantisation, which no pipeline figure reconciles.
LLAMA_CPP_PIPELINE_EFF = 0.6
# 1-MOE-SYNC-PIPELINE. No pipelining for MoE prompts in llama.cpp builds whose MUL_MAT_ID synchronises the host
#    (`performance.llama_cpp_moe_host_sync`). Until PR #15525 (1-HIP-IDS) `ggml_cuda_mul_mat_id` copied the expert
#    ids to the host and called cudaStreamSynchronize before it could launch the expert GEMMs (ggml-cuda.cu at
#    6481eb4c, September 2024, for every MUL_MAT_ID; mmq.cu at 4227c9be, August 2025, for the batched MMQ path).
#    One host thread drives all the GPUs of a layer split (ggml_backend_sched runs the graph's splits in order,
#    launching asynchronously), and the pipelining credited above comes from that thread queueing the next
#    micro-batch on the first GPUs while the last ones still compute. A synchronisation inside every MoE layer
#    holds the thread until that GPU has drained, so the GPUs take the micro-batches one after another: no gain.
#    Source-derived, not fitted; the fit rows agree: AMD's DeepSeek-V3 Q4_K_M llama-bench on 8 MI300X at b5997
#    (before the PR) measured pp512 / pp1024 / pp2048 / pp4096 439.14 / 439.02 / 432.00 / 420.19 t/s (AMDLCPP-0004,
#    -0013..-0015: flat; with the credit mlrig said +2 / +49 / +120 / +205 %), while the same model at b6652 (after
#    it) scales 514 / 883 / 1,356 / 1,650 (AMDLCPP-0008, -0016..-0018), as the dense Llama-3.1-70B does (-0012,
#    -0019..-0021).

# Fixed time per GPU boundary that a llama.cpp layer split (-sm layer, several GPUs) crosses in one
#    pass, beyond the hidden state's wire time (interconnects.p2p_time_s, ~10 us): ggml's backend
#    scheduler runs each GPU's layers as a graph split of its own and, at every boundary, copies the
#    split's inputs to the next device and synchronises the two (ggml-backend.cpp,
#    ggml_backend_sched_compute_splits: tensor copy + event record / wait, or a full device synchronise
#    where events are missing), so the next GPU's kernels start only after the previous GPU's drained.
#    The XD-* rows give it as (t_N - t_1) / (N - 1) for the same model at tg512 on 1 and N GPUs:
#    Llama-3-8B (Q4_K_M and F16) 0.05-0.42 ms per boundary on RTX 3090 x 2/4/6, RTX A6000, A40,
#    RTX 4000/5000/6000 Ada, A100 PCIe and H100 PCIe x 4 (median 0.25 ms); A100 SXM4 x 4 ~1 ms (not
#    separated). Applied once per pass (a prompt's micro-batches add a few such waits, negligible there).
LLAMA_CPP_SPLIT_BOUNDARY_S = 0.25e-3
# The same hand-off on AMD GPUs (llama.cpp's HIP build of the CUDA backend: hipMemcpyPeerAsync + events at each
#    boundary), per vendor in `llama_cpp_split_boundary_s`. The RX7900X6-* rows (6x RX 7900 XTX, ROCm, llama-bench
#    tg128, the source's own single-GPU row as the baseline) give (t_N - t_1) / (N - 1): Gemma-3-1B Q4_K_M
#    0.89 ms (2 GPUs) and 0.57 ms (6 GPUs), gpt-oss-20b MXFP4 1.58 ms (2) and 0.63 ms (6); gpt-oss-120b 4 -> 6
#    GPUs 0.70 ms. Median of the four single-GPU-based figures: 0.76 ms, three times NVIDIA's. The difference
#    cancels the single-GPU time, which mlrig prices 1.3-2.4x too fast on ROCm (no ROCm llama.cpp rows were
#    calibrated; see SOURCES-inference.md), so it does not inherit that error.
LLAMA_CPP_SPLIT_BOUNDARY_S_AMD = 0.76e-3

# Weight-format families: de-quantisation work in the mat-vec lowers the bandwidth reached.
#   f16: fp32/bf16/fp16 (no de-quantisation); q8: q8_0 / int8 / fp8; legacy: q4_0, q4_1, q5_0,
#   q5_1 (one scale per block of 32, cheap); kquant: q2_k..q6_k, iq* (super-blocks with 6-bit
#   sub-scales, more ALU per byte); gpu4: GPTQ / AWQ / EXL2 / Marlin kernels; mxfp4/nvfp4.
# Rows: llama.cpp CUDA Q4_K_M decode (XD-*) reaches F16's efficiency once per-layer overhead is
# separated (8B vs 70B pairs), so kquant = 1.0 on CUDA;
# Q4_0 decode (C15013-*, scoreboard) ~0.95. Metal: 1.0 for every GGUF format; what a format costs
# there is ALU time, not bandwidth (MATVEC_DEQUANT_OPS below; it was a flat 0.65 for k-quants).
FORMAT_DECODE_EFF: dict[str, dict[str, float]] = {
    "default": {"f16": 1.0, "q8": 0.92, "legacy": 0.95, "kquant": 1.0, "gpu4": 0.85, "fp4": 0.85},
    "llama.cpp-metal": {"f16": 1.0, "q8": 1.0, "legacy": 1.0, "kquant": 1.0, "gpu4": 0.80, "fp4": 0.80},
}

# vLLM's XPU build (Intel Arc) runs MXFP4 MoE weights through Intel's own persistent MoE GEMM kernel,
# which loads the 4-bit weights prepacked into a hardware-friendly layout ("for 4-bit memory loads, a
# hardware-friendly format can increase efficiency by up to 30 %") and converts FP4 to BF16 in a few
# instructions (a bitcast and one multiply), reaching "over 80 % efficiency of hardware capacity"
# (Intel vLLM team, vLLM blog 2025-11-11 "Fast and Affordable LLMs serving on Intel Arc Pro B-Series
# GPUs with vLLM", Optimisations 1-3). So the fp4 family reads at the engine's plain bandwidth figure
# there (`performance.format_efficiency`), not at the CUDA kernels' 0.85 above. A vendor figure, not a
# fit: the Arc Pro B60 rows (VLLMARC-*) still decode faster than this gives (their TPOT 12-43 % over).
XPU_PREPACKED_FP4_ENGINES = frozenset({"vllm"})

# vLLM's XPU build runs a MoE layer's routed experts as a chain of separate kernels around the two expert GEMMs,
# each reading and writing the layer's activations in bf16 through memory (performance.xpu_moe_activation_s).
# Read in the sources: vLLM's `IpexMxfp4MoEMethod` (vllm/model_executor/layers/quantization/mxfp4.py, the XPU
# branch of `Mxfp4Config.get_quant_method`; read at 007d500) pads the hidden states to a multiple of 128
# (`torch.nn.functional.pad`) before and copies the unpadded slice back out after (`[..., :hidden].contiguous()`),
# and pads the intermediate size per rank to a multiple of 128 (`create_weights`, the Marlin branch it shares); the
# layer it calls, IPEX's `GatedMLPMOE` for XPU (intel/intel-extension-for-pytorch, intel_extension_for_pytorch/
# transformers/models/xpu/fusions/linear_fusion.py, `_IPEXGatedMLPMOEXPU.forward`), runs topk_softmax, then
# `moe_scatter` (every token copied once per selected expert, k rows of the padded hidden size), `moe_gemm` for
# w13, the SwiGLU (`swigluoai_and_mul`: reads k x 2I, writes k x I per token), `moe_gemm` for w2 and `moe_gather`
# (reads the k rows, writes one). The GEMMs' own operand reads and result writes stay inside the GEMM kernels
# (compute-bound at prefill sizes); the pad, scatter, SwiGLU, gather and slice are memory-bound kernels of their
# own, on the full hidden size on every tensor-parallel rank (the hidden states are replicated) and on the rank's
# share of the intermediate size. Per token and MoE layer that is 3 H + 3 Hp + 2 k Hp + 3 k Ip bf16 elements
# (H hidden, Hp / Ip padded hidden / per-rank intermediate, k experts per token): ~153 kB for gpt-oss-20b, ~30 GB
# for one 8,192-token prefill iteration, ~73 ms at the Arc Pro B60's 456 GB/s and the engine's bandwidth figure
# (the pass was ~1.07 s). Structure and sizes from the sources, streamed at the engine's own bandwidth figure: no
# factor is fitted. Prefill only: a decode step's few tokens move a few MB. Fit rows it moves (branch s34-arc):
# VLLMARC-0002 / -0005 / -0008 TTFT (one B60) -34 / -33 / -30 % -> -29 / -28 / -25 %, -0011 / -0014 / -0017 (four,
# TP 4) -55 / -55 / -54 % -> -49 / -49 / -47 %; their TPOT +0.1..+0.4 ms (the prefill chunks inside the decode
# steps); throughput -0001..-0016 +15.8 / +0.7 / -6.8 / +2.9 / -8.3 / +0.5 % -> +14.4 / 0.0 / -7.1 / +1.5 / -9.1 /
# 0.0 % (validate's throughput vllm gddr median 6.9 -> 7.1 %, p90 34 % as before). The rest of the gap is not
# found in these sources: the catalog's 98.3 TFLOPS is Intel's 197 INT8 TOPS / 2 (20 Xe2-cores x 2,048 FP16 XMX
# ops per clock x 2.4 GHz), and the expert GEMMs run BF16 on the XMX engines after an in-register MXFP4 -> BF16
# conversion (the blog's Optimisation 3), as priced. The CUDA and ROCm MoE paths (Triton fused_moe, Marlin,
# FlashInfer) have their cost inside MOE_EXPERT_COMPUTE_REL's fit and are not given this.
XPU_MOE_ENGINES = frozenset({"vllm"})
XPU_MOE_PAD = 128  # vLLM's XPU MXFP4 MoE pads hidden and per-rank intermediate sizes to this multiple
XPU_MOE_ACT_BYTES = 2.0  # bf16 activations (the XPU MXFP4 MoE path computes in bf16)

# MLX (fitted on the rows after starting from llama.cpp Metal): mlx-lm 0.20 decodes Llama-3.3-70B
# 4-bit (group 64, 39.2 GB read per token) at 9.35 tok/s on an M3 Max 40-core (400 GB/s) at short
# context (MLXCHIGKIM-0002..0012): ~90 % of the bandwidth figure once 80 layers of launch overhead
# are counted, and the affine 4-bit de-quantisation costs nothing visible (unlike Metal k-quants,
# 0.65 above). Bandwidth 0.85 of peak, the 4-bit family at 1.0, 40 us per layer (MLX compiles
# each layer's element-wise ops into fused kernels; Metal llama.cpp 90 us).
BW_EFF["mlx"] = {**BW_EFF["mlx"], "unified": 0.85}
# TinyChat prefill on GDDR (fitted): its FP16 path (cuBLAS, FP32 accumulate) prefills Llama-2-7B /
# Llama-3-8B on an RTX 4090 at 8.8-10.2k tok/s (TINYCHAT-0024..0029, -0036..0041): ~0.85-0.9 of the
# 165 TFLOPS FP32-accumulate peak; TinyChat 2.0's W4A16 GEMMs (FP16 accumulate, 2x peak on GeForce,
# performance.pass_time) reach 15-17k tok/s (TINYCHAT-0030..0035, -0042..0047): ~0.75 of 330 TFLOPS,
# i.e. 0.85 x QUANT_PREFILL_EFF. TinyChat 1.x (TINYCHAT-0080..0084) is slower: not separated.
COMPUTE_EFF["tinychat"] = {**COMPUTE_EFF["tinychat"], "gddr": 0.85}
# TinyChat decode (batch 1, tinychat/benchmark.py: eager PyTorch, no CUDA graphs, one argmax and
#    torch.cuda.synchronize per token; in W4A16 mode attention, RoPE, norms and the gate/up MLP are
#    fused kernels: make_quant_attn / make_quant_norm / make_fused_mlp). Its own rows (README
#    "Decoding Speed", TinyChat 2.0) separate bandwidth from fixed costs, with the weights counted at their
#    own bytes (performance.read_weight_bytes: AWQ keeps the fp16 embedding out of the read):
#    - RTX 4090, AWQ W4A16 g128: Llama-2-7B 5.28 ms (TINYCHAT-0004, 3.63 GB read), Llama-2-13B 9.19 ms
#      (-0005, 6.92 GB, 40 layers), Llama-3-8B 6.39 ms (-0002, 4.68 GB). The 7B -> 13B step gives
#      3.29 GB in 3.91 ms less 8 layers' overhead: ~0.9 of the 1,008 GB/s peak, the figure llama.cpp's
#      GDDR mat-vecs reach (BW_EFF["llama.cpp"]["gddr"]); what is left, ~1.3 ms over 32 layers, is
#      ExLlamaV2's 40 us per layer that TinyChat started from, with ~0.2 ms per step (argmax + sync).
#    - The AWQ GEMV (awq/kernels/csrc/quantization_new/gemv) de-quantises in registers: on the Jetson AGX
#      Orin the int4 rows' 7B -> 13B slope reaches 0.75 of the 204.8 GB/s peak (-0011 / -0013: 25.94 /
#      47.67 ms) and the fp16 rows' 0.78 (-0010 / -0012: 83.95 / 162.33 ms): no format penalty, so the
#      4-bit family's FORMAT_DECODE_EFF is 1.0 here (the default 0.85 is a guess for GPTQ-style kernels).
#      0.76 of peak for the unified class (Orin's LPDDR5), ExLlamaV2's inherited 0.70 made every Orin row
#      slow (the int4 ones by 21-29 % with the format penalty).
#    `mlrig validate` decode tinychat gddr 26 % / 29 % -> ~4 % / 5 %, unified 16 % / 24 % -> ~3 % / 4 %
#    (median / p90; 7 and 8 rows, one source).
BW_EFF["tinychat"] = {**BW_EFF["tinychat"], "gddr": BW_EFF["llama.cpp"]["gddr"], "unified": 0.76}
FORMAT_DECODE_EFF["tinychat"] = {**FORMAT_DECODE_EFF["default"], "gpu4": 1.0}
STEP_OVERHEAD_S["tinychat"] = 0.2e-3
# TinyChat's prefill time per token-layer outside the GEMMs: 2.0 runs fused norms, RoPE-in-attention,
#    flash attention and a fused gate/up MLP (README "Prefilling Speed"), so its FP16 rows are GEMM-bound
#    from 256 tokens on (TINYCHAT-0024..0029: 31 -> 446 ms for 256 -> 4,096 tokens, linear in the prompt).
#    ExLlamaV2's inherited 0.8 us per token-layer added ~13 ms to a 512-token prompt of Llama-3-8B (its
#    AWQ rows -0031..0035 came out 28-31 % slow); 0.1 us leaves the FP16 and AWQ 2.0 rows within
#    -8..+11 %.
PREFILL_TOKEN_LAYER_S["tinychat"] = 0.1e-6
# TinyChat prefill on the unified class (fitted; Jetson AGX Orin 64GB, the only unified device TinyChat
#    publishes): ExLlamaV2's unfitted 0.40 was inherited, and the 4-bit rows also took QUANT_PREFILL_EFF,
#    which left Llama-3-8B's W4A16 prompts at 0.57-0.62 of the measured speed (TINYCHAT-0054..0059: 1.54-1.64k
#    tok/s for 256-4,096 tokens, TinyChat 2.0's README "Prefilling Speed", Jetson Orin table) while its FP16
#    rows sat at 0.86-0.91 (-0048/-0049/-0051..0053). What those rows measure: ~20 TFLOPS of GEMM and
#    attention work on the FP16 path and ~24 on the W4A16 path, 0.47 and 0.56 of the GPU's 42.5 TFLOPS dense
#    FP16 tensor rate (catalog: 16 SM x 2,048 FLOP/clk x 1.3 GHz MAXN clock = 85 dense INT8 TOPS / 2; the
#    headline 275 TOPS adds the two DLAs and 2:4 sparsity, neither counted). The W4A16 path is the faster
#    one (1.21-1.26x), as on the RTX 4090, so the MMQ penalty (QUANT_PREFILL_EFF, measured on llama.cpp)
#    does not describe TinyChat's fused W4A16 GEMM there (FUSED_W4A16_FULL_RATE_ENGINES below). One factor
#    for both paths: 0.50 leaves the FP16 rows +5..+12 % and the W4A16 rows -5..-12 %; what separates them
#    is TinyChat's FP16 path itself: tinychat/benchmark.py fuses the QKV and gate/up projections and the norms
#    (make_quant_attn / make_fused_mlp / make_quant_norm) only in W4A16 mode, so the FP16 path runs more,
#    narrower GEMMs and unfused element-wise kernels, which Orin's 204.8 GB/s LPDDR5 makes dearer than
#    PREFILL_TOKEN_LAYER_S's figure (fitted on GDDR) says. The FP16 1,024-token row (-0050: 0.566 s, out of
#    line with its neighbours as published) stays at -19 %.
COMPUTE_EFF["tinychat"] = {**COMPUTE_EFF["tinychat"], "unified": 0.50}
PREFILL_TOKEN_LAYER_S["exllamav2"] = 0.1e-6  # fused kernels too (EXLLAMA_RECONSTRUCT_BYTES_PER_PARAM's note)
# TinyChat before 2.0 ("tinychat-2024", engines.tinychat_legacy): the same engine with the earlier W4A16
#    GEMM, which accumulates in FP32 (not in FP16_ACCUMULATE_4BIT below), so on GeForce its 4-bit prefill
#    runs under the 165 TFLOPS FP32-accumulate peak of an RTX 4090: the README's "TinyChat (Legacy)" row
#    takes 0.101 / 0.219 s for 1,024 / 2,048 tokens of Llama-3-8B (TINYCHAT-0082/0083), ~125 TFLOPS,
#    where TinyChat 2.0 reaches ~230 (-0087/0088). Every factor is 2.0's.
for _table in (BW_EFF, COMPUTE_EFF, FORMAT_DECODE_EFF):
    _table["tinychat-2024"] = dict(_table["tinychat"])
for _scalar in (LAYER_OVERHEAD_S, PREFILL_TOKEN_LAYER_S, STEP_OVERHEAD_S):
    _scalar["tinychat-2024"] = _scalar["tinychat"]
# ExLlamaV2 and MLC-LLM prefill with 4-bit weights the same way on GeForce: ExLlamaV2 reconstructs FP16
# weights for a long prompt and multiplies with cuBLAS HGEMM (FP16 accumulate; its q_gemm path is for a
# few rows only), and both engines' Llama-3-8B 4-bit prefill on an RTX 4090 reaches 12-15k tok/s at
# 512-2048-token prompts (TINYCHAT-0066..0069, -0076..0079: 190-235 TFLOPS of GEMM work), above the
# card's 165 TFLOPS FP32-accumulate peak, so their GEMMs accumulate in FP16 (`FP16_ACCUMULATE_4BIT`) and
# reach TinyChat's efficiency. TensorRT-LLM's rows (9.5-10k tok/s) stay under the FP32-accumulate
# peak: left as they are.
FP16_ACCUMULATE_4BIT = frozenset({"tinychat", "exllamav2", "mlc"})
# GeForce cards run FP16/BF16 tensor MMAs that accumulate in FP32 at half their FP16-accumulate rate
#    (the catalog's figure; NVIDIA Ada whitepaper v2.02 Table 2: RTX 4090 165.2 vs 330.3 TFLOPS). At half
#    rate the tensor pipe, not the kernel's other work, is the limit: large GEMMs reach most of the
#    figure (training_speed's TRAIN_GEMM_EFF_GEFORCE, from torch's >= 165 TFLOPS cuBLAS GEMM on a 4090),
#    and the de-quantisation a fused W4A16 GEMM does per tile (QUANT_PREFILL_EFF's 0.8 at full rate)
#    hides in the slack. Rows, Llama-3-8B prefill on an RTX 4090 at 256-4096 tokens:
#    - TinyChat's FP16 path (cuBLAS via nn.Linear, FP32 accumulate): 8.3-10.2k tok/s
#      (TINYCHAT-0024..0029, -0036..0041), 0.85-0.9 of 165 TFLOPS;
#    - TensorRT-LLM with 4-bit weights (its CUTLASS fpA_intB mixed-input GEMM, FP32 accumulate, weights
#      de-quantised in registers): 9.5-10.2k tok/s (TINYCHAT-0060..0064), ~0.9 of 165 TFLOPS, where
#      COMPUTE_EFF["trt-llm"]["gddr"] x QUANT_PREFILL_EFF (0.60 x 0.8, fitted on the full-rate L40S)
#      gave 5.1-5.4k;
#    - TinyChat before 2.0 (FP32-accumulating W4A16 GEMM): 8.3-10.1k tok/s (TINYCHAT-0080..0084).
#    0.85 (the FP16 path's figure). Engines listed in GEFORCE_HALF_RATE_ENGINES only: the other engines'
#    GeForce prefill factors were fitted by their own rows and are left as they are.
GEFORCE_HALF_RATE_GEMM_EFF = 0.85
GEFORCE_HALF_RATE_ENGINES = frozenset({"trt-llm", "trt-llm-2023", "tinychat", "tinychat-2024"})
# vLLM and LMDeploy on GeForce join them: neither had GeForce rows of its own that bound compute (their GDDR
#    fit rows, HOMELAB5060-* and LMDW4-*, are batch-1 decode), so both ran at the full-rate figure they
#    inherited (COMPUTE_EFF 0.55 / 0.60 of the half-rate peak), as if the half rate were a full-rate
#    card's. Their 16-bit GEMMs are the same FP32-accumulating tensor-core GEMMs as TinyChat's FP16 path:
#    vLLM's unquantised linear layers call torch.nn.functional.linear, i.e. cuBLAS (vllm/model_executor/
#    layers/linear.py, UnquantizedLinearMethod.apply), and TurboMind's FP16 linears go through the
#    cublasMMWrapper it inherits from FasterTransformer, whose setFP16GemmConfig asks cuBLAS for FP32
#    compute (computeType_ = CUDA_R_32F), so the same half-rate figure applies. The
#    held-out RTX 3090 serving rows check it (ZHJUNQIN-*, Llama-3-8B bf16): at 0.55 / 0.60 of the 71 TFLOPS
#    half-rate peak, a 229-token prompt's median TTFT came out +77 % (vLLM) and +61 % (LMDeploy), and LMDeploy
#    could not serve 8 req/s (it did: 1,303 tok/s with a 217 ms median TTFT, ZHJUNQIN-0028/-0029).
#    16-bit weights only (`performance.pass_time`): their 4-bit kernels are not that cuBLAS path (vLLM's
#    AWQ GEMM before awq_marlin, TurboMind's own W4A16 GEMM) and have no GeForce compute rows either.
#    Re-read for TurboMind (branch s36-lmdgddr): its W4A16 GEMM accumulates in FP32 too (v0.4.0
#    src/turbomind/kernels/gemm_s_f16/gemm_template.h: `Array<float, 4>` accumulators into mma.sync m16n8k16
#    .f32.f16.f16.f32), and so do the in-house GEMMs that replaced both cuBLAS and it (PR #2090, 2024-08; at
#    1263d5c kernels/gemm/arch/mma_sm80.h has only `SM80_MMA_16x8x16_F32_F16_F16_F32_TN`), so every TurboMind
#    GEMM on GeForce runs under the FP32-accumulate peak, which is the catalog's GeForce figure. Its 4-bit
#    prefill there keeps COMPUTE_EFF x QUANT_PREFILL_EFF of that peak: no GeForce row times it (LMDW4 is
#    batch-1 decode, LOOUIS's Turing rows are anomalies).
# SGLang joins them for the same reason: its unquantised linears are the same cuBLAS call, UnquantizedLinearMethod.apply
#    returning F.linear(x, layer.weight, bias) on CUDA (sgl-project/sglang python/sglang/srt/layers/quantization/
#    unquant.py @ 0038b2b; the Intel AMX and ROCm aiter branches before it do not apply to NVIDIA cards), so on a
#    GeForce card its 16-bit prefill GEMMs ran at COMPUTE_EFF["sglang"]["gddr"] (0.55, inherited from vLLM's HBM
#    figure, never fitted) of the half-rate peak where vLLM's identical GEMMs ran at 0.85 of it. Physics from the
#    source, not fitted: no SGLang GeForce row that binds on compute is fit-grade (CHINMAY5090, the RTX 5090 rows,
#    is held out and measures it; LOOUIS, the RTX 2080 Ti rows, are anomalies).
GEFORCE_HALF_RATE_SERVING_ENGINES = frozenset({"vllm", "lmdeploy", "sglang"})
for _engine in ("exllamav2", "mlc"):
    COMPUTE_EFF[_engine] = {**COMPUTE_EFF[_engine], "gddr": COMPUTE_EFF["tinychat"]["gddr"]}
# MLC-LLM's own GeForce figure, with its GEMMs' waves of thread blocks priced (MLC_GEMM_COL_TILE,
#    performance.mlc_gemm_wave_util): TinyChat's 0.85 left its RTX 4090 prompts (TINYCHAT-0065..0069, fit) 8-13 %
#    slow at every length once the 256-token one's under-filled waves were priced, and its RTX 3090 rows
#    (MLCI2004-0002..0004, fit: a 10-sequence decode step and 100 / 10 x 100-token prompts) 3 % fast to 22 % slow.
#    0.88 is the value at which the two fit sources' median |errors| are equal and smallest (10.5 % / 10.1 %;
#    0.85: 13.0 / 7.4, 0.90: 9.3 / 12.0). The two cards disagree by ~15 % beyond that, not separated here.
COMPUTE_EFF["mlc"] = {**COMPUTE_EFF["mlc"], "gddr": 0.88}
LAYER_OVERHEAD_S["mlx"] = 40e-6
# MLX on the Apple GPUs before Metal family Apple9 (M1 = Apple7, M2 = Apple8; performance.apple_gpu_family) takes
#    longer per layer. mlx-lm 0.31.3 decoding 22 dense models, 0.5B to 24B, on an M1 Ultra (MLXCELM1U-*, lablup/mlxcel's
#    same-host baseline, fit) leaves ~90 us per layer beyond the weights' bandwidth time (least squares over those
#    rows: bandwidth 0.83 of peak, 90 us; at the class's 0.85, 90 us centres them, median |error| 8 %), against the
#    40 us that M3 Max, M3 Ultra and M4 Max rows show (MLXCHIGKIM, RAPIDMLX, NEXVER above). Nothing on these chips
#    was ever fitted for MLX before: with 40 us the M1 Ultra rows came out 13-115 % fast (small models worst: a
#    fixed time per layer, not a bandwidth share, and 2.3x the Apple9 one whatever the model size, so not the
#    GPU's clock). The boundary is MLX's own: its Metal backend tunes architecture generations 13-14 (M1, M2)
#    apart from 15+ (M3 onwards: mlx/backend/metal/quantized.cpp @ 846d176, `get_qmv_batch_limit`'s `arch_gen >= 15`
#    branch, `use_qmv_wide` "affine qmv_wide only beats qmv on gen-15+"), the generation Apple rebuilt the GPU's
#    shader core for (Dynamic Caching, Apple tech talk "Explore GPU advancements in M3 and A17 Pro", 2023-11). M2
#    (Apple8) is given the M1 figure by that boundary: no M2 MLX row is fit-grade (MLXWIRED-0001, an M2 Ultra 70B
#    bf16 whose 80 layers are 4 % of its time, stays within 3 %).
MLX_PRE_APPLE9_LAYER_OVERHEAD_S = 90e-6
MLX_FAST_DISPATCH_FROM_APPLE_FAMILY = 9
# MLX runs a MoE layer's routed experts through mlx-lm's SwitchGLU (mlx_lm/models/switch_layers.py @ d78bf58, and
#    qwen3_moe.py `Qwen3MoeSparseMoeBlock`): beside the dense layer's kernels, the router's gate mat-vec, a softmax, an
#    argpartition for the top-k, take_along_axis, the score normalisation, three gather_qmm calls (gate, up, down over
#    the k chosen experts; one token's 8 rows stay unsorted below `do_sort = indices.size >= 64`, so mlx's
#    GatherQMM::eval_gpu runs its gathered mat-vec) and the weighted sum, each a Metal dispatch that waits for the one
#    before it. At batch 1 that is a fixed time per MoE layer, not a bandwidth share, and it grows with the chip's GPU
#    width: each dependent dispatch is spread over, and drained from, every GPU core (an Ultra's over two dies). Per
#    MoE layer, time = MLX_MOE_LAYER_S_PER_GPU_CORE x GPU cores (performance.mlx_moe_layer_s). Qwen3-30B-A3B decode
#    leaves, beyond the weights' bandwidth time and the dense 40 us per layer, ~18 us per MoE layer on a 10-core M5
#    (ZISKIND-0036..0040, mlx-lm), ~65-105 us on a 40-core M4 Max (NEXVER-0012..0014, ZISKINDLMS-0001..0014, LM Studio's
#    MLX runtime) and ~135 us on a 60-core M3 Ultra (ZISKINDLMS-0015..0034): ~2 us per core on all three chips, where
#    one flat figure (100 us, fitted on NEXVER alone) left the M5 16-21 % slow and the M3 Ultra 25-41 % fast. Fitted on
#    those fit rows (the MLX MoE decode rows of the fit split) minimising median + p90 |log(pred / meas)|: 1.8 / 2.0 /
#    2.1 / 2.2 / 2.4 us -> 0.171 / 0.111 / 0.095 / 0.103 / 0.165. NEXVER's dense models need no such term.
MLX_MOE_LAYER_S_PER_GPU_CORE = 2.1e-6
# MLX on the M5 GPU generation (Metal family Apple10: M5, M5 Pro, M5 Max) dispatches faster: mlx-lm 0.31.3 decoding
#    22 dense models, 0.5B to 24B, on an M5 Max 40-core 128 GB (MLXCELM5MAX-*, lablup/mlxcel's same-host baseline,
#    the same harness and mlx-lm release as the M1 Ultra rows above, fit) came out 14 % slow in the median with the
#    Apple9 40 us per layer (small models worst: a fixed time per layer again, not a bandwidth share: the bf16 8B
#    row, 4 % layer time, is within 2 %), and its MoE rows 15-40 % slow with 2.1 us per GPU core per MoE layer,
#    while the same release on the M3 Ultra (RAPIDMLX, mlx 0.31.2) sits at the Apple9 figures: the chip, not the
#    release. Both times are chains of dependent Metal dispatches, so one scale is applied to both. Fitted on the
#    Apple10 MLX decode fit rows (MLXCELM5MAX-0001..0029, ZISKIND-0036..0040, the 10-core M5) minimising median +
#    p90 |log(pred / meas)| over a grid of (per-layer, per-core) pairs: (20 us, 1.0-1.25 us) 0.244 best, (10 us,
#    1.0-1.5 us) 0.26, (25 us, any) >= 0.28, the Apple9 pair (40 us, 2.1 us) 0.50: half the Apple9 figures. The
#    M5 GPU's other change, the Neural Accelerators, MLX uses for prefill only (below).
MLX_FASTER_DISPATCH_FROM_APPLE_FAMILY = 10
MLX_APPLE10_DISPATCH_SCALE = 0.5
# MLX's per-layer time (LAYER_OVERHEAD_S["mlx"], MLX_PRE_APPLE9_LAYER_OVERHEAD_S, both x mlx_apple_dispatch_scale) is a
#    chain of Metal dispatches, one per array op mlx-lm builds for the layer (no mx.compile around the model step), so
#    a layer that builds more ops takes longer in proportion. Counted from ml-explore/mlx-lm @ d78bf58 (v0.31.x, the
#    release of the MLXCELM and RAPIDMLX rows) for one decode token:
#    - a Llama layer (models/llama.py): input rms_norm, q/k/v quantized mat-vecs, RoPE on q and k, the KV cache's two
#      slice updates, scaled_dot_product_attention, o_proj, residual add, post-attention rms_norm, gate and up
#      mat-vecs, the compiled `swiglu` (activations.py: one kernel), down mat-vec, residual add: 17. The per-layer
#      figures were fitted on Llama-shaped layers (Llama, Qwen2/2.5/3, Mistral, Phi-3, OLMo-2 rows), so 17 is the
#      reference the figure stands for (MLX_REFERENCE_LAYER_DISPATCHES);
#    - Gemma's RMSNorm is `mx.fast.rms_norm(x, 1.0 + self.weight, eps)` (gemma.py, gemma2.py, gemma3_text.py): the
#      `1.0 + weight` is an op of its own at every call, so each Gemma norm is 2 dispatches; its MLP is
#      `down(gelu_approx(gate(x)) * up(x))` (gemma: nn.gelu): the compiled GELU and the product are 2 dispatches
#      where `swiglu` is 1. Gemma 3 (gemma3_text.py) adds post-attention and post-feedforward norms (4 per layer) and
#      q/k RMSNorms (2 more, each 2 dispatches): 17 + 4 x 2 - 2 + 2 x 2 + 1 = 28 dispatches. Gemma 2 (gemma2.py) has
#      the 4 norms (+6) and computes attention by hand to softcap its logits (scale, matmul, divide, tanh, multiply,
#      softmax, matmul: 7 ops for sdpa's 1, +6): 30. Gemma (gemma.py): 2 norms of 2 dispatches (+2), GELU product
#      (+1): 20 (performance.mlx_layer_dispatches).
#    Only Gemma's norms and MLP, whose ops the source shows, are counted beyond the reference; the fit rows' spread of
#    other layers (Qwen3's q/k norms, Qwen2's biases) is inside the fitted figure. Fit rows: the Gemma decode rows of
#    MLXCELM1U (0017..0020), MLXCELM5MAX (0004..0007) and RAPIDMLX (0013..0027), which came out 3-36 % fast with the
#    reference count. Per Gemma 3 layer they lacked 0.22-1.23 (median 0.76) x the chip's per-layer figure, on all
#    three chips and for 1B to 27B alike (a fixed time per layer, not a bandwidth share), where 28 / 17 - 1 = 0.65 is
#    counted; Gemma 2 (MLXCELM1U-0018, MLXCELM5MAX-0005) lacked 0.69 where 30 / 17 - 1 = 0.76 is counted. Gemma
#    (gemma-2b: MLXCELM1U-0017 0.48, MLXCELM5MAX-0004 2.97) lacks more than its 20 / 17 - 1 = 0.18: not explained
#    here. Nothing is fitted.
MLX_REFERENCE_LAYER_DISPATCHES = 17
# llama.cpp's per-layer figures (LAYER_OVERHEAD_S["llama.cpp" / "llama.cpp-2024" / "llama.cpp-hip" / "llama.cpp-metal"])
#    are likewise a chain of kernels (launched from the host in the HIP and pre-graph CUDA builds, encoded per token on
#    Metal, replayed from a CUDA graph in current CUDA builds): ~22 ggml nodes for a Llama layer (ggml-org/llama.cpp
#    @ 069be0a src/models/llama.cpp, decode without flash attention: rms_norm and mul, q/k/v mat-vecs, 2 RoPEs, 2 KV
#    cache copies, KQ, soft_max, KQV, the cont of its permute, wo, add, rms_norm and mul, up and gate, the SwiGLU, down,
#    add). Gemma 3 (src/models/gemma3.cpp @ 569a009) builds 9 more per layer: q and k RMSNorms, the post-attention and
#    post-feedforward RMSNorms (an rms_norm and a mul each) and `ggml_scale` of Q (its GELU gate is one node as the
#    SwiGLU is; the norm weights' Gemma offset of 1 is folded into the GGUF at conversion, so no extra node):
#    31 (performance.llama_cpp_layer_nodes). Fit rows it moves: MI50X2-0002/-0004 (gemma-3-12b Q8_0 on 2x MI50,
#    +9 % fast with the reference count), MI50X2-0018/-0020 (gemma-3-27b F16), ZISKIND-0027 (gemma-3-4b Q4_K_M on
#    an M4, +30 % fast), RX7900X6-0002/-0004 (gemma-3-1b Q4_K_M on 2 / 6 RX 7900 XTX). Nothing is fitted here.
LLAMA_CPP_REFERENCE_LAYER_NODES = 22
FORMAT_DECODE_EFF["mlx"] = {**FORMAT_DECODE_EFF["default"], "gpu4": 1.0, "q8": 0.95}
# 4-bit weights in the serving engines' batch-1 mat-vecs: vLLM runs AWQ / GPTQ checkpoints through the
#    Marlin kernels (awq_marlin / gptq_marlin, chosen automatically on sm80+ since vLLM 0.5/0.6), which
#    de-quantise in registers while the next weight tiles stream in and reach near the ideal 4x of FP16 at
#    batch 1-16 (Frantar et al. 2024, "MARLIN: Mixed-Precision Auto-Regressive Parallel Inference on Large
#    Language Models", arXiv 2408.11743); LMDeploy's TurboMind AWQ GEMV de-quantises in registers as
#    TinyChat's does (above). So the 4-bit family reads at the engine's plain bandwidth figure, not at the
#    default's 0.85 (a guess for GPTQ-style kernels). Rows (fit): LMDW4-0001/-0002 (TurboMind AWQ, Llama-2-7B
#    / 13B-chat, RTX 4090: 206.4 / 115.8 tok/s, 0.85 gave 159 / 90, -23 %), HOMELAB5060-0001..0004 (vLLM 0.11
#    AWQ Qwen2.5-7B, RTX 5060 Ti: 79 tok/s, 0.85 gave 62, -22 %). Older vLLM (AWQ before awq_marlin, pre-Ampere
#    GPUs without Marlin) is not separated. TensorRT-LLM keeps 0.85: no fit rows at batch 1 (the held-out
#    JANTRT AWQ rows on GeForce are 26-34 % slow, its large-batch QSERVETRT W4A16 rows on an L40S fast).
#    Marlin and TurboMind are CUDA kernels for Ampere and newer (Marlin needs sm80+): on Volta / Turing /
#    Pascal NVIDIA cards and on other vendors (vLLM's XPU or ROCm builds) the default stays
#    (`performance.format_efficiency`).
REGISTER_DEQUANT_4BIT_ENGINES = frozenset({"vllm", "lmdeploy"})
PRE_AMPERE_ARCHITECTURES = ("Volta", "Turing", "Pascal", "Maxwell", "Kepler")

# Prefill with quantised weights: llama.cpp de-quantises on the fly inside its MMQ (int8 tensor
# core) or de-quantise+cuBLAS path; measured Q4_K_M/F16 prefill ratio on the same card is
# 0.75-0.87 (RTX 4080 XD-0097/0103, A100 PCIe XD-0370/0376, H100 PCIe XD-0538/0544, RTX 6000 Ada
# XD-0328/0334). We model quantised prefill as the FP16 tensor path times this factor (not the
# int8 peak, which it never approaches). Not on the 2024 builds' cuBLAS path (performance.llama_cpp_cublas_dequant:
# Volta-on NVIDIA GPUs, > 32 tokens), whose Q4_K_M / F16 gap is its de-quantise copy instead: on the A100 PCIe and
# H100 PCIe pairs it is 19.5 / 15.6 ms per 512-token micro-batch, ~18 GB of copy traffic at 0.47 / 0.57 of the
# peak bandwidth, about llama.cpp's own HBM figure (BW_EFF 0.60) at which the copy is priced. A fixed 0.8 made
# the copy a fixed share of GEMM time, so the H100's 2.4x higher FLOP / byte ratio left its Q4_K_M rows 23-31 %
# fast (XD-0550..0552).
QUANT_PREFILL_EFF = 0.80
# The same shortfall on HBM cards under current CUDA builds ("llama.cpp"), where every quantised prompt GEMM is MMQ
#    (ggml-cuda/mmq.cu `ggml_cuda_should_use_mmq`: `if (turing_mma_available(cc)) return true;`, int8 mma.sync
#    tiles; no wgmma on Hopper), measured against the FP16 cuBLAS rate COMPUTE_EFF["llama.cpp"]["hbm"] prices (0.40,
#    the initial table's, no current-build F16 HBM row). Fitted on the only current-build NVIDIA HBM prompt rows,
#    Llama-2-7B Q4_0 pp512 from the scoreboard (C15013-0013/-0015 H100 SXM, -0025/-0027 A100 SXM, FA off/on): at
#    0.8 they came out +67 / +50 / +36 / +27 %; 0.52 gives +22 / +9 / -7 / -14 % (signed median +1 %). The H100
#    stays fast against the A100 (its MMQ does not reach the wgmma peak the catalog holds: not separated, two rows).
LLAMA_CPP_MMQ_PREFILL_EFF_HBM = 0.52
# The same shortfall in llama.cpp's HIP build on AMD CDNA 3 GPUs (`performance.hip_mfma_mmq`), whose quantised prompt
#    GEMMs run as MMQ tiles on the matrix cores (MFMA int8; ggml-org/llama.cpp PR #14624, "HIP: Enable Matrix cores for
#    MMQ Kernels, Enable stream-K for CDNA 3", merged late July 2025) instead of de-quantise + rocBLAS, priced against
#    the FP16 rate COMPUTE_EFF["llama.cpp-hip"]["hbm"] x AMD_CDNA3_GEMM_REL_EFF gives a rocBLAS-class GEMM, as the CUDA
#    build's MMQ on HBM cards is against cuBLAS's (LLAMA_CPP_MMQ_PREFILL_EFF_HBM). Fitted on the only CDNA prompt rows,
#    all fit rows of one source (AMD's ROCm blogs, llama-bench pp512-pp4096 on 8 MI300X, layer split, n_ubatch 512):
#    DeepSeek-V3 Q4_K_M at b5997 (AMDLCPP-0004, -0013..-0015) and b6652 (-0008, -0016..-0018), flash attention off, and
#    Llama-3.1-70B-Instruct Q4_K_M at b6652 with flash attention on (-0012, -0019..-0021); the pp16-pp256 rows of the
#    posts are not taken (one micro-batch of a few tokens: the weight reads and small-batch kernels, not this rate).
#    Scanned, mean / median |error| of the twelve (signed median): 0.80 (QUANT_PREFILL_EFF, before) 20 / 20 % (+20 %);
#    0.75 14 / 14 % (+14 %); 0.70 9.9 / 7.2 % (+7 %); 0.65 7.3 / 8.9 % (0 %); 0.60 8.1 / 6.4 % (-6 %); 0.55 13 / 13 %
#    (-13 %). 0.65: the lowest mean and a centred signed median. It leaves DeepSeek-V3 +8..+11 % and the dense 70B
#    -13..+1 %, so the MoE model keeps ~10 % more than this rate explains; its MLA attention is not the cause at pp512:
#    without flash attention llama.cpp computes DeepSeek-V3's prompt attention in the compressed latent space (K 576,
#    V 512 wide, 128 heads over one KV head, the whole 512 x 512 square before the mask), ~4.5 TFLOP a micro-batch
#    against ~185 TFLOP of weight GEMMs (with the 8x expert tiles), priced with the rest of attention. CDNA 3 only:
#    CDNA 1-2 take MFMA MMQ at small batches only (PR #14949, "HIP: enable mfma mmq on gfx908 and gfx90a for select
#    datatypes and shapes", 2025-07-29: its MI100 pp1024 table has MMQ level with rocBLAS from a 512-token
#    micro-batch) and keep QUANT_PREFILL_EFF; decode runs MMVQ, not MMQ, and keeps its figures; builds before the PRs
#    keep QUANT_PREFILL_EFF.
HIP_MFMA_MMQ_PREFILL_EFF = 0.65
# MLX's quantised matmul (mlx/backend/metal/kernels/quantized.h: `qmm_t`, a QuantizedBlockLoader de-quantises
#    each affine 4/8-bit weight tile into threadgroup memory, one scale and bias per 64 values, then the
#    16-bit GEMM's own simdgroup MMAs run on it) pays the de-quantisation once per tile for the whole block of
#    tokens, less than llama.cpp's k-quant MMQ path above. Fitted on the fit rows of MLX 4-bit prefill:
#    Llama-3.3-70B on an M3 Max 40-core at 260-30k-token prompts (MLXCHIGKIM-0001..0039 odd, predicted /
#    measured 0.81-0.92 at 0.80), the 4-27B models of RAPIDMLX on an M3 Ultra 60-core at ~530 and ~2,150-token
#    prompts (0.78-0.89; its 0.6B / 1B models, 0.98-1.39, are dominated by per-pass time, not GEMMs) and
#    ZISKIND's Qwen3-30B-A3B on an M5 (one uncached forward pass, 0.81-1.54 at 128-16k tokens): all three
#    sources' median 0.86-0.88 at 0.80, hence 0.92.
QUANT_PREFILL_EFF_BY_ENGINE: dict[str, float] = {"mlx": 0.92}
# llama.cpp's HIP build on AMD GPUs without matrix-core MMQ (performance.hip_dp4a_mmq: GCN / gfx906, RDNA 1-3)
#    runs its quantised GEMMs as MMQ tiles whose inner products are packed int8 dot products (ggml_cuda_dp4a:
#    __builtin_amdgcn_sdot4 on gfx906, sudot4 on RDNA), each weight block unpacked to int8 first. Their ceiling is
#    the int8 dot-product rate (the catalog's int8_tops_dense: MI50 53 TOPS; where the catalog has none, the FP16
#    figure, which on RDNA 3 is the same 4-per-lane rate: RX 7900 XTX 122.8), of which they reach a fraction by
#    format (this replaces COMPUTE_EFF x QUANT_PREFILL_EFF for those GEMMs). Fitted on the fit rows (llama-bench
#    pp512): Q4_0 (one scale per 32 weights, the cheapest unpack) Qwen3-14B on 2x MI50 574 / 570 tok/s
#    (MI50X2-0009/0011); k-quants, Q8_0 and MXFP4: MI50 Q8_0 / Q4_K_S / Q3_K_M (MI50X2-0001..0007, -0021/-0023)
#    and RX 7900 XTX Q4_K_M / MXFP4 (RX7900X6-0001..0011 odd). Legacy 0.30 puts MI50X2-0009/-0011 at +1 / +2 %;
#    "other" 0.13 centres its twelve rows (median +1 %, median |error| 15 %; 0.12 / 0.15 give -7 % / +16 %): the
#    RX 7900 XTX's dense Gemma-3-1B is left 36-40 % slow and Llama-4-Scout Q3_K_M on the MI50 10-38 % fast, a
#    spread by GPU and model that one figure per format cannot take out.
HIP_MATRIX_CORE_MMQ_ARCHITECTURES = ("CDNA", "RDNA 4")
HIP_BF16_ARCHITECTURES = ("CDNA", "RDNA 3", "RDNA 4")  # performance.hip_without_bf16
HIP_DP4A_MMQ_EFF: dict[str, float] = {"legacy": 0.30, "other": 0.13}
# BF16 prefill GEMMs of llama.cpp's HIP build on AMD GPUs without BF16 arithmetic (performance.hip_without_bf16)
#    run in rocBLAS (ggml_cuda_op_mul_mat_cublas of the measured builds: a contiguous BF16 weight goes straight to
#    cublasGemmEx with BF16 A/B/C and CUBLAS_COMPUTE_32F, no copy of the weight; only the activations are converted
#    to BF16 and the BF16 output back to F32, activation-sized, not priced). rocBLAS's Tensile library has tuned
#    kernels for gfx906 (Logic/asm_full/vega20) in F16 (HB, HHS, HSS), F32 (SB), F64 and int8, but no BF16
#    (BBS / BSS) logic, which the CDNA ones have (aldebaran_Cijk_*_BBS_BH.yaml); a type without logic for an
#    architecture runs Tensile's generic fallback kernels (ROCm/Tensile#1757, "Use fallback libraries for archs
#    without optimized logic"). Their rate has no published figure: fitted as a fraction of the FP32 vector peak,
#    replacing COMPUTE_EFF for those GEMMs (attention reads the F16 KV cache: F16 GEMMs at COMPUTE_EFF). Fit rows:
#    Qwen3-14B BF16 pp512 on 2x MI50, 118 / 119 tok/s (MI50X2-0013 / -0015, ROCm 6.3.4 / 6.4.1): 0.24 puts them at
#    +1 % / +1 % (0.40, COMPUTE_EFF, gave +67 %; 0.22 / 0.26: -7 % / +9 %). One source and one model: the figure is
#    taken for every architecture hip_without_bf16 names (GCN, RDNA 1-2), whose BF16 logic was not checked.
HIP_BF16_FALLBACK_GEMM_EFF = 0.24
# Engines whose prefill GEMMs with 4-bit weights run at the 16-bit GEMM rate: HF transformers' GPTQ
# kernels (ExLlamaV2 reconstructs an fp16 weight and calls cuBLAS for many rows; Marlin is a mixed
# int4 x fp16 GEMM built to reach the fp16 rate) and bitsandbytes (de-quantises to 16-bit, then cuBLAS;
# its copy's traffic is BNB4_DEQUANT_BYTES_PER_PARAM). Rows: Llama-2-13B on an A100 SXM4, 512-token
# prompts at batch 1-16 (optimum benchmark, transformers 4.37.2): GPTQ Marlin 95 ms at batch 1 against
# fp16's 99 ms (OPTGPTQ-0033 / -0031); GPTQ ExLlamaV2, Marlin and NF4 within -10..+3 % of fp16 at batch
# 8-16 (OPTGPTQ-0043..0050), where QUANT_PREFILL_EFF (llama.cpp's MMQ kernels) made them 20 % slower.
DEQUANT_TO_FP16_GEMM_ENGINES = frozenset({"transformers", "exllamav2"})
# TinyChat 2.0's W4A16 GEMM (awq/kernels/csrc/quantization_new/gemm/gemm_cuda.cu, gemm_w4a16_T1, taken by
#    awq/quantize/qmodule.py WQLinear.forward from 8 tokens on) de-quantises each weight tile in registers and
#    issues the FP16 GEMM's own tensor-core MMAs (mma.sync m16n8k16, FP16 accumulate). Where FP16 accumulation
#    doubles the tensor rate (GeForce, FP16_ACCUMULATE_4BIT) its per-tile unpacking shows against the doubled
#    rate, and QUANT_PREFILL_EFF stays inside its fitted figure (the RTX 4090 rows: 0.85 x 0.8 = 0.68 of the
#    330 TFLOPS FP16-accumulate peak, TINYCHAT-0030..0035, -0042..0047). Elsewhere no doubling is modelled and
#    it runs at the 16-bit GEMM rate: on the Jetson AGX Orin its 4-bit prompts are 1.21-1.26x faster than its
#    FP16 ones (TINYCHAT-0054..0059 against -0048/-0049/-0051..0053), where the MMQ penalty made them 0.8x.
#    (Orin's FP16 path cannot be running against a halved FP32-accumulate rate: at 4,096 tokens it does ~62
#    TFLOP in 3.1 s, ~20 TFLOPS, with its unfused element-wise traffic on 204.8 GB/s still to come out of that
#    time, against the 21.3 a halved 42.5 would allow.) TinyChat before 2.0 ("tinychat-2024") de-quantises in
#    registers too (FP32 accumulate): off GeForce the two releases prefill alike (no rows to separate them).
FUSED_W4A16_FULL_RATE_ENGINES = frozenset({"tinychat", "tinychat-2024"})
# Eager PyTorch launches kernels asynchronously (PyTorch docs, "CUDA semantics: asynchronous
# execution"): the host's Python and launch time per layer (LAYER_OVERHEAD_S, EAGER_ATTENTION_LAYER_S, the
# quantised linears' TRANSFORMERS_QUANT_LINEAR_S / BNB4_LINEAR_S) runs ahead of the GPU, so a pass takes
# about the longer of the two, not their sum (`performance.pass_time`): the p-norm of host and GPU time,
# HOST_OVERLAP_P = 4 (the max where one dominates; ~1.19x where they are equal: queue drain at each
# step's sync, sampling). HF transformers decode at batch 1 is host-bound: ~0.75 ms per layer whatever
# the model's size. Fitted on the optimum rows (Llama-2-13B on an A100 SXM4, OPTGPTQ-0002..0086, with
# BW_EFF['transformers']['hbm'] = 0.60). It was an additive 150 us per layer with 0.55: the held-out
# stock generate() runs came out +110 % (SPOT-0014, Llama-2-7B on an A100) and -10 % (SPOT-0013, A10G),
# +108 % / -20 % once the cache copies and eager attention were added; overlapped, +59 % / -10 %. Not in
# the calibration but looked at when choosing 750 us among 690-750 (so not an independent check), the
# Qwen README's BF16 generation speeds (QwenLM/Qwen README
# "Inference Performance", transformers 4.32, flash-attn 2, A100-SXM4-80G: 1.8B / 7B / 14B at 54.1 /
# 40.9 / 32.2 tok/s, 24 / 32 / 40 layers) come out +3 / -2 / -7 % (added instead: +109 / +17 / -9 %).
# A prefill's GEMMs take milliseconds per layer and hide the host time:
# GPTQ's 512-token prefill at batch 1 is no slower than fp16's (OPTGPTQ-0033 vs -0031).
HOST_LAUNCH_OVERLAPPED = frozenset({"transformers"})
HOST_OVERLAP_P = 4.0
# vLLM V0's prefill under tensor parallelism (performance.vllm_v0_prefill_host_layer_s): the host time per layer
#    of an eager prefill pass (V0 replays CUDA graphs for decode batches only), run ahead of the GPU and overlapped
#    with it (HOST_OVERLAP_P), so it shows only where it exceeds the GPU's share. FITTED on AccelMark's vLLM 0.7.3
#    Llama-3-70B-Instruct runs at TP 8 (fit split): at one user, 255-token prompts, the median TTFT is 77 / 82 /
#    82 ms on 8x H200 / A100 40GB / A800 (ACCELMARK-0108 / -0086 / -0097), nearly GPU-independent, where the
#    planner's GPU work (a 255-token prefill of 19 / 40 / 40 ms at TP 8, the first-token iteration, the 5.5 ms
#    front end) gave 35 / 65 / 63 ms: the three leave a prefill pass of ~56-61 ms, ~0.7 ms per layer, on all three
#    GPUs. On one GPU the same 255-token prompt of Llama-3-8B leaves no such time (ACCELMARK-0002 / -0014 / -0026,
#    TTFT 20 / 28 / 46 ms on H100 / H200 / A100, predicted 25 / 22 / 43 with none): there the GPU's ~0.35 ms per
#    layer covers the host's, so the term is taken for TP > 1 only, where the tp worker processes each run the
#    Python forward and every layer's two all-reduces wait for the slowest of them. Swept over the vLLM HBM fit
#    rows (TTFT median / p90, TPOT p90): 0 -> 22.9 % / 71 %, 34.5 %; 0.5 ms -> 21.8 % / 71 %, 30.8 %; 0.65 ms ->
#    19.8 % / 71 %, 29.3 %; 0.8 ms -> 20.0 % / 71.5 %, 27.3 %; the three one-user rows come out 1.06 / 1.04 / 0.96
#    at 0.65 ms, and the H200 TPOTs at 2 / 5 / 10 req/s (ACCELMARK-0111/-0113/-0115) rise from 0.65 / 0.39 / 0.38
#    to 0.72 / 0.53 / 0.68 of the measured. At 25 req/s on the A100 40GB / A800 (ACCELMARK-0094 / -0105) the
#    median TTFT went from 0.93 / 1.09 to 2.5 / 3.9 of the measured, as a ~55 ms pass of one prompt per decode pass
#    could not keep up with 25 arrivals/s; V0 prefills the prompts that arrive during a prefill pass in the next
#    one, before any decode, and with those chained passes (serving.chained_prefill_prompts) they are 0.77 / 0.88.
#    The H200 run at 25 req/s (ACCELMARK-0116, 591 ms) comes out 0.25: that host is slower under load than the
#    others (its one-GPU TPOT at 25 req/s is 57 ms against the H100's 25), which no term here follows.
#    ~54 us per launched kernel (EAGER_KERNELS_PER_LAYER + EAGER_TP_KERNELS_PER_LAYER) is ~9x
#    EAGER_HOST_S_PER_KERNEL (fitted on MI300X eager decode at 4+ sequences): which part is the Python forward of
#    8 processes sharing the host's cores, the driver's per-step broadcast and input preparation, or the wait for
#    the slowest rank is not separated by these rows, and the host's CPU is not stated. The DSTACKCMP 405B runs at
#    TP 4 / 8 (fit) and DSTACKR1 (TP 8, 3,200-token prompts) move by under 2 %: their prefills are GPU-bound.
VLLM_V0_TP_PREFILL_HOST_LAYER_S = 0.65e-3
# The same host time on AMD GPUs in upstream ROCm builds of V0, which have no custom all-reduce there
#    (engines.vllm_custom_allreduce_on_amd false; AMD's fork, which has it, keeps the figure above: its DSTACKCMP rate
#    runs at TP 8, fit, came out +23 / +55 % TTFT at 16 / 32 req/s with the AMD figure at 1.7 ms, +15 / +10 % without).
#    FITTED on the LHLMI300X rows (fit split, one host: Hot Aisle 8x MI300X, vLLM 0.6.3.dev114), two observations of
#    one eager pass that agree:
#    - the 405B single-pass TTFTs (Llama-3.1-405B bf16 at TP 8, 126 layers, offline bursts of 1-2 ~80-token prompts;
#      LHLMI300X-0002/-0005/-0038/-0041/-0074/-0077) measure 238-261 ms where 0.65 / 1.0 ms give 105-110 / 149-152 ms
#      (-56..-58 / -38..-41 %): 1.7 ms gives 237-240 ms (-1..-8 %);
#    - the same notebook's 8B runs on that host (AUGMXNT/MI300-testing inference-vllm-vs-vllm-rocm.ipynb cells 21 /
#      22: 80.5 / 37.0 requests/s at 128 / 128 tokens without / with --enable-chunked-prefill, ~250 more eager
#      iterations) leave ~58 ms per eager iteration, ~1.8 ms per layer of 32.
#    Over the 63 AMD vLLM TTFT fit rows (median / p90): 30 / 61 % at 0.65, 30 / 55 % at 1.0, 23 / 48 % at 1.7; the
#    `TTFT vllm hbm` scope 22 / 64 % -> 20 / 56 % (1.0 -> 1.7). Against it: the same build's Llama-2-7B throughput at
#    TP 8 (LHLMI300X-0146: 1,000 x 512 / 128 tokens, V0 prefill passes of 8 prompts) goes -24 -> -32 % requests/s
#    (tests/test_vllm_v0_prefill_batch.py). That row is over-priced by its decode, not its prefill: its 18.2 s run
#    holds 125 eager passes (~54 ms each at 1.7 ms x 32 layers, 6.8 s) and ~512 decode steps at 256 sequences, whose
#    planner step is 36 ms, 26 ms of it SEQ_STEP_OVERHEAD_S's 100 us per sequence, so the decodes alone come to
#    18.4 s; the run leaves ~21 ms a step, ~45 us per sequence on this host (the figure is known to over-state
#    vLLM's per-sequence host time beyond ~75 sequences, see there), which this factor cannot fix. Without the custom
#    kernel each layer's two eager all-reduces go through torch.distributed / RCCL calls, and HIP's launches may
#    cost more than CUDA's; not separated here. Held out, checked only: DSTACK405B-0001 / -0004 (the same node type,
#    vLLM 0.6.3.dev116, 1 / 2 prompts) -67 / -71 % at 0.65, -53 / -59 % at 1.0, -25 / -36 % at 1.7; the AMD vLLM
#    held-out TTFT rows (DSTACK405B, 23) 56 -> 52 % median.
VLLM_V0_TP_PREFILL_HOST_LAYER_S_AMD = 1.7e-3
# vLLM V0's Triton prefix-prefill attention on AMD GPUs under chunked prefill (performance.
#    vllm_rocm_prefix_attention_rel): the prefill attention's rate relative to the GEMMs' (COMPUTE_EFF). FITTED on
#    DSTACKCMP's long-prompt MI300X runs (fit split: AMD's fork rocm/vllm 0.6.4.dev4, Llama-3.1-405B FP8 at TP 8 / 4,
#    `vllm serve --max-model-len 91680`, so chunked prefill at V0's 512-token default, offline bursts of 4-64 prompts
#    of 32,784 tokens): throughput error +33 / +28 / +26 / +24 / +44 % at TP 8 (DSTACKCMP-0037..0041) and +6 / +30 /
#    +71 / +104 / +95 % at TP 4 (-0058/-0061/-0064/-0067/-0070) with the flash kernels' rate; at 0.1: +9 / -5 / -15 /
#    -23 / -15 % and -18 / -9 / +9 / +20 / +15 %, while their 2,048-token runs barely move (attention is a small
#    share there). Over all 145 AMD vLLM throughput fit rows (median / p90): 13.9 / 42.5 % at 1, 13.3 / 40.6 % at
#    0.15, 13.5 / 40.0 % at 0.1, 13.5 / 40.0 % at 0.07. Held out, checked only: DSTACK405B's single prompts of
#    10k-128k tokens (upstream 0.6.3.dev116, bf16, TP 8) measure ~13 TFLOPS per GPU of attention (their per-chunk
#    time grows by ~0.039 ms per context token), slower still than this gives (-77..-93 % -> -69..-70 % TTFT).
#    [2026-11-25, branch s37d-dstackcmp: the fit rows above did NOT chunk. They ran benchmark_throughput.py, not
#    `vllm serve`, on build c9fc1608 (ROCm/vllm, 2024-10-24), which predates vLLM PR #9529: its script passes
#    enable_chunked_prefill=False unless --enable-chunked-prefill is given (it was not). The rows now say so and
#    are priced unchunked (flash rate): +24..+44 % at TP 8, +30..+90 % at TP 4 again. This factor is left as it
#    was, but no fit row with long chunked prompts supports it any more; what makes those unchunked 32K-token runs
#    slow on this build is not modelled.]
VLLM_ROCM_PREFIX_PREFILL_ATTN_REL = 0.1
# HF transformers' eager attention (`attn_implementation="eager"`; Llama's only path before 4.36)
#    runs a decode step's attention as separate kernels from Python - QK^T, scaling, mask add, fp32
#    softmax and its cast back, AV, besides the causal mask built each step - where SDPA or
#    flash-attention is one call. Host time per layer, added where decode is launch-bound. Llama-2-13B
#    fp16 at batch 1 on an A100 SXM4 (optimum benchmark): 36.8 ms per token with eager attention at
#    512-1,024 tokens (transformers 4.32, OPTGPTQ-0002) against 30.4 ms with SDPA at 1-512 (4.37.2,
#    OPTGPTQ-0051), ~6 ms of which the larger cache's reads and copies explain ~2; NF4 shows the same
#    ~7 ms (OPTGPTQ-0006 vs -0054). Host time, overlapped like LAYER_OVERHEAD_S (HOST_LAUNCH_OVERLAPPED):
#    ~150 us per layer.
EAGER_ATTENTION_LAYER_S: dict[str, float] = {"transformers": 150e-6}

# Training step physics (training_speed.estimate_training). Fitted on the fit-split rows of
# mlrig/data/calibration with `python scripts/calibration_report.py --metric train_tokens_per_s_per_gpu`.
# Fraction of the dense tensor peak the training GEMMs (linear + flash attention) reach, before the
# narrow-model reduction d / (d + TRAIN_GEMM_WIDTH_D0). Together with the bandwidth-bound term below it
# reproduces the A100 MosaicML rows (T-mpt-*: 55-64 % MFU) and the H100 bf16 rows (FMSFSDP-*, OLMOCORE-*:
# 38-48 % MFU): the same kernels lose more on the H100 because its bandwidth:compute ratio is half the
# A100's (3.35 TB/s : 989 TFLOPS against 2.04 : 312).
TRAIN_GEMM_EFF: dict[str, float] = {"hbm": 0.72, "gddr": 0.65, "unified": 0.40, "host": 0.15}
# GeForce cards (training_speed.train_gemm_eff). Their catalog tensor rate is the FP16/BF16-with-FP32-accumulate
# figure, half the FP16-accumulate rate (NVIDIA Ada whitepaper: RTX 4090 165.2 vs 330.3 TFLOPS; GA102 whitepaper:
# RTX 3090 71 vs 142), and bf16 GEMMs always accumulate in FP32. At half rate the tensor cores are fed with
# time to spare and draw little power, so the card holds its boost clock (GPU Boost runs above the rated
# boost when power allows) and cuBLAS reaches the full figure: tinygrad's bounty for "165+ TFLOP GEMM (match
# torch) ... on 4090, FP16 with FP32 acc" (tinygrad/tinygrad PR #13623, 2025-12-09) takes torch's GEMM at
# >= 165 TFLOPS, and a multistage kernel for it measured 168 (PR #11390, 2025-07-27). The memory class's 0.65
# stays for the other GDDR cards (full-rate workstation and datacentre parts): the held-out L40S rows of
# PEFT's method comparison (PEFTMC-*) are best there (5.9 % median error; 12.5 % at 0.50). It left every
# GeForce row at large batch 0.7-0.9x too slow: the FSDP-QLoRA 2x RTX 3090 and 2x RTX 4090 DDP/FSDP rows
# (FSDPQLORA-0009..0040) and torchtune's Llama-3.1-8B rows on one 4090 (M-torchtune-002/006/010).
# 0.75-0.85 all bring them within ~15 %; 0.80, the middle, is taken. No GeForce row is held out: the
# figure is checked on fit rows only.
TRAIN_GEMM_EFF_GEFORCE = 0.80
# Narrow models under-fill the GEMM tiles: efficiency x d / (d + TRAIN_GEMM_WIDTH_D0).
TRAIN_GEMM_WIDTH_D0 = 220.0
# Fused C++/CUDA trainers (training_speed.FUSED_CUDA_ENGINES: Surogate, llm.q) on GDDR cards
# (training_speed.fused_engine_gemm_eff): the fraction of the catalog's dense tensor rate their GEMMs reach, with no
# narrow-model reduction. Before, priced with the PyTorch-stack figures above (0.80 GeForce / 0.65 elsewhere, times
# d / (d + 220)), every such row came out 0.59-0.89x of the measurement. Physically: GeForce's catalog rate is the
# half-rate FP32-accumulate figure, which the tensor cores reach in full with the clock above its rated boost (see
# TRAIN_GEMM_EFF_GEFORCE; tinygrad measured torch's 4090 GEMM at 165-168 of 165.2 TFLOPS), and llm.q's own
# speed-of-light read-out (matmul FLOPs / (time x peak): 75-81 % for the whole step on a 4090, 85 % on a 5060 Ti, at
# hidden 896-1,536) leaves the GEMMs ~0.9-1.0 of it; the full-rate workstation parts (RTX PRO 6000: SOL 53-69 %)
# reach what cuBLAS reaches on datacentre parts (~0.8 of peak: S. Bekman, ml-engineering, 'Maximum Achievable Matmul
# FLOPS', H100 792 of 989 TFLOPS). FITTED on the 16 bf16 GDDR fit rows (LLMQ4090X1-0002/-0004, LLMQ4090X4-0002,
# LLMQ5060TI-0002, LLMQPRO6000X1-0002/-0004/-0006/-0008, SUROGATE-0001..0008), grid 0.90-1.00 x 0.75-0.85,
# objective median + p90 / 2 of |pred / meas - 1|: 0.95 / 0.80 best (4.3 % / 8.4 %). With llm.q's FP8 casts and bf16
# LM head (training_speed.fused_fp8_cast_bytes_per_token, fused_fp8_bf16_head_params) the FP8 fit rows, not used to
# choose, come to 2.3 % / 7.9 %, and the held-out 4- and 8-GPU RTX PRO 6000 pages (LLMQPRO6000X4-*, -X8-*: bf16 and
# FP8) to 3.0 % / 4.0 %.
TRAIN_GEMM_EFF_FUSED: dict[str, float] = {"geforce": 0.95, "gddr": 0.80}
# Flash attention relative to the GEMMs (training_speed.attention_efficiency), on the FLOPs the kernels
# EXECUTE: a causal flash kernel skips the masked half of the (query, key) blocks (FlashAttention-2, Dao 2023,
# arXiv 2307.08691, sec. 3.1.1), so the step time is priced on s^2 / 2 pairs per layer
# (`training_speed.attention_executed_keys`) while MFU keeps counting all s^2. Until s30 the time too was
# priced on s^2 pairs with {"other": 0.9, "hopper+": 0.45, "cudnn-hopper+": 0.58}, figures read from kernel
# benchmarks, not fitted: FA2 reaches 50-73 % of an A100's peak (Dao 2023) - about the GEMMs' - but ~35 % of
# an H100's (Shah et al. 2024, FA3); "cudnn-hopper+" = Transformer Engine's cuDNN fused attention (NeMo /
# Megatron-Core) on Hopper and Blackwell, from NVIDIA's NeMo + TE Llama-2-70B LoRA 8x H200 run 1.11x faster
# end to end with cuDNN SDPA than with FA2 (blog "Accelerating Transformers with NVIDIA cuDNN 9", 2024,
# Table 1), giving 0.58 against FA2's 0.45. Refit on the fit rows with the halved count (s30; grid
# 0.3-0.9 / 0.15-0.55 / 0.2-0.58, objective = sum over the training tok/s and MFU scopes of fit rows x
# (median + p90 / 2)): optimum 0.45-0.50 / 0.30 / 0.29-0.40. Taken: exactly half of each old figure, which
# gives every row the time it had (a reparametrisation: no validation figure moves). These are the rates the
# fit sources' end-to-end times leave to attention (T-mpt-* and ATORCH-* on A100, FMSFSDP-*, OLMOCORE-*,
# MLPERF-FT*/PT* on Hopper: 2k-8k tokens): ~32 % of an A100's peak, ~16 % of an H100's (FA2) on executed
# FLOPs, half what the kernel benchmarks above reach; the gap is not explained (attention-side glue outside
# the kernel - RoPE, the q/k/v layout copies, the softmax statistics - is counted nowhere else). "hopper+"
# 0.30, the fit rows' optimum, moves prime-rl's H100/H200 rows (PRIMERL-*, FA3, the only rows past 16k
# tokens) from median 0.75x to 0.90x of measured (full) and 0.76x to 0.95x (LoRA; scope p90 49.5 % -> 43 %),
# but the training-full hbm scope's p90 from 29.2 % to 30.8 % (OLMOCORE-* 1.19x -> 1.29x) and its prime-rl
# 16k rows from 0.91x to 1.12x: not taken. prime-rl's 64k rows (0.4-0.6x) need FA3 on Hopper as a plan key and
# prime-rl's own non-attention time, not a larger global factor.
# "fa3-hopper" (s32): FlashAttention-3 on Hopper, for plans that name it (`training.attention_kernel =
# "flash_attention_3"`; prime-rl's `--model.attn flash_attention_3`, transformers' attn_implementation). FA3
# uses Hopper's wgmma / TMA and reaches 1.5-2.0x FA2's forward rate (740 TFLOPS bf16, 75 % of the H100's peak,
# Shah et al. 2024, arXiv 2407.08608, sec. 4.1) and 1.5-1.75x its backward. Fitted on prime-rl's benchmark pairs
# (the only fit rows that name FA3): the same setup at 16,384 and 65,536 tokens (PRIMERL-0015/-0017, -0033/-0035,
# -0063/-0065, -0069/-0071, -0087/-0089, -0097/-0099 LoRA; -0021/-0023, -0073/-0075, -0091/-0093,
# -0101/-0103 full) separates the attention time, which grows 16x per token, from the rest, which stays
# put. Solved pair by pair, attention runs at 0.21-0.25x the time the FA2 figure gives it (FA3 at about the
# GEMMs' rate, 1.0 here) while everything else takes 1.8-6x what the GEMM rate gives
# (`TRAIN_REST_REL_EFF_PRIME_RL_HBM`). Grid over both on the fit rows of the training tok/s HBM scopes
# (objective median + p90 / 2 of the LoRA scope, the full scope as a check): 0.45-0.70 with the rest factor
# 0.25-0.35 are within 2 points of each other; 0.60 (FA3 at ~40 % of the H100's peak on executed FLOPs, a
# little above FA2's 35 %-of-peak kernel figure, below FA3's kernel benchmarks) with 0.30 is taken. prime-rl's
# FA2 rows on Hopper (PRIMERL-0077/-0079/-0105) keep "hopper+"; they come out 24-45 % slow with the rest factor,
# i.e. FA2 in prime-rl too runs faster than the other frameworks' rows leave it (not refitted: one source).
TRAIN_ATTN_REL_EFF: dict[str, float] = {"other": 0.45, "hopper+": 0.225, "cudnn-hopper+": 0.29, "fa3-hopper": 0.60}
# FP8 attention (`training.fp8_dot_product_attention`: Transformer Engine's FP8 DotProductAttention, cuDNN's FP8
# fused flash attention forward and backward, Hopper and datacentre Blackwell in cuDNN's SDPA support matrix): how
# much faster mlrig's attention time runs than with the same cuDNN attention in BF16 (training_speed.
# fp8_attention_speedup: the FP8 peak at the BF16 attention's efficiency x this / (FP8 peak / BF16 peak)).
# Source: NVIDIA, "Accelerating Transformers with NVIDIA cuDNN 9" (developer.nvidia.com/blog/accelerating-
# transformers-with-nvidia-cudnn-9, 2024; cuDNN 9.0/9.1), Table 1: a Llama-2-70B LoRA fine-tune in NeMo + TE on an
# 8-GPU H200 node runs 1.11x with cuDNN SDPA in BF16 and 1.15x with cuDNN SDPA in FP8 (1.036x between them). On
# MLPERF-FT40-0004's setup (the same task and model on an 8-GPU H200 node, NeMo) mlrig's attention is 36 % of the
# step, so 1.1 reproduces that 1.036x (tests/test_training_keys.py). The kernels alone gain more - the same blog: cuDNN
# SDPA "up to 2x" PyTorch eager in BF16 and "up to 3x" in FP8 (1.5x); FlashAttention-3 (Shah et al. 2024, arXiv
# 2407.08608, figs. 5 and 7): cuDNN's forward at head dim 128, 8k tokens, H100 SXM5, 600 TFLOPS BF16 and 971 FP8
# (1.62x) - but mlrig's attention time holds more than the kernels (its fitted "cudnn-hopper+" efficiency puts cuDNN
# attention at ~1/3 of those benchmarks' rate), and FP8 adds the casts of Q, K, V, O and dO: 1.5 priced the switch at
# 1.14x end to end on MLPERF-FT40-0004's setup, 4x the blog's gain.
# The fit rows with FP8 attention on (FP8_DPA=1 / fp8_dot_product_attention=True) agree: the ten H100 LoRA rows
# (MLPERF-FT40-0001, -0007..-0015) have a signed median error of -2.1 % at 1.0 (attention in BF16), -0.6 % at 1.05,
# +0.8 % at 1.1, +2.1 % at 1.15, +4.5 % at 1.25. The eight Blackwell rows (MLPERF-FT51-0005; MLPERF-PT51-0004, -0010,
# -0018..-0021, -0023, Llama-3.1-8B NVFP4) do not tell: at 1.0 they are -10.3 %, as slow as the same model's FP8 rows
# without FP8 attention on the same GPUs (MLPERF-PT51-0005, -0006, -0011..-0016, -0024: -11.2 %), a Blackwell deficit
# of their own, not FP8 attention's. The held-out rows with it (MLPERF-FT41-0001, -0005, -0007) chose nothing.
TRAIN_FP8_ATTN_SPEEDUP = 1.1
# Fraction of peak DRAM bandwidth the element-wise kernels and the optimizer step reach: the same
# ~80 % that streaming kernels reach in inference decode on HBM (BW_EFF above: vllm/sglang/trt-llm on HBM); not fitted.
TRAIN_BW_EFF = 0.80
# Bytes moved by non-GEMM kernels (RMSNorm, SwiGLU, RoPE, residual adds, dropout-free attention
# glue, the loss), in passes over the (2h + i) 16-bit values of one token in one layer, forward and
# backward. Eager PyTorch upcasts norms to fp32 and runs each op as its own kernel (Llama's
# RMSNorm: ~7 kernels in fp32); fitted between the A100 and H100 rows above.
TRAIN_ELEMENTWISE_PASSES = 15.0
# The same for Surogate's fused kernels (training_speed.SUROGATE_ENGINES), counted from its Qwen3 block
# (surogate/dsl/blocks/qwen3.py at a9b33fdc) in values of one token, with q = the qkv width:
# forward - residual add + RMSNorm in one kernel (`fused_residual_rmsnorm`, read 2h write 2h) twice,
# QK-norm + RoPE in one (`qkv_qk_norm_rope`, read q write q), SwiGLU (read 2i write i): 8h + 2q + 3i;
# backward - the two norms' backward with the residual gradient (~4h each), QK-norm + RoPE (3q),
# SwiGLU (read 3i write 2i): 8h + 3q + 5i. For Qwen3's q ~ 1.5h, i ~ 3h that is 20h forward and 30.5h
# backward: 50.5h over the 5h of (2h + i), ~10 passes (recompute's forward again is the 0.33 added under
# full checkpointing). Derived, not fitted.
TRAIN_ELEMENTWISE_PASSES_FUSED = 10.0
# Fixed cost per optimizer step (optimizer bookkeeping, gradient clipping's norm, logging, the
# data loader's hand-off) and per micro-batch (kernel launches of a forward+backward, ~1k-3k
# kernels at ~5-10 us each in eager mode). Order-of-magnitude values, fitted with the rest of this
# block; they matter only for small, fast steps (LoRA on small models), where rows disagree widely.
# The micro-batch figure is for the whole model; a pipeline rank launches its stage's share along the
# schedule's critical path (training_speed.pipeline_microbatch_overhead_s).
TRAIN_STEP_OVERHEAD_S = 0.05
TRAIN_MICROBATCH_OVERHEAD_S = 0.01
# Megatron-Core's dropless MoE layer stops the host once per forward (and recomputed forward): the token
# dispatcher copies the tokens-per-expert counts to the CPU and synchronises to size the all-to-all and the
# grouped GEMM (megatron/core/transformer/moe/token_dispatcher.py, MoEAlltoAllTokenDispatcher: the
# `tokens_per_expert` / `input_splits` device-to-host copy and stream synchronisation before the
# all-to-all); after it the GPU idles until the host has launched the layer's next kernels, so the CPU time
# of the MoE layer's many small kernels (router, top-k, permutation, grouped GEMM, unpermutation) is no
# longer hidden behind the GPU ("CPU device-to-host synchronizations in MoE layers induce large kernel launch
# latencies", AMD, "MoE Training Best Practices on AMD GPUs", ROCm blog 2025-12-16; Megatron-Core's remedies
# are DeepEP's / Primus' sync-free paths, --moe-pad-expert-input-to-capacity and CUDA graphs). Seconds per
# MoE layer and micro-batch on a GPU (forward + backward), fitted on XTUNERMOE-0001..0009 (Qwen3-235B-A22B
# on 256 H800, Pai-Megatron-Patch): the step time's squared relative error over the nine is least at 6.3 ms
# (their micro-batch-1 rows ran 1.2-2x longer than their computation priced: 4-9 ms per MoE layer and
# micro-batch unaccounted for). It was 4 ms while TRAIN_MICROBATCH_OVERHEAD_S was charged whole on every
# pipeline rank and seven of the rows lacked the interleaved schedule their source quotes (vpp3 / vpp4);
# re-fitted on the same nine rows after both were corrected in s35 (training_speed.pipeline_microbatch_overhead_s;
# sum of squares 0.038 at 6.3 ms, 0.041 at 6, 0.052 at 5.5, 0.144 at 4).
# Holdout rows (MOEZOO, SWIFTMEG) took no part.
MOE_LAYER_HOST_SYNC_S = 0.0063
# bitsandbytes' NF4 de-quantisation kernel reaches this fraction of TRAIN_BW_EFF's bandwidth. Weakly
# constrained: over the 31 QLoRA speed rows (FSDPQLORA-*, M-torchtune-*, AXOLOTL-*) the median error
# is 23-24 % anywhere from 0.3 to 1.0 (p90 91 % at 0.3, 111 % at 0.5, 133 % at 1.0); 0.5 is the middle.
# Not re-fitted when the bytes it moves dropped from 4.5 to 2.56 per parameter
# (training_speed.QLORA_DEQUANT_BYTES_PER_PARAM no longer counts the GEMM's own read of the bf16 copy).
QLORA_DEQUANT_EFF = 0.5
# Host time per step of one FSDP unit that holds a LoRA Linear (lora_A or lora_B) in one pass (forward, the
# recompute, backward) under the HF Trainer's FSDP (training_speed.fsdp_adapter_units_s): FSDP1's Python hooks
# (pre-/post-forward, unshard, use_orig_params views, reshard, the post-backward reduce-scatter) around a
# kernel of microseconds, exposed because FSDP1's all-gather rate limiter (limit_all_gathers, accelerate's
# default; torch v2.4.1 _runtime_utils.py `_unshard`) blocks the CPU on the GPU's free events. Fitted on the
# 2 x A100 fms-acceleration rows of Mistral-7B and Llama-2-70B (FMSACC-0020/0024/0031/0034/0042/0045/0048/0057/
# 0061/0065/0077: 768 and 1,920 unit-passes a step), whose steps are 0.23-0.44 s (Mistral) and ~0.75 s (70B)
# longer than the same runs' single-GPU rows at the same micro-batch (FMSACC-0018/0022, 0044/0047, 0056,
# 0059/0063; full fine-tuning, FMSACC-0010/0014 vs 0012/0016, differs by 0.17-0.23 s, about its gathers):
# 0.3 / 768 = 0.75 / 1,920 = 0.4 ms. Mixtral's 2-GPU QLoRA rows (FMSACC-0037/0040/0051/0054) stay 0.8-0.9 s a
# step too fast, as its single-GPU rows are (FMSACC-0050/0053: 0.9-1.1 s): a cost of transformers' MoE block on
# one GPU as on two, not FSDP's; its bf16 LoRA rows (FMSACC-0026/0028) lack 0.4-0.6 s more, not modelled.
FSDP_ADAPTER_UNIT_PASS_S = 0.0004
# HF-modelling frameworks (training_speed.HF_MODELLING_ENGINES: transformers + PEFT + bitsandbytes under
# fsdp_qlora, axolotl, TRL; eager PyTorch modules with FlashAttention-2 and no Transformer Engine) on NVIDIA
# Hopper and newer: their GEMMs reach this fraction of what TRAIN_GEMM_EFF gives the same code elsewhere.
# Answer.AI's fsdp_qlora table (benchmarks_03_2024.md, 'Recommendations for Different Hardware
# Configurations': Llama-2-70B QLoRA, context 2048) has the same script on A100 40GB SXM and H100 80GB SXM:
# 414 and 390 tokens/s per GPU on 4 and 8 A100s (FSDPQLORA-0048/-0049, predicted within +4/+11 % at
# TRAIN_GEMM_EFF) but 786 on 4 H100s (FSDPQLORA-0050), 1.9x the A100 where the bf16 peaks differ 3.2x
# (989 vs 312 TFLOPS) and the bandwidths 2.2x; the source says the H100 run was compute bound ('Changing
# the batch size from 8 to 12 made little difference, as did switching from QLoRA to LoRA'), so neither the
# all-gathers nor the de-quantisation explain it: the H100 reached ~33 % of its peak on the work,
# against ~55 % on the A100. axolotl's single-H100 Llama-4 Scout QLoRA (AXOLOTL-0001, another source and
# framework on the same stack: 519 tokens/s with all 16 experts computed per token, ~34 % of the peak)
# agrees. Without the factor (and at the former 4.5 B of de-quantisation) they came out 1.66x and 1.49x too
# fast; 0.57 brings both within 2 %. The held-out FMS-FSDP H100 rows (another eager-PyTorch stack, not in
# HF_MODELLING_ENGINES, untouched) are mostly 1.1-1.5x too fast as well: checked, not used to choose the value.
# What loses the rate on Hopper is not isolated: cuBLAS reaches ~80 % of the H100's peak on its best
# shapes (S. Bekman, ml-engineering, 'Maximum Achievable Matmul FLOPS': 792 of 989 TFLOPS, A100 86 %),
# so it is not the GEMM kernels alone; the stacks with Transformer Engine (NeMo, Megatron: MLPERF-*) do not
# show it and keep TRAIN_GEMM_EFF. Datacentre Blackwell (B200, B300) is assumed to behave as Hopper
# (no row); GeForce and workstation Blackwell (GB20x) are not (training_speed.hf_stack_on_hopper).
# QLoRA only: both rows above are bitsandbytes-NF4 QLoRA. bf16 full fine-tuning through the same HF Trainer
# (Scicom small-ablation, transformers 4.57: Qwen3-0.6B on 4x H100 / 4x H200 at 292k / 300k tokens/s,
# SCICOM-0004/-0005; Qwen3-1.7B on one H100 at 19.3k, SCICOM-0002) came out 0.44-0.79x of the measurement
# with the factor and 0.70-1.30x without it (median |log error| over the three 0.77 -> 0.27), so it is not
# applied there; nothing else changed. (Since attention is priced at the query width, 2026-11-24, SCICOM-0003/
# -0004/-0005 are `anomaly`: their flash attention spans packed documents of unstated length; SCICOM-0002,
# whose width equals d_model, still measures 1.3x what the factor gives.)
TRAIN_GEMM_REL_EFF_HF_HOPPER = 0.57
# prime-rl's trainer (training_speed.PRIME_RL_ENGINES; PrimeIntellect-ai/prime-rl at b798a90d: FSDP2 with fp32
# master weights cast to bf16 per micro-batch (MixedPrecisionPolicy), torch.compile per transformer block,
# transformers' modelling code for dense Qwen3 and its own for the MoE models, MultiLoRALinear's grouped-GEMM
# adapters with per-token scaling (src/prime_rl/trainer/models/layers/lora/multi_linear.py), the RL loss through
# a chunked LM head that recomputes each 2,048-column chunk of logits in backward (models/layers/lm_head.py,
# _ChunkedLogProbEntropyFn)) on HBM GPUs: the fraction of the memory class's GEMM rate at which its
# non-attention work (priced on the linear layers' FLOPs) runs. From the 16k / 64k pairs named under
# TRAIN_ATTN_REL_EFF: the part of the step that grows linearly with the tokens takes 1.8-6x (median ~3x) what
# the GEMM rate and the element-wise passes give - more for the small and MoE models (Qwen3-0.6B 6x,
# Qwen3-30B-A3B 4-5x, Qwen3-4B 1.8-2.9x), i.e. a per-token cost that does not scale with the model's FLOPs;
# which of the pieces above costs it is not isolated (no profile is published). Without it the 16k rows,
# priced with FA2's slow attention, came out right only because that slow attention stood in for it, and the
# 64k rows (attention ~90 % of the step) 0.42x of measured. Fitted jointly with "fa3-hopper" (grid there);
# HBM only: prime-rl's RTX A6000 rows (GDDR, FA2) are left to that class.
TRAIN_REST_REL_EFF_PRIME_RL_HBM = 0.30

# De-quantisation is ALU work, and Apple GPUs have little ALU per byte of bandwidth (an M1 Max: 10.4
#    FP32 TFLOPS for 400 GB/s, 26 FLOP/byte; an RTX 3090: 36 TFLOPS for 936 GB/s, 38; and CUDA's mat-vecs
#    unpack with int8 dot-product instructions Metal lacks). ggml-metal's k-quant mat-vecs
#    (kernel_mul_mv_q4_K_f32 etc.: 6-bit packed sub-scales and mins per 32 weights, nibble masks and shifts,
#    int-to-float conversion, scale x q - min per weight, a SIMD-group reduction per row) then run out of
#    ALU before bandwidth: Llama-3-8B and -70B Q4_K_M on an M1 Max decode at 35.7 and 4.3 tok/s
#    (XD-0187, XD-0199), 0.41-0.45 of the bandwidth figure whatever the model size, against F16's 0.70
#    (XD-0193), and a 24-core M1 Max is slower than a 32-core one on the same memory (LocalScore, held out,
#    agrees). A flat k-quant bandwidth factor (0.65) cannot say that a chip with more ALU per byte (an
#    M2 Max 38-core, an M3 Pro) is bandwidth-bound where an M1 is not. So a decode pass's mat-vecs also
#    take MATVEC_DEQUANT_OPS ALU operations per weight at the GPU's FP32 rate
#    (performance.matvec_dequant_s), combined with the bandwidth time like any compute side of the
#    roofline (ROOFLINE_SMOOTHING_P). Ops per weight, fitted on the fit rows (A4167-*, XD-018x..024x) with
#    UNIFIED_BW_EFF_BY_WIDTH, LAYER_OVERHEAD_S["llama.cpp-metal"] and APPLE_CONCURRENT_ALU_SPEEDUP by a
#    coordinate search minimising median + p90 |log(pred / meas)|: Q4_K_M 20 (16 or 24 leave the 8B
#    and 70B pairs apart), Q8_0 / Q4_0 4 (one scale per 32 weights). F16: only the FMA the compute side
#    counts. `mlrig validate` decode llama.cpp unified 11 % / 28 % -> 6.8 % / 21 %; held out, LocalScore's
#    101 rows 15 % -> 8.9 % median.
MATVEC_DEQUANT_OPS: dict[str, dict[str, float]] = {"llama.cpp-metal": {"q8": 4.0, "legacy": 4.0, "kquant": 20.0},
                                                    "llama.cpp-hip": {"q8": 14.0, "legacy": 14.0, "kquant": 20.0}}
# The same ALU ceiling in llama.cpp's HIP build (mul_mat_vec_q: each weight block unpacked and dotted with the
#    q8_1-quantised activations through ggml_cuda_dp4a, __builtin_amdgcn_sdot4 / sudot4 on AMD, then scaled) on a
#    GPU with little FP32 per byte: a gfx906 MI50 has 13.3 TFLOPS for 1,024 GB/s (13 FLOP/byte, half an M1 Max's),
#    an RX 7900 XTX 61.4 for 960 (64). Fitted on the MI50X2-* fit rows (2x MI50 32GB, llama-bench tg128): F16
#    decodes at the bandwidth figure (Gemma-3-27B, Qwen3-14B BF16: within 3 %), Q8_0 / Q4_0 / Q4_K_S / Q3_K_M
#    at 0.55-0.65 of F16's bandwidth: ops per weight 14 for Q8_0 and Q4_0 (Gemma-3-12B Q8_0 +4 %, Qwen3-14B Q4_0
#    -7 %; they were +35 % and +20 % with the launch fix alone) and 20 for k-quants (Qwen3-14B Q4_K_S -15 %,
#    Llama-4-Scout Q3_K_M +21 %; 16 and 24 leave one of them 35 % out). On the 7900 XTX the same ops cost
#    ~0.3 ms a token of Gemma-3-1B Q4_K_M, mostly hidden under the weight reads: the RX7900X6-* decode rows move
#    by 1-2 %.
# ggml-metal runs a matrix product through its mat-vec kernels up to 8 token columns, unpacking each
#    weight again per column (ggml/src/ggml-metal/ggml-metal-ops.cpp, `ne11_mm_min = 8`); above, its
#    mat-mat kernel unpacks a weight tile once into threadgroup memory for many tokens.
METAL_MATVEC_MAX_TOKENS = 8
# From Metal GPU family Apple9 (M3, M4; the catalog's `architecture`) each shader-core scheduler issues
#    two instructions per cycle to its FP32, FP16 and integer pipelines (Apple tech talk "Explore GPU
#    advancements in M3 and A17 Pro", 2023-11, "high-performance ALU pipelines"; AppleInsider, "What
#    Apple's three GPU enhancements in A17 Pro and M3 actually do", 2023-11-10). De-quantisation mixes
#    integer unpacking with float math, so it runs faster than the FP32 rate says. 1.8 (of at most 2)
#    fitted on the one fit chip of that family: the M3 Max 40-core's Q4_K_M 8B / 70B decode
#    (XD-0229..0231, XD-0241..0243; predicted / measured 0.58-0.75 before, 0.85-1.02 after). Held out, the
#    LocalScore M3 / M4 rows agree (8B Q4_K_M on M3 Pro / M4 / M4 Pro / M4 Max 0.72-0.92 -> 0.90-1.07).
APPLE_CONCURRENT_ALU_SPEEDUP = 1.8
# From Metal GPU family Apple10 (M5) each GPU core carries a "Neural Accelerator", matrix hardware that Metal 4's
#    tensor API (MTLTensor, the Metal Performance Primitives' matmul2d) drives (Apple newsroom, "Apple unleashes M5",
#    2025-10-15: "over 4x the peak GPU compute for AI" of M4, no TFLOPS given; the catalog's fp16 figure for M5 is the
#    SIMD rate). llama.cpp's Metal backend runs its mat-mat kernels through that API where the device has it
#    (ggml-org/llama.cpp PR #16634, "metal : initial Metal4 tensor API support", opened 2025-10-17). MLX uses the
#    accelerators only from macOS 26.2 (Apple Machine Learning Research, "Exploring LLMs with MLX and the Neural
#    Accelerators in the M5 GPU", 2025-11): no fit row of that setup yet, so MLX keeps the SIMD rate (and is
#    pessimistic on macOS 26.2+). The speed-up of llama.cpp's prefill GEMMs over the SIMD rate, fitted on
#    ZISKIND-0013..0018 (Qwen3-30B-A3B Q4_K_M, llama-bench pp512..pp16384 on a 10-core M5, Nov 2025 build:
#    measured / predicted 1.85-2.08 at the SIMD rate). One chip, one model, one source: a rough figure.
#    Refitted on the same rows (2.0 -> 2.6, median error of the six -20 % -> 0) once the grouped expert GEMMs are
#    priced at the 32-token tiles they compute (performance.apple_expert_gemm_rows_factor: 1.5x the routed expert
#    rows at each 512-token micro-batch of this model), which the 2.0 had absorbed. Still within Apple's "over 4x".
APPLE_NEURAL_ACCEL_GEMM_SPEEDUP: dict[str, float] = {"llama.cpp": 2.6}
APPLE_NEURAL_ACCEL_FAMILIES = (10,)
# Tiles of the Metal engines' grouped expert GEMMs in a prompt pass (performance.apple_expert_gemm_rows_factor,
#    which cites the source lines): llama.cpp's kernel_mul_mm_id computes 32-token tiles per expert from 32 tokens
#    in the micro-batch (ne21_mm_id_min); MLX's gather_qmm_rhs 16-row blocks per expert segment once mlx-lm sorts
#    (64 routed rows or more) and at least 4 rows fall to an expert. Kernel constants, not fitted.
METAL_MUL_MM_ID_TOKEN_TILE = 32
METAL_MUL_MM_ID_MIN_TOKENS = 32
MLX_GATHER_QMM_RHS_BM = 16
MLX_SWITCH_SORT_MIN_ROWS = 64
