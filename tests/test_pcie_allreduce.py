"""Tensor-parallel all-reduce over PCIe without peer-to-peer access: NCCL through host memory, its protocol
chosen by message size (interconnects.pcie_allreduce_time_s, efficiency.PCIE_ALLREDUCE_PROTOCOLS)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.interconnects import allreduce_time_s, pcie_allreduce_time_s, resolve_interconnect
from mlrig.estimators import efficiency as eff
from mlrig.planner import evaluate

PROTOCOLS = ((42e-6, 1.0e-6, 1.3), (72.6e-6, 5.7e-6, 12.0))


def test_protocol_by_message_size_hand_checked() -> None:
    """2 ranks on PCIe 4.0 x16 (31.5 GB/s): the ring's wire time (2 x 1/2 x bytes / 31.5 GB/s), plus
    7,168 B (Qwen2-7B, one sequence): LL 42 us + 2 x 1.0 us + 7,168 / 1.3 GB/s = 49.5 us (Simple would be 84.6);
    716,800 B (100 sequences): Simple 72.6 us + 2 x 5.7 us + 716,800 / 12 GB/s = 143.7 us (LL would be 595)."""
    link = resolve_interconnect("pcie4")
    small = pcie_allreduce_time_s(7168, 2, link, PROTOCOLS)
    assert small * 1e6 == pytest.approx(0.23 + 42 + 2 + 5.51, abs=0.05)
    big = pcie_allreduce_time_s(716_800, 2, link, PROTOCOLS)
    assert big * 1e6 == pytest.approx(22.76 + 72.6 + 11.4 + 59.73, abs=0.05)
    assert pcie_allreduce_time_s(7168, 1, link, PROTOCOLS) == 0.0
    assert eff.PCIE_ALLREDUCE_PROTOCOLS == PROTOCOLS


def test_tp2_unchanged_from_the_former_twelve_microsecond_steps() -> None:
    """At TP 2 (the DLVLLM-* fit rows) the refit fixed costs give what the former model gave: the link's two
    12 us steps + 20 us (LL) / 60 us (Simple) + the same bytes."""
    link = resolve_interconnect("pcie4")
    for n_bytes in (7168, 16384, 716_800):
        former = allreduce_time_s(n_bytes, 2, link) + min(20e-6 + n_bytes / 1.3e9, 60e-6 + n_bytes / 12e9)
        assert pcie_allreduce_time_s(n_bytes, 2, link, PROTOCOLS) == pytest.approx(former, abs=0.05e-6)


def test_ring_steps_at_nccl_latency_by_hand() -> None:
    """A 70B's batch-1 activation (16,384 B) on 8 ranks over PCIe 4.0 x16: wire 14/8 x 16,384 / 31.5 GB/s
    = 0.91 us; LL 42 + 14 x 1.0 + 28,672 / 1.3 GB/s (22.06) = 78.06 us; Simple 72.6 + 14 x 5.7 + 2.39 = 154.8 us:
    79.0 us in all. The link's 12 us per step made it 211 us (14 x 12 + 0.91 + 20 + 22.06)."""
    link = resolve_interconnect("pcie4")
    t8 = pcie_allreduce_time_s(16384, 8, link, PROTOCOLS)
    assert t8 * 1e6 == pytest.approx(0.91 + 42 + 14 + 22.06, abs=0.05)
    # going from 2 to 8 ranks adds 12 of NCCL's LL steps and the ring's extra bytes, not 12 x 12 us
    t2 = pcie_allreduce_time_s(16384, 2, link, PROTOCOLS)
    extra_bytes = (14 / 8 - 1) * 16384
    assert t8 - t2 == pytest.approx(12 * 1.0e-6 + extra_bytes / 1.3e9 + extra_bytes / 31.5e9, rel=1e-6)
    assert eff.NCCL_PCIE_RING_PROTOCOLS[0][1] == PROTOCOLS[0][1]  # NCCL's hwLat, PCI ring LL
    assert eff.NCCL_PCIE_RING_PROTOCOLS[1][1] == PROTOCOLS[1][1]  # and Simple


def _qwen2_7b(tp: int) -> Any:
    return evaluate({"model": "Qwen/Qwen2-7B-Instruct",
                     "workload": {"task": "inference", "precision": "bf16", "engine": "vllm",
                                  "engine_version": "0.10.1.1", "batch_size": 1, "prompt_tokens": 1024,
                                  "output_tokens": 1024, "load": "offline", "num_requests": 1,
                                  "max_model_len": 16384, "gpu_memory_utilization": 0.25},
                     "hardware": {"gpu": "A100 80GB", "count": tp, "tensor_parallel": tp,
                                  "interconnect": "pcie4-nop2p"}}).performance


def test_tp2_without_p2p_beats_tp1_at_batch_one() -> None:
    """vLLM 0.10.1 on two A100 80GB whose driver reports no P2P: Qwen2-7B decodes one sequence at 8.82 ms
    per token with TP 2 and 11.76 ms on one GPU (DLVLLM-0002 / -0048). With 100 us per all-reduce mlrig
    had TP 2 slower than TP 1 (76 vs 95 tok/s); the small messages take NCCL's LL protocol."""
    tp1, tp2 = _qwen2_7b(1), _qwen2_7b(2)
    assert tp2.decode_tok_s > tp1.decode_tok_s
    assert tp2.decode_tok_s == pytest.approx(1000 / 8.82, rel=0.10)


def test_vllm_tp8_decode_step_pays_nccl_ring_steps() -> None:
    """The product path: vLLM decoding Llama-3-70B (80 layers, hidden 8192: 16,384 B per all-reduce at batch 1)
    on 8 GPUs over PCIe 4.0 x16 without P2P pays 2 x 80 all-reduces of 79.0 us
    (test_ring_steps_at_nccl_latency_by_hand): 12.6 ms per token, not the 33.8 ms that 14 steps of 12 us gave."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.estimators.performance import decode_step
    from mlrig.estimators.resolved import resolve
    from mlrig.planner import parse_plan, resolve_arch

    plan = parse_plan({"model": "llama-3-70b", "workload": {"precision": "fp16", "engine": "vllm"},
                       "hardware": {"gpu": "a100-pcie-80gb", "count": 8, "tensor_parallel": 8,
                                    "interconnect": "pcie4-x16-nop2p"}})
    comm_s = decode_step(resolve(resolve_arch(plan), plan, resolve_gpu("a100-pcie-80gb")), 1, 640).comm_s
    per_all_reduce = pcie_allreduce_time_s(16384, 8, resolve_interconnect("pcie4-x16"), PROTOCOLS)
    assert comm_s == pytest.approx(2 * 80 * per_all_reduce, rel=1e-6)
    assert comm_s * 1e3 == pytest.approx(12.63, abs=0.05)
