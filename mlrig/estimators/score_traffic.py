"""Unfused attention's DRAM traffic over the score tensor (no flash kernel: `workload.flash_attention` false).

Training step time (`training_speed.training_speed`) and inference prefill (`performance.prefill_cost`) price
the same passes: the score GEMMs' writes and reads and the element-wise kernels between them, counted from the
code each engine runs (cited at each constant and function below)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlrig import vec
from mlrig.vec import Num

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch
    from mlrig.estimators.resolved import ResolvedPlan
# Without a flash kernel (`workload.flash_attention` false) attention materialises the b x a x s x s score tensor
# in DRAM and runs over it pass by pass. Bytes per score element (one query-key pair of one head in one layer),
# counted from the code:
# - the GEMMs: QK^T writes the scores (2 B), PV reads the probabilities (2 B); backward, dP = dO V^T writes 2 B,
#   dV = P^T dO reads P (2 B), dQ = dS K and dK = dS^T Q each read dS (2 + 2 B) (Megatron-LM 50a4b5f
#   megatron/model/transformer.py `ParallelAttention.forward`: torch.baddbmm into a preallocated [b*np, sq, sk]
#   fp16 tensor, then torch.bmm(attention_probs, value); transformers' `eager_attention_forward`, two
#   torch.matmul). These run at the GEMM's arithmetic rate or the rate their bytes stream, whichever is slower
#   (each does 2 x head_dim FLOPs per 2 B: at head_dim 64-128 near an A100's balance point);
# - the element-wise kernels between them (`unfused_score_passes`), which only stream.
SCORE_GEMM_BYTES_FWD = 2.0 + 2.0
SCORE_GEMM_BYTES_BWD = 2.0 + 2.0 + 2.0 + 2.0
# torch.nn.Dropout on the 16-bit probabilities (PyTorch `native_dropout`): reads 2 B, writes 2 B and a 1-byte
# bool mask; its backward (`native_dropout_backward`, grad x mask x scale) reads 2 + 1 B and writes 2 B.
# Megatron-LM applies it at `--attention-dropout` 0.1, the default in every release read (5281919
# megatron/arguments.py, 50a4b5f, d98e8a6); transformers' Llama-family configs default `attention_dropout` 0.0,
# and F.dropout at p = 0 returns its input (ATen Dropout.cpp `_dropout_impl`): no pass.
SCORE_DROPOUT_BYTES = 2.0 + 2.0 + 1.0
# Megatron-LM's FusedScaleMaskSoftmax kernel arrived with 91ee60d ("vijay/softmax_fusion", merged 2020-09-11, the
# same day as the README's 2020 scaling tables, 5281919, whose own history lacks it; which code those tables
# measured is not stated): releases dated from the month after have it, a run dated 2020-09 or before does not.
MEGATRON_FUSED_SOFTMAX_FROM_MONTH = (2020, 10)
# Its key-length limit: 16 < sk <= 2048 (50a4b5f megatron/model/fused_softmax.py `custom_kernel_constraint`),
# raised to 4096 by 7a77abd (2022-01-12; megatron/core/fusions/fused_softmax.py `is_kernel_available` at d98e8a6).
MEGATRON_FUSED_SOFTMAX_4096_FROM_MONTH = (2022, 1)
# `--apply-query-key-layer-scaling` (scale the scores by 1 / layer number, softmax in fp32) was on by default
# from 9acc895 (2021-01-06, `--no-query-key-layer-scaling`) until 94a3749 (2023-11-02, store_true again).
MEGATRON_LAYER_SCALING_MONTHS = ((2021, 1), (2023, 11))


# transformers' eager attention (`eager_attention_forward`, transformers 5.23 models/llama/modeling_llama.py; the
# same ops in LlamaAttention.forward of the 4.3x releases) between its two torch.matmul: `* scaling` reads 2 B and
# writes 2 B, `+ attention_mask` 2 + 2 (the [b, 1, q, k] mask is shared by the heads), softmax(dtype=float32)
# reads 2 and writes 4, `.to(query.dtype)` reads 4 and writes 2: 20 B forward. Backward: the cast's 2 + 4, the
# fp32 softmax's (grad 4, output 4, written 2), the scaling's 2 + 2; the mask's add passes its gradient on: 20 B.
HF_EAGER_SCORE_PASS_BYTES_FWD = 4.0 + 4.0 + 6.0 + 6.0
HF_EAGER_SCORE_PASS_BYTES_BWD = 6.0 + 10.0 + 4.0
# Inference engines whose unfused prefill is transformers' eager attention (`prefill_score_bytes`)
HF_EAGER_PREFILL_ENGINES = ("transformers",)
# What `performance.prefill_cost` counts for every other engine's unfused prefill: fp32 scores written and read
# back, 4 B x 2 over the s x s square (its original estimate; for llama.cpp it stands for the F32 KQ, soft_max_ext
# and KQV over the causal half its micro-batches compute, not re-derived here).
DEFAULT_PREFILL_SCORE_BYTES = 8.0


def prefill_score_bytes(engine: str | None) -> float:
    """DRAM bytes per element of the s x s score square per head and layer in a prefill without flash
    attention: transformers' eager attention (`HF_EAGER_PREFILL_ENGINES`) moves the QK^T write and the PV read
    (`SCORE_GEMM_BYTES_FWD`) and its element-wise passes (`HF_EAGER_SCORE_PASS_BYTES_FWD`), 24 B, in eval mode
    (no dropout); other engines `DEFAULT_PREFILL_SCORE_BYTES`."""
    if (engine or "").lower() in HF_EAGER_PREFILL_ENGINES:
        return SCORE_GEMM_BYTES_FWD + HF_EAGER_SCORE_PASS_BYTES_FWD
    return DEFAULT_PREFILL_SCORE_BYTES


@dataclass(frozen=True)
class ScoreTraffic:
    """DRAM bytes per score element of unfused attention: the GEMMs' (`SCORE_GEMM_BYTES_FWD` / `_BWD`) and the
    element-wise kernels' (`unfused_score_passes`), forward and backward."""
    gemm_fwd: Num
    gemm_bwd: Num
    other_fwd: Num
    other_bwd: Num


def _megatron_month(version: str | None) -> tuple[int, int] | None:
    from mlrig.estimators.memory import megatron_release_month

    return megatron_release_month(version.lower()) if version else None


def unfused_score_passes(engine: str | None, version: str | None, key_len: Num, attn_batches: Num,
                         ) -> tuple[Num, Num]:
    """Element-wise bytes per score element (forward, backward) of unfused attention in training, by the code
    the engine runs (16-bit scores; `attn_batches`: micro-batch x heads per tensor-parallel rank):

    - Megatron-LM (any `megatron*` engine, Megatron-DeepSpeed included) from `MEGATRON_FUSED_SOFTMAX_FROM_MONTH`
      (no version: the current release), when its fused kernel's constraints hold (key length within
      `MEGATRON_FUSED_SOFTMAX_4096_FROM_MONTH`'s limit, queries and b x np multiples of 4; the current
      release's batch_per_block divisibility is not checked): `ScaledUpperTriangMaskedSoftmax` scales, masks and
      softmaxes in one kernel that reads only the causal triangle and writes every element (50a4b5f
      megatron/fused_kernels/scaled_upper_triang_masked_softmax.h: loads while `element_index < local_seq`,
      stores zeros above it): 1 + 2 B; its backward reads grad and output over the triangle and writes all:
      2 + 2 B; then the dropout (`SCORE_DROPOUT_BYTES`) each way: 8 / 9 B.
    - Megatron-LM where the kernel does not apply, the torch path of `FusedScaleMaskSoftmax.forward`: with the
      query-key layer scaling on (`MEGATRON_LAYER_SCALING_MONTHS`) the softmax runs in fp32: .float() 2 + 4,
      x scale 4 + 4, masked_fill_ 4 + 4, Softmax 4 + 4, .half() 4 + 2 = 36 B forward; backward .half() 2 + 4,
      softmax 4 + 4 + 4, masked_fill 4 + 4, scale 4 + 4, .float() 4 + 2 = 40 B; otherwise in 16 bits:
      masked_fill_ 2 + 2, Softmax 2 + 2 = 8 B forward, softmax backward 2 + 2 + 2 and masked_fill's 2 + 2 = 10 B;
      plus the dropout. Releases before the fused kernel (5281919 megatron/model/transformer.py
      `ParallelSelfAttention`: torch.matmul, gpt2_attention_mask_func's masked_fill_, torch.nn.Softmax on
      fp16, Dropout) are this 16-bit path: 13 / 15 B.
    - Anything else: transformers' eager attention and the trainers on it (`HF_EAGER_SCORE_PASS_BYTES_FWD` /
      `_BWD`, 20 / 20 B; no dropout, p = 0 in the Llama-family configs). Trainers with their own attention
      module (torchtune's SDPA math path) are priced the same, not counted from their code."""
    e = (engine or "").lower()
    if not e.startswith("megatron"):
        return HF_EAGER_SCORE_PASS_BYTES_FWD, HF_EAGER_SCORE_PASS_BYTES_BWD
    month = _megatron_month(version)
    if month is not None and month < MEGATRON_FUSED_SOFTMAX_FROM_MONTH:
        return 8.0 + SCORE_DROPOUT_BYTES, 10.0 + SCORE_DROPOUT_BYTES
    limit = 2048 if month is not None and month < MEGATRON_FUSED_SOFTMAX_4096_FROM_MONTH else 4096
    fused = vec.both(vec.both(key_len > 16, key_len <= limit),
                     vec.both(key_len % 4 == 0, attn_batches % 4 == 0))
    scaled = month is not None and MEGATRON_LAYER_SCALING_MONTHS[0] <= month < MEGATRON_LAYER_SCALING_MONTHS[1]
    torch_fwd, torch_bwd = (36.0, 40.0) if scaled else (8.0, 10.0)
    return (vec.where(fused, 3.0, torch_fwd) + SCORE_DROPOUT_BYTES,
            vec.where(fused, 4.0, torch_bwd) + SCORE_DROPOUT_BYTES)


def unfused_score_traffic(r: ResolvedPlan, batch: Num, seq: Num) -> ScoreTraffic:
    """`ScoreTraffic` of this training plan's unfused attention, per score element (`unfused_score_passes`)."""
    plan = r.plan
    heads_per_rank = r.arch.num_heads / plan.hardware.tensor_parallel
    fwd, bwd = unfused_score_passes(plan.workload.engine, plan.workload.engine_version, seq, batch * heads_per_rank)
    return ScoreTraffic(SCORE_GEMM_BYTES_FWD, SCORE_GEMM_BYTES_BWD, fwd, bwd)


def unfused_score_elements_per_token(arch: ModelArch, seq: Num) -> Num:
    """Score elements per trained token, whole model: every head's full row of s keys in every layer (eager
    attention masks the causal half and any window after computing them: `training_speed.attention_layer_keys`
    unwindowed, L s)."""
    return arch.num_heads * arch.num_layers * seq

