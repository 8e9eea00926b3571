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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlrig.errors import MlrigError

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch

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
    description: str = ""

    @property
    def is_gguf(self) -> bool:
        return self.gguf_mix is not None


def _gguf(name: str, base: str, *, head: str = "Q6_K", embed: str | None = None, desc: str = "") -> Scheme:
    return Scheme(name, GGML_BPW[base], GGML_BPW[embed or base], GGML_BPW[head], 32.0, "fp16",
                  gguf_mix=name, description=desc or f"GGUF {name.upper()} (llama.cpp)")


SCHEMES: dict[str, Scheme] = {s.name: s for s in [
    Scheme("fp32", 32, 32, 32, 32, "fp32", description="IEEE float32"),
    Scheme("bf16", 16, 16, 16, 16, "bf16", description="bfloat16"),
    Scheme("fp16", 16, 16, 16, 16, "fp16", description="float16"),
    Scheme("fp8", 8, 16, 16, 16, "fp8", description="fp8 e4m3 linear layers, 16-bit embeddings/head"),
    Scheme("int8", 8, 16, 16, 16, "int8", description="int8 linear layers (LLM.int8 / W8A8)"),
    Scheme("int4", GROUP128_INT4_BPW, 16, 16, 16, "fp16",
           description="generic 4-bit weight-only, group 128 (as GPTQ/AWQ)"),
    Scheme("gptq", GROUP128_INT4_BPW, 16, 16, 16, "fp16", description="GPTQ 4-bit, group 128"),
    Scheme("awq", GROUP128_INT4_BPW, 16, 16, 16, "fp16", description="AWQ 4-bit, group 128"),
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
]}

_ALIASES: dict[str, str] = {
    "float32": "fp32", "f32": "fp32", "bfloat16": "bf16", "float16": "fp16", "f16": "fp16", "half": "fp16",
    "fp8_e4m3": "fp8", "e4m3": "fp8", "float8": "fp8", "fp8-dynamic": "fp8", "w8a8": "int8",
    "bnb-nf4": "nf4", "nf4-dq": "nf4", "qlora": "nf4", "bnb-4bit": "nf4", "nf4_nodq": "nf4-nodq",
    "bnb-int8": "int8", "llm.int8": "int8", "8bit": "int8", "4bit": "int4", "q8": "q8_0",
    "q4_k": "q4_k_m", "q5_k": "q5_k_m", "q3_k": "q3_k_m", "mxfp4 moe": "mxfp4", "auto-gptq": "gptq",
    "autoawq": "awq",
}


def normalise_precision(precision: str) -> str:
    """Canonical precision name; raises MlrigError listing the valid ones."""
    p = precision.strip().lower().replace(" ", "")
    p = _ALIASES.get(p, p)
    if p not in SCHEMES:
        raise MlrigError(f"unknown precision {precision!r}; use one of: {', '.join(SCHEMES)}")
    return p


def scheme(precision: str) -> Scheme:
    """The storage scheme of a precision (any spelling `normalise_precision` accepts)."""
    return SCHEMES[normalise_precision(precision)]


def bits_per_weight(precision: str) -> float:
    """Bits per weight of the scheme's quantised linear layers, scales and zeros included.

    This is the main block type (Q4_K_M -> Q4_K's 4.5); the average over a whole model, with
    16-bit embeddings or a Q6_K output layer, comes from `weight_bytes(arch, precision)`.
    For mxfp4 it is the experts' 4.25 (the rest of gpt-oss is bf16).
    """
    s = scheme(precision)
    return s.experts_bpw if s.experts_bpw is not None else s.linear_bpw


def compute_dtype(precision: str) -> str:
    """The dtype matmuls run in: weight-only quantisations dequantise to 16-bit (fp16 for the
    GGUF/GPTQ/AWQ kernels, bf16 for bitsandbytes and gpt-oss); fp8 and int8 use 8-bit tensor cores."""
    return scheme(precision).compute


def default_kv_precision(precision: str) -> str:
    """KV cache dtype when none is given: the activation dtype (vLLM `kv_cache_dtype="auto"`,
    llama.cpp f16 `--cache-type-k/v`). fp8/int8 weights keep 16-bit activations and KV."""
    c = compute_dtype(precision)
    return c if c in ("fp32", "bf16", "fp16") else "bf16"


_KV_BYTES: dict[str, float] = {
    "fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0,
    "int8": 1.0, "q8_0": 34 / 32,  # llama.cpp --cache-type q8_0: ggml block 34 B / 32
    "q4_0": 18 / 32, "int4": 0.5 + 2 / 32,  # llama.cpp q4_0 cache; int4 taken as q4_0-like
}


def kv_bytes_per_element(precision: str) -> float:
    """Bytes per KV-cache element for a cache dtype (fp8 e4m3/e5m2 in vLLM; q8_0/q4_0 ggml
    blocks in llama.cpp). A weight-only quantisation (q4_k_m, awq, nf4 ...) given here means
    the KV cache stays at its 16-bit compute dtype."""
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
    every third layer between (src/llama-quant.cpp)."""
    n8 = n_layers // 8
    bumped = sum(1 for i in range(n_layers) if i < n8 or i >= 7 * n_layers // 8 or (i - n8) % 3 == 2)
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
    bumped = sum(n for n, _ in bumps)
    return (linear - bumped) * base + sum(n * bpw for n, bpw in bumps)


def weight_bits_by_component(arch: ModelArch, precision: str) -> dict[str, float]:
    """Bits of storage per component: linear layers, embedding, head, norms, other."""
    s = scheme(precision)
    p = arch.params()
    experts = p.experts_routed
    linear = p.attention + p.mlp_dense + p.experts_shared + experts
    if s.experts_bpw is not None:
        linear_bits = (linear - experts) * s.linear_bpw + experts * s.experts_bpw
    elif s.gguf_mix is not None:
        linear_bits = _gguf_linear_bits(arch, s.gguf_mix, linear)
    else:
        linear_bits = linear * s.linear_bpw
    return {
        "linear": linear_bits,
        "embedding": p.embedding * s.embed_bpw,
        "lm_head": p.lm_head * s.head_bpw,
        "norms": p.norms * s.norm_bpw,
        # vision towers, gates and other extras stay 16-bit in quantised checkpoints
        "other": p.other * (16.0 if s.linear_bpw < 16 else s.linear_bpw),
    }


def _requested(precision: str | None) -> str | None:
    """`precision`, or None where it asks for the checkpoint's own format ("", "auto", "native")."""
    if precision is None or precision.strip().lower() in ("", "auto", "native"):
        return None
    return precision


def _matches_file(arch: ModelArch, precision: str | None) -> bool:
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
        return normalise_precision(fmt) == normalise_precision(precision)
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


def weight_bytes(arch: ModelArch, precision: str | None = None) -> int:
    """Bytes of the model's weights at `precision` (None/"auto": as the checkpoint ships).

    Exact file bytes when the architecture came from a weights file in that format; otherwise
    the per-component sum of `weight_bits_by_component` (formats in the module docstring).
    """
    if _matches_file(arch, precision):
        assert arch.weight_bytes is not None
        return arch.weight_bytes
    bits = sum(weight_bits_by_component(arch, _requested(precision) or native_precision(arch)).values())
    return round(bits / 8)
