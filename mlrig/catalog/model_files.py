"""Read model architectures from files: HF `config.json`, safetensors headers, GGUF headers.

Everything here treats its input as hostile: reads are bounded, lengths from a file are checked
against the file size and a cap before anything is allocated, nothing is unpickled or executed.
A malformed file raises `MlrigError` naming the problem, never a traceback.

Config dialects follow the Hugging Face `transformers` configuration classes (LlamaConfig,
Qwen2Config, Gemma3TextConfig, DeepseekV3Config, GptOssConfig, FalconConfig, GPT2Config,
BertConfig, T5Config); defaults used where a key is absent are those classes' defaults
(transformers 4.53), as recorded in the catalog's `_catalog.defaults_filled_from_transformers`.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mlrig.catalog.models import ModelArch, validation_message
from mlrig.errors import MlrigError
from mlrig.quant import GGML_TYPES

_MAX_CONFIG_BYTES = 16 * 2**20  # a config.json is a few KiB; refuse anything huge
_SIZE_CAP = 10_000_000  # generic cap for hidden/intermediate sizes
_VOCAB_CAP = 100_000_000
_LAYER_CAP = 10_000
_HEAD_CAP = 100_000

# ---------------------------------------------------------------------------------------------
# config.json -> ModelArch
# ---------------------------------------------------------------------------------------------


class _Cfg:
    """Typed, validating access to one config dict; errors name the key and the file."""

    def __init__(self, d: dict[str, Any], where: str) -> None:
        self.d = d
        self.where = where

    def has(self, key: str) -> bool:
        return self.d.get(key) is not None

    def get_int(self, *keys: str, default: int | None = None, cap: int = _SIZE_CAP, minimum: int = 1) -> int:
        for key in keys:
            v = self.d.get(key)
            if v is None:
                continue
            return self._check_int(key, v, cap, minimum)
        if default is None:
            raise MlrigError(f"{self.where}: config lacks {keys[0]!r}"
                             + (f" (or {', '.join(map(repr, keys[1:]))})" if len(keys) > 1 else "")
                             + "; give a complete config.json")
        return default

    def opt_int(self, *keys: str, cap: int = _SIZE_CAP, minimum: int = 1) -> int | None:
        for key in keys:
            v = self.d.get(key)
            if v is not None:
                return self._check_int(key, v, cap, minimum)
        return None

    def _check_int(self, key: str, v: Any, cap: int, minimum: int) -> int:
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise MlrigError(f"{self.where}: config key {key!r} must be an integer, got {v!r}")
        if v < minimum:
            raise MlrigError(f"{self.where}: config key {key!r} must be >= {minimum}, got {v}")
        if v > cap:
            raise MlrigError(f"{self.where}: config key {key!r}={v} is absurdly large (limit {cap}); "
                             "check the config")
        return v

    def get_bool(self, key: str, default: bool) -> bool:
        v = self.d.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise MlrigError(f"{self.where}: config key {key!r} must be true or false, got {v!r}")
        return v

    def get_str(self, key: str, default: str | None = None) -> str | None:
        v = self.d.get(key)
        if v is None:
            return default
        if not isinstance(v, str):
            raise MlrigError(f"{self.where}: config key {key!r} must be a string, got {v!r}")
        return v

    def sub(self, key: str) -> _Cfg | None:
        v = self.d.get(key)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise MlrigError(f"{self.where}: config key {key!r} must be an object, got {type(v).__name__}")
        return _Cfg(v, f"{self.where} [{key}]")

    def str_list(self, key: str) -> list[str] | None:
        v = self.d.get(key)
        if v is None:
            return None
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise MlrigError(f"{self.where}: config key {key!r} must be a list of strings")
        return v


_GATED_ACTS = {"silu", "swiglu", "geglu", "gelu_pytorch_tanh"}

# Gemma3TextConfig.__init__ defaults (transformers 4.53 configuration_gemma3.py); the official
# multimodal google/gemma-3-{4b,12b,27b}-it configs omit these keys.
_GEMMA3_TEXT_DEFAULTS: dict[str, Any] = {
    "vocab_size": 262_208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "max_position_embeddings": 131_072, "sliding_window": 4096, "sliding_window_pattern": 6,
}
# SiglipVisionConfig as used by Gemma 3 (google/gemma-3-4b-it vision_config): the 12B copy in the
# catalog lacks its vision_config; all Gemma 3 multimodal sizes share this tower.
_GEMMA3_VISION_DEFAULTS: dict[str, Any] = {
    "hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27, "num_attention_heads": 16,
    "image_size": 896, "patch_size": 14, "num_channels": 3,
}


def _siglip_vision_params(v: _Cfg, text_hidden: int) -> int:
    """SigLIP vision tower + Gemma 3 projector (transformers SiglipVisionTransformer,
    Gemma3MultiModalProjector): patch conv (+bias), learned positions, encoder layers with biased
    q/k/v/o and fc1/fc2 plus two LayerNorms, post LayerNorm; projector = vision->text matrix and
    an RMSNorm over the vision width."""
    h = v.get_int("hidden_size", default=_GEMMA3_VISION_DEFAULTS["hidden_size"])
    inter = v.get_int("intermediate_size", default=_GEMMA3_VISION_DEFAULTS["intermediate_size"])
    layers = v.get_int("num_hidden_layers", default=_GEMMA3_VISION_DEFAULTS["num_hidden_layers"],
                       cap=_LAYER_CAP)
    image = v.get_int("image_size", default=_GEMMA3_VISION_DEFAULTS["image_size"], cap=100_000)
    patch = v.get_int("patch_size", default=_GEMMA3_VISION_DEFAULTS["patch_size"], cap=100_000)
    channels = v.get_int("num_channels", default=3, cap=64)
    patches = (image // patch) ** 2
    embed = channels * patch * patch * h + h + patches * h
    per_layer = 4 * (h * h + h) + (h * inter + inter) + (inter * h + h) + 2 * 2 * h
    return embed + layers * per_layer + 2 * h + h * text_hidden + h


def _count_sliding(c: _Cfg, layers: int, model_type: str) -> tuple[int | None, int, str | None]:
    """(window, number of windowed layers, note) for the family's local-attention layout."""
    window = c.opt_int("sliding_window", cap=1_000_000_000)
    layer_types = c.str_list("layer_types")
    if model_type in ("qwen2", "qwen3", "qwen3_moe", "qwen2_moe"):
        if not c.get_bool("use_sliding_window", False):
            return None, 0, None  # Qwen2.5/Qwen3 carry sliding_window but do not use it
        first = c.get_int("max_window_layers", default=layers, cap=_LAYER_CAP, minimum=0)
        return window, max(0, layers - first), "Qwen sliding window on layers >= max_window_layers"
    if window is None:
        return None, 0, None
    if layer_types is not None:
        if len(layer_types) != layers:
            raise MlrigError(f"{c.where}: layer_types has {len(layer_types)} entries for {layers} layers")
        return window, sum(t == "sliding_attention" for t in layer_types), None
    if model_type == "gemma2":  # Gemma2: layer i is local when i is even
        return window, (layers + 1) // 2, None
    if model_type in ("gemma3", "gemma3_text"):  # layer i is global iff (i+1) % pattern == 0
        pattern = c.get_int("sliding_window_pattern", default=6, cap=_LAYER_CAP)
        return window, layers - layers // pattern, None
    if model_type == "gpt_oss":  # alternating, starting with sliding
        return window, (layers + 1) // 2, None
    # Mistral v0.1, Phi-3, Mixtral and llama-likes with a window: every layer is windowed
    return window, layers, None


def _official_exact(text: Any) -> int | None:
    """An exact count written with thousands separators in `_official_params` (e.g. keras-hub)."""
    if not isinstance(text, str):
        return None
    m = re.search(r"\d{1,3}(?:,\d{3}){2,}", text)
    return int(m.group(0).replace(",", "")) if m else None


def arch_from_hf_config(cfg: dict[str, Any], *, model_id: str, hf_id: str | None, source: str) -> ModelArch:
    """Normalise a Hugging Face config.json dict into a `ModelArch` (see module docstring)."""
    if not isinstance(cfg, dict):
        raise MlrigError(f"{source}: a config must be a JSON object, got {type(cfg).__name__}")
    top = _Cfg(cfg, source)
    model_type = (top.get_str("model_type") or "").lower()
    archs = cfg.get("architectures")
    architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else model_type
    notes: list[str] = []
    other = 0
    fields: dict[str, Any] = {}

    c = top
    if model_type == "gemma3":
        text = top.sub("text_config")
        if text is None:
            raise MlrigError(f"{source}: gemma3 config lacks 'text_config'")
        c = _Cfg({**_GEMMA3_TEXT_DEFAULTS, **text.d}, f"{source} [text_config]")
        defaulted = sorted(k for k in _GEMMA3_TEXT_DEFAULTS if text.d.get(k) is None)
        if defaulted:
            notes.append("Gemma 3 text_config omits " + ", ".join(defaulted)
                         + "; filled from transformers Gemma3TextConfig defaults")
    elif model_type == "gemma3_text":
        c = _Cfg({**_GEMMA3_TEXT_DEFAULTS, **cfg}, source)

    hidden = c.get_int("hidden_size", "n_embd", "d_model", "dim", "model_dim", "hidden_dim")
    heads = c.get_int("num_attention_heads", "n_head", "num_heads", "n_heads", cap=_HEAD_CAP)
    if model_type == "t5":
        layers = c.get_int("num_decoder_layers", "num_layers", cap=_LAYER_CAP)
    else:
        layers = c.get_int("num_hidden_layers", "n_layer", "num_layers", "n_layers", cap=_LAYER_CAP)
    vocab = c.get_int("vocab_size", "padded_vocab_size", "n_vocab", cap=_VOCAB_CAP)
    head_dim = c.opt_int("head_dim", "d_kv", cap=_HEAD_CAP)
    kv = c.opt_int("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num",
                   cap=_HEAD_CAP)
    max_pos = c.opt_int("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "n_ctx",
                        cap=1_000_000_000)
    inter = c.opt_int("intermediate_size", "n_inner", "ffn_hidden_size", "d_ff", "ffn_dim")
    tie_default = model_type in ("gemma", "gemma2", "gemma3", "gemma3_text", "gpt2", "t5", "falcon")
    tie = c.get_bool("tie_word_embeddings", tie_default)
    if model_type == "gemma3":  # the multimodal top level carries tie; text_config inherits it
        tie = top.get_bool("tie_word_embeddings", c.get_bool("tie_word_embeddings", True))
    dtype = top.get_str("torch_dtype") or top.get_str("dtype") or c.get_str("torch_dtype")
    if dtype is None:
        dtype = "float32" if model_type in ("gpt2", "bert", "t5") else "bfloat16"
        notes.append(f"config has no torch_dtype; assuming {dtype}")
    attn_bias = c.get_bool("attention_bias", False)
    mlp_bias = c.get_bool("mlp_bias", False)
    act = (c.get_str("hidden_act") or c.get_str("hidden_activation") or c.get_str("activation_function")
           or "silu").lower()

    fields.update(
        hidden_size=hidden, num_layers=layers, num_heads=heads, num_kv_heads=kv, head_dim=head_dim,
        vocab_size=vocab, tie_word_embeddings=tie, max_position_embeddings=max_pos, torch_dtype=dtype,
        qkv_bias=attn_bias, o_bias=attn_bias, mlp_bias=mlp_bias, mlp="gated",
    )

    if model_type in ("llama", "mistral", "mixtral", "phi3", "qwen2", "qwen3", "qwen3_moe", "gemma",
                      "gemma2", "gemma3", "gemma3_text", "deepseek_v3", "gpt_oss"):
        fields["intermediate_size"] = inter if inter is not None else c.get_int("intermediate_size")
    if model_type == "qwen2":
        fields["qkv_bias"] = True  # Qwen2Attention: q/k/v biased, o not (no config key)
        fields["o_bias"] = False
    if model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text"):
        fields["qk_norm"] = True
    if model_type in ("gemma2", "gemma3", "gemma3_text"):
        fields["norms_per_layer"] = 4  # input, post-attention, pre- and post-feedforward RMSNorms
    if model_type in ("mixtral",):
        fields.update(num_experts=c.get_int("num_local_experts", cap=_HEAD_CAP),
                      experts_per_token=c.get_int("num_experts_per_tok", default=2, cap=_HEAD_CAP),
                      moe_intermediate_size=fields["intermediate_size"])
    if model_type in ("qwen3_moe", "qwen2_moe"):
        n_exp = c.get_int("num_experts", cap=_HEAD_CAP)
        fields.update(num_experts=n_exp, experts_per_token=c.get_int("num_experts_per_tok", cap=_HEAD_CAP),
                      moe_intermediate_size=c.get_int("moe_intermediate_size"))
        step = c.get_int("decoder_sparse_step", default=1, cap=_LAYER_CAP)
        dense_only = cfg.get("mlp_only_layers") or []
        if not isinstance(dense_only, list):
            raise MlrigError(f"{source}: config key 'mlp_only_layers' must be a list")
        dense = sum(1 for i in range(layers) if i in dense_only or (i + 1) % step != 0)
        if dense:
            fields["first_dense_layers"] = dense
            notes.append(f"{dense} layers use a dense MLP (mlp_only_layers / decoder_sparse_step)")
        if model_type == "qwen2_moe" and c.has("shared_expert_intermediate_size"):
            fields.update(num_shared_experts=1,
                          shared_expert_intermediate_size=c.get_int("shared_expert_intermediate_size"))
            other += layers * hidden  # shared_expert_gate (hidden -> 1)
    if model_type == "deepseek_v3":
        q_lora = c.opt_int("q_lora_rank")
        rope = c.get_int("qk_rope_head_dim", cap=_HEAD_CAP)
        nope = c.get_int("qk_nope_head_dim", cap=_HEAD_CAP)
        fields.update(kv_lora_rank=c.get_int("kv_lora_rank"), q_lora_rank=q_lora, qk_rope_head_dim=rope,
                      qk_nope_head_dim=nope, v_head_dim=c.get_int("v_head_dim", cap=_HEAD_CAP),
                      head_dim=nope + rope)
        if c.get_int("moe_layer_freq", default=1, cap=_LAYER_CAP) != 1:
            raise MlrigError(f"{source}: moe_layer_freq != 1 is not supported; give an explicit architecture")
        n_routed = c.opt_int("n_routed_experts", cap=_HEAD_CAP)
        if n_routed:
            fields.update(num_experts=n_routed,
                          experts_per_token=c.get_int("num_experts_per_tok", cap=_HEAD_CAP),
                          moe_intermediate_size=c.get_int("moe_intermediate_size"),
                          num_shared_experts=c.get_int("n_shared_experts", default=0, minimum=0,
                                                       cap=_HEAD_CAP),
                          first_dense_layers=c.get_int("first_k_dense_replace", default=0, minimum=0,
                                                   cap=layers),
                          # DeepseekV3TopkRouter keeps a learned e_score_correction_bias per expert
                          router_bias=c.get_str("topk_method") == "noaux_tc")
        mtp = c.get_int("num_nextn_predict_layers", default=0, minimum=0, cap=_LAYER_CAP)
        if mtp:
            notes.append(f"{mtp} multi-token-prediction (MTP) layer(s) ship in the checkpoint but are not "
                         "counted (DeepSeek-V3 README: 671B main model + 14B MTP = 685B on HF)")
        notes.append("MLA: the KV cache holds kv_lora_rank + qk_rope_head_dim values per token per layer")
    if model_type == "gpt_oss":
        n_exp = c.get_int("num_local_experts", cap=_HEAD_CAP)
        fields.update(num_experts=n_exp,
                      experts_per_token=c.get_int("num_experts_per_tok", "experts_per_token", cap=_HEAD_CAP),
                      moe_intermediate_size=fields["intermediate_size"], qkv_bias=True, o_bias=True,
                      expert_bias=True, router_bias=True, attention_sinks=True)
        notes.append("gpt-oss 'active parameters' as published exclude the input embedding table")
    if model_type == "falcon":
        new_arch = c.get_bool("new_decoder_architecture", False)
        bias = c.get_bool("bias", False)
        if new_arch:
            kv = c.get_int("num_kv_heads", default=heads, cap=_HEAD_CAP)
            norms = c.get_int("num_ln_in_parallel_attn", default=2, cap=16)
        else:
            kv = 1 if c.get_bool("multi_query", True) else heads  # FalconConfig multi_query default True
            norms = 1 if c.get_bool("parallel_attn", True) else 2
            if c.has("num_kv_heads") and kv == 1:
                notes.append("multi_query=true: 1 shared KV head (num_kv_heads in the config is ignored)")
        fields.update(num_kv_heads=kv, intermediate_size=inter or 4 * hidden, mlp="plain", norm="layernorm",
                      norms_per_layer=norms, qkv_bias=bias, o_bias=bias, mlp_bias=bias,
                      max_position_embeddings=max_pos or 2048)
        if tie:
            notes.append("lm_head tied to the embedding (FalconConfig default); the published checkpoint "
                         "also stores lm_head.weight, so the files hold ~vocab x hidden more")
    if model_type == "gpt2":
        fields.update(intermediate_size=inter or 4 * hidden, mlp="plain", norm="layernorm",
                      qkv_bias=True, o_bias=True, mlp_bias=True,
                      learned_position_embeddings=c.get_int("n_positions", "max_position_embeddings",
                                                        default=1024, cap=10_000_000))
    if model_type == "bert":
        type_vocab = c.get_int("type_vocab_size", default=2, minimum=0, cap=_VOCAB_CAP)
        fields.update(kind="encoder", intermediate_size=c.get_int("intermediate_size"), mlp="plain",
                      norm="layernorm", qkv_bias=True, o_bias=True, mlp_bias=True,
                      learned_position_embeddings=c.get_int("max_position_embeddings", default=512,
                                                        cap=10_000_000))
        # token-type embeddings + pooler dense (BertModel); the embedding LayerNorm stands in for
        # the "final norm" of the breakdown. The MLM head is not counted.
        other += type_vocab * hidden + hidden * hidden + hidden
        notes.append("BERT count = BertModel incl. pooler and token-type embeddings, excl. the MLM head")
    if model_type == "t5":
        proj = (c.get_str("feed_forward_proj") or "relu").lower()
        buckets = c.get_int("relative_attention_num_buckets", default=32, cap=100_000)
        fields.update(kind="encoder-decoder", num_encoder_layers=c.get_int("num_layers", cap=_LAYER_CAP),
                      intermediate_size=c.get_int("d_ff"),
                      mlp="gated" if proj.startswith("gated") else "plain",
                      head_dim=c.get_int("d_kv", default=64, cap=_HEAD_CAP))
        other += 2 * buckets * heads  # relative_attention_bias in the first encoder and decoder block
    if model_type == "gemma3":
        vision = top.sub("vision_config")
        if vision is None:
            vision = _Cfg(dict(_GEMMA3_VISION_DEFAULTS), f"{source} [vision_config defaults]")
            notes.append("vision_config absent; assuming the SigLIP tower all Gemma 3 multimodal sizes share")
        vparams = _siglip_vision_params(vision, hidden)
        other += vparams
        notes.append(f"includes the SigLIP vision tower + projector ({vparams / 1e6:.0f}M params)")

    if "intermediate_size" not in fields:  # generic llama-like fallback
        fields["intermediate_size"] = inter if inter is not None else 4 * hidden
        if act not in _GATED_ACTS or inter is None:
            fields["mlp"] = "plain"
        if model_type not in ("falcon", "gpt2", "bert", "t5"):
            notes.append(f"model_type {model_type or '(none)'!r} read as a generic llama-like decoder; "
                         "check the parameter count against the checkpoint")

    window, n_sliding, swnote = _count_sliding(c, layers, model_type)
    if window is not None and n_sliding:
        fields.update(sliding_window=window, num_sliding_layers=n_sliding)
    if swnote:
        notes.append(swnote)

    quant = top.sub("quantization_config")
    quant_method = quant.get_str("quant_method") if quant is not None else None
    if quant_method:
        notes.append(f"published weights are quantized ({quant_method}; see quantization_config)")

    fields = {k: v for k, v in fields.items() if v is not None}
    try:
        return ModelArch(
            id=model_id, hf_id=hf_id, name=hf_id or model_id, architecture=architecture,
            model_type=model_type or "custom", other_params=other, source=source, notes=notes,
            quant_method=quant_method, params_stated=_official_exact(cfg.get("_official_params")),
            **fields,
        )
    except ValueError as exc:  # pydantic ValidationError subclasses ValueError
        raise MlrigError(f"{source}: inconsistent config ({validation_message(exc)})") from None


def read_json_file(path: Path, what: str = "config") -> Any:
    """Read a small JSON file with a size cap; errors name the file."""
    try:
        size = path.stat().st_size
        if size > _MAX_CONFIG_BYTES:
            raise MlrigError(f"{what} {str(path)!r} is {size} bytes; a {what} file is at most "
                             f"{_MAX_CONFIG_BYTES // 2**20} MiB")
        with path.open("rb") as f:
            raw = f.read(_MAX_CONFIG_BYTES + 1)
        return json.loads(raw.decode("utf-8"))
    except OSError as exc:
        raise MlrigError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise MlrigError(f"{what} {str(path)!r} is not valid JSON ({str(exc)[:120]})") from None


def arch_from_config_file(path: Path, *, model_id: str | None = None, hf_id: str | None = None) -> ModelArch:
    cfg = read_json_file(path)
    if not isinstance(cfg, dict):
        raise MlrigError(f"config {str(path)!r} must hold a JSON object, got {type(cfg).__name__}")
    if hf_id is None:
        name = cfg.get("_name_or_path") or cfg.get("_hf_repo")
        hf_id = name if isinstance(name, str) and re.fullmatch(r"[\w.-]+/[\w.-]+", name) else None
    mid = model_id or (path.parent.name if path.name == "config.json" else path.stem)
    return arch_from_hf_config(cfg, model_id=mid, hf_id=hf_id, source=str(path))


# ---------------------------------------------------------------------------------------------
# safetensors
# ---------------------------------------------------------------------------------------------

# Bytes per element of the safetensors dtypes (huggingface/safetensors safetensors/src/tensor.rs
# `Dtype::bitsize`); F4/F6 are packed sub-byte formats.
SAFETENSORS_DTYPE_BYTES: dict[str, float] = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8,
    "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75,
}
_SAFETENSORS_HEADER_CAP = 100 * 2**20  # the Rust reader refuses headers over 100 MB too
_MAX_ELEMENTS = 2**50


class SafetensorsInfo(BaseModel):
    """What one safetensors file (or a sharded set) holds: exact element counts and bytes per dtype."""

    model_config = ConfigDict(defer_build=True)  # built on first use: a config.json never needs it

    paths: list[str]
    num_tensors: int = Field(ge=0)
    params: int = Field(ge=0, description="stored elements (packed quantized tensors count as stored)")
    params_by_dtype: dict[str, int] = Field(default_factory=dict)
    bytes_by_dtype: dict[str, int] = Field(default_factory=dict)
    tensor_bytes: int = Field(ge=0, description="sum of tensor data bytes")
    file_bytes: int = Field(ge=0)
    metadata: dict[str, str] = Field(default_factory=dict)

    @property
    def dominant_dtype(self) -> str | None:
        return max(self.bytes_by_dtype, key=lambda k: self.bytes_by_dtype[k]) if self.bytes_by_dtype else None


def read_safetensors_header(path: str | Path) -> SafetensorsInfo:
    """Parse a safetensors header: u64 little-endian header length, JSON {name: {dtype, shape,
    data_offsets}, "__metadata__": {...}} (format spec: github.com/huggingface/safetensors README).
    Bounded: the length is checked against the file size and a 100 MiB cap before reading."""
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise MlrigError(f"safetensors file {str(p)!r} is truncated ({size} bytes); re-download it")
            (n,) = struct.unpack("<Q", head)
            if n > _SAFETENSORS_HEADER_CAP or n > size - 8:
                raise MlrigError(f"safetensors file {str(p)!r} declares a {n}-byte header but holds "
                                 f"{size} bytes; the file is corrupt or not safetensors")
            raw = f.read(n)
    except OSError as exc:
        raise MlrigError(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None
    if len(raw) != n:
        raise MlrigError(f"safetensors file {str(p)!r} is truncated in its header")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        raise MlrigError(f"safetensors file {str(p)!r} has a header that is not JSON; "
                         "the file is corrupt or not safetensors") from None
    if not isinstance(header, dict):
        raise MlrigError(f"safetensors file {str(p)!r}: header must be a JSON object")
    data_len = size - 8 - n
    meta_raw = header.pop("__metadata__", None) or {}
    if not isinstance(meta_raw, dict):
        raise MlrigError(f"safetensors file {str(p)!r}: __metadata__ must be an object")
    metadata = {str(k): str(v)[:1000] for k, v in list(meta_raw.items())[:1000]}
    params_by: dict[str, int] = {}
    bytes_by: dict[str, int] = {}
    for name, t in header.items():
        where = f"safetensors file {str(p)!r}, tensor {str(name)[:80]!r}"
        if not isinstance(t, dict):
            raise MlrigError(f"{where}: entry must be an object")
        dtype = t.get("dtype")
        if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPE_BYTES:
            raise MlrigError(f"{where}: unknown dtype {str(dtype)[:20]!r}")
        shape = t.get("shape")
        if not isinstance(shape, list) or len(shape) > 16:
            raise MlrigError(f"{where}: shape must be a list of at most 16 dimensions")
        numel = 1
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                raise MlrigError(f"{where}: shape {str(shape)[:60]} must hold non-negative integers")
            numel *= d
            if numel > _MAX_ELEMENTS:
                raise MlrigError(f"{where}: absurd shape {str(shape)[:60]}")
        offs = t.get("data_offsets")
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise MlrigError(f"{where}: data_offsets must be [begin, end]")
        begin, end = offs
        if not 0 <= begin <= end <= data_len:
            raise MlrigError(f"{where}: data_offsets {offs} fall outside the {data_len}-byte data section; "
                             "the file is truncated or corrupt")
        expected = math.ceil(numel * SAFETENSORS_DTYPE_BYTES[dtype])
        if end - begin != expected:
            raise MlrigError(f"{where}: holds {end - begin} bytes but {dtype}{shape} needs {expected}")
        params_by[dtype] = params_by.get(dtype, 0) + numel
        bytes_by[dtype] = bytes_by.get(dtype, 0) + expected
    return SafetensorsInfo(
        paths=[str(p)], num_tensors=len(header), params=sum(params_by.values()), params_by_dtype=params_by,
        bytes_by_dtype=bytes_by, tensor_bytes=sum(bytes_by.values()), file_bytes=size, metadata=metadata)


def read_safetensors_index(path: str | Path) -> SafetensorsInfo:
    """A sharded checkpoint: `model.safetensors.index.json` names the shards; read each header."""
    p = Path(path)
    idx = read_json_file(p, "safetensors index")
    wmap = idx.get("weight_map") if isinstance(idx, dict) else None
    if not isinstance(wmap, dict) or not wmap:
        raise MlrigError(f"safetensors index {str(p)!r} lacks a 'weight_map' object")
    shards = sorted({v for v in wmap.values() if isinstance(v, str)})
    if len(shards) != len(set(wmap.values())) or len(shards) > 100_000:
        raise MlrigError(f"safetensors index {str(p)!r}: weight_map values must be shard file names")
    infos = []
    for s in shards:
        if "/" in s or "\\" in s or s in (".", "..") or not s:
            raise MlrigError(f"safetensors index {str(p)!r} names shard {s[:80]!r} outside its folder")
        shard = p.parent / s
        if not shard.is_file():
            raise MlrigError(f"shard {s!r} named by {str(p)!r} is missing; download all shards")
        infos.append(read_safetensors_header(shard))
    return merge_safetensors(infos)


def merge_safetensors(infos: list[SafetensorsInfo]) -> SafetensorsInfo:
    params_by: dict[str, int] = {}
    bytes_by: dict[str, int] = {}
    for i in infos:
        for k, v in i.params_by_dtype.items():
            params_by[k] = params_by.get(k, 0) + v
        for k, v in i.bytes_by_dtype.items():
            bytes_by[k] = bytes_by.get(k, 0) + v
    return SafetensorsInfo(
        paths=[x for i in infos for x in i.paths], num_tensors=sum(i.num_tensors for i in infos),
        params=sum(params_by.values()), params_by_dtype=params_by, bytes_by_dtype=bytes_by,
        tensor_bytes=sum(bytes_by.values()), file_bytes=sum(i.file_bytes for i in infos),
        metadata=infos[0].metadata if infos else {})


# ---------------------------------------------------------------------------------------------
# GGUF
# ---------------------------------------------------------------------------------------------

GGUF_FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}
# GGUF metadata value types (ggml/docs gguf.md): id -> struct format of a scalar
_GGUF_SCALARS: dict[int, str] = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                                 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
_GGUF_MAX_TENSORS = 1_000_000
_GGUF_MAX_KV = 1_000_000
_GGUF_MAX_STRING = 64 * 2**20
_GGUF_MAX_DIMS = 4  # GGML_MAX_DIMS


class GGUFTensor(BaseModel):
    model_config = ConfigDict(defer_build=True)  # GGUF files only
    name: str
    shape: list[int]
    ggml_type: str
    n_elements: int
    n_bytes: int
    offset: int


class GGUFInfo(BaseModel):
    """The header of a GGUF file: architecture metadata and exact per-tensor sizes."""

    model_config = ConfigDict(defer_build=True)  # GGUF files only

    path: str
    version: int
    architecture: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="scalar metadata (arrays summarised)")
    vocab_size: int | None = None
    tensors: list[GGUFTensor] = Field(default_factory=list)
    file_bytes: int = 0
    data_offset: int = 0
    file_type: str | None = None  # from general.file_type, e.g. "Q4_K_M"

    @property
    def params(self) -> int:
        return sum(t.n_elements for t in self.tensors)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def bytes_by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.ggml_type] = out.get(t.ggml_type, 0) + t.n_bytes
        return out

    @property
    def dominant_type(self) -> str | None:
        by = self.bytes_by_type
        return max(by, key=lambda k: by[k]) if by else None


class _Reader:
    """Bounded little-endian reader over an open file: every read checks the remaining size."""

    def __init__(self, f: Any, size: int, where: str) -> None:
        self.f = f
        self.size = size
        self.pos = 0
        self.where = where

    def fail(self, what: str) -> MlrigError:
        return MlrigError(f"GGUF file {self.where!r}: {what} at byte {self.pos}; the file is corrupt, "
                          "truncated or not GGUF")

    @property
    def remaining(self) -> int:
        return self.size - self.pos

    def read(self, n: int) -> bytes:
        if n < 0 or n > self.remaining:
            raise self.fail(f"a {n}-byte field runs past the end of the file")
        b = self.f.read(n)
        if len(b) != n:
            raise self.fail("short read")
        self.pos += n
        return bytes(b)

    def skip(self, n: int) -> None:
        if n < 0 or n > self.remaining:
            raise self.fail(f"skipping {n} bytes runs past the end of the file")
        self.f.seek(n, 1)
        self.pos += n

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.read(struct.calcsize(fmt)))[0]

    def string(self, cap: int = _GGUF_MAX_STRING, keep: bool = True) -> str:
        n = self.unpack("<Q")
        if n > cap:
            raise self.fail(f"string of {n} bytes exceeds the {cap}-byte limit")
        if not keep:
            self.skip(n)
            return ""
        return self.read(n).decode("utf-8", errors="replace")

    def value(self, vtype: int, depth: int = 0) -> Any:
        """A metadata value; arrays are returned as ('array', elem_type, count[, scalar values if short])."""
        if vtype in _GGUF_SCALARS:
            return self.unpack(_GGUF_SCALARS[vtype])
        if vtype == _GGUF_STRING:
            return self.string()
        if vtype == _GGUF_ARRAY:
            if depth > 2:
                raise self.fail("arrays nested too deeply")
            etype = self.unpack("<I")
            count = self.unpack("<Q")
            if etype in _GGUF_SCALARS:
                width = struct.calcsize(_GGUF_SCALARS[etype])
                if count > self.remaining // width:
                    raise self.fail(f"array of {count} elements runs past the end of the file")
                if count <= 4096:  # short numeric arrays (per-layer head counts...) are kept
                    raw = self.read(count * width)
                    return list(struct.unpack(f"<{count}{_GGUF_SCALARS[etype][1]}", raw))
                self.skip(count * width)
                return ("array", etype, count)
            if etype == _GGUF_STRING:
                if count > self.remaining // 8:
                    raise self.fail(f"array of {count} strings runs past the end of the file")
                for _ in range(count):  # read the lengths, skip the content (tokenizer vocab)
                    self.string(keep=False)
                return ("array", etype, count)
            if etype == _GGUF_ARRAY:
                if count > self.remaining // 12:
                    raise self.fail(f"array of {count} arrays runs past the end of the file")
                for _ in range(count):
                    self.value(_GGUF_ARRAY, depth + 1)
                return ("array", etype, count)
            raise self.fail(f"unknown array element type {etype}")
        raise self.fail(f"unknown metadata value type {vtype}")


def read_gguf(path: str | Path) -> GGUFInfo:
    """Parse a GGUF v2/v3 header with bounded reads (format: ggml docs/gguf.md).

    Layout: magic 'GGUF', u32 version, u64 tensor count, u64 metadata count, metadata key/values,
    tensor infos (name, u32 n_dims, u64 dims, u32 ggml type, u64 offset), padding to
    `general.alignment` (default 32), tensor data. Tensor bytes = ceil(elements / block) x block
    bytes for the ggml type (mlrig.quant.GGML_TYPES).
    """
    p = Path(path)
    try:
        size = p.stat().st_size
        with p.open("rb") as f:
            return _parse_gguf(_Reader(f, size, str(p)), str(p))
    except OSError as exc:
        raise MlrigError(f"cannot read {str(p)!r}: {exc.strerror or exc}") from None


def _parse_gguf(r: _Reader, where: str) -> GGUFInfo:
    if r.size < 24 or r.read(4) != b"GGUF":
        raise MlrigError(f"{where!r} is not a GGUF file (bad magic); give a .gguf model file")
    version = r.unpack("<I")
    if version not in (2, 3):
        raise MlrigError(f"GGUF file {where!r} has version {version}; only GGUF v2/v3 are supported")
    n_tensors = r.unpack("<Q")
    n_kv = r.unpack("<Q")
    if n_tensors > _GGUF_MAX_TENSORS or n_tensors > r.remaining // 24:
        raise r.fail(f"tensor count {n_tensors} is impossible for the file size")
    if n_kv > _GGUF_MAX_KV or n_kv > r.remaining // 12:
        raise r.fail(f"metadata count {n_kv} is impossible for the file size")
    meta: dict[str, Any] = {}
    vocab: int | None = None
    for _ in range(n_kv):
        key = r.string(cap=65_536)
        vtype = r.unpack("<I")
        val = r.value(vtype)
        if key == "tokenizer.ggml.tokens":
            vocab = val[2] if isinstance(val, tuple) else len(val) if isinstance(val, list) else None
        elif not isinstance(val, tuple):
            meta[key] = val if not isinstance(val, str) else val[:4096]
    tensors: list[GGUFTensor] = []
    for _ in range(n_tensors):
        name = r.string(cap=65_536)
        n_dims = r.unpack("<I")
        if n_dims > _GGUF_MAX_DIMS:
            raise r.fail(f"tensor {name[:60]!r} has {n_dims} dimensions (max {_GGUF_MAX_DIMS})")
        shape = [r.unpack("<Q") for _ in range(n_dims)]
        numel = 1
        for d in shape:
            numel *= d
        if numel > _MAX_ELEMENTS:
            raise r.fail(f"tensor {name[:60]!r} has an absurd shape {shape}")
        gtype = r.unpack("<I")
        if gtype not in GGML_TYPES:
            raise r.fail(f"tensor {name[:60]!r} has unknown ggml type {gtype}")
        tname, block, block_bytes = GGML_TYPES[gtype]
        if shape and shape[0] % block:
            raise r.fail(f"tensor {name[:60]!r} row of {shape[0]} is not a multiple of the {tname} block")
        offset = r.unpack("<Q")
        nbytes = numel // block * block_bytes
        tensors.append(GGUFTensor(name=name, shape=shape, ggml_type=tname, n_elements=numel,
                                  n_bytes=nbytes, offset=offset))
    align = meta.get("general.alignment", 32)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or align > 2**20:
        raise r.fail(f"general.alignment {align!r} is invalid")
    data_offset = -(-r.pos // align) * align
    data_len = r.size - data_offset
    for t in tensors:
        if t.offset + t.n_bytes > data_len:
            raise MlrigError(f"GGUF file {where!r}: tensor {t.name[:60]!r} data runs past the end of the "
                             f"file ({t.offset}+{t.n_bytes} > {data_len}); the file is truncated")
    ft = meta.get("general.file_type")
    arch = meta.get("general.architecture")
    return GGUFInfo(
        path=where, version=version, architecture=arch if isinstance(arch, str) else None, metadata=meta,
        vocab_size=vocab, tensors=tensors, file_bytes=r.size, data_offset=data_offset,
        file_type=GGUF_FILE_TYPES.get(ft) if isinstance(ft, int) else None)


def _gguf_int(info: GGUFInfo, key: str, *, required: bool = True, reduce_max: bool = True) -> int | None:
    """An integer metadata value `{arch}.{key}`; per-layer arrays give their maximum."""
    full = f"{info.architecture}.{key}"
    v = info.metadata.get(full)
    if isinstance(v, list) and v and all(isinstance(x, int) for x in v):
        v = max(v) if reduce_max else v[0]
    if v is None or isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        if required:
            raise MlrigError(f"GGUF file {info.path!r} lacks a positive {full!r}; "
                             "cannot derive the architecture")
        return None
    return v


def arch_from_gguf(info: GGUFInfo) -> ModelArch:
    """ModelArch from GGUF metadata (llama.cpp key names, gguf-py constants Keys.LLM/Attention)."""
    if not info.architecture:
        raise MlrigError(f"GGUF file {info.path!r} lacks general.architecture")
    hidden = _gguf_int(info, "embedding_length")
    heads = _gguf_int(info, "attention.head_count")
    assert hidden is not None and heads is not None
    kv = _gguf_int(info, "attention.head_count_kv", required=False)
    head_dim = _gguf_int(info, "attention.key_length", required=False)
    names = {t.name for t in info.tensors}
    vocab = info.vocab_size or _gguf_int(info, "vocab_size", required=False)
    if vocab is None:
        emb = next((t for t in info.tensors if t.name == "token_embd.weight"), None)
        vocab = emb.shape[1] if emb is not None and len(emb.shape) == 2 else None
    if not vocab:
        raise MlrigError(f"GGUF file {info.path!r}: cannot tell the vocabulary size")
    n_exp = _gguf_int(info, "expert_count", required=False) or 0
    ffn = _gguf_int(info, "feed_forward_length", required=bool(not n_exp))
    expert_ffn = _gguf_int(info, "expert_feed_forward_length", required=False)
    window = _gguf_int(info, "attention.sliding_window", required=False)
    name = info.metadata.get("general.name")
    fmt = info.file_type or info.dominant_type
    notes = [f"from GGUF v{info.version} metadata; {info.params:,} weights in {len(info.tensors)} tensors, "
             f"{info.tensor_bytes:,} bytes ({fmt})"]
    if window:
        notes.append(f"GGUF declares a {window}-token sliding window; the layer layout is not read from GGUF")
    try:
        return ModelArch(
            id=Path(info.path).stem, name=name if isinstance(name, str) else None,
            architecture=info.architecture, model_type=info.architecture,
            hidden_size=hidden, num_layers=_gguf_int(info, "block_count"), num_heads=heads, num_kv_heads=kv,
            head_dim=head_dim, intermediate_size=ffn or expert_ffn or 4 * hidden, vocab_size=vocab,
            tie_word_embeddings="output.weight" not in names,
            num_experts=n_exp, experts_per_token=_gguf_int(info, "expert_used_count", required=False) or 0,
            moe_intermediate_size=expert_ffn,
            max_position_embeddings=_gguf_int(info, "context_length", required=False),
            torch_dtype="bfloat16", weight_bytes=info.tensor_bytes, weight_format=fmt,
            weight_bytes_by_dtype=info.bytes_by_type, params_in_file=info.params,
            source=f"GGUF file {info.path}", notes=notes,
        )
    except ValueError as exc:
        raise MlrigError(f"GGUF file {info.path!r}: inconsistent metadata "
                         f"({validation_message(exc)})") from None


# ---------------------------------------------------------------------------------------------
# paths
# ---------------------------------------------------------------------------------------------

_SAFETENSORS_FORMATS = {"BF16": "bf16", "F16": "fp16", "F32": "fp32", "F8_E4M3": "fp8", "F8_E5M2": "fp8",
                        "I8": "int8"}


def _with_safetensors(arch: ModelArch, st: SafetensorsInfo) -> ModelArch:
    arch.weight_bytes = st.tensor_bytes
    arch.weight_bytes_by_dtype = dict(st.bytes_by_dtype)
    arch.params_in_file = st.params
    dom = st.dominant_dtype
    arch.weight_format = arch.quant_method or (_SAFETENSORS_FORMATS.get(dom, dom.lower()) if dom else None)
    derived = arch.total_params
    msg = (f"safetensors: {st.params:,} stored elements in {st.num_tensors} tensors, "
           f"{st.tensor_bytes:,} bytes ({', '.join(sorted(st.bytes_by_dtype))})")
    if not arch.quant_method and st.params and abs(st.params - derived) > 0.01 * derived:
        msg += f"; differs from the {derived:,} derived from config.json (extra heads, tied copies?)"
    arch.notes.append(msg)
    return arch


def _safetensors_in(folder: Path) -> SafetensorsInfo | None:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return read_safetensors_index(index)
    files = sorted(folder.glob("*.safetensors"))[:10_000]
    return merge_safetensors([read_safetensors_header(f) for f in files]) if files else None


def load_model_path(path: str | Path) -> ModelArch:
    """A ModelArch from a config.json, a model folder, a .safetensors file or index, or a .gguf file."""
    p = Path(path).expanduser()
    if not p.exists():
        raise MlrigError(f"model path {str(p)!r} does not exist")
    if p.is_dir():
        cfg = p / "config.json"
        if cfg.is_file():
            arch = arch_from_config_file(cfg, model_id=p.name)
            st = _safetensors_in(p)
            return _with_safetensors(arch, st) if st else arch
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return arch_from_gguf(read_gguf(ggufs[0]))
        raise MlrigError(f"folder {str(p)!r} has no config.json"
                         + (f" and {len(ggufs)} .gguf files; pass one of them" if ggufs else
                            "; pass a folder with config.json, a .gguf file or an explicit architecture"))
    name = p.name.lower()
    if name.endswith(".gguf"):
        return arch_from_gguf(read_gguf(p))
    if name.endswith(".safetensors") or name.endswith(".safetensors.index.json"):
        cfg = p.parent / "config.json"
        if not cfg.is_file():
            raise MlrigError(f"{str(p)!r} holds weights but no architecture: put its config.json beside it, "
                             "or pass a catalog name or an explicit architecture")
        st = read_safetensors_index(p) if name.endswith(".json") else read_safetensors_header(p)
        return _with_safetensors(arch_from_config_file(cfg, model_id=p.parent.name), st)
    if name.endswith(".json"):
        return arch_from_config_file(p)
    raise MlrigError(f"{str(p)!r} is not a config.json, model folder, .safetensors or .gguf file")
