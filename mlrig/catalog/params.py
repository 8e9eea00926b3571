"""Parameter counts from an architecture.

Shapes follow the Hugging Face `transformers` modelling code for each family (LlamaAttention,
LlamaMLP, MixtralSparseMoeBlock, DeepseekV3Attention/MoE, GptOssMLP, ...). The result is checked
against exact published counts in tests/test_params.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlrig.catalog.arch import ModelArch


@dataclass(frozen=True)
class ParamBreakdown:
    """Parameter counts by component (element counts, not bytes)."""

    embedding: int  # token (+ learned position / token-type) embeddings
    lm_head: int  # untied output projection; 0 when tied
    attention: int  # all layers: q/k/v/o projections (+ biases, MLA down/up projections, qk-norm)
    mlp_dense: int  # all dense (non-MoE) MLP layers
    experts_routed: int  # all routed experts over all MoE layers
    experts_routed_active: int  # routed experts a token actually uses (experts_per_token of them)
    experts_shared: int  # shared experts + routers (always active)
    norms: int  # layer norms (+ biases), final norm
    other: int  # anything else derived from the config (BERT pooler, T5 relative bias, vision tower)
    vision: int = 0  # the vision tower + projector inside `other`: run on images only, never per text token

    @property
    def total(self) -> int:
        return (self.embedding + self.lm_head + self.attention + self.mlp_dense + self.experts_routed
                + self.experts_shared + self.norms + self.other)

    @property
    def active(self) -> int:
        """Parameters touched per token: all but the routed experts that are not selected."""
        return self.total - self.experts_routed + self.experts_routed_active

    @property
    def transformer_blocks(self) -> int:
        """Parameters in the repeated blocks (what tensor/pipeline parallelism splits)."""
        return self.attention + self.mlp_dense + self.experts_routed + self.experts_shared + self.norms


def _mlp_params(hidden: int, intermediate: int, gated: bool, bias: bool) -> int:
    """Gated (SwiGLU/GeGLU): gate, up, down = 3 h i; plain: up, down = 2 h i (Shazeer 2020)."""
    mats = 3 if gated else 2
    n = mats * hidden * intermediate
    if bias:
        n += (2 if gated else 1) * intermediate + hidden
    return n


def _attention_params(m: ModelArch) -> int:
    """One attention block: q, k, v, o projections (+ biases, qk-norm), or MLA's factorised ones."""
    h = m.hidden_size
    if m.is_mla:
        # DeepSeek-V2/V3 MLA (DeepseekV3Attention): q via optional low-rank, kv via latent.
        assert m.kv_lora_rank is not None
        rope = m.qk_rope_head_dim or 0
        nope = m.qk_nope_head_dim or m.dim_head
        v_dim = m.v_head_dim or m.dim_head
        q_head = nope + rope
        if m.q_lora_rank:
            q = h * m.q_lora_rank + m.q_lora_rank + m.q_lora_rank * m.num_heads * q_head
        else:
            q = h * m.num_heads * q_head
        kv_down = h * (m.kv_lora_rank + rope) + m.kv_lora_rank  # + latent RMSNorm
        kv_up = m.kv_lora_rank * m.num_heads * (nope + v_dim)
        o = m.num_heads * v_dim * h
        return q + kv_down + kv_up + o
    q_out = m.num_heads * m.dim_head
    kv_out = m.kv_heads * m.dim_head
    n = h * q_out + 2 * h * kv_out + q_out * h
    if m.qkv_bias:
        n += q_out + 2 * kv_out
    if m.o_bias:
        n += h
    if m.qk_norm:
        n += 2 * m.dim_head
    if m.attention_sinks:  # gpt-oss GptOssAttention.sinks: one logit per query head
        n += m.num_heads
    return n


def param_breakdown(m: ModelArch) -> ParamBreakdown:
    """Parameter counts per component for decoder, encoder and encoder-decoder transformers."""

    h = m.hidden_size
    norm_size = 2 * h if m.norm == "layernorm" else h
    layers = m.total_layers
    embedding = m.vocab_size * h + m.learned_position_embeddings * h
    lm_head = 0 if m.tie_word_embeddings or m.kind == "encoder" else m.vocab_size * h

    attention = _attention_params(m) * layers
    if m.kind == "encoder-decoder":  # decoder layers also hold a cross-attention block
        attention += _attention_params(m) * m.num_layers

    gated = m.mlp == "gated"
    dense_layers = layers - m.num_moe_layers
    mlp_dense = _mlp_params(h, m.intermediate_size, gated, m.mlp_bias) * dense_layers

    experts_routed = experts_active = experts_shared = 0
    if m.is_moe:
        inter = m.moe_intermediate_size or m.intermediate_size
        one_expert = _mlp_params(h, inter, gated, m.expert_bias)
        experts_routed = one_expert * m.num_experts * m.num_moe_layers
        experts_active = one_expert * m.experts_per_token * m.num_moe_layers
        router = h * m.num_experts + (m.num_experts if m.router_bias else 0)
        shared = 0
        if m.num_shared_experts:
            shared_inter = m.shared_expert_intermediate_size or inter * m.num_shared_experts
            shared = _mlp_params(h, shared_inter, gated, m.expert_bias)
        experts_shared = (router + shared) * m.num_moe_layers

    if m.kind == "encoder-decoder":
        # T5Block: encoder layers hold 2 norms, decoder layers a third (cross-attention), and
        # encoder and decoder stacks each end with a final norm (transformers T5Stack).
        norm_count = m.norms_per_layer * m.num_encoder_layers + (m.norms_per_layer + 1) * m.num_layers + 2
    else:
        norm_count = m.norms_per_layer * layers + 1
    norms = norm_size * norm_count

    return ParamBreakdown(
        embedding=embedding,
        lm_head=lm_head,
        attention=attention,
        mlp_dense=mlp_dense,
        experts_routed=experts_routed,
        experts_routed_active=experts_active,
        experts_shared=experts_shared,
        norms=norms,
        other=m.other_params,
        vision=m.vision_params,
    )
