"""Weight and KV-cache precisions: bits per weight, bytes of a model's weights, compute dtypes.

Storage costs are those of the real on-disk / in-memory formats, scales and zero-points included:

* ggml / GGUF block formats (llama.cpp `ggml/src/ggml-common.h`, the `block_*` structs):
  Q8_0 = 34 bytes per 32 weights (8.5 bpw); Q4_0 = 18/32 (4.5); Q5_0 = 22/32 (5.5);
  Q2_K = 84/256 (2.625); Q3_K = 110/256 (3.4375); Q4_K = 144/256 (4.5); Q5_K = 176/256 (5.5);
  Q6_K = 210/256 (6.5625); IQ4_XS = 136/256 (4.25). Norms are stored as F32.
  The "_M"/"_S" file types are *mixes*: `llama_tensor_get_type` in llama.cpp `src/llama-quant.cpp`
  bumps attn_v / ffn_down of some layers and stores output.weight at Q6_K (see `_GGUF_MIXES`).
* bitsandbytes NF4 (Dettmers et al. 2023, QLoRA, sec. 3): 64-weight blocks with an fp32 absmax
  -> 4 + 32/64 = 4.5 bpw; double quantisation stores the absmax as 8-bit with an fp32 constant
  per 256 blocks -> 4 + 8/64 + 32/(64*256) = 4.127 bpw. Embeddings, lm_head and norms stay 16-bit.
* GPTQ / AWQ (AutoGPTQ / AutoAWQ packing, group size 128): 4-bit weights + an fp16 scale and a
  packed 4-bit zero-point per group -> 4 + 16/128 + 4/128 = 4.156 bpw; embeddings, lm_head and
  norms stay 16-bit.
* MXFP4 (OCP Microscaling spec v1.0): 32 FP4 values share an 8-bit E8M0 scale -> 4.25 bpw. gpt-oss
  ships its MoE experts in MXFP4 and everything else in bf16 (gpt-oss model card, Aug 2025).
* fp8 (vLLM / llm-compressor "FP8-dynamic"): linear weights in e4m3 with a per-channel scale
  (negligible); embeddings and lm_head stay 16-bit.
* int8 (LLM.int8 / W8A8): 8-bit linear weights, a per-row scale (negligible); rest 16-bit.
* GPTQ-Int8 (AutoGPTQ / GPTQModel `bits=8`, group 128): 8-bit weights + an fp16 scale and a packed
  8-bit zero-point per group -> 8 + 16/128 + 8/128 = 8.1875 bpw (Qwen's `...-GPTQ-Int8` repos).
* NVFP4 (NVIDIA, "Introducing NVFP4", NVIDIA technical blog 2025-06; TensorRT Model Optimizer):
  FP4 E2M1 values in blocks of 16 sharing an FP8 E4M3 scale, plus one FP32 scale per tensor
  -> 4 + 8/16 = 4.5 bpw; ModelOpt keeps lm_head and embeddings in 16-bit.
* MXFP8 (OCP Microscaling spec v1.0): 32 FP8 E4M3 values share an E8M0 scale -> 8.25 bpw.
* MLC-LLM group quantisation (mlc-llm python/mlc_llm/quantization/quantization.py): q4f16_1 = int4,
  group 32, one fp16 scale per group, symmetric (no zero) -> 4 + 16/32 = 4.5 bpw, embedding and
  final projection quantised too; q3f16_1 = int3 packed 10 per uint32 (3.2 bits) + fp16 scale per
  40 -> 3.6 bpw; q4f16_2 leaves embedding and head in fp16; q0f16 is unquantised fp16.
* EXL2 (turboderp/exllamav2): the stated bits per weight are the average over the quantised linear
  layers, scales included (the converter's `-b`); the head is quantised at `-hb` (default 6 bits)
  and the embedding stays fp16. Any stated rate is a precision: `exl2-4.65` (also `exl2_4.65`,
  `4.65bpw-exl2`); SCHEMES holds the common rates and `scheme()` adds others on first use.
* MLX affine quantisation (ml-explore mlx `mlx.core.quantize` docs, "Quantization modes" table,
  read 2026-11-23: group size 32, 64 (default) or 128; bits 2, 3, 4 (default), 5, 6 or 8; a scale and a
  bias per group in the input's 16-bit dtype) -> bits + 2 x 16 / group_size bpw: `mlx-4bit` (group 64)
  = 4.5, `mlx-4bit-g32` = 5.0, `mlx-5bit-g32` = 6.0, `mlx-4bit-g128` = 4.25. mlx-lm quantises the
  embedding and the head too.
* Mixed precision with fp32 weights (`bf16-mixed`, `fp16-mixed`: PyTorch Lightning's `precision=` names,
  torch.autocast AMP, DeepSpeed/atorch "bf16_amp"): the parameters stay fp32 in memory (32 bpw), the
  matmuls run in bf16/fp16 under autocast, gradients are fp32 and the fp32 weights are the optimizer's
  master copy. For full AdamW training this is the same 16 B/param as ZeRO's mixed-precision accounting
  (`bf16`: 2 B weights + 2 B grads + 12 B states), split 4 + 4 + 8; a frozen base (LoRA) costs 4 B/param
  instead of 2 (Lightning docs "N-bit precision": "bf16-mixed" vs "bf16-true").
* llama.cpp i-quants (ggml-common.h block structs): IQ1_S 50 B/256 (1.5625 bpw), IQ1_M 56/256 (1.75),
  IQ2_XXS 66/256 (2.0625), IQ2_XS 74/256 (2.3125), IQ2_S 82/256 (2.5625), IQ3_XXS 98/256 (3.0625),
  IQ3_S 110/256 (3.4375), IQ4_XS 136/256 (4.25), IQ4_NL 18/32 (4.5). The file types are mixes
  (`llama_tensor_get_type_impl`, src/llama-quant.cpp): IQ2_S stores its bulk as IQ2_XS, IQ2_M as
  IQ2_S, IQ3_XS and IQ3_M as IQ3_S; the output tensor is Q5_K for the IQ1/IQ2/IQ3_XXS types and
  Q6_K otherwise; token_embd is Q2_K for IQ1_*/IQ2_XXS/IQ2_XS and IQ3_S for IQ2_S/IQ2_M/IQ3_XXS.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from mlrig.errors import MlrigError, closest

if TYPE_CHECKING:
    from collections.abc import Mapping

    from mlrig.catalog.arch import ModelArch

# ggml block types: bits per weight = 8 * block bytes / block weights (ggml-common.h).
# ggml_type -> (name, elements per block, bytes per block): ggml/src/ggml-common.h block structs
# and gguf-py gguf/constants.py GGML_QUANT_SIZES (checked against the installed gguf in tests).
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 40), 10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176), 14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74), 18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110), 22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2), 26: ("I32", 1, 4), 27: ("I64", 1, 8),
    28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56), 30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
}
# general.file_type -> name: llama.h `llama_ftype` / gguf-py LlamaFileType

# Bits per weight of each ggml type, incl. its block scales: 8 x bytes per block / elements per block.
GGML_BPW: dict[str, float] = {name: 8 * nbytes / block for name, block, nbytes in GGML_TYPES.values()}

NF4_BPW = 4 + 32 / 64  # fp32 absmax per 64 weights (QLoRA paper, sec. 3)
NF4_DQ_BPW = 4 + 8 / 64 + 32 / (64 * 256)  # double quant: 8-bit absmax + fp32 per 256 blocks
GROUP128_INT4_BPW = 4 + 16 / 128 + 4 / 128  # GPTQ/AWQ: fp16 scale + packed 4-bit zero per 128
MXFP4_BPW = 4 + 8 / 32  # OCP MX: E8M0 scale per 32 FP4 values
HQQ4_BPW = 4 + 2 * 16 / 64  # HQQ 4-bit, group 64, fp16 scale + fp16 zero (hqq README defaults)
GROUP128_INT8_BPW = 8 + 16 / 128 + 8 / 128  # GPTQ 8-bit: fp16 scale + packed 8-bit zero per 128
NVFP4_BPW = 4 + 8 / 16  # NVFP4: FP8 E4M3 scale per 16 FP4 values (+ one FP32 per tensor, negligible)
MXFP8_BPW = 8 + 8 / 32  # OCP MX: E8M0 scale per 32 FP8 values
MLC_Q4_BPW = 4 + 16 / 32  # MLC q4f16_1: int4, fp16 scale per group of 32, symmetric
MLC_Q3_BPW = 32 / 10 + 16 / 40  # MLC q3f16_1: 10 int3 per uint32, fp16 scale per group of 40
EXL2_HEAD_BPW = 6.0  # exllamav2 convert.py `-hb/--head_bits` default
EXL2_RATES = (2.5, 3.0, 3.5, 4.0, 4.25, 4.5, 4.65, 5.0, 5.5, 6.0, 6.5, 8.0)  # rates repos commonly publish


@dataclass(frozen=True)
class Scheme:
    """How one precision stores each kind of tensor, in bits per weight."""

    name: str
    linear_bpw: float  # quantised linear layers (attention and MLP projections)
    embed_bpw: float  # token embedding table
    head_bpw: float  # untied output projection
    norm_bpw: float  # norm weights (and other small vectors)
    compute: str  # dtype the matmuls run in
    experts_bpw: float | None = None  # routed experts, when stored differently (mxfp4)
    gguf_mix: str | None = None  # llama.cpp file type whose per-tensor bumps apply
    master_in_weights: bool = False  # AMP: the fp32 weights are the optimizer's master copy, grads fp32
    description: str = ""

    @property
    def is_gguf(self) -> bool:
        return self.gguf_mix is not None


def _gguf(name: str, base: str, *, head: str = "Q6_K", embed: str | None = None, desc: str = "",
          mix: str | None = None) -> Scheme:
    return Scheme(name, GGML_BPW[base], GGML_BPW[embed or base], GGML_BPW[head], 32.0, "fp16",
                  gguf_mix=mix or name, description=desc or f"GGUF {name.upper()} (llama.cpp)")


MLX_BITS = (2, 3, 4, 5, 6, 8)  # mlx.core.quantize affine mode
MLX_GROUPS = (32, 64, 128)


def _mlx(bits: int, group: int) -> Scheme:
    """MLX affine quantisation: `bits` per weight + a 16-bit scale and a 16-bit bias per `group` weights."""
    bpw = bits + 2 * 16 / group
    name = f"mlx-{bits}bit" if group == 64 else f"mlx-{bits}bit-g{group}"
    return Scheme(name, bpw, bpw, bpw, 16, "fp16",
                  description=f"MLX {bits}-bit, group {group} (16-bit scale + bias)")


INT4_GROUPS = (32, 64, 128, 256)


def _int4_group(group: int) -> Scheme:
    """gpt-fast / torchao int4 weight-only (tinygemm `_weight_int4pack_mm`): 4 bits per weight and a 16-bit
    scale and zero per `group` weights (gpt-fast quantize.py `group_quantize_tensor`, torchao
    `int4_weight_only(group_size=...)`). Both quantise every nn.Linear, the output head included
    (gpt-fast `replace_linear_int4`, torchao `quantize_`'s default filter); the embedding stays 16-bit."""
    bpw = 4 + 2 * 16 / group
    return Scheme(f"int4-g{group}", bpw, 16, bpw, 16, "fp16",
                  description=f"int4 weight-only, group {group}, 16-bit scale + zero (gpt-fast / torchao), head too")


def _exl2(bpw: float) -> Scheme:
    """EXL2 at a stated average rate over the linear layers (head at 6 bits, embedding fp16)."""
    return Scheme(f"exl2-{bpw:g}", bpw, 16, EXL2_HEAD_BPW, 16, "fp16",
                  description=f"EXL2 {bpw:g} bpw (exllamav2), head 6 bpw, embedding fp16")


SCHEMES: dict[str, Scheme] = {s.name: s for s in [
    Scheme("fp32", 32, 32, 32, 32, "fp32", description="IEEE float32"),
    Scheme("bf16", 16, 16, 16, 16, "bf16", description="bfloat16"),
    Scheme("fp16", 16, 16, 16, 16, "fp16", description="float16"),
    Scheme("fp8", 8, 16, 16, 16, "fp8", description="fp8 e4m3 linear layers, 16-bit embeddings/head"),
    Scheme("int8", 8, 16, 16, 16, "int8", description="int8 linear layers (LLM.int8 / W8A8)"),
    # int8 weights with 16-bit activations (torchao Int8WeightOnlyConfig, "int8_rowwise weight / bf16 act"): the same
    # bytes as "int8", but never int8 GEMMs (INT8_GEMM_ENGINES): the weights are de-quantised to 16 bits
    Scheme("int8-wo", 8, 16, 16, 16, "int8", description="int8 weight-only (W8A16, 16-bit activations)"),
    Scheme("int4", GROUP128_INT4_BPW, 16, 16, 16, "fp16",
           description="generic 4-bit weight-only, group 128 (as GPTQ/AWQ)"),
    Scheme("gptq", GROUP128_INT4_BPW, 16, 16, 16, "fp16", description="GPTQ 4-bit, group 128"),
    Scheme("awq", GROUP128_INT4_BPW, 16, 16, 16, "fp16", description="AWQ 4-bit, group 128"),
    # GPTQ checkpoints run by a named kernel (AutoGPTQ / transformers `exllama_config={"version": 2}`,
    # `use_marlin=True`): same bytes as "gptq"; HF transformers' batched decode differs by kernel
    # (efficiency.GPTQ_KERNEL_ROWS)
    Scheme("gptq-exllamav2", GROUP128_INT4_BPW, 16, 16, 16, "fp16",
           description="GPTQ 4-bit, group 128, ExLlamaV2 kernel"),
    Scheme("gptq-marlin", GROUP128_INT4_BPW, 16, 16, 16, "fp16", description="GPTQ 4-bit, group 128, Marlin kernel"),
    Scheme("nf4", NF4_DQ_BPW, 16, 16, 16, "bf16", description="bitsandbytes NF4 + double quant"),
    Scheme("nf4-nodq", NF4_BPW, 16, 16, 16, "bf16", description="bitsandbytes NF4, no double quant"),
    Scheme("mxfp4", 16, 16, 16, 16, "bf16", experts_bpw=MXFP4_BPW,
           description="MXFP4 MoE experts (gpt-oss native), rest bf16"),
    Scheme("hqq", HQQ4_BPW, 16, 16, 16, "fp16", description="HQQ 4-bit, group 64"),
    _gguf("q8_0", "Q8_0", head="Q8_0"),
    _gguf("q6_k", "Q6_K"),
    _gguf("q5_k_m", "Q5_K"),
    _gguf("q5_k_s", "Q5_K"),
    _gguf("q4_k_m", "Q4_K"),
    _gguf("q4_k_s", "Q4_K"),
    _gguf("q4_0", "Q4_0"),
    _gguf("q3_k_m", "Q3_K"),
    _gguf("q2_k", "Q2_K"),
    _gguf("iq4_xs", "IQ4_XS"),
    _gguf("q3_k_s", "Q3_K"),
    # bartowski's "_L" files: the _M mix with token_embd and output at Q8_0 (`--output-tensor-type q8_0
    # --token-embedding-type q8_0`, stated on the bartowski/*-GGUF model cards)
    _gguf("q6_k_l", "Q6_K", head="Q8_0", embed="Q8_0", mix="q6_k"),
    _gguf("q5_k_l", "Q5_K", head="Q8_0", embed="Q8_0", mix="q5_k_m"),
    _gguf("q4_k_l", "Q4_K", head="Q8_0", embed="Q8_0", mix="q4_k_m"),
    _gguf("iq4_nl", "IQ4_NL"),
    _gguf("iq3_m", "IQ3_S"),
    _gguf("iq3_s", "IQ3_S"),
    _gguf("iq3_xs", "IQ3_S"),
    _gguf("iq3_xxs", "IQ3_XXS", head="Q5_K", embed="IQ3_S"),
    _gguf("iq2_m", "IQ2_S", head="Q5_K", embed="IQ3_S"),
    _gguf("iq2_s", "IQ2_XS", head="Q5_K", embed="IQ3_S"),
    _gguf("iq2_xs", "IQ2_XS", head="Q5_K", embed="Q2_K"),
    _gguf("iq2_xxs", "IQ2_XXS", head="Q5_K", embed="Q2_K"),
    _gguf("iq1_m", "IQ1_M", head="Q5_K", embed="Q2_K"),
    _gguf("iq1_s", "IQ1_S", head="Q5_K", embed="Q2_K"),
    Scheme("gptq-int8", GROUP128_INT8_BPW, 16, 16, 16, "fp16", description="GPTQ 8-bit, group 128"),
    Scheme("nvfp4", NVFP4_BPW, 16, 16, 16, "bf16",
           description="NVFP4 (FP4 E2M1, FP8 scale per 16), 16-bit embeddings/head; W4A4 on Blackwell"),
    Scheme("mxfp8", MXFP8_BPW, 16, 16, 16, "fp8", description="MXFP8 (FP8 E4M3, E8M0 scale per 32)"),
    Scheme("q4f16_1", MLC_Q4_BPW, MLC_Q4_BPW, MLC_Q4_BPW, 16, "fp16",
           description="MLC-LLM int4 group 32, embedding and head quantised too"),
    Scheme("q4f16_2", MLC_Q4_BPW, 16, 16, 16, "fp16", description="MLC-LLM int4 group 32, fp16 embedding/head"),
    Scheme("q3f16_1", MLC_Q3_BPW, MLC_Q3_BPW, MLC_Q3_BPW, 16, "fp16", description="MLC-LLM int3 group 40"),
    *(_exl2(r) for r in EXL2_RATES),
    # MLX at its default group of 64 (-g32 / -g128 are added on first use by normalise_precision)
    *(_mlx(b, 64) for b in MLX_BITS),
    Scheme("bf16-mixed", 32, 32, 32, 32, "bf16", master_in_weights=True,
           description="AMP: fp32 weights and master, bf16 autocast compute (Lightning bf16-mixed)"),
    Scheme("fp16-mixed", 32, 32, 32, 32, "fp16", master_in_weights=True,
           description="AMP: fp32 weights and master, fp16 autocast compute (Lightning 16-mixed)"),
]}

_ALIASES: dict[str, str] = {
    "float32": "fp32", "f32": "fp32", "bfloat16": "bf16", "float16": "fp16", "f16": "fp16", "half": "fp16",
    "fp8_e4m3": "fp8", "e4m3": "fp8", "float8": "fp8", "fp8-dynamic": "fp8", "w8a8": "int8",
    "bnb-nf4": "nf4", "nf4-dq": "nf4", "qlora": "nf4", "bnb-4bit": "nf4", "nf4_nodq": "nf4-nodq",
    "bnb-int8": "int8", "llm.int8": "int8", "int8wo": "int8-wo", "int8-weight-only": "int8-wo",
    "int8_weight_only": "int8-wo", "8bit": "int8", "4bit": "int4", "q8": "q8_0",
    "q4_k": "q4_k_m", "q5_k": "q5_k_m", "q3_k": "q3_k_m", "mxfp4 moe": "mxfp4", "auto-gptq": "gptq",
    "autoawq": "awq",
    "gptq-int4": "gptq", "gptq_int4": "gptq", "gptq-4bit": "gptq", "gptq_int8": "gptq-int8",
    "gptq-8bit": "gptq-int8", "int8-gptq": "gptq-int8", "awq-int4": "awq", "awq_int4": "awq",
    "gptq_marlin": "gptq-marlin", "marlin": "gptq-marlin", "gptq_exllamav2": "gptq-exllamav2",
    "gptq-exllama-v2": "gptq-exllamav2",
    "nv-fp4": "nvfp4", "fp4": "nvfp4", "mx-fp8": "mxfp8", "mxfp8_e4m3": "mxfp8",
    "q4f16_0": "q4f16_1", "q4bf16_1": "q4f16_1", "q4bf16_0": "q4f16_1", "q3f16_0": "q3f16_1",
    "q0f16": "fp16", "q0bf16": "bf16", "q0f32": "fp32", "mlc-q4": "q4f16_1",
    # unsloth "dynamic" GGUF quants (UD-Q4_K_XL, ...): the _M/_L mixes with more tensors upcast; closest mix
    "q2_k_xl": "q2_k", "q3_k_xl": "q3_k_m", "q4_k_xl": "q4_k_l", "q5_k_xl": "q5_k_l", "q6_k_xl": "q6_k_l",
    "q8_k_xl": "q8_0", "mlx-4bit-dwq": "mlx-4bit",
    # PyTorch Lightning `precision=` names (and torch AMP spellings). Not "bf16-true": Lightning's true half
    # precision also keeps the optimizer states in bf16, which is precision bf16 with optimizer adamw-bf16 here
    "16-mixed": "fp16-mixed", "bf16-amp": "bf16-mixed", "bf16_amp": "bf16-mixed", "amp-bf16": "bf16-mixed",
    "fp16-amp": "fp16-mixed", "32-true": "fp32",
    **{f"mlx-{b}bit-g64": f"mlx-{b}bit" for b in MLX_BITS},
}

# "int4-g32" ... "int4-g256": gpt-fast / torchao int4 weight-only at a group size (added on first use)
_INT4_GROUP_RE = re.compile(r"int4[-_]?g(?:roup)?(\d+)")

# "mlx-4bit-g32", "mlx-5bit-g128": MLX affine at a non-default group size (added on first use)
_MLX_RE = re.compile(r"mlx-(\d)bit-g(\d+)")

# "exl2-4.65", "exl2_4.65", "exl2:4.65", "exl2-4.65bpw", "4.65bpw-exl2", "4.65bpw" (exllamav2 branch names)
_EXL2_RE = re.compile(r"(?:exl2[-_:]?(\d+(?:\.\d+)?)(?:bpw)?|(\d+(?:\.\d+)?)[-_]?bpw(?:[-_]?exl2)?)")


def normalise_precision(precision: str) -> str:
    """Canonical precision name; raises MlrigError listing the valid ones.

    EXL2 at any stated rate is accepted ("exl2-4.65" -> a Scheme added to SCHEMES on first use)."""
    p = precision.strip().lower().replace(" ", "")
    p = _ALIASES.get(p, p)
    if p not in SCHEMES:
        m = _EXL2_RE.fullmatch(p)
        if m:
            bpw = float(m.group(1) or m.group(2))
            if not 1.0 <= bpw <= 16.0:
                raise MlrigError(f"EXL2 rate {bpw:g} bpw is outside 1-16; give e.g. exl2-4.65")
            SCHEMES.setdefault(f"exl2-{bpw:g}", _exl2(bpw))
            return f"exl2-{bpw:g}"
        m = _MLX_RE.fullmatch(p)
        if m:
            bits, group = int(m.group(1)), int(m.group(2))
            if bits not in MLX_BITS or group not in MLX_GROUPS:
                raise MlrigError(f"MLX quantisation {precision!r}: bits must be one of "
                                 f"{', '.join(map(str, MLX_BITS))} and the group 32, 64 or 128 (e.g. mlx-4bit-g32)")
            return SCHEMES.setdefault(p, _mlx(bits, group)).name
        m = _INT4_GROUP_RE.fullmatch(p)
        if m:
            group = int(m.group(1))
            if group not in INT4_GROUPS:
                raise MlrigError(f"int4 group size {group} is not one of {', '.join(map(str, INT4_GROUPS))} "
                                 "(e.g. int4-g64)")
            return SCHEMES.setdefault(f"int4-g{group}", _int4_group(group)).name
        if p == "exl2":
            raise MlrigError("EXL2 needs its bits per weight: write exl2-4.65 (or the rate of your download)")
        shown = [k for k in SCHEMES if not k.startswith("exl2-") and not _MLX_RE.fullmatch(k)
                 and not _INT4_GROUP_RE.fullmatch(k)]
        near = closest(p, [*shown, *_ALIASES], n=4)
        guess = f"did you mean {', '.join(dict.fromkeys(_ALIASES.get(n, n) for n in near))}? " if near else ""
        raise MlrigError(f"unknown precision {precision!r}; {guess}use one of: {', '.join(shown)}, exl2-<bpw>, "
                         "mlx-<bits>bit-g<32|128>, int4-g<32|64|128|256>")
    return p


# Weight-format families for the de-quantisation efficiency (efficiency.FORMAT_DECODE_EFF).
_F16 = ("fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed")
_Q8 = ("q8_0", "int8", "int8-wo", "fp8", "mxfp8", "gptq-int8")
_LEGACY = ("q4_0", "q4_1", "q5_0", "q5_1")
# Engines whose kernels run fp8 GEMMs on fp8 weights (W8A8); others de-quantise to fp16.
FP8_GEMM_ENGINES = ("vllm", "sglang", "trt-llm", "trt-llm-2023")
# Engines whose "int8" checkpoints (W8A8: int8 weights, activations quantised to int8 per token on the fly) run
# int8 x int8 GEMMs on the int8 tensor cores (`performance.gemm_dtype_on`: NVIDIA GPUs with an int8 tensor rate).
# vLLM: compressed-tensors W8A8 int8 (RedHatAI / Neural Magic "quantized.w8a8" checkpoints) is
# CompressedTensorsW8A8Int8, `get_min_capability` 75 ("turing and up"), whose `apply_weights` quantises the input
# (`ops.scaled_int8_quant`) and calls `ops.cutlass_scaled_mm` on the int8 weight and int8 input with the scales in
# the epilogue (vllm/model_executor/layers/quantization/compressed_tensors/schemes/compressed_tensors_w8a8_int8.py
# with utils/w8a8_utils.py `apply_int8_linear`, github.com/vllm-project/vllm @ 00ba7ff, the 0.6 series; from 0.7
# the same op through kernels/scaled_mm/cutlass.py CutlassScaledMMLinearKernel; csrc/quantization/cutlass_w8a8:
# CUTLASS 2.x int8 kernels for sm75 / sm80 / sm89, int32 accumulate). NVIDIA rates int8 MMA at twice the FP16
# (FP16-accumulate) rate on every Turing-and-newer part, i.e. 4x the FP32-accumulate figure GeForce cards are
# priced at for 16-bit GEMMs (catalog `int8_tops_dense`: RTX 3090 284, RTX 4090 660.6, RTX A6000 309.7 TOPS dense;
# Ampere GA102 and Ada AD102 whitepapers). Elsewhere ("int8" under HF transformers is LLM.int8 / bitsandbytes,
# TensorRT-LLM's "int8" may be weight-only) the weights are priced de-quantised to 16 bits as before.
INT8_GEMM_ENGINES = ("vllm",)
# Engines whose NVFP4 checkpoints run FP4 GEMMs (W4A4: the linear layers' inputs are quantised to FP4 too) on
# GPUs with FP4 tensor cores (Blackwell): TensorRT-LLM, per NVIDIA's MLPerf Inference v5.1 submission,
# closed/NVIDIA/documentation/calibration.md ("On accelerators which support FP4 ... Selected linear and MLP
# layers* inputs and weights ... are quantized"), github.com/mlcommons/inference_results_v5.1 @ 965182b.
# vLLM too: ModelOpt NVFP4 checkpoints run `ModelOptNvFp4LinearMethod.apply`, which quantises each linear's input
# (`scaled_fp4_quant`) and multiplies FP4 x FP4 (`cutlass_scaled_fp4_mm`; from 0.13 FlashInfer's CUTLASS FP4 GEMM
# first, "flashinfer-cutlass", the same W4A4 product): vllm/model_executor/layers/quantization/modelopt.py, read in the
# 0.8.5, 0.10.0 and 0.13.0 wheels (0.8.5 the oldest read: FP4_GEMM_FROM). 0.10+ fall back to Marlin W4A16 where the
# CUTLASS kernel is missing (`cutlass_fp4_supported()` false): GPUs without an FP4 rate, priced de-quantised below.
# The fit rows that run it say so in their logs: AZIR5070TI-* (vLLM 0.13.0 on an RTX 5070 Ti, "flashinfer-cutlass
# NVFP4 GEMM") decode 64 users at an 11.9 ms TPOT where a 16-bit GEMM (GeForce half-rate, 88 TFLOPS) gave 25.0 ms
# (11.3 with FP4), and their TTFT, TPOT and throughput errors at 16-64 users drop from +38..+292 % / +15..+110 % /
# -13..-52 % to +14..+92 % / -5..-1 % / +2..+7 %; WAYNETRT-0241..0258 (vLLM 0.18.0, RTX PRO 6000 Max-Q,
# NvFp4LinearBackend.FLASHINFER_CUTLASS in its log) decode 9.3 ms steps at 128 users, slower than either dtype's
# roofline (a 300 W card at its power limit): 12.1 ms de-quantised, 7.3 with FP4, no verdict there.
# Elsewhere (and on GPUs without an FP4 rate) NVFP4 is priced as weight-only, de-quantised to 16-bit.
FP4_GEMM_ENGINES = ("trt-llm", "vllm")
# The first release of an engine in FP4_GEMM_ENGINES with the W4A4 kernels (no entry: every release mlrig prices).
FP4_GEMM_FROM: dict[str, tuple[int, ...]] = {"vllm": (0, 8, 5)}
# Engines whose MXFP8 checkpoints run MXFP8 x MXFP8 GEMMs (W8A8: activations quantised to MXFP8 on the fly, E8M0
# scales per 32 read by block-scaled tensor-core MMA) on GPUs that have it, NVIDIA Blackwell
# (`performance.gemm_dtype_on`), from the release named (`MXFP8_GEMM_FROM`), read in the releases' wheels:
# - vLLM 0.17.0: ModelOpt MXFP8 (`modelopt_mxfp8`, min capability 100) runs FlashInfer's CUTLASS `mm_mxfp8`
#   (modelopt.py `Mxfp8LinearBackend.FLASHINFER_CUTLASS`); 0.16.0 added the format with the EMULATION backend only
#   (`dequant_mxfp8_to_bf16` then a bf16 GEMM). From 0.22 the MXFP8 kernel list (kernels/linear/mxfp8:
#   FlashInferCutlassMxfp8LinearKernel, `has_device_capability(100)`, then Marlin W8A16 and emulation on older
#   GPUs; compressed-tensors W8A8 MXFP8 too);
# - SGLang 0.5.9: `--quantization mxfp8` (Fp8Config `use_mxfp8`, min capability 100; Triton block-scaled MXFP8
#   matmul, `triton_mxfp8_blockscaled_linear`); 0.5.8 has no mxfp8 method.
# TensorRT-LLM's main branch has QuantAlgo.MXFP8 (PyTorch backend MXFP8LinearMethod), but no release checked here
# (PyPI holds only a pointer to NVIDIA's index) is known to ship it: priced de-quantised until one is.
# Elsewhere, and on GPUs without block-scaled MMA (Hopper, Ada, Ampere), the weights are de-quantised to 16 bits.
MXFP8_GEMM_FROM: dict[str, tuple[int, ...]] = {"vllm": (0, 17), "sglang": (0, 5, 9)}


def _family(name: str) -> str:
    if name in _F16:
        return "f16"
    if name in _Q8:
        return "q8"
    if name in _LEGACY:
        return "legacy"
    if "_k" in name or name.startswith("iq"):
        return "kquant"
    if name in ("mxfp4", "nvfp4"):
        return "fp4"
    return "gpu4"


@dataclass(frozen=True)
class Precision:
    """A weight precision parsed once (issue 15): its canonical name, storage scheme and the
    classes the estimators branch on. A resolved plan carries one (`mlrig.estimators.resolved`);
    every estimator reads it from there instead of re-reading a string."""

    name: str
    scheme: Scheme
    family: str  # f16 / q8 / legacy / kquant / fp4 / gpu4 (efficiency.FORMAT_DECODE_EFF's keys)

    @property
    def compute(self) -> str:
        """The dtype matmuls run in (`compute_dtype`)."""
        return self.scheme.compute

    @property
    def master_in_weights(self) -> bool:
        return self.scheme.master_in_weights

    @property
    def is_float(self) -> bool:
        """fp32 / bf16 / fp16 compute: a format that can itself be trained."""
        return self.scheme.compute in ("fp32", "bf16", "fp16")

    @property
    def llama_cpp_only(self) -> bool:
        """GGUF block formats: only llama.cpp (and its wrappers) load them."""
        return self.family in ("kquant", "legacy") or self.name == "q8_0"

    @property
    def kv_default(self) -> str:
        """KV-cache dtype when none is given: the activation dtype (vLLM `kv_cache_dtype="auto"`,
        llama.cpp f16 `--cache-type-k/v`); fp8/int8 and 4-bit weights keep a 16-bit cache."""
        return self.scheme.compute if self.is_float else "bf16"

    def gemm_dtype(self, engine: str) -> str:
        """The tensor-core dtype GEMMs run in: fp8 where the engine has fp8 kernels (MXFP8 where it has MXFP8
        kernels, MXFP8_GEMM_FROM; callers fall back to fp16 on GPUs without block-scaled MMA and on older
        releases, `performance.gemm_dtype_on`), fp4 for NVFP4 where it has W4A4 FP4 kernels (FP4_GEMM_ENGINES;
        callers fall back to fp16 on GPUs without an FP4 rate), int8 for W8A8 int8 where the engine has int8 GEMMs
        (INT8_GEMM_ENGINES; callers fall back to fp16 on GPUs without an int8 tensor rate), fp32 for fp32 weights,
        else fp16 (weight-only formats de-quantise to 16-bit)."""
        if self.name == "fp8" and engine in FP8_GEMM_ENGINES:
            return "fp8"
        if self.name == "mxfp8" and engine in MXFP8_GEMM_FROM:
            return "fp8"
        if self.name == "nvfp4" and engine in FP4_GEMM_ENGINES:
            return "fp4"
        if self.name == "int8" and engine in INT8_GEMM_ENGINES:
            return "int8"
        return "fp32" if self.name == "fp32" else "fp16"


@lru_cache(maxsize=1024)
def _parse(precision: str) -> Precision:
    name = normalise_precision(precision)
    return Precision(name, SCHEMES[name], _family(name))


def parse_precision(precision: str | Precision) -> Precision:
    """The parsed precision for any spelling `normalise_precision` accepts (cached: a spelling is
    parsed once per process); a `Precision` is returned as it is. Raises MlrigError when unknown."""
    return precision if isinstance(precision, Precision) else _parse(precision)


# The formats training falls back to: bf16 for weights that cannot be trained, NF4 for a QLoRA base.
BF16 = parse_precision("bf16")
NF4 = parse_precision("nf4")


def scheme(precision: str | Precision) -> Scheme:
    """The storage scheme of a precision (any spelling `normalise_precision` accepts)."""
    return parse_precision(precision).scheme


def bits_per_weight(precision: str | Precision) -> float:
    """Bits per weight of the scheme's quantised linear layers, scales and zeros included.

    This is the main block type (Q4_K_M -> Q4_K's 4.5); the average over a whole model, with
    16-bit embeddings or a Q6_K output layer, comes from `weight_bytes(arch, precision)`.
    For mxfp4 it is the experts' 4.25 (the rest of gpt-oss is bf16).
    """
    s = scheme(precision)
    return s.experts_bpw if s.experts_bpw is not None else s.linear_bpw


def master_in_weights(precision: str | Precision) -> bool:
    """True for AMP precisions (`bf16-mixed`, `fp16-mixed`): fp32 weights that are themselves the
    optimizer's master copy, with fp32 gradients (see the module docstring)."""
    return scheme(precision).master_in_weights


def compute_dtype(precision: str | Precision) -> str:
    """The dtype matmuls run in: weight-only quantisations dequantise to 16-bit (fp16 for the
    GGUF/GPTQ/AWQ kernels, bf16 for bitsandbytes and gpt-oss); fp8 and int8 use 8-bit tensor cores."""
    return scheme(precision).compute


def default_kv_precision(precision: str | Precision) -> str:
    """KV cache dtype when none is given (`Precision.kv_default`)."""
    return parse_precision(precision).kv_default


_KV_BYTES: dict[str, float] = {
    "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0,
    "int8": 1.0, "q8_0": 34 / 32,  # llama.cpp --cache-type q8_0: ggml block 34 B / 32
    "q4_0": 18 / 32, "int4": 0.5 + 2 / 32,  # llama.cpp q4_0 cache; int4 taken as q4_0-like
}


@lru_cache(maxsize=256)
def kv_bytes_per_element(precision: str) -> float:
    """Bytes per KV-cache element for a cache dtype (fp8 e4m3/e5m2 in vLLM; q8_0/q4_0 ggml
    blocks in llama.cpp). A weight-only quantisation (q4_k_m, awq, nf4 ...) given here means
    the KV cache stays at its 16-bit compute dtype. Cached: a spelling is read once."""
    p = precision.strip().lower()
    p = _ALIASES.get(p, p)
    if p in _KV_BYTES:
        return _KV_BYTES[p]
    if p in SCHEMES:
        return _KV_BYTES[default_kv_precision(p)]
    raise MlrigError(f"unknown KV-cache precision {precision!r}; use one of: {', '.join(_KV_BYTES)}")


# --------------------------------------------------------------------------------------------
# per-component weight bytes
# --------------------------------------------------------------------------------------------

def _more_bits_fraction(n_layers: int) -> float:
    """Share of layers llama.cpp's `use_more_bits(i, n)` bumps: the first and last eighth and
    every third layer between (src/llama-quant.cpp), counted without a loop over the layers: the n8
    first, the n_layers - 7 n_layers // 8 last, and of the m layers between, those at offsets 2, 5, 8 ...
    from the first of them (m // 3)."""
    n8, last = n_layers // 8, 7 * n_layers // 8
    bumped = n8 + (n_layers - last) + (last - n8) // 3
    return bumped / n_layers


def _gguf_linear_bits(arch: ModelArch, mix: str, linear: int) -> float:
    """Total bits of the linear layers of a llama.cpp K-quant mix (approximates
    `llama_tensor_get_type`, llama.cpp src/llama-quant.cpp, 2024-2025)."""
    b = GGML_BPW
    L = arch.num_layers
    v = 0 if arch.is_mla else L * arch.hidden_size * arch.kv_heads * arch.dim_head  # attn_v
    o = 0 if arch.is_mla else L * arch.num_heads * arch.dim_head * arch.hidden_size  # attn_output
    p = arch.params()
    down = (p.mlp_dense + p.experts_routed + p.experts_shared) / (3 if arch.mlp == "gated" else 2)
    more = _more_bits_fraction(L)
    base = SCHEMES[mix].linear_bpw
    # (tensor count, bpw) overrides on top of the base type
    bumps: list[tuple[float, float]] = []
    if mix in ("q4_k_m", "q5_k_m"):
        bumps = [(v * more, b["Q6_K"]), (down * more, b["Q6_K"])]
    elif mix == "q4_k_s":
        bumps = [(v * min(1.0, 4 / L), b["Q5_K"]), (down / 8, b["Q5_K"])]
    elif mix == "q3_k_m":
        bumps = [(v * min(1.0, 2 / L), b["Q5_K"]), (v * max(0.0, 1 - 2 / L), b["Q4_K"]),
                 (down / 16, b["Q5_K"]), (down * max(0.0, more - 1 / 16), b["Q4_K"]), (o, b["Q4_K"])]
    elif mix == "q2_k":
        bumps = [(v, b["Q3_K"] if arch.num_heads // arch.kv_heads < 4 else b["Q4_K"]), (down, b["Q3_K"]),
                 (o, b["Q3_K"])]
    elif mix == "iq4_xs" and arch.num_heads // arch.kv_heads >= 4:
        bumps = [(v, b["Q5_K"])]
    elif mix in ("iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq2_m"):
        small = b["IQ3_S"] if mix in ("iq2_s", "iq2_m") else b["Q2_K"]
        wide = arch.num_heads // arch.kv_heads >= 4 or arch.num_experts >= 4
        o_bpw = {"iq1_s": b["IQ2_XXS"], "iq1_m": b["IQ2_XXS"], "iq2_s": b["IQ3_S"], "iq2_m": b["IQ3_S"]}
        bumps = [(v, b["Q4_K"] if wide else small), (down / 8, small)]
        if mix in o_bpw:
            bumps.append((o, o_bpw[mix]))
    bumped = sum(n for n, _ in bumps)
    return (linear - bumped) * base + sum(n * bpw for n, bpw in bumps)


def weight_bits_by_component(arch: ModelArch, precision: str | Precision) -> dict[str, float]:
    """Bits of storage per component: linear layers, embedding, head, norms, other."""
    s = scheme(precision)
    p = arch.params()
    experts = p.experts_routed
    linear = p.attention + p.mlp_dense + p.experts_shared + experts
    if s.experts_bpw is not None:
        # a model without routed experts has no "rest" to keep at 16 bits: MXFP4 dense checkpoints (AMD Quark's
        # amd/Llama-3.1-405B-Instruct-MXFP4-Preview, amd/Llama-3.3-70B-Instruct-MXFP4-Preview: every linear layer
        # in OCP MX FP4, lm_head excluded in their quantization_config) store all linears at the experts' width
        body_bpw = s.linear_bpw if experts else s.experts_bpw
        linear_bits = (linear - experts) * body_bpw + experts * s.experts_bpw
    elif s.gguf_mix is not None:
        linear_bits = _gguf_linear_bits(arch, s.gguf_mix, linear)
    else:
        linear_bits = linear * s.linear_bpw
    embed_bpw = s.embed_bpw
    if s.is_gguf and arch.tie_word_embeddings and not p.lm_head:
        # a tied token_embd is also the output tensor: llama.cpp quantises it with the output's type
        # (`llama_tensor_get_type`, src/llama-quant.cpp: `name == output.weight || (!qs.has_output &&
        # name == token_embd.weight)`), Q6_K in the K-quant mixes: Llama-3.2-1B Q4_K_M is 0.81 GB, not 0.73
        embed_bpw = s.head_bpw
    return {
        "linear": linear_bits,
        "embedding": p.embedding * embed_bpw,
        "lm_head": p.lm_head * s.head_bpw,
        "norms": p.norms * s.norm_bpw,
        # vision towers, gates and other extras stay 16-bit in quantised checkpoints
        "other": p.other * (16.0 if s.linear_bpw < 16 else s.linear_bpw),
    }


def routed_expert_bytes(arch: ModelArch, precision: str | Precision | None = None) -> float:
    """Bytes of the routed experts inside `weight_bytes_by_component`'s "linear" part (0 for a dense model),
    scaled as that part is. A decode step reads only the experts its tokens route to, so the bytes it
    streams are the rest of the model at their own width plus this part's touched share
    (performance.read_weight_bytes). Formats that store the experts apart (mxfp4: gpt-oss's experts at
    4.25 bits, MXFP4 E2M1 with one E8M0 scale per 32; attention, router, embedding and head in bf16, the
    gpt-oss model card, arXiv 2508.10925, section 2) give their own width; elsewhere the experts carry the
    linear layers' average width."""
    p = arch.params()
    if not p.experts_routed:
        return 0.0
    prec = _requested(precision) or native_precision(arch)
    s = scheme(prec)
    bits = weight_bits_by_component(arch, prec)
    linear = p.attention + p.mlp_dense + p.experts_shared + p.experts_routed
    if s.experts_bpw is not None:
        expert_bits = p.experts_routed * s.experts_bpw
    else:
        expert_bits = bits["linear"] * p.experts_routed / max(1, linear)
    exact = weight_bytes_by_component(arch, prec)[0]
    total_bits = sum(bits.values())
    return expert_bits / 8 * (exact * 8 / total_bits if total_bits > 0 else 1.0)


def vision_bytes(arch: ModelArch, parts: Mapping[str, float]) -> float:
    """Bytes of the vision tower + projector inside the "other" part of `parts` (`weight_bytes_by_component`'s,
    already computed by the caller), 0 for a text-only model. "other" is one width, 16-bit in quantised
    checkpoints (llama.cpp ships the tower as a separate f16 mmproj file; AWQ / GPTQ / MLX quantisers skip the
    vision modules), else the checkpoint's, so the tower takes its parameter share of it."""
    p = arch.params()
    if not p.vision or not p.other:
        return 0.0
    return parts["other"] * p.vision / p.other


def plain_read_bytes(arch: ModelArch, precision: str | Precision | None = None) -> float:
    """Bytes a decode step reads at 16 bits from a checkpoint whose routed experts alone are quantised (mxfp4:
    gpt-oss's attention, router, norms and output head in bf16; model card, arXiv 2508.10925): everything but
    the input embedding and the routed experts. 0 where the format quantises the other linears too."""
    p = arch.params()
    prec = _requested(precision) or native_precision(arch)
    s = scheme(prec)
    if not p.experts_routed or s.experts_bpw is None or s.linear_bpw < 16:
        return 0.0
    total, parts = weight_bytes_by_component(arch, prec)
    embedding = 0.0 if arch.tie_word_embeddings else parts["embedding"]
    return max(0.0, total - embedding - routed_expert_bytes(arch, prec))


def _requested(precision: str | Precision | None) -> str | Precision | None:
    """`precision`, or None where it asks for the checkpoint's own format ("", "auto", "native")."""
    if isinstance(precision, Precision):
        return precision
    if precision is None or precision.strip().lower() in ("", "auto", "native"):
        return None
    return precision


def _matches_file(arch: ModelArch, precision: str | Precision | None) -> bool:
    """Whether the architecture's exact file bytes are those of `precision`."""
    if arch.weight_bytes is None:
        return False
    precision = _requested(precision)
    if precision is None:
        return True
    fmt = arch.weight_format or arch.quant_method
    if fmt is None:
        return False
    try:
        return parse_precision(fmt).name == parse_precision(precision).name
    except MlrigError:
        return False


def native_precision(arch: ModelArch) -> str:
    """The precision a checkpoint ships in: its quantisation method, else its torch dtype."""
    for cand in (arch.weight_format, arch.quant_method, arch.torch_dtype):
        if cand:
            try:
                return normalise_precision(cand)
            except MlrigError:
                continue
    return "bf16"


def weight_bytes(arch: ModelArch, precision: str | Precision | None = None) -> int:
    """Bytes of the model's weights at `precision` (None/"auto": as the checkpoint ships).

    Exact file bytes when the architecture came from a weights file in that format; otherwise
    the per-component sum of `weight_bits_by_component` (formats in the module docstring).
    """
    return weight_bytes_by_component(arch, precision)[0]


def weight_bytes_by_component(
    arch: ModelArch, precision: str | Precision | None = None
) -> tuple[int, dict[str, float]]:
    """(`weight_bytes`, the bytes of each component of `weight_bits_by_component`), the components scaled
    to sum to the exact file bytes when the architecture came from a weights file in that format."""
    bits = weight_bits_by_component(arch, _requested(precision) or native_precision(arch))
    parts = {k: v / 8 for k, v in bits.items()}
    if _matches_file(arch, precision):
        assert arch.weight_bytes is not None
        exact = arch.weight_bytes
    else:
        exact = round(sum(bits.values()) / 8)
    total = sum(parts.values())
    if total > 0 and abs(exact - total) > 1:
        parts = {k: v * exact / total for k, v in parts.items()}
    return exact, parts
