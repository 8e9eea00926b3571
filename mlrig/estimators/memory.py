"""GPU memory: what a model needs per GPU for inference and training, and what fits.

`estimate_memory(resolved)` is a pure function of a resolved plan (`mlrig.estimators.resolved`). Figures are per GPU in
GiB (2^30 bytes). Each term's docstring names its source; the handful of constants fitted on
mlrig/data/calibration are in `Calibration` below, each with the rows that justify it
(see mlrig/validation/memory.py for the errors they give).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, Field

from mlrig import quant, vec
from mlrig.catalog.gpus import GPU
from mlrig.catalog.models import ModelArch
from mlrig.errors import MlrigError
from mlrig.estimators.engines import (
    BIG_GPU_GIB,
    CUDA_DRIVER_RESERVED_GIB,
    LMDEPLOY_CACHE_MAX_ENTRY_COUNT_FREE,
    VLLM_SAMPLER_BYTES_PER_LOGIT,
    VLLM_TRITON_SCRATCH_ROWS,
    before,
    bnb_keeps_4bit_input,
    engine_family_by_name,
    litgpt_era,
    lmdeploy_kv_of_free_memory,
    lmdeploy_pytorch_engine,
    parse_version,
    runs_llama_cpp,
    sglang_cuda_graph_max_bs,
    sglang_default_chunked_prefill,
    sglang_mem_fraction_static,
    sglang_prefill_graph_reserve_mib,
    transformers_full_logits,
    transformers_legacy_cache,
    trtllm_default_max_batch_size,
    trtllm_engine_max_num_tokens,
    trtllm_tensorrt_engine,
    vllm_big_gpu_defaults,
    vllm_default_gpu_memory_utilization,
    vllm_graphs_in_profile,
    vllm_sampler_path,
    vllm_v1,
)
from mlrig.estimators.hardware import graph_replay_missing
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.quant import Precision
from mlrig.results import MemoryBreakdown
from mlrig.units import GiB, MiB
from mlrig.vec import Num
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
    # fp32 [max_num_seqs, vocab] copies added to the forward's working set: the additive form first
    # fitted on the vLLM 0.19 TP1 rows (m0107 / m0116 / m0131 / m0156: 1.3-2.2, median ~1.75). V1 now
    # takes the larger of the forward and its sampler warm-up (`_vllm_activation_bytes`), and so does V0, whose
    # profile run sorts its sampler's logits too; this stays for the other paged engines, which take vLLM's
    # profile as a proxy.
    vllm_logit_copies: float = 1.75
    # vLLM "non-torch" memory (memory_profiling's non_torch_increase: NCCL / custom all-reduce buffers,
    # cuBLAS workspaces, CUDA-graph registrations) counted against gpu_memory_utilization
    # (`_vllm_non_torch_bytes`). In 0.18-0.26 CUDA graphs are captured inside the profile
    # (engines.vllm_graphs_in_profile): 0.25 GiB alone (m0108/m0117/m0132, vLLM 0.19), 2.06-2.13 GiB in
    # all with TP 2-4 (m0111/m0114/m0120/m0123), so 1.85 GiB on top.
    vllm_non_torch_bytes: float = 0.25 * GiB
    vllm_non_torch_tp_bytes: float = 1.85 * GiB
    # Before 0.18 and from 0.27 (graphs captured after the profile): 0.13-0.14 GiB alone (m0059/m0064/
    # m0074/m0079/m0084/m0094, vLLM 0.11.0), 0.54-0.55 GiB with TP 2 (m0069/m0089): 0.41 GiB on top.
    vllm_non_torch_pre_graph_bytes: float = 0.135 * GiB
    vllm_non_torch_pre_graph_tp_bytes: float = 0.41 * GiB
    # The other paged engines (SGLang, TensorRT-LLM, LMDeploy, TGI) take vLLM's non-torch memory as a proxy:
    # 0.25 GiB, plus 2.1 GiB with TP > 1 (the 0.19 rows' total, added on top when first fitted). Kept as it
    # was for them; not re-fitted on their own rows.
    paged_proxy_non_torch_tp_bytes: float = 2.1 * GiB
    # PyTorch caching-allocator slack (reserved / allocated; PyTorch "CUDA semantics - memory
    # management") on the tensors allocated and freed every step (activations, logits, gradients,
    # optimizer temporaries). Weights and optimizer states are allocated once and packed tightly:
    # issue 13's trace of an 8B full fine-tune (dominated by them) found reserved / allocated = 1.017
    # (docs/trace-findings.md); `training_static_slack` 1.05 leaves room for the 2 MiB block rounding
    # of many small tensors (bitsandbytes quant states, LoRA adapters). The per-step factor is fitted on
    # rows that report the reservation: PEFTMC-0002..0024 (HF PEFT LoRA on Llama-3.2-3B, torch
    # max_memory_reserved, activation-dominated: 1.07-1.18 x allocated overall: +8 %/-3 % here) and the
    # M-hf-* BERT rows (nvidia-smi), which stay 13-30 % low (torch 1.x kept gradients allocated
    # between steps, zero_grad(set_to_none=False); not modelled).
    training_fragmentation: float = 1.25
    training_static_slack: float = 1.05
    # ms-swift 1.x (`MS_SWIFT_ENGINES`): allocator slack on the sequence-sized per-step tensors (saved
    # activations, the loss's logits, the recomputed layer). Fitted on its benchmark's rows, SWIFTBENCH-0001..
    # 0056 (Qwen-1 1.8B/7B/14B, ChatGLM3-6B, Yi-6B/34B, Baichuan2-7B/13B, LoRA / QLoRA / full at max_length
    # 512-8,192, torch 2.1.1, torch.cuda.max_memory_reserved): measured minus the weights x1.05, read against
    # mlrig's live sequence-sized tensors, is mostly 1.2-4.2x them on the 45 LoRA rows (median 2.9; Qwen-1 falls
    # from 2.9-3.9x at 1,024-2,048 to 1.9-2.3x at 8,192; ChatGLM3-6B at 8,192 7x; Yi-34B, near the card, 1.0-1.8x),
    # while the full fine-tuning rows of Qwen-7B (SWIFTBENCH-0045..0047, fixed-size gradients and AdamW
    # temporaries dominating) read 0.98-1.01x the live memory. 2.7 gives the smallest median error over the 56
    # rows (4.9%; LoRA median +0.3%, p90 22%).
    ms_swift_fragmentation: float = 2.7
    # NCCL communicator buffers outside PyTorch's allocator in multi-GPU training: NCCL_BUFFSIZE
    # (4 MiB default) per channel per peer for each protocol (NCCL "Environment Variables" docs),
    # and PyTorch process groups open several communicators; an order-of-magnitude estimate of a few
    # hundred MiB, not fitted (no row separates it).
    nccl_bytes: float = 0.5 * GiB
    # Prefill activation working set in HF transformers, same units as the vLLM factor.
    transformers_act_per_token_factor: float = 3.85


CAL = Calibration()

MLX_PREFILL_STEP = 2048  # mlx_lm.generate.generate_step(prefill_step_size=2048)
VLLM_BLOCK_TOKENS = 16  # vLLM default --block-size (vllm/config CacheConfig)
# Serving engines that pre-allocate a paged KV pool (in VLLM_BLOCK_TOKENS blocks) after profiling.
PAGED_ENGINES = ("vllm", "sglang", "trt-llm", "tensorrt-llm", "trtllm", "lmdeploy", "tgi")
LLAMA_CPP_UBATCH = 512  # llama.cpp default n_ubatch (common/common.h)
# llama.cpp pads the KV cache's cells to a multiple of 256 with flash attention and 32 without
# (src/llama-kv-cache.cpp `llama_kv_cache_get_padding`, b3xxx-b4xxx: "the FA kernels require padding to avoid
# extra runtime boundary checks"; llama_new_context_with_model: n_ctx = GGML_PAD(n_ctx, padding)).
LLAMA_CPP_KV_PAD_FA = 256
LLAMA_CPP_KV_PAD = 32


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

def weights_per_gpu_bytes(arch: ModelArch, precision: str | Precision | None, tp: int, pp: int) -> float:
    """Weights on the busiest GPU (`split_weights` of the model's per-component bytes)."""
    return split_weights(arch, quant.weight_bytes_by_component(arch, precision or quant.native_precision(arch))[1],
                         tp, pp)


def split_weights(arch: ModelArch, parts: Mapping[str, float], tp: int, pp: int) -> float:
    """Weights on the busiest GPU, from the whole model's bytes per component (`quant.weight_bytes_by_component`).
    Megatron-style TP (Shoeybi et al. 2019) splits every block and the vocab-parallel embedding / head;
    PP splits layers, and the first stage also holds the embedding, the last the head (tied: a copy).
    Checked on vLLM rows m0124/m0127/m0133."""
    blocks = parts["linear"] + parts["norms"] + parts["other"]
    embed, head = parts["embedding"], parts["lm_head"]
    if arch.tie_word_embeddings and pp > 1:
        head = embed
    ends = embed + head if pp == 1 else max(embed, head)
    return blocks / (tp * pp) + ends / tp


def pipeline_in_flight_microbatches(stages: int, microbatches: Num, virtual: int = 1, rank: int = 0) -> Num:
    """Micro-batches whose activations pipeline rank `rank` (0 = first stage) holds at once under Megatron-LM's
    1F1B schedules, in units of one micro-batch through the whole stage (megatron/core/pipeline_parallel/
    schedules.py):

    - `forward_backward_pipelining_without_interleaving`: num_warmup_microbatches = min(p - rank - 1, m) forward
      passes, then each steady-state iteration runs one more forward before its backward: p - rank held, at most
      m (Narayanan et al. 2021, sec. 2.2.1: "the first stage holds p micro-batches");
    - `forward_backward_pipelining_with_interleaving` (v model chunks per rank, each layers / (p v)): warm-up of
      (p - rank - 1) x 2 + (v - 1) x p chunk passes, capped at m v (all of them when m = p), plus the one
      steady-state forward: (2 (p - rank - 1) + (v - 1) p + 1) / v stage-micro-batches; rank 0 holds
      p + (p - 1) / v, the p (1 + (p - 1) / (p v)) of Korthikanti et al.'s interleaved schedule.

    torch.distributed.pipelining's Schedule1F1B (torch/distributed/pipelining/schedules.py: warm-up
    min(n_microbatches, num_stages - stage_index) forwards) holds the same p - rank. One stage: 1. xtuner's
    Megatron MoE guide states the same from its runs (docs/en/benchmark/megatron_moe_benchmark.md: "for ordinary
    1F1B without vpp, peak activation memory is pp*M, and if vpp is enabled ... (vpp+1)/vpp * pp * M"; its
    pp8 run "will OOM" once vpp is enabled). The cap at 4 micro-batches this replaced had no source."""
    if stages <= 1:
        return 1.0
    if virtual <= 1:
        held: float = stages - rank
    else:
        held = (2 * (stages - rank - 1) + (virtual - 1) * stages + 1) / virtual
    return vec.minimum(microbatches, held)


def pipeline_stage_share(arch: ModelArch, pp: int) -> float:
    """Share of the model's parameters on the busiest pipeline stage: ceil(layers / pp) transformer
    layers plus the embedding (first stage) or the output head (last stage), the larger of the two (a
    tied head is a second copy of the embedding on the last stage). Megatron-LM / PTD-P place the input
    embedding on the first stage and the output layer on the last (Narayanan et al. 2021, sec. 2.2 and 3;
    Megatron-Core `pre_process` / `post_process`), and InternEvo's `partition_uniform` gives the first
    stages the layers left over when pp does not divide them (internlm/solver/pipeline_utils.py). A
    stage's weights, gradients and optimizer states follow its parameters. 1.0 without pipelining."""
    if pp <= 1:
        return 1.0
    pb = arch.params()
    total = float(pb.total)
    if total <= 0:
        return 1.0 / pp
    ends = max(pb.embedding, pb.lm_head)
    blocks = total - pb.embedding - pb.lm_head
    layers = max(1, arch.total_layers)
    return min(1.0, (blocks * math.ceil(layers / pp) / layers + ends) / total)


def kv_bytes_per_token(arch: ModelArch, context_tokens: Num, kv_precision: str, tp: int = 1,
                       pp: int = 1) -> Num:
    """KV-cache bytes per token per GPU: `arch.kv_values_per_token` (GQA/MQA, MLA latent,
    sliding windows) x bytes per element. TP splits KV heads (Megatron / vLLM); when TP
    exceeds the KV heads each GPU keeps one replicated head; MLA's latent is replicated on
    every TP rank (vLLM MLA backend). PP splits layers."""
    return _kv_token_bytes(arch, context_tokens, quant.kv_bytes_per_element(kv_precision), tp, pp)


def _kv_token_bytes(arch: ModelArch, context_tokens: Num, bytes_per_element: float, tp: int, pp: int) -> Num:
    """`kv_bytes_per_token` given the cache dtype's bytes per element (a resolved plan's
    `kv_bytes_per_element`, read once)."""
    values = arch.kv_values_per_token(vec.maximum(1, context_tokens))
    share = 1.0 if arch.is_mla else math.ceil(arch.kv_heads / tp) / arch.kv_heads
    return values * share * bytes_per_element / pp


def _mlp_width(arch: ModelArch, tp: int = 1) -> float:
    """MLP intermediate activations per token: dense width, or for MoE the routed experts a
    token visits (+ shared) plus the fused-MoE kernel's per-expert copies of the hidden state.
    With `tp`, on one GPU of a tensor-parallel group: the MLP's gate/up projection is column-parallel and its
    down projection row-parallel (Megatron-LM, arXiv 1909.08053 sec. 3; vLLM
    vllm/model_executor/models/llama.py `LlamaMLP`: MergedColumnParallelLinear -> SiluAndMul ->
    RowParallelLinear), so each GPU holds intermediate / tp of every token's intermediate activations; for MoE
    the experts' slices likewise (fused_moe's intermediate caches are [tokens, top_k, 2 x intermediate / tp]),
    while the per-expert copies of the hidden state stay whole."""
    if arch.is_moe:
        inter = arch.moe_intermediate_size or arch.intermediate_size
        shared = arch.shared_expert_intermediate_size or (inter * arch.num_shared_experts)
        return _routed_expert_width(arch, tp) + shared / tp
    return arch.intermediate_size / tp


def _context_overhead(gpu: GPU) -> float:
    """Memory outside the framework's allocator: the CUDA context (or Metal's, on Apple)."""
    return CAL.metal_context_bytes if gpu.vendor.lower() == "apple" else CAL.cuda_context_bytes


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

def _vllm_v0_profile_tokens(plan: Plan, gpu: GPU, arch: ModelArch, context: Num) -> Num:
    """Tokens of vLLM V0's profile forward (worker/model_runner.py `profile_run`: `_dummy_run(max_num_batched_tokens,
    max_num_seqs)`, 0.5-0.10) where the plan gives no max_num_batched_tokens: V0's SchedulerConfig default
    (vllm/config.py, read in the 0.9.1 sdist): the chunked-prefill budget where V0 chunks (the plan's
    `enable_chunked_prefill`, or by default above a 32K max_model_len: `engines.vllm_v0_default_budget`), else
    max(max_model_len, 2048) "so that we don't reject sequences on account of a short max_num_batched_tokens".
    Where the plan gives no max_model_len, vLLM's default is the model's own maximum (`_get_and_verify_max_len` over
    the config's max_position_embeddings; `arch.max_position_embeddings`); only where the model states none, the
    plan's `context`. A plan's own max_model_len keeps max(max_model_len, 2048) whether or not V0 would chunk at it
    (as before: DSTACKCMP's 405B runs at --max-model-len 91,680 were fitted so; vLLM's benchmark_throughput.py, which
    ran them, passes enable_chunked_prefill=False unless told on builds before PR #9529: the MI300X rows' plans say
    so since 2026-11-25; the H100 rows' nightly is after it and they are left unset, see their notes). Until
    2026-11-25 the plan's context stood in for an unset max_model_len: Mistral-7B-Instruct
    v0.3 (32,768 positions) on vLLM 0.9.1 V0 with no --max-model-len (LIVINFLYVLLM-0001..0043, fit) was profiled at
    2,048 tokens, not 32,768 (forward ~4.3 GiB at `vllm_act_per_token_factor`), and its KV pool came out 21.5 GiB,
    176k tokens: 203 sequences at 16 req/s where its median TPOT x throughput (71.2 ms x 2,355 tok/s) says ~167."""
    from mlrig.estimators.engines import vllm_prefill_budget

    w = plan.workload
    if w.max_model_len:
        return max(w.max_model_len, 2048)
    model_max = arch.max_position_embeddings or None
    budget = vllm_prefill_budget(plan, gpu, False, model_max, arch)
    if budget is not None:
        return budget
    if model_max:
        return max(model_max, 2048)
    return vec.maximum(context, 2048)


def _vllm_activation_bytes(arch: ModelArch, gpu: GPU, last_stage: bool, plan: Plan | None = None,
                           context: Num = None, tp: int = 1) -> Num:
    """vLLM V1 profile-run peak (gpu_worker.determine_available_memory): one forward of
    max_num_batched_tokens dummy tokens, then the sampler warm-up on max_num_seqs rows (the larger of the two;
    V0's profile run samples its dummy prompts with top-k / top-p, the same sort: `_vllm_sampler_warmup_bytes`).
    Defaults from vLLM engine/arg_utils `_set_default_args`: 8192 tokens / 1024 seqs on GPUs
    with >= 70 GiB other than the A100, 2048 / 256 otherwise (OpenAI server; engines.vllm_big_gpu_defaults).
    vLLM V0 (< 0.8, mlrig.estimators.engines): chunked prefill off by default, so
    max_num_batched_tokens = max(max_model_len, 2048) (V0 SchedulerConfig) and the profile run
    (vllm/worker/model_runner.py `GPUModelRunnerBase.profile_run`, 0.6.x) runs one prefill of max_num_seqs
    dummy prompts that together hold max_num_batched_tokens tokens, sampled with top-k/top-p on each prompt's
    last position: a long max_model_len on a 24 GB card leaves a much smaller KV pool (the tokens, with an unset
    max_model_len or V0's long-context chunking: `_vllm_v0_profile_tokens`). The plan's
    max_num_batched_tokens / max_num_seqs override both.
    `context`: the context the plan holds (its own, unless a sweep passes an array of them).
    With tensor parallelism each GPU holds 1/tp of the MLP intermediates (`_mlp_width`); the hidden
    states and residual stay whole on every GPU. The factor was fitted at TP 1, where the two forms agree. This
    matters most for V0 at long max_model_len: Llama-3.1-405B FP8 at max_model_len 91,680 on 8x H100
    (DSTACKCMP-0001..0017, vLLM 0.6.3, which started) profiles 91,680 tokens, ~15 GiB per GPU with the MLP
    sharded, ~46 GiB if it were not (more than the 0.9 x 80 GiB reservation leaves beside the weights).
    MoE: the routed experts' intermediates (`_routed_expert_width`) grow only up to one fused-MoE chunk
    (`_vllm_fused_moe_chunk_tokens`, 32,768 tokens from 0.6.0); the hidden states, attention and shared experts
    grow with every token. DeepSeek-R1 FP8 at TP 8 and its default max_model_len 163,840 on a V0 that leaves MLA
    models out of the long-context chunked-prefill default (0.8.0 engine/arg_utils.py `_set_default_args_v0`:
    "Chunked prefill not supported for Multimodal or MLA in V0", so max_num_batched_tokens = max(max_model_len,
    2048)) profiles 163,840 tokens: 22.7 GiB with the chunk, 78.5 GiB if the experts' caches grew with every
    token (the dstack H200 server, DSTACKR1-0088..0132, a 0.7.4 nightly with MLA chunked prefill, started).
    (The 0.7.1-0.7.3 releases differ: arg_utils turns chunked prefill on for > 32K first, budget 2,048, and
    VllmConfig then forces it off for MLA without resetting the budget, so the profile covers 2,048 tokens
    and longer prompts are refused; a plan states that with max_num_batched_tokens 2048.)"""
    # the other paged engines (plan None) take vLLM's profile as a proxy at its memory-size rule
    big = vllm_big_gpu_defaults(gpu) if plan is not None else gpu.memory_gib >= BIG_GPU_GIB
    tokens: Num = 8192 if big else 2048
    seqs = 1024 if big else 256
    v1 = plan is not None and vllm_v1(plan.workload.engine_version)
    if plan is not None:
        w = plan.workload
        if not v1:
            tokens = _vllm_v0_profile_tokens(plan, gpu, arch, w.context if context is None else context)
            seqs = 256
        tokens = w.max_num_batched_tokens or tokens
        seqs = w.max_num_seqs or seqs
    per_token = CAL.vllm_act_per_token_factor * (arch.hidden_size + _mlp_width(arch, tp)) * 2
    act = tokens * per_token
    if arch.is_moe:
        # fused_moe's intermediate caches stop growing at the chunk (`_vllm_fused_moe_chunk_tokens`)
        routed = CAL.vllm_act_per_token_factor * _routed_expert_width(arch, tp) * 2
        chunk = _vllm_fused_moe_chunk_tokens(plan.workload.engine_version if plan is not None else None)
        act = act - (tokens - vec.minimum(tokens, chunk)) * routed
    if last_stage and plan is not None:
        # V1's `_dummy_sampler_run`; V0's profile run samples its max_num_seqs prompts with top_k = vocab - 1 and
        # top_p = 0.99 (worker/model_runner.py `profile_run`, 0.6.6), so its Sampler casts the logits to fp32 and
        # sorts them (model_executor/layers/sampler.py `_apply_top_k_top_p`, `logits.sort`): the same peak
        return vec.maximum(act, _vllm_sampler_warmup_bytes(arch, tokens, seqs, plan.workload.engine_version))
    if last_stage:
        act += CAL.vllm_logit_copies * seqs * arch.vocab_size * 4
    return act


# SGLang's own estimate of its CUDA-graph buffers: 2 MiB per captured batch slot (python/sglang/srt/server_args.py
# `_handle_gpu_memory_settings`, 0.5.3: "reserved_mem += self.cuda_graph_max_bs * 2", in MiB).
SGLANG_GRAPH_MIB_PER_BS = 2.0


def sglang_mem_fraction(plan: Plan, gpu: GPU, arch: ModelArch | None = None) -> float:
    """The plan's --mem-fraction-static (`gpu_memory_utilization`), else its release's default
    (`engines.sglang_mem_fraction_static`), which SGLang works out from the plan's --chunked-prefill-size
    (`max_num_batched_tokens`) where one is given and, from 0.5.10, from whether the model (`arch`) uses MLA."""
    hw, w = plan.hardware, plan.workload
    return w.gpu_memory_utilization or sglang_mem_fraction_static(
        gpu, hw.tensor_parallel, hw.pipeline_parallel, w.engine_version, chunk_tokens=w.max_num_batched_tokens,
        mla=arch is not None and arch.is_mla)


def sglang_runtime_bytes(arch: ModelArch, gpu: GPU, plan: Plan) -> float:
    """What SGLang needs outside its mem_fraction_static reservation (weights + KV pool) on one GPU: the activations
    of one chunked-prefill forward, the sampler's logits for a decode batch and the CUDA-graph buffers.

    SGLang sizes its KV pool so that (1 - mem_fraction_static) x the card stays free for "activations and cuda graph
    buffers" (server_args.py `_handle_gpu_memory_settings` docstring, 0.5.3: "GPU memory capacity = model weights + KV
    cache pool + activations + cuda graph buffers"; model_executor/model_runner.py `profile_max_num_token`: pool =
    memory free after the weights - total x (1 - mem_fraction_static)); they do not fit when that rest is smaller,
    and the server runs out of memory on its first full chunk or while capturing the graphs. Terms:
    - one forward of --chunked-prefill-size tokens (max_num_batched_tokens; else the release's default,
      `engines.sglang_default_chunked_prefill`) at vLLM's fitted bytes per token (`_vllm_activation_bytes`: the
      same hidden states and MLP intermediates, the MLP sharded over TP);
    - fp32 logits of the largest captured decode batch (`engines.sglang_cuda_graph_max_bs`) with vLLM's fitted
      copies (`vllm_logit_copies`);
    - the CUDA-graph buffers as SGLang itself reserves them, 2 MiB per captured batch slot (SGLANG_GRAPH_MIB_PER_BS),
      and from 0.5.10 its prefill CUDA graphs' (`engines.sglang_prefill_graph_reserve_mib`: 8 MiB per captured
      size, 1.5 GiB with an MLA model).
    Llama-3.1-8B on an 80 GB H100, 0.5.3 defaults (8,192 tokens, 256 graph slots): 8,192 x 3.85 x (4,096 + 14,336) x
    2 B = 1.08 GiB + 1.75 x 256 x 128,256 x 4 B = 0.21 GiB + 0.5 GiB = 1.80 GiB (+ 58 x 8 MiB = 0.45 GiB from
    0.5.10)."""
    w, tp = plan.workload, plan.hardware.tensor_parallel
    tokens = w.max_num_batched_tokens or sglang_default_chunked_prefill(gpu.memory_gib, w.engine_version)
    graph_bs = sglang_cuda_graph_max_bs(gpu.memory_gib, tp, w.engine_version)
    forward = tokens * CAL.vllm_act_per_token_factor * (arch.hidden_size + _mlp_width(arch, tp)) * 2
    logits = CAL.vllm_logit_copies * graph_bs * arch.vocab_size * 4
    prefill_graphs = sglang_prefill_graph_reserve_mib(gpu, tokens, w.engine_version, arch.is_mla) * MiB
    return forward + logits + graph_bs * SGLANG_GRAPH_MIB_PER_BS * MiB + prefill_graphs


# vLLM's fused-MoE kernel runs the routed experts in chunks of VLLM_FUSED_MOE_CHUNK_SIZE tokens
# (vllm/model_executor/layers/fused_moe/fused_moe.py `fused_experts_impl`: M = min(num_tokens, CHUNK_SIZE);
# intermediate_cache1/2/3 are allocated for M tokens and reused chunk by chunk, "to circumvent" vLLM issue
# #5938). The default, vllm/envs.py in the PyPI sdists: 65,536 in 0.5.3-0.5.5, 32,768 from 0.6.0 (read in 0.6.0,
# 0.6.1, 0.6.2, 0.6.3, 0.7.3, 0.8.0, 0.9.0 and 0.11.0).
VLLM_FUSED_MOE_CHUNK_TOKENS = 32_768
VLLM_FUSED_MOE_CHUNK_TOKENS_BEFORE_0_6 = 65_536


def _vllm_fused_moe_chunk_tokens(version: str | None) -> int:
    """Tokens of one fused-MoE chunk in vLLM release `version` (VLLM_FUSED_MOE_CHUNK_TOKENS)."""
    return VLLM_FUSED_MOE_CHUNK_TOKENS_BEFORE_0_6 if before(version, (0, 6)) else VLLM_FUSED_MOE_CHUNK_TOKENS


def _routed_expert_width(arch: ModelArch, tp: int = 1) -> float:
    """The routed experts' share of `_mlp_width` for an MoE model (0 for a dense one): the
    experts a token visits, their intermediate slices and the per-expert copies of the hidden
    state, i.e. what fused_moe holds in its chunked intermediate caches ([M, top_k, 2 x
    intermediate / tp], [M x top_k, intermediate / tp], [M, top_k, hidden]). The shared experts run
    as a dense MLP on every token and are not chunked."""
    if not arch.is_moe:
        return 0.0
    inter = arch.moe_intermediate_size or arch.intermediate_size
    return arch.experts_per_token * (inter / tp + arch.hidden_size)


def _vllm_sampler_warmup_bytes(arch: ModelArch, tokens: Num, seqs: Num, version: str | None) -> Num:
    """Peak of vLLM V1's sampler warm-up, the last step of its profile run (gpu_model_runner.profile_run ->
    _dummy_sampler_run; V0's profile run samples its dummy prompts the same way, `_vllm_activation_bytes`):
    bf16 logits for rows = min(max_num_seqs, max_num_batched_tokens) sequences (all
    vocab entries: V1 all-gathers the TP shards, LogitsProcessor.use_all_gather) and the sampler's
    temporaries, engines.VLLM_SAMPLER_BYTES_PER_LOGIT per element by release, while the dummy forward's
    bf16 hidden states ([tokens, hidden]; the last positions' copy and its random stand-in, [rows, hidden]
    each) are still alive. The forward's own intermediates were freed before it, so the profile's peak is
    the larger of the two, not their sum (`_vllm_activation_bytes`)."""
    path = vllm_sampler_path(version)
    rows = vec.minimum(seqs, tokens)
    sampler = VLLM_SAMPLER_BYTES_PER_LOGIT[path] * rows * arch.vocab_size
    if path == "triton":
        sampler = sampler + 4 * vec.minimum(rows, VLLM_TRITON_SCRATCH_ROWS) * arch.vocab_size
    return sampler + (tokens + 2 * rows) * arch.hidden_size * 2


def vllm_gpu_memory_utilization(plan: Plan) -> float:
    """The share of the card vLLM reserves: the plan's --gpu-memory-utilization, else the release's default
    (engines.vllm_default_gpu_memory_utilization: 0.9 before 0.20, 0.92 from it)."""
    return plan.workload.gpu_memory_utilization or vllm_default_gpu_memory_utilization(plan.workload.engine_version)


def driver_total_gib(capacity_gib: float, vendor: str) -> float:
    """The memory the CUDA driver reports as the card's total (cudaMemGetInfo), which vLLM multiplies
    gpu_memory_utilization by: on an NVIDIA card the catalog's memory less what the driver keeps
    (engines.CUDA_DRIVER_RESERVED_GIB); other vendors' totals as listed. GiB."""
    return capacity_gib - (CUDA_DRIVER_RESERVED_GIB if vendor.upper() == "NVIDIA" else 0.0)


def vllm_reserved_gib(plan: Plan, capacity_gib: float, vendor: str) -> float:
    """What vLLM reserves on a card of `capacity_gib` (the catalog's memory) from `vendor`, in GiB: its
    utilization of the CUDA driver's total (`driver_total_gib`)."""
    return vllm_gpu_memory_utilization(plan) * driver_total_gib(capacity_gib, vendor)


def _vllm_total_bytes(gpu: GPU) -> float:
    """`driver_total_gib` of `gpu`, in bytes."""
    return driver_total_gib(gpu.capacity_gib, gpu.vendor) * GiB


def _vllm_non_torch_bytes(plan: Plan, tp: int) -> float:
    """vLLM's non-torch memory in its profile (Calibration.vllm_non_torch_*): more in 0.18-0.26, which capture
    CUDA graphs inside the profile (engines.vllm_graphs_in_profile). V0 (< 0.8) also captured its graphs
    after allocating the KV cache (worker.py determine_num_available_blocks, then capture_model) and takes
    the pre-0.18 figures. With TP and no P2P (vLLM's custom all-reduce off) the 0.10.1 DLVLLM-0123 / -0125
    pools come out within 2 % with the same 0.41 GiB, so no separate figure for it."""
    if vllm_graphs_in_profile(plan.workload.engine_version):
        return CAL.vllm_non_torch_bytes + (CAL.vllm_non_torch_tp_bytes if tp > 1 else 0.0)
    return CAL.vllm_non_torch_pre_graph_bytes + (CAL.vllm_non_torch_pre_graph_tp_bytes if tp > 1 else 0.0)


def _prefill_activation_bytes(arch: ModelArch, tokens: Num, flash: bool, heads_per_gpu: Num, ctx: Num) -> Num:
    """Peak transient working set of one layer during a prefill of `tokens` tokens (eager
    frameworks free each layer's intermediates before the next): hidden states and the MLP
    intermediates, ~3.85 x (h + i) x 2 bytes per token (same physical factor as vLLM's), plus
    the attention score matrix when attention is not fused (heads x q x k x (2+4) bytes:
    bf16 scores and fp32 softmax, as HF eager attention does)."""
    act = CAL.transformers_act_per_token_factor * tokens * (arch.hidden_size + _mlp_width(arch)) * 2
    if not flash:
        act = act + heads_per_gpu * tokens * ctx * 6
    return act


TRTLLM_NAMES = ("trt-llm", "tensorrt-llm", "trtllm")


def trtllm_weights_per_gpu_bytes(arch: ModelArch, parts: Mapping[str, float], tp: int, pp: int) -> float:
    """Weights on one GPU of a TensorRT-LLM engine (releases before 1.0, `engines.trtllm_tensorrt_engine`): as
    `split_weights`, except that the embedding table is whole on every TP rank. TensorRT-LLM's checkpoint
    converters leave embedding parallelism off unless asked (examples/llama/convert_checkpoint.py, 2024:
    `--use_parallel_embedding`, default False, "By default embedding parallelism is disabled"); the lm_head is
    column-parallel (split by TP) either way. The PyTorch backend (the default from 1.0) splits the table
    (tensorrt_llm/_torch/models/modeling_llama.py: `Embedding(..., TensorParallelMode.COLUMN)`). Hand check
    (tests): Llama-3-70B fp16 at TP 4 holds 128,256 x 8,192 x 2 B x 3 / 4 = 1.47 GiB more per GPU than with
    the table split."""
    blocks = parts["linear"] + parts["norms"] + parts["other"]
    embed, head = parts["embedding"], parts["lm_head"]
    if arch.tie_word_embeddings and pp > 1:
        head = embed
    ends = embed + head / tp if pp == 1 else max(embed, head / tp)
    return blocks / (tp * pp) + ends


TRTLLM_ACTIVATION_BYTES = 2  # the engine's fp16/bf16 activations
# The runtime's and the sampler's buffers per max_batch_size x vocab fp32 logits, allocated before the KV pool is
# sized: TRTBENCH70's log (TensorRT-LLM 0.16, max_batch_size 2,048, vocabulary 128,256: 1.0507e9 bytes of
# logits) reads "Allocated 1.63 GB GPU memory for runtime buffers" and "Allocated 3.30 GB GPU memory for
# decoder": (1.63 + 3.30) / 1.0507 = 4.69 such arrays.
TRTLLM_RUNTIME_LOGITS_COPIES = 4.69


def trtllm_engine_activation_bytes(arch: ModelArch, plan: Plan, tp: int) -> float:
    """Activation memory of a TensorRT-LLM TensorRT engine (releases before 1.0) on one GPU, allocated before
    the KV pool is sized:
    - TensorRT's execution-context memory: one buffer for the tensors alive together, so the larger of the
      context pass at the engine's `max_num_tokens` (`engines.trtllm_engine_max_num_tokens`: by release,
      max_batch_size x max_input_len before 0.11, 8,192 after) and the fp32 logits of max_batch_size last
      tokens (computed after the last layer, in memory the layers no longer use; max_batch_size is the plan's
      max_num_seqs, else the release's default, `engines.trtllm_default_max_batch_size`: 256 before 0.14,
      2,048 from 0.14). At the MLP the residual and normed hidden state (2 x hidden), the fused gate/up GEMM
      output (2 x intermediate) and the SwiGLU output (intermediate) are alive, 2 bytes each per token; the
      intermediate is split over TP ranks (tensorrt_llm/layers/mlp.py `FusedGatedMLP`, a column-parallel fc);
    - the runtime's and the decoder's buffers, `TRTLLM_RUNTIME_LOGITS_COPIES` x the logits.
    The tokens the engine was built for, not those a run uses, set it: an engine built for 40 x 1,024 tokens
    holds ~4 GiB of activations for Llama-3-8B whatever it serves.
    Fit rows: TRTKV224-0001 (NVIDIA/TensorRT-LLM issue #224: Llama-2-7B on an A10 under 0.5, max_batch_size 25,
    default max_input_len 2,048: 51,200 tokens x 82 KB = 3.9 GiB; its log's 10,718 KV tokens, where vLLM's
    profile as the proxy gave ~17,900); TRTBENCH70's log (0.16, Llama-3.1-70B at TP 8, max_batch_size 2,048,
    8,192 tokens: "Allocated 1013.01 MiB for execution context memory", the logits' 1,002 MiB rather than the
    MLP's 424 MiB, and the runtime and decoder buffers above). Hand check: Llama-3-8B (hidden 4,096,
    intermediate 14,336) at 40,960 tokens and 40 sequences: 40,960 x (8,192 + 43,008) x 2 = 4.19e9 bytes, plus
    4.69 x 40 x 128,256 x 4 = 9.6e7."""
    w = plan.workload
    tokens = trtllm_engine_max_num_tokens(w.engine_version, w.max_num_seqs, w.max_model_len,
                                          w.max_num_batched_tokens)
    per_token = (2.0 * arch.hidden_size + 3.0 * _mlp_width(arch, tp)) * TRTLLM_ACTIVATION_BYTES
    logits = (w.max_num_seqs or trtllm_default_max_batch_size(w.engine_version)) * arch.vocab_size * 4.0
    return max(tokens * per_token, logits) + TRTLLM_RUNTIME_LOGITS_COPIES * logits


def trtllm_tp_buffer_bytes(tp: int) -> float:
    """Memory TensorRT-LLM's TP communication takes before the KV pool is sized: NCCL communicators and the
    custom all-reduce's IPC workspace (cpp/tensorrt_llm/runtime/ipcUtils.cpp `AllReduceBuffers`: two buffers
    of tp x min(max_batch x max_seq_len x hidden x 4 B, 16 MB at TP <= 2, else 8 MB) each,
    customAllReduceUtils.h `getMaxRequiredWorkspaceSize`, i.e. ~64 MB at TP 4), so mostly NCCL's buffers.
    No CUDA graphs are captured by default (unlike vLLM 0.18-0.26), so vLLM's pre-graph TP figure is the proxy:
    Calibration.vllm_non_torch_pre_graph_tp_bytes, 0.41 GiB (vLLM 0.11 rows m0069/m0089: NCCL + custom
    all-reduce with TP 2). Not fitted on TensorRT-LLM rows (none report memory). 0 without TP."""
    return CAL.vllm_non_torch_pre_graph_tp_bytes if tp > 1 else 0.0


def llama_cpp_kv_cells(n_ctx: Num, flash_attention: bool) -> Num:
    """KV-cache cells llama.cpp allocates for `-c n_ctx` (all sequences together): n_ctx padded up to
    `LLAMA_CPP_KV_PAD_FA` (256) with flash attention, `LLAMA_CPP_KV_PAD` (32) without
    (src/llama-kv-cache.cpp `llama_kv_cache_get_padding`). -c 4000 holds 4,096 cells with -fa, 4,000 without."""
    pad = LLAMA_CPP_KV_PAD_FA if flash_attention else LLAMA_CPP_KV_PAD
    return vec.ceil_int(vec.maximum(1, n_ctx) / pad) * pad


# Model types whose llama.cpp architecture keeps its sliding-window layers in a separate, window-sized cache
# (llama_kv_cache_iswa): Gemma 2/3 and Cohere2 (LLAMA_SWA_TYPE_STANDARD), Llama 4 (chunked attention) and gpt-oss.
# Mistral-7B-v0.1 converts to the plain `llama` architecture, which sets no window, and Phi-3's window is read but
# disabled ("Phi SWA is currently disabled", src/models/phi3.cpp, llama.cpp PR #13676): both hold every layer
# for the whole context.
LLAMA_CPP_SWA_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "gemma3n", "cohere2", "llama4", "gpt_oss"})


def llama_cpp_kv_bytes(arch: ModelArch, cells: Num, batch: Num, flash_attention: bool, bytes_per_element: float,
                       tp: int, pp: int) -> Num:
    """KV bytes llama.cpp allocates for `cells` cells (`llama_cpp_kv_cells`) of `batch` sequences.

    Full-attention layers hold every cell. Where llama.cpp implements the model's sliding window
    (`LLAMA_CPP_SWA_MODEL_TYPES`), the windowed layers' cache holds min(cells, n_swa x n_seq + n_ubatch) cells,
    padded like the main cache (src/llama-kv-cache-iswa.cpp `size_swa`; gpt-oss's 128-token window gives
    128 + 512 = 640 -> 768 cells with flash attention). Elsewhere every layer holds every cell."""
    per_cell_all_layers = _kv_token_bytes(arch, 1, bytes_per_element, tp, pp)  # context 1: no window applies
    windowed = arch.num_sliding_layers if arch.sliding_window and arch.model_type in LLAMA_CPP_SWA_MODEL_TYPES else 0
    if not windowed:
        return per_cell_all_layers * cells
    share = windowed / max(1, arch.num_layers)
    swa_cells = vec.minimum(cells, llama_cpp_kv_cells(arch.sliding_window * batch + LLAMA_CPP_UBATCH, flash_attention))
    return per_cell_all_layers * ((1.0 - share) * cells + share * swa_cells)


def ollama_default_num_ctx(version: str | None, total_vram_gib: float, model_max_tokens: int | None) -> int:
    """The context ollama gives a model when the request sets no num_ctx (ollama runs llama.cpp with -c num_ctx x
    OLLAMA_NUM_PARALLEL, default 1 parallel, so the KV cache is allocated for it whatever the prompt):
    2,048 before v0.6.7; 4,096 from v0.6.7 (2025-04-30, ollama commit 44b466ee "config: update default context
    length to 4096"); from v0.15.5 (2026-02, commit 0334ffa6 "server: use tiered VRAM-based default context
    length") by the total VRAM: >= 47 GiB 262,144, >= 23 GiB 32,768, else 4,096 (server/routes.go, logged as
    "vram-based default context"; ollama docs/context-length.mdx: "< 24 GiB VRAM: 4k, 24-48 GiB: 32k, >= 48 GiB:
    256k"), never above the model's trained context. A version given as a month is read the same way."""
    v = parse_version(version)
    if v is not None and v.month is not None:
        era = 0 if v.month < (2025, 5) else 1 if v.month < (2026, 2) else 2
    elif v is not None and v.release is not None:
        era = 0 if v.release < (0, 6, 7) else 1 if v.release < (0, 15, 5) else 2
    else:
        era = 2  # no version (or a build number): the current release
    if era == 0:
        n = 2048
    elif era == 1:
        n = 4096
    else:
        n = 262_144 if total_vram_gib >= 47 else 32_768 if total_vram_gib >= 23 else 4096
    return min(n, model_max_tokens) if model_max_tokens else n


def llama_cpp_gpu_weight_bytes(parts: Mapping[str, float], weights_per_gpu: float, tp: int, pp: int) -> float:
    """The weights llama.cpp puts on the GPU(s) with every layer offloaded: all but the input token embedding,
    which it always keeps in host memory (src/llama-model.cpp `load_tensors`: "there is very little benefit to
    offloading the input layer, so always keep it on the CPU"; its load log prints it as the `CPU` /
    `CPU_Mapped` model buffer, e.g. 70.31 MiB of Llama-2-7B Q4_K_M beside a 3,820.93 MiB GPU buffer,
    LCPPMEM* rows). A model with a tied output head loads token_embd a second time as the output layer
    (TENSOR_DUPLICATED), on the GPU: its GPU weights are the whole file."""
    embed = parts.get("embedding", 0.0)
    if parts.get("lm_head", 0.0) <= 0 or embed <= 0:
        return weights_per_gpu
    return max(0.0, weights_per_gpu - (embed / tp if pp == 1 else 0.0))


def llama_cpp_vision_bytes(r: ResolvedPlan) -> float:
    """Bytes of a vision-language model's vision tower + projector (`quant.vision_bytes`) that llama.cpp does NOT
    load: convert_hf_to_gguf.py writes the text model to the .gguf and the vision encoder and projector, with
    `--mmproj`, to a separate mmproj-*.gguf (docs/multimodal.md); llama-cli / llama-server load that file only when
    given `--mmproj` (or `-hf`, which fetches it), and llama-bench never does. 0 for a text-only model."""
    return r.weight_parts.get("vision", 0.0) if runs_llama_cpp(_engine_key(r)) else 0.0


def llama_cpp_compute_buffer_bytes(arch: ModelArch, kv_cells: Num, flash_attention: bool, heads_gpu: float,
                                   n_ubatch: int = LLAMA_CPP_UBATCH) -> Num:
    """The compute buffer llama.cpp reserves on the GPU: ggml's graph allocator (ggml/src/ggml-alloc.c
    `ggml_gallocr_reserve`) sizes it for the worst-case graph, one micro-batch of n_tokens = min(n_ubatch,
    n_ctx) tokens all producing outputs, against a full KV cache (src/llama.cpp `llama_new_context_with_model`:
    "reserve worst-case graph"), and reuses a tensor's memory once its last consumer has run, so the buffer is
    the larger of two moments of the graph (fp32 activations, 4 bytes):

    - the output: the logits, n_tokens x n_vocab, beside the final norm's n_tokens x n_embd;
    - a layer's attention: without flash attention the KQ scores (their softmax reuses them), n_kv x n_tokens x
      n_head, and the KQ mask n_kv x n_tokens (an input, src/llama.cpp `build_inp_KQ_mask`), beside ~4 x n_embd
      per token (the residual, the norm, Q and the attention output); with flash attention no scores are
      materialised (ggml_flash_attn_ext), the mask is f16, and the FFN's gate and up outputs (2 x n_ff) beside
      the residual and norm take their place.

    Hand-checked on published load logs (LCPPMEM* rows): Llama-2-7B Q4_K_M, -c 4096, no FA: 256 MiB scores + 8 MiB
    mask + 32 MiB = 296.00 MiB printed; -c 512: logits 512 x (32,000 + 4,096) x 4 = 70.50 MiB printed;
    Qwen2-7B, -c 32768: 1,792 + 64 + 28 = 1,884.00 MiB printed. The flash-attention branch is from the graph
    alone, not checked on a published log yet."""
    tokens = vec.minimum(n_ubatch, kv_cells)
    output = tokens * (arch.vocab_size + arch.hidden_size) * 4.0
    if flash_attention:
        layer = tokens * kv_cells * 2.0 + tokens * (2 * _mlp_width(arch) + 2 * arch.hidden_size) * 4.0
    else:
        layer = tokens * kv_cells * (heads_gpu + 1) * 4.0 + tokens * 4 * arch.hidden_size * 4.0
    return vec.maximum(output, layer)
TRANSFORMERS_NAMES = ("transformers", "hf", "pytorch", "torch")
_MODELLED = (*TRANSFORMERS_NAMES, "mlx", "mlx-lm", "exllamav2", "exl2", "gpt-fast", "gptfast", "torchao", "tinychat")
# Spellings the speed model already takes as ExLlamaV2 (engines.engine_family: names starting "exllama" or "tabby",
#    e.g. tabbyapi, the server users run it through): their memory is the same weights + KV + activations path as
#    "exllamav2", so they are not "treated like HF transformers" either.
_MODELLED_PREFIXES = ("exllama", "tabby")


def _modelled(engine: str) -> bool:
    """Whether the memory model has a path of its own for the engine (else it says it treats it like HF
    transformers)."""
    return engine in _MODELLED or engine.startswith(_MODELLED_PREFIXES)


# Families whose other spellings the speed model already takes as that engine (engines.ENGINE_NAME_PREFIXES:
# "turbomind" is LMDeploy's engine, "text-generation-inference" is TGI, "mlc-llm" is MLC): the memory model sizes
# them by the family's rules too, not as HF transformers.
_FAMILY_KEYED = ("vllm", "sglang", "lmdeploy", "tgi", "mlc")


def _engine_key(r: ResolvedPlan) -> str:
    """The engine as the memory model names it: the plan's own spelling, lower-case (transformers if none), or
    its family for an alias of an engine in _FAMILY_KEYED."""
    engine = (r.workload.engine or "transformers").lower().replace("_", "-")
    family = engine_family_by_name(engine)
    return family if family in _FAMILY_KEYED else engine


def _cpu_share(r: ResolvedPlan) -> float:
    """llama.cpp -ngl N keeps N repeating layers' weights and KV on the GPU(s); the CPU holds and runs
    the rest from host RAM (llama.cpp docs; the KV cache follows its layer by default)."""
    w = r.workload
    if w.gpu_layers is None or w.gpu_layers >= r.arch.num_layers:
        return 0.0
    if not runs_llama_cpp(_engine_key(r)):
        raise MlrigError("gpu_layers (-ngl) is llama.cpp's partial offload; add --engine llama.cpp, "
                         "or drop --gpu-layers")
    return 1.0 - w.gpu_layers / r.arch.num_layers


# torchao's benchmark script (torchao/_models/llama/generate.py, the TORCHAO-* rows) loads the bf16 checkpoint
#    onto the device and quantises it there (`_load_model(checkpoint_path, device, precision)`, then
#    `quantize_(model, int8_weight_only())` etc.). Each linear's 16-bit weight is freed once replaced, but the
#    caching allocator keeps those blocks reserved; the script resets the peak counters after the compile
#    warm-up, so what it reports as "Peak Memory" (max_memory_reserved) is the run's own peak only if the
#    reservation was handed back before. On NVIDIA GPUs it is: torch.compile's reduce-overhead mode captures
#    a CUDA graph, and `torch.cuda.graph.__enter__` calls `torch.cuda.empty_cache()` ("Free as much memory as
#    we can for the graph", torch/cuda/graphs.py). On an Intel GPU no graph is captured
#    (hardware.graph_replay_missing), nothing empties the cache, and the reservation stays at the load's peak:
#    the whole bf16 model plus the quantisation's temporaries for the largest matrix. torchao quantises a
#    weight in `_quantize_affine_no_dtype_cast` (quant_primitives.py, at pytorch/ao e06fa8d, the commit that
#    added the XPU rows) as `clamp(round(w * (1 / scale)) + zero_point, ...)`: two 16-bit temporaries of the
#    weight's size alive at once (`TORCHAO_QUANT_TEMP_BYTES_PER_PARAM`), in segments of their own (large
#    allocations are not carved from the freed weights' smaller blocks). The same mechanism showed on CUDA
#    before the script reset its counters after loading (pytorch/ao commit ead8cc8, 2024-06-12: "we were
#    hitting the peak upon model load, not during model runtime"; int8wo Llama-2-7B 14.50 GB before, 8.95
#    after, in torchao/_models/llama/benchmark_results.txt). Derived, not fitted; the held-out XPU int8 rows
#    (TORCHAO-0030/0034, 14.6 / 18.6 GB with int8wo peaking above bf16) are its check.
TORCHAO_QUANT_TEMP_BYTES_PER_PARAM = 4.0
TORCHAO_NAMES = ("torchao",)


def torchao_quantises_on_device(r: ResolvedPlan) -> bool:
    """The plan runs torchao's generate.py flow: the gpt-fast family named `torchao` (engine or engine_version),
    with weights quantised at load time (not 16-bit)."""
    w = r.workload
    named = _engine_key(r) in TORCHAO_NAMES or (w.engine_version or "").strip().lower().startswith("torchao")
    return r.engine == "gpt-fast" and named and r.precision.family != "f16"


def torchao_load_peak_bytes(r: ResolvedPlan) -> float:
    """Reserved bytes per GPU after torchao loads the 16-bit checkpoint on the device and quantises it there
    (see TORCHAO_QUANT_TEMP_BYTES_PER_PARAM): the bf16 weights plus two 16-bit temporaries of the largest
    linear (the untied head or an MLP projection)."""
    arch, hw = r.arch, r.hardware
    tp, pp = hw.tensor_parallel, hw.pipeline_parallel
    bf16 = weights_per_gpu_bytes(arch, "bf16", tp, pp)
    head = arch.params().lm_head or (arch.vocab_size * arch.hidden_size if arch.tie_word_embeddings else 0)
    largest = max(float(head), float(arch.hidden_size) * _mlp_width(arch)) / tp
    return bf16 + TORCHAO_QUANT_TEMP_BYTES_PER_PARAM * largest


@dataclass(frozen=True)
class InferenceMemory:
    """The figures of `inference_memory`, bytes per GPU: numbers for one plan, arrays for a sweep."""

    weights: Num
    kv: Num  # the KV cache: the paged engines' whole pool, else the batch's at full context
    act: Num
    overhead: Num  # outside the allocator (CUDA context) or, for paged engines, the non-torch memory
    used: Num  # what the GPU holds (paged engines: their reservation, or what they would need)
    host: Num  # host RAM: loading, plus any layers run from it
    headroom: Num | None  # paged engines: reservation left after one full sequence; else None
    kv_tok: Num  # KV bytes per token per GPU (after any -ngl share)
    capacity_tokens: Num | None
    fits: Num
    batch_fits: Num
    weights_ok: Num  # paged engines: weights + activation peak fit in the reservation
    reserved: Num  # paged engines' reservation (0 for others)
    cpu_share: float
    spill: Num = 0.0  # llama.cpp: share of the layers that do not fit and run from host RAM


def inference_memory(r: ResolvedPlan, batch: Num, ctx: Num, prompt: Num,
                     context_given: Num | None = None) -> InferenceMemory:
    """Per-GPU memory of an inference plan (`_inference` gives its notes), for the plan's own batch,
    context and prompt or for arrays of them (a sweep: `mlrig.batch_eval`); `context_given`: whether each
    context was given (context_tokens) rather than taken from prompt + output (default: the plan's own,
    for ollama's default num_ctx). Engine-specific:

    - paged serving engines (vLLM, SGLang, TensorRT-LLM, LMDeploy, TGI) reserve a share of the card
      and pre-allocate a KV pool in 16-token blocks from what the weights and the profiled activation
      peak leave (`_vllm_activation_bytes`); it fits when the pool holds one full sequence;
    - llama.cpp allocates the KV cache for all n_ctx = context x batch tokens up front and a compute
      buffer for one n_ubatch = 512 micro-batch: fp32 logits (n_ubatch x vocab x 4) + per-token
      intermediates; without flash attention also the KQ matrix n_ubatch x n_ctx x heads x 4 (ggml graph);
    - HF transformers and the other eager engines grow the KV cache to batch x context; the prefill of
      batch x prompt tokens is the activation peak (logits for the last position only since
      transformers 4.45, fp32: batch x vocab x 4; mlx-lm prefills in steps of 2048 tokens); before
      transformers 4.42 two copies of the cache are alive at a decode step's peak
      (engines.transformers_legacy_cache), the second counted with the activations."""
    arch, plan, gpu = r.arch, r.plan, r.gpu
    w, hw = plan.workload, plan.hardware
    tp, pp = hw.tensor_parallel, hw.pipeline_parallel
    engine = _engine_key(r)
    cpu_share = _cpu_share(r)
    weights = split_weights(arch, r.weight_parts, tp, pp)
    if hw.expert_parallel > 1 and arch.is_moe:  # whole experts per GPU, not TP's slices of every one
        from mlrig.estimators.expert_parallel import expert_weight_bytes_per_gpu

        routed = r.weight_parts.get("experts_routed", 0.0)
        weights += expert_weight_bytes_per_gpu(arch, routed, tp, pp, hw.expert_parallel) - routed / (tp * pp)
    kv_tok = _kv_token_bytes(arch, ctx, r.kv_bytes_per_element, tp, pp)
    cap = gpu.capacity_gib * GiB
    overhead = _context_overhead(gpu)
    heads_gpu = arch.num_heads / tp

    if engine in PAGED_ENGINES:
        # the other paged engines take vLLM's TP-1 profile as a proxy, unsharded, as when it was first set for them
        act = _vllm_activation_bytes(arch, gpu, last_stage=True, plan=plan if engine == "vllm" else None, context=ctx,
                                     tp=tp if engine == "vllm" else 1)
        non_torch = CAL.vllm_non_torch_bytes + (CAL.paged_proxy_non_torch_tp_bytes if tp > 1 else 0.0)
        if engine == "vllm":
            non_torch = _vllm_non_torch_bytes(plan, tp)
            reserved = vllm_gpu_memory_utilization(plan) * _vllm_total_bytes(gpu)
            pool = reserved - weights - act - non_torch
        elif engine == "sglang":
            # --mem-fraction-static: SGLang's default by card and release (engines.sglang_mem_fraction_static) holds
            # the weights and the KV pool; activations and CUDA graphs use the rest (sglang_runtime_bytes)
            reserved = sglang_mem_fraction(plan, gpu, arch) * cap
            pool = reserved - weights - non_torch
            act = sglang_runtime_bytes(arch, gpu, plan)
        elif engine in TRTLLM_NAMES:
            # TensorRT-LLM: kv_cache_free_gpu_mem_fraction (0.9) of what cudaMemGetInfo finds free once the model
            # (weights; a TensorRT engine before 1.0 keeps the embedding whole on every TP rank; activation memory,
            # vLLM's profile as a proxy) and the TP communication buffers are allocated (`trtllm_tp_buffer_bytes`)
            if trtllm_tensorrt_engine(w.engine_version):
                weights = trtllm_weights_per_gpu_bytes(arch, r.weight_parts, tp, pp)
                act = trtllm_engine_activation_bytes(arch, plan, tp) / pp
            non_torch = overhead + trtllm_tp_buffer_bytes(tp)
            pool = (w.gpu_memory_utilization or 0.9) * (cap - weights - act - non_torch)
            reserved = weights + act + non_torch + pool
        elif engine == "lmdeploy" and lmdeploy_kv_of_free_memory(w.engine_version):
            # TurboMind from v0.2.2: cache_max_entry_count (0.8) of the memory free once the weights are loaded
            # (engines.LMDEPLOY_KV_OF_FREE_FROM); its activation buffers come out of the rest
            pool = (w.gpu_memory_utilization or LMDEPLOY_CACHE_MAX_ENTRY_COUNT_FREE) * (cap - weights - overhead)
            reserved = weights + act + overhead + pool
        else:
            # TGI, LMDeploy before v0.2.2: taken like TensorRT-LLM's kv_cache_free_gpu_mem_fraction default
            # (not re-fitted)
            pool = (w.gpu_memory_utilization or 0.9) * (cap - weights - act - overhead)
            reserved = weights + act + overhead + pool
        pool = vec.maximum(pool, 0.0)
        block = VLLM_BLOCK_TOKENS * kv_tok
        capacity = vec.where(block > 0, vec.trunc_int(pool // vec.where(block > 0, block, 1.0)) * VLLM_BLOCK_TOKENS,
                             0)
        # what the reservation must hold besides the KV pool; SGLang's activations sit outside its static fraction
        # (the pool above is reserved - weights - non_torch), so its headroom and weights check leave them out too
        fixed = weights + non_torch + (0.0 if engine == "sglang" else act)
        weights_ok = fixed <= reserved
        fits = vec.both(weights_ok, capacity >= ctx)
        # The engine takes its whole reservation when it starts; when it cannot start, report what it
        # would need. Headroom is measured against the reservation: spare KV room beyond one sequence.
        used = vec.where(weights_ok, reserved, fixed)
        if engine == "sglang":
            # SGLang's process holds its reservation and, beside it, the activations and CUDA graphs, which must fit
            # in what the reservation leaves of the card or it runs out of memory (sglang_runtime_bytes)
            used = used + act
            fits = vec.both(fits, act <= cap - reserved)
        return InferenceMemory(weights=weights, kv=pool, act=act, overhead=non_torch,
                               used=used, host=_load_host_bytes(weights),
                               headroom=reserved - fixed - ctx * kv_tok, kv_tok=kv_tok, capacity_tokens=capacity,
                               fits=fits, batch_fits=vec.both(fits, capacity >= ctx * batch), weights_ok=weights_ok,
                               reserved=reserved, cpu_share=0.0)

    kv = kv_tok * ctx * batch
    kv_copies = 1.0  # copies of the cache alive at the peak
    host_resident = 0.0  # weights llama.cpp keeps in host memory by design (the token embedding)
    prompt1 = vec.maximum(1, prompt)
    if runs_llama_cpp(engine):
        # -c n_ctx = context x batch cells for all sequences, padded (llama_cpp_kv_cells); the weights less the
        # token embedding kept on the CPU; the compute buffer reserved for the worst-case micro-batch
        n_ctx = ctx * batch
        given = w.context_tokens is not None if context_given is None else context_given
        if engine == "ollama":
            # no context given: ollama allocates its default num_ctx per parallel slot, not the request's length
            default_ctx = vec.maximum(n_ctx, ollama_default_num_ctx(
                w.engine_version, gpu.capacity_gib * hw.count, arch.max_position_embeddings) * batch)
            n_ctx = vec.where(given, n_ctx, default_ctx)
        cells = llama_cpp_kv_cells(n_ctx, w.flash_attention)
        kv = llama_cpp_kv_bytes(arch, cells, batch, w.flash_attention, r.kv_bytes_per_element, tp, pp)
        # a vision-language model's GGUF holds the text model only: its vision tower + projector is the separate
        # mmproj file, loaded only with --mmproj (`llama_cpp_vision_bytes`)
        weights = weights - llama_cpp_vision_bytes(r) / (tp * pp)
        gpu_weights = llama_cpp_gpu_weight_bytes(r.weight_parts, weights, tp, pp)
        host_resident = weights - gpu_weights
        weights = gpu_weights
        act = llama_cpp_compute_buffer_bytes(arch, cells, w.flash_attention, heads_gpu)
    else:
        step_tokens = vec.minimum(prompt1, MLX_PREFILL_STEP) if engine.startswith("mlx") else prompt1
        act = _prefill_activation_bytes(arch, batch * step_tokens, w.flash_attention, heads_gpu, prompt1) / pp
        act = act + batch * arch.vocab_size * 4 * 2  # fp32 logits and their softmax probabilities
        if engine in TRANSFORMERS_NAMES and transformers_full_logits(w.engine_version):
            # transformers < 4.45: the prefill's forward returns logits for every prompt position
            # (no num_logits_to_keep), bf16 and then upcast with `logits.float()` in the model's
            # forward: prompt x vocab x (2 + 4) bytes per sequence.
            act = act + batch * prompt1 * arch.vocab_size * 6.0 / pp
        if engine in TRANSFORMERS_NAMES and transformers_legacy_cache(w.engine_version):
            # transformers < 4.42 (engines.transformers_legacy_cache): `generate` holds the previous
            # step's KV tuples while the forward concatenates the next ones, so a second copy of the
            # cache is alive at each decode step's peak (PR #30536). Counted with the transients.
            kv_copies = 2.0
    capacity_act = act
    act = act + (kv_copies - 1.0) * kv
    host = _load_host_bytes(weights) + host_resident
    if cpu_share:  # per-GPU figures: the host holds the CPU share of every GPU's layers
        host = host + cpu_share * (weights + kv) * tp * pp
        weights, kv, kv_tok = (1.0 - cpu_share) * weights, (1.0 - cpu_share) * kv, (1.0 - cpu_share) * kv_tok
    used = weights + kv + act + overhead
    if torchao_quantises_on_device(r) and graph_replay_missing(r.engine, gpu):
        # the load's reservation is never handed back on this device (TORCHAO_QUANT_TEMP_BYTES_PER_PARAM):
        # what it holds beyond the run's own tensors is shown with the workspace
        held = vec.maximum(0.0, torchao_load_peak_bytes(r) + overhead - used)
        act, used = act + held, used + held
    fits = used <= cap
    spill: Num = 0.0
    if runs_llama_cpp(engine) and not cpu_share and weights > 0:
        # The speed model spills what does not fit to the CPU (as users do by lowering -ngl,
        # performance.offload_of): those layers' weights and KV live in host RAM, for every GPU.
        spill = vec.where(fits, 0.0, vec.minimum(1.0, (used - cap) / weights))
        host = host + spill * (weights + kv) * tp * pp
    if hw.host_ram_gib is not None:
        # offloaded layers (or loading) need more host RAM than the machine has
        fits = vec.both(fits, host <= hw.host_ram_gib * GiB)
    capacity = vec.where(kv_tok > 0, vec.maximum(
        0, vec.trunc_int((cap - weights - capacity_act - overhead) // vec.where(kv_tok > 0, kv_copies * kv_tok, 1.0))),
        None)
    return InferenceMemory(weights=weights, kv=kv, act=act, overhead=overhead, used=used, host=host, headroom=None,
                           kv_tok=kv_tok, capacity_tokens=capacity, fits=fits, batch_fits=fits, weights_ok=True,
                           reserved=0.0, cpu_share=cpu_share, spill=spill)


def _inference(r: ResolvedPlan, m: InferenceMemory | None = None) -> MemoryEstimate:
    """`inference_memory` for the plan's own batch and context, with the notes that explain it. `m`:
    those figures already worked out for this plan (an element of an array pass, `mlrig.grid`)."""
    w, hw, gpu = r.workload, r.hardware, r.gpu
    tp, pp = hw.tensor_parallel, hw.pipeline_parallel
    engine = _engine_key(r)
    ctx, batch = w.context, w.batch_size
    if m is None:
        m = inference_memory(r, batch, ctx, w.prompt_tokens)
    cap_gib = gpu.capacity_gib
    notes: list[str] = []
    if w.engine is None:
        notes.append("no engine given: assumed HF transformers-like (weights + KV for the batch "
                     "+ prefill activations)")
    if m.cpu_share:
        notes.append(f"-ngl {w.gpu_layers}: {w.gpu_layers} of {r.arch.num_layers} layers on the GPU; "
                     f"{m.cpu_share:.0%} of weights and KV in host RAM, run by the CPU")
    capacity = None if m.capacity_tokens is None else int(m.capacity_tokens)
    concurrency = None if capacity is None else capacity / ctx
    if engine in PAGED_ENGINES:
        if engine == "vllm":
            notes.append(f"vLLM reserves gpu_memory_utilization={vllm_gpu_memory_utilization(r.plan):g} x "
                         f"{_vllm_total_bytes(gpu) / GiB:.2f} GiB (the CUDA driver's total); KV pool = reservation "
                         "- weights - profiled activation peak - non-torch memory")
            if vllm_sampler_path(w.engine_version) == "sort":
                notes.append(f"vLLM {w.engine_version}: the profile's sampler warm-up sorts the logits (torch "
                             "top-k/top-p, ~38 B per logit); with FlashInfer's sampler in use (its log says 'Using "
                             f"FlashInfer for top-p & top-k sampling'; --engine-version {w.engine_version}+flashinfer)"
                             " it holds ~14 B and the KV pool is larger")
        elif engine == "sglang":
            frac = sglang_mem_fraction(r.plan, gpu, r.arch)
            notes.append(f"SGLang mem_fraction_static={frac:.3g} holds weights + KV pool; activations and CUDA graphs "
                         f"({_gib(m.act):.2f} GiB) use the rest ({(1 - frac) * cap_gib:.2f} GiB)")
        elif engine in TRTLLM_NAMES:
            whole = " (a TensorRT engine: the embedding whole on every TP rank)" if (
                tp > 1 and trtllm_tensorrt_engine(w.engine_version)) else ""
            notes.append(f"TensorRT-LLM: KV pool = kv_cache_free_gpu_mem_fraction={w.gpu_memory_utilization or 0.9:g}"
                         f" x memory free after weights{whole}, activations and TP communication buffers")
            if trtllm_tensorrt_engine(w.engine_version):
                tokens = trtllm_engine_max_num_tokens(w.engine_version, w.max_num_seqs, w.max_model_len,
                                                      w.max_num_batched_tokens)
                notes.append(f"TensorRT engine ({w.engine_version}): activation buffer sized for max_num_tokens="
                             f"{tokens:,} (the build's default unless max_num_batched_tokens is given: "
                             "max_batch_size x max_input_len before 0.11, 8,192 after)")
        elif engine == "lmdeploy" and lmdeploy_kv_of_free_memory(w.engine_version):
            backend = "PyTorch engine" if lmdeploy_pytorch_engine(w.engine, w.engine_version) else "TurboMind"
            notes.append(f"LMDeploy {backend}: KV pool = cache_max_entry_count="
                         f"{w.gpu_memory_utilization or LMDEPLOY_CACHE_MAX_ENTRY_COUNT_FREE:g} x memory free after the "
                         "weights (v0.2.2 on)")
        else:
            notes.append(f"TensorRT-LLM-like: KV pool = {w.gpu_memory_utilization or 0.9:g} x memory free after "
                         "weights and activations (kv_cache_free_gpu_mem_fraction)")
        assert capacity is not None and m.headroom is not None
        if not m.weights_ok:
            notes.append(("weights exceed the mem_fraction_static reservation" if engine == "sglang" else
                          "weights + activation peak exceed the reservation") + ": the engine refuses to start")
        elif engine == "sglang" and m.act > cap_gib * GiB - m.reserved:
            notes.append("activations and CUDA graphs exceed what mem_fraction_static leaves: SGLang runs out of "
                         "memory")
        elif capacity < ctx:
            notes.append(f"KV pool holds {capacity} tokens, less than one {ctx}-token sequence")
        if m.fits and not m.batch_fits:
            notes.append(f"only ~{concurrency:.1f} sequences of {ctx} tokens fit at once; the rest queue")
        bd = MemoryBreakdown(per_gpu_gib=_gib(m.used), weights_gib=_gib(m.weights), kv_cache_gib=_gib(m.kv),
                             activations_gib=_gib(m.act), overhead_gib=_gib(m.overhead), host_ram_gib=_gib(m.host),
                             gpu_capacity_gib=cap_gib, headroom_gib=_gib(m.headroom), notes=notes)
        return MemoryEstimate(breakdown=bd, kv_cache_capacity_tokens=capacity, fits=bool(m.fits), engine=engine,
                              batch_fits=bool(m.batch_fits), max_concurrent_sequences=concurrency,
                              kv_bytes_per_token=m.kv_tok, weights_total_gib=_gib(r.weight_bytes), gpus=tp * pp)
    if engine == "ollama" and w.context_tokens is None:
        num_ctx = ollama_default_num_ctx(w.engine_version, gpu.capacity_gib * hw.count,
                                         r.arch.max_position_embeddings)
        notes.append(f"ollama: no context given, so its default num_ctx={num_ctx:,} per sequence is allocated "
                     "(2,048 before v0.6.7, 4,096 to v0.15.4, then 4k/32k/256k by VRAM); set --context for yours")
    if runs_llama_cpp(engine):
        notes.append("llama.cpp: KV cache fully allocated for n_ctx = context x batch (padded to "
                     f"{LLAMA_CPP_KV_PAD_FA if w.flash_attention else LLAMA_CPP_KV_PAD}); KV {r.kv_precision}; "
                     f"compute buffer for n_ubatch={LLAMA_CPP_UBATCH}; token embedding kept in host RAM")
        vision = llama_cpp_vision_bytes(r)
        if vision:
            notes.append(f"llama.cpp: the vision tower + projector ({_gib(vision):.2f} GiB, the separate mmproj"
                         " file) is not counted: the .gguf holds the text model, and the mmproj loads only with"
                         " --mmproj (add about that much for image input)")
    else:
        if not _modelled(engine):
            family = engine_family_by_name(engine)
            speed = (f"; its speed is modelled as {family}" if family and family != "transformers" else
                     "; its speed too")
            notes.append(f"engine {engine!r} has no memory model of its own: memory sized like HF transformers "
                         f"(weights + KV for batch x context + prefill activations){speed}")
        if engine in TRANSFORMERS_NAMES and transformers_full_logits(w.engine_version):
            notes.append(f"transformers {w.engine_version} (< 4.45) computes logits for all "
                         f"{w.prompt_tokens} prompt tokens in the prefill")
        if engine in TRANSFORMERS_NAMES and transformers_legacy_cache(w.engine_version):
            notes.append(f"transformers {w.engine_version} (< 4.42): generate() holds the previous step's KV "
                         "cache while building the next, two copies at the peak (counted in activations)")
        if torchao_quantises_on_device(r) and graph_replay_missing(r.engine, gpu):
            notes.append("torchao loads the bf16 checkpoint on the device and quantises it there; with no graph "
                         "capture on this GPU the allocator keeps that reservation: peak = bf16 weights + "
                         "quantisation temporaries")
    if m.spill > 0:
        notes.append(f"does not fit in VRAM: ~{m.spill:.0%} of layers would run from host RAM "
                     f"(-ngl {int(r.arch.num_layers * (1 - m.spill))}); host RAM counts them")
    if hw.host_ram_gib is not None and m.host > hw.host_ram_gib * GiB:
        notes.append(f"needs {_gib(m.host):.1f} GiB of host RAM; only {hw.host_ram_gib:g} GiB present/given")
    bd = MemoryBreakdown(per_gpu_gib=_gib(m.used), weights_gib=_gib(m.weights), kv_cache_gib=_gib(m.kv),
                         activations_gib=_gib(m.act), overhead_gib=_gib(m.overhead), host_ram_gib=_gib(m.host),
                         gpu_capacity_gib=cap_gib, headroom_gib=round(cap_gib - _gib(m.used), 4), notes=notes)
    return MemoryEstimate(breakdown=bd, kv_cache_capacity_tokens=capacity, fits=bool(m.fits), engine=engine,
                          batch_fits=bool(m.fits), max_concurrent_sequences=concurrency, kv_bytes_per_token=m.kv_tok,
                          weights_total_gib=_gib(r.weight_bytes - llama_cpp_vision_bytes(r)), gpus=tp * pp,
                          offload_fraction=m.cpu_share)


# ---------------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class OptimizerCost:
    """Bytes per trainable parameter beyond the 16-bit weights."""

    state_bytes: float  # optimizer states (incl. an fp32 master copy for mixed precision)
    grad_bytes: float  # gradient buffer
    name: str


# The words an optimizer name is read from (`optimizer_cost`, `adamw_implementation`), '-' or '_' between them: mlrig's
# own spellings and Hugging Face TrainingArguments' `optim` values (adamw_torch, adamw_torch_fused, adamw_apex_fused,
# adamw_bnb_8bit, paged_adamw_32bit, lion_8bit, ...)
OPTIMIZER_NAME_PARTS = frozenset({
    "adam", "adamw", "sgd", "lion", "adafactor", "default", "paged", "8bit", "4bit", "32bit", "bf16", "pure", "in",
    "bwd", "inbwd", "fused", "foreach", "torch", "hf", "bnb", "apex", "momentum"})


def optimizer_cost(optimizer: str, precision: str | Precision) -> OptimizerCost:
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
    try:
        parsed: Precision | None = quant.parse_precision(precision)
    except MlrigError:
        parsed = None  # an unknown spelling is priced as 16-bit mixed precision
    amp = parsed is not None and parsed.master_in_weights
    fp32 = parsed is not None and (parsed.compute == "fp32" or amp)
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
    unread = [part for part in o.split("-") if part and part not in OPTIMIZER_NAME_PARTS]
    if unread:  # 'adamw-fusedd' read as fused AdamW, silently, by the substring tests above
        raise MlrigError(f"optimizer {optimizer!r}: {unread[0]!r} is not a part mlrig reads; use adamw, adamw-fused, "
                         "adamw-foreach, adamw-bf16, adamw-8bit, paged-adamw-8bit, sgd, lion or adafactor (suffix "
                         "-in-bwd for a step fused into backward), or Hugging Face optim names (adamw_torch_fused)")
    grads = 4.0 if fp32 else 2.0
    if "in-bwd" in o or "inbwd" in o:
        grads = 0.0
    return OptimizerCost(state_bytes=master + states, grad_bytes=grads, name=o)


def qlora_base_precision(precision: Precision) -> Precision:
    """The frozen base's storage in QLoRA: the plan's own NF4 variant (`nf4` with double quantisation, `nf4-nodq`
    without: Lightning's `bnb.nf4` / HF `bnb_4bit_use_double_quant=False` keep an fp32 absmax per 64 weights,
    0.37 bit more per weight; QLoRA paper sec. 3), else NF4 with double quantisation (the paper's set-up)."""
    return precision if precision.scheme.name in ("nf4", "nf4-nodq") else quant.NF4


def _float_precision(precision: Precision) -> Precision:
    """The precision itself when it is a float format (fp32/bf16/fp16), else bf16: what full
    training or a LoRA base runs at when the given precision cannot be trained."""
    return precision if precision.is_float else quant.BF16


_LORA_SHAPES = ("q", "k", "v", "o", "gate", "up", "down")
# Group names published configs use (torchtune lora_attn_modules / apply_lora_to_mlp, NeMo
# target_modules "attention"/"mlp", axolotl lora_target_linear): expanded to the projections.
_LORA_GROUPS = {"attention": ("q", "k", "v", "o"), "attn": ("q", "k", "v", "o"), "mlp": ("gate", "up", "down"),
                "all-linear": _LORA_SHAPES, "all_linear": _LORA_SHAPES}
# Matrices trained fully beside the adapters (PEFT modules_to_save, axolotl lora_modules_to_save).
_LORA_FULL = {"embeddings": "embedding", "embed_tokens": "embedding", "embedding": "embedding",
              "lm_head": "lm_head", "output": "lm_head"}


def _lora_target_keys(targets: list[str]) -> tuple[tuple[str, ...], frozenset[str]]:
    """(adapted projections without repeats, fully trained matrices) from the names users give: read
    once per list of names (a training batch asks for the same few lists, several times a plan)."""
    return _read_lora_targets(tuple(targets))


@lru_cache(maxsize=256)
def _read_lora_targets(targets: tuple[str, ...]) -> tuple[tuple[str, ...], frozenset[str]]:
    keys: list[str] = []
    full: set[str] = set()
    for t in targets:
        key = t.strip().lower().removesuffix("_proj")
        if key in _LORA_GROUPS:
            keys += [k for k in _LORA_GROUPS[key] if k not in keys]
        elif key in _LORA_SHAPES:
            if key not in keys:
                keys.append(key)
        elif key in _LORA_FULL:
            full.add(_LORA_FULL[key])
        else:
            raise MlrigError(f"unknown LoRA target {t!r}; use any of {', '.join(_LORA_SHAPES)}, attention, mlp, "
                             "embeddings, lm_head")
    return tuple(keys), frozenset(full)


def lora_full_params(arch: ModelArch, targets: list[str]) -> int:
    """Parameters of the embedding / output head when `targets` names them: trained fully (PEFT
    `modules_to_save`), so they carry gradients and optimizer state like full fine-tuning. A tied
    head shares the embedding's matrix: counted once."""
    _, full = _lora_target_keys(targets)
    pb = arch.params()
    n = 0
    if "embedding" in full or ("lm_head" in full and arch.tie_word_embeddings):
        n += pb.embedding
    if "lm_head" in full and not arch.tie_word_embeddings:
        n += pb.lm_head
    return n


def lora_params(arch: ModelArch, rank: int, targets: list[str]) -> int:
    """Trainable parameters of a LoRA run: r x (in + out) per adapted matrix (Hu et al. 2021),
    summed over layers, shapes from the architecture (routed MoE experts are not adapted), plus the
    embedding / head when named ("embeddings", "lm_head": trained fully, `lora_full_params`)."""
    h, d = arch.hidden_size, arch.dim_head
    q_out, kv_out = arch.num_heads * d, arch.kv_heads * d
    inter = arch.intermediate_size
    dense_layers = arch.num_layers - arch.num_moe_layers
    shapes = {"q": (h, q_out), "k": (h, kv_out), "v": (h, kv_out), "o": (q_out, h)}
    keys, _ = _lora_target_keys(targets)
    per_layer = sum(rank * sum(shapes[k]) for k in keys if k in shapes)
    total = per_layer * arch.num_layers
    mlp_targets = [k for k in keys if k in ("gate", "up", "down")]
    if arch.mlp == "plain":
        mlp_targets = [k for k in mlp_targets if k != "gate"]
    total += len(mlp_targets) * rank * (h + inter) * dense_layers
    return total + lora_full_params(arch, targets)


def lora_adapted_matrices(arch: ModelArch, targets: list[str]) -> int:
    """Weight matrices that carry an adapter, summed over layers, as `lora_params` counts them: each
    attention target in every layer, each MLP target in the dense layers (routed experts are not adapted;
    a plain MLP has no gate). Each one holds two trainable Linears, lora_A and lora_B (PEFT's LoraLayer)."""
    keys, _ = _lora_target_keys(targets)
    attn = sum(1 for k in keys if k in ("q", "k", "v", "o"))
    mlp = [k for k in keys if k in ("gate", "up", "down")]
    if arch.mlp == "plain":
        mlp = [k for k in mlp if k != "gate"]
    return attn * arch.num_layers + len(mlp) * (arch.num_layers - arch.num_moe_layers)


# Training frameworks whose gated-MLP activation is one fused autograd op that saves only its input (the fc1
# output, gate and up together) for backward: Megatron-Core's `bias_swiglu_impl` / `bias_geglu_impl`
# (megatron/core/fusions/fused_bias_swiglu.py, `SwiGLUFunction.forward`: `ctx.save_for_backward(input)`; the
# backward recomputes silu(gate) from it), called from megatron/core/transformer/mlp.py when
# `bias_activation_fusion` is on. Megatron-LM turns it on for --swiglu models unless --no-bias-swiglu-fusion
# (megatron/training/arguments.py, `dest='bias_swiglu_fusion'`, store_false, default on since commit de9428a
# "enable swiglu and rope fusion by default", 2024-01-18, core 0.5; argument_utils.py:
# `bias_activation_fusion = args.bias_swiglu_fusion`); NeMo trains through the same Megatron-Core MLP, and its
# Llama-style model configs (as Megatron-Bridge's model providers, e.g. Llama3ModelProvider) set
# `bias_activation_fusion: bool = True`. Megatron-SWIFT runs Megatron-LM's arguments (default on). Read at
# NVIDIA/Megatron-LM d98e8a6 (2026-08-22). The unfused path (`glu` in mlp.py: silu(x_glu) * x_linear) keeps
# the fc1 output, the silu output and the product's operands: one more intermediate-wide tensor.
FUSED_GLU_ENGINES = ("megatron", "nemo")
# The release the fused activation arrived in, and its month. Megatron-LM history: the kernel came with 8503f75
# "add rope and swiglu fusion" (2023-11-15, `SwiGLUFunction.forward` saving only its input(s)), was wired into
# megatron/core/transformer/mlp.py behind `bias_activation_fusion` and turned on by default by de9428a (2024-01-18),
# merged to main by 640af6b (2024-01-19); the first release holding them is core_v0.5.0 (tagged 2024-02-26).
# core_v0.4.0 (2023-12-11) has only the unfused `glu` (mlp.py: `self.config.activation_func(x[0]) * x[1]`) and
# `bias_gelu_fusion` for GeLU. NeMo trains through the same Megatron-Core MLP, so a NeMo container dated before
# that month has it unfused too. (Megatron-LM's own pretrain_gpt.py built Megatron-Core models only under
# --use-mcore-models until 9ad1a56 "Change default to use mcore models, not legacy", 2024-05-24, core_v0.8.0; the
# legacy ParallelMLP's swiglu is unfused. Runs of core 0.5-0.7 are taken as Megatron-Core runs, as NVIDIA's
# example scripts of those releases pass the flag: examples/gpt3/train_gpt3_175b_distributed.sh at core_v0.5.0,
# core_v0.6.0 and core_v0.7.0.)
FUSED_GLU_FROM_CORE = (0, 5)
FUSED_GLU_FROM_MONTH = (2024, 2)


def megatron_release_month(version: str) -> tuple[int, int] | None:
    """The month a Megatron-LM / NeMo / NGC container release names: '23.09', 'NeMo Framework Release 24.04',
    'PyTorch NVIDIA Release 23.09' (YY.MM), or an ISO month ('2023-12')."""
    v = parse_version(version)
    if v is None:
        return None
    if v.month is not None:
        return v.month
    r = v.release
    if r is not None and len(r) in (2, 3) and 20 <= r[0] <= 40 and 1 <= r[1] <= 12:
        return (2000 + r[0], r[1])
    return None


def fused_glu(engine: str | None, version: str | None = None) -> bool:
    """`FUSED_GLU_ENGINES`, but not Megatron-DeepSpeed (its `swiglu` is the unfused F.silu(x[0]) * x[1]), nor a
    run that names a release before the fusion (`FUSED_GLU_FROM_CORE`): a Megatron-Core version below 0.5
    ('core 0.4', 'megatron-core 0.4.0', 'core_v0.4.0') or a Megatron-LM / NeMo / NGC container release dated
    before February 2024 ('23.11'). No version, or one that names neither (a NeMo toolkit '2.0', a commit):
    the current behaviour, fused."""
    if not (_engine_is(engine, FUSED_GLU_ENGINES) and "deepspeed" not in (engine or "").lower()):
        return False
    if not version:
        return True
    text = version.lower().replace("core_r", "core ").replace("core_v", "core ")
    month = megatron_release_month(text)
    if month is not None:
        return month >= FUSED_GLU_FROM_MONTH
    v = parse_version(text)
    if v is not None and v.release is not None and v.release[0] == 0:
        return v.release >= FUSED_GLU_FROM_CORE
    return True


def layer_activation_bytes(arch: ModelArch, seq: Num, micro_batch: Num, flash: bool, tp: int = 1,
                           element_bytes: float = 2.0, sequence_parallel: bool = False,
                           fused_gated_mlp: bool = False) -> Num:
    """Activations one transformer layer keeps for backward, 16-bit (Korthikanti et al. 2022,
    "Reducing Activation Recomputation", sec. 4: s*b*h*(34 + 5*a*s/h) for a GPT layer with a 4h
    MLP and dropout). Generalised to modern blocks without dropout: attention input, Q, K, V
    (GQA widths), attention output 2*(3h + 2*kv_dim)*sb; gated MLP input + gate, up, act and
    product 2h + 8i (plain: 2h + 4i, GeLU input and output); with the activation fused into one op that
    saves only its input (`fused_gated_mlp`, `FUSED_GLU_ENGINES`) 2h + 6i: the fc1 input h, the fc1
    output 2i (gate and up) and the fc2 input i (the activation's output); two norm inputs 4h. Unfused
    attention adds the 5*a*s^2*b score / softmax / dropout tensors. TP splits the per-head and
    MLP parts; the norm inputs (and dropouts) stay replicated unless Megatron sequence
    parallelism shards them too (Korthikanti sec. 4.2.2: sbh(10 + 24/t) -> sbh(34/t)). fp32
    training stores everything at 4 bytes (element_bytes=4 doubles the figure).
    Sliding-window layers (Gemma 2/3, Mistral-7B-v0.1, gpt-oss) keep the same: fused attention saves Q, K, V,
    the output and a per-query log-sum-exp, all linear in s whatever the window (FlashAttention-2's backward
    recomputes the band's scores from them), and eager attention applies the window as a mask on the full
    s x s scores (transformers' `eager_attention_forward`), so its 5 a s^2 b is the same for both kinds of
    layer; only the FLOPs shrink (`training_speed.attention_layer_keys`)."""
    h = arch.hidden_size
    kvd = arch.kv_heads * arch.dim_head
    i = _mlp_width(arch)
    mlp = 2 * h + ((6 * i if fused_gated_mlp else 8 * i) if arch.mlp == "gated" else 4 * i)
    attn = 2 * (3 * h + 2 * kvd)
    per_token = (4 * h + attn + mlp) / tp if sequence_parallel else 4 * h + (attn + mlp) / tp
    act = seq * micro_batch * per_token
    if not flash:
        act = act + 5 * (arch.num_heads / tp) * seq * seq * micro_batch
    return act * element_bytes / 2


# Frameworks whose default AdamW is a fused (single-kernel, per-tensor) implementation, with no
# parameter-sized temporaries: Megatron-LM / NeMo (Apex or Transformer Engine FusedAdam), DeepSpeed
# (FusedAdam), torchtune's recipes (torch.optim.AdamW fused=True in their configs), MosaicML
# llm-foundry (DecoupledAdamW / LionW, a per-parameter loop). PyTorch's own AdamW defaults to the
# foreach implementation on CUDA (torch.optim docs, "foreach (bool, optional)"), as in HF Trainer
# (optim="adamw_torch") and LitGPT.
FUSED_OPTIMIZER_ENGINES = ("megatron", "nemo", "deepspeed", "torchtune", "llm-foundry", "fms-fsdp",
                           "olmo-core", "atorch", "maxtext", "torchtitan")
# Hugging Face PEFT's prepare_model_for_kbit_training casts every fp16/bf16 parameter that is not 4-bit (norms,
# embedding, lm_head) to fp32 (peft/utils/other.py, v0.13.0: `param.data = param.data.to(torch.float32)` unless
# `Params4bit`; the same through 0.19). QLoRA with no engine named is taken as HF PEFT + bitsandbytes, where most
# QLoRA users are. `kbit_upcast` says what stays fp32 for which framework.
HF_PEFT_ENGINES = ("hf", "transformers", "peft", "hf-peft", "hf-trainer", "trl", "unsloth", "universal-llm-trainer")
# TRL's SFTTrainer (v0.13.0 to v0.24: sft_trainer.py) calls prepare_model_for_kbit_training on a 4-bit model that is not
# sharded and then, under bf16=True, trl.trainer.utils.peft_module_casting_to_bf16, which casts embed_tokens and
# lm_head back to bf16 but keeps every norm fp32. For a sharded QLoRA (FSDP / ZeRO-3) it calls neither. v0.25 has its
# own prepare_model_for_kbit_training (trl/models/utils.py) that upcasts only the norms; from v0.26 (2025-12-09,
# PR #4457 "Prevent upcasting norm layers") it upcasts nothing.
TRL_ENGINES = ("trl",)
TRL_NO_UPCAST_FROM = (0, 26)
TRL_NO_UPCAST_MONTH = (2025, 12)
# axolotl (src/axolotl/utils/models.py at 682a9cf, April 2025) calls prepare_model_for_kbit_training and then, for any
# LoRA/QLoRA adapter, converts the norms and the embedding modules back to torch_dtype
# (`convert_embedding_modules_dtype`: "LlamaRMSNorm layers are in fp32 after kbit_training ... convert them back to
# fp16/bf16 for flash-attn compatibility"); a QLoRA under FSDP or ZeRO-3 skips prepare. Nothing stays fp32.
NO_UPCAST_PEFT_ENGINES = ("axolotl",)


@dataclass(frozen=True)
class KbitUpcast:
    """What a QLoRA framework keeps in fp32 after preparing the 4-bit model (`kbit_upcast`)."""

    ends_fp32: bool  # the embedding and the output head are stored in fp32 (2 B more per parameter)
    stream_fp32: bool  # the norms are fp32, so the hidden states between the 4-bit projections are fp32


def _trl_upcasts_norms(version: str | None) -> bool:
    """Whether a TRL run of this version (a release, or the run's month) keeps the norms fp32: before v0.26.
    No version: the current release, which does not."""
    v = parse_version(version)
    if v is None:
        return False
    if v.month is not None:
        return v.month < TRL_NO_UPCAST_MONTH
    return v.release is not None and v.release < TRL_NO_UPCAST_FROM


def kbit_upcast(engine: str | None, sharded: bool, version: str | None = None) -> KbitUpcast:
    """The fp32 parameters of an HF-stack QLoRA run and what they do to the activations.

    With fp32 norm weights the hidden states run in fp32: transformers' RMSNorm returns
    `self.weight * hidden_states.to(input_dtype)` (modeling_llama / modeling_mistral LlamaRMSNorm.forward), fp32
    once the weight is; bitsandbytes' Linear4bit casts its input to the compute dtype for the matmul and its output
    back to the input's dtype (bitsandbytes/nn/modules.py, 0.43.3 to 0.49.2 `Linear4bit.forward`: `.to(inp_dtype)`), so
    q/k/v/o and the MLP projections return fp32; each residual add promotes to fp32. From the first norm on, every
    layer input is fp32 (bitsandbytes issue #1515: the model's last_hidden_state becomes fp32 after
    prepare_model_for_kbit_training), and recomputation keeps those inputs at 4 B per element instead of 2.
    Checked on the fms-acceleration A100 rows, where the same Mistral-7B run with and without PEFT's upcast
    (FMSACC-0001/0002, TRL's SFTTrainer, vs FMSACC-0003/0004, the plugin's prepare without it) differs by 4.00 /
    8.00 GiB at batch 4 / 8: 2 B x 4,096 hidden x 4,096 tokens x 32 layers per sample, nothing else.
    `sharded`: a QLoRA under FSDP / ZeRO-3 over several GPUs, where TRL and axolotl skip the preparation; plain PEFT
    there keeps mlrig's earlier reading (fp32 ends, 16-bit stream) for want of a measurement. `version`: TRL's
    (`TRL_NO_UPCAST_FROM`)."""
    if _engine_is(engine, NO_UPCAST_PEFT_ENGINES):
        return KbitUpcast(ends_fp32=False, stream_fp32=False)
    if _engine_is(engine, TRL_ENGINES):
        return KbitUpcast(ends_fp32=False, stream_fp32=not sharded and _trl_upcasts_norms(version))
    if engine is None or _engine_is(engine, HF_PEFT_ENGINES):
        return KbitUpcast(ends_fp32=True, stream_fp32=not sharded)
    return KbitUpcast(ends_fp32=False, stream_fp32=False)
# ms-swift 1.x `swift sft` (modelscope/ms-swift 97e4d198b, 1.6.0.dev0, the version its benchmark ran): the
# transformers Trainer over the models' own HF modelling code, but with its own tuners and no
# prepare_model_for_kbit_training for QLoRA (swift/llm/tuner.py `prepare_model` wraps the model in a LoRA
# config only, so the embeddings and output head stay 16-bit); no packing: each sample is a batch of its own
# length, padded to the longest in the batch (swift/llm/utils/utils.py `data_collate_fn`, padding_to only for
# LongLoRA), over a dataset of mixed lengths. Step after step the caching allocator gets differently sized
# logits and activations; blocks cached for one length are split or left unused for the next, and the
# reservation grows well past what is live (PyTorch "CUDA semantics", memory management: fragmentation with
# changing allocation sizes, the case `expandable_segments` was added for). `ms_swift_fragmentation`.
MS_SWIFT_ENGINES = ("ms-swift", "swift")


def is_ms_swift(engine: str | None) -> bool:
    """`MS_SWIFT_ENGINES`, but not Megatron-SWIFT (`megatron sft`: Megatron-Core's own data path and loop)."""
    return _engine_is(engine, MS_SWIFT_ENGINES) and "megatron" not in (engine or "").lower()


# Frameworks whose fine-tuning computes the loss in chunks by default, never holding fp32 logits for the
# whole micro-batch: torchtune (CEWithChunkedOutputLoss in its recipes) and LitGPT (finetune/lora.py,
# full.py: `model(input_ids, lm_head_chunk_size=128)` and litgpt.utils.chunked_cross_entropy).
CHUNKED_LOSS_ENGINES = ("torchtune", "litgpt", "lit-gpt")
# Frameworks that call the model WITHOUT labels and take the cross-entropy of its bf16 logits themselves:
# universal-llm-trainer (ljm565/universal-llm-trainer at 1c4dca89, src/models/llama3.py `Llama3.forward`, the same
# in gemma.py, gemma2.py, llama2.py, phi3.py: `self.model(input_ids=..., attention_mask=...)`, then
# `nn.CrossEntropyLoss()(output.logits[:, :-1, :].reshape(-1, V), ...)`, and `del output` before backward with
# `del_logits_after_forward`; docker/requirements.txt pins transformers==4.49.0). From transformers 4.46 a causal-LM
# forward without labels returns logits in the model's dtype ("do not upcast them to float if we are not computing
# the loss", LlamaForCausalLM.forward; 4.45 still upcast with a deprecation warning), so nothing is fp32: forward
# holds the bf16 logits (2 B per logit), their shifted contiguous copy (2) and the log-softmax (2, saved for
# backward); backward the saved log-softmax, nll's dense gradient and log-softmax's input gradient (2 each).
# `BF16_LOSS_BYTES_PER_LOGIT` at either peak, against the fp32 loss's 12 B (transformers' loss_function upcasts
# when labels are passed: HF Trainer, TRL). Not for QLoRA: its src/trainer/build.py runs PEFT's
# prepare_model_for_kbit_training, whose fp32 lm_head (`kbit_upcast`) returns fp32 logits. Physics from the
# source; the rows (ULT-*) are held out and chose nothing.
BF16_LOSS_ENGINES = ("universal-llm-trainer",)
BF16_LOSS_BYTES_PER_LOGIT = 6.0
# Frameworks whose chunked loss is fused with the output head and chunks the VOCABULARY, never holding logits for
# the whole vocabulary: prime-rl's RL trainer (src/prime_rl/trainer/models/layers/lm_head.py at b798a90d6,
# `FusedOutputLinear` / `_ChunkedLogProbEntropyFn`; the RL config sets `fused_lm_head_chunk_size` 'auto' to
# 2,048): the forward runs `hidden @ w_chunk.t()` for 2,048 vocabulary columns at a time with an online
# logsumexp, saves only the hidden states and logZ, and the backward recomputes each chunk's logits. The
# largest transient is one chunk in backward: bf16 logits (2 B), their fp32 scaled copy (4), the softmax p (4)
# and the logits' gradient (4): `FUSED_HEAD_BYTES_PER_LOGIT` per token x chunk column. Value: vocabulary
# columns per chunk. (torchtune's chunked loss, `CHUNKED_LOSS_ENGINES`, chunks the tokens of bf16 logits
# computed for the whole vocabulary, so it holds them all.) Counted from the code, not fitted; checked on the prime-rl
# benchmark rows (finetune_prime_rl_bench.jsonl): Qwen3-0.6B RL LoRA on one RTX A6000 at 16,384 / 65,536 tokens
# measured 5.09 / 11.45 GiB reserved (PRIMERL-0002 / -0004), 16.3 / 57.6 predicted with whole-vocabulary logits,
# 4.4 / 10.0 with one chunk and FSDP2_PARAM_CAST_ENGINES; over the 53 rows the median error went 54 % -> 12 %.
FUSED_VOCAB_CHUNK_HEAD_ENGINES: dict[str, int] = {"prime-rl": 2048}
FUSED_HEAD_BYTES_PER_LOGIT = 14.0
# Frameworks that train fp32 weights under PyTorch FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16) rather
# than torch.autocast: the all-gather casts each unit's parameters to bf16 before its forward and the module
# then computes entirely in bf16 (torch.distributed.fsdp.MixedPrecisionPolicy, `cast_forward_inputs`), so the
# residual stream and the layer inputs recomputation keeps are bf16 (not the fp32 of AMP, `bf16-mixed`), and no
# per-matmul weight copy is cached (the bf16 unsharded parameters are freed at reshard). prime-rl
# (src/prime_rl/trainer/model.py at b798a90d6: model loaded in `optimization_dtype` float32, `mp_policy =
# MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=...)`).
FSDP2_PARAM_CAST_ENGINES = ("prime-rl",)


def fused_vocab_chunk(engine: str | None) -> int | None:
    """Vocabulary columns per chunk of a fused output head + loss (`FUSED_VOCAB_CHUNK_HEAD_ENGINES`), or None."""
    e = (engine or "").lower()
    return next((c for n, c in FUSED_VOCAB_CHUNK_HEAD_ENGINES.items() if e.startswith(n)), None)


# Frameworks whose model code gives the output head its own matrix even when the checkpoint ties it to the
# embedding: LitGPT (litgpt/model.py).
UNTIED_HEAD_ENGINES = ("litgpt", "lit-gpt")
# Frameworks whose LoRA default has dropout on the adapters' input: LitGPT (finetune/lora.py
# `lora_dropout: float = 0.05`, and its config_hub LoRA/QLoRA yamls). PEFT's LoraConfig (lora_dropout=0.0),
# torchtune's LoRA builders (lora_dropout=0.0) and Unsloth (0 recommended) default to none.
LORA_DROPOUT_ENGINES = ("litgpt", "lit-gpt")


def lora_dropout_bytes_per_token(arch: ModelArch, targets: list[str], tp: int = 1, element_bytes: float = 2.0) -> float:
    """Activation bytes per token and layer that LoRA dropout adds (LitGPT, `LORA_DROPOUT_ENGINES`):
    each adapted input is dropped out once more for the adapter path, `lora_B(lora_A(dropout(x)))`
    (Hu et al. 2021 with the dropout of PEFT/LitGPT), and torch's native_dropout keeps that copy (the
    input of lora_A's matmul) and its 1-byte mask for backward. LitGPT fuses q, k, v into one LoRAQKVLinear
    (litgpt/lora.py): one copy of the block input for any of them; the output projection, the MLP's gate
    and up (one LoRALinear each) and its down projection each drop their own input."""
    keys, _ = _lora_target_keys(targets)
    h = arch.hidden_size
    dense = (arch.num_layers - arch.num_moe_layers) / arch.num_layers if arch.num_layers else 1.0
    widths: list[float] = [h] if any(k in keys for k in ("q", "k", "v")) else []
    if "o" in keys:
        widths.append(arch.num_heads * arch.dim_head / tp)
    gate_up = [k for k in ("gate", "up") if k in keys and not (k == "gate" and arch.mlp == "plain")]
    widths += [h * dense] * len(gate_up)  # routed MoE experts carry no adapters (lora_params)
    if "down" in keys:
        widths.append(_mlp_width(arch) / tp * dense)
    return sum(widths) * (element_bytes + 1)


def qlora_kept_input_bytes_per_token(arch: ModelArch, targets: list[str], dropout: bool, tp: int = 1,
                                     element_bytes: float = 2.0) -> float:
    """Activation bytes per token and layer that QLoRA keeps beyond a LoRA on a 16-bit base, for each copy
    `qlora_kept_input_copies` counts (bitsandbytes up to 0.43.1).

    PyTorch's own linear saves its input only when the weight needs a gradient (autograd's generated
    code saves `self` for mm/addmm under `should_compute_output` of the weight), so a frozen 16-bit
    projection keeps nothing of its input. bitsandbytes' 4-bit matmul is a custom autograd Function that
    up to 0.43.1 keeps its input whenever any gradient is needed (bitsandbytes/autograd/_functions.py,
    MatMul4Bit: `ctx.tensors = (A, B)`). So each quantised projection keeps its input: the attention block's
    input (for q, k, v), the attention output's reshaped copy (o), the MLP input (gate, up) and the down
    projection's input, unless a LoRA adapter without dropout on that projection keeps it anyway (its
    lora_A matmul saves the same tensor; with dropout it saves the dropped-out copy instead). A parallel block
    with one shared input norm (`norms_per_layer` 1: Falcon-7B, Phi-1.5/2, Command-R; HF FalconDecoderLayer
    and PhiDecoderLayer feed one `input_layernorm` output to both attention and MLP) hands q, k, v and the MLP's
    first projection the same tensor: kept once. Fitted on nothing; checked on LitGPT's QLoRA rows
    (LITGPT-0008/0051, ~2-3 GiB above their LoRA twins beyond the weights; the parallel Falcon-7B and Phi-2
    rows LITGPT-0002/0015 read 1.10 / 1.15 of their measurements with the MLP input counted twice)."""
    keys, _ = _lora_target_keys(targets)
    h = arch.hidden_size
    shared = arch.norms_per_layer == 1
    first: tuple[str, ...] = ("q", "k", "v", "gate", "up") if shared else ("q", "k", "v")
    inputs: list[tuple[tuple[str, ...], float]] = [
        (first, h), (("o",), arch.num_heads * arch.dim_head / tp), (("down",), _mlp_width(arch) / tp)]
    if not shared:
        inputs.append((("gate", "up"), h))
    kept = sum(width for names, width in inputs if dropout or not any(k in keys for k in names))
    return kept * element_bytes


# Frameworks whose QLoRA does not run bitsandbytes' 4-bit matmul: torchtune's QLoRA builders use torchao's NF4Tensor,
# whose `linear_nf4` autograd Function keeps only the weight for its backward (torchao/dtypes/nf4tensor.py,
# `LinearNF4.forward`: `ctx.save_for_backward(weight)`), so a frozen NF4 projection keeps nothing of its input, as
# torch's own linear.
NON_BNB_QLORA_ENGINES = ("torchtune", "torchao")


def qlora_kept_input_copies(engine: str | None, version: str | None, checkpointing: str = "none") -> float:
    """How many micro-batches' worth of the 4-bit projections' inputs (`qlora_kept_input_bytes_per_token`) are
    alive at the peak.

    - 0 where the 4-bit matmul keeps none: bitsandbytes from 0.43.2 (commit 9e75374, July 2024: `ctx.tensors =
      (None, B)`; mlrig.estimators.engines), and torchtune / torchao (`NON_BNB_QLORA_ENGINES`).
    - 1 with bitsandbytes up to 0.43.1, whose MatMul4Bit forward keeps `ctx.tensors = (A, B)`: LitGPT before
      0.5.5 (it pinned 0.42.0; `engines.litgpt_era`), or an HF-stack run dated (engine_version as a month)
      before July 2024.
    - 2 under LitGPT 0.2 to 0.5.4 without recomputation. That kept input is a plain ctx attribute, which autograd
      does not release after backward (it frees only what `save_for_backward` saved): it lives as long as the
      graph. LitGPT's loop holds the graph through its `logits` list (finetune/lora.py `fit`: `logits =
      model(input_ids, lm_head_chunk_size=128)`) until the next micro-batch's forward has returned, so at the end
      of every forward the previous micro-batch's kept inputs are still there. Counted at the plan's shape (two
      full-length micro-batches in a row: packed or truncated data; shorter predecessors hold less). lit-gpt
      before 0.2 trained its longest sample first (`longest_seq_ix if iter_num == 0`), with no graph before it,
      so its peak has one copy. Checked on the LitGPT config_hub QLoRA rows (LITGPT-0002..0035, bitsandbytes
      0.42.0, 0.75-0.91 of their measurements with one copy) and its 2023 Resource Tables (LITGPT-0041..0056,
      one copy). With recomputation the inputs live only in the recomputed layer: one copy.
    """
    e = (engine or "").lower()
    if _engine_is(e, NON_BNB_QLORA_ENGINES):
        return 0.0
    if _engine_is(e, QUANTISED_HEAD_ENGINES):
        era = litgpt_era(version)
        if era == "current":
            return 0.0
        return 2.0 if era == "bnb-0.42" and checkpointing == "none" else 1.0
    return 1.0 if bnb_keeps_4bit_input(version) else 0.0


# Frameworks whose bitsandbytes QLoRA quantises the output head too: LitGPT (Lightning's BitsandbytesPrecision
# swaps every torch.nn.Linear for its 4-bit class in module_init_context, lm_head included; litgpt/model.py keeps
# lm_head an nn.Linear). HF transformers keeps the output embedding unquantised (integrations/bitsandbytes
# get_keys_to_not_convert), as do torchtune's QLoRA builders (output_proj a plain nn.Linear).
QUANTISED_HEAD_ENGINES = ("litgpt", "lit-gpt")


def qlora_dequant_buffer_bytes(arch: ModelArch, engine: str | None, tp: int = 1) -> float:
    """The 16-bit copy bitsandbytes makes of a 4-bit weight for each GEMM: MatMul4Bit.forward runs
    `linear(A, dequantize_4bit(B, quant_state).to(A.dtype).t())` and its backward dequantises again for the
    input gradient (bitsandbytes/autograd/_functions.py), the whole matrix each time. The largest quantised
    matrix sets the transient: the widest block projection (hidden x MLP width), or under
    `QUANTISED_HEAD_ENGINES` the output head, vocab x hidden (Gemma-2B: 256,000 x 2,048 x 2 B = 0.98 GiB,
    where the MLP's is 0.06 GiB). LitGPT's chunked head (lm_head_chunk_size=128) dequantises it again for
    every chunk, one at a time. `dequantize_4bit` returns the dtype the weight was quantised from
    (`quant_state.dtype`); Lightning's BitsandbytesPrecision, which LitGPT uses, quantises from fp16 (its
    `_Linear4bit.quantize`: `weight.contiguous().to(device=device, dtype=torch.half)`), so under a bf16
    compute dtype the `.to(A.dtype)` makes a second copy while the fp16 one is alive: 4 B per weight at that
    instant. HF transformers quantises the weight in the dtype it was loaded in (normally the compute dtype):
    one copy. Checked on LitGPT's QLoRA rows of large-vocabulary models (LITGPT-0005/0028/0029/0032/0035,
    0.67-0.76 of measured with no head copy)."""
    largest = arch.hidden_size * max(arch.intermediate_size, arch.hidden_size)
    copies = 1.0
    if _engine_is(engine, QUANTISED_HEAD_ENGINES):
        largest = max(largest, arch.vocab_size * arch.hidden_size)
        copies = 2.0
    return largest * 2 * copies / tp


# Frameworks that train Hugging Face transformers models with activation checkpointing applied from outside the
# model, so that HF's own `gradient_checkpointing` flag stays off and `use_cache` keeps its config default (True
# for Llama, Mistral, Qwen, ...): atorch's FSDP path (dlrover atorch/examples/llama2/fsdp_llama2.py builds
# AutoModelForCausalLM.from_config and auto_accelerate's "checkpoint" strategy calls torch's
# apply_activation_checkpointing on the decoder layers: atorch/auto/opt_lib/checkpoint_optimization.py). See
# `hf_train_kv_cache_bytes_per_token`. atorch's DeepSpeed 3D path runs LlamaModel layers as pipeline stages,
# which pass only hidden states on: it is excluded by name.
HF_CACHE_IN_TRAINING_ENGINES = ("atorch",)


def keeps_hf_kv_cache(engine: str | None, checkpointing: str) -> bool:
    """Whether a training run keeps every layer's K/V as HF past_key_values (`HF_CACHE_IN_TRAINING_ENGINES`,
    with full recomputation: without it the attention's own saved K/V are the same tensors)."""
    e = (engine or "").lower()
    return checkpointing == "full" and _engine_is(e, HF_CACHE_IN_TRAINING_ENGINES) and "deepspeed" not in e


def hf_train_kv_cache_bytes_per_token(arch: ModelArch, tp: int = 1, element_bytes: float = 2.0) -> float:
    """Bytes per token and layer of the KV cache a Hugging Face causal LM builds while training with
    `use_cache=True`: transformers' LlamaModel.forward turns use_cache off only under its own gradient
    checkpointing ("`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`");
    otherwise each decoder layer returns its post-RoPE keys and values (`past_key_value = (key_states,
    value_states) if use_cache`) and the model output holds all of them (past_key_values) until the training
    loop drops that output, after backward. Under full recomputation nothing else keeps those tensors, so they
    add K + V at the compute dtype for every layer: 2 x kv_heads x head_dim x element bytes (TP splits heads).
    Checked on the atorch FSDP rows ATORCH-0002..0016 (Llama-2-7B, 4 x 4096 tokens: 8 GiB, the part of the
    measured peak that is the same for full and LoRA fine-tuning and for 8 to 64 GPUs)."""
    return 2 * arch.kv_heads * arch.dim_head / tp * element_bytes


# Frameworks whose multi-GPU fine-tuning wraps each transformer block, adapters and frozen weights
# together, in one PyTorch FSDP1 unit (use_orig_params=True) and accumulate gradients under FSDP's
# `no_sync()`: LitGPT / lit-gpt (Lightning Fabric FSDPStrategy(auto_wrap_policy={Block}) and
# `fabric.no_backward_sync(model, enabled=is_accumulating)` in finetune/lora.py and full.py). See
# `fsdp1_grad_bytes`.
FSDP1_NO_SYNC_ENGINES = ("litgpt", "lit-gpt", "lightning")


# Frameworks whose FSDP wraps only the transformer blocks, leaving the embedding and the output head in the root
# unit, which PyTorch FSDP does not reshard after forward: "Do not free the root's parameters in the post-forward
# for FULL_SHARD with the intention that they are immediately used for backward computation"
# (torch/distributed/fsdp/_runtime_utils.py `_post_forward`; FSDP2's fully_shard skips the root's reshard too,
# when reshard_after_forward is left at its default). So at the head of backward the whole embedding and head are
# gathered on every rank, at the parameters' dtype: LitGPT (Fabric FSDPStrategy(auto_wrap_policy={Block})),
# atorch (atorch_wrap_cls = decoder layer), Answer.AI fsdp_qlora (decoder layers + LoRA modules), and any engine
# named with "fsdp" (HF accelerate / Trainer FSDP wraps transformer_layer_cls_to_wrap the same way). An HF
# Trainer / accelerate / axolotl run named without it may as well be DeepSpeed ZeRO-3, which gathers and
# releases parameters per module: left out. torchtune is left out too: its full fine-tuning configs shard
# tok_embeddings and output as units of their own (custom_sharded_layers in 8B_full.yaml / 70B_full.yaml), while
# for its LoRA recipes, where they sit in the root, whether FSDP2 keeps the root gathered has changed across
# versions (torch's default above; torchtune's shard_model sets the root's reshard_after_forward=False since
# 2025): not modelled (with it, the Sep-2024 README's 70B LoRA and 405B QLoRA rows M-torchtune-013/015 would
# read 1.12x / 1.23x their measurements). Checked on the FSDP rows of LitGPT (LITGPT-0003/0038/0039/
# 0057..0066), atorch (ATORCH-0002..0016) and fsdp_qlora (FSDPQLORA-0002..0041): all below their measurements
# before, by up to the size of these matrices. fms-acceleration's multi-GPU runs are accelerate FSDP1 and nothing
# else (scripts/benchmarks/accelerate.yaml at 24bdadb: distributed_type FSDP, TRANSFORMER_BASED_WRAP, which the
# HF Trainer widens to PEFT's decoder-layer + LoRA-Linear policy, `training_speed.PEFT_FSDP_UNIT_ENGINES`): the
# embedding, final norm and head stay in the root there too (torch v2.4.1 _runtime_utils.py
# `_post_forward_reshard`). TRL's SFTTrainer is read the same way at ZeRO stage 3: its
# sharded-QLoRA path is written for FSDP (the `is_sharded_qlora` check, trl v0.13.0 sft_trainer.py), and the same
# benchmark's 2-GPU TRL and plugin QLoRA runs peak at the same bytes (FMSACC-0032/0046, -0043/0058). Their 2 x A100
# adapter rows (FMSACC-0021..0078) were all below their measurements but one, by 0.5-12 GiB.
FSDP_ROOT_UNIT_ENGINES = ("litgpt", "lit-gpt", "lightning", "atorch", "fsdp_qlora", "fsdp-qlora", "fms-acceleration",
                          "trl")


def fsdp_keeps_root_gathered(engine: str | None) -> bool:
    """Whether the engine's FSDP leaves the embedding and head in a root unit gathered through backward
    (`FSDP_ROOT_UNIT_ENGINES`, or "fsdp" in the engine's name without "deepspeed")."""
    e = (engine or "").lower()
    return "deepspeed" not in e and (_engine_is(e, FSDP_ROOT_UNIT_ENGINES) or "fsdp" in e)


# Frameworks whose 16-bit mixed-precision training accumulates and reduces gradients in an fp32 buffer (the
# `main_grad` of every parameter): Megatron-LM's validate_args turns `accumulate_allreduce_grads_in_fp32` on for
# bf16 ("bfloat16 requires gradient accumulation and all-reduce to be done in fp32", megatron/training/
# arguments.py; since 2024 unless `--grad-reduce-in-bf16`), so a bf16 parameter carries 2 B of weight and 4 B
# of gradient besides the optimizer's 12 (the distributed optimizer shards only the 12); NeMo trains through
# the same Megatron-Core DDP.
FP32_GRAD_BUFFER_ENGINES = ("megatron", "nemo")


# Frameworks whose optimizer step casts this rank's 16-bit gradients to a new fp32 tensor for the fp32
# master weights: InternEvo (v0.2.1, internlm/solver/optimizer/): HybridZeroOptimizer._step flattens the
# owned partition's averaged gradients and casts them (`flat_fp16_avg_grads.to(dtype)`) after `_sync_grad`
# has dropped every param.grad; FSDPadaptOptimizer.step makes `p.grad.to(dtype)` for each sharded parameter
# while the 16-bit shards still hold theirs (zero_grad only after optim.step). 4 B per owned parameter at
# the step, on top of the foreach temporaries of torch.optim.AdamW.
FP32_STEP_GRAD_ENGINES = ("internevo", "internlm")


# DeepSpeed ZeRO stage 1/2 (deepspeed/runtime/zero/stage_1_and_2.py at v0.12.3, 2023-11-10, the release of the
# ATORCH rows' date): with `contiguous_gradients` (default true) `DeepSpeedZeroOptimizer.backward` allocates
# the "ipg" bucket, `torch.empty(reduce_bucket_size, dtype=<model dtype>)`, before every backward pass (a
# second one when `overlap_comm`, default false below stage 3: runtime/zero/config.py `overlap_comm_valid`),
# and frees it only in the gradient-reduction epilogue (`_release_ipg_buffers`), so it is live from the head
# of backward to the reduction. `reduce_bucket_size` defaults to 5e8 elements (runtime/zero/config.py), not
# scaled to the model: 1e9 bytes at 16 bits. Under DeepSpeed's PipelineEngine (runtime/pipe/engine.py
# `_exec_backward_pass`) only the last stage runs backward through the optimizer; the other stages get the
# bucket in `reduce_gradients(pipeline_parallel=True)`, after backward, when no activations are held.
DEEPSPEED_REDUCE_BUCKET_ELEMENTS = 5e8


def deepspeed_ipg_bucket_bytes(engine: str | None, zero_stage: int, element_bytes: float) -> float:
    """Bytes of DeepSpeed ZeRO-1/2's gradient-reduction ("ipg") bucket (`DEEPSPEED_REDUCE_BUCKET_ELEMENTS`
    elements of the model's dtype, config defaults `contiguous_gradients` on, `overlap_comm` off); 0 for any
    other engine or ZeRO stage. Source: DeepSpeed v0.12.3 stage_1_and_2.py `backward` / `reduce_gradients`."""
    if zero_stage not in (1, 2) or "deepspeed" not in (engine or "").lower():
        return 0.0
    return DEEPSPEED_REDUCE_BUCKET_ELEMENTS * element_bytes


def _engine_is(engine: str | None, names: tuple[str, ...]) -> bool:
    e = (engine or "").lower()
    return any(e.startswith(n) for n in names)


AdamImpl = Literal["fused", "foreach", "none"]
# Words in an Adam/AdamW optimizer's name that say its step runs fused (`adamw_implementation`)
FUSED_ADAM_NAME_WORDS = ("fused", "in-bwd", "inbwd", "8bit", "8-bit", "4bit", "paged")


def adamw_implementation(optimizer: str, engine: str | None) -> AdamImpl:
    """How a plan's Adam/AdamW step runs, read by training memory (`optimizer_temp_bytes`) and speed
    (`training_speed.optimizer_step_bytes`) alike; "none" for other optimizers.

    - The optimizer's name says it where the user gives it: `adamw-fused` (torch.optim.AdamW(fused=True),
      HF Trainer optim="adamw_torch_fused", Apex / DeepSpeed FusedAdam), `adamw-foreach` (the multi-tensor
      implementation). An optimizer step fused into backward (`-in-bwd`) and the bitsandbytes 8-bit / paged
      optimizers (one kernel per tensor) run fused.
    - Else the framework's default: the `FUSED_OPTIMIZER_ENGINES` step a fused AdamW; everything else,
      a custom training loop (no engine) included, steps torch.optim.AdamW with its default, which on CUDA
      is the foreach implementation (torch.optim docs, "foreach (bool, optional): ... we will try to use
      foreach over the for-loop implementation on CUDA"; fused is opt-in). The result's notes say which."""
    o = optimizer.strip().lower().replace("_", "-")
    if not ("adam" in o or o in ("", "default")):
        return "none"
    if any(k in o for k in FUSED_ADAM_NAME_WORDS):
        return "fused"
    if "foreach" in o:
        return "foreach"
    return "fused" if _engine_is(engine, FUSED_OPTIMIZER_ENGINES) else "foreach"


def adamw_implementation_text(optimizer: str, engine: str | None) -> str:
    """What the optimizer note adds: the AdamW implementation assumed where the name does not say it, and the
    spelling that says otherwise ("" for other optimizers and for names that say it)."""
    impl = adamw_implementation(optimizer, engine)
    o = optimizer.strip().lower().replace("_", "-")  # as adamw_implementation reads it
    if impl == "none" or "foreach" in o or any(k in o for k in FUSED_ADAM_NAME_WORDS):
        return ""
    if impl == "fused":
        return f" (fused, {engine}'s default; --optimizer {optimizer}-foreach for the multi-tensor one)"
    return (f" (PyTorch's foreach implementation, torch.optim.AdamW's default; --optimizer {optimizer}-fused "
            "for fused=True)")


def optimizer_temp_bytes(optimizer: str, engine: str | None, trainable: float, state_el: float) -> float:
    """Transient optimizer memory at the step. PyTorch's foreach Adam/AdamW computes
    `torch._foreach_sqrt(exp_avg_sq)` for every parameter at once: one parameter-sized buffer in the
    state dtype (torch/optim/adamw.py `_multi_tensor_adamw`; issue 13's trace: 14.96 GiB for an 8B
    with bf16 states). Fused and per-parameter implementations need ~one tensor's worth: 0 here.
    Which one runs: `adamw_implementation`."""
    if adamw_implementation(optimizer, engine) != "foreach":
        return 0.0
    return trainable * state_el


def fsdp1_grad_bytes(block_params: float, trainable: float, grad_bytes: float, param_bytes: float, dp: int,
                     accumulating: Num, lora: bool) -> Num:
    """Gradient bytes per GPU under PyTorch FSDP1 in the LitGPT set-up (`FSDP1_NO_SYNC_ENGINES`).

    - A flat parameter that mixes frozen and trainable weights (a LoRA block wrapped whole, which
      FSDP allows with use_orig_params=True) gets a gradient for all of it, frozen parts included, in
      the parameters' dtype: PyTorch's FullyShardedDataParallel docstring, "For use_orig_params=True,
      FSDP supports mixing frozen and non-frozen parameters, but it's recommended to avoid doing so to
      prevent higher than expected gradient memory usage".
    - Under `no_sync()` (gradient accumulation without a reduce-scatter per micro-batch) the gradients
      stay unsharded until the synchronising micro-batch: FullyShardedDataParallel.no_sync docstring,
      "FSDP will accumulate the full model gradients (instead of gradient shards) until the eventual
      sync" (PyTorch PR #126166 names the two flavours: reduce-scatter per micro-batch, or unsharded
      gradients).
    `block_params`: the parameters in the LoRA-carrying units (the transformer blocks); `trainable`,
    `grad_bytes`: the trainable parameters and their gradient bytes. Checked on the lit-gpt Resource
    Tables (LITGPT-0057..0066: LoRA on 2-4 A100s measures its single-GPU peak: the 16-bit weights once
    as gradients, plus their shards)."""
    numel, el = (block_params, param_bytes) if lora else (trainable, grad_bytes)
    return numel * el / vec.where(accumulating, 1, dp)


PHASES = ("backward start (activations + logits)", "backward end (gradients)", "optimizer step")


@dataclass(frozen=True)
class TrainingMemory:
    """The figures of `training_memory`, bytes per GPU: numbers for one plan, arrays for a sweep."""

    weights: Num  # incl. FSDP's gathered layers
    act: Num  # the transient part of the peak phase
    grads: Num
    optim: Num  # after any paging to host RAM
    overhead: Num  # CUDA context, NCCL, allocator slack (before any paging)
    host: Num
    live: Num  # allocated (torch's peak statistic)
    reserved: Num
    used: Num
    fits: Num
    phase: Num  # index into PHASES: where the step peaks
    temps: float  # the optimizer's foreach temporaries
    paged: Num  # optimizer state paged to host RAM (bitsandbytes paged optimizers)
    weights_total: float  # the whole model at its stored precision
    optimizer: OptimizerCost
    notes: list[str]  # what holds for every batch and sequence length


def training_memory(r: ResolvedPlan, b: Num, seq: Num) -> TrainingMemory:
    """Training memory per GPU for micro-batch `b` and sequence length `seq` (numbers, or arrays for a
    sweep; `_training` adds the notes that name the peak), as the peak over the phases of a step (issue
    13's trace, docs/trace-findings.md): parameters and optimizer states persist; on top of them the
    largest of
    (a) the head of backward: saved activations + the loss's logits (+ gradients when accumulating),
    (b) the end of backward: full gradients + one layer's recompute working set,
    (c) the optimizer step: gradients + the optimizer's temporaries.
    Parallelism: TP/PP split weights (Megatron), CP splits the sequence, SP shards the remaining
    activations by TP, EP splits routed experts, ZeRO/FSDP shards over the data x context group."""
    arch, plan, gpu = r.arch, r.plan, r.gpu
    w, hw = plan.workload, plan.hardware
    t = plan.training
    assert t is not None
    tp, pp, cp, ep = hw.tensor_parallel, hw.pipeline_parallel, t.context_parallel, t.expert_parallel
    etp = plan.expert_tensor_parallel_size
    dpz = max(1, hw.total_gpus // (tp * pp))  # ZeRO / distributed-optimizer group: data x context ranks
    notes: list[str] = []
    precision = r.precision
    method = t.method
    opt = optimizer_cost(t.optimizer, precision)
    upcast = kbit_upcast(w.engine, sharded=t.zero_stage >= 3 and dpz > 1, version=w.engine_version)
    pb = arch.params()
    n_total = arch.total_params
    shard = tp * pp
    # Full training with pipeline stages: the busiest stage's parameters (`pipeline_stage_share`), not an
    # even 1/pp split.
    stage = pipeline_stage_share(arch, pp) * pp
    # Expert parallelism: each EP rank holds num_experts / ep routed experts (Megatron-Core MoE;
    # Lepikhin et al. 2020, GShard); everything else is replicated across EP ranks.
    expert_share = 1.0
    if ep > 1 and not arch.is_moe:
        notes.append("expert_parallel ignored: the model has no routed experts")
    elif (ep > 1 or etp != tp) and arch.is_moe:
        # expert tensor parallelism other than TP (Megatron-Core parallel folding, e.g.
        # --expert-tensor-parallel-size 1): each expert is split etp ways, not tp ways (at EP 1 too: ETP 1
        # under TP 2 keeps every expert whole on both TP ranks)
        expert_share = (n_total - pb.experts_routed + pb.experts_routed * tp / (ep * etp)) / n_total
        if ep > 1:
            notes.append(f"expert parallel {ep}: {arch.num_experts // ep if arch.num_experts else '?'} routed "
                         "experts per GPU; their weights, gradients and optimizer states split")

    if method == "full":
        base_prec = _float_precision(precision)
        if base_prec != precision:
            notes.append(f"full training of {precision.name} weights is not possible; assumed bf16 weights")
        weights = quant.weight_bytes(arch, base_prec) / shard * expert_share * stage
        trainable = n_total / shard * expert_share * stage
        if pp > 1:
            notes.append(f"pipeline {pp}: the busiest stage holds {math.ceil(arch.total_layers / pp)} layers and "
                         f"the embedding or output head ({stage / pp:.1%} of the parameters)")
    else:
        base_prec = qlora_base_precision(precision) if method == "qlora" else _float_precision(precision)
        weights = weights_per_gpu_bytes(arch, base_prec, tp, pp) * expert_share
        if method == "qlora" and _engine_is(w.engine, QUANTISED_HEAD_ENGINES) and pb.lm_head:
            # LitGPT's bitsandbytes plugin quantises the (untied) output head like any Linear
            scheme = quant.scheme(base_prec)
            weights -= pb.lm_head * (scheme.head_bpw - scheme.linear_bpw) / 8 / tp
        trainable = lora_params(arch, t.lora_rank, t.lora_targets) / shard
        adapters = trainable - lora_full_params(arch, t.lora_targets) / shard
        # adapters in 16-bit (torchtune; PEFT keeps fp32 masters: state); fp32 under AMP (bf16-mixed)
        weights += adapters * (4 if base_prec.master_in_weights else 2)
        if method == "qlora":
            weights += qlora_dequant_buffer_bytes(arch, w.engine, tp)
            if upcast.ends_fp32:
                weights += (pb.embedding + pb.lm_head) * 2 / tp  # fp32 instead of 16-bit
                notes.append("HF PEFT QLoRA: embeddings and lm_head upcast to fp32 "
                             "(prepare_model_for_kbit_training)")
            if upcast.stream_fp32:
                notes.append("HF PEFT QLoRA: norms upcast to fp32, so the hidden states between layers are fp32 "
                             "(prepare_model_for_kbit_training)")
        notes.append(f"{method}: base frozen at {base_prec.name}, rank-{t.lora_rank} adapters on "
                     f"{','.join(t.lora_targets)} ({trainable * shard / 1e6:.1f} M params trained)")
    # LitGPT never ties the output head to the embedding (litgpt/model.py GPT: its own nn.Linear lm_head
    # beside transformer.wte; the checkpoint converter copies the shared matrix into both): a tied model
    # (Gemma, Llama-3.2-1B/3B) carries a second vocab x hidden matrix, trained in full fine-tuning and,
    # being an nn.Linear, 4-bit under LitGPT's bitsandbytes QLoRA (Lightning's BitsandbytesPrecision
    # replaces every Linear).
    untied = pb.embedding if arch.tie_word_embeddings and _engine_is(w.engine, UNTIED_HEAD_ENGINES) else 0
    if untied:
        weights += untied * quant.scheme(base_prec).linear_bpw / 8 / tp
        if method == "full":
            trainable += untied / shard
        notes.append("LitGPT: the output head is a separate copy of the tied embedding")

    grads = trainable * opt.grad_bytes
    if method == "full" and opt.grad_bytes == 2.0 and opt.state_bytes >= 12.0 \
            and _engine_is(w.engine, FP32_GRAD_BUFFER_ENGINES):
        grads = trainable * 4.0
        notes.append("Megatron: gradients accumulate and reduce in an fp32 buffer (4 B/param)")
    optim = trainable * opt.state_bytes
    state_el = 2.0 if ("bf16" in opt.name or "pure" in opt.name) else 4.0
    temps = optimizer_temp_bytes(opt.name, w.engine, trainable, state_el)
    # ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states, 2 also gradients,
    # 3 (= FSDP full shard) also parameters, over the data-parallel group.
    z = t.zero_stage
    layers = max(1, math.ceil(arch.total_layers / pp))  # on the busiest stage
    fsdp_work = 0.0
    fsdp_root = 0.0  # FSDP's root unit, gathered from forward to backward (FSDP_ROOT_UNIT_ENGINES)
    # ZeRO's divisor. Under expert parallelism the routed experts' gradients and optimizer states are sharded
    # over the expert-data-parallel group only, the ranks that hold the same experts: world / (ep x expert
    # tensor x pipeline) GPUs, dpz x tp / (ep x etp) (Megatron-Core parallel_state: the expert data-parallel
    # group, expert tensor parallelism = TP unless set; DeepSpeed-MoE, Rajbhandari et al. 2022, sec. 5:
    # expert + data parallelism). So with ep x etp = dpz x tp each GPU keeps whole fp32 states for its
    # experts, however many GPUs there are.
    zdiv: float = dpz
    if ep > 1 and arch.is_moe and method == "full" and trainable > 0:
        routed = pb.experts_routed * tp / (ep * etp * shard) * stage
        zdiv = trainable / ((trainable - routed) / dpz + routed / max(1, dpz * tp // (ep * etp)))
    if z >= 1:
        optim /= zdiv
        temps /= zdiv
    if z >= 2:
        grads /= zdiv
    accumulating = (t.global_batch_tokens > seq * b * hw.total_gpus // (tp * pp * cp)) if t.global_batch_tokens \
        else False
    if z >= 3 and dpz > 1 and _engine_is(w.engine, FSDP1_NO_SYNC_ENGINES):
        param_el = 4.0 if (base_prec.compute == "fp32" or base_prec.master_in_weights) else 2.0
        blocks = (n_total - pb.embedding - (0 if arch.tie_word_embeddings else pb.lm_head)) / shard * expert_share
        grads = fsdp1_grad_bytes(blocks, trainable, opt.grad_bytes, param_el, dpz, accumulating, method != "full")
        when = "reduce-scattered every micro-batch" if accumulating is False \
            else "unsharded while accumulating (no_sync)"
        notes.append(f"FSDP1 (LitGPT): gradients {when}"
                     + ("; LoRA blocks wrapped whole, so their frozen weights get gradients too" if method != "full"
                        else ""))
    if z >= 3:
        if dpz > 1:
            # FSDP all-gathers one layer's full parameters at a time, plus the next one prefetched
            # (FSDP forward/backward prefetch; Zhao et al. 2023, "PyTorch FSDP", sec. 3.3)
            fsdp_work = 2 * weights / layers
            if fsdp_keeps_root_gathered(w.engine):
                root_el = 4.0 if (base_prec.compute == "fp32" or base_prec.master_in_weights or (
                    method == "qlora" and upcast.ends_fp32)) else 2.0  # PEFT's fp32 upcast
                ends = pb.embedding + (0 if arch.tie_word_embeddings else pb.lm_head) + untied
                fsdp_root = ends * root_el / tp
                notes.append("FSDP: the root unit (embedding, output head) stays unsharded from forward to backward")
        weights /= zdiv
    host: Num = 0.0
    if t.offload in ("optimizer", "params"):
        host += optim * (zdiv if z >= 1 else 1)
        optim = 0.0
        temps = 0.0
        if method == "full":  # ZeRO-Offload keeps fp32 gradients with the optimizer on the host
            host += grads * (zdiv if z >= 2 else 1) * 2
            if z >= 2:
                grads = 0.0
        notes.append("optimizer states (and fp32 master) offloaded to host RAM (ZeRO-Offload)")
    if t.offload == "params":
        full_weights = weights * (zdiv if z >= 3 else 1)
        host += full_weights
        # ZeRO-Infinity / FSDP CPU offload: one or two layers' parameters are resident at a time, gathered
        # whole (FSDP copies a unit's shard to the GPU and all-gathers it before use: "PyTorch FSDP",
        # Zhao et al. 2023, sec. 3.3), so two full layers, not two layers of this rank's shard
        weights = 2 * full_weights / layers
        fsdp_work = 0.0
        notes.append("parameters offloaded to host RAM; a two-layer working set stays on the GPU")

    fsdp_work = fsdp_work + fsdp_root  # offloaded parameters too: the root unit is copied in and kept
    el = 4.0 if base_prec.compute == "fp32" else 2.0
    seq_l = vec.maximum(1, vec.ceil_int(seq / cp))  # context parallelism: each rank holds seq / cp tokens
    sp = t.sequence_parallel and tp > 1
    fused_mlp = fused_glu(w.engine, w.engine_version) and arch.mlp == "gated"
    if fused_mlp:
        notes.append("Megatron-Core's fused gated activation (bias_activation_fusion, on by default since core 0.5): "
                     "the MLP keeps its fc1 output for backward, not the activation's intermediates")
    elif arch.mlp == "gated" and fused_glu(w.engine):
        notes.append(f"Megatron-Core before 0.5 (engine_version {w.engine_version}): the gated activation is "
                     "unfused (silu(gate) * up keeps its intermediates for backward)")
    layer_act = layer_activation_bytes(arch, seq_l, b, w.flash_attention, tp, el, sp, fused_mlp)
    lora_dropout = method != "full" and _engine_is(w.engine, LORA_DROPOUT_ENGINES)
    if lora_dropout:
        layer_act = layer_act + seq_l * b * lora_dropout_bytes_per_token(arch, t.lora_targets, tp, el)
    ck = t.checkpointing
    kept_copies = qlora_kept_input_copies(w.engine, w.engine_version, ck) if method == "qlora" else 0.0
    kept = seq_l * b * qlora_kept_input_bytes_per_token(arch, t.lora_targets, lora_dropout, tp, el) \
        if kept_copies else 0.0
    if kept_copies:
        layer_act = layer_act + kept
    elif method == "qlora" and not w.engine_version and not _engine_is(w.engine, NON_BNB_QLORA_ENGINES):
        notes.append("bitsandbytes >= 0.43.2 assumed (current releases): its 4-bit matmul keeps no input for the "
                     "backward; older runs (engine_version before 2024-07, LitGPT before 0.5.5) keep each one")
    # AMP (bf16-mixed / fp16-mixed: fp32 weights under torch.autocast): the embedding's output and every
    # residual add stay fp32 (autocast lowers matmuls only; fp32 + bf16 promotes to fp32), so the layer
    # inputs that recomputation keeps are 4 bytes each (PyTorch "Automatic Mixed Precision" op reference:
    # embedding, add and norms are not on the lower-precision list).
    amp = base_prec.master_in_weights and not _engine_is(w.engine, FSDP2_PARAM_CAST_ENGINES)
    resid_el = 4.0 if amp or (method == "qlora" and upcast.stream_fp32) else el  # `kbit_upcast`
    if ck == "full":
        # Full recomputation keeps each layer's input (2sbh; /tp under SP) and, in backward, one
        # layer's recomputed working set (Chen et al. 2016; Korthikanti et al. 2022 sec. 4.1).
        layer_saved = resid_el * seq_l * b * arch.hidden_size / (tp if sp else 1)
        working = layer_act
    elif ck == "selective":
        # Selective recomputation (Korthikanti et al. 2022 sec. 5): only the attention core
        # (QK^T, softmax, dropout: the 5as/h term) is recomputed; everything else is kept.
        layer_saved = layer_activation_bytes(arch, seq_l, b, True, tp, el, sp, fused_mlp)
        working = layer_act - layer_saved
    else:
        layer_saved, working = layer_act, 0.0
    saved = layers * layer_saved
    if kept_copies > 1:
        # the previous micro-batch's 4-bit inputs, still held by its graph (qlora_kept_input_copies)
        saved = saved + (kept_copies - 1) * layers * kept
        notes.append("bitsandbytes < 0.43.2 under LitGPT: the previous micro-batch's 4-bit matmul inputs are "
                     "still held at the end of each forward")
    if keeps_hf_kv_cache(w.engine, ck):
        saved = saved + layers * seq_l * b * hf_train_kv_cache_bytes_per_token(arch, tp, el)
        notes.append("HF model with use_cache on under external recomputation: every layer's K/V is kept "
                     "(past_key_values) until backward ends")
    if amp:
        # autocast casts each fp32 weight to 16 bits for its matmul, and the matmul keeps that copy for
        # the backward (its input gradient needs it; trainable leaves are also held in autocast's weight
        # cache: aten/src/ATen/autocast_mode.cpp `cached_cast`). Layers run under recomputation save
        # nothing in their first forward, so only the output head's copy stays there.
        matmul_params = pb.lm_head if ck == "full" else n_total - pb.embedding + (
            pb.embedding if arch.tie_word_embeddings else 0)
        saved = saved + 2.0 * matmul_params / shard * (expert_share if ck != "full" else 1.0)
    # Pipeline parallelism: the first stage holds the most micro-batches in flight, the last stage holds the
    # loss's logits (`pipeline_in_flight_microbatches`); the peak is the larger of the two, chosen below.
    saved_last: Num = saved
    if pp > 1:
        dp_all = max(1, hw.total_gpus // (tp * pp * cp))
        # micro-batches per step per rank; with no global batch, the 4 per stage the speed assumes
        micro = (vec.maximum(1, vec.round_int(t.global_batch_tokens / (seq * b * dp_all)))
                 if t.global_batch_tokens else 4 * pp)
        v = t.virtual_pipeline_stages
        in_first = pipeline_in_flight_microbatches(pp, micro, v, 0)
        in_last = pipeline_in_flight_microbatches(pp, micro, v, pp - 1)
        saved_last = saved * in_last
        saved = saved * in_first
        if not (vec.is_array(in_first) or vec.is_array(in_last)):
            notes.append(f"pipeline {pp} (1F1B{f', {v} virtual stages' if v > 1 else ''}): the first stage keeps "
                         f"{float(in_first):g} micro-batches' activations in flight, the last {float(in_last):g} "
                         "and the loss's logits")
    if t.activation_offload:
        # torchtune / Megatron activation offloading: saved tensors go to pinned host memory as
        # forward proceeds and come back one layer ahead of backward: ~2 layers stay on the GPU.
        host = host + saved
        saved = vec.minimum(saved, 2 * layer_saved)
        saved_last = vec.minimum(saved_last, 2 * layer_saved)
        notes.append("activations offloaded to host RAM; ~2 layers' worth stay on the GPU")
    logits: Num = 0.0
    if arch.kind != "encoder":
        # Causal-LM loss at the head of backward (issue 13 trace, HF): bf16 logits (2 B) + fp32
        # upcast (4) + fp32 log-softmax (4) in forward; their fp32 gradient replaces the upcast at the
        # start of backward: ~12 B per logit. Chunked cross-entropy (torchtune CEWithChunkedOutputLoss)
        # upcasts one chunk at a time: the bf16 logits and their bf16 gradient, ~4 B.
        chunked = t.chunked_loss if t.chunked_loss is not None else _engine_is(w.engine, CHUNKED_LOSS_ENGINES)
        # a bf16 loss needs a bf16 head: QLoRA's kbit preparation makes the head fp32, and its logits with it
        bf16_loss = _engine_is(w.engine, BF16_LOSS_ENGINES) and not (method == "qlora" and upcast.ends_fp32)
        full_loss_bytes = BF16_LOSS_BYTES_PER_LOGIT if bf16_loss else 12.0
        logits = b * seq_l * arch.vocab_size * (4 if chunked else full_loss_bytes) / tp
        vocab_chunk = fused_vocab_chunk(w.engine)
        if chunked and vocab_chunk:
            # a fused head that chunks the vocabulary holds one chunk's logits (`FUSED_VOCAB_CHUNK_HEAD_ENGINES`)
            logits = b * seq_l * min(vocab_chunk, arch.vocab_size) * FUSED_HEAD_BYTES_PER_LOGIT / tp
    keep_grads = hw.total_gpus > 1  # DDP buckets / FSDP sharded grads are allocated for the whole run
    tied_extra = 0.0
    if arch.tie_word_embeddings and method == "full" and not untied:
        # tied embeddings: the head's weight gradient waits for the embedding's (issue 13 trace)
        tied_extra = pb.embedding * opt.grad_bytes / tp / (dpz if z >= 2 else 1)
    # The head of backward holds every saved activation plus the larger of (i) the loss's logits and their
    # gradient and (ii) the last layer's recomputed working set: with recomputation that layer is rebuilt
    # right after the head's backward frees the logits, while all other layers' checkpoints still wait
    # (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost", sec. 4: peak = the checkpoints
    # plus one segment's activations). Without recomputation `working` is 0.
    # DeepSpeed ZeRO-1/2's reduction bucket, live through backward (`deepspeed_ipg_bucket_bytes`)
    ipg = deepspeed_ipg_bucket_bytes(w.engine, z, el) if hw.total_gpus > 1 else 0.0
    ipg_head: Num = ipg
    if pp > 1:
        # the first stage computes no loss; the last holds its own micro-batches and the logits (and, under
        # DeepSpeed's PipelineEngine, the only stage whose backward allocates the ipg bucket)
        last_is_peak = saved_last + vec.maximum(logits, working) + ipg > saved + working
        saved = vec.where(last_is_peak, saved_last, saved)
        logits = vec.where(last_is_peak, logits, 0.0)
        ipg_head = vec.where(last_is_peak, ipg, 0.0)
    if ipg:
        notes.append(f"DeepSpeed ZeRO-{z}: a {_gib(ipg):.2f} GiB gradient-reduction bucket (reduce_bucket_size 5e8 "
                     "elements, contiguous_gradients) is held through backward")
    head = vec.maximum(logits, working)
    start = saved + head + ipg_head + vec.where(vec.both(True, accumulating) | keep_grads, grads, 0.0)
    end = grads + working + tied_extra + ipg
    step = grads + temps
    if method == "full" and z >= 1 and _engine_is(w.engine, FP32_STEP_GRAD_ENGINES):
        # fp32 copies of this rank's gradient shard for the step (`FP32_STEP_GRAD_ENGINES`): beside the
        # 16-bit shards under FSDP; instead of the 16-bit gradients, already freed, under HybridZero
        step = temps + trainable * 4.0 / zdiv + (grads if z >= 3 else 0.0)
        notes.append("InternEvo: the optimizer step casts this rank's gradient shard to fp32 (4 B/param)")
    # the first of the largest, as max() over (start, end, step) picks it
    phase = vec.where(vec.both(start >= end, start >= step), 0, vec.where(end >= step, 1, 2))
    peak = vec.where(phase == 0, start, vec.where(phase == 1, end, step))
    # activations_gib holds the transient part of the peak phase (the foreach temporaries at the step)
    # (and any fp32 gradient copies made there: the step's memory beyond the gradient buffer)
    act = vec.where(phase == 2, step - grads,
                    vec.where(phase == 1, working + tied_extra + ipg, saved + head + ipg_head))
    overhead = _context_overhead(gpu)
    if hw.total_gpus > 1:
        overhead += CAL.nccl_bytes
    static = weights + optim
    dynamic = fsdp_work + peak
    live = static + dynamic
    if is_ms_swift(w.engine):
        # unpacked mixed-length samples (MS_SWIFT_ENGINES): the sequence-sized tensors fragment the cache; the
        # gradients and optimizer temporaries, the same size every step, reuse their blocks like the weights
        fixed = vec.where(phase == 2, step, vec.where(phase == 1, grads + tied_extra, start - saved - head))
        reserved = (static + fsdp_work + fixed) * CAL.training_static_slack \
            + (peak - fixed) * CAL.ms_swift_fragmentation
        # that slack is cached blocks, not live tensors: when cudaMalloc fails the allocator frees its unused
        # cached blocks and retries before raising out-of-memory (PyTorch c10/cuda/CUDACachingAllocator.cpp,
        # `release_cached_blocks` in `malloc`), so it never pushes the reservation past the card. A run whose
        # live tensors fit is taken to fit, as the benchmark's did at 76-79 GiB of 80 (SWIFTBENCH-0029/0048/0051),
        # although blocks split inside a segment in use cannot be freed that way and can still fail a run.
        reserved = vec.minimum(reserved, vec.maximum(live * CAL.training_static_slack,
                                                     gpu.capacity_gib * GiB - overhead))
    else:
        reserved = static * CAL.training_static_slack + dynamic * CAL.training_fragmentation
    used = reserved + overhead
    cap = gpu.capacity_gib * GiB
    host = host + _load_host_bytes(weights)
    slack = overhead + reserved - live
    paged: Num = 0.0
    if "paged" in opt.name and optim > 0:
        # bitsandbytes paged optimizers live in CUDA unified memory and are evicted to host RAM
        # under memory pressure (Dettmers et al. 2023, QLoRA, sec. 3 "Paged Optimizers").
        paged = vec.where(used > cap, vec.minimum(optim, (used - cap) / CAL.training_static_slack), 0.0)
        optim = optim - paged
        host = host + paged
        live = live - paged
        reserved = reserved - paged * CAL.training_static_slack
        used = reserved + overhead
    fits = used <= cap + 1
    if (t.offload != "none" or t.activation_offload) and hw.host_ram_gib is not None:
        fits = vec.both(fits, host <= hw.host_ram_gib * GiB)
    return TrainingMemory(weights=weights + fsdp_work, act=act, grads=grads, optim=optim, overhead=slack, host=host,
                          live=live, reserved=reserved, used=used, fits=fits, phase=phase, temps=temps, paged=paged,
                          weights_total=quant.weight_bytes(arch, base_prec), optimizer=opt, notes=notes)


def _training(r: ResolvedPlan, m: TrainingMemory | None = None) -> MemoryEstimate:
    """`training_memory` for the plan's own micro-batch and sequence, with the notes that explain it. `m`:
    those figures already worked out for this plan (an element of an array pass, `mlrig.grid`)."""
    w, hw, t = r.workload, r.hardware, r.training
    assert t is not None
    if m is None:
        m = training_memory(r, w.batch_size, t.seq_len or w.context)
    opt, cap_gib = m.optimizer, r.gpu.capacity_gib
    frag = CAL.ms_swift_fragmentation if is_ms_swift(w.engine) else CAL.training_fragmentation
    notes = list(m.notes)
    notes.append(f"optimizer {opt.name}{adamw_implementation_text(opt.name, w.engine)}: {opt.state_bytes:g} B state + "
                 f"{opt.grad_bytes:g} B grad per trainable "
                 f"param" + (f", {_gib(m.temps):.1f} GiB foreach temporaries at the step" if m.temps else "")
                 + f"; peak at the {PHASES[int(m.phase)]}; allocator slack x{frag:g} on per-step tensors"
                 + (" of the sequence's size (ms-swift: unpacked samples of mixed lengths), at most the card"
                    if is_ms_swift(w.engine) else ""))
    if m.paged > 0:
        notes.append(f"paged optimizer: {_gib(m.paged):.1f} GiB of optimizer state paged to host RAM (slower)")
    if (t.offload != "none" or t.activation_offload) and hw.host_ram_gib is not None \
            and m.host > hw.host_ram_gib * GiB:
        notes.append(f"offload needs {_gib(m.host):.1f} GiB of host RAM; only {hw.host_ram_gib:g} GiB given")
    bd = MemoryBreakdown(per_gpu_gib=_gib(m.used), weights_gib=_gib(m.weights), kv_cache_gib=0.0,
                         activations_gib=_gib(m.act), gradients_gib=_gib(m.grads), optimizer_gib=_gib(m.optim),
                         overhead_gib=_gib(m.overhead), host_ram_gib=_gib(m.host),
                         gpu_capacity_gib=cap_gib, headroom_gib=round(cap_gib - _gib(m.used), 4),
                         allocated_gib=_gib(m.live), reserved_gib=_gib(m.reserved), notes=notes)
    return MemoryEstimate(breakdown=bd, fits=bool(m.fits), engine="training", batch_fits=bool(m.fits),
                          allocated_gib=_gib(m.live), weights_total_gib=_gib(m.weights_total), gpus=hw.total_gpus)


# ---------------------------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------------------------

def estimate_memory(r: ResolvedPlan, figures: InferenceMemory | TrainingMemory | None = None) -> MemoryEstimate:
    """Per-GPU memory for the resolved plan: inference (engine-specific) or training. `figures`: the
    plan's `inference_memory` / `training_memory` already worked out (one element of an array pass)."""
    if r.workload.task == "inference":
        assert figures is None or isinstance(figures, InferenceMemory)
        return _inference(r, figures)
    assert figures is None or isinstance(figures, TrainingMemory)
    return _training(r, figures)


def _with(plan: Plan, **changes: object) -> Plan:
    """Copy of `plan` with workload/hardware/training fields changed (validated)."""
    data = plan.model_dump()
    for key, value in changes.items():
        section, field = key.split("__")
        if data.get(section) is None:
            data[section] = {}
        data[section][field] = value
    return Plan.model_validate(data)


def _ok(r: ResolvedPlan, plan: Plan) -> bool:
    """Whether `plan`, a variant of r's (another batch, context or GPU count), fits with its whole batch."""
    fits, batch_fits = memory_fits(r.with_plan(plan))
    return fits and batch_fits


def memory_fits(r: ResolvedPlan) -> tuple[bool, bool]:
    """`estimate_memory(r)`'s `fits` and `batch_fits`: the same figures (`inference_memory` /
    `training_memory` for the plan's own numbers), without the notes and breakdown, for a question that
    asks only whether it fits (`mlrig fit`'s precision ladder, `min_gpus`)."""
    w = r.workload
    if w.task == "inference":
        m = inference_memory(r, w.batch_size, w.context, w.prompt_tokens)
        return bool(m.fits), bool(m.batch_fits)  # batch_fits is fits itself but for the paged engines
    t = r.training
    assert t is not None
    fits = bool(training_memory(r, w.batch_size, t.seq_len or w.context).fits)
    return fits, fits


def largest_true(pred: Callable[[int], bool], lo: int, hi: int, *, gallop: bool = False) -> int:
    """Largest n in [lo, hi] with pred(n) true, for a pred true up to some n and false after
    (bisection); lo - 1 if none. `gallop`: first double the step from lo until pred fails, then
    bisect (about 2 log2(answer) probes instead of log2(hi - lo): cheaper when answers are small
    next to `hi`, as the largest batch is)."""
    if not pred(lo):
        return lo - 1
    if gallop:
        step = 1
        while lo < hi:
            probe = min(hi, lo + step)
            if not pred(probe):
                hi = probe - 1
                break
            lo, step = probe, step * 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pred(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def fits_with(r: ResolvedPlan, batch: int, context: int, prompt: int = 0) -> bool:
    """Whether r's plan fits with its whole batch (`MemoryEstimate.fits and batch_fits`) at another batch
    (concurrent sequences / micro-batch), context (tokens per sequence; for training the sequence
    length) and prompt: `inference_memory` / `training_memory` called with those numbers, not a rebuilt
    plan (the arrays of `mlrig.grid` rest on the same property: only these arguments carry them)."""
    if r.workload.task == "inference":
        m = inference_memory(r, batch, context, prompt)
        return bool(m.fits) and bool(m.batch_fits)
    return bool(training_memory(r, batch, context).fits)


def max_batch_size(arch: ModelArch, plan: Plan, gpu: GPU, limit: int = 1_000_000) -> int:
    """Largest batch (concurrent sequences / micro-batch) that fits; 0 if none."""
    return largest_batch(resolve(arch, plan, gpu), limit)


def largest_batch(r: ResolvedPlan, limit: int = 1_000_000) -> int:
    """`max_batch_size` of a plan already resolved (`planner.limits` asks three questions of one)."""
    w, t = r.workload, r.training
    context = w.context if w.task == "inference" or t is None else t.seq_len or w.context
    return max(0, largest_true(lambda n: fits_with(r, n, context, w.prompt_tokens), 1, limit, gallop=True))


def max_context_tokens(arch: ModelArch, plan: Plan, gpu: GPU, limit: int = 10_000_000) -> int:
    """Longest context (tokens per sequence) that fits; 0 if none. For training, seq_len. The prompt
    never exceeds the context (a shorter context holds a shorter prompt); a plan that gave only its
    context has a prompt filling each context tried (`WorkloadSpec.prompt_at`)."""
    return longest_context(resolve(arch, plan, gpu), limit)


def longest_context(r: ResolvedPlan, limit: int = 10_000_000) -> int:
    """`max_context_tokens` of a plan already resolved."""
    w = r.workload
    return max(0, largest_true(lambda n: fits_with(r, w.batch_size, n, w.prompt_at(n)), 1, limit))


def min_gpus(arch: ModelArch, plan: Plan, gpu: GPU, max_gpus: int = 64) -> int | None:
    """Fewest GPUs of this kind that fit: tensor parallel for inference (powers of two up to
    8, then pipeline stages), ZeRO-3 data parallel for training. None if max_gpus is not enough."""
    return fewest_gpus(resolve(arch, plan, gpu), max_gpus)


def fewest_gpus(r: ResolvedPlan, max_gpus: int = 64) -> int | None:
    """`min_gpus` of a plan already resolved."""
    plan = r.plan
    counts = [n for n in (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 256, 512) if n <= max_gpus]
    for n in counts:
        if plan.workload.task == "inference":
            tp = min(n, 8)
            ep = tp if plan.hardware.expert_parallel > 1 else 1  # an EP plan keeps its experts split across TP
            p = _with(plan, hardware__count=n, hardware__nodes=1, hardware__tensor_parallel=tp,
                      hardware__pipeline_parallel=n // tp, hardware__expert_parallel=ep)
        else:
            zero = 3 if n > 1 else (plan.training.zero_stage if plan.training else 0)
            # expert parallelism as wide as n GPUs allow (it must divide them), experts whole (no TP here)
            ep = math.gcd(plan.training.expert_parallel, n) if plan.training else 1
            # and context parallelism as wide as they allow (it must divide them too)
            cp = math.gcd(plan.training.context_parallel, n) if plan.training else 1
            p = _with(plan, hardware__count=n, hardware__nodes=1, hardware__tensor_parallel=1,
                      hardware__pipeline_parallel=1, training__zero_stage=zero, training__expert_parallel=ep,
                      training__expert_tensor_parallel=None, training__context_parallel=cp)
        if _ok(r, p):
            return n
    return None


__all__ = ["CAL", "Calibration", "MemoryEstimate", "estimate_memory", "kv_bytes_per_token", "lora_params",
           "memory_fits", "largest_batch", "longest_context", "fewest_gpus",
           "layer_activation_bytes", "lora_full_params", "max_batch_size", "max_context_tokens", "min_gpus",
           "optimizer_cost",
           "weights_per_gpu_bytes"]
