"""Megatron-Core's fused SwiGLU saves only the fc1 output for backward (megatron/core/fusions/fused_bias_swiglu.py,
`SwiGLUFunction.forward`: ctx.save_for_backward(input)): a gated MLP keeps 2h + 6i bytes per token, not 2h + 8i."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import fused_glu, layer_activation_bytes
from mlrig.planner import evaluate
from mlrig.units import GiB


def test_fused_gated_mlp_keeps_one_intermediate_less_per_token() -> None:
    """Llama-3.1-8B (h 4,096, i 14,336, 8 KV heads of 128), 4,096 tokens, flash attention, 16-bit, TP1:
    unfused 4h + 2(3h + 2 kv) + 2h + 8i = 16,384 + 28,672 + 122,880 = 167,936 B/token;
    fused: the MLP's 2h + 6i = 94,208, so 139,264 B/token."""
    arch = resolve_model("llama-3.1-8b")
    assert layer_activation_bytes(arch, 4096, 1, True) == pytest.approx(4096 * 167_936)
    assert layer_activation_bytes(arch, 4096, 1, True, fused_gated_mlp=True) == pytest.approx(4096 * 139_264)
    # TP2 splits the MLP part: the saving is 2i / tp bytes per token
    unfused_tp2 = layer_activation_bytes(arch, 4096, 1, True, tp=2)
    fused_tp2 = layer_activation_bytes(arch, 4096, 1, True, tp=2, fused_gated_mlp=True)
    assert unfused_tp2 - fused_tp2 == pytest.approx(4096 * 2 * 14_336 / 2)


def test_which_frameworks_fuse() -> None:
    assert fused_glu("megatron") and fused_glu("nemo") and fused_glu("NeMo 2.0")
    assert not fused_glu("megatron-deepspeed")  # its swiglu is F.silu(x[0]) * x[1], unfused
    assert not fused_glu("torchtune") and not fused_glu(None)


def _mem(engine: str, model: str = "llama-3.1-8b") -> Any:
    r = evaluate({"model": model, "workload": {"task": "pretrain", "batch_size": 1, "engine": engine},
                  "training": {"seq_len": 2048, "activation_checkpointing": "none"},
                  "hardware": {"gpu": "h100-sxm-80gb", "count": 8}})
    assert r.memory is not None
    return r.memory


def test_megatron_plan_saves_two_intermediates_bytes_per_token_per_layer() -> None:
    """Same plan, Megatron-Core vs Megatron-DeepSpeed (identical otherwise in mlrig's memory path), 8 GPUs so
    the peak is at the start of backward (gradient buffers allocated for the run): no recomputation, so every
    layer's saving stays until backward: 32 layers x 2,048 tokens x 2 x 14,336 B."""
    fused, unfused = _mem("megatron"), _mem("megatron-deepspeed")
    saved = 32 * 2048 * 2 * 14_336 / GiB  # 1.75 GiB
    assert unfused.allocated_gib - fused.allocated_gib == pytest.approx(saved, rel=0.01)
    assert any("fused gated activation" in n for n in fused.notes)
    assert not any("fused gated activation" in n for n in unfused.notes)


def test_plain_mlp_is_unchanged() -> None:
    """A GeLU (non-gated) MLP has no gate/up pair to fuse: GPT-2 is the same under both names."""
    assert _mem("megatron", "gpt2").allocated_gib == pytest.approx(_mem("megatron-deepspeed", "gpt2").allocated_gib)


def test_fusion_is_gated_by_release() -> None:
    """The fused SwiGLU arrived in Megatron-Core 0.5.0 (core_v0.5.0, 2024-02-26: 8503f75 + de9428a); core_v0.4.0
    has only the unfused glu. A run naming an older core release or an older container is unfused."""
    assert not fused_glu("megatron", "core 0.4") and not fused_glu("megatron", "megatron-core 0.4.0")
    assert not fused_glu("megatron", "core_v0.4.0") and not fused_glu("nemo", "23.11")
    assert not fused_glu("nemo", "PyTorch NVIDIA Release 23.09") and not fused_glu("megatron", "2023-12")
    assert fused_glu("megatron", "core_v0.5.0") and fused_glu("megatron", "0.12.1")
    assert fused_glu("nemo", "NVIDIA NeMo Framework Release 24.04") and fused_glu("nemo", "24.02")
    assert fused_glu("nemo", "2.0") and fused_glu("megatron", "abc1234")  # no release named: current
    assert not fused_glu("megatron-deepspeed", "core 0.5")


def test_old_release_plan_keeps_the_unfused_intermediates() -> None:
    """The Megatron plan of test_megatron_plan_saves_two_intermediates... naming core 0.4 keeps what the unfused
    Megatron-DeepSpeed plan keeps (32 layers x 2,048 tokens x 2 x 14,336 B more than the fused one)."""
    def mem(engine: str, version: str | None) -> Any:
        w: dict[str, Any] = {"task": "pretrain", "batch_size": 1, "engine": engine}
        if version:
            w["engine_version"] = version
        r = evaluate({"model": "llama-3.1-8b", "workload": w,
                      "training": {"seq_len": 2048, "activation_checkpointing": "none"},
                      "hardware": {"gpu": "h100-sxm-80gb", "count": 8}})
        assert r.memory is not None
        return r.memory
    old, new = mem("megatron", "core 0.4.0"), mem("megatron", "core 0.5.0")
    assert old.allocated_gib - new.allocated_gib == pytest.approx(32 * 2048 * 2 * 14_336 / GiB, rel=0.01)
    assert old.allocated_gib == pytest.approx(mem("megatron-deepspeed", None).allocated_gib)
    assert any("before 0.5" in n for n in old.notes)
