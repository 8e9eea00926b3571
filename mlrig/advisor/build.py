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
- Wall circuits: continuous loads (3 h or more) may use 80% of the breaker rating (US NEC 210.19(A)(1),
  210.20(A)): 1,440 W on 120 V/15 A, 1,920 W on 120 V/20 A; we apply the same 80% to 230 V circuits
  (2,944 W on 16 A) as a conservative estimate. Wall draw = DC load / 0.90 (80 PLUS Gold requires 90%
  efficiency at 50% load on 230 V internal units, 87% at 115 V).
- Several PSUs: the unit that also feeds the board and CPU carries the most; GPUs are split as evenly as
  the count allows. Each card and its riser must hang off one unit (never bridge two units' 12 V rails).
- Risers and open frames: a card on a riser does not sit in the board's slot, so slot spacing and case
  slots do not apply to it. Blower cards exhaust through the bracket and are built to stack, so a card
  directly below one does not starve it (why workstation cards such as the RTX 6000 Ada use blowers).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mlrig.catalog.gpus import GPU
from mlrig.errors import MlrigError

Severity = Literal["error", "warning", "info", "ok"]
GpuResolver = Callable[[str], GPU]

PSU_EFFICIENCY = 0.90  # 80 PLUS Gold at 50% load (see module docstring)
CONTINUOUS_FRACTION = 0.8  # NEC 210.19(A)(1): continuous load ≤ 80% of the circuit rating
MIN_POWER_LIMIT_FRACTION = 0.6  # below ~60% of TDP a power limit costs too much speed to suggest (estimate)
AMPERE_TRANSIENT_FACTOR = 1.7  # 350 W × 1.7 ≈ 600 W for an RTX 3090 (seed: osmarks.net)
OTHER_TRANSIENT_FACTOR = 1.4  # estimate for Ada/Blackwell/datacentre cards
ATX3_EXCURSION_CREDIT = 1.6  # ATX 3.x: 160% of rated power for 10 ms
REST_OF_SYSTEM_W = 75.0  # board, RAM, drives, fans (estimate)
# Data read rate a training box is checked for when the build states none (`data_gb_s`) and no workload gives
# one: 0.5 GB/s per GPU, a rule of thumb with no measured source (an image or video pipeline can read this much;
# a pre-tokenised text stream reads far less: `mlrig plan` gives its own figure, tokens/s x bytes per token,
# which `build suggest --model` passes instead).
TRAINING_READ_GB_S_PER_GPU = 0.5

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
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


Cooler = Literal["axial", "blower", "passive", "liquid"]


class BuildGpu(_In):
    name: str
    count: int = Field(1, ge=1, le=16)
    length_mm: float | None = Field(None, gt=0, le=1000)
    slots: float | None = Field(None, gt=0, le=5)
    power_limit_w: float | None = Field(None, gt=0, le=2000)
    cooler: Cooler | None = Field(None, description="default: from the catalog's form factor")


class Psu(_In):
    watts: float = Field(gt=0, le=5000, description="rating of one unit")
    standard: str = "ATX 2.x"
    count: int = Field(1, ge=1, le=4, description="identical units (dual-PSU builds: 2)")


class Cpu(_In):
    name: str = ""
    cores: int = Field(ge=1, le=1024)
    pcie_lanes: int = Field(ge=1, le=1024, description="CPU lanes available to slots and NVMe")
    tdp_w: float = Field(125, ge=0, le=2000)


class Slot(_In):
    lanes: int = Field(ge=1, le=16, description="electrical width with all slots populated")
    position: int = Field(ge=1, le=12, description="expansion-slot position on the board, 1 = top")
    gen: int = Field(4, ge=1, le=6)
    chipset: bool = False
    riser: bool = Field(False, description="the card sits on a riser cable, away from the board")


class Motherboard(_In):
    name: str = ""
    slots: list[Slot]
    nvlink_bridge_slots: int | None = Field(None, description="bridge spacing you own (3 or 4)")


class Storage(_In):
    type: Literal["nvme", "sata", "hdd", "network"] = "nvme"
    read_gb_s: float | None = Field(None, gt=0, le=1000)
    capacity_tb: float | None = Field(None, gt=0, le=100000)


class Case(_In):
    max_gpu_length_mm: float | None = Field(None, gt=0)
    expansion_slots: int | None = Field(None, ge=1)


class Cooling(_In):
    type: Literal["air", "liquid", "open-frame", "server"] = "air"
    case_fans: int | None = Field(None, ge=0)


class Build(_In):
    name: str = "build"
    use: Literal["training", "inference", "mixed"] = "mixed"
    gpus: list[BuildGpu] = Field(min_length=1, max_length=16)
    psu: Psu
    ram_gib: float = Field(gt=0, le=65536)
    cpu: Cpu
    motherboard: Motherboard | None = None
    storage: list[Storage] = Field(default_factory=list)
    case: Case | None = None
    cooling: Cooling = Field(default_factory=Cooling)
    nvlink: bool = False
    risers: bool = Field(False, description="every GPU on a riser (open frame)")
    circuit: str | None = Field(None, description='wall circuit, e.g. "120V/15A", "230V/16A"')
    offload_gib: float = Field(0, ge=0, le=65536, description="host RAM your workloads offload to (ZeRO/device_map)")
    data_gb_s: float | None = Field(None, gt=0, le=1000, description="data pipeline read rate needed")

    @field_validator("circuit")
    @classmethod
    def _circuit(cls, v: str | None) -> str | None:
        if v is not None:
            parse_circuit(v)
        return v


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
    psu_w: float  # all units together
    wall_w: float = 0.0  # sustained draw at the wall
    recommended_psu_w: float = 0.0  # per unit, ATX 3.x, for this build's GPUs as configured
    findings: list[Finding]


def parse_circuit(text: str) -> tuple[float, float]:
    """"120V/15A" -> (120, 15). Raises ValueError with the expected form."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*V\s*/\s*(\d+(?:\.\d+)?)\s*A\s*", text, re.I)
    if not m or not (90 <= float(m.group(1)) <= 480) or not (1 <= float(m.group(2)) <= 100):
        raise ValueError(f'circuit must look like "120V/15A" or "230V/16A", got {text!r}')
    return float(m.group(1)), float(m.group(2))


def continuous_limit_w(volts: float, amps: float) -> float:
    """What a circuit may carry continuously: 80% of its rating (NEC 210.19(A)(1))."""
    return volts * amps * CONTINUOUS_FRACTION


def cooler_of(b: BuildGpu, g: GPU) -> Cooler:
    """The card's cooler: as given, else read from the catalog's form factor (blower / passive)."""
    if b.cooler is not None:
        return b.cooler
    ff = (g.form_factor or "").lower()
    if "blower" in ff:
        return "blower"
    if "passive" in ff or "sxm" in ff or "oam" in ff:
        return "passive"
    return "axial"


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


def psu_share(gpu_w: list[tuple[GPU, float]], units: int) -> list[tuple[GPU, float]]:
    """The GPUs on the PSU that also feeds the board: the largest even share (ceil(n / units))."""
    k = math.ceil(len(gpu_w) / units) if gpu_w else 0
    return sorted(gpu_w, key=lambda x: -x[1])[:k]


def power_limit_for(build: Build, units: list[tuple[BuildGpu, GPU]], psus: int) -> float | None:
    """The highest per-GPU `nvidia-smi -pl` (watts, same fraction of TDP on every card, rounded down to
    5 W) at which this build's own PSU passes the PSU check without warning: sustained ≤ 80% of the
    rating and transients within its excursion capacity. None when even 60% of TDP is not enough."""
    atx3 = build.psu.standard.upper().replace(" ", "").startswith("ATX3")
    capacity = build.psu.watts * (ATX3_EXCURSION_CREDIT if atx3 else 1.0)
    full = [(g, g.tdp_w or UNKNOWN_GPU_TDP_W) for _, g in units]
    share = psu_share(full, psus)
    base = build.cpu.tdp_w + REST_OF_SYSTEM_W
    tdp_sum = sum(w for _, w in share)
    spike_sum = sum(w * transient_factor(g) for g, w in share)
    if tdp_sum <= 0:
        return None
    frac = min((0.8 * build.psu.watts - base) / tdp_sum, (capacity - base) / spike_sum, 1.0)
    if frac < MIN_POWER_LIMIT_FRACTION:
        return None
    top = max(w for _, w in full)
    if frac >= 1.0:
        return None  # the PSU is enough at stock power
    return math.floor(top * frac / 5.0) * 5.0


def _circuit_finding(build: Build, wall_w: float, add: Callable[..., None]) -> None:
    """Wall circuit: the sustained wall draw against the circuit's continuous limit (80% of rating)."""
    if build.circuit is not None:
        volts, amps = parse_circuit(build.circuit)
        lim = continuous_limit_w(volts, amps)
        if wall_w > lim:
            add("error", "circuit",
                f"~{wall_w:,.0f} W at the wall > {lim:,.0f} W continuous on a {build.circuit} circuit",
                "continuous loads may use 80% of a circuit's rating (NEC 210.19(A)(1)); the breaker trips"
                " after minutes of training",
                "a dedicated higher-rated circuit (120 V/20 A: 1,920 W; 240 V), or power-limit the GPUs")
        else:
            add("ok", "circuit", f"~{wall_w:,.0f} W at the wall ≤ {lim:,.0f} W continuous on {build.circuit}",
                "within 80% of the circuit rating", "nothing to do; keep other loads off that circuit")
        return
    us = continuous_limit_w(120, 15)
    if wall_w > us:
        add("warning", "circuit",
            f"~{wall_w:,.0f} W at the wall: more than a US 120 V/15 A circuit carries continuously ({us:,.0f} W)",
            "continuous loads may use 80% of a circuit's rating (NEC 210.19(A)(1)); a 230 V/16 A circuit"
            f" allows ~{continuous_limit_w(230, 16):,.0f} W",
            'a 120 V/20 A or 240 V circuit for this box alone; set circuit = "120V/20A" (or yours) to check it')


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

    # ---- power (per PSU: the unit that also feeds the board carries CPU + rest + its share of GPUs)
    gpu_w = [(g, b.power_limit_w or g.tdp_w or UNKNOWN_GPU_TDP_W) for b, g in units]
    sustained = sum(w for _, w in gpu_w) + build.cpu.tdp_w + REST_OF_SYSTEM_W
    transient = sum(w * transient_factor(g) for g, w in gpu_w) + build.cpu.tdp_w + REST_OF_SYSTEM_W
    atx3 = build.psu.standard.upper().replace(" ", "").startswith("ATX3")
    units_n = build.psu.count
    share = psu_share(gpu_w, units_n)
    unit_sustained = sum(w for _, w in share) + build.cpu.tdp_w + REST_OF_SYSTEM_W
    unit_transient = sum(w * transient_factor(g) for g, w in share) + build.cpu.tdp_w + REST_OF_SYSTEM_W
    capacity = build.psu.watts * (ATX3_EXCURSION_CREDIT if atx3 else 1.0)
    rec = recommended_psu_w(share, build.cpu.tdp_w, atx3=True)  # what we recommend is always ATX 3.x
    units_txt = f"{units_n}× " if units_n > 1 else ""
    per_unit = " per unit" if units_n > 1 else ""
    fix_psu = (f"{units_txt}{rec:,.0f} W ATX 3.1 PSU{'s' if units_n > 1 else ''}" if units_n > 1
               else f"a {rec:,.0f} W ATX 3.1 PSU") + " (rated for 160% for 10 ms)"
    limit = power_limit_for(build, units, units_n)
    top_tdp = max((g.tdp_w or UNKNOWN_GPU_TDP_W for _, g in units), default=0.0)
    fix_limit = (f", or cap each GPU at `nvidia-smi -pl {limit:.0f}` ({limit / top_tdp - 1:+.0%} power: the highest"
                 " cap at which this PSU carries the load and its spikes)" if limit is not None and top_tdp else "")
    n_psu_findings = len(f)
    spike_note = ", ".join(sorted({f"{g.id} ~{w * transient_factor(g):.0f} W" for g, w in gpu_w}))
    load_note = (f" (the unit feeding the board carries {len(share)} of {n} GPUs)" if units_n > 1 else "")
    if build.psu.watts < unit_sustained:
        add(
            "error",
            "psu",
            f"{build.psu.watts:.0f} W PSU{per_unit} < {unit_sustained:.0f} W sustained load{load_note}",
            "GPUs at their power limit + CPU + rest exceed the rating; the PSU will shut down under load",
            f"fit {fix_psu}{fix_limit}",
        )
    elif capacity < unit_transient:
        add(
            "warning" if atx3 else "error",
            "psu",
            f"transient peak ~{unit_transient:.0f} W{per_unit} exceeds what a {build.psu.watts:.0f} W"
            f" {build.psu.standard} unit rides through ({capacity:.0f} W){load_note}",
            f"millisecond GPU spikes ({spike_note}) trip over-current protection: random reboots under load"
            + ("" if atx3 else "; ATX 2.x units have no specified excursion headroom"),
            f"use {fix_psu}: {rec:,.0f} W × 1.6 = {rec * ATX3_EXCURSION_CREDIT:,.0f} W ≥ {unit_transient:,.0f} W"
            f" peak{fix_limit}",
        )
    elif build.psu.watts < unit_sustained / 0.8:
        add(
            "warning",
            "psu",
            f"PSU runs at {unit_sustained / build.psu.watts:.0%} of its rating sustained{load_note}",
            "above ~80% continuous load efficiency drops and fans/noise rise",
            f"{fix_psu} keeps sustained load at ≤ 80%{fix_limit}",
        )
    else:
        add(
            "ok",
            "psu",
            f"{units_txt}{build.psu.watts:.0f} W {build.psu.standard}: sustained {unit_sustained:.0f} W,"
            f" transient ~{unit_transient:.0f} W{per_unit}",
            "within rating and excursion tolerance"
            + (f" (ATX 3.x: 160% = {capacity:.0f} W for 10 ms)" if atx3 and unit_transient > build.psu.watts else ""),
            "nothing to do",
        )
    # the PSU's cap, when its finding offers one: the cooling advice then names that same cap (one report, one
    # `nvidia-smi -pl` per card), since the deeper cap also cuts the heat
    psu_cap = limit if limit is not None and any(x.check == "psu" and x.severity != "ok"
                                                 for x in f[n_psu_findings:]) else None
    if units_n > 1:
        add(
            "info",
            "psu",
            f"{units_n} PSUs",
            "the units must switch on together, and each card with its riser must draw from one unit only",
            "sync them with the board's dual-PSU header or an add2psu relay; never join two units' 12 V",
        )
    wall = sustained / PSU_EFFICIENCY
    _circuit_finding(build, wall, add)

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
        # spacing: each card occupies ceil(slots) positions; a gap of ≥1 slot helps air-cooled cards breathe.
        # A card on a riser is not in its slot: neither spacing nor case slots apply to it.
        on_riser = [build.risers or s.riser for s in used]
        for i, ((b, g), s) in enumerate(zip(units, used, strict=False)):
            width = math.ceil(b.slots or g.slots or 2)
            if on_riser[i]:
                continue
            nxt_i = next((j for j in range(i + 1, len(used)) if not on_riser[j]), None)
            if nxt_i is not None:
                nxt = used[nxt_i].position
                below_b, below_g = units[nxt_i] if nxt_i < len(units) else (b, g)
                if s.position + width > nxt:
                    add(
                        "error",
                        "spacing",
                        f"{g.id} ({width}-slot) in slot {s.position} covers slot {nxt}",
                        "the next card cannot be installed",
                        "use slots further apart, 2-slot cards, or risers",
                    )
                elif (s.position + width == nxt and build.cooling.type == "air"
                      and cooler_of(b, g) == "axial" and cooler_of(below_b, below_g) != "liquid"):
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
        if any(on_riser):
            gens = sorted({s.gen for s, r in zip(used, on_riser, strict=False) if r})
            add(
                "info",
                "riser",
                f"{sum(on_riser)} GPU(s) on risers (PCIe gen {', '.join(map(str, gens))})",
                "long or unshielded risers cause PCIe link errors that look like driver crashes",
                "use shielded risers rated for the slot's PCIe generation, as short as the frame allows;"
                " if `nvidia-smi -q` shows replay/AER errors, set that slot to gen 3 in the BIOS",
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
        need = build.data_gb_s or (TRAINING_READ_GB_S_PER_GPU * n if build.use != "inference" else 0.0)
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
    coolers = [cooler_of(b, g) for b, g in units]
    if total_gpu_w >= 600 or any(w >= 350 for _, w in gpu_w):
        # Axial cards in a closed case dump their heat into it; blowers exhaust it out of the back and
        # open frames / liquid loops do not recirculate it: only the first is a throttling risk.
        axial_in_case = build.cooling.type == "air" and any(c == "axial" for c in coolers)
        sev: Severity = "warning" if (axial_in_case and total_gpu_w >= 700) else "info"
        limit_w = {g.id: round((g.tdp_w or UNKNOWN_GPU_TDP_W) * 0.8 / 5) * 5 for _, g in units}
        cap_text = "optional -20% power: "
        if psu_cap is not None:  # power_limit_for's fraction of TDP, the same on every card
            limit_w = {g.id: min(limit_w[g.id], math.floor((g.tdp_w or UNKNOWN_GPU_TDP_W) * psu_cap / top_tdp / 5) * 5)
                       for _, g in units}
            cap_text = f"the PSU finding's cap ({psu_cap / top_tdp - 1:+.0%} power) also cuts the heat: "
        add(
            sev,
            "cooling",
            f"{total_gpu_w:.0f} W of GPU heat ({build.cooling.type} cooling"
            + (", blower cards" if all(c == "blower" for c in coolers) else "") + ")",
            "sustained training throttles hot cards; the speed/power curve is not linear:"
            " a 3090 limited from 350 W"
            " to 280 W (-20%) kept >95% of training speed (Puget Systems 2020) and ~99% of LLM decode speed",
            cap_text
            + ", ".join(f"`sudo nvidia-smi -pl {w}` ({gid})" for gid, w in sorted(limit_w.items()))
            + ", run at each boot" + ("; good case airflow" if axial_in_case else ""),
        )
    passive = [g.id for (b, g), c in zip(units, coolers, strict=True) if c == "passive"]
    if passive and build.cooling.type != "server":
        add(
            "warning",
            "cooling",
            f"passively cooled card ({', '.join(sorted(set(passive)))})",
            "it relies on server airflow; in a desktop case or open frame it overheats",
            'add a ducted blower fan per card, or set cooling type = "server" if it sits in a server chassis',
        )

    return BuildReport(
        name=build.name,
        ok=not any(x.severity == "error" for x in f),
        gpus=[f"{b.count}× {g.id}" for b, g in cards],
        total_vram_gib=vram,
        sustained_w=sustained,
        transient_w=transient,
        psu_w=build.psu.watts * build.psu.count,
        wall_w=sustained / PSU_EFFICIENCY,
        recommended_psu_w=recommended_psu_w(psu_share(gpu_w, build.psu.count), build.cpu.tdp_w, atx3=True),
        findings=f,
    )


class BuildSuggestion(BaseModel):
    """`mlrig build suggest`: the parts a machine for N of one GPU needs, each from a rule `check_build`
    applies (module docstring), so the suggested build passes `check_build`'s PSU, RAM, CPU and lane checks."""

    gpus: str
    total_vram_gib: float
    sustained_w: float  # GPUs at TDP + CPU + rest of system
    transient_w: float  # GPUs at TDP × transient factor + CPU + rest
    wall_w: float  # sustained / PSU efficiency
    psu_w: float  # one ATX 3.1 unit: recommended_psu_w
    ram_gib: float  # installed: the next power of two ≥ ram_needed_gib
    ram_needed_gib: float  # max(VRAM + the plan's offload, the plan's host RAM)
    host_ram_gib: float | None  # what the plan's workload keeps in host RAM (None: no workload given)
    cpu_cores: int  # CORES_PER_GPU per GPU + 2 main processes
    cpu_tdp_w: float
    cpu_pcie_lanes: int  # CPU lanes for the GPU slots
    platform: str
    nvlink: str | None  # the catalog's NVLink, when the GPU has it
    storage_gb_s: float  # data-pipeline read rate to provision for (training), GB/s
    storage: str
    circuits: list[str]  # wall circuits whose continuous limit holds the wall draw
    notes: list[str] = []


def _rate(gb_s: float) -> str:
    """A read rate in the unit that keeps it readable: GB/s, MB/s or a token stream's few kB/s."""
    from mlrig.units import GB, read_rate_text

    return read_rate_text(gb_s * GB)


def suggest_build(gpu: GPU, count: int, use: Literal["training", "inference", "mixed"] = "training",
                  host_ram_gib: float | None = None, offload_gib: float = 0.0, checkpoint_gib: float | None = None,
                  weights_gib: float | None = None, data_gb_s: float | None = None,
                  cpu_tdp_w: float = Cpu.model_fields["tdp_w"].default) -> BuildSuggestion:
    """Size a machine for `count` × `gpu` and (optionally) a workload, from the rules `check_build` checks
    (sources in the module docstring): PSU = recommended_psu_w (sustained ≤ 80%, transients within ATX 3.x's
    160% for 10 ms); RAM ≥ VRAM + offload (osmarks.net seed), and at least what the plan keeps in host RAM
    (`host_ram_gib`: loading, offload, pinned buffers), rounded up to a power of two as `check_build`'s fix
    says; CPU cores = CORES_PER_GPU per GPU + 2; lanes: x16 for one GPU, x8/x8 on a consumer board for two
    (osmarks.net seed), x16 each on a ≥ 48-lane workstation platform beyond that (`check_build`'s pcie rule);
    storage: NVMe (5-7 GB/s, DOMAIN.md §3) for the plan's data read rate (`data_gb_s`; without a workload
    TRAINING_READ_GB_S_PER_GPU); wall circuits by NEC 80%."""
    tdp = gpu.tdp_w or UNKNOWN_GPU_TDP_W
    gpu_w = [(gpu, tdp)] * count
    sustained = tdp * count + cpu_tdp_w + REST_OF_SYSTEM_W
    transient = tdp * transient_factor(gpu) * count + cpu_tdp_w + REST_OF_SYSTEM_W
    psu = recommended_psu_w(gpu_w, cpu_tdp_w, atx3=True)
    vram = gpu.memory_gib * count
    need_ram = max(vram + offload_gib, host_ram_gib or 0.0)
    ram = float(2 ** math.ceil(math.log2(max(need_ram, 1))))
    cores = CORES_PER_GPU * count + 2  # check_build asks this of training and mixed use
    if count == 1:
        lanes, platform = 16, "any desktop board: one x16 slot"
    elif count == 2:
        lanes, platform = 16, "a consumer board with x8/x8 CPU slots (two GPUs)"
    else:
        lanes = max(48, 16 * count)
        platform = f"a workstation platform (Threadripper/Xeon W/EPYC, ≥ {lanes} CPU lanes): x16 to each GPU"
    need_gb_s = data_gb_s if data_gb_s is not None else (TRAINING_READ_GB_S_PER_GPU * count if use != "inference"
                                                         else 0.0)
    sizes = []
    if weights_gib:
        sizes.append(f"weights {weights_gib:,.0f} GiB")
    if checkpoint_gib:
        sizes.append(f"each resumable checkpoint {checkpoint_gib:,.0f} GiB (trainable weights + optimizer states)")
    storage = (f"NVMe (5-7 GB/s on PCIe 4.0) for datasets and checkpoints; the data pipeline reads "
               f"~{_rate(need_gb_s)}" if need_gb_s else "NVMe (5-7 GB/s on PCIe 4.0) loads weights quickly")
    if sizes:
        storage += "; " + ", ".join(sizes) + " (capacity: keep as many checkpoints as you need, plus the data)"
    wall = sustained / PSU_EFFICIENCY
    circuits = [c for c in ("120V/15A", "120V/20A", "230V/16A") if wall <= continuous_limit_w(*parse_circuit(c))]
    notes = []
    if not circuits:
        notes.append(f"~{wall:,.0f} W at the wall exceeds a 230 V/16 A circuit's continuous limit: split the load "
                     "over circuits or cap the GPUs with `nvidia-smi -pl`")
    nvlink = (f"{gpu.id} supports an NVLink bridge (~{gpu.nvlink_gb_s:.0f} GB/s per direction)"
              if gpu.nvlink_gb_s and count >= 2 else None)
    return BuildSuggestion(gpus=f"{count}× {gpu.id}", total_vram_gib=vram, sustained_w=sustained,
                           transient_w=transient, wall_w=wall, psu_w=psu, ram_gib=ram, ram_needed_gib=need_ram,
                           host_ram_gib=host_ram_gib, cpu_cores=cores, cpu_tdp_w=cpu_tdp_w, cpu_pcie_lanes=lanes,
                           platform=platform, nvlink=nvlink, storage_gb_s=need_gb_s, storage=storage,
                           circuits=circuits, notes=notes)


def as_build(s: BuildSuggestion, gpu: GPU, count: int, offload_gib: float = 0.0,
             use: Literal["training", "inference", "mixed"] = "training") -> Build:
    """The suggestion as a `Build` (one ATX 3.1 PSU, an NVMe drive), for `check_build` to check."""
    return Build(name="suggested", use=use, gpus=[BuildGpu(name=gpu.id, count=count)],
                 psu=Psu(watts=s.psu_w, standard="ATX 3.1"), ram_gib=s.ram_gib,
                 cpu=Cpu(cores=s.cpu_cores, pcie_lanes=s.cpu_pcie_lanes, tdp_w=s.cpu_tdp_w),
                 storage=[Storage(type="nvme")], offload_gib=offload_gib, data_gb_s=s.storage_gb_s or None)
