"""Hugging Face `config.json` -> ModelArch.

The input is treated as hostile: the file size is capped before reading, every number is checked for
type and range, nothing is executed (no `trust_remote_code`). A malformed config raises `MlrigError`
naming the key and the file, never a traceback.

Config dialects follow the Hugging Face `transformers` configuration classes (LlamaConfig,
Qwen2Config, Gemma3TextConfig, DeepseekV3Config, GptOssConfig, FalconConfig, GPT2Config,
BertConfig, T5Config); defaults used where a key is absent are those classes' defaults
(transformers 4.53), as recorded in the catalog's `_catalog.defaults_filled_from_transformers`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mlrig.catalog.arch import ModelArch, validation_message
from mlrig.errors import MlrigError

_MAX_CONFIG_BYTES = 16 * 2**20  # a config.json is a few KiB; refuse anything huge
_MAX_CONFIG_ITEMS = 1_000_000  # JSON values; the largest real configs hold a few thousand
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


def _pixtral_vision_params(top: _Cfg, v: _Cfg, text_hidden: int) -> int:
    """Pixtral vision tower + Mistral 3 projector (transformers PixtralVisionModel, Mistral3MultiModalProjector):
    patch conv without bias, ln_pre RMSNorm, layers of bias-free q/k/v/o and a gated (SiLU) MLP with two RMSNorms;
    projector = RMSNorm over the vision width, a patch merger (spatial_merge_size^2 x vision -> vision, no bias) and
    linear_1 (vision x feature layers -> text) + linear_2 (text -> text), biased when multimodal_projector_bias.
    Matches a meta-device Mistral3ForConditionalGeneration of the default (Mistral-Small-3.1) config: 403,305,472
    tower + 35,652,608 projector parameters (transformers 5.23)."""
    h = v.get_int("hidden_size")
    inter = v.get_int("intermediate_size")
    layers = v.get_int("num_hidden_layers", cap=_LAYER_CAP)
    patch = v.get_int("patch_size", cap=100_000)
    channels = v.get_int("num_channels", default=3, cap=64)
    tower = channels * patch * patch * h + h + layers * (4 * h * h + 3 * h * inter + 2 * h)
    merge = top.get_int("spatial_merge_size", default=2, cap=64)
    feature_layers = top.d.get("vision_feature_layer", -1)
    n_feat = len(feature_layers) if isinstance(feature_layers, list) else 1
    bias = top.get_bool("multimodal_projector_bias", False)
    projector = (h + merge * merge * h * h + h * n_feat * text_hidden + text_hidden * text_hidden
                 + (2 * text_hidden if bias else 0))
    return tower + projector


def _qwen_vl_vision_params(model_type: str, v: _Cfg, text_hidden: int) -> int:
    """Vision tower + patch merger(s) of Qwen2.5-VL / Qwen3-VL (transformers Qwen2_5_VisionTransformer-
    PretrainedModel, Qwen3VLVisionModel).

    Qwen2.5-VL: Conv3d patch embedding (no bias), blocks of RMSNorm x2, fused qkv and proj with bias, gated
    MLP (gate/up/down with bias); merger = RMSNorm + Linear(4h, 4h) + Linear(4h, out) with biases.
    Qwen3-VL: Conv3d with bias, learned position table (num_position_embeddings), blocks of LayerNorm x2
    (weight + bias), qkv/proj with bias, plain MLP fc1/fc2 with bias; a merger (LayerNorm(h) + the two
    Linears) plus one deepstack merger per deepstack_visual_indexes entry (LayerNorm over 4h)."""
    h = v.get_int("hidden_size", "embed_dim")
    inter = v.get_int("intermediate_size", default=4 * h)
    depth = v.get_int("depth", "num_hidden_layers", cap=_LAYER_CAP)
    patch = v.get_int("patch_size", "spatial_patch_size", default=14, cap=1000)
    tps = v.get_int("temporal_patch_size", default=2, cap=64)
    chans = v.get_int("in_channels", "in_chans", default=3, cap=64)
    merge = v.get_int("spatial_merge_size", default=2, cap=64)
    out = v.get_int("out_hidden_size", default=text_hidden)
    m = h * merge * merge
    linears = (4 * h * h + 4 * h)  # qkv + proj with biases
    if model_type == "qwen2_5_vl":
        block = 2 * h + linears + 3 * h * inter + 2 * inter + h
        merger = h + (m * m + m) + (m * out + out)
        return chans * tps * patch * patch * h + depth * block + merger
    block = 4 * h + linears + 2 * h * inter + inter + h
    merger_core = (m * m + m) + (m * out + out)
    deepstack = v.d.get("deepstack_visual_indexes") or []
    n_deep = len(deepstack) if isinstance(deepstack, list) else 0
    pos = v.get_int("num_position_embeddings", default=0, minimum=0, cap=10_000_000)
    return (chans * tps * patch * patch * h + h + pos * h + depth * block
            + (2 * h + merger_core) + n_deep * (2 * m + merger_core))


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
    if model_type == "cohere2":  # Command R7B / A: 3 sliding layers then 1 global (sliding_window_pattern 4)
        pattern = c.get_int("sliding_window_pattern", default=4, cap=_LAYER_CAP)
        return window, layers - layers // pattern, None
    if model_type == "gpt_oss":  # alternating, starting with sliding
        return window, (layers + 1) // 2, None
    # Mistral v0.1, Phi-3, Mixtral and llama-likes with a window: every layer is windowed
    return window, layers, None


def _layer_set(value: Any, key: str, source: str) -> frozenset[int]:
    """A list of layer indices as a set (membership in O(1): a list made `i in layers` quadratic,
    76 s for a 4 MB config with 10,000 layers)."""
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in value):
        raise MlrigError(f"{source}: config key {key!r} must be a list of layer numbers")
    return frozenset(value)


def _official_exact(text: Any) -> int | None:
    """An exact count written with thousands separators in `_official_params` (e.g. keras-hub)."""
    if not isinstance(text, str):
        return None
    m = re.search(r"\d{1,3}(?:,\d{3}){2,}", text[:1000])
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
    vision_tower = 0  # the vision tower + projector inside `other` (ModelArch.vision_params)
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
    elif model_type in ("llama4", "qwen3_vl", "qwen3_vl_moe", "qwen2_5_vl", "mistral3"):
        # multimodal wrappers: the language model's shape lives in text_config (Llama4Config,
        # Qwen3VLConfig; Qwen2.5-VL keeps it at the top level in its published configs)
        text = top.sub("text_config")
        if text is not None:
            c = _Cfg({**{k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}, **text.d},
                     f"{source} [text_config]")
    if model_type == "kimi_k2":  # Kimi K2 is the DeepSeek-V3 architecture (architectures: DeepseekV3ForCausalLM)
        model_type = "deepseek_v3"
        notes.append("Kimi K2 (model_type kimi_k2) read as the DeepSeek-V3 architecture it declares")
    if model_type == "deepseek_v2" and (c.get_str("topk_method") or "greedy") != "noaux_tc":
        pass  # same shapes as V3 below; V2's greedy routing has no per-expert score bias
    text_type = (c.get_str("model_type") or model_type).lower()

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
                      "gemma2", "gemma3", "gemma3_text", "deepseek_v3", "deepseek_v2", "gpt_oss", "llama4",
                      "olmo2", "cohere", "cohere2", "glm4_moe", "glm4", "qwen2_moe", "qwen3_vl", "qwen3_vl_moe",
                      "qwen2_5_vl", "granite", "mistral3"):
        fields["intermediate_size"] = inter if inter is not None else c.get_int("intermediate_size")
    if model_type in ("qwen2", "qwen2_moe", "qwen2_5_vl"):
        fields["qkv_bias"] = True  # Qwen2Attention: q/k/v biased, o not (no config key)
        fields["o_bias"] = False
    if model_type in ("qwen3", "qwen3_moe", "gemma3", "gemma3_text", "qwen3_vl", "qwen3_vl_moe"):
        fields["qk_norm"] = True
    if model_type in ("qwen3_vl", "qwen3_vl_moe") and text_type == "qwen3_vl_moe_text":
        model_type = "qwen3_vl_moe"
    if model_type in ("gemma2", "gemma3", "gemma3_text"):
        fields["norms_per_layer"] = 4  # input, post-attention, pre- and post-feedforward RMSNorms
    if model_type in ("mixtral",):
        fields.update(num_experts=c.get_int("num_local_experts", cap=_HEAD_CAP),
                      experts_per_token=c.get_int("num_experts_per_tok", default=2, cap=_HEAD_CAP),
                      moe_intermediate_size=fields["intermediate_size"])
    if model_type == "llama4":
        # Llama4TextMoe: top-k routed experts (intermediate_size) + one shared expert of the same width in
        # each MoE layer; every `interleave_moe_layer_step`-th layer is MoE, the others a dense MLP of
        # intermediate_size_mlp (transformers Llama4TextDecoderLayer). QK norm is a weightless L2 norm.
        n_exp = c.get_int("num_local_experts", cap=_HEAD_CAP)
        step = c.get_int("interleave_moe_layer_step", default=1, cap=_LAYER_CAP)
        moe_layers = c.d.get("moe_layers")
        if isinstance(moe_layers, list):
            n_moe = len(moe_layers)
        else:
            n_moe = sum(1 for i in range(layers) if (i + 1) % step == 0)
        inter_mlp = c.get_int("intermediate_size_mlp", default=fields["intermediate_size"])
        dense = layers - n_moe
        fields.update(num_experts=n_exp, experts_per_token=c.get_int("num_experts_per_tok", default=1, cap=_HEAD_CAP),
                      moe_intermediate_size=fields["intermediate_size"], num_shared_experts=1,
                      shared_expert_intermediate_size=fields["intermediate_size"], first_dense_layers=dense,
                      intermediate_size=inter_mlp)
        if dense:
            notes.append(f"{dense} of {layers} layers use a dense MLP of {inter_mlp} "
                         f"(interleave_moe_layer_step {step})")
        chunk = c.opt_int("attention_chunk_size", cap=1_000_000_000)
        if chunk:
            # no_rope_layers: every 4th layer is a global NoPE layer, the others attend within chunks
            nope = c.d.get("no_rope_layers")
            # (a 1 in no_rope_layers marks a RoPE layer, which attends within its chunk)
            local = (sum(1 for x in nope if x) if isinstance(nope, list) and len(nope) == layers
                     else layers - layers // 4)
            fields.update(sliding_window=chunk, num_sliding_layers=local)
            notes.append(f"chunked attention ({chunk} tokens) on {local} of {layers} layers: their KV cache holds at "
                         "most one chunk (modelled as a window)")
        if top.sub("vision_config") is None:
            notes.append("vision_config absent from this copy: the vision encoder (~0.9B) is not counted")
    if model_type in ("qwen3_moe", "qwen2_moe", "qwen3_vl_moe"):
        n_exp = c.get_int("num_experts", cap=_HEAD_CAP)
        fields.update(num_experts=n_exp, experts_per_token=c.get_int("num_experts_per_tok", cap=_HEAD_CAP),
                      moe_intermediate_size=c.get_int("moe_intermediate_size"))
        step = c.get_int("decoder_sparse_step", default=1, cap=_LAYER_CAP)
        dense_only = _layer_set(cfg.get("mlp_only_layers"), "mlp_only_layers", source)
        dense = sum(1 for i in range(layers) if i in dense_only or (i + 1) % step != 0)
        if dense:
            fields["first_dense_layers"] = dense
            notes.append(f"{dense} layers use a dense MLP (mlp_only_layers / decoder_sparse_step)")
        if model_type == "qwen2_moe" and c.has("shared_expert_intermediate_size"):
            fields.update(num_shared_experts=1,
                          shared_expert_intermediate_size=c.get_int("shared_expert_intermediate_size"))
            other += layers * hidden  # shared_expert_gate (hidden -> 1)
    if model_type in ("deepseek_v3", "deepseek_v2"):
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
    if model_type == "glm4_moe":
        # Glm4MoeForCausalLM (transformers): GQA attention with q/k/v bias (attention_bias), optional per-head
        # q/k RMSNorm (use_qk_norm), first_k_dense_replace dense layers, then MoE layers of n_routed_experts +
        # n_shared_experts (moe_intermediate_size each) with a sigmoid router and per-expert score bias.
        fields.update(qkv_bias=c.get_bool("attention_bias", True), o_bias=False,
                      qk_norm=c.get_bool("use_qk_norm", False),
                      num_experts=c.get_int("n_routed_experts", cap=_HEAD_CAP),
                      experts_per_token=c.get_int("num_experts_per_tok", cap=_HEAD_CAP),
                      moe_intermediate_size=c.get_int("moe_intermediate_size"),
                      num_shared_experts=c.get_int("n_shared_experts", default=0, minimum=0, cap=_HEAD_CAP),
                      first_dense_layers=c.get_int("first_k_dense_replace", default=0, minimum=0, cap=layers),
                      router_bias=True)
        mtp = c.get_int("num_nextn_predict_layers", default=0, minimum=0, cap=_LAYER_CAP)
        if mtp:
            notes.append(f"{mtp} multi-token-prediction (MTP) layer(s) ship in the checkpoint but are not counted")
    if model_type == "olmo2":
        # Olmo2Attention: RMSNorm over the whole q and k projections (q_norm: heads x head_dim, k_norm:
        # kv_heads x head_dim); the block norms come after attention and MLP (2 per layer, no input norm).
        # QK-norm all the same (qk_norm, which counts a per-head 2 x head_dim): the rest of the weights go to other
        hd = head_dim or hidden // heads
        fields["qk_norm"] = True
        other += layers * ((heads + (kv or heads)) * hd - 2 * hd)
        notes.append("OLMo 2: q/k RMSNorm over the full projections (counted), norms after each sub-block")
    if model_type in ("cohere", "cohere2"):
        # CohereDecoderLayer: one input LayerNorm (weight only, no bias) feeding attention and MLP in parallel;
        # tied embeddings by default; Command R+ adds per-head q/k LayerNorms (use_qk_norm).
        fields.update(norms_per_layer=1, tie_word_embeddings=c.get_bool("tie_word_embeddings", True))
        if c.get_bool("use_qk_norm", False):
            hd = head_dim or hidden // heads
            fields["qk_norm"] = True  # counts 2 x head_dim per layer; CohereLayerNorm holds one row per head
            other += layers * ((heads + (kv or heads)) * hd - 2 * hd)
            notes.append("Command R+: per-head q/k LayerNorm weights counted")
    if model_type in ("chatglm", "glm"):
        # ChatGLMModel (THUDM chatglm3 / glm-4-9b remote code, mirrored by transformers' GlmForCausalLM):
        # fused QKV with bias (add_qkv_bias), multi_query_group_num KV groups of kv_channels, SwiGLU MLP
        # of ffn_hidden_size, RMSNorm, untied output_layer over padded_vocab_size.
        hd = c.get_int("kv_channels", default=hidden // heads, cap=_HEAD_CAP)
        groups = c.get_int("multi_query_group_num", default=heads, cap=_HEAD_CAP) \
            if c.get_bool("multi_query_attention", True) else heads
        fields.update(head_dim=hd, num_kv_heads=groups, qkv_bias=c.get_bool("add_qkv_bias", True), o_bias=False,
                      intermediate_size=c.get_int("ffn_hidden_size"), mlp="gated",
                      tie_word_embeddings=c.get_bool("tie_word_embeddings", False))
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
    if model_type == "internlm":
        # InternLMForCausalLM (internlm/internlm-*b remote code, modeling_internlm.py): the Llama block with
        # q/k/v/o biases switched by the config's `bias` (true for InternLM-7B, false for InternLM-20B)
        bias = c.get_bool("bias", True)
        fields.update(intermediate_size=c.get_int("intermediate_size"), qkv_bias=bias, o_bias=bias)
    if model_type == "qwen":
        # QWenLMHeadModel (Qwen/Qwen-* remote code, modeling_qwen.py): fused c_attn h -> 3h WITH bias, c_proj
        # without (no_bias); SwiGLU MLP w1/w2 of intermediate_size // 2 each and c_proj back (the config states
        # twice the MLP width); heads of kv_channels; RMSNorm ln_1/ln_2/ln_f; untied lm_head.
        fields.update(intermediate_size=c.get_int("intermediate_size") // 2, qkv_bias=True, o_bias=False,
                      head_dim=c.get_int("kv_channels", default=hidden // heads, cap=_HEAD_CAP))
        notes.append("Qwen (v1): the MLP is intermediate_size / 2 wide (w1, w2, c_proj), as modeling_qwen.py builds it")
    if model_type == "gpt_neox":
        # GPTNeoXLayer (transformers): input and post-attention LayerNorms (with bias), fused QKV and dense with
        # biases (attention_bias, default true), plain GELU MLP h -> intermediate -> h with biases, parallel
        # residual (use_parallel_residual: same parameters), untied embed_out without bias.
        bias = c.get_bool("attention_bias", True)
        fields.update(intermediate_size=inter or 4 * hidden, mlp="plain", norm="layernorm", norms_per_layer=2,
                      qkv_bias=bias, o_bias=bias, mlp_bias=True)
    if model_type in ("phi", "phi-msft", "gptj"):
        # PhiForCausalLM / the older phi-msft remote code and GPTJForCausalLM: attention and MLP in parallel
        # after ONE LayerNorm per layer, plain GELU MLP (fc1/fc2) with biases, a final LayerNorm, and an
        # lm_head WITH a bias (vocab_size extra parameters, counted in other). Phi's q/k/v/dense carry biases;
        # GPT-J's q/k/v/out_proj do not. n_inner null means 4 x hidden.
        bias = model_type != "gptj"
        fields.update(intermediate_size=inter or 4 * hidden, mlp="plain", norm="layernorm", norms_per_layer=1,
                      qkv_bias=bias, o_bias=bias, mlp_bias=True)
        if not tie:
            other += vocab
            notes.append("lm_head has a bias (vocab_size parameters, counted)")
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
    if model_type in ("qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"):
        vision = top.sub("vision_config")
        if vision is None:
            notes.append("vision_config absent: the vision tower is not counted")
        else:
            vparams = _qwen_vl_vision_params(model_type, vision, hidden)
            other += vparams
            vision_tower += vparams
            notes.append(f"includes the vision tower + patch merger(s) ({vparams / 1e6:.0f}M params)")
    if model_type == "mistral3":
        vision = top.sub("vision_config")
        if vision is None:
            notes.append("vision_config absent: the Pixtral vision tower is not counted")
        else:
            vparams = _pixtral_vision_params(top, vision, hidden)
            other += vparams
            vision_tower += vparams
            notes.append(f"includes the Pixtral vision tower + projector ({vparams / 1e6:.0f}M params)")
    if model_type == "gemma3":
        vision = top.sub("vision_config")
        if vision is None:
            vision = _Cfg(dict(_GEMMA3_VISION_DEFAULTS), f"{source} [vision_config defaults]")
            notes.append("vision_config absent; assuming the SigLIP tower all Gemma 3 multimodal sizes share")
        vparams = _siglip_vision_params(vision, hidden)
        other += vparams
        vision_tower += vparams
        notes.append(f"includes the SigLIP vision tower + projector ({vparams / 1e6:.0f}M params)")

    if "intermediate_size" not in fields:  # generic llama-like fallback
        fields["intermediate_size"] = inter if inter is not None else 4 * hidden
        if act not in _GATED_ACTS or inter is None:
            fields["mlp"] = "plain"
        if model_type not in ("falcon", "gpt2", "bert", "t5", "chatglm", "glm"):
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
    block = quant.d.get("weight_block_size") if quant is not None else None
    weight_block = None
    if isinstance(block, list) and block and all(isinstance(x, int) and not isinstance(x, bool) and 0 < x <= 65536
                                                 for x in block):
        weight_block = max(block)  # [128, 128]: scales per 128 x 128 block of each weight

    fields = {k: v for k, v in fields.items() if v is not None}
    try:
        return ModelArch(
            id=model_id, hf_id=hf_id, name=hf_id or model_id, architecture=architecture,
            model_type=model_type or "custom", other_params=other, vision_params=vision_tower, source=source,
            notes=notes,
            quant_method=quant_method, weight_block_size=weight_block,
            params_stated=_official_exact(cfg.get("_official_params")),
            **fields,
        )
    except ValueError as exc:  # pydantic ValidationError subclasses ValueError
        raise MlrigError(f"{source}: inconsistent config ({validation_message(exc)})") from None


def read_json_file(path: Path, what: str = "config") -> Any:
    """Read a small JSON file (a regular file only, size and structure capped); errors name the file."""
    from mlrig.userfiles import load_json

    return load_json(path, what, max_bytes=_MAX_CONFIG_BYTES, max_items=_MAX_CONFIG_ITEMS)


def arch_from_config_file(path: Path, *, model_id: str | None = None, hf_id: str | None = None) -> ModelArch:
    cfg = read_json_file(path)
    if not isinstance(cfg, dict):
        raise MlrigError(f"config {str(path)!r} must hold a JSON object, got {type(cfg).__name__}")
    if hf_id is None:
        name = cfg.get("_name_or_path") or cfg.get("_hf_repo")
        hf_id = name if isinstance(name, str) and re.fullmatch(r"[\w.-]+/[\w.-]+", name) else None
    mid = model_id or (path.parent.name if path.name == "config.json" else path.stem)
    return arch_from_hf_config(cfg, model_id=mid, hf_id=hf_id, source=str(path))
