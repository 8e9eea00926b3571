"""GPU memory: what a model needs per GPU for inference and training, and what fits.

`estimate_memory(arch, plan, gpu)` is a pure function of typed inputs. Figures are per GPU in
GiB (2^30 bytes). Each term's docstring names its source; the handful of constants fitted on
mlrig/data/calibration are in `Calibration` below, each with the rows that justify it
(see mlrig/validation/memory.py for the errors they give).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import BaseModel, Field

from mlrig import quant
from mlrig.catalog.gpus import GPU
from mlrig.catalog.models import ModelArch
from mlrig.errors import MlrigError
from mlrig.results import MemoryBreakdown
from mlrig.units import GiB
from mlrig.workload import Plan


@dataclass(frozen=True)
class Calibration:
    """Fitted or documented constants (bytes unless named otherwise)."""

    # CUDA context + cuBLAS/cuDNN handles on an NVIDIA GPU, outside PyTorch's allocator:
    # ~300-500 MiB on recent drivers (PyTorch "CUDA semantics" notes; nvidia-smi of an idle
    # torch process). Apple/Metal has no separate context reservation worth counting.
    cuda_context_bytes: float = 0.45 * GiB
    metal_context_bytes: float = 0.1 * GiB
    # vLLM V1 profile run: one layer's working set per scheduled token, in units of
    # (hidden + MLP intermediate) x 2 bytes. Fitted on the first-pipeline-stage rows (no logits):
    # m0125/m0128 (Llama-3.1-8B, 1.1 / 1.05 GiB at 8192 tokens) and m0134 (Qwen3-8B, 0.96 GiB).
    vllm_act_per_token_factor: float = 3.85
    # vLLM V1 sampler warm-up: fp32 [max_num_seqs, vocab] buffers (logits, probs, ...).
    # Fitted on TP1 rows m0107 / m0116 / m0131 / m0156 minus the per-token part above: 1.3-2.2,
    # median ~1.75 copies.
    vllm_logit_copies: float = 1.75
    # vLLM "non-torch" memory (NCCL / custom all-reduce buffers, cuBLAS workspaces) counted
    # against gpu_memory_utilization: 0.25 GiB alone (m0108/m0117/m0132), ~2.1 GiB with TP > 1
    # (m0111/m0114/m0120/m0123, vLLM v0.19).
    vllm_non_torch_bytes: float = 0.25 * GiB
    vllm_non_torch_tp_bytes: float = 2.1 * GiB
    # PyTorch caching-allocator slack on top of live tensors in training (reserved / allocated;
    # PyTorch "CUDA semantics - memory management"). Fitted on the M-hf-* rows, which report
    # nvidia-smi used memory (context + reserved): 1.10 left them 8-29 % low, 1.2 centres them.
    training_fragmentation: float = 1.20
    # Prefill activation working set in HF transformers, same units as the vLLM factor.
    transformers_act_per_token_factor: float = 3.85


CAL = Calibration()

VLLM_BLOCK_TOKENS = 16  # vLLM default --block-size (vllm/config CacheConfig)
# Serving engines that pre-allocate a paged KV pool (in VLLM_BLOCK_TOKENS blocks) after profiling.
PAGED_ENGINES = ("vllm", "sglang", "trt-llm", "tensorrt-llm", "trtllm", "lmdeploy", "tgi")
LLAMA_CPP_UBATCH = 512  # llama.cpp default n_ubatch (common/common.h)


class MemoryEstimate(BaseModel):
    breakdown: MemoryBreakdown
    kv_cache_capacity_tokens: int | None = None
    fits: bool
    engine: str
    batch_fits: bool = Field(True, description="the whole batch's KV at full context fits too")
    max_concurrent_sequences: float | None = None  # KV capacity / context, where it applies
    kv_bytes_per_token: float = 0.0  # per GPU
    weights_total_gib: float = 0.0  # whole model, all GPUs
    gpus: int = 1
    allocated_gib: float | None = Field(None, description="live tensors only (what torch.cuda peak "
                                        "statistics report): no CUDA context, no allocator slack")
    offload_fraction: float = Field(0.0, description="share of the weights (and KV) held and run on the "
                                    "CPU by choice (llama.cpp -ngl below the layer count)")


# ---------------------------------------------------------------------------------------------
# building blocks
# ---------------------------------------------------------------------------------------------

def _weight_parts_bytes(arch: ModelArch, precision: str | None) -> dict[str, float]:
    """Per-component weight bytes (see `mlrig.quant`); scaled to exact file bytes when known."""
    p = precision or quant.native_precision(arch)
    bits = quant.weight_bits_by_component(arch, p)
    parts = {k: v / 8 for k, v in bits.items()}
    exact = quant.weight_bytes(arch, p)
    total = sum(parts.values())
    if total > 0 and abs(exact - total) > 1:
        parts = {k: v * exact / total for k, v in parts.items()}
    return parts


def weights_per_gpu_bytes(arch: ModelArch, precision: str | None, tp: int, pp: int) -> float:
    """Weights on the busiest GPU. Megatron-style TP (Shoeybi et al. 2019) splits every block
    and the vocab-parallel embedding / head; PP splits layers, and the first stage also holds
    the embedding, the last the head (tied: a copy). Checked on vLLM rows m0124/m0127/m0133."""
    parts = _weight_parts_bytes(arch, precision)
    blocks = parts["linear"] + parts["norms"] + parts["other"]
    embed, head = parts["embedding"], parts["lm_head"]
    if arch.tie_word_embeddings and pp > 1:
        head = embed
    ends = embed + head if pp == 1 else max(embed, head)
    return blocks / (tp * pp) + ends / tp


def kv_bytes_per_token(arch: ModelArch, context_tokens: int, kv_precision: str, tp: int = 1,
                       pp: int = 1) -> float:
    """KV-cache bytes per token per GPU: `arch.kv_values_per_token` (GQA/MQA, MLA latent,
    sliding windows) x bytes per element. TP splits KV heads (Megatron / vLLM); when TP
    exceeds the KV heads each GPU keeps one replicated head; MLA's latent is replicated on
    every TP rank (vLLM MLA backend). PP splits layers."""
    values = arch.kv_values_per_token(max(1, context_tokens))
    share = 1.0 if arch.is_mla else math.ceil(arch.kv_heads / tp) / arch.kv_heads
    return values * share * quant.kv_bytes_per_element(kv_precision) / pp


def _mlp_width(arch: ModelArch) -> int:
    """MLP intermediate activations per token: dense width, or for MoE the routed experts a
    token visits (+ shared) plus the fused-MoE kernel's per-expert copies of the hidden state."""
    if arch.is_moe:
        inter = arch.moe_intermediate_size or arch.intermediate_size
        shared = arch.shared_expert_intermediate_size or (inter * arch.num_shared_experts)
        return arch.experts_per_token * (inter + arch.hidden_size) + shared
    return arch.intermediate_size


def _context_overhead(gpu: GPU) -> float:
    """Memory outside the framework's allocator: the CUDA context (or Metal's, on Apple)."""
    return CAL.metal_context_bytes if gpu.vendor.lower() == "apple" else CAL.cuda_context_bytes


def _kv_precision(plan: Plan) -> str:
    w = plan.workload
    return w.kv_cache_precision or quant.default_kv_precision(w.precision)


def _load_host_bytes(weights_per_gpu: float) -> float:
    """Host RAM to load: safetensors are memory-mapped and copied shard by shard (~5 GB files),
    so a GPU's weights pass through at most one shard at a time, plus ~1 GiB for the Python
    process and CUDA runtime (transformers / vLLM loaders). An estimate, not measured."""
    return min(weights_per_gpu, 5e9) + 1 * GiB


def _gib(x: float) -> float:
    """Bytes -> GiB, rounded to 4 decimals for reports."""
    return round(x / GiB, 4)


# ---------------------------------------------------------------------------------------------
# inference
# ---------------------------------------------------------------------------------------------

def _vllm_activation_bytes(arch: ModelArch, gpu: GPU, last_stage: bool) -> float:
    """vLLM V1 profile-run peak (gpu_worker.determine_available_memory): one forward of
    max_num_batched_tokens dummy tokens, plus the sampler warm-up on max_num_seqs rows.
    Defaults from vLLM engine/arg_utils `_set_default_args`: 8192 tokens / 1024 seqs on GPUs
    with >= 70 GiB, 2048 / 256 otherwise (OpenAI server)."""
    big = gpu.memory_gib >= 70
    tokens = 8192 if big else 2048
    seqs = 1024 if big else 256
    per_token = CAL.vllm_act_per_token_factor * (arch.hidden_size + _mlp_width(arch)) * 2
    act = tokens * per_token
    if last_stage:
        act += CAL.vllm_logit_copies * seqs * arch.vocab_size * 4
    return act


def _prefill_activation_bytes(arch: ModelArch, tokens: int, flash: bool, heads_per_gpu: float,
                              ctx: int) -> float:
    """Peak transient working set of one layer during a prefill of `tokens` tokens (eager
    frameworks free each layer's intermediates before the next): hidden states and the MLP
    intermediates, ~3.85 x (h + i) x 2 bytes per token (same physical factor as vLLM's), plus
    the attention score matrix when attention is not fused (heads x q x k x (2+4) bytes:
    bf16 scores and fp32 softmax, as HF eager attention does)."""
    act = CAL.transformers_act_per_token_factor * tokens * (arch.hidden_size + _mlp_width(arch)) * 2
    if not flash:
        act += heads_per_gpu * tokens * ctx * 6
    return act


def _inference(arch: ModelArch, plan: Plan, gpu: GPU) -> MemoryEstimate:
    w, hw = plan.workload, plan.hardware
    tp, pp = hw.tensor_parallel, hw.pipeline_parallel
    engine = (w.engine or "transformers").lower().replace("_", "-")
    notes: list[str] = []
    if w.engine is None:
        notes.append("no engine given: assumed HF transformers-like (weights + KV for the batch "
                     "+ prefill activations)")
    llama_cpp = engine in ("llama.cpp", "llamacpp", "llama-cpp", "ollama", "lm-studio", "lmstudio")
    cpu_share = 0.0
    if w.gpu_layers is not None and w.gpu_layers < arch.num_layers:
        if not llama_cpp:
            raise MlrigError("gpu_layers (-ngl) is llama.cpp's partial offload; add --engine llama.cpp, "
                             "or drop --gpu-layers")
        # llama.cpp -ngl N keeps N repeating layers' weights and KV on the GPU(s); the CPU holds and
        # runs the rest from host RAM (llama.cpp docs; the KV cache follows its layer by default).
        cpu_share = 1.0 - w.gpu_layers / arch.num_layers
        notes.append(f"-ngl {w.gpu_layers}: {w.gpu_layers} of {arch.num_layers} layers on the GPU; "
                     f"{cpu_share:.0%} of weights and KV in host RAM, run by the CPU")
    ctx = w.context
    batch = w.batch_size
    kv_prec = _kv_precision(plan)
    weights = weights_per_gpu_bytes(arch, w.precision, tp, pp)
    kv_tok = kv_bytes_per_token(arch, ctx, kv_prec, tp, pp)
    cap_gib = gpu.capacity_gib
    cap = cap_gib * GiB
    overhead = _context_overhead(gpu)
    heads_gpu = arch.num_heads / tp
    capacity_tokens: int | None = None
    concurrency: float | None = None

    if engine in PAGED_ENGINES:
        act = _vllm_activation_bytes(arch, gpu, last_stage=True)
        non_torch = CAL.vllm_non_torch_bytes + (CAL.vllm_non_torch_tp_bytes if tp > 1 else 0.0)
        if engine == "vllm":
            util = w.gpu_memory_utilization or 0.9  # vLLM default --gpu-memory-utilization
            reserved = util * cap
            pool = reserved - weights - act - non_torch
            notes.append(f"vLLM reserves gpu_memory_utilization={util:g} x {cap_gib:.2f} GiB; KV pool = "
                         "reservation - weights - profiled activation peak - non-torch memory")
        elif engine == "sglang":
            frac = w.gpu_memory_utilization or 0.88  # SGLang --mem-fraction-static default at TP 1 (server_args.py)
            reserved = frac * cap
            pool = reserved - weights - non_torch
            notes.append(f"SGLang mem_fraction_static={frac:g} holds weights + KV pool; "
                         "activations use the rest")
        else:
            frac = w.gpu_memory_utilization or 0.9  # TensorRT-LLM kv_cache_free_gpu_mem_fraction default
            free = cap - weights - act - overhead
            pool = frac * free
            reserved = weights + act + overhead + pool
            notes.append(f"TensorRT-LLM-like: KV pool = {frac:g} x memory free after weights and "
                         "activations (kv_cache_free_gpu_mem_fraction)")
        pool = max(pool, 0.0)
        block = VLLM_BLOCK_TOKENS * kv_tok
        capacity_tokens = int(pool // block) * VLLM_BLOCK_TOKENS if block > 0 else 0
        concurrency = capacity_tokens / ctx
        weights_ok = weights + act + non_torch <= reserved
        fits = weights_ok and capacity_tokens >= ctx
        batch_fits = fits and capacity_tokens >= ctx * batch
        if not weights_ok:
            notes.append("weights + activation peak exceed the reservation: the engine refuses to start")
        elif capacity_tokens < ctx:
            notes.append(f"KV pool holds {capacity_tokens} tokens, less than one {ctx}-token sequence")
        if fits and not batch_fits:
            notes.append(f"only ~{concurrency:.1f} sequences of {ctx} tokens fit at once; the rest queue")
        # The engine takes its whole reservation when it starts; when it cannot start, report what it
        # would need. Headroom is measured against the reservation: spare KV room beyond one sequence.
        fixed = weights + act + non_torch
        used = reserved if weights_ok else fixed
        headroom = reserved - fixed - ctx * kv_tok
        bd = MemoryBreakdown(per_gpu_gib=_gib(used), weights_gib=_gib(weights), kv_cache_gib=_gib(pool),
                             activations_gib=_gib(act), overhead_gib=_gib(non_torch),
                             host_ram_gib=_gib(_load_host_bytes(weights)),
                             gpu_capacity_gib=cap_gib, headroom_gib=_gib(headroom),
                             notes=notes)
        return MemoryEstimate(breakdown=bd, kv_cache_capacity_tokens=capacity_tokens, fits=fits,
                              engine=engine, batch_fits=batch_fits, max_concurrent_sequences=concurrency,
                              kv_bytes_per_token=kv_tok, weights_total_gib=_gib(quant.weight_bytes(arch, w.precision)),
                              gpus=tp * pp)

    if llama_cpp:
        # llama.cpp allocates the KV cache for all n_ctx tokens up front (f16 by default;
        # --parallel slots share n_ctx), and a compute buffer sized for one n_ubatch=512 micro-
        # batch: fp32 logits (n_ubatch x vocab x 4) + per-token intermediates; without flash
        # attention also the KQ matrix n_ubatch x n_ctx x heads x 4 (ggml graph, llama.cpp).
        kv = kv_tok * ctx * batch
        ub = min(LLAMA_CPP_UBATCH, max(1, w.prompt_tokens))
        act = ub * arch.vocab_size * 4 + ub * (arch.hidden_size * 4 + _mlp_width(arch) * 2) * 4
        if not w.flash_attention:
            act += ub * ctx * batch * heads_gpu * 4
        notes.append("llama.cpp: KV cache fully allocated for n_ctx = context x batch; "
                     f"KV {kv_prec}; compute buffer for n_ubatch={LLAMA_CPP_UBATCH}")
    else:
        if engine not in ("transformers", "hf", "pytorch", "torch", "mlx", "exllamav2", "exl2"):
            notes.append(f"engine {engine!r} not modelled specifically: treated like HF transformers")
        # HF generate: the KV cache grows to batch x context; the prefill of batch x prompt tokens
        # is the activation peak (logits only for the last position since transformers 4.45,
        # fp32: batch x vocab x 4).
        kv = kv_tok * ctx * batch
        act = _prefill_activation_bytes(arch, batch * max(1, w.prompt_tokens), w.flash_attention,
                                        heads_gpu * batch, max(1, w.prompt_tokens)) / pp
        act += batch * arch.vocab_size * 4 * 2  # fp32 logits and their softmax probabilities
    host = _load_host_bytes(weights)
    if cpu_share:  # per-GPU figures: the host holds the CPU share of every GPU's layers
        host += cpu_share * (weights + kv) * tp * pp
        weights, kv, kv_tok = (1.0 - cpu_share) * weights, (1.0 - cpu_share) * kv, (1.0 - cpu_share) * kv_tok
    used = weights + kv + act + overhead
    fits = used <= cap
    if kv_tok > 0:
        capacity_tokens = max(0, int((cap - weights - act - overhead) // kv_tok))
        concurrency = capacity_tokens / ctx
    bd = MemoryBreakdown(per_gpu_gib=_gib(used), weights_gib=_gib(weights), kv_cache_gib=_gib(kv),
                         activations_gib=_gib(act), overhead_gib=_gib(overhead), host_ram_gib=_gib(host),
                         gpu_capacity_gib=cap_gib, headroom_gib=round(cap_gib - _gib(used), 4), notes=notes)
    return MemoryEstimate(breakdown=bd, kv_cache_capacity_tokens=capacity_tokens, fits=fits, engine=engine,
                          batch_fits=fits, max_concurrent_sequences=concurrency, kv_bytes_per_token=kv_tok,
                          weights_total_gib=_gib(quant.weight_bytes(arch, w.precision)), gpus=tp * pp,
                          offload_fraction=cpu_share)


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OptimizerCost:
    """Bytes per trainable parameter beyond the 16-bit weights."""

    state_bytes: float  # optimizer states (incl. an fp32 master copy for mixed precision)
    grad_bytes: float  # gradient buffer
    name: str


def optimizer_cost(optimizer: str, precision: str) -> OptimizerCost:
    """Optimizer + gradient bytes per trainable parameter.

    Mixed-precision AdamW: fp32 master (4) + momentum (4) + variance (4) = 12 B of state and
    16-bit gradients (2), so 2 + 2 + 12 = 16 B/param with the 16-bit weights (Rajbhandari et al.
    2020, ZeRO, sec. 3.1). fp32 training: 4 B gradients, 8 B of moments. "-bf16" / "pure"
    variants (torchtune full_finetune in bf16) keep states in bf16 and no master copy: 4 B.
    8-bit AdamW (bitsandbytes, Dettmers et al. 2022): 2 x 1 B states + block-wise scales,
    plus the fp32 master in mixed precision. SGD with momentum: one state. Lion: one state.
    Adafactor (Shazeer & Stern 2018): factored second moment, ~O(rows + cols), taken as
    0.1 B/param, no momentum. "in-bwd" (optimizer step fused into backward, torchtune
    optimizer_in_bwd): gradients are freed per parameter, so no full gradient buffer.
    AMP precisions (`bf16-mixed`, `fp16-mixed`: fp32 weights under autocast, PyTorch Lightning
    "N-bit precision" docs) need no separate master copy, since the fp32 weights are it, but their
    gradients are fp32: 4 B grads + 8 B moments beside the 4 B weights (16 B/param, as above).
    """
    o = optimizer.strip().lower().replace("_", "-")
    known = _is_known(precision)
    amp = quant.master_in_weights(precision) if known else False
    fp32 = (quant.compute_dtype(precision) == "fp32" or amp) if known else False
    pure16 = ("bf16" in o or "pure" in o) and not fp32
    master = 0.0 if (fp32 or pure16) else 4.0
    state_el = 2.0 if pure16 else 4.0  # bytes per moment element
    if "8bit" in o or "8-bit" in o:
        states = 2 * 1.0 + 2 * 4 / 2048  # bnb block-wise: fp32 absmax per 2048 values
    elif "adafactor" in o:
        states = 0.1 * state_el
    elif "sgd" in o or "lion" in o:
        states = 1 * state_el
    elif "adam" in o or o in ("", "default"):
        states = 2 * state_el
    else:
        raise MlrigError(f"unknown optimizer {optimizer!r}; use adamw, adamw-bf16, adamw-8bit, "
                         "paged-adamw-8bit, sgd, lion or adafactor (suffix -in-bwd for a fused step)")
    grads = 4.0 if fp32 else 2.0
    if "in-bwd" in o or "inbwd" in o:
        grads = 0.0
    return OptimizerCost(state_bytes=master + states, grad_bytes=grads, name=o)


def _float_precision(precision: str) -> str:
    """The precision itself when it is a float format (fp32/bf16/fp16), else bf16: what full
    training or a LoRA base runs at when the given precision cannot be trained."""
    return precision if quant.compute_dtype(precision) in ("fp32", "bf16", "fp16") else "bf16"


def _is_known(precision: str) -> bool:
    try:
        quant.normalise_precision(precision)
    except MlrigError:
        return False
    return True


_LORA_SHAPES = ("q", "k", "v", "o", "gate", "up", "down")


def lora_params(arch: ModelArch, rank: int, targets: list[str]) -> int:
    """LoRA adapter parameters: r x (in + out) per adapted matrix (Hu et al. 2021), summed over
    layers; shapes from the architecture. Routed MoE experts are not adapted."""
    h, d = arch.hidden_size, arch.dim_head
    q_out, kv_out = arch.num_heads * d, arch.kv_heads * d
    inter = arch.intermediate_size
    dense_layers = arch.num_layers - arch.num_moe_layers
    shapes = {"q": (h, q_out), "k": (h, kv_out), "v": (h, kv_out), "o": (q_out, h)}
    per_layer = 0
    for t in targets:
        key = t.lower().removesuffix("_proj")
        if key in shapes:
            i, o = shapes[key]
            per_layer += rank * (i + o)
        elif key in ("gate", "up", "down"):
            continue
        else:
            raise MlrigError(f"unknown LoRA target {t!r}; use any of {', '.join(_LORA_SHAPES)}")
    total = per_layer * arch.num_layers
    mlp_targets = [t for t in targets if t.lower().removesuffix("_proj") in ("gate", "up", "down")]
    if arch.mlp == "plain":
        mlp_targets = [t for t in mlp_targets if t.lower().removesuffix("_proj") != "gate"]
    total += len(mlp_targets) * rank * (h + inter) * dense_layers
    return total


def layer_activation_bytes(arch: ModelArch, seq: int, micro_batch: int, flash: bool, tp: int = 1,
                           element_bytes: float = 2.0) -> float:
    """Activations one transformer layer keeps for backward, 16-bit (Korthikanti et al. 2022,
    "Reducing Activation Recomputation", sec. 4: s*b*h*(34 + 5*a*s/h) for a GPT layer with a 4h
    MLP and dropout). Generalised to modern blocks without dropout: attention input, Q, K, V
    (GQA widths), attention output 2*(3h + 2*kv_dim)*sb; gated MLP input + gate, up, act and
    product 2h + 8i (plain: 2h + 4i, GeLU input and output); two norm inputs 4h. Unfused
    attention adds the 5*a*s^2*b score / softmax / dropout tensors. TP splits the per-head and
    MLP parts (sequence parallel not assumed). fp32 training stores everything at 4 bytes
    (element_bytes=4 doubles the figure)."""
    h = arch.hidden_size
    kvd = arch.kv_heads * arch.dim_head
    i = _mlp_width(arch)
    mlp = 2 * h + (8 * i if arch.mlp == "gated" else 4 * i)
    attn = 2 * (3 * h + 2 * kvd)
    per_token = 4 * h + (attn + mlp) / tp
    act = seq * micro_batch * per_token
    if not flash:
        act += 5 * (arch.num_heads / tp) * seq * seq * micro_batch
    return act * element_bytes / 2


def _training(arch: ModelArch, plan: Plan, gpu: GPU) -> MemoryEstimate:
    w, hw = plan.workload, plan.hardware
    t = plan.training
    assert t is not None
    tp, pp, dp = hw.tensor_parallel, hw.pipeline_parallel, hw.data_parallel
    notes: list[str] = []
    precision = w.precision
    method = t.method
    opt = optimizer_cost(t.optimizer, precision)
    seq = t.seq_len or w.context
    b = w.batch_size
    n_total = arch.total_params
    shard = tp * pp

    if method == "full":
        base_prec = _float_precision(precision)
        if base_prec != precision:
            notes.append(f"full training of {precision} weights is not possible; assumed bf16 weights")
        weights = quant.weight_bytes(arch, base_prec) / shard
        trainable = n_total / shard
    else:
        base_prec = "nf4" if method == "qlora" else _float_precision(precision)
        weights = weights_per_gpu_bytes(arch, base_prec, tp, pp)
        trainable = lora_params(arch, t.lora_rank, t.lora_targets) / shard
        # adapters in 16-bit (torchtune; PEFT keeps fp32 masters: state); fp32 under AMP (bf16-mixed)
        weights += trainable * (4 if quant.master_in_weights(base_prec) else 2)
        notes.append(f"{method}: base frozen at {base_prec}, rank-{t.lora_rank} adapters on "
                     f"{','.join(t.lora_targets)} ({trainable * shard / 1e6:.1f} M params)")

    grads = trainable * opt.grad_bytes
    optim = trainable * opt.state_bytes
    # ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states, 2 also gradients,
    # 3 (= FSDP full shard) also parameters, over the data-parallel group.
    z = t.zero_stage
    if z >= 1:
        optim /= dp
    if z >= 2:
        grads /= dp
    if z >= 3:
        weights /= dp
    host = 0.0
    if t.offload in ("optimizer", "params"):
        host += optim * (dp if z >= 1 else 1)
        optim = 0.0
        if method == "full":  # ZeRO-Offload keeps fp32 gradients with the optimizer on the host
            host += grads * (dp if z >= 2 else 1) * 2
            if z >= 2:
                grads = 0.0
        notes.append("optimizer states (and fp32 master) offloaded to host RAM (ZeRO-Offload)")
    if t.offload == "params":
        host += weights * (dp if z >= 3 else 1)
        # ZeRO-Infinity / FSDP CPU offload: one or two layers' parameters are resident at a time
        weights = 2 * weights / max(1, arch.num_layers // pp)
        notes.append("parameters offloaded to host RAM; a two-layer working set stays on the GPU")

    layers = max(1, arch.total_layers // pp)
    el = 4.0 if quant.compute_dtype(base_prec) == "fp32" else 2.0
    layer_act = layer_activation_bytes(arch, seq, b, w.flash_attention, tp, el)
    # Full recomputation keeps each layer's input (2sbh) plus one layer's working set
    # (Chen et al. 2016; Korthikanti et al. 2022 sec. 4.1); without it every layer's activations.
    ckpt = layers * el * seq * b * arch.hidden_size + layer_act
    act = ckpt if t.gradient_checkpointing else layers * layer_act
    # PP with 1F1B keeps up to `pp` micro-batches in flight on the first stage (Narayanan 2021);
    # the cap at 4 is an assumption (finetune_memory.csv has no pipeline-parallel rows to fit it).
    if pp > 1:
        act *= min(pp, 4)
    logits = 0.0
    if arch.kind != "encoder":
        # causal-LM loss: logits upcast to fp32 and their gradient (b x s x V x 4 B each)
        logits = b * seq * arch.vocab_size * 4 * 2 / tp
    act += logits
    overhead = _context_overhead(gpu)
    live = weights + grads + optim + act
    frag = CAL.training_fragmentation
    used = live * frag + overhead
    cap_gib = gpu.capacity_gib
    host += _load_host_bytes(weights)
    notes.append(f"optimizer {opt.name}: {opt.state_bytes:g} B state + {opt.grad_bytes:g} B grad per "
                 f"trainable param; allocator fragmentation x{frag:g}")
    bd = MemoryBreakdown(per_gpu_gib=_gib(used), weights_gib=_gib(weights), kv_cache_gib=0.0,
                         activations_gib=_gib(act), gradients_gib=_gib(grads), optimizer_gib=_gib(optim),
                         overhead_gib=_gib(overhead + live * (frag - 1)), host_ram_gib=_gib(host),
                         gpu_capacity_gib=cap_gib, headroom_gib=round(cap_gib - _gib(used), 4), notes=notes)
    if "paged" in opt.name and used > cap_gib * GiB and optim > 0:
        # bitsandbytes paged optimizers live in CUDA unified memory and are evicted to host RAM
        # under memory pressure (Dettmers et al. 2023, QLoRA, sec. 3 "Paged Optimizers").
        spill = min(optim, (used - cap_gib * GiB) / frag)
        optim -= spill
        host += spill
        live -= spill
        used = live * frag + overhead
        notes.append(f"paged optimizer: {_gib(spill):.1f} GiB of optimizer state paged to host RAM (slower)")
        bd.optimizer_gib, bd.per_gpu_gib, bd.host_ram_gib = _gib(optim), _gib(used), _gib(host)
        bd.headroom_gib = round(cap_gib - _gib(used), 4)
    fits = used <= cap_gib * GiB + 1
    if t.offload != "none" and hw.host_ram_gib is not None and host > hw.host_ram_gib * GiB:
        fits = False
        notes.append(f"offload needs {_gib(host):.1f} GiB of host RAM; only {hw.host_ram_gib:g} GiB given")
    return MemoryEstimate(breakdown=bd, fits=fits, engine="training", batch_fits=fits, allocated_gib=_gib(live),
                          weights_total_gib=_gib(quant.weight_bytes(arch, base_prec)), gpus=hw.total_gpus)


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------

def estimate_memory(arch: ModelArch, plan: Plan, gpu: GPU) -> MemoryEstimate:
    """Per-GPU memory for `plan` on `gpu`: inference (engine-specific) or training."""
    quant.normalise_precision(plan.workload.precision)
    if plan.workload.kv_cache_precision is not None:
        quant.kv_bytes_per_element(plan.workload.kv_cache_precision)
    if plan.workload.task == "inference":
        return _inference(arch, plan, gpu)
    return _training(arch, plan, gpu)


def _with(plan: Plan, **changes: object) -> Plan:
    """Copy of `plan` with workload/hardware/training fields changed (validated)."""
    data = plan.model_dump()
    for key, value in changes.items():
        section, field = key.split("__")
        if data.get(section) is None:
            data[section] = {}
        data[section][field] = value
    return Plan.model_validate(data)


def _ok(arch: ModelArch, plan: Plan, gpu: GPU) -> bool:
    e = estimate_memory(arch, plan, gpu)
    return e.fits and e.batch_fits


def largest_true(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """Largest n in [lo, hi] with pred(n) true, for a pred true up to some n and false after
    (bisection); lo - 1 if none."""
    if not pred(lo):
        return lo - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def max_batch_size(arch: ModelArch, plan: Plan, gpu: GPU, limit: int = 1_000_000) -> int:
    """Largest batch (concurrent sequences / micro-batch) that fits; 0 if none."""
    return max(0, largest_true(lambda n: _ok(arch, _with(plan, workload__batch_size=n), gpu), 1, limit))


def max_context_tokens(arch: ModelArch, plan: Plan, gpu: GPU, limit: int = 10_000_000) -> int:
    """Longest context (tokens per sequence) that fits; 0 if none. For training, seq_len."""
    if plan.workload.task != "inference" and plan.training is not None:
        def fits_t(n: int) -> bool:
            return _ok(arch, _with(plan, training__seq_len=n, workload__context_tokens=n), gpu)
        return max(0, largest_true(fits_t, 1, limit))

    def fits(n: int) -> bool:
        return _ok(arch, _with(plan, workload__context_tokens=n,
                               workload__prompt_tokens=min(plan.workload.prompt_tokens, n)), gpu)
    return max(0, largest_true(fits, 1, limit))


def min_gpus(arch: ModelArch, plan: Plan, gpu: GPU, max_gpus: int = 64) -> int | None:
    """Fewest GPUs of this kind that fit: tensor parallel for inference (powers of two up to
    8, then pipeline stages), ZeRO-3 data parallel for training. None if max_gpus is not enough."""
    counts = [n for n in (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512) if n <= max_gpus]
    for n in counts:
        if plan.workload.task == "inference":
            tp = min(n, 8)
            p = _with(plan, hardware__count=n, hardware__nodes=1, hardware__tensor_parallel=tp,
                      hardware__pipeline_parallel=n // tp)
        else:
            zero = 3 if n > 1 else (plan.training.zero_stage if plan.training else 0)
            p = _with(plan, hardware__count=n, hardware__nodes=1, hardware__tensor_parallel=1,
                      hardware__pipeline_parallel=1, training__zero_stage=zero)
        if _ok(arch, p, gpu):
            return n
    return None


__all__ = ["CAL", "Calibration", "MemoryEstimate", "estimate_memory", "kv_bytes_per_token", "lora_params",
           "layer_activation_bytes", "max_batch_size", "max_context_tokens", "min_gpus", "optimizer_cost",
           "weights_per_gpu_bytes"]
