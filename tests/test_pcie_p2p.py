"""PCIe peer-to-peer all-reduce (interconnects.pcie_peer_to_peer / with_peer_to_peer / pcie_allreduce_time_s):
cards whose driver gives peer access move NCCL's ring steps GPU to GPU, the others stage them through host memory."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.interconnects import pcie_allreduce_time_s, pcie_peer_to_peer, resolve_interconnect
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators.hardware import plan_link
from mlrig.planner import evaluate, parse_plan

P2P_FRACTIONS = tuple(p[2] for p in eff.NCCL_PCIE_RING_PROTOCOLS)


@pytest.mark.parametrize(("gpu", "p2p"), [
    ("RTX A6000", True), ("RTX 6000 Ada", True), ("L4", True), ("A100 PCIe 80GB", True),
    ("Intel Arc Pro B60", True),
    ("RTX 4090", False), ("RTX 3090", False), ("RTX 5090", False), ("Intel Arc B580", False), ("rx-7900-xtx", False),
])
def test_which_cards_have_pcie_peer_to_peer(gpu: str, p2p: bool) -> None:
    """NVIDIA data-centre / professional boards and Intel's Arc Pro have it; GeForce, consumer Arc and AMD
    (not assumed) do not."""
    g = resolve_gpu(gpu)
    assert pcie_peer_to_peer(g.vendor, g.hardware_class, g.name) is p2p


def test_default_link_carries_peer_to_peer_and_a_named_pcie_link_does_not() -> None:
    """8 RTX A6000s (NVLink bridges pair two at most) talk over PCIe 4.0 x16 with P2P; naming 'pcie4' says
    host-staged (vLLM's DLVLLM-* A100 pods logged no P2P), 'pcie4-p2p' says peer-to-peer on any card."""
    a6000 = resolve_gpu("RTX A6000")
    default = plan_link(parse_plan({"model": "llama-3-70b", "workload": {"precision": "bf16"},
                                    "hardware": {"gpu": "RTX A6000", "count": 8, "tensor_parallel": 8}}), a6000)
    assert default.kind == "pcie" and default.peer_to_peer and default.bandwidth_gb_s == pytest.approx(31.5)
    named = plan_link(parse_plan({"model": "llama-3-70b", "workload": {"precision": "bf16"},
                                  "hardware": {"gpu": "RTX A6000", "count": 8, "tensor_parallel": 8,
                                               "interconnect": "pcie4"}}), a6000)
    assert not named.peer_to_peer
    assert resolve_interconnect("pcie4-p2p").peer_to_peer
    assert resolve_interconnect("PCIe 5.0 x16 (P2P)").bandwidth_gb_s == pytest.approx(63.0)
    with pytest.raises(MlrigError, match="qualifies a PCIe link"):
        resolve_interconnect("nvlink-p2p")


def test_p2p_all_reduce_drops_the_host_staging_copy() -> None:
    """Hand check, Llama-3-70B (hidden 8192) prefilling 255 tokens at TP 8 over PCIe 4.0 x16: 4.18 MB per
    all-reduce, 14/8 of it (7.31 MB) moved per GPU, 232 us on the wire. Host-staged (Simple): 72.6 us + 14 x
    5.7 us + 232 us + 7.31 MB at 12 GB/s (609 us) = 994 us; peer-to-peer: the same less the staging, 384 us.
    A batch-1 decode's 16 KB (LL): 42 + 14 + 1 (wire) + 22 (staging at 1.3 GB/s) = 79 us staged, 42 + 14 +
    3.6 (the wire at LL's quarter of the link) = 59.6 us P2P."""
    staged, p2p = resolve_interconnect("pcie4"), resolve_interconnect("pcie4-p2p")
    n = 2 * 8192 * 255
    assert pcie_allreduce_time_s(n, 8, staged, eff.PCIE_ALLREDUCE_PROTOCOLS, P2P_FRACTIONS) == pytest.approx(
        993.8e-6, rel=1e-3)
    assert pcie_allreduce_time_s(n, 8, p2p, eff.PCIE_ALLREDUCE_PROTOCOLS, P2P_FRACTIONS) == pytest.approx(
        384.5e-6, rel=1e-3)
    assert pcie_allreduce_time_s(16384, 8, staged, eff.PCIE_ALLREDUCE_PROTOCOLS, P2P_FRACTIONS) == pytest.approx(
        79.0e-6, rel=1e-2)
    assert pcie_allreduce_time_s(16384, 8, p2p, eff.PCIE_ALLREDUCE_PROTOCOLS, P2P_FRACTIONS) == pytest.approx(
        59.6e-6, rel=1e-2)
    # without the fractions (callers that price no P2P path) a P2P link is priced as before
    assert pcie_allreduce_time_s(n, 8, p2p, eff.PCIE_ALLREDUCE_PROTOCOLS) == pytest.approx(993.8e-6, rel=1e-3)


def _a6000_x8(interconnect: str | None) -> dict[str, float]:
    hw: dict[str, object] = {"gpu": "NVIDIA RTX A6000", "count": 8, "tensor_parallel": 8}
    if interconnect:
        hw["interconnect"] = interconnect
    res = evaluate({"model": {"name": "meta-llama/Meta-Llama-3-70B-Instruct"},
                    "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": "0.7.3",
                                 "batch_size": 1, "prompt_tokens": 255, "output_tokens": 343, "load": "concurrency",
                                 "num_requests": 50, "max_model_len": 4096},
                    "hardware": hw})
    perf = res.performance
    assert perf is not None and perf.ttft_ms is not None and perf.tpot_ms is not None
    return {"ttft_ms": perf.ttft_ms, "tpot_ms": perf.tpot_ms}


def test_vllm_tp8_on_workstation_cards_prices_the_p2p_ring() -> None:
    """vLLM 0.7.3 on 8 RTX A6000s (custom all-reduce off beyond two PCIe GPUs: one NCCL call per all-reduce):
    the default link (P2P) against the same plan with 'pcie4' named (host-staged). The 255-token prefill's 160
    all-reduces take 0.38 instead of 0.99 ms each, ~98 ms less TTFT; a decode step's 160 take ~20 us less each
    (~3 ms of TPOT)."""
    p2p, staged = _a6000_x8(None), _a6000_x8("pcie4")
    assert staged["ttft_ms"] - p2p["ttft_ms"] == pytest.approx(160 * (993.8 - 384.5) / 1000, rel=0.1)
    assert staged["tpot_ms"] - p2p["tpot_ms"] == pytest.approx(160 * (79.0 - 59.6) / 1000, rel=0.2)
    assert _a6000_x8("pcie4-p2p") == pytest.approx(p2p)
