"""Pipeline parallelism from the 1F1B schedules' own counts (Megatron-LM megatron/core/pipeline_parallel/schedules.py):
micro-batches in flight per stage, the loss only on the last stage, and the per-micro-batch launch cost a stage
pays along the critical path. Values checked by hand in each docstring."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators.memory import pipeline_in_flight_microbatches
from mlrig.estimators.training_speed import pipeline_microbatch_overhead_s
from mlrig.planner import evaluate, resolve_plan
from mlrig.units import GiB


def test_in_flight_micro_batches_follow_the_warm_up_counts() -> None:
    """Plain 1F1B: rank r warms up p - r - 1 forwards and holds one more: 4 on the first of 4 stages, 1 on the
    last, never more than m. Interleaved, p = 8, v = 4: rank 0 warms up 2 x 7 + 3 x 8 = 38 chunk passes and
    holds 39 chunks of 1/4 stage = 9.75 = p + (p - 1)/v; the last rank (0 + 24 + 1) / 4 = 6.25; m = p holds m."""
    assert pipeline_in_flight_microbatches(4, 16) == 4
    assert pipeline_in_flight_microbatches(4, 16, rank=3) == 1
    assert pipeline_in_flight_microbatches(4, 2) == 2
    assert pipeline_in_flight_microbatches(8, 16, 4) == pytest.approx(9.75)
    assert pipeline_in_flight_microbatches(8, 16, 4, rank=7) == pytest.approx(6.25)
    assert pipeline_in_flight_microbatches(8, 8, 4) == 8
    assert pipeline_in_flight_microbatches(1, 16) == 1


def test_per_micro_batch_launch_cost_is_a_stage_share_along_the_critical_path() -> None:
    """10 ms per micro-batch through the whole model: one stage pays it m = 16 times (0.16 s); 4 stages run a
    quarter of the kernels over 16 + 3 slots: 0.01 x 19 / 4 = 0.0475 s; interleaved v = 4 over 8 stages:
    0.01 x (16 + 7/4) / 8 = 0.0221875 s."""
    assert pipeline_microbatch_overhead_s(0.01, 1, 16) == pytest.approx(0.16)
    assert pipeline_microbatch_overhead_s(0.01, 4, 16) == pytest.approx(0.0475)
    assert pipeline_microbatch_overhead_s(0.01, 8, 16, 4) == pytest.approx(0.0221875)


def _pretrain(pp: int, **training: Any) -> Any:
    return evaluate({"model": "meta-llama/Meta-Llama-3-8B",
                     "workload": {"task": "pretrain", "precision": "bf16", "batch_size": 1, "engine": "megatron"},
                     "training": {"method": "full", "seq_len": 8192, "global_batch_tokens": 16 * 8192 * 2,
                                  "optimizer": "adamw", "zero_stage": 1, "activation_checkpointing": "none",
                                  **training},
                     "hardware": {"gpu": "A100 SXM4 80GB", "count": 8, "tensor_parallel": 1,
                                  "pipeline_parallel": pp}})


def test_first_stage_holds_p_micro_batches_and_no_logits() -> None:
    """Llama-3-8B, s = 8192, b = 1, no recomputation, Megatron (fused SwiGLU): one layer keeps
    (4h + 2(3h + 2 kv) + 2h + 6i) = 139,264 B a token (h 4096, kv 1024, i 14336), 1.141e9 B a layer. PP 4 with
    m = 16 (2 data-parallel ranks): the first stage holds 4 micro-batches x 8 layers = 32 x 1.141e9 = 34.0 GiB,
    and no loss; the last stage's 8 layers + 12 B logits (8192 x 128,256 x 12 = 12.6e9 B) are 21.7e9 B, smaller.
    PP 8: 8 micro-batches x 4 layers, the same 34.0 GiB (it was capped at 4 micro-batches: half)."""
    per_layer_mb = 8192 * 139_264
    for pp in (4, 8):
        act = _pretrain(pp).memory.activations_gib
        assert act == pytest.approx(32 * per_layer_mb / GiB, rel=1e-3)


def test_pipeline_step_pays_a_stage_share_of_the_launch_cost() -> None:
    """The same PP 4 plan: the fixed part of the step is 0.05 s per step + 0.01 x (16 + 3) / 4 = 0.0975 s (was
    0.05 + 0.01 x 16 = 0.21 s)."""
    from mlrig.estimators.training_speed import training_speed

    plan = {"model": "meta-llama/Meta-Llama-3-8B",
            "workload": {"task": "pretrain", "precision": "bf16", "batch_size": 1, "engine": "megatron"},
            "training": {"method": "full", "seq_len": 8192, "global_batch_tokens": 16 * 8192 * 2},
            "hardware": {"gpu": "A100 SXM4 80GB", "count": 8, "tensor_parallel": 1, "pipeline_parallel": 4}}
    r, _ = resolve_plan(plan)
    s = training_speed(r, 1, 8192)
    assert float(s.micro) == 16
    assert float(s.step_fixed_s) == pytest.approx(0.05 + 0.0475)
