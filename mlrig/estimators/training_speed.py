"""Training speed and the arithmetic around a training run.

FLOPs per token (Kaplan et al. 2020 "Scaling Laws", sec. 2.1; Narayanan et al. 2021
"Efficient Large-Scale Language Model Training on GPU Clusters", appendix): forward 2N, backward
4N -> 6N per token, plus attention 12 x layers x w x seq_len (fwd 4 L w s; bwd twice that;
the convention of the MosaicML llm-foundry MFU table used for calibration, which counts every
(query, key) pair as if non-causal). MFU and HFU are reported in that convention; the step TIME is
priced on the pairs the kernels execute, half of them for causal flash attention
(`attention_executed_keys`; FlashAttention-2, Dao 2023, sec. 3.1.1), as inference prefill counts them
(`performance.attention_flops`). w is the attention's query width, num_heads x head_dim
(`ModelArch.attention_widths`; FlashAttention, Dao et al. 2022, counts 4 x seq^2 x heads x head_dim
per layer forward), not d_model: the two differ in Qwen3-0.6B (2048 vs 1024), Qwen3-4B, Gemma and MLA
models, and are equal in Llama, where llm-foundry's 12 L d s comes from. Activation
checkpointing recomputes the forward: +2N (+ attention fwd) hardware FLOPs. MFU counts model
FLOPs only, HFU counts hardware FLOPs (Chowdhery et al. 2022, PaLM, appendix B).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlrig import vec
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators import score_traffic
from mlrig.estimators.hardware import board_power_tflops
from mlrig.results import Performance, TrainingRun
from mlrig.vec import Num

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.interconnects import Interconnect
    from mlrig.catalog.models import ModelArch
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.quant import Precision
    from mlrig.workload import Plan


def train_flops_per_token(
    params: float, layers: int, attn_width: float, seq_len: Num, recompute: bool = False,
    layer_keys: Num | None = None, frozen_base: bool = False,
) -> tuple[Num, Num]:
    """(model FLOPs, hardware FLOPs) per trained token: 6N + 12 L w s, plus the recomputed
    forward 2N + 4 L w s with activation checkpointing; w = `attention_width(arch)` (formulas in the
    module docstring). `layer_keys`: L s with sliding-window layers counted at their band
    (`attention_layer_keys`); None: every layer at full context, L s. `frozen_base` (LoRA, QLoRA): the
    frozen weights need no weight gradient, so the backward's linear work is the activation gradient
    only, 2N, not 4N (Hu et al. 2021, "LoRA", sec. 4: no gradients for the frozen weights); the
    attention backward is unchanged, since gradients still flow through it to the adapters below.
    Counting 6N there put a LoRA run on 2 x RTX 3090 at "HFU 92 %"."""
    attn_fwd = 4.0 * attn_width * (layers * seq_len if layer_keys is None else layer_keys)
    model = (4.0 if frozen_base else 6.0) * params + 3.0 * attn_fwd
    hw = model + (2.0 * params + attn_fwd if recompute else 0.0)
    return model, hw


def attention_width(arch: ModelArch) -> float:
    """The width w in the attention FLOPs 4 L w s per token forward: the mean of the QK^T and AV widths
    (`ModelArch.attention_widths`), num_heads x head_dim for standard attention; (192 + 128) / 2 x heads
    for DeepSeek's MLA."""
    qk_width, v_width = arch.attention_widths
    return (qk_width + v_width) / 2.0


def attention_layer_keys(arch: ModelArch, seq: Num, windowed: bool = True) -> Num:
    """Keys per query summed over the layers, the L s of the attention FLOPs 4 L w s per token forward, in
    this module's non-causal convention (s keys per query: s^2 pairs per layer, twice the causal
    triangle's s^2 / 2).

    Sliding-window layers (`ModelArch.sliding_window` / `num_sliding_layers`, read from the config's
    `sliding_window` with `layer_types`, Gemma's pattern, gpt-oss's alternation or Qwen's
    `use_sliding_window`; the same fields the inference estimates use) attend to the last W tokens only.
    A kernel given the window skips the blocks outside it (FlashAttention-2 `window_size=(W - 1, 0)`,
    Dao 2023, arXiv 2307.08691, "local attention"; Transformer Engine's `window_size`), so it computes the
    band of a causal s-token sequence, s W - W^2 / 2 pairs for s > W. Counted as above (x 2) that is
    s - (s - W)^2 / s keys per query: s at s <= W, 2 W - W^2 / s beyond (Mistral-7B-v0.1, W 4,096, at 32k:
    0.23 s). Llama 4's chunked layers (`sliding_window` = the chunk) are priced as a window of the chunk's
    length, which over-counts them somewhat. `windowed` false (eager attention, `flash_attention = false`:
    the window is a mask on the full s x s scores) prices every layer at full context."""
    layers = arch.num_layers
    w = arch.sliding_window
    if not windowed or not arch.num_sliding_layers or not w:
        return layers * seq
    band = seq - vec.maximum(0, seq - w) ** 2 / seq
    return (layers - arch.num_sliding_layers) * seq + arch.num_sliding_layers * band


def attention_executed_keys(arch: ModelArch, seq: Num, flash_attention: bool = True) -> Num:
    """Keys per query summed over the layers that the attention kernels actually compute, in the same
    units as `attention_layer_keys` (the x 4 w of the forward FLOPs applies to both); the step TIME is
    priced on these, MFU/HFU keep the non-causal convention. A causal flash kernel skips the key blocks
    above the diagonal: FlashAttention-2 (Dao 2023, arXiv 2307.08691, sec. 3.1.1 "Causal masking": "about
    half of the blocks" are skipped) and FlashAttention-3 / cuDNN likewise, so it executes the causal
    triangle's s^2 / 2 pairs per layer, half the convention's s^2 (and half of a window's band counted as
    there): `attention_layer_keys` / 2. The same causal pairs as inference prefill
    (`performance.attention_flops`, s^2 / 2 per layer). The partly-masked diagonal blocks (s x 128 / 2 more
    pairs) are not counted, as in prefill. Eager attention (`flash_attention` false) computes the whole
    s x s score matrix and masks it afterwards: every pair, `attention_layer_keys` unhalved (at the flash rate
    `attention_efficiency`: twice flash's time; no calibration row measures eager training speed)."""
    keys = attention_layer_keys(arch, seq, flash_attention)
    return keys / 2.0 if flash_attention else keys


def power_capped_tflops(peak_tflops: float, power_limit_w: float | None, tdp_w: float | None) -> float:
    """Tensor peak under a power cap (nvidia-smi -pl). Dynamic CMOS power is C V^2 f and, in the
    DVFS range, voltage scales roughly with frequency, so P ~ f^3 and the sustained clock under a
    cap P below TDP is ~ (P / TDP)^(1/3) of the boost clock (Weste & Harris, "CMOS VLSI Design",
    sec. 5.1 on dynamic power; the cube law is an approximation, treat it as +-5 %). Memory
    bandwidth is not scaled: HBM/GDDR clocks do not follow the core's. `tdp_w`: what the card draws under
    the load at full clocks (its board power unless known lower: `GEFORCE_TRAIN_DRAW_FRACTION`)."""
    if not power_limit_w or not tdp_w or power_limit_w >= tdp_w:
        return peak_tflops
    return peak_tflops * (power_limit_w / tdp_w) ** (1.0 / 3.0)


def fp4_training(precision: Precision, gpu: GPU) -> bool:
    """NVFP4 / MXFP4 training on a GPU with an FP4 tensor rate (Blackwell): Transformer Engine's NVFP4
    recipe runs the linear layers' forward and backward GEMMs in FP4 (block-scaled E2M1, an FP8 scale per
    16 values), attention and the rest in bf16, as MLPerf Training v5.1's NVFP4 Llama-2-70B LoRA runs do.
    Elsewhere an FP4 precision trains at the bf16 rate."""
    return precision.family == "fp4" and bool(gpu.fp4_tflops_dense)


def _train_peak(gpu: GPU, precision: Precision, power_limit_w: float | None) -> tuple[float, float, str]:
    """(peak for the linear GEMMs, peak for attention and the rest, label), TFLOPS. FP8 training runs
    only the linear layers' GEMMs in FP8 (Transformer Engine `fp8_autocast`; torchao float8 converts
    nn.Linear only): attention, norms and the optimizer stay bf16/fp32; FP4 likewise (`fp4_training`).
    FP32 training runs at the non-tensor FP32 rate: PyTorch leaves TF32 matmuls off by default
    (torch.backends.cuda.matmul.allow_tf32 = False since 1.12), and a V100 has no TF32."""
    bf16 = gpu.tensor_tflops("bf16") or gpu.fp32_tflops
    if not bf16:
        raise MlrigError(f"{gpu.name} has no tensor or FP32 rate in the catalog; cannot estimate training speed")
    linear_dtype = rest_dtype = "bf16"
    if precision.name == "fp8" and gpu.fp8_tflops_dense:
        linear, linear_dtype = gpu.fp8_tflops_dense, "fp8"
        label = "FP8 linear GEMMs"
    elif precision.name == "fp8":  # no FP8 tensor cores (A100, V100, RDNA 3...): the GEMMs run in bf16
        linear = bf16
        label = "bf16 GEMMs (no FP8 tensor cores on this GPU)"
    elif fp4_training(precision, gpu):
        linear, linear_dtype = gpu.fp4_tflops_dense or bf16, "fp4" if gpu.fp4_tflops_dense else "bf16"
        label = "FP4 linear GEMMs"
    elif precision.compute == "fp32":
        bf16 = linear = gpu.fp32_tflops or bf16
        linear_dtype = rest_dtype = "fp32"
        label = "FP32 (no tensor cores)"
    else:
        linear = bf16
        label = "bf16"
    draw = gpu.tdp_w  # what the card draws under the load at full clocks
    if draw and gpu.hardware_class == "geforce":
        draw = draw * GEFORCE_TRAIN_DRAW_FRACTION

    def sustained(peak: float, dtype: str) -> float:
        """The cube-law power cap on the rating, or, where board power bounds the GEMMs
        (`hardware.board_power_tflops`, linear in the watts: the cap lowers that bound in proportion), that bound."""
        capped = power_capped_tflops(peak, power_limit_w, draw)
        bound = board_power_tflops(gpu, dtype, power_limit_w)
        return capped if bound is None else min(capped, bound)

    return (sustained(linear, linear_dtype), sustained(bf16, rest_dtype), label)


# What a GeForce card draws while training at full clocks, as a fraction of its board power (TDP): Answer.AI's
# dual RTX 4090 workstation 'peaked at 400 watts per card' (450 W TDP) on its Llama-2-7B and Yi-34B
# FSDP/DDP LoRA and QLoRA runs, and at 375 W on the 70B ones (fsdp_qlora benchmarks_03_2024.md, the
# FSDPQLORA-0027..0040 rows): at half-rate FP32-accumulate tensor work the card is not at its power limit.
# A power cap (`power_capped_tflops`) slows the clock only below that draw: the same source's RTX 3090s
# capped at 280 W (350 W TDP) lose (280 / 311)^(1/3) = 3.5 % rather than 7 %. Taken from the 4090 for every
# GeForce card (the 3090 rig's draw is not published).
GEFORCE_TRAIN_DRAW_FRACTION = 400.0 / 450.0


def train_gemm_eff(gpu: GPU, mclass: str) -> float:
    """Fraction of the catalog's dense tensor rate that training GEMMs reach (`eff.TRAIN_GEMM_EFF`), by
    memory class; GeForce cards have their own figure (`eff.TRAIN_GEMM_EFF_GEFORCE`): their catalog rate is
    the half-rate FP16/BF16-with-FP32-accumulate one, which their GEMMs reach in full."""
    if gpu.hardware_class == "geforce" and mclass == "gddr":
        return eff.TRAIN_GEMM_EFF_GEFORCE
    return eff.TRAIN_GEMM_EFF[mclass]


@dataclass(frozen=True)
class TrainingSpeed:
    """The figures of `training_speed` (numbers for one plan, arrays for a sweep) and the parts of a step."""

    tokens_per_s: Num
    step_s: Num
    mfu: Num
    hfu: Num
    time_to_train_s: Num | None
    bound: Num
    model_flops: Num  # per token
    busy_s: Num
    tp_s: Num
    ep_s: Num
    p2p_s: Num  # pipeline stages' exposed point-to-point sends (`pipeline_p2p_s`), part of busy_s
    cp_s: Num  # context-parallel KV ring the attention does not hide (`context_parallel_ring_s`), part of busy_s
    qlora_s: Num
    bubble: Num
    bubble_s: Num
    micro: Num
    opt_s: float
    step_fixed_s: Num
    comm_s: Num
    fsdp_units_s: Num
    offload_s: float
    peak_bf16: float
    dtype_label: str


def training_speed(r: ResolvedPlan, batch: Num, seq: Num) -> TrainingSpeed:
    """Training step time, throughput and MFU for micro-batch `batch` and sequence length `seq` (numbers,
    or arrays for a sweep; `estimate_training` explains the plan's own), from the parts of a step:

    - GEMMs: linear FLOPs (6N full; LoRA/QLoRA skip the frozen weights' weight-gradient GEMMs: 4N;
      + 2N recomputed under full checkpointing; every expert's N where the framework runs all experts
      on all tokens, `dense_moe_experts`) at `train_gemm_eff` of the tensor peak (times
      `eff.TRAIN_GEMM_REL_EFF_HF_HOPPER` for HF-modelling frameworks on Hopper, `hf_stack_on_hopper`; FP8
      peak for FP8's linear GEMMs only), plus attention (12 L w s, w = `attention_width`: the query
      width num_heads x head_dim, not d_model; Narayanan et al. 2021, FlashAttention's count; sliding-window
      layers at their band, `attention_layer_keys`) at the bf16 peak and `attention_efficiency`; a power cap
      lowers both peaks (`power_capped_tflops`); unfused attention (`flash_attention` false) no faster than
      its GEMMs' score bytes stream, and its softmax / mask / dropout kernels over the b x a x s x s scores
      among the non-GEMM bytes (`score_traffic.unfused_score_traffic`, forward again where the attention is
      recomputed; fp32 training doubles the 16-bit counts);
    - non-GEMM kernels: norms, activations, RoPE, residuals, loss: `eff.TRAIN_ELEMENTWISE_PASSES`
      passes over (2h + i) 16-bit values per token per layer at the memory bandwidth; FP8 adds the
      casts of the weights; QLoRA adds the de-quantisation of every 4-bit weight in each
      forward, recompute and backward;
    - the optimizer step: `optimizer_step_bytes` per trainable parameter this GPU holds, at the
      memory bandwidth (fused AdamW reads weight, gradient, fp32 master and two moments, writes four;
      PyTorch's foreach AdamW and gradient clipping under HF-modelling frameworks make ~8 passes);
    - fixed costs per step and per micro-batch (`eff.TRAIN_STEP_OVERHEAD_S`, `TRAIN_MICROBATCH_OVERHEAD_S`:
      optimizer bookkeeping, data loading, kernel launches);
    - tensor-parallel all-reduces (Megatron: 2 in forward + 2 in backward per layer of b s h values,
      and 2 more when full checkpointing re-runs the forward, `tp_all_reduces_per_layer`; ring 2(t-1)/t;
      sequence parallelism moves the same bytes as reduce-scatter + all-gather; MoE layers keep only the
      attention half and add the expert-tensor-parallel all-gather / reduce-scatter of the k dispatched
      copies of each token, `tp_comm_per_token`),
      not overlapped unless `training.tp_comm_overlap` (Transformer Engine userbuffers under sequence
      parallelism: `TP_COMM_OVERLAP_HIDDEN_SHARE` of the transfer hidden, a fit); the pipeline
      bubble (p-1)/(m+p-1) (Narayanan et al. 2021, 1F1B; v-fold smaller with
      `training.virtual_pipeline_stages` = v, the interleaved schedule: `pipeline_bubble`);
      expert-parallel all-to-all (2 in forward, 2 in backward of each token's hidden state to its
      experts; Lepikhin et al. 2020; across nodes through the GPU's network adapter, `expert_all_to_all_s`;
      hidden behind computation under DualPipe, `A2A_OVERLAP_ENGINES`); the exposed data-parallel gradient
      sync and offload traffic;
    - MoE: the routed experts' GEMMs no faster than their weights stream from memory at few tokens per
      expert (`expert_weight_floor_s`), and Megatron-Core's host synchronisation in every MoE layer and
      micro-batch (`eff.MOE_LAYER_HOST_SYNC_S`).

    Surogate's C++/CUDA engine (`SUROGATE_ENGINES`) differs where its code does: cuDNN attention, no
    attention recompute under LoRA, fused element-wise kernels, no per-micro-batch launch cost."""
    from mlrig import quant

    arch, plan, gpu = r.arch, r.plan, r.gpu
    tr = plan.training
    assert tr is not None
    hw = plan.hardware
    # FP8 GEMMs (and their casts) only where the GPU has FP8 tensor cores; the bf16 masters either way
    fp8 = r.precision.name == "fp8" and bool(gpu.fp8_tflops_dense)
    peak_lin, peak_bf16, dtype_label = _train_peak(gpu, r.precision, hw.power_limit_w)
    pb = arch.params()
    n = float(pb.active - pb.vision)  # a text token never runs a vision tower (performance.read_fraction)
    # GEMM parameters per token: the active ones, or every expert where the framework runs them densely
    n_gemm = n + (float(pb.experts_routed - pb.experts_routed_active) if dense_moe_experts(arch, plan) else 0.0)
    mclass = r.memory_class
    tp, pp, cp, ep = hw.tensor_parallel, hw.pipeline_parallel, tr.context_parallel, tr.expert_parallel
    gpus = hw.total_gpus
    dp = max(1, gpus // (tp * pp * cp))
    ck = tr.checkpointing
    lora = tr.method in ("lora", "qlora")
    h, layers = arch.hidden_size, arch.num_layers
    inter = arch.intermediate_size if not arch.is_moe else (arch.moe_intermediate_size or arch.intermediate_size)
    # per token, whole model (split over the GPUs below)
    lin_passes = (4.0 if lora else 6.0) + (2.0 if ck == "full" else 0.0)
    layer_keys = attention_layer_keys(arch, seq, plan.workload.flash_attention)  # MFU's convention
    # the time is the FLOPs the kernels execute: causal flash skips the masked half (`attention_executed_keys`)
    attn_fwd = 4.0 * attention_width(arch) * attention_executed_keys(arch, seq, plan.workload.flash_attention)
    fused_engine = fused_cuda_engine(plan.workload.engine)
    # selective recomputes the attention core too; Surogate's LoRA recompute keeps it (`SUROGATE_ENGINES`)
    recompute_attention = ck != "none" and not (surogate_engine(plan.workload.engine) and lora)
    attn_flops = 3.0 * attn_fwd + (attn_fwd if recompute_attention else 0.0)
    fused_eff = fused_engine_gemm_eff(gpu, mclass) if fused_engine else None
    gemm_eff = fused_eff if fused_eff is not None else train_gemm_eff(gpu, mclass) * h / (h + eff.TRAIN_GEMM_WIDTH_D0)
    if hf_stack_on_hopper(gpu, plan.workload.engine, tr.method):
        gemm_eff = gemm_eff * eff.TRAIN_GEMM_REL_EFF_HF_HOPPER
    attn_eff = gemm_eff * attention_efficiency(gpu, plan.workload.engine, tr.attention_kernel)
    # FP8 attention (`fp8_attention_speedup`): cuDNN's FP8 kernels, priced as the BF16 ones' rate x their speedup
    attn_rate = attn_eff * peak_bf16 * fp8_attention_speedup(r) * 1e12  # FLOP/s the attention kernels execute
    lin_eff = gemm_eff * prime_rl_rest_rel_eff(plan.workload.engine, mclass)
    # a fused engine's FP8 recipe keeps the LM head in bf16 (`fused_fp8_bf16_head_params`)
    head_bf16 = fused_fp8_bf16_head_params(arch) if (fp8 and fused_engine) else 0.0
    bw = gpu.memory_bandwidth_gb_s * 1e9 * eff.TRAIN_BW_EFF
    t_attn: Num = attn_flops / attn_rate
    score_bytes: Num = 0.0
    if not plan.workload.flash_attention:
        # unfused attention streams the score tensor (`unfused_score_traffic`): its GEMMs no faster than their
        # score bytes, its softmax / mask / dropout kernels on top; forward again where the attention recomputes
        st = score_traffic.unfused_score_traffic(r, batch, seq)
        fwd_runs = 2.0 if recompute_attention else 1.0
        # per token, whole model; fp32 scores where the run trains in fp32 (the 16-bit counts doubled)
        elems = (score_traffic.unfused_score_elements_per_token(arch, seq)
                 * (2.0 if r.precision.name == "fp32" else 1.0))
        t_attn = vec.maximum(t_attn, elems * (fwd_runs * st.gemm_fwd + st.gemm_bwd) / bw)
        score_bytes = elems * (fwd_runs * st.other_fwd + st.other_bwd)
    t_gemm = (lin_passes * (n_gemm - head_bf16) / (lin_eff * peak_lin * 1e12)
              + lin_passes * head_bf16 / (lin_eff * peak_bf16 * 1e12)
              + t_attn)
    passes = ((eff.TRAIN_ELEMENTWISE_PASSES_FUSED if fused_engine else eff.TRAIN_ELEMENTWISE_PASSES)
              * (1.0 + (0.33 if ck == "full" else 0.0)))
    ew_bytes = passes * (2 * h + inter) * 2.0 * layers + score_bytes
    tokens_per_rank_step = seq * batch  # one micro-batch per data-parallel rank
    if fp8:
        # Transformer Engine casts each weight to FP8 for the forward, the backward's two GEMMs: read 2 B,
        # write 1 B, three times per micro-batch, spread over its tokens
        ew_bytes = ew_bytes + 3 * 3.0 * n / tokens_per_rank_step
        if fused_engine:  # and a fused engine's casts of each GEMM's activations and gradients
            ew_bytes = ew_bytes + fused_fp8_cast_bytes_per_token(arch)
    elif fp4_training(r.precision, gpu):
        # the same three casts to NVFP4: read 2 B, write 0.5 B + one 1-byte scale per 16 values
        ew_bytes = ew_bytes + 3 * (2.0 + 0.5 + 1.0 / 16) * n / tokens_per_rank_step
    if tr.method == "qlora" and kbit_stream_fp32(r, max(1, gpus // (tp * pp))):
        # PEFT's fp32 norms put the hidden states in fp32 (`fp32_stream_cast_bytes_per_token`)
        ew_bytes = 2.0 * ew_bytes + fp32_stream_cast_bytes_per_token(arch, ck)
    t_token = (t_gemm + ew_bytes / bw) / (tp * pp * cp)  # seconds per token per GPU (model split)
    # With pipeline stages and no global batch given, assume 4 micro-batches per stage per step
    # (Megatron-LM users size the global batch so that m >> p; Narayanan et al. 2021 sec. 2.2)
    gbt = tr.global_batch_tokens or tokens_per_rank_step * dp * (4 * pp if pp > 1 else 1)
    micro = vec.maximum(1, vec.round_int(gbt / (tokens_per_rank_step * dp)))  # micro-batches per step per rank
    compute_s = t_token * gbt / dp
    if arch.is_moe and not dense_moe_experts(arch, plan):
        # the routed experts' GEMMs cannot run faster than their weights stream from memory
        # (`expert_weight_floor_s`): at a few tokens per expert and micro-batch they are memory-bound
        t_experts = (lin_passes * float(pb.experts_routed_active) / (lin_eff * peak_lin * 1e12)
                     / (tp * pp * cp) * tokens_per_rank_step)
        floor = expert_weight_floor_s(r, tokens_per_rank_step, lin_passes, bw)
        compute_s = compute_s + micro * vec.maximum(0.0, floor - t_experts)
    # optimizer step over the trainable parameters this GPU holds (ZeRO shards them over dp x cp)
    trainable = pb.total if tr.method == "full" else _adapter_params(arch, tr.lora_rank, tr.lora_targets)
    shard = tp * pp * (dp * cp if tr.zero_stage >= 1 else 1)
    opt_s = optimizer_step_bytes(tr.optimizer, r.precision, plan.workload.engine) * trainable / shard / bw
    qlora_s: Num = 0.0
    if tr.method == "qlora":
        # bitsandbytes de-quantises each NF4 weight to bf16 before its GEMM (`QLORA_DEQUANT_BYTES_PER_PARAM`),
        # in forward, backward (and the recompute) of every micro-batch (every routed expert's weight too:
        # a micro-batch of thousands of tokens reaches all experts)
        qlora_s = (micro * (3 if ck == "full" else 2) * QLORA_DEQUANT_BYTES_PER_PARAM * pb.total / (tp * pp)
                   / bw / eff.QLORA_DEQUANT_EFF)
    tp_s: Num = 0.0
    if tp > 1:
        tp_bytes, tp_ops = tp_comm_per_token(arch, tp, plan.expert_tensor_parallel_size, ck)
        tp_bw, tp_lat_us = _tp_link(r)
        tp_transfer_s = tp_bytes / pp * gbt / dp / cp / (tp_bw * 1e9)
        if tp_comm_hidden(plan):
            tp_transfer_s = tp_transfer_s * tp_comm_overlap_exposed_share()
        tp_s = tp_transfer_s + tp_ops / pp * micro * tp_lat_us * 1e-6
    ep_s: Num = 0.0
    if ep > 1 and arch.is_moe:
        ep_s = expert_all_to_all_s(r, gbt / dp / cp / tp, micro)
        if _engine_overlaps_all_to_all(plan.workload.engine):  # only what the computation cannot cover
            ep_s = vec.maximum(0.0, ep_s - compute_s)
    bubble = pipeline_bubble(pp, micro, tr.virtual_pipeline_stages) if pp > 1 else 0.0
    # Megatron-Core's MoE layers wait on the host once per micro-batch (`eff.MOE_LAYER_HOST_SYNC_S`)
    moe_sync_s: Num = (eff.MOE_LAYER_HOST_SYNC_S * arch.num_moe_layers / pp * micro
                       if arch.is_moe and _engine_is_megatron_core(plan.workload.engine) else 0.0)
    # the stage boundaries' activation sends and gradient receives (`pipeline_p2p_s`); inside `busy`, so the
    # bubble's fill and drain carry them too
    # Transformer Engine's context-parallel K/V ring, what each step's attention does not hide
    # (`context_parallel_ring_s`); inside `busy` as the pipeline sends are
    cp_s = context_parallel_ring_s(r, tokens_per_rank_step, micro, attn_fwd / attn_rate,
                                   recompute_attention)
    # DeepSpeed-Ulysses-style sequence parallelism: its q / k / v / output all-to-alls (`ulysses_all_to_all_s`)
    cp_s = cp_s + ulysses_all_to_all_s(r, tokens_per_rank_step, micro)
    p2p_s = pipeline_p2p_s(r, tokens_per_rank_step, micro,
                           compute_s + tp_s + ep_s + qlora_s + moe_sync_s + cp_s)
    busy = compute_s + tp_s + ep_s + qlora_s + moe_sync_s + cp_s + p2p_s
    bubble_s = vec.where(bubble > 0, busy * bubble / (1.0 - bubble), 0.0)
    # a micro-batch replayed from CUDA graphs (`graphed_microbatches`: Surogate's whole-step graph, Megatron-Core's /
    # NeMo's `enable_cuda_graph`) launches no kernel from the host; with pipeline stages each rank launches only its
    # stage's kernels, m times along the schedule's critical path
    step_fixed = eff.TRAIN_STEP_OVERHEAD_S + (0.0 if graphed_microbatches(plan) else pipeline_microbatch_overhead_s(
        eff.TRAIN_MICROBATCH_OVERHEAD_S, pp, micro, tr.virtual_pipeline_stages))
    # the weights as the data-parallel ranks hold and gather them: NF4 under QLoRA, bf16 masters under FP8
    stored = quant.NF4 if tr.method == "qlora" else (quant.BF16 if r.precision.name == "fp8" else None)
    stored_bytes = r.weight_bytes if stored is None else float(quant.weight_bytes(arch, stored))
    # Stages 0-1 keep whole gradients and synchronise them once per step, during the LAST micro-batch's
    # backward (`accumulation_hide_s`); ZeRO-2/3 reduce every micro-batch and can hide behind all of them.
    hide = accumulation_hide_s(busy, micro, pp) if tr.zero_stage <= 1 else busy
    comm_s = data_parallel_comm_s(2.0 * trainable / (tp * pp), dp * cp, *data_parallel_link(r, dp * cp),
                                  zero_stage=tr.zero_stage, overlap=dp_overlap(r),
                                  param_bytes=stored_bytes / (tp * pp), hide_s=hide,
                                  broadcast_params=_engine_broadcasts_params(plan.workload.engine))
    offload_s = _offload_s(plan, gpu, trainable / (tp * pp), stored_bytes / (tp * pp),
                           dp * cp if tr.zero_stage >= 1 else 1)
    units_s = fsdp_adapter_units_s(r, micro)
    step_s = busy + bubble_s + opt_s + step_fixed + comm_s + units_s + offload_s
    total = gbt / step_s
    model, hardware = train_flops_per_token(n, layers, attention_width(arch), seq, ck == "full", layer_keys,
                                            frozen_base=lora)
    peak_mfu = peak_bf16  # MFU against the bf16 peak (FP8 runs state theirs that way: MLPerf, Llama reports)
    mfu = total * model / (gpus * peak_mfu * 1e12)
    hfu = total * hardware / (gpus * peak_mfu * 1e12)
    ttt = tr.tokens_to_train / total if tr.tokens_to_train else None
    compute_part = compute_s + qlora_s + opt_s + step_fixed + bubble_s
    comm_part = comm_s + tp_s + ep_s + units_s + p2p_s + cp_s
    # the first of the largest part, as max() over (compute, interconnect, offload) picks it
    bound = vec.where(vec.both(compute_part >= comm_part, compute_part >= offload_s), "compute",
                      vec.where(comm_part >= offload_s, "interconnect", "offload"))
    return TrainingSpeed(tokens_per_s=total, step_s=step_s, mfu=mfu, hfu=hfu, time_to_train_s=ttt, bound=bound,
                         model_flops=model, busy_s=busy, tp_s=tp_s, ep_s=ep_s, p2p_s=p2p_s, cp_s=cp_s,
                         qlora_s=qlora_s,
                         bubble=bubble,
                         bubble_s=bubble_s, micro=micro, opt_s=opt_s, step_fixed_s=step_fixed, comm_s=comm_s,
                         fsdp_units_s=units_s, offload_s=offload_s, peak_bf16=peak_mfu, dtype_label=dtype_label)


# bitsandbytes' training path (`MatMul4Bit.forward` / `.backward` in bitsandbytes/autograd/_functions.py:
# `F.dequantize_4bit(B, quant_state)` then `torch.nn.functional.linear` / `torch.matmul` with the bf16 copy)
# de-quantises each weight into a new bf16 tensor before each GEMM that uses it: it reads the packed NF4
# values (0.5 B per parameter) and the block scales (an fp32 absmax per 64 values, 1/16 B; double
# quantisation makes it ~1/64 B) and writes 2 B. The GEMM then reads the 2 B copy, as a LoRA run's GEMM reads
# its bf16 weight: that read is part of the GEMM's own time (`train_gemm_eff`), so it is not counted again
# here (counting it, 4.5 B, priced QLoRA's extra traffic 1.8x too high).
QLORA_DEQUANT_BYTES_PER_PARAM = 0.5 + 1.0 / 16 + 2.0


def kbit_stream_fp32(r: ResolvedPlan, dp: int) -> bool:
    """Whether this QLoRA run's hidden states are fp32 because its framework upcast the norms
    (`memory.kbit_upcast`: PEFT's prepare_model_for_kbit_training, kept by TRL < 0.26 on one GPU); `dp`: the
    ZeRO / FSDP group, GPUs / (tensor x pipeline), as `memory.training_memory` reads it."""
    from mlrig.estimators.memory import kbit_upcast

    tr, w = r.plan.training, r.plan.workload
    assert tr is not None
    return kbit_upcast(w.engine, sharded=tr.zero_stage >= 3 and dp > 1, version=w.engine_version).stream_fp32


def fp32_stream_cast_bytes_per_token(arch: ModelArch, checkpointing: str) -> float:
    """DRAM bytes per token, whole model, that a QLoRA run with fp32 norms adds in dtype casts around its
    4-bit projections (the element-wise kernels' own traffic doubles besides: `training_speed`).

    With fp32 norm weights the norms return fp32 (transformers 4.48 LlamaRMSNorm / MistralRMSNorm.forward:
    `self.weight * hidden_states.to(input_dtype)`), and bitsandbytes' Linear4bit casts its input to the compute
    dtype and its output back to the input's dtype (bitsandbytes 0.43.3 nn/modules.py `Linear4bit.forward`:
    `x = x.to(self.compute_dtype)` ... `out = out.to(inp_dtype)`), so every projection reads 4 B and writes
    2 B of each input value, and reads 2 B and writes 4 B of each output value: 6 B a value each way. Per layer
    the inputs are q, k, v (h each), o (the query width), gate and up (h each) and down (the MLP width); the
    outputs q (query width), k and v (the KV width), o (h), gate and up (the MLP width), down (h); an MoE layer's
    MLP counts once per expert a token visits (its k routed plus any shared experts, transformers'
    MixtralSparseMoeBlock runs each chosen expert's w1/w3/w2 on the token). Forward, the recompute under full
    checkpointing, and backward (the autograd of each `.to` casts the gradient back): 3 passes, else 2.
    Checked on the fms-acceleration single-A100 rows, where TRL 0.13's SFTTrainer (PEFT's prepare, norms fp32)
    and the plugin's own prepare run the same QLoRA (FMSACC-0030/0033 vs -0044/0047 Mistral-7B, -0036/0039 vs
    -0050/0053 Mixtral): 1.09 / 2.0 s more a step at micro-batch 4 / 8 on Mistral, of which this and the doubled
    element-wise traffic give ~70 %; ~45 % on Mixtral, whose routing (gathers, index_add_) also runs in fp32."""
    h, d = arch.hidden_size, arch.dim_head
    q_out, kv_out = arch.num_heads * d, arch.kv_heads * d
    gated = arch.mlp == "gated"

    def mlp_values(inter: float) -> float:
        ins = (2 * h if gated else h) + inter
        outs = (2 * inter if gated else inter) + h
        return ins + outs

    attn = (3 * h + q_out) + (q_out + 2 * kv_out + h)
    dense = arch.num_layers - arch.num_moe_layers
    total = arch.num_layers * attn + dense * mlp_values(arch.intermediate_size)
    if arch.num_moe_layers:
        inter = arch.moe_intermediate_size or arch.intermediate_size
        visits = arch.experts_per_token + arch.num_shared_experts
        total += arch.num_moe_layers * visits * mlp_values(inter)
    passes = 3 if checkpointing == "full" else 2
    return passes * 6.0 * total


# Frameworks that shard a PEFT model with PyTorch FSDP1 through the HF Trainer and accelerate, where the Trainer
# replaces the wrap policy: transformers 4.48.1 trainer.py `_fsdp_qlora_plugin_updates` sets accelerate's
# `fsdp_plugin.auto_wrap_policy = fsdp_auto_wrap_policy(model)` for a LoraConfig, and PEFT's
# `fsdp_auto_wrap_policy` (peft/utils/other.py, v0.13.2) ORs the decoder-layer policy with a lambda policy that
# wraps every leaf module whose weight requires grad: each lora_A and lora_B Linear becomes an FSDP unit of its
# own (accelerate v1.0.1 launches with `--fsdp_use_orig_params true` unless the config says otherwise).
# fms-acceleration runs the same Trainer (fms-hf-tuning). A plan at ZeRO stage 3 under these engines is read as
# that FSDP set-up; DeepSpeed ZeRO-3 gathers per module too, but is not what the factor was fitted on.
PEFT_FSDP_UNIT_ENGINES = ("hf", "transformers", "peft", "hf-peft", "hf-trainer", "trl", "fms-acceleration",
                          "universal-llm-trainer")


def fsdp_adapter_units_s(r: ResolvedPlan, micro: Num) -> Num:
    """Exposed host time per step of the FSDP units that PEFT's wrap policy makes of the LoRA Linears
    (`PEFT_FSDP_UNIT_ENGINES`): two per adapted matrix (`memory.lora_adapted_matrices`), each unsharded in
    forward, again in the recompute under full checkpointing (HF's checkpoint is reentrant by default,
    transformers 4.48.1 modeling_utils.py `gradient_checkpointing_enable`; it re-runs the FSDP-wrapped layer's
    forward outside FSDP's pre-backward, so torch v2.4.1's `_pre_forward` unshards again) and in backward, where
    its gradient is reduce-scattered; each
    such pass costs `eff.FSDP_ADAPTER_UNIT_PASS_S` of FSDP1 hook work (torch/distributed/fsdp/
    _runtime_utils.py at v2.4.1: `_pre_forward` / `_post_forward` / `_pre_backward_hook` /
    `_post_backward_hook` run per unit in Python, and `_unshard`'s rate limiter synchronises the CPU with
    the GPU's free events when `limit_all_gathers` is on). Their bytes are negligible: a rank-16 adapter of a
    4,096-wide matrix is 128 KiB. Zero for one GPU, full fine-tuning, or another framework."""
    from mlrig.estimators.memory import _engine_is, lora_adapted_matrices

    plan = r.plan
    tr, hw = plan.training, plan.hardware
    assert tr is not None
    dp = max(1, hw.total_gpus // (hw.tensor_parallel * hw.pipeline_parallel))
    if (tr.method not in ("lora", "qlora") or tr.zero_stage < 3 or dp <= 1
            or not _engine_is(plan.workload.engine, PEFT_FSDP_UNIT_ENGINES)):
        return 0.0
    units = 2 * lora_adapted_matrices(r.arch, tr.lora_targets) / hw.pipeline_parallel
    passes = 3 if tr.checkpointing == "full" else 2
    return units * passes * micro * eff.FSDP_ADAPTER_UNIT_PASS_S


def tp_comm_hidden(plan: Plan) -> bool:
    """Whether the plan overlaps its tensor-parallel collectives with the GEMMs: `training.tp_comm_overlap`
    (Megatron-Core / NeMo `tp_comm_overlap`), which Megatron-Core accepts only with sequence parallelism and
    TP above 1 (NeMo / Megatron-Bridge's comm-overlap setup turns it off otherwise)."""
    tr = plan.training
    return (tr is not None and tr.tp_comm_overlap and tr.sequence_parallel
            and plan.hardware.tensor_parallel > 1)


# Share of the tensor-parallel transfer time Transformer Engine's userbuffers communication-GEMM overlap
# (Megatron-Core / NeMo `tp_comm_overlap`) hides. Mechanism (NeMo Framework user guide 24.12, "Communication
# Overlap", tensor-parallel section; the MLPerf configs' conf/tp_overlap/*.yaml): sequence parallelism's
# all-gathers run as a ring exchange under the GEMM's chunks, the reduce-scatters pipelined in chunks behind it
# or in bulk beside an independent GEMM; the copy kernels take SMs from the GEMMs and the chunked GEMMs run
# below a whole one's rate, so less than all of the transfer disappears. Fitted on one natural experiment, the
# MLPerf Training v4.0 Llama-2-70B LoRA runs of NVIDIA's recipe on 8 H100 SXM, TP4, same plan: with TP_COMM_OVERLAP
# (MLPERF-FT40-0001 NVIDIA, -0009 HPE, -0011 Oracle, -0012 Red Hat, -0014 Supermicro; median 2,129.7 tokens/s/GPU)
# against without (MLPERF-FT40-0007 Dell, -0008 Fujitsu, -0013 Supermicro; median 2,009.4): 1.060x, which is 0.40
# of the 0.573 s per step of TP transfer the model gives that plan. All fit rows.
TP_COMM_OVERLAP_HIDDEN_SHARE = 0.40


def tp_comm_overlap_exposed_share() -> float:
    """Share of the tensor-parallel transfer time still on the step under `training.tp_comm_overlap`:
    1 - `TP_COMM_OVERLAP_HIDDEN_SHARE`. The per-collective latency stays whole (the chunks are still sent)."""
    return 1.0 - TP_COMM_OVERLAP_HIDDEN_SHARE


def tp_all_reduces_per_layer(checkpointing: str) -> int:
    """Tensor-parallel all-reduces of a layer's b x s x h activations per micro-batch (Megatron-LM's
    column/row-parallel split; Shoeybi et al. 2019, sec. 3): one after the attention block and one after
    the MLP in forward, their conjugates in backward - 4. Full activation checkpointing re-runs each
    layer's forward inside backward (Megatron-LM's `CheckpointFunction.backward` calls
    `ctx.run_function(*detached_inputs)`, megatron/core/tensor_parallel/random.py), row-parallel
    all-reduces included: 6. Selective checkpointing recomputes only the attention core, which has none."""
    return 6 if checkpointing == "full" else 4


def tp_comm_per_token(arch: ModelArch, tp: int, etp: int, checkpointing: str) -> tuple[float, float]:
    """(bytes, collectives) of tensor-parallel communication per GPU for one token of a data-parallel
    replica's batch, summed over all layers (divide by the pipeline stages), as the ring bus traffic NCCL
    moves: an all-reduce of v bytes moves 2 (t-1)/t v, an all-gather or reduce-scatter (t-1)/t v.

    Dense layers (Shoeybi et al. 2019; with sequence parallelism, Korthikanti et al.'s all-gather +
    reduce-scatter move the same bytes): `tp_all_reduces_per_layer` all-reduces of the token's h 16-bit
    values, half after the attention block, half after the MLP.
    MoE layers under Megatron-Core's alltoall token dispatcher (megatron/core/transformer/moe/
    token_dispatcher.py, `MoEAlltoAllTokenDispatcher`; TP with MoE requires --sequence-parallel): the
    attention half is the same, but the MoE block has no dense tensor-parallel collective: the router works on
    the rank's own sequence shard, the all-to-all sends each token's hidden state to its k experts'
    ranks (`expert_all_to_all_s`), and only when the experts are themselves split (`etp` > 1, expert tensor
    parallelism) does the dispatcher all-gather the received tokens over the expert-tensor group
    (`gather_from_sequence_parallel_region(..., group=tp_group)`) and reduce-scatter the experts' outputs
    back: each moves (etp - 1) x k tokens' hidden states per GPU for every token the GPU holds, i.e.
    (etp - 1) k h 2 / tp bytes per replica token, once each way per `all_to_all_passes`. With
    --expert-tensor-parallel-size 1 ("MoE parallel folding", Megatron-Core parallel_state) the experts
    are whole on each GPU and there is none. Shared experts run as a dense TP MLP (their half stays)."""
    h, layers = arch.hidden_size, arch.num_layers
    n_ar = tp_all_reduces_per_layer(checkpointing)
    ar_bytes = 2.0 * (tp - 1) / tp * h * 2.0  # one all-reduce of one token's hidden state
    moe = arch.num_moe_layers if arch.is_moe else 0
    dense_mlp = layers - moe + (moe if arch.num_shared_experts > 0 else 0)
    ops = n_ar / 2 * (layers + dense_mlp)
    nbytes = ops * ar_bytes
    if moe and etp > 1:
        passes = all_to_all_passes(checkpointing)
        nbytes += passes * moe * (etp - 1) * arch.experts_per_token * h * 2.0 / tp
        ops += passes * moe
    return nbytes, ops


# Training frameworks that run a model through Hugging Face transformers' own modelling code.
# ms-swift's `swift sft` is the transformers Trainer over the same modelling code (memory.MS_SWIFT_ENGINES); so is
# LLaMA-Factory (src/llamafactory/train/pt/trainer.py, sft/trainer.py: CustomTrainer subclasses transformers.Trainer);
# universal-llm-trainer is its own PyTorch loop over transformers' modelling code and PEFT (memory.BF16_LOSS_ENGINES).
HF_MODELLING_ENGINES = ("hf", "transformers", "peft", "hf-peft", "hf-trainer", "trl", "axolotl", "fsdp_qlora",
                        "ms-swift", "llama-factory", "llamafactory", "universal-llm-trainer")
# transformers' Llama 4 MoE block (Llama4TextMoe.forward, transformers 4.51 onwards, unchanged in
# huggingface/transformers@63210d0 src/transformers/models/llama4/modeling_llama4.py) routes by
# multiplying the input by the router score, zero for the experts not chosen, and runs EVERY expert
# on EVERY token: `routed_in = hidden_states.repeat(num_experts, 1)`, then one batched GEMM over
# all experts (axolotl's linearised experts for QLoRA, src/axolotl/monkeypatch/models/llama4/
# modeling.py, loop over all 16 experts with all tokens the same way). The arithmetic is that of a
# dense model of the total parameter count, not of the 17B active ones.
HF_DENSE_MOE_MODEL_TYPES = ("llama4", "llama4_text")


# Surogate (invergent-ai/surogate; read at commit a9b33fdc, 2026-02-13, the commit of its benchmark page):
# its own C++/CUDA training engine, not PyTorch modules. What the training-speed path prices differently:
# - the whole optimizer step - every micro-batch's forward and backward and the AdamW-8bit update - is
#   captured once as one CUDA graph and replayed (csrc/src/binding/py_train.cpp, `train_step_graphed`:
#   cudaStreamBeginCapture over the micro-step loop and `update_with_graph_params`, then cudaGraphLaunch;
#   `use_cuda_graphs` defaults to True in surogate/core/config/sft_config.py): no host launch cost per
#   micro-batch (`eff.TRAIN_MICROBATCH_OVERHEAD_S` dropped); the per-step cost stays (data hand-off, the
#   graph launch, the synchronise and loss copy after it);
# - attention is cuDNN's flash attention (`recompute_attrs={"attn_impl": "cudnn"}` in
#   surogate/dsl/blocks/qwen3.py; csrc/src/kernels/cudnn_att.cpp): `CUDNN_ATTENTION_ENGINES`;
# - its recompute (`recompute: true`, the default) re-runs every linear GEMM of a block in backward
#   (qkv, out, mlp_up, mlp_down: `recompute_policy="always"`), but under LoRA not the attention core
#   (`att`/`lse` have `recompute_policy="fft_only"`; RecomputePlan::execute_layer skips `flash_attention`
#   in LoRA mode, csrc/src/runtime/dsl/recompute_plan.cpp): 2N more GEMM FLOPs, no attention recompute;
# - its non-GEMM kernels are fused (`eff.TRAIN_ELEMENTWISE_PASSES_FUSED`).
SUROGATE_ENGINES = ("surogate",)


def surogate_engine(engine: str | None) -> bool:
    """Whether the plan's training engine is Surogate (`SUROGATE_ENGINES`)."""
    return any((engine or "").lower().startswith(e) for e in SUROGATE_ENGINES)


# llm.q (IST-DASLab/llmq, read at b77d9691; README "Build instructions" and src/): a C++/CUDA trainer in llm.c's lineage
# that prices like Surogate where the step's arithmetic is concerned: the whole step replayed as CUDA graphs
# (`--use-cuda-graphs`, LLamaOptions::UseCudaGraphs, on in every published benchmark command), cuDNN flash attention
# (src/kernels/cudnn_att.cpp), fused element-wise kernels (fused_residual_rmsnorm_forward, swiglu.cu, rope.cu) and a
# fused LM head + loss (fused_classifier.cu). Surogate's LoRA-specific recompute rule (`SUROGATE_ENGINES`) does not
# carry over: llm.q trains full models.
FUSED_CUDA_ENGINES = (*SUROGATE_ENGINES, "llmq", "llm.q")


def fused_cuda_engine(engine: str | None) -> bool:
    """Whether the plan's training engine is a fused C++/CUDA trainer (`FUSED_CUDA_ENGINES`): no host launch cost per
    micro-batch, fused element-wise kernels (`eff.TRAIN_ELEMENTWISE_PASSES_FUSED`), cuDNN attention, and on GDDR cards
    the GEMM rate of `fused_engine_gemm_eff`."""
    return any((engine or "").lower().startswith(e) for e in FUSED_CUDA_ENGINES)


def graphed_microbatches(plan: Plan) -> bool:
    """Whether each micro-batch's forward and backward replay from CUDA graphs, so that the host launches none of
    their kernels (`eff.TRAIN_MICROBATCH_OVERHEAD_S` is not paid): the plan's `training.enable_cuda_graph`, else the
    engine's default, on for the fused C++/CUDA trainers (`FUSED_CUDA_ENGINES`, whose whole step is one graph) and
    off for the PyTorch frameworks (NeMo / Megatron-Core `enable_cuda_graph` / `cuda_graph_impl` default to off;
    NVIDIA's MLPerf '_cg' configs turn it on). The per-step cost (`eff.TRAIN_STEP_OVERHEAD_S`) is paid either way,
    as for Surogate's whole-step graph: the data hand-off, the optimizer's host-side work and the synchronisation
    after the step stay outside the forward / backward graphs (Megatron-Core's `enable_cuda_graph` captures each
    TransformerLayer, not the optimizer). The MLPerf fit rows with graphs agree: without the per-step cost they come
    out 11-39 % too fast (MLPERF-FT50-0003, -0004, MLPERF-PT51-0004, -0005; SOURCES-training.md, branch s37b)."""
    tr = plan.training
    if tr is not None and tr.enable_cuda_graph is not None:
        return tr.enable_cuda_graph
    return fused_cuda_engine(plan.workload.engine)


def fp8_attention_applies(gpu: GPU, engine: str | None, kernel: str | None) -> bool:
    """Whether `training.fp8_dot_product_attention` runs FP8 attention kernels: cuDNN's FP8 fused attention (the
    kernel Transformer Engine's FP8 DotProductAttention calls; `attention_kernel` "cudnn") exists for NVIDIA Hopper
    and the datacentre Blackwell chips only (cuDNN frontend docs, "Attention", SDPA support matrix: fp8 forward and
    backward on Hopper and Blackwell B200/B300, fp16/bf16 only on Ampere/Ada), and needs FP8 tensor cores."""
    return (hopper_or_newer_nvidia(gpu) and bool(gpu.fp8_tflops_dense)
            and attention_kernel(gpu, engine, kernel) == "cudnn")


def fp8_attention_speedup(r: ResolvedPlan) -> float:
    """How much faster the attention kernels run with `training.fp8_dot_product_attention` than in BF16: the FP8
    peak at the BF16 attention's efficiency x `eff.TRAIN_FP8_ATTN_SPEEDUP` / (FP8 peak / BF16 peak), i.e.
    `eff.TRAIN_FP8_ATTN_SPEEDUP` (NVIDIA's cuDNN 9 blog's end-to-end Llama-2-70B LoRA figure), never above the ratio
    of the two peaks; 1 where FP8 attention does not apply (`fp8_attention_applies`) or is not asked for."""
    tr = r.plan.training
    if tr is None or not tr.fp8_dot_product_attention:
        return 1.0
    gpu = r.gpu
    if not fp8_attention_applies(gpu, r.plan.workload.engine, tr.attention_kernel):
        return 1.0
    bf16 = gpu.tensor_tflops("bf16") or 0.0
    fp8 = float(gpu.fp8_tflops_dense or 0.0)
    return min(eff.TRAIN_FP8_ATTN_SPEEDUP, fp8 / bf16) if bf16 > 0 else 1.0


def fused_fp8_cast_bytes_per_token(arch: ModelArch) -> float:
    """DRAM bytes per token, whole model, of the casts and transposes around the FP8 GEMMs of a fused trainer's
    FP8 recipe, read from llm.q (src/models/llama_model.cpp at b77d9691, `forward_qmm` / `backward_qmm`): for a
    linear layer of input width C and output width OC, forward quantises its bf16 input (read 2C, write C; the
    abs-max comes fused from the producing kernel); backward quantises the output gradient (3 OC), transposes the
    FP8 input for the weight-gradient GEMM (read C, write C) and the FP8 gradient (2 OC): 5 (C + OC) bytes per
    token. Per layer the linears are qkv (C = h, OC = q + 2 kv), the attention output (q, h), gate/up (h, 2 i) and
    down (i, h); an MoE layer's MLP counts once per expert a token visits. The weights' own casts and transposes
    (per micro-batch, not per token) are the 3 x 3 B per parameter counted with every FP8 recipe."""
    h, d = arch.hidden_size, arch.dim_head
    q, kv = arch.num_heads * d, arch.kv_heads * d
    gated = arch.mlp == "gated"

    def mlp(inter: float) -> float:
        return (h + inter) + ((2 * inter if gated else inter) + h)

    attn = (h + q) + ((q + 2 * kv) + h)
    dense = arch.num_layers - arch.num_moe_layers
    per_token = arch.num_layers * attn + dense * mlp(arch.intermediate_size)
    if arch.num_moe_layers:
        visits = arch.experts_per_token + arch.num_shared_experts
        per_token += arch.num_moe_layers * visits * mlp(arch.moe_intermediate_size or arch.intermediate_size)
    return 5.0 * per_token


def fused_fp8_bf16_head_params(arch: ModelArch) -> float:
    """Parameters of the LM head, whose GEMMs a fused trainer's FP8 recipe runs in bf16: llm.q multiplies by
    `Parameters->get_head()` with bf16 operands in forward and backward (src/models/llama_model.cpp at b77d9691; only
    the blocks' linears go through `forward_qmm` / `backward_qmm`). vocab x hidden; the input embedding is a lookup,
    not a GEMM, so a tied or untied model has one such matrix."""
    return float(arch.vocab_size * arch.hidden_size)


def fused_engine_gemm_eff(gpu: GPU, mclass: str) -> float | None:
    """Fraction of the catalog's dense tensor rate that a fused C++/CUDA trainer's GEMMs reach on a GDDR card
    (`eff.TRAIN_GEMM_EFF_FUSED`: GeForce against its half-rate FP32-accumulate figure, the other GDDR parts against
    their full rate), with no narrow-model reduction; None elsewhere (HBM cards keep `train_gemm_eff`). Why: llm.q's
    own speed-of-light figure (matmul FLOPs / (time x peak), src/utilities/sol.cpp) reads 75-81 % on one RTX 4090 for
    Qwen2.5-0.5B and -1.5B (hidden 896 and 1,536) and 85 % on an RTX 5060 Ti for the 0.5B, with the element-wise
    kernels and the optimizer inside that time, so the GEMMs themselves run at ~0.9-1.0 of the rated figure at
    hidden 896; the d / (d + `eff.TRAIN_GEMM_WIDTH_D0`) reduction (0.80 there) and the eager-PyTorch figures of
    `train_gemm_eff` were fitted on PyTorch stacks, whose per-kernel gaps such an engine does not have."""
    if mclass != "gddr":
        return None
    return eff.TRAIN_GEMM_EFF_FUSED["geforce" if gpu.hardware_class == "geforce" else "gddr"]


def hf_stack_on_hopper(gpu: GPU, engine: str | None, method: str | None = "qlora") -> bool:
    """Whether a plan runs QLoRA under an HF-modelling framework (`HF_MODELLING_ENGINES`: eager PyTorch
    modules, bitsandbytes 4-bit linears, FlashAttention-2, no Transformer Engine) on an NVIDIA Hopper or
    newer datacentre GPU, whose GEMMs reach `eff.TRAIN_GEMM_REL_EFF_HF_HOPPER` of what the same code reaches
    on earlier GPUs. Datacentre parts only: the rows behind the factor are H100s, and the GeForce /
    workstation Blackwell chips (GB20x, sm_120) are a different design (no Hopper-style warp-group MMA),
    closer to Ada. QLoRA only (`method`): both rows behind the factor are bitsandbytes-NF4 QLoRA runs
    (FSDPQLORA-0050, AXOLOTL-0001), while bf16 full fine-tuning through the same HF Trainer on H100 / H200
    (Scicom small-ablation, SCICOM-0002/-0004/-0005: transformers 4.57, FlashAttention-2/3) measured
    1.3-2.3x faster than the factor gives, i.e. at the HBM class's own GEMM rate."""
    arch = (gpu.architecture or "").lower()
    e = (engine or "").lower()
    return (method == "qlora" and gpu.vendor == "NVIDIA" and gpu.hardware_class == "datacenter"
            and any(k in arch for k in ("hopper", "blackwell", "rubin"))
            and any(e.startswith(x) for x in HF_MODELLING_ENGINES))


PRIME_RL_ENGINES = ("prime-rl", "prime_rl")


def prime_rl_rest_rel_eff(engine: str | None, mclass: str) -> float:
    """The fraction of the memory class's GEMM rate (`train_gemm_eff`) that prime-rl's trainer
    (`PRIME_RL_ENGINES`) reaches on the linear layers on HBM GPUs, `eff.TRAIN_REST_REL_EFF_PRIME_RL_HBM`
    (its derivation there: the 16k / 64k pairs of prime-rl's own benchmark runs separate the attention
    time from the rest); 1 for every other engine and memory class."""
    e = (engine or "").lower()
    if mclass == "hbm" and any(e.startswith(x) for x in PRIME_RL_ENGINES):
        return eff.TRAIN_REST_REL_EFF_PRIME_RL_HBM
    return 1.0


def dense_moe_experts(arch: ModelArch, plan: Plan) -> bool:
    """Whether this plan's framework computes all routed experts for every token
    (`HF_DENSE_MOE_MODEL_TYPES` under `HF_MODELLING_ENGINES`)."""
    engine = (plan.workload.engine or "").lower()
    return (arch.is_moe and arch.model_type in HF_DENSE_MOE_MODEL_TYPES
            and any(engine.startswith(e) for e in HF_MODELLING_ENGINES))


def estimate_training(r: ResolvedPlan, f: TrainingSpeed | None = None) -> Performance:
    """`training_speed` of the plan's own micro-batch and sequence, with the explanation of its step. `f`:
    those figures already worked out for this plan (an element of an array pass, `mlrig.grid`)."""
    w, tr, gpus = r.workload, r.training, r.hardware.total_gpus
    assert tr is not None
    if f is None:
        f = training_speed(r, w.batch_size, tr.seq_len or w.context)
    # a frozen base (LoRA, QLoRA) needs no weight gradients (`train_flops_per_token`)
    linear_flops = "4N, the frozen base has no weight gradients," if tr.method in ("lora", "qlora") else "6N"
    expl = (
        f"{f.model_flops / 1e9:.1f} GFLOP per token ({linear_flops} + attention, every (query, key) pair counted as "
        f"MFU conventionally does; causal flash attention executes half of them; kernel "
        f"{attention_kernel(r.gpu, w.engine, tr.attention_kernel)}"
        f"{', FP8' if fp8_attention_speedup(r) > 1.0 else ''}), {f.dtype_label} at {f.mfu:.0%} "
        f"MFU of {f.peak_bf16:g} TFLOPS x {gpus} GPU(s): ~{f.tokens_per_s:,.0f} tokens/s; per step "
        f"{f.busy_s - f.tp_s - f.ep_s - f.p2p_s - f.cp_s:.2f} s compute (GEMMs + "
        f"bandwidth-bound kernels{', de-quantisation' if f.qlora_s else ''}"
        + (", fp32 hidden states from PEFT's fp32 norms" if tr.method == "qlora" and kbit_stream_fp32(
            r, max(1, gpus // (r.hardware.tensor_parallel * r.hardware.pipeline_parallel))) else "")
        + ")"
        + (f" + {f.tp_s:.2f} s tensor-parallel all-reduce" if f.tp_s > 0 else "")
        + (" (overlapped with the GEMMs: tp_comm_overlap)" if f.tp_s > 0 and tp_comm_hidden(r.plan) else "")
        + (" (tp_comm_overlap ignored: it needs sequence_parallel and tensor_parallel > 1)"
           if tr.tp_comm_overlap and not tp_comm_hidden(r.plan) else "")
        + (f" + {f.ep_s:.2f} s expert all-to-all" if f.ep_s > 0 else "")
        + (f" + {f.p2p_s:.2f} s pipeline sends between stages" if f.p2p_s > 0 else "")
        + ((f" + {f.cp_s:.2f} s" if f.cp_s >= 0.01 else f" + {f.cp_s * 1e3:.1f} ms")
           + (" DeepSpeed-Ulysses q/k/v/output all-to-all" if ulysses_sp_engine(w.engine)
              else " context-parallel K/V ring not hidden by attention") if f.cp_s > 0 else "")
        + (f" + {f.bubble_s:.2f} s pipeline bubble ({f.bubble:.0%} at {f.micro} micro-batches"
           + ("; none given: 4 per stage assumed" if not tr.global_batch_tokens else "") + ")"
           if f.bubble_s > 0 else "")
        + (" (every routed expert runs on every token, as transformers' Llama-4 MoE block does)"
           if dense_moe_experts(r.arch, r.plan) else "")
        + (f" (GEMMs at {eff.TRAIN_GEMM_REL_EFF_HF_HOPPER:.0%} of their usual rate: HF-modelling stacks on "
           "Hopper reach ~1/3 of its peak in published QLoRA runs)"
           if hf_stack_on_hopper(r.gpu, w.engine, tr.method) else "")
        + (f" (prime-rl's non-attention work at {eff.TRAIN_REST_REL_EFF_PRIME_RL_HBM:.0%} of the GEMM rate, as its "
           "16k / 64k benchmark pairs give)" if prime_rl_rest_rel_eff(w.engine, r.memory_class) != 1.0 else "")
        + f" + {f.opt_s + f.step_fixed_s:.2f} s optimizer step and fixed per-step cost"
        + (f" + {f.comm_s:.2f} s gradient sync not hidden" if f.comm_s > 0 else "")
        + (f" + {f.fsdp_units_s:.2f} s FSDP hooks of the LoRA units (PEFT wraps each adapter Linear apart)"
           if f.fsdp_units_s > 0 else "")
        + (f" + {f.offload_s:.2f} s offload traffic" if f.offload_s > 0 else "")
        + f": {f.bound} bound"
    )
    return Performance(
        train_tokens_per_s=f.tokens_per_s,
        step_time_s=f.step_s,
        mfu=f.mfu,
        hfu=f.hfu,
        time_to_train_s=f.time_to_train_s,
        bound=f.bound,
        explanation=expl,
        error_band={"train_tokens_per_s": TRAIN_ERROR_BAND if tr.method == "full" and r.memory_class == "hbm"
                    else TRAIN_ERROR_BAND_WIDE},
    )


# Frameworks whose attention is Transformer Engine's DotProductAttention, which picks cuDNN's fused
# (flash) attention on Hopper and newer (TE docs, "Attention backends"): NeMo and Megatron-Core; and
# Surogate and llm.q, which call cuDNN's flash attention themselves (`FUSED_CUDA_ENGINES`).
CUDNN_ATTENTION_ENGINES = ("nemo", "megatron", *FUSED_CUDA_ENGINES)


def hopper_style_tensor_cores(gpu: GPU) -> bool:
    """Whether the GPU's tensor cores are the datacentre Hopper / Blackwell / Rubin kind (warp-group MMA, TMA;
    `tcgen05` on B200) or AMD CDNA 3/4, whose peak FlashAttention-2's mma.sync kernels leave unused
    (`attention_efficiency`). The GeForce and workstation Blackwell chips (GB20x, sm_120: RTX 50x0, RTX PRO 6000) have
    neither wgmma nor tcgen05: their tensor cores are driven by mma.sync, the instruction FlashAttention-2 and
    cuDNN's kernels for that target are built on, as on Ampere and Ada (FlashAttention-3, Shah et al. 2024, targets
    sm_90 only; in NVIDIA's PTX ISA, wgmma needs sm_90a and tcgen05 sm_100a/sm_101a, and sm_120 has neither), so they
    price as "other". DGX Spark's GB10 is sm_121, the same tensor-core kind as sm_120."""
    arch = (gpu.architecture or "").lower()
    if "(gb2" in arch or "sm_12" in arch:  # GB202 / GB203 / GB205 / GB206 / GB207; GB10 (sm_121)
        return False
    return any(k in arch for k in ("hopper", "blackwell", "rubin", "cdna 3", "cdna 4", "cdna3", "cdna4"))


def hopper_or_newer_nvidia(gpu: GPU) -> bool:
    """An NVIDIA Hopper, Blackwell or Rubin GPU (wgmma / TMA: what FlashAttention-3 and cuDNN's fused
    attention use; not the GeForce / workstation Blackwell chips, `hopper_style_tensor_cores`)."""
    return gpu.vendor == "NVIDIA" and hopper_style_tensor_cores(gpu)


def attention_kernel(gpu: GPU, engine: str | None = None, given: str | None = None) -> str:
    """The flash-attention kernel a training step runs: the plan's `training.attention_kernel`, else the
    engine's default, Transformer Engine's cuDNN attention for `CUDNN_ATTENTION_ENGINES` on NVIDIA Hopper and
    newer, else FlashAttention-2 (transformers' and prime-rl's `flash_attention_2`; prime-rl's
    `ModelConfig.attn` defaults to it, src/prime_rl/trainer/config.py at b798a90d)."""
    if given:
        return given
    if hopper_or_newer_nvidia(gpu) and any((engine or "").lower().startswith(e) for e in CUDNN_ATTENTION_ENGINES):
        return "cudnn"
    return "flash_attention_2"


def attention_efficiency(gpu: GPU, engine: str | None = None, kernel: str | None = None) -> float:
    """Flash attention's efficiency relative to the GEMMs on the FLOPs it executes (the causal half,
    `attention_executed_keys`), by kernel (`attention_kernel`) and GPU generation (`eff.TRAIN_ATTN_REL_EFF`,
    fitted there on the fit rows):
    FlashAttention-2 reaches 50-73 % of the A100's peak (Dao 2023, sec. 4.1) but only ~35 % of the
    H100's, whose wgmma/TMA units it does not use (Shah et al. 2024, FlashAttention-3, sec. 1).
    Transformer Engine's cuDNN attention (`CUDNN_ATTENTION_ENGINES`) does use them on NVIDIA Hopper and
    Blackwell ("cudnn-hopper+"), and so does FlashAttention-3 ("fa3-hopper", Hopper only: its kernels are
    written for sm90, flash-attention's hopper/ README; elsewhere it is priced as FlashAttention-2). The GeForce /
    workstation Blackwell chips have no such units (`hopper_style_tensor_cores`) and price as "other"."""
    arch = (gpu.architecture or "").lower()
    newer = hopper_style_tensor_cores(gpu)
    kern = attention_kernel(gpu, engine, kernel)
    if kern == "flash_attention_3" and gpu.vendor == "NVIDIA" and "hopper" in arch:
        return eff.TRAIN_ATTN_REL_EFF["fa3-hopper"]
    if kern == "cudnn" and hopper_or_newer_nvidia(gpu):
        return eff.TRAIN_ATTN_REL_EFF["cudnn-hopper+"]
    return eff.TRAIN_ATTN_REL_EFF["hopper+" if newer else "other"]


# AdamW's step per trainable parameter: reads weight (2), gradient (2), fp32 master (4) and two fp32
# moments (8) = 16 B, writes master, moments and the bf16 weight = 14 B (fused/foreach kernels are
# bandwidth bound: Rajbhandari et al. 2020 ZeRO sec. 3; the brief's 16-18 B/param/step counts reads).
OPTIMIZER_BYTES_PER_PARAM = 30.0


# Frameworks that step PyTorch's own torch.optim.AdamW with its default foreach implementation and clip
# gradients by default (HF Trainer / TRL / axolotl max_grad_norm=1.0; PEFT's method-comparison runner
# grad_norm_clip; unsloth runs HF Trainer). Fused-optimizer engines are `memory.FUSED_OPTIMIZER_ENGINES`.
FOREACH_ADAMW_ENGINES = (*HF_MODELLING_ENGINES, "unsloth")


def optimizer_step_bytes(optimizer: str, precision: Precision, engine: str | None) -> float:
    """DRAM bytes per trainable parameter of one optimizer step.

    Fused AdamW (one kernel per tensor): `OPTIMIZER_BYTES_PER_PARAM`. PyTorch's foreach AdamW
    (torch/optim/adamw.py `_multi_tensor_adamw`, the default on CUDA; torch.optim docs, "foreach") runs one
    pass per operation over all tensors: weight decay p *= 1 - lr wd (read + write P), m.lerp_(g) (2E + G),
    v *= beta2 (2E), v.addcmul_(g, g) (2E + G), sqrt(v) into a new tensor (2E), its division by the bias
    correction (2E) and + eps (2E), p.addcdiv_(m, denominator) (2P + 2E): 4P + 12E + 2G, with P the
    trainable weight's bytes (fp32 under AMP or a master copy), E a moment's, G a gradient's. Clipping the
    gradient norm (torch.nn.utils.clip_grad_norm_: one read for the norms, one read + write to scale) adds 3G.
    bf16 weights and moments: 8 + 24 + 4 + 6 = 42 B, against ~30 fused. 8-bit / paged optimizers
    (bitsandbytes' fused kernels) and other optimizers keep the fused figure.

    Which implementation runs is `memory.adamw_implementation`, the same answer the memory estimate reads:
    the optimizer's name where it says (`adamw-fused`, `adamw-foreach`), else the framework's default. The
    foreach passes are priced for the frameworks that run them by default (`FOREACH_ADAMW_ENGINES`), for a
    custom loop (no engine: torch.optim.AdamW's default on CUDA is foreach, and such a loop usually clips
    too), and wherever `adamw-foreach` is given; other named frameworks keep the fused figure they were
    calibrated with."""
    from mlrig.estimators.memory import adamw_implementation, optimizer_cost

    o = optimizer.strip().lower().replace("_", "-")
    e = (engine or "").lower()
    foreach_default = not e or any(e.startswith(x) for x in FOREACH_ADAMW_ENGINES)
    if adamw_implementation(optimizer, engine) != "foreach" or not (foreach_default or "foreach" in o):
        return OPTIMIZER_BYTES_PER_PARAM
    cost = optimizer_cost(optimizer, precision)
    grad = cost.grad_bytes
    moment = 2.0 if cost.state_bytes <= 4.0 else 4.0  # bf16 moments (no master) or fp32 ones
    weight = 4.0 if (grad >= 4.0 or cost.state_bytes > 8.0) else 2.0  # fp32 weights (AMP) or a master copy
    return 4.0 * weight + 12.0 * moment + 2.0 * grad + 3.0 * grad


# Relative error band of the training speed. Full training on HBM cards: the p90 of |pred/meas - 1|
# over the 184 fit rows of train_tokens_per_s / training-full / hbm in scripts/calibration_report.py
# is 21 % (the legacy MPT table in `mlrig.validation.speed`: 13 %). Elsewhere the wide default stands
# only where no scope validates the plan: a validated scope's own p90 replaces either figure
# (planner.attach_validation; LoRA/QLoRA on GDDR and HBM cards: 14-42 % in `mlrig validate`, 2026-11-24).
TRAIN_ERROR_BAND = 0.25
TRAIN_ERROR_BAND_WIDE = 0.60

# Fraction of the data-parallel gradient sync hidden behind the backward pass. PyTorch DDP and FSDP
# bucket gradients and all-reduce them while backward continues (Li et al. 2020, "PyTorch
# Distributed", sec. 3.2.3, reports most of the communication overlapped); not fitted - the
# calibration runs (MosaicML, 1600 Gb/s RoCE) are compute bound either way.
DP_OVERLAP = 0.7

# GPUs without PCIe peer-to-peer (`hardware.link_peer_to_peer` of the plan's link: GeForce cards by default,
# `interconnects.pcie_peer_to_peer`, or a link named '-nop2p'): NCCL stages every transfer through pinned host
# memory. The 4090 lacks the mailbox P2P hardware the driver uses (tinygrad/open-gpu-kernel-modules README, 2024),
# GeForce 30-series cards peer only over an NVLink bridge. Answer.AI's fsdp_qlora benchmarks
# (benchmarks_03_2024.md) ran the same setups under FSDP and DDP on such rigs: FSDP adds the whole
# parameter all-gather on top of the DDP step however much compute there is to hide it behind - Llama-2-7B
# LoRA on 2x RTX 3090, 3.8 s at batch 4 (FSDPQLORA-0013 vs -0019: 10.7 s vs 6.9 s a step) and 4.3-4.6 s at
# batch 1 (-0005/-0007); QLoRA 1.0-1.7 s (-0001/-0003/-0009 vs -0017); 2x RTX 4090 LoRA at batch 6, 0.5 s
# for 13.5 GB (-0028 vs -0027), about its transfer time at NCCL's PCIe rate (`PCIE_COLLECTIVE_EFF`). So none
# of it overlaps.
DP_OVERLAP_NO_P2P = 0.0


def dp_overlap(r: ResolvedPlan) -> float:
    """Fraction of the data-parallel traffic that hides behind compute: `DP_OVERLAP`, or
    `DP_OVERLAP_NO_P2P` where the GPUs talk over PCIe without peer-to-peer (through host memory): the same
    answer inference's all-reduce takes from the plan's link (`hardware.plan_link`, `link_peer_to_peer`)."""
    from mlrig.estimators.hardware import link_peer_to_peer, plan_link

    link = r.link or plan_link(r.plan, r.gpu)
    if link.kind == "pcie" and not link_peer_to_peer(link):
        return DP_OVERLAP_NO_P2P
    return DP_OVERLAP


# CPU Adam reads and writes fp32 master weights, two moments and the gradient: ~16 B read +
# 12 B written per parameter per step, at host memory bandwidth (Ren et al. 2021, ZeRO-Offload).
CPU_ADAM_BYTES_PER_PARAM = 28.0


def _adapter_params(arch: ModelArch, rank: int, targets: list[str]) -> float:
    """LoRA adapters' parameters (see memory.lora_params): what is trained, synchronised and stepped."""
    from mlrig.estimators.memory import lora_params

    return float(lora_params(arch, rank, targets))


# NCCL collectives over PCIe move ~78 % of the link's per-direction rate: all_reduce_perf on six RTX 4090s
# on PCIe 4.0 x16 (P2P enabled) measures 24.5 GB/s bus bandwidth against 31.5 (tinygrad/open-gpu-kernel-
# modules README, 2024): TLP headers at 256-byte payloads and NCCL's protocol overheads. NVLink is left at
# its rate (no comparable figure taken).
PCIE_COLLECTIVE_EFF = 24.5 / 31.5


def _dp_link(r: ResolvedPlan) -> tuple[float, float]:
    """(GB/s per direction, latency us) of the data-parallel links (`hardware.plan_link`); collectives
    over PCIe at `PCIE_COLLECTIVE_EFF` of the link's rate."""
    from mlrig.estimators.hardware import plan_link

    link = r.link or plan_link(r.plan, r.gpu)
    return link.bandwidth_gb_s * (PCIE_COLLECTIVE_EFF if link.kind == "pcie" else 1.0), link.latency_us


def _tp_link(r: ResolvedPlan) -> tuple[float, float]:
    """(GB/s, latency us) of a tensor-parallel group, which stays inside one node: the GPU-to-GPU link the plan
    names (`hardware.plan_link`: 'pcie3-x4', 'nvlink'; a named network is between nodes, so the card's own link
    serves), else the card's own link for a group of min(TP, GPUs) cards (NVLink where a bridge joins that many:
    `interconnects.default_link`); collectives over PCIe at `PCIE_COLLECTIVE_EFF` of the link's rate, as for
    data parallelism (`_dp_link`)."""
    from mlrig.catalog.interconnects import default_link
    from mlrig.estimators.hardware import plan_link

    hw, g = r.plan.hardware, r.gpu
    if hw.interconnect:
        link = r.link or plan_link(r.plan, g)
        if link.kind != "network":
            return link.bandwidth_gb_s * (PCIE_COLLECTIVE_EFF if link.kind == "pcie" else 1.0), link.latency_us
    d = default_link(g.pcie_gen, g.nvlink_gb_s, min(hw.tensor_parallel, hw.count), 1, g.nvlink_max_gpus)
    return d.bandwidth_gb_s * (PCIE_COLLECTIVE_EFF if d.kind == "pcie" else 1.0), d.latency_us


def data_parallel_link(r: ResolvedPlan, ranks: int) -> tuple[float, float]:
    """(GB/s, latency us) of the ring of one data-parallel group of `ranks` GPUs.

    Inside a node it is `_dp_link` (NVLink or PCIe). When a multi-node plan names its network
    (`hardware.interconnect` = a network link, one adapter per GPU, or "4x roce-100g" for four adapters per
    node), a group that spans nodes enters and leaves each node through those adapters: NCCL runs one ring
    per adapter, so the ring's bus bandwidth is the node's adapters together, never more than the
    intra-node link (S. Jeaugey, NCCL maintainer, NVIDIA/nccl issue #412, 2023-04-24: ~24 GB/s inter-node
    with one HDR 200G adapter per node against ~160 GB/s NVLink inside an A800 node, "add more NICs and you
    should get more bandwidth, up to 160GB/s"). The groups that run at once on a node (one per tensor x
    pipeline rank held there) share the adapters, and each ring step pays the network's latency. A plan
    that names no network keeps the intra-node figure: the fabric is assumed to keep up (rail-optimised
    HGX/DGX clusters carry one 200-400 Gb/s adapter per GPU, about the NVLink share of a ring)."""
    bw, lat = _dp_link(r)
    hw = r.plan.hardware
    named = _named_network(hw.interconnect)
    if hw.nodes <= 1 or ranks <= 1 or named is None:
        return bw, lat
    nics, nic = named
    intra, intra_lat = _intra_node_link(r)
    replica = max(1, hw.total_gpus // ranks)  # GPUs of one model replica (tensor x pipeline x ...)
    in_node = max(1, hw.count // replica)  # ranks of one group on a node
    if in_node >= ranks:
        return intra, intra_lat  # the group stays inside one node
    net = (nics or hw.count) * nic.bandwidth_gb_s / max(1, hw.count // in_node)
    return min(intra, net), max(intra_lat, nic.latency_us)


def _offload_s(plan: Plan, gpu: GPU, trainable: float, param_bytes: float, shards: int = 1) -> float:
    """Per-step time for ZeRO-Offload / ZeRO-Infinity traffic (Ren et al. 2021; Rajbhandari et al.
    2021), not overlapped (conservative): optimizer offload sends bf16 gradients to the host and
    bf16 parameters back (4 B/param over PCIe) and runs Adam on the CPU at host bandwidth; parameter
    offload also streams the weights in for forward and backward: twice `param_bytes`, the weights
    as stored (bf16: 4 B/param; FSDP-QLoRA offloads the NF4-quantised shards, Answer.AI fsdp_qlora
    train.py with cpu_offload, so ~0.56 B/param x 2). Under ZeRO / FSDP each GPU moves only its own
    1/`shards` partition over its own PCIe link (the gathered weights then travel GPU to GPU); the CPU
    Adam of all the node's partitions shares the host's memory bandwidth."""
    tr = plan.training
    assert tr is not None
    if tr.offload == "none":
        return 0.0
    from mlrig.catalog.interconnects import pcie_x16_link
    from mlrig.estimators.hardware import DEFAULT_HOST_BW_GB_S

    pcie = pcie_x16_link(gpu.pcie_gen).bandwidth_gb_s
    host_bw = plan.hardware.host_memory_bandwidth_gb_s or DEFAULT_HOST_BW_GB_S
    t = 4.0 * trainable / shards / (pcie * 1e9) + CPU_ADAM_BYTES_PER_PARAM * trainable / (host_bw * 1e9)
    if tr.offload == "params":
        t += 2.0 * param_bytes / shards / (pcie * 1e9)
    return t


# Job interruptions. Kokolis et al. 2024/2025, "Revisiting Reliability in Large-Scale Machine Learning
# Research Clusters" (Meta FAIR, arXiv 2410.21680, HPCA 2025): 11 months of two A100 clusters; RSC-1
# (16k GPUs) had r_f = 6.50 job-interrupting failures per 1000 node-days (8 GPUs a node), RSC-2 2.34.
# Their MTTF model for a job on N nodes is 1 / (N r_f): projected 1.8 h at 16,384 GPUs and 0.23 h at
# 131,072 (measured: 7.9 h for 1024-GPU jobs, 47.7 days for 8-GPU jobs). The RSC-1 rate, the more
# failure-prone of the two, in GPU-hours per interruption: 1000 x 24 x 8 / 6.50 ~ 29,500; a
# synchronous job stops when any of its GPUs fails, so its MTBF is that over the job's GPUs.
GPU_HOURS_PER_INTERRUPTION = 1000 * 24 * 8 / 6.50
MTBF_SOURCE = "Meta RSC-1's 6.50 failures per 1000 node-days (Kokolis et al., arXiv 2410.21680)"
# Storage assumed when none is given or measured: 2 GB/s, a PCIe 4.0 NVMe SSD's sustained write
# (their 5-7 GB/s headline is into an SLC cache); network file systems may be slower or faster.
DEFAULT_STORAGE_GB_S = 2.0


def tokenised_bytes_per_token(vocab_size: int) -> float:
    """Bytes per token of pre-tokenised training data: the smallest unsigned integer holding every id
    (nanoGPT's prepare.py writes uint16 for GPT-2's 50,257 ids; Megatron-LM's indexed datasets pick
    uint16 below 65,500 ids, else int32)."""
    return 2.0 if vocab_size <= 65_536 else 4.0


def estimate_training_run(r: ResolvedPlan, perf: Performance) -> TrainingRun:
    """Data, checkpoints and failures for the plan's training run, at the speed in `perf`.

    Data: tokens/s x bytes per token against the storage's throughput. Checkpoint: the trainable
    weights plus their optimizer states (`checkpoint_bytes`), written at the storage's rate.
    Interval: Young/Daly for the job's MTBF, whose expected cost (writing plus redoing the work
    lost at a failure) is about sqrt(2 x write time / MTBF) of the run (Daly 2006, first order). The
    time to restart a job after a failure (scheduling, loading the checkpoint) is not included."""
    arch, plan = r.arch, r.plan
    tr, hw = plan.training, plan.hardware
    assert tr is not None and perf.train_tokens_per_s is not None
    notes: list[str] = []
    bytes_per_token = tr.data_bytes_per_token or tokenised_bytes_per_token(arch.vocab_size)
    storage = hw.storage_gb_s
    if storage is None:
        storage = DEFAULT_STORAGE_GB_S
        notes.append(f"storage assumed {storage:g} GB/s (an NVMe SSD's sustained write); pass --storage-gb-s, "
                     "or --machine local after `mlrig probe`")
    need_gb_s = data_pipeline_need_gb_s(perf.train_tokens_per_s, bytes_per_token)
    ok = need_gb_s <= storage
    if not ok:
        notes.append(f"the input pipeline needs {need_gb_s:.2f} GB/s, more than the storage's {storage:g} GB/s: "
                     "training would be data bound (cache the dataset in RAM or use faster storage)")
    trainable = arch.params().total if tr.method == "full" else _adapter_params(arch, tr.lora_rank, tr.lora_targets)
    ckpt = checkpoint_bytes(trainable, tr.optimizer)
    write_s = checkpoint_write_s(ckpt, storage)
    mtbf_h = hw.mtbf_hours or GPU_HOURS_PER_INTERRUPTION / hw.total_gpus
    if hw.mtbf_hours is None:
        notes.append(f"MTBF {mtbf_h:,.0f} h = one interruption per {GPU_HOURS_PER_INTERRUPTION:,.0f} GPU-hours "
                     f"({MTBF_SOURCE}) over {hw.total_gpus} GPU(s); pass --mtbf-h for your own")
    interval_s = young_daly_interval_s(write_s, mtbf_h * 3600.0)
    if perf.time_to_train_s is not None and interval_s >= perf.time_to_train_s:
        notes.append("the optimal checkpoint interval is longer than the run: a checkpoint at the end suffices")
    return TrainingRun(
        compute_optimal_tokens=chinchilla_tokens(arch.params().total) if plan.workload.task == "pretrain" else None,
        tokens_to_train=tr.tokens_to_train,
        data_bytes_per_token=bytes_per_token,
        data_read_mb_s=need_gb_s * 1e3,
        storage_gb_s=storage,
        data_pipeline_ok=ok,
        checkpoint_gib=ckpt / 2**30,
        checkpoint_write_s=write_s,
        mtbf_hours=mtbf_h,
        checkpoint_interval_s=interval_s,
        checkpoint_overhead=math.sqrt(2.0 * write_s / (mtbf_h * 3600.0)),
        notes=notes,
    )


def chinchilla_tokens(params: float) -> float:
    """Compute-optimal training tokens ~ 20 per parameter (Hoffmann et al. 2022, Table 3)."""
    if params <= 0:
        raise MlrigError("params must be > 0")
    return 20.0 * params


def data_pipeline_need_gb_s(samples_per_s: float, bytes_per_sample: float) -> float:
    """Read throughput the input pipeline must sustain, GB/s (10^9 B/s)."""
    if samples_per_s < 0 or bytes_per_sample < 0:
        raise MlrigError("samples/s and bytes/sample must be >= 0")
    return samples_per_s * bytes_per_sample / 1e9


def data_pipeline_ok(samples_per_s: float, bytes_per_sample: float, storage_gb_s: float) -> bool:
    """Whether storage at `storage_gb_s` (10^9 B/s) keeps up with the input pipeline."""
    return data_pipeline_need_gb_s(samples_per_s, bytes_per_sample) <= storage_gb_s


def checkpoint_bytes(params: float, optimizer: str = "adamw", weight_bytes: float = 2.0) -> float:
    """Weights plus the optimizer state a resumable checkpoint holds: the same per-parameter state
    bytes as in GPU memory (`memory.optimizer_cost`; mixed-precision AdamW: fp32 master + two
    moments = 12 B, so 2 + 12 = 14 B/param with bf16 weights; ZeRO paper, Rajbhandari et al. 2020)."""
    from mlrig.estimators.memory import optimizer_cost

    return params * (weight_bytes + optimizer_cost(optimizer, "bf16").state_bytes)


def checkpoint_write_s(ckpt_bytes: float, storage_gb_s: float) -> float:
    """Seconds to write a checkpoint at the storage's sequential write rate (10^9 B/s)."""
    if storage_gb_s <= 0:
        raise MlrigError("storage bandwidth must be > 0 GB/s")
    return ckpt_bytes / (storage_gb_s * 1e9)


def young_daly_interval_s(checkpoint_s: float, mtbf_s: float) -> float:
    """Optimal checkpoint interval sqrt(2 x checkpoint time x MTBF) (Young 1974; Daly 2006)."""
    if checkpoint_s <= 0 or mtbf_s <= 0:
        raise MlrigError("checkpoint time and MTBF must be > 0")
    return math.sqrt(2.0 * checkpoint_s * mtbf_s)


def data_parallel_comm_s(
    grad_bytes: float, ranks: int, bandwidth_gb_s: float, latency_us: float, zero_stage: int = 0,
    overlap: float = DP_OVERLAP, param_bytes: float | None = None, hide_s: Num = math.inf,
    broadcast_params: bool = False,
) -> Num:
    """Exposed data-parallel communication per step. DDP/ZeRO-1/2: ring all-reduce of the gradients,
    2(N-1)/N x bytes. ZeRO-3 / FSDP full shard: reduce-scatter of the gradients, (N-1)/N x grad bytes,
    plus an all-gather of the sharded parameters in forward and again in backward, 2(N-1)/N x param
    bytes (Rajbhandari et al. 2020, sec. 7) - all of them, frozen or not, in their stored format (NF4
    for FSDP-QLoRA: Answer.AI's fsdp_qlora shards the quantised weights), so a LoRA run moves its whole
    base model twice a step. `param_bytes` defaults to `grad_bytes` (full training: 3(N-1)/N x bytes).
    `overlap` is the fraction that can hide behind computation, but never more than the `hide_s`
    seconds of computation there are to hide behind. `broadcast_params` (ZeRO-1/2 as InternEvo runs it,
    `ALLREDUCE_BROADCAST_ZERO_ENGINES`): the gradients are all-reduced whole, then every rank broadcasts
    the parameters it updated, (N-1)/N x param bytes more."""
    if ranks <= 1:
        return 0.0
    if zero_stage >= 3:
        volume = (ranks - 1) / ranks * (grad_bytes + 2.0 * (grad_bytes if param_bytes is None else param_bytes))
    else:
        volume = 2.0 * (ranks - 1) / ranks * grad_bytes
        if broadcast_params and zero_stage >= 1:
            volume = volume + (ranks - 1) / ranks * (grad_bytes if param_bytes is None else param_bytes)
    t = volume / (bandwidth_gb_s * 1e9) + 2 * (ranks - 1) * latency_us * 1e-6
    return t - vec.minimum(overlap * t, hide_s)


def accumulation_hide_s(busy_s: Num, micro: Num, stages: int = 1) -> Num:
    """Compute time a once-per-step gradient sync can hide behind under gradient accumulation: one
    micro-batch's share of the step's compute. Whole gradients are synchronised only after the last
    micro-batch (PyTorch DDP `no_sync()` on the others: "gradients will be accumulated ... and synced in the
    first forward-backward pass exiting the context"; DeepSpeed ZeRO-1 and Megatron reduce at the
    accumulation boundary; InternEvo sets `skip_grad_reduce` on all but the last micro-batch,
    internlm/core/scheduler/no_pipeline_scheduler.py), so the buckets all-reduce while that micro-batch's
    backward runs, and the parameter gather after the step overlaps at most the next step's first
    micro-batch (InternEvo's ParamBcastSyncHandler, Megatron's overlap_param_gather). With `stages`
    pipeline stages, up to `stages` micro-batches: a later stage finishes its last backward while the
    earlier ones still drain the 1F1B cool-down (Narayanan et al. 2021, sec. 2.2). With one micro-batch the
    whole step's compute is the window, as before."""
    return vec.minimum(busy_s, busy_s * max(1, stages) / vec.maximum(1, micro))


# Frameworks whose ZeRO-1 all-reduces whole gradients and then broadcasts each rank's updated partition
# (one NCCL broadcast per owner rank) instead of reduce-scatter + all-gather: InternEvo's
# HybridZeroOptimizer (internlm/solver/optimizer/hybrid_zero_optim.py at v0.2.1dev20231121:
# `reduce_tensor(..., dst_rank=None)` is an all-reduce, `broadcast_params` loops `dist.broadcast` over
# the ZeRO ranks). 3(N-1)/N x the model's bytes a step instead of ZeRO's 2(N-1)/N (Rajbhandari et al.
# 2020, sec. 7.2.1).
ALLREDUCE_BROADCAST_ZERO_ENGINES = ("internevo", "internlm")


def _engine_broadcasts_params(engine: str | None) -> bool:
    e = (engine or "").lower()
    return any(e.startswith(n) for n in ALLREDUCE_BROADCAST_ZERO_ENGINES)


def expert_weight_floor_s(r: ResolvedPlan, tokens_per_micro: Num, lin_passes: float, bw_bytes_s: float) -> Num:
    """Least time the routed-expert GEMMs of one micro-batch take on one GPU: each GEMM pass (forward, input
    gradient, weight gradient: `lin_passes` / 2 of them, 2 / 3 / 4 for LoRA / full / full + recompute) touches
    every local expert weight the micro-batch routes a token to once, as bf16 (2 B; the weight gradient writes
    one of the same size), at the training memory bandwidth `bw_bytes_s`: the roofline's memory side of a
    grouped GEMM (Williams et al. 2009, "Roofline"). A GPU holds experts_routed / (pp x ep x etp) of the
    routed parameters (Megatron-Core: experts split EP ways, each expert etp ways; without EP, etp = TP's
    slice); a micro-batch of T tokens per rank (`tokens_per_micro` / (tp x cp) after sequence / context
    parallelism) sends T x ep x etp tokens into the group that feeds them, touching
    `experts_touched_fraction` of them. Dense-GEMM time already counts the weights once per GEMM (the
    fitted efficiency); this floor only binds when tokens per expert are few (Qwen3-30B-A3B's 128 experts
    top-8 at 2,048 tokens: ~128 per expert), the regime where grouped-GEMM MoE runs are weight-bandwidth
    bound (MegaBlocks, Gale et al. 2022, arXiv 2211.15841, sec. 5: block-sparse expert GEMMs at low
    arithmetic intensity)."""
    arch, plan = r.arch, r.plan
    tr, hw = plan.training, plan.hardware
    assert tr is not None
    if not arch.is_moe or arch.num_experts <= 0:
        return 0.0
    from mlrig.estimators.expert_parallel import experts_touched_fraction

    ep, etp = tr.expert_parallel, plan.expert_tensor_parallel_size
    tp, pp, cp = hw.tensor_parallel, hw.pipeline_parallel, tr.context_parallel
    local_params = float(arch.params().experts_routed) / (pp * ep * etp)
    group_tokens = tokens_per_micro / (tp * cp) * ep * etp
    touched = experts_touched_fraction(arch, group_tokens)
    return lin_passes / 2.0 * 2.0 * local_params * touched / bw_bytes_s


# Training engines built on Megatron-Core's MoE layer (its dropless token dispatcher): Megatron-LM and the
# stacks that run it (NeMo, Pai-Megatron-Patch, ms-swift's `megatron sft`, all written `megatron`)
MEGATRON_CORE_ENGINES = ("megatron", "nemo")


def _engine_is_megatron_core(engine: str | None) -> bool:
    e = (engine or "").lower()
    return any(e.startswith(n) for n in MEGATRON_CORE_ENGINES)


# Engines whose pipeline schedule overlaps the expert-parallel all-to-all with computation: DeepSeek's HAI-LLM
# with DualPipe, which pairs the forward and backward chunks of two micro-batches so that "both all-to-all and PP
# communication can be fully hidden during execution" (DeepSeek-V3 technical report, arXiv 2412.19437,
# sec. 3.2.1). The all-to-all then costs only the time by which it exceeds the step's computation.
A2A_OVERLAP_ENGINES = ("hai-llm",)


def _engine_overlaps_all_to_all(engine: str | None) -> bool:
    e = (engine or "").lower()
    return any(e.startswith(n) for n in A2A_OVERLAP_ENGINES)


def all_to_all_passes(checkpointing: str) -> int:
    """Expert-parallel all-to-alls per MoE layer and micro-batch: dispatch and combine in forward and their
    mirror images in backward (Lepikhin et al. 2020, GShard), plus the forward's two again when full
    recomputation re-runs each layer, token dispatcher included (Megatron-Core recomputes the whole
    TransformerLayer under --recompute-granularity full)."""
    return 6 if checkpointing == "full" else 4


def expert_all_to_all_s(r: ResolvedPlan, tokens: Num, micro: Num) -> Num:
    """Seconds per step of the expert-parallel all-to-alls on one GPU for `tokens` tokens of its step.

    Each token's hidden state goes to its top-k experts' ranks and back, `all_to_all_passes` times per MoE
    layer (`all_to_all_bytes_per_token`); (ep - 1)/ep of it leaves the GPU. An EP group wider than a node
    (EP x expert-TP > GPUs per node) sends the share meant for other nodes through the GPU's network adapter
    (one adapter per GPU, or "4x roce-100g" for four per node): unlike a ring, an all-to-all cannot route
    around the adapters, every remote byte crosses one. A plan that names no network gets the adapter
    NVIDIA's reference nodes carry per GPU (`default_scale_out_link`), not the intra-node link: a ring can
    spread over all of a node's adapters, an all-to-all's remote bytes cannot. Each pass pays one link
    latency per layer and micro-batch. Engines that overlap the all-to-all with computation
    (`A2A_OVERLAP_ENGINES`) expose only what the compute does not cover (`training_speed`)."""
    arch, hw, tr = r.arch, r.plan.hardware, r.plan.training
    assert tr is not None
    ep, pp = tr.expert_parallel, hw.pipeline_parallel
    if ep <= 1 or not arch.is_moe:
        return 0.0
    passes = all_to_all_passes(tr.checkpointing)
    per_token = all_to_all_bytes_per_token(arch, tr.checkpointing) / pp
    named = _named_network(hw.interconnect)
    bw, lat = _intra_node_link(r) if (named is not None and hw.nodes > 1) else _dp_link(r)
    t_local = per_token * tokens * (ep - 1) / ep / (bw * 1e9)
    etp = r.plan.expert_tensor_parallel_size
    span = ep * etp  # GPUs of one EP group with its expert-tensor ranks (Megatron-Core: ETP defaults to TP)
    if hw.nodes > 1 and span > hw.count:
        if named is None:  # the reference node's adapter per GPU, and its intra-node link for the rest
            named = (None, default_scale_out_link(r.gpu))
            bw, lat = _intra_node_link(r)
        nics, nic = named
        per_gpu = nic.bandwidth_gb_s * (nics or hw.count) / hw.count
        remote = 1.0 - max(1, hw.count // etp) / ep  # peers on other nodes
        near = per_token * tokens * (max(1, hw.count // etp) - 1) / ep / (bw * 1e9)
        t_local = vec.maximum(near, per_token * tokens * remote / (per_gpu * 1e9))
        lat = max(lat, nic.latency_us)
    return t_local + passes * arch.num_moe_layers / pp * micro * lat * 1e-6


def all_to_all_bytes_per_token(arch: ModelArch, checkpointing: str) -> float:
    """Bytes one token's expert-parallel all-to-alls move per step over the whole model (before the (ep-1)/ep
    share that leaves the GPU and the split over pipeline stages): its bf16 hidden state (h x 2 B) once to
    each of its top-k experts, `all_to_all_passes` times in every MoE layer (Megatron-Core's alltoall token
    dispatcher permutes each token k times before the all-to-all, token_dispatcher.py
    `MoEAlltoAllTokenDispatcher.token_permutation`; GShard, Lepikhin et al. 2020). Shared experts run
    locally and move nothing."""
    return (all_to_all_passes(checkpointing) * arch.experts_per_token * arch.hidden_size * 2.0
            * arch.num_moe_layers)


# The scale-out adapter per GPU of a multi-node plan that names no network: NVIDIA's reference nodes carry
# one adapter per GPU, 200 Gb/s HDR InfiniBand on the DGX A100 (datasheet: "8x single-port Mellanox
# ConnectX-6 VPI 200Gb/s HDR InfiniBand") and 400 Gb/s NDR from the DGX H100 on (datasheet: "8x single-port
# ConnectX-7 VPI, 400Gb/s InfiniBand"); DeepSeek-V3's H800 nodes likewise have 8 x 400 Gb/s InfiniBand,
# ~50 GB/s per GPU against ~160 GB/s NVLink (arXiv 2412.19437 sec. 3.2.2). Ampere and older architectures
# (the A800 included: its nodes are DGX A100-class) get HDR, later ones (Hopper, Ada, Blackwell, MI300) NDR.
HDR_ERA_ARCHITECTURES = ("ampere", "volta", "turing", "pascal", "maxwell", "kepler")


def default_scale_out_link(gpu: GPU) -> Interconnect:
    """The per-GPU network adapter assumed for cross-node traffic that cannot use a ring over all of a node's
    adapters (the expert-parallel all-to-all) when the plan names no network (`HDR_ERA_ARCHITECTURES`)."""
    from mlrig.catalog.interconnects import resolve_interconnect

    arch = (gpu.architecture or "").lower()
    return resolve_interconnect("ib-hdr" if arch.startswith(HDR_ERA_ARCHITECTURES) else "ib-ndr")


def _intra_node_link(r: ResolvedPlan) -> tuple[float, float]:
    """(GB/s, latency us) between the GPUs of one node of a multi-node plan whose interconnect names the
    network: the card's own link (NVLink, or PCIe at `PCIE_COLLECTIVE_EFF`); infinite for one GPU a node."""
    from mlrig.catalog.interconnects import default_link

    hw, g = r.plan.hardware, r.gpu
    if hw.count <= 1:
        return math.inf, 0.0
    d = default_link(g.pcie_gen, g.nvlink_gb_s, hw.count, 1, g.nvlink_max_gpus, g.pcie_lanes)
    return d.bandwidth_gb_s * (PCIE_COLLECTIVE_EFF if d.kind == "pcie" else 1.0), d.latency_us


def _named_network(interconnect: str | None) -> tuple[int | None, Interconnect] | None:
    """(adapters per node or None for one per GPU, the adapter's link) when the plan's interconnect names a
    network link, else None."""
    if not interconnect:
        return None
    from mlrig.catalog.interconnects import resolve_interconnect, split_nic_count

    nics, name = split_nic_count(interconnect)
    nic = resolve_interconnect(name)
    return (nics, nic) if nic.kind == "network" else None


def pipeline_microbatch_overhead_s(per_microbatch_s: float, stages: int, microbatches: Num,
                                   virtual: int = 1) -> Num:
    """Host time per step of the per-micro-batch launches on the critical path of a pipeline schedule.

    `per_microbatch_s` (`eff.TRAIN_MICROBATCH_OVERHEAD_S`) is the host cost of one micro-batch's forward and
    backward through the whole model: kernel launches, whose count follows the layers launched. Under
    pipeline parallelism each rank runs its own `layers / p` only (Megatron-LM megatron/core/pipeline_parallel/
    schedules.py: `forward_backward_pipelining_without_interleaving` calls `forward_step` and `backward_step`
    once per micro-batch on its stage, num_microbatches times; `forward_backward_pipelining_with_interleaving`
    calls them num_microbatches x num_model_chunks times, each over one chunk of layers / (p v); torch
    torch/distributed/pipelining/schedules.py `Schedule1F1B` / `ScheduleInterleaved1F1B` the same per stage), so
    one micro-batch costs a rank per_microbatch_s / p. That cost sits inside each schedule slot, and the
    critical path is the 1F1B pipeline's m + (p - 1) / v slots (the bubble, `pipeline_bubble`: m + p - 1
    without interleaving, Narayanan et al. 2021 sec. 2.2): per_microbatch_s x (m + (p - 1) / v) / p.
    One stage (p = 1): per_microbatch_s x m, as before."""
    if stages <= 1:
        return per_microbatch_s * microbatches
    return per_microbatch_s * (microbatches + (stages - 1) / max(1, virtual)) / stages


def pipeline_p2p_link(r: ResolvedPlan) -> tuple[float, float]:
    """(GB/s per direction, latency us) of the hop between adjacent pipeline stages. Megatron-Core orders its
    ranks tensor, context, (expert,) data, then pipeline outermost (megatron/core/parallel_state.py,
    `initialize_model_parallel(order="tp-cp-ep-dp-pp")`), so on more than one node some stage boundary
    crosses nodes, and every slot of the 1F1B schedule waits for the slowest hop: the GPU's network adapter
    (the plan's named network, its adapters shared by the node's GPUs; else the adapter per GPU NVIDIA's
    reference nodes carry, `default_scale_out_link`). On one node the GPUs' own link (`_dp_link`: NVLink,
    or PCIe by the plan's peer-to-peer rule)."""
    hw = r.plan.hardware
    if hw.nodes <= 1:
        return _dp_link(r)
    named = _named_network(hw.interconnect) or (None, default_scale_out_link(r.gpu))
    nics, nic = named
    return nic.bandwidth_gb_s * (nics or hw.count) / hw.count, nic.latency_us


# Megatron-LM's pipeline sends moved into megatron/core (no scatter-gather) in commit 3c92fa9, first released in
# the 23.04 tag (2023-05-11); its v1.x / v2.x tags (2020-2021) and YY.MM releases before it scattered them.
MEGATRON_CORE_PIPELINE_MONTH = (2023, 4)


def pipeline_sends_scattered(engine: str | None, version: str | None) -> bool:
    """Whether each pipeline send is split over the tensor-parallel ranks (each sends 1/t over its own link and
    the receiver all-gathers over NVLink) without sequence parallelism:

    - DeepSpeed's PipelineEngine (Megatron-DeepSpeed, atorch's DeepSpeed 3D) partitions the stage's output and
      its gradient over the model-parallel group whenever that is larger than one (deepspeed/runtime/pipe/
      engine.py `PipelineEngine.__init__`: `self.is_pipe_partitioned = self.is_model_parallel`,
      `self.is_grad_partitioned = self.is_model_parallel`; `_exec_forward_pass` sends a `PartitionedTensor`,
      the receiver calls `.full()`);
    - Megatron-LM up to 2023-03 (`--scatter-gather-tensors-in-pipeline`, on by default in
      megatron/p2p_communication.py): a run that names a release dated before `MEGATRON_CORE_PIPELINE_MONTH`
      ('2021-04', '22.12') or a v1.x-v3.x tag. Not NeMo; no version: the current Megatron-Core, which does not."""
    from mlrig.estimators.engines import parse_version
    from mlrig.estimators.memory import megatron_release_month

    e = (engine or "").lower()
    if "deepspeed" in e:
        return True
    if not e.startswith("megatron") or not version:
        return False
    month = megatron_release_month(version.lower())
    if month is not None:
        return month < MEGATRON_CORE_PIPELINE_MONTH
    v = parse_version(version)
    return v is not None and v.release is not None and 1 <= v.release[0] <= 3


def pipeline_p2p_bytes(r: ResolvedPlan, tokens_per_micro: Num) -> Num:
    """Bytes of one point-to-point send between pipeline stages: one micro-batch's boundary activations (or
    their gradient), [s / cp, b, h] in the compute dtype, split over the tensor-parallel ranks only under
    sequence parallelism (megatron/core/pipeline_parallel/schedules.py `get_tensor_shapes`:
    effective_seq_length // cp, then // tp when `config.sequence_parallel`). Without it every tensor-parallel
    rank sends the whole tensor to its peer: Megatron-Core has no scatter-gather (the legacy
    `--scatter-gather-tensors-in-pipeline`, which sent 1/t and all-gathered over NVLink, Narayanan et al. 2021
    sec. 4.1, stopped being read when the schedule moved into megatron/core, 3c92fa9, 2023-03-23; first in
    the 23.04 release, 2023-05-11). DeepSpeed's pipeline engine, and a Megatron-LM run that names an older
    release, send 1/t as with sequence parallelism (`pipeline_sends_scattered`)."""
    hw, tr = r.plan.hardware, r.plan.training
    assert tr is not None
    el = 4.0 if r.precision.compute == "fp32" else 2.0
    w = r.plan.workload
    scattered = tr.sequence_parallel or pipeline_sends_scattered(w.engine, w.engine_version)
    split = hw.tensor_parallel if (scattered and hw.tensor_parallel > 1) else 1
    return tokens_per_micro / max(1, tr.context_parallel) * r.arch.hidden_size * el / split


def pipeline_p2p_s(r: ResolvedPlan, tokens_per_micro: Num, micro: Num, busy_s: Num) -> Num:
    """Seconds per step a pipeline stage spends on point-to-point sends that the computation does not hide.

    Each micro-batch crosses every stage boundary twice, its activations forward and their gradient
    backward: 2 m sends per stage and step, 2 m v with v model chunks per rank (the interleaved schedule),
    each `pipeline_p2p_bytes` over `pipeline_p2p_link`, plus the link's latency. Megatron-Core's
    megatron/core/pipeline_parallel/p2p_communication.py `_communicate` posts them with
    `torch.distributed.batch_isend_irecv`, waits on them and then calls `torch.cuda.synchronize()`
    (`batch_p2p_sync`): the non-interleaved 1F1B schedule overlaps none of it (Megatron-LM
    megatron/training/arguments.py sets `overlap_p2p_comm = False` without virtual stages), so every send sits
    on the schedule's critical path. The interleaved schedule defaults to `overlap_p2p_comm` (the flag is
    `--no-overlap-p2p-communication`): a chunk's sends run while the next chunk computes, and only what
    exceeds the computation (`busy_s`) is exposed. Returned for the steady state; the caller's bubble term
    adds the fill and drain."""
    hw, tr = r.plan.hardware, r.plan.training
    assert tr is not None
    pp, v = hw.pipeline_parallel, max(1, tr.virtual_pipeline_stages)
    if pp <= 1:
        return 0.0
    bw, lat_us = pipeline_p2p_link(r)
    send_s = pipeline_p2p_bytes(r, tokens_per_micro) / (bw * 1e9) + lat_us * 1e-6
    sends = 2 * micro * v
    if v == 1:
        return sends * send_s
    return vec.maximum(0.0, sends * send_s - busy_s)


# Transformer Engine's context parallelism, as Megatron-Core and NeMo run it (`--cp-comm-type p2p`, the default:
# Megatron-LM megatron/training/arguments.py, `default=["p2p"]`; the a2a / allgather / a2a+p2p types are not priced):
# transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py, `AttnFuncWithCPAndKVP2P`, at
# TE v2.4 (commit 3cd6870ceb809f173a31e3cac5034e56cf879156, 2025-06-03).
# GB200 / GB300 NVL72: the rack's 72 GPUs share one NVLink domain across its compute trays (the catalog entries'
# 'NVLink5, 1.8 TB/s total (NVL72 domain)', from nvidia.com/en-us/data-center/gb200-nvl72/), so a group of up to
# 72 of them talks over NVLink although the plan counts the 4 GPUs of a tray as a node.
NVL72_GPU_PREFIXES = ("gb200", "gb300")
NVL72_DOMAIN_GPUS = 72


def context_parallel_link(r: ResolvedPlan) -> tuple[float, float]:
    """(GB/s per direction, latency us) of one hop of the context-parallel ring. Megatron-Core orders its ranks
    tensor innermost, then context (megatron/core/parallel_state.py, `initialize_model_parallel(order=
    "tp-cp-ep-dp-pp")`), so a context-parallel group spans tp x cp adjacent GPUs: inside one node (or one GB200 /
    GB300 NVL72 NVLink domain, `NVL72_DOMAIN_GPUS`) its hops are the GPUs' own link (`_dp_link` on one node;
    on several, the card's link for a group of tp x cp, `interconnects.default_link`); beyond it some hop crosses
    nodes and every ring step waits for it: the GPU's share of the node's network adapters, as for the pipeline
    sends (`pipeline_p2p_link`)."""
    hw, tr = r.plan.hardware, r.plan.training
    assert tr is not None
    group = hw.tensor_parallel * tr.context_parallel
    if hw.nodes <= 1:
        return _dp_link(r)
    g = r.gpu
    nvl72 = g.id.lower().startswith(NVL72_GPU_PREFIXES) and group <= NVL72_DOMAIN_GPUS
    if group <= hw.count or nvl72:
        from mlrig.catalog.interconnects import default_link

        d = default_link(g.pcie_gen, g.nvlink_gb_s, group, 1, g.nvlink_max_gpus, g.pcie_lanes)
        return d.bandwidth_gb_s * (PCIE_COLLECTIVE_EFF if d.kind == "pcie" else 1.0), d.latency_us
    return pipeline_p2p_link(r)


def context_parallel_chunk_bytes(r: ResolvedPlan, tokens_per_micro: Num) -> Num:
    """Bytes of the K and V chunk one context-parallel rank sends per ring step and layer: its s / cp tokens of
    the micro-batch, K and V of the key/value heads its tensor-parallel rank holds (num_kv_heads / tp, at least
    one; MLA's up-projected K and V: num_heads x (qk + v head dims) / tp), in the compute dtype (2 bytes; 4 in
    fp32). TE keeps the exchange in bf16 under FP8 unless the inputs are already FP8 (`AttnFuncWithCPAndKVP2P.
    forward`: "KV exchange is in BF16/FP16, cast received KV in each step"): 2 bytes there too."""
    arch, hw, tr = r.arch, r.plan.hardware, r.plan.training
    assert tr is not None
    el = 4.0 if r.precision.compute == "fp32" else 2.0
    if arch.is_mla:
        qk_width, v_width = arch.attention_widths
        width = float(qk_width + v_width) / hw.tensor_parallel
    else:
        width = 2.0 * max(1.0, arch.kv_heads / hw.tensor_parallel) * arch.dim_head
    return tokens_per_micro / tr.context_parallel * width * el


def context_parallel_ring_s(r: ResolvedPlan, tokens_per_micro: Num, micro: Num, attn_fwd_s_per_token: Num,
                            recompute_attention: bool) -> Num:
    """Seconds per step a rank waits on Transformer Engine's context-parallel KV ring (`AttnFuncWithCPAndKVP2P`)
    beyond the attention it overlaps. Megatron-Core / NeMo engines only (`MEGATRON_CORE_ENGINES`); others'
    context parallelism (DeepSpeed-Ulysses all-to-all) is priced by `ulysses_all_to_all_s`.

    Forward, per layer and micro-batch: cp steps; step i computes the local queries against the K/V chunk
    received in step i-1 while it sends that chunk on and receives the next (`flash_attn_p2p_communicate`,
    posted before step i's attention, waited on at step i+1): cp - 1 sends of `context_parallel_chunk_bytes`,
    each hidden behind one step's attention. With the load-balanced causal split (2 cp chunks, rank r holding
    chunks r and 2cp - 1 - r) every step computes the same (s/cp)^2 / 2 pairs, so one step's attention is the
    rank's layer attention / cp. Backward: cp steps, each sending while its attention backward (twice the
    forward's FLOPs) runs and waiting before it accumulates dK/dV: the first sends K and V, the middle cp - 2
    send K, V and the dK, dV of the previous chunk together (one tensor twice the size), the last only dK, dV.
    A step exposes max(0, send - its attention); each send pays the link's latency once. Checkpointing that
    re-runs the attention (`recompute_attention`) runs the forward ring again. Summed over the rank's
    layers / pp and the step's `micro` micro-batches; `attn_fwd_s_per_token`: the whole model's attention forward
    seconds per token on one GPU (split here over tp x cp ranks and the layers)."""
    hw, tr, arch = r.plan.hardware, r.plan.training, r.arch
    assert tr is not None
    cp = tr.context_parallel
    if cp <= 1 or not _engine_is_megatron_core(r.plan.workload.engine):
        return 0.0
    bw, lat_us = context_parallel_link(r)
    chunk = context_parallel_chunk_bytes(r, tokens_per_micro)
    send_s = chunk / (bw * 1e9) + lat_us * 1e-6
    send2_s = 2.0 * chunk / (bw * 1e9) + lat_us * 1e-6
    # one ring step's attention on one rank and layer
    fwd_step_s = attn_fwd_s_per_token * tokens_per_micro / (hw.tensor_parallel * cp * arch.num_layers) / cp
    bwd_step_s = 2.0 * fwd_step_s
    fwd = (cp - 1) * vec.maximum(0.0, send_s - fwd_step_s)
    bwd = (2 * vec.maximum(0.0, send_s - bwd_step_s) + (cp - 2) * vec.maximum(0.0, send2_s - bwd_step_s))
    per_layer = fwd * (2.0 if recompute_attention else 1.0) + bwd
    return micro * arch.num_layers / hw.pipeline_parallel * per_layer


# Engines whose `training.context_parallel` is DeepSpeed-Ulysses sequence parallelism (Jacobs et al. 2023,
# arXiv 2309.14509): each attention layer's q, k and v are re-partitioned from a sequence shard to a head shard by
# one all-to-all each before the local attention, and its output back by a fourth (DeepSpeed
# deepspeed/sequence/layer.py `DistributedAttention.forward`, three `_SeqAllToAll.apply` on query, key, value and
# one on the context layer, at 25493c74; XTuner's sequence parallel, xtuner/parallel/sequence/attention.py
# `pre_process_for_sequence_parallel_attn` (q, k, v) and `post_process_for_sequence_parallel_attn` (output), at
# 040375e5). Megatron-Core / NeMo engines run Transformer Engine's K/V ring instead (`context_parallel_ring_s`).
ULYSSES_SP_ENGINES = ("deepspeed", "xtuner")


def ulysses_sp_engine(engine: str | None) -> bool:
    """Whether the engine's context parallelism is DeepSpeed-Ulysses (`ULYSSES_SP_ENGINES`)."""
    e = (engine or "").lower()
    return any(e.startswith(n) for n in ULYSSES_SP_ENGINES)


def ulysses_all_to_all_passes(checkpointing: str) -> int:
    """Sets of the four Ulysses all-to-alls (q, k, v, output) per layer and micro-batch: the forward's, their
    mirror images in backward (each `_SeqAllToAll`'s backward is an all-to-all of the same tensor's gradient
    with scatter and gather swapped), and the forward's again when full checkpointing re-runs each layer, the
    attention's all-to-alls included (they sit inside the checkpointed decoder layer)."""
    return 3 if checkpointing == "full" else 2


def ulysses_all_to_all_s(r: ResolvedPlan, tokens_per_micro: Num, micro: Num) -> Num:
    """Seconds per step one GPU spends in DeepSpeed-Ulysses' all-to-alls (`ULYSSES_SP_ENGINES`), not overlapped
    (DeepSpeed's `DistributedAttention` runs them on the compute stream unless given an `sp_stream`; XTuner's
    are synchronous). Jacobs et al. 2023 (arXiv 2309.14509, sec. 3.2): an all-to-all of an aggregate message M
    over P GPUs moves M / P per GPU, so the four of a layer move 4 M / P with M = N h (N tokens of the sequence);
    counted here, as this module's rings are, as the bytes that leave one GPU: of its N / P local tokens'
    tensor, the (P - 1) / P bound for the other ranks. Per token the four carry q (num_heads x head_dim), k
    and v (num_kv_heads x head_dim each) and the output (num_heads x head_dim), split over tensor-parallel
    ranks, in the compute dtype (2 B; 4 in fp32). Each all-to-all pays the link latency once per layer and
    micro-batch; `ulysses_all_to_all_passes` sets per layer; the link is the context-parallel group's
    (`context_parallel_link`: the GPUs' own link inside a node). `tokens_per_micro`: the micro-batch's tokens
    before the sequence split (seq x batch). 0 for other engines or P = 1."""
    hw, tr, arch = r.plan.hardware, r.plan.training, r.arch
    assert tr is not None
    p = tr.context_parallel
    if p <= 1 or not ulysses_sp_engine(r.plan.workload.engine):
        return 0.0
    el = 4.0 if r.precision.compute == "fp32" else 2.0
    width = (2.0 * arch.num_heads + 2.0 * arch.kv_heads) * arch.dim_head / hw.tensor_parallel
    bw, lat_us = context_parallel_link(r)
    per_set_s = (p - 1) / p * (tokens_per_micro / p) * width * el / (bw * 1e9) + 4.0 * lat_us * 1e-6
    return micro * ulysses_all_to_all_passes(tr.checkpointing) * arch.num_layers / hw.pipeline_parallel * per_set_s


def pipeline_bubble(stages: int, microbatches: Num, virtual: int = 1) -> Num:
    """Idle fraction of a GPipe/1F1B pipeline: (p-1)/(m+p-1) (Huang et al. 2019; Narayanan 2021). With the
    interleaved schedule each rank holds `virtual` = v model chunks and the bubble shrinks v-fold, to (p-1)/v
    micro-batch times against m of work (Narayanan et al. 2021, arXiv 2104.04473, sec. 2.2.2: bubble time
    fraction (p-1)/(v m)): ((p-1)/v) / (m + (p-1)/v). The extra point-to-point sends it costs (v-fold) are not
    priced, as the plain schedule's are not."""
    too_few = (microbatches < 1).any() if vec.is_array(microbatches) else microbatches < 1
    if stages < 1 or too_few or virtual < 1:
        raise MlrigError("pipeline stages, virtual stages and micro-batches must be >= 1")
    idle = (stages - 1) / virtual
    return idle / (microbatches + idle)
