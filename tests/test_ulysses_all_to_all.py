"""DeepSpeed-Ulysses sequence parallelism in training step time (training_speed.ulysses_all_to_all_s): four
all-to-alls per attention layer (q, k, v before the local attention, the output after it; DeepSpeed
`DistributedAttention.forward`, XTuner `sequence_parallel_wrapper`), their gradients' in backward, the forward's
again under full checkpointing (Jacobs et al. 2023, arXiv 2309.14509, sec. 3.2: M / P per GPU per all-to-all)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import training_speed as ts
from mlrig.planner import resolve_plan


def _plan(**over: Any) -> dict[str, Any]:
    training: dict[str, Any] = {"method": "full", "seq_len": 131072, "global_batch_tokens": 131072 * 8,
                                "zero_stage": 2, "activation_checkpointing": "full", "context_parallel": 8}
    training.update(over.pop("training", {}))
    workload = {"task": "finetune", "precision": "fp16", "batch_size": 1, "engine": "xtuner",
                **over.pop("workload", {})}
    model = over.pop("model", "meta-llama/Llama-2-7b-hf")
    return {"model": model, "workload": workload, "training": training,
            "hardware": {"gpu": "a100-sxm-80gb", "count": 8}}


# Llama-2-7B: 32 layers, 32 query and 32 KV heads of 128. q + k + v + output per token: (32 + 32 + 32 + 32) x 128
# values x 2 B (fp16) = 32,768 B. 131,072 tokens over P = 8: 16,384 a GPU, of which 7/8 leave it per all-to-all.
# A100 SXM NVLink: 300 GB/s a direction, 5 us.
SET_7B_S = 7 / 8 * 16384 * 32768 / 300e9 + 4 * 5e-6  # 1.5659 ms + 20 us = 1.5859 ms


def test_hand_checked_llama2_7b() -> None:
    """8 micro-batches (1,048,576 tokens a step over DP 1) x 32 layers x 3 sets (forward, backward, recomputed
    forward) x 1.5859 ms = 1.218 s."""
    r, _ = resolve_plan(_plan())
    assert ts.context_parallel_link(r) == (300.0, 5.0)
    assert ts.ulysses_all_to_all_s(r, 131072, 8) == pytest.approx(8 * 32 * 3 * SET_7B_S)
    assert ts.ulysses_all_to_all_s(r, 131072, 8) == pytest.approx(1.2180, abs=1e-4)
    # without recomputation: forward and backward only
    rn, _ = resolve_plan(_plan(training={"activation_checkpointing": "none"}))
    assert ts.ulysses_all_to_all_s(rn, 131072, 8) == pytest.approx(8 * 32 * 2 * SET_7B_S)


def test_gqa_moves_fewer_kv_bytes() -> None:
    """Llama-3.1-8B: 32 query heads, 8 KV heads: (32 + 8 + 8 + 32) x 128 x 2 B = 20,480 B a token."""
    r, _ = resolve_plan(_plan(model="meta-llama/Llama-3.1-8B"))
    one_set = 7 / 8 * 16384 * 20480 / 300e9 + 4 * 5e-6
    assert ts.ulysses_all_to_all_s(r, 131072, 8) == pytest.approx(8 * 32 * 3 * one_set)


def test_only_ulysses_engines_and_p_above_one() -> None:
    r1, _ = resolve_plan(_plan(training={"context_parallel": 1}))
    assert ts.ulysses_all_to_all_s(r1, 131072, 8) == 0.0
    # Megatron-Core runs Transformer Engine's K/V ring instead (context_parallel_ring_s), not Ulysses
    rm, _ = resolve_plan(_plan(workload={"engine": "megatron"}))
    assert ts.ulysses_all_to_all_s(rm, 131072, 8) == 0.0
    assert ts.ulysses_sp_engine("deepspeed") and ts.ulysses_sp_engine("XTuner")
    assert not ts.ulysses_sp_engine("nemo")


def test_step_time_carries_it() -> None:
    """The all-to-alls are part of the step (in cp_s, inside busy): the step with them is longer by exactly their
    time (no pipeline bubble, nothing else depends on them here)."""
    r, _ = resolve_plan(_plan())
    f = ts.training_speed(r, 1, 131072)
    a2a = ts.ulysses_all_to_all_s(r, 131072, f.micro)
    assert f.cp_s == pytest.approx(a2a)
    assert f.busy_s > a2a > 0
