"""universal-llm-trainer's loss on bf16 logits (memory.BF16_LOSS_ENGINES): the model is called without labels and
nn.CrossEntropyLoss runs on the bf16 logits, 6 B per logit at the head of backward instead of the fp32 loss's 12."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.planner import evaluate

# Llama-3.1-8B: vocabulary 128,256; two sequences of 8,192 tokens: 2,101,346,304 logits.
LOGITS = 2 * 8192 * 128256


def _activations_gib(engine: str, method: str = "lora") -> float:
    plan: dict[str, Any] = {
        "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
        "workload": {"task": "finetune", "precision": "bf16", "batch_size": 2, "engine": engine},
        "training": {"method": method, "seq_len": 8192, "optimizer": "adamw", "activation_checkpointing": "full",
                     "lora_rank": 8, "lora_targets": ["attention", "mlp"]},
        "hardware": {"gpu": "H100 SXM", "count": 1}}
    r = evaluate(plan)
    assert r.memory.activations_gib is not None
    return r.memory.activations_gib


def test_the_bf16_loss_holds_half_the_logit_bytes() -> None:
    """The logits outweigh the recomputed layer here, so the head of backward is the loss: 12 - 6 = 6 B per logit
    less, 6 x 2,101,346,304 B = 11.742 GiB."""
    saved_gib = 6 * LOGITS / 2**30
    assert saved_gib == pytest.approx(11.742, abs=1e-3)
    assert _activations_gib("hf-peft") - _activations_gib("universal-llm-trainer") == pytest.approx(saved_gib, abs=0.01)


def test_qlora_keeps_the_fp32_loss() -> None:
    """Under QLoRA the trainer runs PEFT's prepare_model_for_kbit_training, whose fp32 lm_head returns fp32
    logits: the same loss as the HF Trainer's."""
    assert _activations_gib("universal-llm-trainer", "qlora") == pytest.approx(_activations_gib("hf-peft", "qlora"))
