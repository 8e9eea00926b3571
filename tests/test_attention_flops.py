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


def _mistral_train(seq: int, flash: bool = True) -> tuple[float, float]:
    plan = {"model": {"name": "mistralai/Mistral-7B-v0.1"},
            "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1, "engine": "hf-trainer",
                         "flash_attention": flash},
            "training": {"method": "full", "seq_len": seq, "activation_checkpointing": "full"},
            "hardware": {"gpu": "H100 SXM", "count": 8}}
    perf = evaluate(plan).performance
    assert perf is not None and perf.train_tokens_per_s and perf.mfu
    return perf.train_tokens_per_s, perf.mfu * 989.4e12 / perf.train_tokens_per_s * 8


def test_sliding_window_layers_train_only_their_band() -> None:
    """Mistral-7B-v0.1: all 32 layers attend to a 4,096-token window (config.json sliding_window 4096). At
    seq 16,384 FlashAttention-2 with window_size computes the causal band s W - W^2 / 2 per layer; in the
    non-causal convention (x 2) that is 2 W - W^2 / s = 8,192 - 1,024 = 7,168 keys per query, not 16,384.
    Implied model FLOPs per token (from MFU, tokens/s and the bf16 peak): 6N + 12 x 32 x 4096 x 7,168.
    With eager attention (flash_attention false: the window is a mask on the full scores) every key is
    computed: 6N + 12 x 32 x 4096 x 16,384, and the run is slower."""
    mistral = resolve_model("mistralai/Mistral-7B-v0.1")
    assert (mistral.sliding_window, mistral.num_sliding_layers, mistral.num_layers) == (4096, 32, 32)
    n = float(mistral.params().active)
    tok_s, implied = _mistral_train(16384)
    assert implied == pytest.approx(6 * n + 12 * 32 * 4096 * 7168, rel=0.01)
    tok_s_eager, implied_eager = _mistral_train(16384, flash=False)
    assert implied_eager == pytest.approx(6 * n + 12 * 32 * 4096 * 16384, rel=0.01)
    assert tok_s > 1.2 * tok_s_eager
    # within the window nothing changes
    _, implied_4k = _mistral_train(4096)
    assert implied_4k == pytest.approx(6 * n + 12 * 32 * 4096 * 4096, rel=0.01)


def test_attention_layer_keys_by_layer_kind() -> None:
    """Gemma-2-9B alternates 21 windowed (4,096) and 21 global layers: at seq 8,192 the windowed ones count
    8,192 - 4,096^2 / 8,192 = 6,144 keys per query; gpt-oss-20b's 12 windowed layers (128) at 4,096 count
    4,096 - 3,968^2 / 4,096 = 252; a model without windows counts L s."""
    from mlrig.estimators.training_speed import attention_layer_keys

    gemma = resolve_model("google/gemma-2-9b")
    assert (gemma.num_layers, gemma.num_sliding_layers, gemma.sliding_window) == (42, 21, 4096)
    assert attention_layer_keys(gemma, 8192) == pytest.approx(21 * 8192 + 21 * 6144)
    assert attention_layer_keys(gemma, 8192, windowed=False) == 42 * 8192
    oss = resolve_model("openai/gpt-oss-20b")
    assert attention_layer_keys(oss, 4096) == pytest.approx(12 * 4096 + 12 * 252)
    qwen = resolve_model("Qwen/Qwen3-0.6B")
    assert attention_layer_keys(qwen, 2048) == 28 * 2048


def test_causal_flash_attention_executes_the_pairs_inference_prefill_counts() -> None:
    """A causal flash kernel skips the masked half (FlashAttention-2, Dao 2023, sec. 3.1.1): training's
    forward attention over one 8,192-token Llama-3.1-8B sequence executes 4 x 4096 x 32 layers x 8192^2 / 2
    FLOPs, exactly what a causal prefill of the same sequence counts (`performance.attention_flops`); eager
    attention computes the whole square, the 12 L w s convention MFU keeps."""
    from mlrig.estimators.training_speed import attention_executed_keys, attention_layer_keys

    llama = resolve_model("meta-llama/Meta-Llama-3.1-8B")
    s = 8192
    executed_fwd = 4.0 * attention_width(llama) * attention_executed_keys(llama, s) * s
    assert executed_fwd == pytest.approx(4 * 4096 * 32 * s * s / 2)
    assert executed_fwd == pytest.approx(attention_flops(llama, s, s))
    assert attention_executed_keys(llama, s, flash_attention=False) == attention_layer_keys(llama, s) == 32 * s
    gemma = resolve_model("google/gemma-2-9b")  # the windowed band is halved too: 21 x 8192 + 21 x 6144, / 2
    assert attention_executed_keys(gemma, 8192) == pytest.approx((21 * 8192 + 21 * 6144) / 2)


def _train_step_per_token_s(seq: int, flash: bool) -> float:
    plan = {"model": {"name": "meta-llama/Meta-Llama-3.1-8B"},
            "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1, "engine": "torchtune",
                         "flash_attention": flash},
            "training": {"method": "full", "seq_len": seq, "activation_checkpointing": "none"},
            "hardware": {"gpu": "A100 SXM4 80GB", "count": 1}}
    perf = evaluate(plan).performance
    assert perf is not None and perf.train_tokens_per_s
    return 1.0 / perf.train_tokens_per_s


def test_training_time_prices_the_causal_half_and_eager_the_square() -> None:
    """On the product path, eager attention (`flash_attention` false) costs one causal flash attention's
    time more per token, 12 x 4096 x 32 x s / 2 FLOPs at the attention's rate (GEMM efficiency x d / (d + D0)
    x the A100's relative attention efficiency, of 312 TFLOPS), plus the element-wise passes over the score
    tensor (`training_speed.unfused_score_passes`: 20 + 20 B per score element, 32 heads x 32 layers x s
    elements per token) at the training bandwidth; its GEMMs' own score bytes (12 B per element) stream
    faster than their 128-deep arithmetic runs, so they add nothing here."""
    from mlrig.catalog.gpus import resolve_gpu as get_gpu
    from mlrig.estimators import efficiency as eff
    from mlrig.estimators.training_speed import attention_efficiency, train_gemm_eff

    a100 = get_gpu("A100 SXM4 80GB")
    rate = (train_gemm_eff(a100, "hbm") * 4096 / (4096 + eff.TRAIN_GEMM_WIDTH_D0)
            * attention_efficiency(a100, "torchtune") * 312e12)
    bw = a100.memory_bandwidth_gb_s * 1e9 * eff.TRAIN_BW_EFF
    for s in (8192, 32768):
        extra = _train_step_per_token_s(s, False) - _train_step_per_token_s(s, True)
        elements = 32 * 32 * s
        assert 12 * elements / bw < 12 * 4096 * 32 * s / rate  # the score GEMMs stay arithmetic-bound
        assert extra == pytest.approx(12 * 4096 * 32 * s / 2 / rate + 40 * elements / bw, rel=1e-6)
