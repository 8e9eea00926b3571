"""Context parallelism's K/V ring in training step time (training_speed.context_parallel_ring_s): Transformer
Engine's `AttnFuncWithCPAndKVP2P` (TE v2.4, context_parallel.py) sends each rank's K/V chunk cp - 1 times around
the ring in forward, K/V and dK/dV in backward, each send overlapped with one ring step's attention."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import training_speed as ts
from mlrig.planner import resolve_plan


def _plan(**over: Any) -> dict[str, Any]:
    training: dict[str, Any] = {"seq_len": 4096, "global_batch_tokens": 4096 * 4, "activation_checkpointing": "none",
                                "context_parallel": 2}
    hardware: dict[str, Any] = {"gpu": "h100-sxm-80gb", "count": 8, "nodes": 2, "tensor_parallel": 8}
    training.update(over.pop("training", {}))
    hardware.update(over.pop("hardware", {}))
    workload = {"task": "pretrain", "batch_size": 1, "engine": "megatron", **over.pop("workload", {})}
    return {"model": "llama-3.1-8b", "workload": workload, "training": training, "hardware": hardware}


# Llama-3.1-8B: 8 KV heads of 128; TP 8 leaves one per rank. 4,096 tokens over CP 2: 2,048 a rank;
# K and V in bf16: 2,048 x 1 x 128 x 2 x 2 B = 1,048,576 B a send.
CHUNK_B = 2048 * 1 * 128 * 2 * 2
# TP 8 x CP 2 = 16 GPUs > 8 a node: the ring crosses nodes over the per-GPU NDR adapter (50 GB/s, 5 us)
SEND_S = CHUNK_B / 50e9 + 5e-6  # 25.97 us


def test_bytes_and_link_hand_checked() -> None:
    r, _ = resolve_plan(_plan())
    assert ts.context_parallel_chunk_bytes(r, 4096) == CHUNK_B
    assert ts.context_parallel_link(r) == (50.0, 5.0)
    # TP 4 x CP 2 fits one node of 8: NVLink (H100: 450 GB/s a direction)
    r4, _ = resolve_plan(_plan(hardware={"tensor_parallel": 4}))
    assert ts.context_parallel_link(r4)[0] == 450.0
    assert ts.context_parallel_chunk_bytes(r4, 4096) == 2048 * 2 * 128 * 2 * 2
    # GB200 trays of 4: a group of 8 stays inside the NVL72 NVLink domain
    rg, _ = resolve_plan(_plan(hardware={"gpu": "GB200", "count": 4, "nodes": 4, "tensor_parallel": 4}))
    assert ts.context_parallel_link(rg)[0] == 900.0


def test_exposed_ring_when_attention_hides_nothing() -> None:
    """No attention to hide behind: forward cp - 1 = 1 send, backward 2 (K/V, then dK/dV) = 3 sends a layer;
    32 layers, 2 micro-batches (16,384 tokens a step over DP 1): 2 x 32 x 3 x 25.97 us = 4.986 ms. CP 4: 1,024
    tokens a rank (524,288 B, 15.49 us a send); forward 3 sends, backward 2 single + 2 double (15.49 + 10.49 us
    each: 25.97 us): 2 x 32 x (5 x 15.486 + 2 x 25.972) us."""
    r, _ = resolve_plan(_plan())
    assert ts.context_parallel_ring_s(r, 4096, 2, 0.0, False) == pytest.approx(2 * 32 * 3 * SEND_S)
    # a recomputed attention runs the forward ring again: 4 sends a layer
    assert ts.context_parallel_ring_s(r, 4096, 2, 0.0, True) == pytest.approx(2 * 32 * 4 * SEND_S)
    r4, _ = resolve_plan(_plan(training={"context_parallel": 4}, hardware={"nodes": 4}))
    one = CHUNK_B / 2 / 50e9 + 5e-6
    two = CHUNK_B / 50e9 + 5e-6
    assert ts.context_parallel_ring_s(r4, 4096, 2, 0.0, False) == pytest.approx(2 * 32 * (5 * one + 2 * two))


def test_attention_hides_the_ring() -> None:
    """A ring step's attention: the whole model's forward attention seconds per token x 4,096 tokens / (TP 8 x CP 2
    x 32 layers) / CP 2. At 1e-6 s a token that is 4 us forward (8 us backward): 21.97 us exposed forward,
    17.97 us twice backward; at 1e-4 s a token (400 us a step) nothing is exposed."""
    r, _ = resolve_plan(_plan())
    step = 1e-6 * 4096 / (8 * 2 * 32) / 2
    want = 2 * 32 * ((SEND_S - step) + 2 * (SEND_S - 2 * step))
    assert ts.context_parallel_ring_s(r, 4096, 2, 1e-6, False) == pytest.approx(want)
    assert ts.context_parallel_ring_s(r, 4096, 2, 1e-4, False) == 0.0


def test_priced_in_the_step_and_shown_in_the_plan() -> None:
    r, _ = resolve_plan(_plan())
    f = ts.training_speed(r, 1, 4096)
    # Llama-8B's 4k attention per ring step (~10 us on an H100 rank) is shorter than a 26 us send over the network
    assert 0 < f.cp_s < 2 * 32 * 3 * SEND_S
    assert f.busy_s > f.cp_s
    assert "context-parallel K/V ring" in ts.estimate_training(r, f).explanation
    # over NVLink (TP 4 x CP 2 in one node) the attention hides the 9.3 us send
    r4, _ = resolve_plan(_plan(hardware={"tensor_parallel": 4}))
    assert ts.training_speed(r4, 1, 4096).cp_s == 0.0
    # DeepSpeed's context parallelism is Ulysses' all-to-all, not TE's ring (tests/test_ulysses_all_to_all.py)
    rd, _ = resolve_plan(_plan(workload={"engine": "deepspeed"}))
    fd = ts.training_speed(rd, 1, 4096)
    assert ts.context_parallel_ring_s(rd, 4096, fd.micro, 0.0, False) == 0.0
    assert fd.cp_s == pytest.approx(ts.ulysses_all_to_all_s(rd, 4096, fd.micro)) and fd.cp_s > 0
    assert "Ulysses" in ts.estimate_training(rd, fd).explanation
    # no context parallelism: no ring
    r1, _ = resolve_plan(_plan(training={"context_parallel": 1}, hardware={"nodes": 1}))
    assert ts.training_speed(r1, 1, 4096).cp_s == 0.0


def test_limits_of_a_context_parallel_plan() -> None:
    """`fewest_gpus` tries 1, 2, 4... GPUs with TP 1: CP 2 kept on one GPU raised a ValidationError traceback from
    every `mlrig plan --cp 2`; it now narrows CP to what the count allows."""
    from mlrig.planner import limits

    lims = limits(_plan())
    assert lims["min_gpus"] is not None
