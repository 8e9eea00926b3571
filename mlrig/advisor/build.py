"""`mlrig build check`: will this whole machine work? PSU, RAM, PCIe lanes, spacing, NVLink, CPU, storage,
cooling, case. Pure functions: `check_build(Build) -> BuildReport`; the GPU resolver is injectable.

Rules and their sources:
- Transients: Ampere cards spike far above TDP; assume ~600 W for an RTX 3090 (osmarks.net, "So You Want
  A Cheap ML Workstation", 2024 - a seed). We model peak = TDP × factor (GA102 Ampere 1.7 → 595 W for a
  3090; other architectures 1.4, an estimate).
- ATX 3.x PSUs must ride through 200% of rated power for 100 µs, 180% for 1 ms, 160% for 10 ms and 120%
  for 100 ms (Intel ATX 3.0 spec, as summarised by Tom's Hardware "Intel's ATX v3.0 PSU Standard" 2022 and
  HotHardware 2022). GPU excursions last ~1-10 ms, so we credit 160% of rated power for an ATX 3.x unit.
- Power limits: 4× RTX 3090 at 280 W (-20%) kept >95% of TensorFlow training throughput (Puget Systems,
  "Quad RTX3090 GPU Wattage Limited MaxQ", 2020); LLM decode lost <1% at 280 W (jeanfbrito.github.io, RTX
  3090 power-limit sweep). The curve is not linear: the first 20-30% of power costs ~5-10% of speed.
- System RAM ≥ total VRAM (osmarks.net seed: "at the very least, more CPU RAM than VRAM");
  offloading needs more.
- Consumer boards run two GPUs at x8/x8; more needs HEDT/workstation lanes or risers (osmarks.net seed).
- Data loading: ~4 CPU cores per GPU (common PyTorch DataLoader practice; an estimate).
- NVMe PCIe 4.0 reads 5-7 GB/s sequential (DOMAIN.md §3); SATA SSD ~0.55 GB/s; HDD ~0.2 GB/s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mlrig.catalog.gpus import GPU
from mlrig.errors import MlrigError

Severity = Literal["error", "warning", "info", "ok"]
GpuResolver = Callable[[str], GPU]

AMPERE_TRANSIENT_FACTOR = 1.7  # 350 W × 1.7 ≈ 600 W for an RTX 3090 (seed: osmarks.net)
OTHER_TRANSIENT_FACTOR = 1.4  # estimate for Ada/Blackwell/datacentre cards
ATX3_EXCURSION_CREDIT = 1.6  # ATX 3.x: 160% of rated power for 10 ms
REST_OF_SYSTEM_W = 75.0  # board, RAM, drives, fans (estimate)
# Board power assumed when the catalog lists no TDP (estimate: a PCIe workstation/datacentre card, e.g.
# A100 PCIe and RTX A6000 are 300 W per NVIDIA data sheets). In the catalog only Apple SoCs lack a TDP.
UNKNOWN_GPU_TDP_W = 300.0
CORES_PER_GPU = 4
# Founders Edition / reference card lengths in mm (NVIDIA product pages; partner cards are often longer).
REFERENCE_LENGTH_MM = {
    "rtx-3090": 313,
    "rtx-3090-ti": 313,
    "rtx-4090": 304,
    "rtx-5090": 304,
    "rtx-4080": 304,
    "rtx-3060-12gb": 242,
    "rtx-4060-ti-16gb": 244,
    "rtx-a6000": 267,
    "rtx-6000-ada": 267,
    "l40s": 267,
    "a100-pcie-80gb": 267,
    "h100-pcie-80gb": 268,
    "p40": 267,
}


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BuildGpu(_In):
    name: str
    count: int = Field(1, ge=1, le=16)
    length_mm: float | None = Field(None, gt=0)
    slots: float | None = Field(None, gt=0, le=5)
    power_limit_w: float | None = Field(None, gt=0)


class Psu(_In):
    watts: float = Field(gt=0)
    standard: str = "ATX 2.x"


class Cpu(_In):
    name: str = ""
    cores: int = Field(ge=1)
    pcie_lanes: int = Field(ge=1, description="CPU lanes available to slots and NVMe")
    tdp_w: float = Field(125, ge=0)


class Slot(_In):
    lanes: int = Field(ge=1, le=16, description="electrical width with all slots populated")
    position: int = Field(ge=1, le=12, description="expansion-slot position on the board, 1 = top")
    gen: int = Field(4, ge=1, le=6)
    chipset: bool = False


class Motherboard(_In):
    name: str = ""
    slots: list[Slot]
    nvlink_bridge_slots: int | None = Field(None, description="bridge spacing you own (3 or 4)")


class Storage(_In):
    type: Literal["nvme", "sata", "hdd", "network"] = "nvme"
    read_gb_s: float | None = Field(None, gt=0)
    capacity_tb: float | None = Field(None, gt=0)


class Case(_In):
    max_gpu_length_mm: float | None = Field(None, gt=0)
    expansion_slots: int | None = Field(None, ge=1)


class Cooling(_In):
    type: Literal["air", "liquid", "open-frame", "server"] = "air"
    case_fans: int | None = Field(None, ge=0)


class Build(_In):
    name: str = "build"
    use: Literal["training", "inference", "mixed"] = "mixed"
    gpus: list[BuildGpu] = Field(min_length=1)
    psu: Psu
    ram_gib: float = Field(gt=0)
    cpu: Cpu
    motherboard: Motherboard | None = None
    storage: list[Storage] = Field(default_factory=list)
    case: Case | None = None
    cooling: Cooling = Field(default_factory=Cooling)
    nvlink: bool = False
    offload_gib: float = Field(0, ge=0, description="host RAM your workloads offload to (ZeRO/device_map)")
    data_gb_s: float | None = Field(None, gt=0, description="data pipeline read rate needed")


class Finding(BaseModel):
    severity: Severity
    check: str
    what: str
    why: str
    fix: str


class BuildReport(BaseModel):
    name: str
    ok: bool  # no errors
    gpus: list[str]
    total_vram_gib: float
    sustained_w: float
    transient_w: float
    psu_w: float
    findings: list[Finding]


def load_build(path: str | Path) -> Build:
    from mlrig.userfiles import load_toml

    # finite=False: the Build model checks its own numbers and names the field
    data = load_toml(path, "build file", max_bytes=2**20, missing="see examples/build-2x3090.toml", finite=False)
    return parse_build(data)


def parse_build(data: dict[str, Any]) -> Build:
    try:
        return Build.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            raise MlrigError(f"build: unknown field {loc!r}; see examples/build-2x3090.toml") from None
        if err["type"] == "missing":
            raise MlrigError(f"build: {loc} is required; see examples/build-2x3090.toml") from None
        raise MlrigError(
            f"build: {loc}: {err['msg'].removeprefix('Value error, ')} (got {err.get('input')!r})"
        ) from None


def transient_factor(gpu: GPU) -> float:
    """Peak/TDP for millisecond excursions: 1.7 for GA102 Ampere (3090 ≈ 600 W), else 1.4 (estimate)."""
    arch = (gpu.architecture or "").lower()
    return AMPERE_TRANSIENT_FACTOR if "ga102" in arch else OTHER_TRANSIENT_FACTOR


def recommended_psu_w(gpu_w: list[tuple[GPU, float]], cpu_w: float, atx3: bool = True) -> float:
    """Smallest PSU (rounded up to 50 W) that holds sustained load at ≤ 80% and the transients.

    ATX 3.x units are credited 160% of rated power for ~10 ms excursions; older units must cover the
    transient peak outright.
    """
    sustained = sum(w for _, w in gpu_w) + cpu_w + REST_OF_SYSTEM_W
    transient = sum(w * transient_factor(g) for g, w in gpu_w) + cpu_w + REST_OF_SYSTEM_W
    need = max(sustained / 0.8, transient / (ATX3_EXCURSION_CREDIT if atx3 else 1.0))
    return math.ceil(need / 50.0) * 50.0


def _resolve_default(name: str) -> GPU:
    from mlrig.catalog.gpus import resolve_gpu

    return resolve_gpu(name)


def check_build(build: Build, resolve: GpuResolver | None = None) -> BuildReport:
    """Run every check; each finding says severity, what, why and what to do."""
    resolve = resolve or _resolve_default
    cards: list[tuple[BuildGpu, GPU]] = [(b, resolve(b.name)) for b in build.gpus]
    units: list[tuple[BuildGpu, GPU]] = [(b, g) for b, g in cards for _ in range(b.count)]
    n = len(units)
    f: list[Finding] = []

    def add(sev: Severity, check: str, what: str, why: str, fix: str) -> None:
        f.append(Finding(severity=sev, check=check, what=what, why=why, fix=fix))

    # ---- power
    gpu_w = [(g, b.power_limit_w or g.tdp_w or UNKNOWN_GPU_TDP_W) for b, g in units]
    sustained = sum(w for _, w in gpu_w) + build.cpu.tdp_w + REST_OF_SYSTEM_W
    transient = sum(w * transient_factor(g) for g, w in gpu_w) + build.cpu.tdp_w + REST_OF_SYSTEM_W
    atx3 = build.psu.standard.upper().replace(" ", "").startswith("ATX3")
    capacity = build.psu.watts * (ATX3_EXCURSION_CREDIT if atx3 else 1.0)
    rec = recommended_psu_w(gpu_w, build.cpu.tdp_w, atx3)
    spike_note = ", ".join(sorted({f"{g.id} ~{w * transient_factor(g):.0f} W" for g, w in gpu_w}))
    if build.psu.watts < sustained:
        add(
            "error",
            "psu",
            f"{build.psu.watts:.0f} W PSU < {sustained:.0f} W sustained load",
            "GPUs at their power limit + CPU + rest exceed the rating; the PSU will shut down under load",
            f"fit a {rec:.0f} W {'ATX 3.1' if atx3 else 'ATX 3.1 (12V-2x6)'} PSU or power-limit the GPUs",
        )
    elif capacity < transient:
        add(
            "warning" if atx3 else "error",
            "psu",
            f"transient peak ~{transient:.0f} W exceeds what a {build.psu.watts:.0f} W"
            f" {build.psu.standard} unit"
            f" rides through ({capacity:.0f} W)",
            f"millisecond GPU spikes ({spike_note}) trip over-current protection: random reboots under load"
            + ("" if atx3 else "; ATX 2.x units have no specified excursion headroom"),
            f"use a {rec:.0f} W ATX 3.x PSU (rated for 160% for 10 ms), or `nvidia-smi -pl` the GPUs",
        )
    elif build.psu.watts < sustained / 0.8:
        add(
            "warning",
            "psu",
            f"PSU runs at {sustained / build.psu.watts:.0%} of its rating sustained",
            "above ~80% continuous load efficiency drops and fans/noise rise",
            f"{rec:.0f} W gives 20% headroom",
        )
    else:
        add(
            "ok",
            "psu",
            f"{build.psu.watts:.0f} W {build.psu.standard}: sustained {sustained:.0f} W, transient ~{transient:.0f} W",
            "within rating and excursion tolerance",
            "nothing to do",
        )

    # ---- RAM
    vram = sum(g.memory_gib for _, g in units)
    need_ram = vram + build.offload_gib
    if build.ram_gib < need_ram:
        add(
            "warning",
            "ram",
            f"{build.ram_gib:g} GiB RAM < {need_ram:.0f} GiB"
            f" ({vram:.0f} GiB VRAM{f' + {build.offload_gib:g} GiB offload' if build.offload_gib else ''})",
            "loading checkpoints, data-loader workers and research code need more host RAM than VRAM;"
            " offload (ZeRO/device_map) lives in RAM",
            f"fit at least {2 ** math.ceil(math.log2(max(need_ram, 1))):.0f} GiB"
            " (two large DIMMs keep dual-channel bandwidth)",
        )
    else:
        add(
            "ok",
            "ram",
            f"{build.ram_gib:g} GiB RAM ≥ {need_ram:.0f} GiB needed",
            "RAM ≥ VRAM (+ offload)",
            "nothing to do",
        )

    # ---- PCIe lanes and slots
    if build.motherboard is not None:
        slots = sorted(build.motherboard.slots, key=lambda s: -s.lanes)
        if len(slots) < n:
            add(
                "error",
                "pcie",
                f"{n} GPUs but {len(slots)} slots",
                "each card needs its own slot",
                "use a workstation/HEDT board or PCIe risers (x8+ recommended)",
            )
        used = sorted(slots[:n], key=lambda s: s.position)
        cpu_lanes = sum(s.lanes for s in used if not s.chipset)
        if cpu_lanes > build.cpu.pcie_lanes:
            add(
                "error",
                "pcie",
                f"GPU slots need {cpu_lanes} CPU lanes, CPU has {build.cpu.pcie_lanes}",
                "slots share lanes: the board will drop some to lower widths or disable them",
                "check the board manual's lane table; consumer CPUs give x8/x8 for two GPUs",
            )
        for s in used:
            if s.lanes < 4 or (s.chipset and n > 1):
                add(
                    "warning",
                    "pcie",
                    f"GPU in slot {s.position} gets x{s.lanes}{' via the chipset' if s.chipset else ''}",
                    f"~{s.lanes * 2 ** (s.gen - 3):.0f} GB/s per direction: model loading is slow"
                    " and multi-GPU "
                    "all-reduce/tensor parallel stalls (inference with layer split is fine)",
                    "use x8/x8 CPU slots (two GPUs) or a workstation board for 3-4 GPUs",
                )
        if n > 2 and all(s.lanes <= 8 for s in used) and build.cpu.pcie_lanes < 48:
            add(
                "warning",
                "pcie",
                f"{n} GPUs on a consumer platform ({build.cpu.pcie_lanes} CPU lanes)",
                "beyond two cards consumer boards need risers and bifurcation; bandwidth per card drops",
                "a Threadripper/Xeon W/EPYC platform gives x16 to each of 4 GPUs",
            )
        # spacing: each card occupies ceil(slots) positions; a gap of ≥1 slot helps air-cooled cards breathe
        for i, ((b, g), s) in enumerate(zip(units, used, strict=False)):
            width = math.ceil(b.slots or g.slots or 2)
            if i + 1 < len(used):
                nxt = used[i + 1].position
                if s.position + width > nxt:
                    add(
                        "error",
                        "spacing",
                        f"{g.id} ({width}-slot) in slot {s.position} covers slot {nxt}",
                        "the next card cannot be installed",
                        "use slots further apart, 2-slot cards, or risers",
                    )
                elif s.position + width == nxt and build.cooling.type == "air":
                    add(
                        "warning",
                        "spacing",
                        f"{g.id} in slot {s.position} has no gap to the card below",
                        "the top card's fans draw hot air off the lower card's backplate: it throttles",
                        "leave one empty slot, use blower/2-slot cards, or `nvidia-smi -pl` both cards",
                    )
            if build.case and build.case.expansion_slots and s.position + width - 1 > build.case.expansion_slots:
                add(
                    "error",
                    "case",
                    f"{g.id} in slot {s.position} needs {s.position + width - 1} case slots",
                    f"the case has {build.case.expansion_slots} expansion slots",
                    "pick a case with 8+ slots or move the card up",
                )
        # NVLink spacing
        if build.nvlink and n == 2 and build.motherboard.nvlink_bridge_slots:
            gap = used[1].position - used[0].position if len(used) > 1 else 0
            if gap != build.motherboard.nvlink_bridge_slots:
                add(
                    "error",
                    "nvlink",
                    f"slots {gap} apart but the bridge spans {build.motherboard.nvlink_bridge_slots}",
                    "NVLink bridges have a fixed spacing (3- or 4-slot for the RTX 3090)",
                    "buy the bridge that matches your slot spacing",
                )
    else:
        if n > 2:
            add(
                "warning",
                "pcie",
                f"{n} GPUs and no motherboard given",
                "consumer boards run two GPUs at x8/x8; more needs a workstation/HEDT board or risers",
                "add a [motherboard] table with slots to check lanes and spacing",
            )

    # ---- NVLink
    kinds = {g.id: g for _, g in units}
    if build.nvlink:
        lacking = [gid for gid, g in kinds.items() if not g.nvlink_gb_s]
        if lacking:
            add(
                "error",
                "nvlink",
                f"NVLink requested but {', '.join(lacking)} has none",
                "among recent GeForce cards only the RTX 3090/3090 Ti have an NVLink connector",
                "drop NVLink (PCIe is enough for data parallel: ~12 GB/s suffices) or use 3090s/A6000s",
            )
    elif n >= 2 and len(kinds) == 1 and next(iter(kinds.values())).nvlink_gb_s and build.use != "inference":
        g = next(iter(kinds.values()))
        add(
            "info",
            "nvlink",
            f"{g.id} supports an NVLink bridge (~{g.nvlink_gb_s:.0f} GB/s per direction)",
            "helps tensor-parallel training; data-parallel and inference gain little",
            "optional: a bridge matching your slot spacing",
        )

    # ---- CPU cores
    need_cores = CORES_PER_GPU * n + 2
    if build.cpu.cores < need_cores and build.use != "inference":
        add(
            "warning",
            "cpu",
            f"{build.cpu.cores} cores for {n} GPU(s): ~{need_cores} wanted",
            f"~{CORES_PER_GPU} data-loader workers per GPU plus the main processes; too few starve the GPUs",
            "a higher-core-count (even older-generation) CPU; prioritise cores over single-thread speed",
        )
    else:
        add(
            "ok",
            "cpu",
            f"{build.cpu.cores} cores for {n} GPU(s)",
            f"~{CORES_PER_GPU} per GPU + 2",
            "nothing to do",
        )

    # ---- storage
    default_rate = {"nvme": 5.0, "sata": 0.55, "hdd": 0.2, "network": 0.1}
    if not build.storage:
        add(
            "info",
            "storage",
            "no storage given",
            "datasets and checkpoints want NVMe (5-7 GB/s on PCIe 4.0)",
            'add [[storage]] type = "nvme"',
        )
    else:
        best = max(s.read_gb_s or default_rate[s.type] for s in build.storage)
        need = build.data_gb_s or (0.5 * n if build.use != "inference" else 0.0)
        if best < need:
            add(
                "warning",
                "storage",
                f"fastest drive ~{best:g} GB/s < ~{need:g} GB/s the data pipeline needs",
                "the GPUs wait on I/O (utilisation < 90%)",
                "put the dataset on NVMe or cache it in RAM",
            )
        else:
            add(
                "ok",
                "storage",
                f"fastest drive ~{best:g} GB/s",
                "enough for the data pipeline",
                "nothing to do",
            )

    # ---- case length
    if build.case and build.case.max_gpu_length_mm:
        for b, g in cards:
            length = b.length_mm or REFERENCE_LENGTH_MM.get(g.id)
            if length is None:
                continue
            if length > build.case.max_gpu_length_mm:
                add(
                    "error",
                    "case",
                    f"{g.id} is ~{length:.0f} mm, case takes {build.case.max_gpu_length_mm:.0f} mm",
                    "the card does not fit (partner cards are often longer than the reference)",
                    "a larger case, or give length_mm for your exact card",
                )

    # ---- cooling and power limits
    total_gpu_w = sum(w for _, w in gpu_w)
    if total_gpu_w >= 600 or any(w >= 350 for _, w in gpu_w):
        sev: Severity = "warning" if (build.cooling.type == "air" and total_gpu_w >= 700) else "info"
        add(
            sev,
            "cooling",
            f"{total_gpu_w:.0f} W of GPU heat ({build.cooling.type} cooling)",
            "sustained training throttles hot cards; the speed/power curve is not linear:"
            " a 3090 limited from 350 W"
            " to 280 W (-20%) kept >95% of training speed (Puget Systems 2020) and ~99% of LLM decode speed",
            "`sudo nvidia-smi -pl 280` (3090) or ~-25% on other cards, run at each boot; good case airflow",
        )
    if any(g.hardware_class == "datacenter" for _, g in units):
        add(
            "warning",
            "cooling",
            "passively cooled datacentre card",
            "it relies on server airflow; in a desktop case it overheats",
            "add a ducted blower fan per card",
        )

    return BuildReport(
        name=build.name,
        ok=not any(x.severity == "error" for x in f),
        gpus=[f"{b.count}× {g.id}" for b, g in cards],
        total_vram_gib=vram,
        sustained_w=sustained,
        transient_w=transient,
        psu_w=build.psu.watts,
        findings=f,
    )
