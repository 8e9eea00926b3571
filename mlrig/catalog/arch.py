"""Model architectures: the normalised description every estimator works from.

A `ModelArch` is built from a Hugging Face `config.json` (see `mlrig/catalog/readers/`), from the
built-in catalog (`mlrig/data/models/*.json`, copies of published configs with their sources),
from a safetensors/GGUF header, or from explicit fields. Parameter counts are derived from the
architecture (`mlrig.catalog.params`), following the module shapes of the Hugging Face
`transformers` implementations. This module imports nothing above it: readers, the catalog and the
estimators all build on it.
"""

from __future__ import annotations

import copy
from operator import itemgetter
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from mlrig import vec
from mlrig.catalog.params import ParamBreakdown, param_breakdown
from mlrig.vec import Num


class ModelArch(BaseModel):
    """A transformer's shape, normalised across config dialects.

    Defaults follow the Llama family (RMSNorm, gated SiLU MLP, no biases, untied head).
    """

    id: str = "custom"
    hf_id: str | None = None
    catalog_id: str | None = None  # built-in catalog file stem, e.g. "meta-llama--Meta-Llama-3.1-8B"
    name: str | None = None
    architecture: str = "custom"
    model_type: str = "custom"
    kind: Literal["decoder", "encoder", "encoder-decoder"] = "decoder"

    hidden_size: int = Field(gt=0, le=1_000_000)
    num_layers: int = Field(gt=0, le=10_000, description="decoder layers (encoder layers for encoder-only)")
    num_encoder_layers: int = Field(0, ge=0, le=10_000, description="encoder layers of an encoder-decoder")
    num_heads: int = Field(gt=0, le=100_000)
    num_kv_heads: int | None = Field(None, gt=0, le=100_000)
    head_dim: int | None = Field(None, gt=0, le=100_000)
    intermediate_size: int = Field(gt=0, le=10_000_000)
    mlp: Literal["gated", "plain"] = "gated"
    vocab_size: int = Field(gt=0, le=100_000_000)
    tie_word_embeddings: bool = False

    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: int = Field(2, ge=0, le=16)
    qk_norm: bool = False
    attention_sinks: bool = False  # gpt-oss: one learned sink logit per head per layer
    learned_position_embeddings: int = Field(0, ge=0, description="rows of a learned position table")

    # Mixture of experts
    num_experts: int = Field(0, ge=0, le=100_000)
    experts_per_token: int = Field(0, ge=0, le=100_000)
    moe_intermediate_size: int | None = Field(None, gt=0)
    num_shared_experts: int = Field(0, ge=0)
    shared_expert_intermediate_size: int | None = Field(None, gt=0)
    first_dense_layers: int = Field(0, ge=0, description="leading layers with a dense MLP (DeepSeek)")
    router_bias: bool = False
    expert_bias: bool = False

    # DeepSeek multi-head latent attention
    kv_lora_rank: int | None = Field(None, gt=0)
    q_lora_rank: int | None = Field(None, gt=0)
    qk_rope_head_dim: int | None = Field(None, gt=0)
    qk_nope_head_dim: int | None = Field(None, gt=0)
    v_head_dim: int | None = Field(None, gt=0)

    # Local attention: `num_sliding_layers` of `num_layers` attend to the last `sliding_window` tokens
    sliding_window: int | None = Field(None, gt=0)
    num_sliding_layers: int = Field(0, ge=0)

    max_position_embeddings: int | None = Field(None, gt=0)
    torch_dtype: str = "bfloat16"
    other_params: int = Field(0, ge=0, description="derived extras: pooler, relative bias, vision tower")
    vision_params: int = Field(0, ge=0, description="the part of other_params that is a vision tower + projector: "
                               "loaded with the model, run only on image inputs, never per text token")
    params_stated: int | None = Field(None, gt=0, description="published exact total, when known")
    # Known from a weights file header (safetensors / GGUF): exact bytes and format, else None
    weight_bytes: int | None = Field(None, ge=0, description="exact bytes of the weights file(s)")
    weight_format: str | None = None  # e.g. "bf16", "Q4_K_M", "mxfp4"
    # weights packaged as GGUF (a .gguf file, an ollama library tag), whatever their type (F16 too): what
    # llama.cpp and its front ends load, so the default engine is llama.cpp (planner.default_engine)
    gguf_packaged: bool = False
    weight_bytes_by_dtype: dict[str, int] = {}
    params_in_file: int | None = Field(None, ge=0, description="exact element count in the weights file(s)")
    quant_method: str | None = None  # published checkpoint quantization (config quantization_config)
    # FP8 checkpoints scaled per block of weights (quantization_config.weight_block_size, DeepSeek-V3's [128, 128]):
    # the block edge, None for per-tensor / per-channel scales (performance.prefill_gemm_rates)
    weight_block_size: int | None = Field(None, gt=0)
    source: str = "user-supplied architecture"
    notes: list[str] = []

    @model_validator(mode="after")
    def _fill_defaults(self) -> ModelArch:
        if self.num_kv_heads is None:
            self.num_kv_heads = self.num_heads
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_heads
        if self.num_kv_heads > self.num_heads:
            raise ValueError(f"num_kv_heads ({self.num_kv_heads}) exceeds num_heads ({self.num_heads})")
        if self.num_experts and not (0 < self.experts_per_token <= self.num_experts):
            raise ValueError("experts_per_token must be between 1 and num_experts for an MoE model")
        if self.num_sliding_layers > self.num_layers:
            raise ValueError("num_sliding_layers exceeds num_layers")
        return self

    # ---- derived shapes -------------------------------------------------------------------
    @property
    def kv_heads(self) -> int:
        assert self.num_kv_heads is not None
        return self.num_kv_heads

    @property
    def dim_head(self) -> int:
        assert self.head_dim is not None
        return self.head_dim

    @property
    def attention_widths(self) -> tuple[int, int]:
        """(QK^T width, AV width) of one layer's attention: num_heads x the query/key head dim and
        num_heads x the value head dim. A (query, key) pair costs 2 x the first in QK^T and 2 x the
        second in AV (one multiply-add each; FlashAttention, Dao et al. 2022, sec. 3 and its FLOP
        count 4 x seq^2 x heads x head_dim per layer forward). This is the query width, not d_model:
        Qwen3-0.6B has 16 x 128 = 2048 against hidden 1024 (config.json), Gemma-3-27B 32 x 128 = 4096
        against 5376. MLA (DeepSeek-V2 paper, sec. 2.1) scores with qk_nope + qk_rope dims (128 + 64)
        and weights values of v_head_dim (128)."""
        if self.is_mla:
            qk = (self.qk_nope_head_dim or self.dim_head) + (self.qk_rope_head_dim or 0)
            return self.num_heads * qk, self.num_heads * (self.v_head_dim or self.dim_head)
        return self.num_heads * self.dim_head, self.num_heads * self.dim_head

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def num_moe_layers(self) -> int:
        return self.num_layers - self.first_dense_layers if self.is_moe else 0

    @property
    def total_layers(self) -> int:
        return self.num_layers + self.num_encoder_layers

    def detached_copy(self) -> ModelArch:
        """A copy that shares nothing mutable with this one: what `model_copy(deep=True)` gives (same
        values, same fields set), at a fraction of the cost, since only the container fields (`notes`,
        `weight_bytes_by_dtype`) need copying; every other value is an immutable scalar."""
        twin = self.model_copy()
        values = twin.__dict__
        for name, value in values.items():
            kind = type(value)
            if kind in _IMMUTABLE:
                continue
            if kind is list and all(type(v) in _IMMUTABLE for v in value):
                values[name] = list(value)
            elif kind is dict and all(type(k) in _IMMUTABLE and type(v) in _IMMUTABLE for k, v in value.items()):
                values[name] = dict(value)
            else:
                values[name] = copy.deepcopy(value)
        return twin

    def params(self) -> ParamBreakdown:
        """Parameter counts per component; see `mlrig.catalog.params.param_breakdown`.

        Computed once per shape: the result is cached under the values of every field (but the two
        unhashable ones, which the count does not read), so an arch changed in place or copied with
        changed fields is counted afresh."""
        key = (type(self), _shape_key(self.__dict__))
        found = _PARAMS_CACHE.get(key)
        if found is None:
            if len(_PARAMS_CACHE) >= _PARAMS_CACHE_MAX:
                _PARAMS_CACHE.clear()
            found = _PARAMS_CACHE[key] = param_breakdown(self)
        return found

    @property
    def total_params(self) -> int:
        return self.params().total

    @property
    def active_params(self) -> int:
        return self.params().active

    def kv_values_per_token(self, context_tokens: Num) -> Num:
        """KV-cache elements held per token of a sequence of `context_tokens`, summed over layers.

        Standard attention stores K and V: 2 x kv_heads x head_dim per layer (Vaswani 2017; GQA,
        Ainslie 2023, shares K/V across query groups). MLA stores one compressed latent of
        kv_lora_rank + qk_rope_head_dim per layer (DeepSeek-V2 paper, sec. 2.1). Sliding-window
        layers hold at most `sliding_window` tokens, so their per-token share shrinks as the
        context grows beyond the window (Mistral 7B paper; Gemma 2/3 reports).
        """
        if self.is_mla:
            assert self.kv_lora_rank is not None
            per_layer = float(self.kv_lora_rank + (self.qk_rope_head_dim or 0))
        else:
            per_layer = 2.0 * self.kv_heads * self.dim_head
        full_layers = self.num_layers - self.num_sliding_layers
        held = float(full_layers)
        if self.num_sliding_layers and self.sliding_window and vec.is_array(context_tokens):
            # a sweep's contexts (all > 0): the same sum, element by element
            return per_layer * (held + self.num_sliding_layers * vec.minimum(1.0, self.sliding_window / context_tokens))
        if self.num_sliding_layers and self.sliding_window and context_tokens > 0:
            held += self.num_sliding_layers * min(1.0, self.sliding_window / context_tokens)
        elif self.num_sliding_layers:
            held += self.num_sliding_layers
        return per_layer * held


_IMMUTABLE = frozenset({str, int, float, bool, type(None)})

# `ModelArch.params` cache: (class, field values) -> breakdown (ParamBreakdown is frozen, so shared).
# The fields left out of the key hold lists/dicts (unhashable) and are not read by `param_breakdown`.
PARAMS_KEY_EXCLUDED = ("notes", "weight_bytes_by_dtype")
# pydantic keeps field values in the instance __dict__ (read with one itemgetter: ~3x faster than getattr)
_shape_key = itemgetter(*(n for n in ModelArch.model_fields if n not in PARAMS_KEY_EXCLUDED))
_PARAMS_CACHE: dict[tuple[type, Any], ParamBreakdown] = {}
_PARAMS_CACHE_MAX = 4096


def validation_message(exc: ValueError) -> str:
    """The first problem of a pydantic ValidationError as one line ('field: message')."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        errs = errors()
        if errs:
            e = errs[0]
            loc = ".".join(str(x) for x in e.get("loc", ()))
            msg = str(e.get("msg", "")).removeprefix("Value error, ")
            return f"{loc}: {msg}" if loc else msg
    return str(exc).splitlines()[0]
