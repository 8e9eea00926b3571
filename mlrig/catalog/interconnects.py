"""Interconnect catalog: GPU-GPU and node-node links with per-direction bandwidth and latency.

Data in `mlrig/data/interconnects.json` (each entry with its source and date). Collective costs
follow the ring algorithm (Patarasuk & Yuan 2009; NCCL): an all-reduce of S bytes over N ranks
moves 2(N-1)/N x S per rank and takes 2(N-1) latency steps.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, Field

from mlrig import vec
from mlrig.errors import UnknownNameError, closest
from mlrig.vec import Num


class Interconnect(BaseModel):
    id: str
    name: str
    kind: str  # pcie | nvlink | network
    bandwidth_gb_s: float = Field(gt=0, description="per direction, 10^9 bytes/s")
    latency_us: float = Field(ge=0)
    # a full mesh of direct links (AMD Infinity Fabric on the 8-GPU OAM platform): this many peer links,
    # each bandwidth_gb_s / mesh_peers; None for a switch or a single link (NVSwitch, PCIe, a NIC)
    mesh_peers: int | None = Field(default=None, ge=1)
    # PCIe only: True, the GPUs reach each other's memory directly (PCIe peer-to-peer), so NCCL's P2P transport moves
    # a ring step's bytes GPU to GPU; False, its SHM transport stages them through host memory
    # (`pcie_allreduce_time_s`);
    # None (a catalog entry, or a PCIe link named without '-p2p' / '-nop2p'): not said, the cards decide
    # (`with_card_transport`, `pcie_peer_to_peer`), which `hardware.plan_link` does for every plan
    peer_to_peer: bool | None = None
    aliases: list[str] = Field(default_factory=list)
    source: str
    source_date: str


@lru_cache(maxsize=1)
def load_interconnects() -> tuple[Interconnect, ...]:
    text = (Path(__file__).resolve().parent.parent / "data" / "interconnects.json").read_text(encoding="utf-8")
    return tuple(Interconnect.model_validate(x) for x in json.loads(text)["links"])


def _key(s: str) -> str:
    return "".join(c for c in s.lower() if c.isalnum())


@lru_cache(maxsize=1)
def _index() -> dict[str, Interconnect]:
    """Normalised id, name and alias -> entry, built once. Where two entries share a spelling the
    first in catalog order keeps it, as the former scan of the catalog did."""
    index: dict[str, Interconnect] = {}
    for link in load_interconnects():
        for spelling in (link.id, link.name, *link.aliases):
            index.setdefault(_key(spelling), link)
    return index


@lru_cache(maxsize=512)
def _lookup(name: str) -> Interconnect | None:
    return _index().get(_key(name))


# "4x roce-100g", "8 x ib-ndr": a count of network adapters per node before a network link's name.
_NIC_COUNT = re.compile(r"^\s*(\d{1,2})\s*[x*\u00d7]\s*(\S.*)$", re.IGNORECASE)


def split_nic_count(name: str) -> tuple[int | None, str]:
    """'4x roce-100g' -> (4, 'roce-100g'); a name without a count -> (None, name). The count says how
    many network adapters (NICs) each node of a multi-node plan has (training_speed.data_parallel_link)."""
    m = _NIC_COUNT.match(name)
    if m is None or int(m.group(1)) < 1:
        return None, name
    return int(m.group(1)), m.group(2)


# 'pcie4-p2p', 'PCIe 4.0 x16 (P2P)': a PCIe link with peer-to-peer access (`with_peer_to_peer`).
_P2P_SUFFIX = re.compile(r"^\s*(\S.*?)[\s_-]*\(?p2p\)?\s*$", re.IGNORECASE)
# 'pcie4-nop2p', 'pcie4-no-p2p', 'pcie4-host', 'PCIe 4.0 x16 (host-staged)': one without (`with_host_staging`).
_NO_P2P_SUFFIX = re.compile(r"^\s*(\S.*?)[\s_-]*\(?(?:no[\s_-]*p2p|host(?:[\s_-]*staged)?)\)?\s*$", re.IGNORECASE)


def resolve_interconnect(name: str) -> Interconnect:
    """'pcie4', 'PCIe 4.0 x8', 'nvlink', 'ib-ndr', 'roce-400g' -> the catalog entry (the catalog's
    own object, as before: callers copy it to change it, see `default_link`). A count of adapters
    before a network link ('4x roce-100g') names that link (`split_nic_count` reads the count).
    A PCIe link followed by 'p2p' ('pcie4-p2p', 'PCIe 4.0 x16 (P2P)') is that link with peer-to-peer
    access (`Interconnect.peer_to_peer` True), one followed by 'nop2p' / 'host' ('pcie4-nop2p', 'pcie4-host',
    'PCIe 4.0 x16 (host-staged)') that link without it (False: NCCL stages through host memory); a PCIe link
    named alone says neither (None): the cards' own default applies (`with_card_transport`)."""
    for pattern, suffix, qualify in ((_NO_P2P_SUFFIX, "nop2p", with_host_staging),
                                     (_P2P_SUFFIX, "p2p", with_peer_to_peer)):
        m = pattern.match(name)
        if m is None:
            continue
        base = resolve_interconnect(m.group(1))
        if base.kind != "pcie":
            from mlrig.errors import MlrigError

            raise MlrigError(f"interconnect {name!r}: '-{suffix}' (peer-to-peer on or off) qualifies a PCIe link, and "
                             f"{base.id!r} is {base.kind}; pass e.g. 'pcie4-{suffix}' or {base.id!r} alone")
        return qualify(base)
    count, rest = split_nic_count(name)
    if count is not None:
        link = _lookup(rest)
        if link is not None and link.kind == "network":
            return link
    link = _lookup(name)
    if link is not None:
        return link
    names = [x.id for x in load_interconnects()]
    near = closest(name.lower(), names)
    hint = "see mlrig/data/interconnects.json" if near else f"one of: {', '.join(names)}"
    raise UnknownNameError("interconnect", name, near, hint)


def default_link(pcie_gen: int | None, nvlink_gb_s: float | None, count: int, nodes: int = 1,
                 nvlink_max_gpus: int | None = None, pcie_lanes: int | None = None,
                 vendor: str | None = None, peer_to_peer: bool | None = None) -> Interconnect:
    """Link between tensor-parallel peers: NVLink when the GPU has it and >1 GPUs share a node,
    else the card's PCIe generation at x16 (x8 for two consumer cards is the caller's choice), or at
    the card's own width where it has fewer lanes (`pcie_lanes`, the catalog's edge-connector width:
    an x8 card such as the Arc Pro B60 or RTX 4060 Ti moves half an x16 slot's bytes whatever slot it
    sits in - PCI-SIG: a link trains to the narrower of its two ends).
    Bridged cards (`nvlink_max_gpus`, e.g. 2 for an A100 PCIe pair) use NVLink only up to that count:
    a ring over more of them crosses PCIe, whose bandwidth then bounds every step.
    Across nodes: InfiniBand NDR (the common 2023-25 cluster fabric). AMD GPUs with a GPU-GPU fabric
    (`vendor` "AMD": MI300X, MI325X, MI355X on their 8-GPU OAM platforms) are a full mesh of Infinity Fabric
    links at the card's aggregate figure (`_infinity_fabric_at`), not a switch. `peer_to_peer` True / False marks
    a PCIe link P2P / host-staged (`with_peer_to_peer`, `with_host_staging`); None leaves it to the cards
    (`with_card_transport`)."""
    if nodes > 1 and count <= 1:
        return resolve_interconnect("ib-ndr")
    if nvlink_gb_s and count > 1 and (nvlink_max_gpus is None or count <= nvlink_max_gpus):
        if (vendor or "").upper() == "AMD":
            return _infinity_fabric_at(nvlink_gb_s)
        return _nvlink_at(nvlink_gb_s)
    link = pcie_x16_link(pcie_gen)
    if pcie_lanes is not None and pcie_lanes <= 8:
        link = _lookup(f"pcie{pcie_gen if pcie_gen in (3, 4, 5) else 4}-x8") or link
    if peer_to_peer is None:
        return link
    return with_peer_to_peer(link) if peer_to_peer else with_host_staging(link)


def pcie_peer_to_peer(vendor: str | None, hardware_class: str | None, name: str) -> bool:
    """Whether a card's driver gives it PCIe peer-to-peer access to its peers (CUDA `cudaDeviceCanAccessPeer`,
    Level Zero's P2P), so that NCCL / oneCCL move a collective's bytes GPU to GPU instead of through host memory.
    - NVIDIA: data-centre and professional boards (`hardware_class` "datacenter" / "workstation": A100 / H100 PCIe,
      L4, L40S, A10, RTX A6000, RTX 6000 Ada, RTX PRO 6000) have it; GeForce boards do not (the RTX 40 series'
      driver reports no peer access: NVIDIA/nccl issue #1127, 2024-02; tinygrad/open-gpu-kernel-modules exists to
      patch it back in), nor does the RTX 30 series beyond its NVLink bridge.
    - Intel: the Arc Pro B-series (vLLM blog 2025-11-11 "Fast and Affordable LLMs serving on Intel Arc Pro B-Series
      GPUs": "multi-GPU scaling and PCIe P2P data transfer"; VLLMARC-*'s host: "the B60s on PCIe (P2P)") and the Data
      Center GPU Max.
    - AMD (Radeon and Instinct PCIe cards, without an xGMI bridge): not assumed. RCCL's PCIe P2P transport is off
      unless the user sets HSA_FORCE_FINE_GRAIN_PCIE=1 on a host with large-BAR addressing (RCCL documentation,
      "RCCL usage tips: Enabling peer-to-peer transport", rocm.docs.amd.com, read 2026-11-25); such a rig names
      its link '-p2p'.
    A platform can still withhold it (a VM or container without ACS / IOMMU pass-through of peer access, GPUs on two
    CPU sockets): a plan names such a link '-nop2p' ('pcie4-nop2p'), which is priced host-staged, as vLLM's DLVLLM-*
    A100 pods logged it ("Custom allreduce is disabled because your platform lacks GPU P2P capability"); a rig given
    peer access the stock driver withholds (tinygrad/open-gpu-kernel-modules on RTX 4090s) names it '-p2p'.
    This is the one rule training and inference share (`with_card_transport`, via `hardware.plan_link`)."""
    v = (vendor or "").upper()
    if v == "NVIDIA":
        return hardware_class in ("datacenter", "workstation")
    if v == "INTEL":
        return "arc pro" in name.lower() or "data center gpu max" in name.lower()
    return False


def with_peer_to_peer(link: Interconnect) -> Interconnect:
    """A PCIe catalog entry with peer-to-peer access (`Interconnect.peer_to_peer`): 'PCIe 4.0 x16 (P2P)'."""
    return _transport_copy(_catalog_id(link), True)


def with_host_staging(link: Interconnect) -> Interconnect:
    """A PCIe catalog entry without peer-to-peer access, NCCL staging through host memory:
    'PCIe 4.0 x16 (host-staged)'."""
    return _transport_copy(_catalog_id(link), False)


def with_card_transport(link: Interconnect, vendor: str | None, hardware_class: str | None,
                        gpu_name: str) -> Interconnect:
    """`link` with its transport settled for these GPUs: a PCIe link that says neither P2P nor host-staged
    (`Interconnect.peer_to_peer` None: a catalog entry, a bare 'pcie4') takes the cards' default
    (`pcie_peer_to_peer`); one that says either keeps it; NVLink, Infinity Fabric and network links are
    returned as they are. Training (`training_speed.dp_overlap`) and inference (`pcie_allreduce_time_s`)
    both read the answer from the plan's link (`hardware.plan_link`)."""
    if link.kind != "pcie" or link.peer_to_peer is not None:
        return link
    return (with_peer_to_peer if pcie_peer_to_peer(vendor, hardware_class, gpu_name) else with_host_staging)(link)


def _catalog_id(link: Interconnect) -> str:
    """The catalog id a (possibly qualified) PCIe link was made from: 'pcie4-x16-p2p' -> 'pcie4-x16'."""
    for suffix in ("-p2p", "-nop2p"):
        if link.peer_to_peer is not None and link.id.endswith(suffix):
            return link.id[: -len(suffix)]
    return link.id


@lru_cache(maxsize=32)
def _transport_copy(link_id: str, peer_to_peer: bool) -> Interconnect:
    link = resolve_interconnect(link_id)
    suffix, label = ("p2p", "P2P") if peer_to_peer else ("nop2p", "host-staged")
    return link.model_copy(update={"id": f"{link.id}-{suffix}", "name": f"{link.name} ({label})",
                                   "peer_to_peer": peer_to_peer})


@lru_cache(maxsize=64)
def _nvlink_at(nvlink_gb_s: float) -> Interconnect:
    """NVLink 4's entry at the card's own NVLink bandwidth (one object per bandwidth, shared like
    the catalog's own entries)."""
    return resolve_interconnect("nvlink4").model_copy(
        update={
            "id": f"nvlink-{nvlink_gb_s:g}",
            "name": f"NVLink ({nvlink_gb_s:g} GB/s)",
            "bandwidth_gb_s": nvlink_gb_s,
        }
    )


@lru_cache(maxsize=16)
def _infinity_fabric_at(aggregate_gb_s: float) -> Interconnect:
    """The Infinity Fabric mesh entry at the card's own aggregate per-direction figure (MI355X: 537.6)."""
    return resolve_interconnect("infinity-fabric-mesh").model_copy(
        update={"id": f"infinity-fabric-{aggregate_gb_s:g}", "bandwidth_gb_s": aggregate_gb_s})


def pcie_x16_link(pcie_gen: int | None) -> Interconnect:
    """The card's PCIe link at x16. A generation outside the catalog's 3-5 (or unknown) is taken
    as PCIe 4.0, the generation of most cards sold 2020-2024 (an assumption, not a measurement)."""
    gen = pcie_gen if pcie_gen in (3, 4, 5) else 4
    return resolve_interconnect(f"pcie{gen}-x16")


def group_bandwidth_gb_s(link: Interconnect, ranks: int) -> float:
    """Per-direction bandwidth a group of `ranks` GPUs can use on `link`. Behind a switch (NVSwitch) or on
    a single link, the link's figure. On a full mesh of direct links (`mesh_peers`, AMD Infinity Fabric)
    a GPU reaches its group's other N - 1 members over one link each, so N - 1 of its links carry the
    collective: 64 GB/s per direction at TP 2, 192 at TP 4, 448 at TP 8 on MI300X (7 links of 128 GB/s
    bidirectional, AMD data sheet). RCCL builds its rings, and a one-shot / two-shot peer kernel its reads,
    over those links only; the same (N - 1) x link rule is what vLLM's ROCm all-reduce tuning states as
    its peak bus bandwidth (vllm-project/vllm PR #39080, 2026: "Peak busbw = (N-1) x 76.8 GB/s" on MI355X)."""
    if link.mesh_peers is None:
        return link.bandwidth_gb_s
    return link.bandwidth_gb_s * min(max(1, ranks - 1), link.mesh_peers) / link.mesh_peers


def allreduce_time_s(n_bytes: Num, ranks: int, link: Interconnect, *, peer_to_peer: bool = False) -> Num:
    """Ring all-reduce: 2(N-1) steps of latency + 2(N-1)/N x bytes at the group's bandwidth
    (`group_bandwidth_gb_s`). `peer_to_peer`: an engine's own all-reduce kernel over NVLink or Infinity
    Fabric (vLLM's custom_all_reduce, gpt-fast's intra-node comm): every rank writes to and reads from all
    peers directly, a reduce-scatter and an all-gather of one hop each, so 2 latency steps whatever N, for
    the same bytes."""
    if ranks <= 1:
        return 0.0
    steps = 2 * (ranks - 1)
    hops = 2 if peer_to_peer else steps
    t = hops * link.latency_us * 1e-6 + (steps / ranks) * n_bytes / (group_bandwidth_gb_s(link, ranks) * 1e9)
    return vec.where(n_bytes > 0, t, 0.0)


def pcie_allreduce_time_s(n_bytes: Num, ranks: int, link: Interconnect,
                          protocols: tuple[tuple[float, float, float], ...],
                          p2p_bandwidth_fractions: tuple[float, ...] | None = None) -> Num:
    """All-reduce over PCIe through NCCL's ring, as vLLM runs it where its own kernel is off: the ring's
    wire time (2(N-1)/N x bytes at the link's bandwidth) plus, for the cheapest of `protocols`
    ((fixed s per call, s per ring step, host-staging GB/s) each, efficiency.PCIE_ALLREDUCE_PROTOCOLS),
    its fixed cost, 2(N-1) ring steps at its per-step latency and the ring's bytes at its staging bandwidth.
    The per-step latencies are NCCL's own for a PCIe ring (tuning.cc `hwLat`), not the link's generic
    latency: the fixed cost is what stays per call whatever the GPU count.

    On a link with peer-to-peer access (`Interconnect.peer_to_peer`) NCCL's P2P transport has each GPU write
    its ring step straight into the next GPU's buffer over PCIe (NVIDIA/nccl src/transport/p2p.cc; the SHM
    transport, src/transport/shm.cc, is the host-memory path the staging term prices): the copy through host
    memory goes, and the ring's bytes cross the link once, at the protocol's share of its bandwidth
    (`p2p_bandwidth_fractions`, one per protocol: NCCL's LL moves 8-byte flag + data words, a quarter of the link
    for an all-reduce, Simple the whole link; efficiency.NCCL_PCIE_RING_PROTOCOLS). The fixed and per-step costs,
    the call's launch and the ranks' handshakes, stay. Hand check, Llama-3-70B's prefill of 255 tokens at TP 8
    over PCIe 4.0 (4.18 MB per all-reduce, 7.3 MB moved): host-staged 0.23 + 0.15 + 0.61 = 0.99 ms, P2P
    (Simple) 0.15 + 0.23 = 0.38 ms."""
    if ranks <= 1:
        return 0.0
    steps = 2 * (ranks - 1)
    moved = steps / ranks * n_bytes
    wire = moved / (link.bandwidth_gb_s * 1e9)
    p2p = link.peer_to_peer and p2p_bandwidth_fractions is not None
    best: Num | None = None
    for i, (fixed_s, step_s, gb_s) in enumerate(protocols):
        if p2p:
            assert p2p_bandwidth_fractions is not None
            t = fixed_s + steps * step_s + wire / p2p_bandwidth_fractions[i]
        else:
            t = fixed_s + steps * step_s + wire + moved / (gb_s * 1e9)
        best = t if best is None else vec.minimum(best, t)
    assert best is not None
    return vec.where(n_bytes > 0, best, 0.0)


def nccl_ring_allreduce_time_s(n_bytes: Num, ranks: int, link: Interconnect,
                               protocols: tuple[tuple[float, float, float], ...]) -> Num:
    """All-reduce as NCCL's own tuning model prices a single-node ring (NVIDIA/nccl src/graph/tuning.cc,
    `ncclTopoTuneModel` / `ncclTopoGetAlgoTime`): per protocol, a base latency plus one hardware latency
    per ring step (2(N-1) steps for an all-reduce), plus the bytes at the algorithm bandwidth, i.e. the
    link's bus bandwidth times the protocol's fraction (LL: 1/4 for an all-reduce) times N / 2(N-1); NCCL
    runs the protocol its model predicts fastest. `protocols`: (base s, per-step s, bandwidth fraction)
    each (efficiency.NCCL_PCIE_RING_PROTOCOLS)."""
    if ranks <= 1:
        return 0.0
    steps = 2 * (ranks - 1)
    best: Num | None = None
    for base_s, step_s, bw_fraction in protocols:
        algo_bw = link.bandwidth_gb_s * 1e9 * bw_fraction * ranks / steps
        t = base_s + steps * step_s + n_bytes / algo_bw
        best = t if best is None else vec.minimum(best, t)
    assert best is not None
    return vec.where(n_bytes > 0, best, 0.0)


def nccl_ring_allreduce_excess_s(n_bytes: Num, ranks: int, link: Interconnect,
                                 protocols: tuple[tuple[float, float, float], ...]) -> Num:
    """What NCCL's ring model (`nccl_ring_allreduce_time_s`) adds for `n_bytes` over its own empty message: the
    time of the protocol it picks for that size less the cheapest protocol's base and per-step latencies. This is
    the part that grows with the message: LL moves it at a quarter of the link up to where LL128 (its higher
    latency, 0.92 of the link) or Simple becomes cheaper. Hand check, 4 ranks on 300 GB/s with
    efficiency.NCCL_NVLINK_RING_PROTOCOLS: 16 KiB 0.33 us (LL), 1 MiB 20.9 us (LL128: 25.4 + 5.7 - 10.2)."""
    if ranks <= 1:
        return 0.0
    steps = 2 * (ranks - 1)
    empty = min(base_s + steps * step_s for base_s, step_s, _ in protocols)
    return vec.where(n_bytes > 0, nccl_ring_allreduce_time_s(n_bytes, ranks, link, protocols) - empty, 0.0)


def p2p_time_s(n_bytes: Num, link: Interconnect) -> Num:
    """One point-to-point send (pipeline stage boundary, llama.cpp layer split): one link of a mesh."""
    return link.latency_us * 1e-6 + n_bytes / (group_bandwidth_gb_s(link, 2) * 1e9)
