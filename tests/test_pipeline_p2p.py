"""Pipeline stages' point-to-point sends in training step time (training_speed.pipeline_p2p_s): each micro-batch
sends its boundary activations forward and their gradient backward, [s / cp, b, h] (/ tp under sequence
parallelism: Megatron-Core schedules.py `get_tensor_shapes`), not overlapped by the non-interleaved 1F1B
schedule (p2p_communication.py: batch_isend_irecv, then torch.cuda.synchronize)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import training_speed as ts
from mlrig.planner import resolve_plan


def _plan(**over: Any) -> dict[str, Any]:
    training: dict[str, Any] = {"seq_len": 4096, "global_batch_tokens": 4096 * 32, "activation_checkpointing": "none"}
    hardware: dict[str, Any] = {"gpu": "h100-sxm-80gb", "count": 8, "pipeline_parallel": 2}
    training.update(over.pop("training", {}))
    hardware.update(over.pop("hardware", {}))
    workload = {"task": "pretrain", "batch_size": 1, "engine": "megatron", **over.pop("workload", {})}
    return {"model": "llama-3.1-8b", "workload": workload, "training": training, "hardware": hardware}


def test_one_node_non_interleaved_hand_checked() -> None:
    """Llama-3.1-8B (h 4,096), 4,096 tokens a micro-batch, bf16: 33,554,432 B a send over H100 NVLink (450 GB/s,
    5 us). PP 2 on 8 GPUs: DP 4, 32 sequences a step -> m = 8; 2 x 8 sends = 16 x (74.565 + 5) us = 1.273 ms."""
    r, _ = resolve_plan(_plan())
    assert ts.pipeline_p2p_bytes(r, 4096) == 4096 * 4096 * 2
    assert ts.pipeline_p2p_link(r) == (450.0, 5.0)
    f = ts.training_speed(r, 1, 4096)
    assert f.micro == 8
    assert f.p2p_s == pytest.approx(16 * (33_554_432 / 450e9 + 5e-6))
    assert f.busy_s > f.p2p_s > 0  # part of the pipeline's busy time: the bubble's fill and drain carry it


def test_sequence_parallel_and_context_parallel_shrink_the_send() -> None:
    r, _ = resolve_plan(_plan(hardware={"tensor_parallel": 2}, training={"sequence_parallel": True,
                                                                          "context_parallel": 2}))
    assert ts.pipeline_p2p_bytes(r, 4096) == 4096 / 2 * 4096 * 2 / 2
    r, _ = resolve_plan(_plan(hardware={"tensor_parallel": 2}))  # no SP: every TP rank sends it whole
    assert ts.pipeline_p2p_bytes(r, 4096) == 4096 * 4096 * 2


def test_legacy_megatron_scattered_the_send_over_tensor_parallel_ranks() -> None:
    """Megatron-LM before 23.04 (3c92fa9) scattered each send over the TP ranks (--scatter-gather-tensors-in-
    pipeline, default on), as DeepSpeed's pipeline engine does; the current Megatron-Core and NeMo do not."""
    assert ts.pipeline_sends_scattered("megatron", "2021-04") and ts.pipeline_sends_scattered("megatron", "v2.5")
    assert not ts.pipeline_sends_scattered("megatron", "23.04") and not ts.pipeline_sends_scattered("megatron", None)
    # DeepSpeed's PipelineEngine partitions its sends over the model-parallel group (is_pipe_partitioned)
    assert ts.pipeline_sends_scattered("megatron-deepspeed", None)
    assert ts.pipeline_sends_scattered("atorch + DeepSpeed 3D (Megatron-style TP/PP)", None)
    assert not ts.pipeline_sends_scattered("nemo", "2021-04") and not ts.pipeline_sends_scattered("torchtitan", None)
    r, _ = resolve_plan(_plan(hardware={"tensor_parallel": 2}, workload={"engine_version": "2021-04"}))
    assert ts.pipeline_p2p_bytes(r, 4096) == 4096 * 4096 * 2 / 2


def test_across_nodes_the_send_takes_the_network_adapter() -> None:
    """Two nodes: the stage boundary between them crosses the per-GPU adapter (NDR, 50 GB/s) when no network is
    named; a named '4x roce-100g' shares four 12.5 GB/s adapters among 8 GPUs."""
    r, _ = resolve_plan(_plan(hardware={"nodes": 2}))
    assert ts.pipeline_p2p_link(r) == (50.0, 5.0)
    r, _ = resolve_plan(_plan(hardware={"nodes": 2, "interconnect": "4x roce-100g"}))
    bw, _lat = ts.pipeline_p2p_link(r)
    assert bw == pytest.approx(4 * 12.5 / 8)


def test_interleaved_schedule_overlaps_the_sends() -> None:
    """With virtual stages Megatron overlaps the sends with the next chunk (overlap_p2p_comm): only what exceeds
    the computation is exposed; without, all of it."""
    r, _ = resolve_plan(_plan(training={"virtual_pipeline_stages": 2}))
    assert ts.pipeline_p2p_s(r, 4096, 8, 1.0) == 0.0
    send = 4096 * 4096 * 2 / 450e9 + 5e-6
    assert ts.pipeline_p2p_s(r, 4096, 8, 0.001) == pytest.approx(2 * 8 * 2 * send - 0.001)
    r1, _ = resolve_plan(_plan())
    assert ts.pipeline_p2p_s(r1, 4096, 8, 1.0) == pytest.approx(2 * 8 * send)


def test_no_pipeline_no_sends() -> None:
    r, _ = resolve_plan(_plan(hardware={"pipeline_parallel": 1}))
    assert ts.training_speed(r, 1, 4096).p2p_s == 0.0
