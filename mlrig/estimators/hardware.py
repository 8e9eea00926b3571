"""What a plan's hardware gives every speed estimator: the GPU's memory class, the link between its
GPUs, and the host memory bandwidth assumed for offloaded work. Below performance (inference),
serving and training_speed, which all use it, so none of them imports another for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlrig.estimators import efficiency as eff

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.interconnects import Interconnect
    from mlrig.workload import Plan

# Host (CPU) memory bandwidth assumed for offloaded layers / CPU inference when none is given:
# dual-channel DDR5-4800 is 76.8 GB/s peak (JEDEC JESD79-5); desktop STREAM results ~60 GB/s.
DEFAULT_HOST_BW_GB_S = 76.8


def gpu_memory_class(gpu: GPU) -> str:
    """The GPU's memory class for the efficiency tables (efficiency.memory_class)."""
    return eff.memory_class(gpu.hardware_class, gpu.memory_type)


def graph_replay_missing(engine: str | None, gpu: GPU) -> bool:
    """True where the engine's decode step would be one replayed graph but the device captures none:
    torch.compile's reduce-overhead mode on Intel GPUs (efficiency.NO_GRAPH_LAYER_OVERHEAD_S_INTEL).
    `engine`: the efficiency tables' family key (`engines.engine_family`)."""
    return engine in eff.GRAPH_REPLAY_ENGINES and gpu.vendor.lower() == "intel"


def plan_link(plan: Plan, gpu: GPU) -> Interconnect:
    """The link between the plan's GPUs: its named interconnect, else the catalog default
    (`interconnects.default_link`: NVLink, the card's PCIe, or InfiniBand across nodes). A PCIe link's transport
    (peer-to-peer or staged through host memory) is settled here, once, for every command and for training
    and inference alike: as named ('pcie4-p2p', 'pcie4-nop2p'), else the cards' default
    (`interconnects.with_card_transport` / `pcie_peer_to_peer`)."""
    from mlrig.catalog.interconnects import default_link, resolve_interconnect, with_card_transport

    hw = plan.hardware
    if hw.interconnect:
        link = check_named_link(resolve_interconnect(hw.interconnect), gpu)
    else:
        link = default_link(gpu.pcie_gen, gpu.nvlink_gb_s, hw.count, hw.nodes, gpu.nvlink_max_gpus, gpu.pcie_lanes,
                            gpu.vendor)
    return with_card_transport(link, gpu.vendor, gpu.hardware_class, gpu.name)


def link_peer_to_peer(link: Interconnect) -> bool:
    """Whether the GPUs on `link` (as `plan_link` settles it) move a collective's bytes GPU to GPU: over NVLink or
    Infinity Fabric always, over PCIe where its transport is P2P (`Interconnect.peer_to_peer`), over a network
    never (NCCL's NET transport). Training and inference ask this of the same link."""
    if link.kind == "pcie":
        return bool(link.peer_to_peer)
    return link.kind != "network"


def link_transport_note(link: Interconnect, gpu: GPU) -> str | None:
    """What a multi-GPU plan says about a PCIe link between its GPUs: the transport assumed (P2P or host-staged),
    why, and the --interconnect that changes it; None for other links."""
    from mlrig.catalog.interconnects import pcie_peer_to_peer

    if link.kind != "pcie":
        return None
    base = link.id.removesuffix("-p2p").removesuffix("-nop2p")
    label = link.name.removesuffix(" (P2P)").removesuffix(" (host-staged)")
    card = pcie_peer_to_peer(gpu.vendor, gpu.hardware_class, gpu.name)
    geforce = gpu.hardware_class == "geforce"
    if link.peer_to_peer == card:
        why = f"the {gpu.name}'s default" + (": GeForce drivers give no peer access" if geforce else "")
    else:
        why = "as --interconnect names it" + (": the stock GeForce driver gives none" if geforce else "")
    if link.peer_to_peer:
        return (f"GPU links: {label} with peer-to-peer (NCCL's P2P transport, GPU to GPU; {why}); pass --interconnect "
                f"{base}-nop2p where the platform disables P2P (a VM or container without peer pass-through, GPUs on "
                "two CPU sockets)")
    return (f"GPU links: {label}, host-staged (NCCL copies through host memory; {why}); pass --interconnect "
            f"{base}-p2p if the GPUs do have P2P")


def check_named_link(link: Interconnect, gpu: GPU) -> Interconnect:
    """A named GPU-to-GPU fabric (NVLink / NVSwitch, Infinity Fabric) the GPU has, else MlrigError naming the
    links it has: the catalog's `nvlink_gb_s` (NVIDIA NVLink or AMD Infinity Fabric per the card's data sheet)
    and PCIe generation x lanes. PCIe and network links are any card's. A named NVLink faster than the card's
    own (the 'nvlink' alias is NVLink 4, 450 GB/s) is priced at the card's catalog figure, as `default_link` does."""
    from mlrig.errors import MlrigError

    if link.kind not in ("nvlink", "xgmi"):
        return link
    amd = gpu.vendor.upper() == "AMD"
    own = "Infinity Fabric" if amd else "NVLink"
    if gpu.nvlink_gb_s and (link.kind == "xgmi") == amd:
        if link.kind == "nvlink" and link.bandwidth_gb_s > gpu.nvlink_gb_s:
            # 'nvlink' is NVLink 4's 450 GB/s; a card's own links may be slower (an RTX 3090's bridge: 56.25 GB/s)
            return link.model_copy(update={"id": f"nvlink-{gpu.nvlink_gb_s:g}",
                                           "name": f"NVLink ({gpu.nvlink_gb_s:g} GB/s)",
                                           "bandwidth_gb_s": gpu.nvlink_gb_s})
        return link
    pcie = f"PCIe {gpu.pcie_gen or 4}.0 x{gpu.pcie_lanes or 16}"
    has = f"{own} ({gpu.nvlink_gb_s:g} GB/s per direction) and {pcie}" if gpu.nvlink_gb_s else f"{pcie} only"
    fix = "--interconnect " + (own.lower().replace(" ", "-") if gpu.nvlink_gb_s else f"pcie{gpu.pcie_gen or 4}")
    raise MlrigError(f"{gpu.name} has no {'NVLink' if link.kind == 'nvlink' else 'Infinity Fabric'} "
                     f"(interconnect {link.id!r}): its links are {has}; drop --interconnect or pass {fix}")


def board_power_tflops(gpu: GPU, dtype: str, watts: float | None = None) -> float | None:
    """The dense tensor rating a card is priced at when its board power, not its boost clock, bounds a long
    dense GEMM, in the units of `gpu.tensor_tflops(dtype)`: energy per FLOP of the architecture x watts, over
    the fraction of a rating an unbound card's GEMMs reach (efficiency.BOARD_TFLOP_PER_J, BOARD_BOUND_GEMM_EFF:
    the sources are there). `watts`: the board power (TDP) unless a lower power cap is given. FP8 / FP4 run at
    their rating's multiple of the 16-bit rate for the same power (NVIDIA rates all three at one clock and TDP).
    None where no bound is known (architecture without a figure, no TDP, no 16-bit tensor rate, FP32)."""
    arch = gpu.architecture or ""
    tflop_per_j = next((v for k, v in eff.BOARD_TFLOP_PER_J.items() if arch.startswith(k)), None)
    w = min(gpu.tdp_w, watts) if gpu.tdp_w and watts else gpu.tdp_w
    base = gpu.tensor_tflops("bf16")
    rate = gpu.tensor_tflops(dtype)
    if tflop_per_j is None or not w or not base or not rate or dtype.lower() in ("fp32", "float32"):
        return None
    return tflop_per_j * w / eff.BOARD_BOUND_GEMM_EFF * (rate / base)

