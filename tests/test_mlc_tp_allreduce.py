"""MLC-LLM's tensor-parallel all-reduce over PCIe: one NCCL / RCCL call per all-reduce, priced by NCCL's own
ring model (interconnects.nccl_ring_allreduce_time_s, efficiency.PCIE_NCCL_RING_ENGINES), not the host-staging
figures fitted on vLLM's rows (efficiency.PCIE_ALLREDUCE_PROTOCOLS)."""

from __future__ import annotations

import pytest

from mlrig.catalog.interconnects import nccl_ring_allreduce_time_s, pcie_allreduce_time_s, resolve_interconnect
from mlrig.estimators import efficiency as eff
from mlrig.planner import evaluate


def _plan(engine: str) -> dict[str, object]:
    """MLCBLOG-0007's setup: Llama-2-70B 4-bit, batch 1, two RTX 4090 over PCIe (MLC blog 2023-10-19: 34.5 tok/s)."""
    return {"model": {"name": "meta-llama/Llama-2-70b-hf"},
            "workload": {"task": "inference", "precision": "int4", "engine": engine, "batch_size": 1,
                         "load": "static", "prompt_tokens": 8, "output_tokens": 256},
            "hardware": {"gpu": "NVIDIA GeForce RTX 4090", "count": 2, "tensor_parallel": 2}}


def test_nccl_ring_model_small_message_by_hand() -> None:
    """16 KB (hidden 8192 x fp16) on 2 ranks over PCIe 4.0 x16: LL = 6.6 + 2 x 1.0 us + 16384 B at
    31.5 GB/s x 1/4 x 2/2 (2.08 us) = 10.68 us (NCCL 2.18's tuning.cc);
    Simple = 8.4 + 2 x 5.7 + 0.52 = 20.3 us; NCCL takes LL."""
    link = resolve_interconnect("pcie4-x16")
    t = nccl_ring_allreduce_time_s(16384, 2, link, eff.NCCL_PCIE_RING_PROTOCOLS)
    assert t == pytest.approx(10.68e-6, rel=0.01)
    assert nccl_ring_allreduce_time_s(16384, 1, link, eff.NCCL_PCIE_RING_PROTOCOLS) == 0.0
    # large messages take Simple at the full link bandwidth: 16 MB -> 8.4 + 11.4 us + 16.78e6 / 31.5e9 s
    big = nccl_ring_allreduce_time_s(16 * 2**20, 2, link, eff.NCCL_PCIE_RING_PROTOCOLS)
    assert big == pytest.approx(19.8e-6 + 16 * 2**20 / 31.5e9, rel=0.01)
    # the host-staging path fitted on vLLM's rows costs 57 us for the same message
    assert pcie_allreduce_time_s(16384, 2, link, eff.PCIE_ALLREDUCE_PROTOCOLS) == pytest.approx(57.1e-6, rel=0.01)


def test_mlc_70b_on_two_4090s_per_token_time_by_hand() -> None:
    """Per token: 18.07 GB of weights per GPU at 0.80 x 0.85 (int4) x 1008 GB/s = 26.36 ms, 80 layers x 40 us
    + 0.5 ms of step = 3.70 ms, 2 x 80 all-reduces x 10.68 us = 1.71 ms: 31.8 ms, 31.5 tok/s (measured 34.5,
    MLCBLOG-0007; the host-staging path gave 39.2 ms, 25.5 tok/s)."""
    perf = evaluate(_plan("mlc")).performance
    assert perf is not None
    assert 1000.0 / perf.decode_tok_s == pytest.approx(26.36 + 3.70 + 1.71, rel=0.01)
    assert perf.decode_tok_s == pytest.approx(31.5, rel=0.01)


def test_other_engines_keep_the_host_staging_path() -> None:
    """vLLM on the same PCIe pair still pays PCIE_ALLREDUCE_PROTOCOLS (fitted on its own rows): its decode
    is slower than MLC's by at least the 160 x (57.1 - 10.7) us difference minus the engines' other gaps."""
    assert "vllm" not in eff.PCIE_NCCL_RING_ENGINES
    mlc = evaluate(_plan("mlc")).performance
    vllm = evaluate(_plan("vllm")).performance
    assert mlc is not None and vllm is not None
    assert vllm.decode_tok_s < mlc.decode_tok_s
