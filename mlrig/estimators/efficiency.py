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
    "llama.cpp-metal",
    "vllm",
    "sglang",
    "trt-llm",
    "trt-llm-2023",
    "transformers",
    "exllamav2",
    "mlc",
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
#    stacks busy at batch 1. Apple (Metal, A4167-* and XD-018x..024x F16/Q8_0 rows): ~80 %.
#    Serving engines (vLLM, SGLang, TensorRT-LLM) with CUDA graphs reach ~80 % on HBM at batch 1
#    (TensorRT-LLM TRT061-* throughput rows; vLLM/SGLang are assumed equal, no calibration rows).
BW_EFF: dict[str, dict[str, float]] = {
    "llama.cpp": {"gddr": 0.86, "hbm": 0.60, "unified": 0.80, "host": 0.65},
    "llama.cpp-2024": {"gddr": 0.86, "hbm": 0.60, "unified": 0.80, "host": 0.65},
    "llama.cpp-metal": {"gddr": 0.80, "hbm": 0.70, "unified": 0.80, "host": 0.65},
    "vllm": {"gddr": 0.82, "hbm": 0.80, "unified": 0.75, "host": 0.60},
    "sglang": {"gddr": 0.82, "hbm": 0.80, "unified": 0.75, "host": 0.60},
    "trt-llm": {"gddr": 0.85, "hbm": 0.82, "unified": 0.75, "host": 0.60},
    "transformers": {"gddr": 0.60, "hbm": 0.55, "unified": 0.55, "host": 0.50},  # eager PyTorch: no graphs
    "exllamav2": {"gddr": 0.82, "hbm": 0.75, "unified": 0.70, "host": 0.60},
    "mlc": {"gddr": 0.80, "hbm": 0.75, "unified": 0.80, "host": 0.60},
}

# 1b. Intel Arc (GDDR) cards reach far less of their peak bandwidth than NVIDIA or AMD GDDR cards:
#    llama.cpp Vulkan tg128 of Llama-2-7B Q4_0 gives 36 % on the Arc A770 (V10879-0016) and 59 %
#    on the Arc B580 (V10879-0018). No single class factor fits both (the cards differ 1.6x);
#    0.50 splits the miss evenly (A770 +24 %, B580 -24 % in `mlrig validate`). It applies to
#    every engine on Arc (no calibration rows exist for other engines on Intel GPUs); Gaudi (HBM)
#    is not capped: no rows. A hardware-class factor fitted on two rows from one source, so
#    Arc decode figures carry a wider band (performance.INTEL_GDDR_DECODE_BAND, +-25 %).
INTEL_GDDR_BW_EFF_CAP = 0.50

# 2. Fraction of the peak dense tensor rate reached by prefill GEMMs (16-bit weights).
#    llama.cpp uses cuBLAS with FP16 accumulation for F16 GEMMs, so on GeForce cards the
#    reference peak is the FP16-accumulate rate (2x the FP32-accumulate figure the catalog holds;
#    see `performance.peak_tflops`). Rows: F16 pp512/pp1024 of RTX 3090 XD-0085, RTX 4080 XD-0103
#    (~50 % of FP16-acc peak), RTX 6000 Ada XD-0334, RTX A6000 XD-0502, A40 XD-0460 (~30-40 %),
#    A100 PCIe XD-0376 (~40 %), H100 PCIe XD-0544 (~23 %: llama.cpp's mma.sync kernels do not use
#    Hopper's wgmma path). Apple (Metal): M1/M2 F16 pp512 rows A4167-00xx against the GPU's FP16
#    rate. TensorRT-LLM: TTFT rows TRT061-0039..0057.
COMPUTE_EFF: dict[str, dict[str, float]] = {
    "llama.cpp": {"gddr": 0.70, "hbm": 0.40, "unified": 0.70, "host": 0.50},
    "llama.cpp-2024": {"gddr": 0.55, "hbm": 0.50, "unified": 0.70, "host": 0.50},
    "llama.cpp-metal": {"gddr": 0.55, "hbm": 0.50, "unified": 0.85, "host": 0.50},
    "vllm": {"gddr": 0.55, "hbm": 0.55, "unified": 0.45, "host": 0.40},
    "sglang": {"gddr": 0.55, "hbm": 0.55, "unified": 0.45, "host": 0.40},
    "trt-llm": {"gddr": 0.60, "hbm": 0.60, "unified": 0.45, "host": 0.40},
    "transformers": {"gddr": 0.40, "hbm": 0.40, "unified": 0.35, "host": 0.30},
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
LAYER_OVERHEAD_S: dict[str, float] = {
    "llama.cpp": 25e-6,
    "llama.cpp-2024": 90e-6,
    "llama.cpp-metal": 90e-6,
    "vllm": 25e-6,
    "sglang": 25e-6,
    "trt-llm": 20e-6,
    "transformers": 150e-6,
    "exllamav2": 40e-6,
    "mlc": 40e-6,
}

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

# TensorRT-LLM before v0.8 shares every factor above with the current engine; its one difference
# (GQA decode attention) is KV_READ_PER_QUERY_HEAD below.
BW_EFF["trt-llm-2023"] = BW_EFF["trt-llm"]
COMPUTE_EFF["trt-llm-2023"] = COMPUTE_EFF["trt-llm"]
LAYER_OVERHEAD_S["trt-llm-2023"] = LAYER_OVERHEAD_S["trt-llm"]
PREFILL_TOKEN_LAYER_S["trt-llm-2023"] = PREFILL_TOKEN_LAYER_S["trt-llm"]
STEP_OVERHEAD_S["trt-llm-2023"] = STEP_OVERHEAD_S["trt-llm"]

# Decode attention over a GQA/MQA cache: current kernels (FlashInfer/FlashAttention decode in
#    vLLM and SGLang, TensorRT-LLM's XQA, llama.cpp's flash-attention kernels) load each KV head once
#    for all the query heads of its group. TensorRT-LLM before v0.8 ("trt-llm-2023", the v0.5/v0.6.1
#    TRT061-* tables) ran GQA decode through its multi-head kernel, which reads a KV head once per
#    query head: the KV bytes of a step are multiplied by num_heads / num_kv_heads (8 for Llama-2-70B,
#    29 for Falcon-180B, 1 for the MHA GPT-J and Llama-2-7B). Source: TensorRT-LLM's XQA blog
#    (docs/source/blogs/XQA-kernel.md, Jan 2024): XQA "reduc[es] data loading" for MQA/GQA generation
#    and gives 1.9-2.4x Llama-70B throughput at ISL/OSL 128/2048. The full group factor is an upper
#    bound (L2 hits between query heads of a group are ignored).
KV_READ_PER_QUERY_HEAD = frozenset({"trt-llm-2023"})

# Fraction of the ideal pipeline speed-up that llama.cpp's layer split reaches on prompts longer than
#    one micro-batch (`performance.llama_cpp_pipeline_speedup`). The XD-* multi-GPU rows disagree by
#    model: Llama-3-8B on 4 GPUs reaches 80-95 % of the ideal at pp4096 (RTX 3090 XD-0045 vs XD-0086,
#    A100 PCIe XD-0354 vs XD-0378, RTX 6000 Ada, A40, H100 PCIe), Llama-3-70B Q4_K_M only 0-40 %
#    (A40 XD-0444 vs XD-0468, A100 SXM4 XD-0402, RTX A6000). 0.5 lies between them; the prefill
#    error band carries the disagreement.
LLAMA_CPP_PIPELINE_EFF = 0.5

# Weight-format families: de-quantisation work in the mat-vec lowers the bandwidth reached.
#   f16: fp32/bf16/fp16 (no de-quantisation); q8: q8_0 / int8 / fp8; legacy: q4_0, q4_1, q5_0,
#   q5_1 (one scale per block of 32, cheap); kquant: q2_k..q6_k, iq* (super-blocks with 6-bit
#   sub-scales, more ALU per byte); gpu4: GPTQ / AWQ / EXL2 / Marlin kernels; mxfp4/nvfp4.
# Rows: llama.cpp CUDA Q4_K_M decode (XD-*) reaches F16's efficiency once per-layer overhead is
# separated (8B vs 70B pairs), so kquant = 1.0 on CUDA;
# Q4_0 decode (C15013-*, scoreboard) ~0.95; Metal Q4_K_M vs F16 on M1/M3 Max (XD-0187/0193,
# XD-0229/0235) ~0.65; Metal Q8_0/Q4_0 (A4167-*) ~0.9.
FORMAT_DECODE_EFF: dict[str, dict[str, float]] = {
    "default": {"f16": 1.0, "q8": 0.92, "legacy": 0.95, "kquant": 1.0, "gpu4": 0.85, "fp4": 0.85},
    "llama.cpp-metal": {"f16": 1.0, "q8": 0.92, "legacy": 0.90, "kquant": 0.65, "gpu4": 0.80, "fp4": 0.80},
}

# Prefill with quantised weights: llama.cpp de-quantises on the fly inside its MMQ (int8 tensor
# core) or de-quantise+cuBLAS path; measured Q4_K_M/F16 prefill ratio on the same card is
# 0.75-0.87 (RTX 4080 XD-0097/0103, A100 PCIe XD-0370/0376, H100 PCIe XD-0538/0544, RTX 6000 Ada
# XD-0328/0334). We model quantised prefill as the FP16 tensor path times this factor (not the
# int8 peak, which it never approaches).
QUANT_PREFILL_EFF = 0.80

# Training: model-FLOPs utilisation (MFU, 6N + attention per token) reached by tuned large-scale
# training (FSDP/Megatron, FlashAttention, bf16) on datacentre cards at large model width.
# MosaicML llm-foundry table (T-mpt-*): 1B-30B models at 2k-8k context, no checkpointing: 55-64 %.
TRAIN_MFU: dict[str, float] = {"hbm": 0.60, "gddr": 0.45, "unified": 0.30, "host": 0.10}
# Narrow models under-fill the GPU (tile quantisation, launch overhead): MFU x d / (d + d0).
# T-mpt-* 125M (d=768) reaches ~43 %, 350M (d=1024) ~50 %, >= 1B (d >= 2048) 55-60 %.
TRAIN_WIDTH_D0 = 220.0
# Activation checkpointing recomputes the forward (2N per token more hardware FLOPs) but costs
# less than its FLOP share in time: T-mpt-* rows with activation_ckpt=True run at ~0.88 of the
# MFU of comparable rows without it (the recompute kernels overlap with FSDP communication).
RECOMPUTE_TIME_FRACTION = 0.55  # fraction of the recompute FLOPs that shows up as time
