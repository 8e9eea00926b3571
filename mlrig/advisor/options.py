"""Enumeration: every buy/rent option the price book allows, priced as the whole machine it would be.

A buy option is n cards plus the platform that can carry them (desktop for one or two, workstation for
three or four), with the RAM and PSU its own build check asks for added to the price, so the build it
proposes is the build it priced. `--have`/`--have-pc` take what the user owns off the bill. Unified-memory
machines (Mac, DGX Spark, Ryzen AI Max) are single systems; cloud instances come in the sizes the book
lists (per-GPU pods in 1, 2, 4 and 8). Pure: all inputs are arguments.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from mlrig.advisor.build import (
    UNKNOWN_GPU_TDP_W,
    Build,
    BuildGpu,
    Cooling,
    Cpu,
    Motherboard,
    Psu,
    Slot,
    psu_share,
    recommended_psu_w,
)
from mlrig.advisor.cost import PurchaseItem
from mlrig.advisor.prices import PlatformPrice, PriceBook
from mlrig.catalog.gpus import GPU
from mlrig.errors import MlrigError

Resolve = Callable[[str], GPU]
UNIFIED_CLASSES = ("apple",)
UNIFIED_IDS = ("dgx-spark", "jetson-agx-orin-64gb")
Category = Literal["gpu", "multi-gpu", "workstation", "datacenter", "apple", "system", "cloud", "owned"]


class Ownership(BaseModel):
    """What the user already has: cards by catalog id, and a PC that takes one GPU (`--have-pc`)."""

    gpus: dict[str, int] = Field(default_factory=dict)
    pc: bool = False
    pc_ram_gib: float = Field(32.0, gt=0, le=65536)


class OptionFilter(BaseModel):
    local_only: bool = False
    cloud_only: bool = False
    max_gpus: int | None = Field(None, ge=1)
    max_power_w: float | None = Field(None, gt=0)
    no_used: bool = False
    gpu_ids: list[str] | None = None  # only these catalog GPUs (`recommend --gpu`)
    gpu_power_fraction: float = Field(0.8, gt=0, le=1.0)


class Candidate(BaseModel):
    name: str
    kind: Literal["buy", "rent"]
    category: Category
    gpu_id: str
    gpus: int
    owned_gpus: int = 0
    upfront_usd: float = 0.0
    usd_per_hour: float = 0.0
    spot: bool = False
    used: bool = False
    marketplace: bool = False
    items: list[PurchaseItem] = Field(default_factory=list)
    peak_power_w: float = 0.0
    busy_power_w: float = 0.0
    idle_power_w: float = 0.0
    price_keys: list[str] = Field(default_factory=list)
    host_ram_gib: float | None = None  # None: unified memory, or not limiting (cloud instances)
    unified: bool = False
    build: Build | None = None  # the machine proposed and priced (new platforms only)
    notes: list[str] = Field(default_factory=list)


def is_unified(g: GPU) -> bool:
    """One memory pool for CPU and GPU (Apple silicon, GB10, Jetson, Strix Halo)."""
    return g.hardware_class in UNIFIED_CLASSES or g.id in UNIFIED_IDS or "ryzen ai max" in g.name.lower()


class PlatformChoice(BaseModel):
    key: str
    price_usd: float
    ram_gib: float
    psu_w: float
    platform: PlatformPrice
    upgrades: list[str] = Field(default_factory=list)


def choose_platform(book: PriceBook, g: GPU, n: int) -> PlatformChoice | None:
    """The cheapest platform for n × g once its RAM and PSU meet the build rules: RAM ≥ total VRAM
    (rounded up to a power of two; osmarks.net seed: "more CPU RAM than VRAM") and, per PSU unit, the
    ATX 3.x rating `recommended_psu_w` gives for the GPUs on it (mlrig.advisor.build)."""
    a = book.assumptions
    tdp = g.tdp_w or UNKNOWN_GPU_TDP_W
    vram = g.memory_gib * n
    best: PlatformChoice | None = None
    for key, p in book.platforms.items():
        if p.max_gpus < n:
            continue
        ram = max(p.ram_gib, float(2 ** math.ceil(math.log2(max(vram, 1.0)))))
        need_psu = recommended_psu_w(psu_share([(g, tdp)] * n, p.psu_count), p.cpu_tdp_w, atx3=True)
        psu = max(p.psu_w, need_psu)
        price = p.price_usd + (ram - p.ram_gib) * a.ram_usd_per_gib + (psu - p.psu_w) * a.psu_usd_per_w * p.psu_count
        ups = []
        if ram > p.ram_gib:
            ups.append(f"RAM {p.ram_gib:g} -> {ram:g} GiB (+${(ram - p.ram_gib) * a.ram_usd_per_gib:,.0f})")
        if psu > p.psu_w:
            ups.append(f"PSU {p.psu_w:.0f} -> {psu:.0f} W (+${(psu - p.psu_w) * a.psu_usd_per_w * p.psu_count:,.0f})")
        c = PlatformChoice(key=key, price_usd=price, ram_gib=ram, psu_w=psu, platform=p, upgrades=ups)
        if best is None or c.price_usd < best.price_usd:
            best = c
    return best


def proposed_build(choice: PlatformChoice, g: GPU, n: int) -> Build:
    """The machine `choice` describes, with n × g: the parts named in the price book plus the upgrades
    that were priced in. Cards in a case sit one empty slot apart; on an open frame they hang on risers."""
    p = choice.platform
    width = math.ceil(g.slots or 2)
    lanes = (p.slot_lanes + [p.slot_lanes[-1]] * n)[:n]
    step = 2 if p.risers else width + 1  # on risers the board's slot spacing does not matter
    positions = [1 + i * step for i in range(n)]
    return Build(
        name=f"{n}× {g.id} on {choice.key}",
        gpus=[BuildGpu(name=g.id, count=n)],
        psu=Psu(watts=choice.psu_w, standard="ATX 3.1", count=p.psu_count),
        ram_gib=choice.ram_gib,
        cpu=Cpu(name=p.cpu, cores=p.cpu_cores, pcie_lanes=p.cpu_pcie_lanes, tdp_w=p.cpu_tdp_w),
        motherboard=Motherboard(name=p.description, slots=[
            Slot(lanes=lane, position=pos, riser=p.risers) for lane, pos in zip(lanes, positions, strict=True)]),
        cooling=Cooling(type="open-frame" if p.frame == "open-frame" else "air"),
        risers=p.risers,
    )


def _counts(g: GPU) -> list[int]:
    return [1, 2, 3, 4] if g.hardware_class in ("geforce", "amd", "intel") else [1, 2, 4]


def _category(g: GPU, n: int) -> Category:
    if g.hardware_class == "workstation":
        return "workstation"
    if g.hardware_class == "datacenter":
        return "datacenter"
    return "multi-gpu" if n > 1 else "gpu"


def enumerate_candidates(
    book: PriceBook, resolve: Resolve, flt: OptionFilter, own: Ownership | None = None
) -> tuple[list[tuple[Candidate, GPU]], list[str]]:
    """All buy/rent options the price book allows under the hard filters (used, local, GPUs, power, --gpu),
    and warnings about entries that could not be used."""
    own = own or Ownership()
    out: list[tuple[Candidate, GPU]] = []
    warnings: list[str] = []

    def gpu_of(name: str, key: str, catalog_pending: bool) -> GPU | None:
        """The catalog GPU a price entry names; entries for GPUs the catalog does not list yet
        (`catalog_pending`) are skipped quietly here and listed by `mlrig prices`."""
        try:
            return resolve(name)
        except MlrigError as exc:
            if not catalog_pending:
                warnings.append(f"price entry {key}: {exc}; skipped")
            return None

    def wanted(g: GPU, n: int) -> bool:
        if flt.gpu_ids is not None and g.id not in flt.gpu_ids:
            return False
        return flt.max_gpus is None or n <= flt.max_gpus

    if not flt.cloud_only:
        out += _owned_options(book, resolve, flt, own, wanted)
        for key, p in book.gpus.items():
            if not p.buyable or (flt.no_used and p.condition == "used"):
                continue
            g = gpu_of(p.gpu, key, p.catalog_pending)
            if g is None:
                continue
            for n in _counts(g):
                c = _buy_gpus(book, flt, own, key, g, n)
                if c is not None and wanted(g, n):
                    out.append((c, g))
        for key, s in book.systems.items():
            g = gpu_of(s.gpu, key, s.catalog_pending)
            if g is None or not wanted(g, 1) or (flt.max_power_w is not None and s.power_w > flt.max_power_w):
                continue
            a = book.assumptions
            out.append((Candidate(
                name=key, kind="buy", category="apple" if g.hardware_class == "apple" else "system",
                gpu_id=g.id, gpus=1, upfront_usd=s.price_usd,
                items=[PurchaseItem(name=key, price_usd=s.price_usd, annual_decline=a.resale_decline_new_per_year)],
                peak_power_w=s.power_w, busy_power_w=s.power_w * flt.gpu_power_fraction, idle_power_w=s.idle_w,
                price_keys=[key], unified=is_unified(g)), g))
    if not flt.local_only:
        for key, cl in book.clouds.items():
            g = gpu_of(cl.gpu, key, cl.catalog_pending)
            if g is None:
                continue
            counts = [n for n in (1, 2, 4, 8) if n <= cl.max_count] if cl.per_gpu else [cl.gpu_count]
            for n in counts:
                if not wanted(g, n):
                    continue
                rate_n = cl.on_demand_usd_h * (n if cl.per_gpu else 1)
                rates = [(False, rate_n)]
                if cl.spot_usd_h is not None:
                    rates.append((True, cl.spot_usd_h * (n if cl.per_gpu else 1)))
                for spot, rate in rates:
                    size = f" ×{n}" if cl.per_gpu and n > 1 else ""
                    out.append((Candidate(
                        name=f"{cl.provider} {cl.instance}{size}{' (spot)' if spot else ''}", kind="rent",
                        category="cloud", gpu_id=g.id, gpus=n, usd_per_hour=rate, spot=spot,
                        marketplace=cl.marketplace, price_keys=[key], host_ram_gib=cl.ram_gib_per_gpu * n,
                        unified=is_unified(g)), g))
    return out, warnings


def _buy_gpus(book: PriceBook, flt: OptionFilter, own: Ownership, key: str, g: GPU, n: int) -> Candidate | None:
    """n × g bought (minus the cards owned), on the cheapest platform that carries them."""
    a = book.assumptions
    p = book.gpus[key]
    have = own.gpus.get(g.id, 0)
    if n <= have:
        return None  # covered by the owned option
    tdp = g.tdp_w or UNKNOWN_GPU_TDP_W
    peak = n * tdp + a.system_overhead_w
    if flt.max_power_w is not None and peak > flt.max_power_w:
        return None
    buy_n = n - have
    decline = a.resale_decline_used_per_year if p.condition == "used" else a.resale_decline_new_per_year
    cond = " (used)" if p.condition == "used" else ""
    items = [PurchaseItem(name=f"{buy_n}× {g.id}{cond}", price_usd=buy_n * p.price_usd, annual_decline=decline)]
    keys = [key]
    notes: list[str] = []
    build = None
    # the owned PC takes max(owned cards, 1) GPUs; its slots are taken by the cards already in it, so another
    # kind of card needs its own platform (swapping them out would hinge on selling them, which is not priced)
    occupied = sum(own.gpus.values()) - have
    holds = max(have, 1) if (own.pc or have) and not occupied else 0
    if n <= holds:
        ram: float | None = own.pc_ram_gib
        plat_name = "your PC"
        need = recommended_psu_w([(g, tdp)] * n, 125, atx3=True)
        notes.append(f"your PC: needs ≥ {need:,.0f} W ATX 3.x PSU and {g.memory_gib * n:.0f}+ GiB RAM for this;"
                     " check it with `mlrig build check`")
    else:
        choice = choose_platform(book, g, n)
        if choice is None:
            return None
        items.append(PurchaseItem(name=choice.key, price_usd=choice.price_usd,
                                  annual_decline=a.resale_decline_new_per_year))
        keys.append(choice.key)
        ram = choice.ram_gib
        plat_name = choice.key
        build = proposed_build(choice, g, n)
        notes += [f"priced upgrade: {u}" for u in choice.upgrades]
        if holds:
            notes.append(f"your PC takes {holds} GPU{'s' if holds > 1 else ''}: {n} need a new {choice.key} platform")
    owned = f"your {have}× {g.id} + " if have else ""
    # a PC the user owns is on anyway: only the cards' idle draw is added by this purchase
    idle = n * a.idle_gpu_w + (0.0 if build is None else a.idle_system_w)
    return Candidate(
        name=f"{owned}{buy_n}× {g.id}{cond} + {plat_name}", kind="buy", category=_category(g, n), gpu_id=g.id,
        gpus=n, owned_gpus=have, used=p.condition == "used", upfront_usd=sum(i.price_usd for i in items),
        items=items, peak_power_w=peak, busy_power_w=n * tdp * flt.gpu_power_fraction + a.system_overhead_w,
        idle_power_w=idle, price_keys=keys, host_ram_gib=ram, build=build,
        notes=notes)


def _owned_options(book: PriceBook, resolve: Resolve, flt: OptionFilter, own: Ownership,
                   wanted: Callable[[GPU, int], bool]) -> list[tuple[Candidate, GPU]]:
    """What the user already has, at no purchase cost: the baseline every purchase must beat."""
    a = book.assumptions
    out = []
    for gid, n in own.gpus.items():
        g = resolve(gid)
        if not wanted(g, n):
            continue
        unified = is_unified(g)
        tdp = g.tdp_w or (100.0 if unified else UNKNOWN_GPU_TDP_W)
        overhead = 0.0 if unified else a.system_overhead_w
        out.append((Candidate(
            name=f"your {n}× {g.id}", kind="buy", category="owned", gpu_id=g.id, gpus=n, owned_gpus=n,
            peak_power_w=n * tdp + overhead, busy_power_w=n * tdp * flt.gpu_power_fraction + overhead,
            idle_power_w=(10.0 if unified else n * a.idle_gpu_w),
            host_ram_gib=None if unified else max(own.pc_ram_gib, 0.0) or None, unified=unified,
            notes=["already owned: only power and upkeep are counted (selling it is not)"]), g))
    return out
