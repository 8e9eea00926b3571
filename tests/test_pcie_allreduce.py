"""Tensor-parallel all-reduce over PCIe without peer-to-peer access: NCCL through host memory, its protocol
chosen by message size (interconnects.pcie_allreduce_time_s, efficiency.PCIE_ALLREDUCE_PROTOCOLS)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.interconnects import allreduce_time_s, pcie_allreduce_time_s, resolve_interconnect
from mlrig.estimators import efficiency as eff
from mlrig.planner import evaluate

PROTOCOLS = ((20e-6, 1.3), (60e-6, 12.0))


def test_protocol_by_message_size_hand_checked() -> None:
    """2 ranks on PCIe 4.0 x16 (31.5 GB/s, 12 us per step): the ring's 24 us + wire time, plus
    7,168 B (Qwen2-7B, one sequence): LL 20 us + 7,168 / 1.3 GB/s = 25.5 us (Simple would be 60.6);
    716,800 B (100 sequences): Simple 60 us + 716,800 / 12 GB/s = 119.7 us (LL would be 571)."""
    link = resolve_interconnect("pcie4")
    small = pcie_allreduce_time_s(7168, 2, link, PROTOCOLS)
    assert small == pytest.approx(allreduce_time_s(7168, 2, link) + 20e-6 + 7168 / 1.3e9)
    assert small * 1e6 == pytest.approx(24.23 + 25.51, abs=0.05)
    big = pcie_allreduce_time_s(716_800, 2, link, PROTOCOLS)
    assert big == pytest.approx(allreduce_time_s(716_800, 2, link) + 60e-6 + 716_800 / 12e9)
    assert pcie_allreduce_time_s(7168, 1, link, PROTOCOLS) == 0.0
    assert eff.PCIE_ALLREDUCE_PROTOCOLS == PROTOCOLS


def _qwen2_7b(tp: int) -> Any:
    return evaluate({"model": "Qwen/Qwen2-7B-Instruct",
                     "workload": {"task": "inference", "precision": "bf16", "engine": "vllm",
                                  "engine_version": "0.10.1.1", "batch_size": 1, "prompt_tokens": 1024,
                                  "output_tokens": 1024, "load": "offline", "num_requests": 1,
                                  "max_model_len": 16384, "gpu_memory_utilization": 0.25},
                     "hardware": {"gpu": "A100 80GB", "count": tp, "tensor_parallel": tp,
                                  "interconnect": "pcie4"}}).performance


def test_tp2_without_p2p_beats_tp1_at_batch_one() -> None:
    """vLLM 0.10.1 on two A100 80GB whose driver reports no P2P: Qwen2-7B decodes one sequence at 8.82 ms
    per token with TP 2 and 11.76 ms on one GPU (DLVLLM-0002 / -0048). With 100 us per all-reduce mlrig
    had TP 2 slower than TP 1 (76 vs 95 tok/s); the small messages take NCCL's LL protocol."""
    tp1, tp2 = _qwen2_7b(1), _qwen2_7b(2)
    assert tp2.decode_tok_s > tp1.decode_tok_s
    assert tp2.decode_tok_s == pytest.approx(1000 / 8.82, rel=0.10)
