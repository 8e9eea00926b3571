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
    (`interconnects.default_link`: NVLink, the card's PCIe, or InfiniBand across nodes)."""
    from mlrig.catalog.interconnects import default_link, pcie_peer_to_peer, resolve_interconnect

    hw = plan.hardware
    if hw.interconnect:
        return check_named_link(resolve_interconnect(hw.interconnect), gpu)
    return default_link(gpu.pcie_gen, gpu.nvlink_gb_s, hw.count, hw.nodes, gpu.nvlink_max_gpus, gpu.pcie_lanes,
                        gpu.vendor, pcie_peer_to_peer(gpu.vendor, gpu.hardware_class, gpu.name))


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

