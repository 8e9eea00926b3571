"""Attention FLOPs scale with the query width num_heads x head_dim, not d_model (issue 10, section 2).

Hand-checked from the models' config.json (mlrig/data/models): Qwen3-0.6B has hidden_size 1024 but
16 heads x head_dim 128 = 2048; Llama-3.1-8B has 32 x 128 = 4096 = hidden_size; DeepSeek-V3 (MLA) has
128 heads, qk_nope 128 + qk_rope 64 = 192 per query/key head and v_head_dim 128. FlashAttention (Dao et
al. 2022) counts 4 x seq^2 x heads x head_dim FLOPs per layer forward (2 for QK^T, 2 for AV)."""

from __future__ import annotations

import pytest

from mlrig.catalog.models import resolve_model
from mlrig.estimators.performance import attention_flops
from mlrig.estimators.training_speed import attention_width, train_flops_per_token
from mlrig.planner import evaluate


def test_attention_widths_from_the_configs() -> None:
    qwen = resolve_model("Qwen/Qwen3-0.6B")
    assert (qwen.hidden_size, qwen.num_heads, qwen.dim_head) == (1024, 16, 128)
    assert qwen.attention_widths == (2048, 2048)
    llama = resolve_model("meta-llama/Meta-Llama-3.1-8B")
    assert llama.attention_widths == (4096, 4096) and attention_width(llama) == llama.hidden_size
    ds = resolve_model("deepseek-ai/DeepSeek-V3")
    assert ds.is_mla and ds.attention_widths == (128 * 192, 128 * 128)
    assert attention_width(ds) == pytest.approx(128 * (192 + 128) / 2)


def test_qwen3_0_6b_training_attention_is_twice_the_d_model_formula() -> None:
    """Per token at seq 2048: 12 x 28 layers x 2048 x 2048 = 1.409 GFLOP of attention (fwd + bwd),
    twice the 12 L d s = 0.705 GFLOP that d_model = 1024 gives; Llama-3.1-8B's is unchanged."""
    qwen = resolve_model("Qwen/Qwen3-0.6B")
    n = 6e8
    model, _ = train_flops_per_token(n, qwen.num_layers, attention_width(qwen), 2048)
    assert model - 6 * n == pytest.approx(1.409286e9, rel=1e-6)
    assert model - 6 * n == pytest.approx(2 * 12 * 28 * 1024 * 2048)
    llama = resolve_model("meta-llama/Meta-Llama-3.1-8B")
    model, _ = train_flops_per_token(n, llama.num_layers, attention_width(llama), 2048)
    assert model - 6 * n == pytest.approx(12 * 32 * 4096 * 2048)


def test_training_mfu_counts_the_query_width_on_the_product_path() -> None:
    """Through mlrig.planner.evaluate: MFU = tokens/s x model FLOPs per token / (GPUs x bf16 peak), so the
    model FLOPs it implies are 6N + 12 L (num_heads x head_dim) s (2048 for Qwen3-0.6B, not 1024)."""
    plan = {"model": {"name": "Qwen/Qwen3-0.6B"},
            "workload": {"task": "finetune", "precision": "bf16", "batch_size": 4, "engine": "hf-trainer"},
            "training": {"method": "full", "seq_len": 2048, "activation_checkpointing": "none"},
            "hardware": {"gpu": "H100 SXM", "count": 1}}
    perf = evaluate(plan).performance
    assert perf is not None and perf.train_tokens_per_s and perf.mfu
    qwen = resolve_model("Qwen/Qwen3-0.6B")
    n = float(qwen.params().active)
    peak_tflops = 989.4  # H100 SXM dense bf16 (NVIDIA H100 datasheet), as mlrig's catalog has it
    implied = perf.mfu * peak_tflops * 1e12 / perf.train_tokens_per_s
    assert implied == pytest.approx(6 * n + 12 * 28 * 2048 * 2048, rel=0.01)


def test_inference_attention_uses_the_value_width_for_mla() -> None:
    """A 2048-token causal prefill: 2048^2 / 2 pairs per layer, each 2 x (QK width + AV width) FLOPs; for
    Qwen3-0.6B 4 x 2048 per pair (twice what 4 x d_model would give); for DeepSeek-V3 2 x (24576 + 16384)."""
    qwen = resolve_model("Qwen/Qwen3-0.6B")
    pairs = 2048 * 2048 / 2
    assert attention_flops(qwen, 2048, 2048) == pytest.approx(4 * 2048 * pairs * 28)
    ds = resolve_model("deepseek-ai/DeepSeek-V3")
    assert attention_flops(ds, 2048, 2048) == pytest.approx(2 * (24576 + 16384) * pairs * ds.num_layers)
