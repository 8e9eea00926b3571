"""PCIe peer-to-peer all-reduce (interconnects.pcie_peer_to_peer / with_peer_to_peer / pcie_allreduce_time_s):
cards whose driver gives peer access move NCCL's ring steps GPU to GPU, the others stage them through host memory."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.interconnects import Interconnect, pcie_allreduce_time_s, pcie_peer_to_peer, resolve_interconnect
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators.hardware import link_peer_to_peer, plan_link
from mlrig.estimators.resolved import ResolvedPlan
from mlrig.estimators.training_speed import DP_OVERLAP, DP_OVERLAP_NO_P2P, dp_overlap, training_speed
from mlrig.planner import evaluate, parse_plan, resolve_plan

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


def test_default_link_carries_peer_to_peer_and_a_bare_named_pcie_link_takes_the_cards_default() -> None:
    """8 RTX A6000s (NVLink bridges pair two at most) talk over PCIe 4.0 x16 with P2P, whether the link is left
    out or named 'pcie4'; 'pcie4-nop2p' says host-staged (vLLM's DLVLLM-* A100 pods logged no P2P), 'pcie4-p2p'
    peer-to-peer on any card."""
    a6000 = resolve_gpu("RTX A6000")

    def link(interconnect: str | None) -> Interconnect:
        hw: dict[str, object] = {"gpu": "RTX A6000", "count": 8, "tensor_parallel": 8}
        if interconnect:
            hw["interconnect"] = interconnect
        return plan_link(parse_plan({"model": "llama-3-70b", "workload": {"precision": "bf16"}, "hardware": hw}), a6000)

    default = link(None)
    assert default.kind == "pcie" and default.peer_to_peer is True and default.bandwidth_gb_s == pytest.approx(31.5)
    assert link("pcie4") is default and link("PCIe 4.0 x16") is default
    for off in ("pcie4-nop2p", "pcie4-no-p2p", "pcie4-host", "PCIe 4.0 x16 (host-staged)", "pcie4-x16-nop2p"):
        staged = link(off)
        assert staged.peer_to_peer is False and staged.bandwidth_gb_s == pytest.approx(31.5), off
    assert link("pcie4-nop2p").id == "pcie4-x16-nop2p" and link("pcie4-nop2p").name == "PCIe 4.0 x16 (host-staged)"
    assert resolve_interconnect("pcie4").peer_to_peer is None  # the catalog's entry says neither
    assert resolve_interconnect("pcie4-p2p").peer_to_peer
    assert resolve_interconnect("PCIe 5.0 x16 (P2P)").bandwidth_gb_s == pytest.approx(63.0)
    with pytest.raises(MlrigError, match="qualifies a PCIe link"):
        resolve_interconnect("nvlink-p2p")
    with pytest.raises(MlrigError, match="qualifies a PCIe link"):
        resolve_interconnect("ib-ndr-nop2p")


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
    the default link (P2P) against the same plan with 'pcie4-nop2p' named (host-staged). The 255-token prefill's 160
    all-reduces take 0.38 instead of 0.99 ms each, ~98 ms less TTFT; a decode step's 160 take ~20 us less each
    (~3 ms of TPOT)."""
    p2p, staged = _a6000_x8(None), _a6000_x8("pcie4-nop2p")
    assert staged["ttft_ms"] - p2p["ttft_ms"] == pytest.approx(160 * (993.8 - 384.5) / 1000, rel=0.1)
    assert staged["tpot_ms"] - p2p["tpot_ms"] == pytest.approx(160 * (79.0 - 59.6) / 1000, rel=0.2)
    assert _a6000_x8("pcie4-p2p") == pytest.approx(p2p) and _a6000_x8("pcie4") == pytest.approx(p2p)


def _resolved(gpu: str, interconnect: str | None, task: str) -> ResolvedPlan:
    hw: dict[str, object] = {"gpu": gpu, "count": 2}
    if interconnect:
        hw["interconnect"] = interconnect
    if task == "inference":
        plan: dict[str, object] = {"model": "meta-llama/Llama-2-7b-hf",
                                   "workload": {"precision": "bf16", "engine": "vllm"},
                                   "hardware": {**hw, "tensor_parallel": 2}}
    else:
        plan = {"model": "meta-llama/Llama-2-7b-hf",
                "workload": {"task": "finetune", "precision": "bf16", "batch_size": 4, "engine": "hf-peft"},
                "training": {"method": "lora", "lora_rank": 64, "seq_len": 2048, "activation_checkpointing": "full",
                             "zero_stage": 3},
                "hardware": hw}
    r, _ = resolve_plan(plan)
    return r


@pytest.mark.parametrize(("gpu", "interconnect", "p2p"), [
    ("RTX 4090", None, False), ("RTX 4090", "pcie4", False), ("RTX 4090", "pcie4-x8", False),
    ("RTX 3090", "pcie3-x4", False), ("RTX 5090", "pcie5", False), ("RTX 4090", "pcie4-nop2p", False),
    ("RTX A6000", "pcie4", True), ("RTX A6000", "pcie4-x16", True), ("L40S", None, True),
    ("RTX A6000", "pcie4-nop2p", False), ("L40S", "pcie4-host", False), ("L40S", "pcie4", True),
    ("rx-7900-xtx", "pcie4", False), ("rx-7900-xtx", "pcie4-p2p", True),
])
def test_training_and_inference_take_one_answer_from_the_plans_link(gpu: str, interconnect: str | None,
                                                                     p2p: bool) -> None:
    """One rule for both: the plan's link (`hardware.plan_link`) says P2P or host-staged, and inference's all-reduce
    (`pcie_allreduce_time_s` reads `Interconnect.peer_to_peer`) and training's data-parallel overlap
    (`training_speed.dp_overlap`) both follow it. A GeForce pair gets none on a bare or absent link name; an
    A6000 pair gets it on a bare 'pcie4'; '-nop2p' / '-host' turn it off, '-p2p' on."""
    inference, training = _resolved(gpu, interconnect, "inference"), _resolved(gpu, interconnect, "finetune")
    assert inference.link is not None and training.link is not None
    assert inference.link.kind == training.link.kind == "pcie"
    assert inference.link.peer_to_peer is training.link.peer_to_peer is p2p
    assert link_peer_to_peer(training.link) is p2p
    assert dp_overlap(training) == (DP_OVERLAP if p2p else DP_OVERLAP_NO_P2P)


def test_nop2p_prices_the_host_staged_all_reduce_in_serving_and_the_exposed_sync_in_training() -> None:
    """On the same A6000 pair, 'pcie4-nop2p' costs more than the bare 'pcie4' (the card's P2P) on both paths:
    vLLM's TP-2 prefill pays the host-staging copy, FSDP's all-gathers stop hiding behind the backward pass."""
    def serve(interconnect: str) -> float:
        perf = evaluate({"model": "meta-llama/Llama-2-7b-hf",
                         "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "batch_size": 1,
                                      "prompt_tokens": 2048, "output_tokens": 128},
                         "hardware": {"gpu": "RTX A6000", "count": 2, "tensor_parallel": 2,
                                      "interconnect": interconnect}}).performance
        assert perf is not None and perf.ttft_ms is not None
        return perf.ttft_ms

    def train(interconnect: str) -> float:
        r = _resolved("RTX A6000", interconnect, "finetune")
        return float(training_speed(r, 4, 2048).comm_s)

    assert serve("pcie4-nop2p") > serve("pcie4") == pytest.approx(serve("pcie4-p2p"))
    assert train("pcie4-nop2p") > train("pcie4") == pytest.approx(train("pcie4-p2p"))


def test_plan_says_which_transport_it_assumed_and_how_to_change_it() -> None:
    """The result's notes name the PCIe transport and the --interconnect that flips it; NVLink says nothing."""
    def notes(gpu: str, interconnect: str | None) -> list[str]:
        hw: dict[str, object] = {"gpu": gpu, "count": 2, "tensor_parallel": 2}
        if interconnect:
            hw["interconnect"] = interconnect
        res = evaluate({"model": "meta-llama/Llama-2-7b-hf", "workload": {"precision": "bf16", "engine": "vllm"},
                        "hardware": hw})
        return [n for n in res.notes if n.startswith("GPU links:")]

    [geforce] = notes("RTX 4090", None)
    assert "host-staged" in geforce and "GeForce" in geforce and "--interconnect pcie4-x16-p2p" in geforce
    [ws] = notes("RTX A6000", "pcie4")
    assert "with peer-to-peer" in ws and "default" in ws and "--interconnect pcie4-x16-nop2p" in ws
    [forced] = notes("RTX A6000", "pcie4-nop2p")
    assert "host-staged" in forced and "as --interconnect names it" in forced
    assert notes("H100 SXM", None) == []


def test_training_tensor_parallel_takes_the_named_link() -> None:
    """Training's TP all-reduces cross the link the plan names, as its data-parallel ones do: two A6000s at TP 2 on
    a named 'pcie3-x4' (~4 GB/s) spend longer in TP communication than on 'pcie4-x16' (~32 GB/s), and both longer
    than on the NVLink bridge a pair of A6000s gets when no link is named."""
    def tp_s(interconnect: str | None) -> float:
        hw: dict[str, object] = {"gpu": "RTX A6000", "count": 2, "tensor_parallel": 2}
        if interconnect:
            hw["interconnect"] = interconnect
        r, _ = resolve_plan({"model": "meta-llama/Llama-2-7b-hf",
                             "workload": {"task": "finetune", "precision": "bf16", "batch_size": 4},
                             "training": {"method": "full", "seq_len": 2048}, "hardware": hw})
        return float(training_speed(r, 4, 2048).tp_s)

    x16, x4 = tp_s("pcie4-x16"), tp_s("pcie3-x4")
    assert x4 > 4 * x16
    assert tp_s(None) < x16  # unnamed: the pair's NVLink bridge (the named PCIe link was ignored before)
