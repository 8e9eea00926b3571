"""Ranking: order the priced options by the objective asked, mark the cost-vs-speed Pareto front, and
explain every option in numbers - absolute speeds with their bands, what it costs, what its build needs,
and the seeds' traps as warnings. Also the summary: the answer, buy vs rent, and where the speed model's
uncertainty could change it.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from mlrig.advisor.build import Build, Finding, check_build
from mlrig.advisor.cost import PurchaseItem
from mlrig.catalog.gpus import GPU

Objective = Literal["tco", "time", "usd-per-mtok"]
STEP_UP_MAX_EXTRA = 0.5  # a step up costs at most half as much again over the horizon
TIGHT_FIT = 0.97  # < 3 % headroom: within the memory estimator's own error band (docs/ACCURACY.md)


class WorkloadOutcome(BaseModel):
    label: str
    task: str
    fits: bool
    per_gpu_gib: float | None = None
    capacity_gib: float | None = None
    decode_tok_s: float | None = None
    decode_range_tok_s: tuple[float, float] | None = None
    ttft_s: float | None = None
    ttft_range_s: tuple[float, float] | None = None
    throughput_tok_s: float | None = None
    train_tokens_per_s: float | None = None
    speed_validated: bool = True  # False: no calibration rows for training on this hardware class
    speed_band: float | None = None  # training: the ± band of the tokens/s, as `plan` shows it
    hours_per_run: float | None = None
    hours_per_run_range: tuple[float, float] | None = None
    usd_per_run: float | None = None
    usd_per_mtok: float | None = None
    meets_floor: bool = True
    floor_borderline: bool = False  # misses a floor on the estimate, meets it within the speed band
    parallel: str = ""  # layout and recipe as the planner ran it
    engine: str | None = None
    note: str | None = None
    hint: str | None = None  # the nearest change that would fit, when it does not
    concurrency: int | None = None  # users served at once, searched for an aggregate --min-throughput

    def speed_text(self) -> str:
        """Absolute speed with its band: '18 tok/s ±20%, TTFT 0.9 s' or '3.1 h/run (1.6-6.2 h, unvalidated)'."""
        if not self.fits:
            return "does not fit"
        if self.task == "inference":
            if self.decode_tok_s is None:
                return "?"
            band = ""
            if self.decode_range_tok_s:
                band = f" ±{(self.decode_range_tok_s[1] / self.decode_tok_s - 1):.0%}"
            ttft = f", TTFT {self.ttft_s:.1f} s" if self.ttft_s is not None else ""
            rate = f"{self.decode_tok_s:.1f}" if self.decode_tok_s < 10 else f"{self.decode_tok_s:.0f}"
            if self.concurrency is not None:
                # a closed loop of that many users (continuous batching, `plan --load concurrency --batch N`):
                # the aggregate counts each request's wait for its first token too, so users x the decode rate
                # would overstate it; the per-user share is given beside the loaded decode rate (1000 / TPOT)
                agg = self.throughput_tok_s or 0.0
                each = agg / self.concurrency
                share = f"{each:.1f}" if each < 10 else f"{each:.0f}"
                who = f"{self.concurrency} user{'s' if self.concurrency != 1 else ''}"
                # the load priced is the fewest users that reach --min-throughput, not the most the option serves
                return (f"{agg:,.0f} tok/s aggregate at a load of {who} (the fewest that reach it; closed loop):"
                        f" {share} each with prefill, {rate}{band} while decoding{ttft} at that load")
            return f"{rate} tok/s{band}{ttft}"
        if self.hours_per_run is not None:
            lo, hi = self.hours_per_run_range or (self.hours_per_run, self.hours_per_run)
            tag = "" if self.speed_validated else ", unvalidated"
            pm = f"±{self.speed_band:.0%}: " if self.speed_band is not None else ""
            if hi < 1.0:
                return f"{self.hours_per_run * 60:.0f} min/run ({pm}{lo * 60:.0f}-{hi * 60:.0f} min{tag})"
            return f"{self.hours_per_run:.1f} h/run ({pm}{lo:.1f}-{hi:.1f} h{tag})"
        return f"{self.train_tokens_per_s or 0:,.0f} tok/s training"


class RankedOption(BaseModel):
    rank: int = 0
    name: str
    kind: Literal["buy", "rent"]
    category: str
    gpu: str
    gpus: int
    owned_gpus: int = 0
    total_gpu_memory_gib: float
    upfront_usd: float
    usd_per_hour: float | None
    cost_per_month_usd: float
    total_cost_usd: float
    total_cost_range_usd: tuple[float, float] | None = None  # at the ends of the speed band
    busy_hours_per_month: float
    running_usd_per_month: float = Field(0.0, description="buy: energy + upkeep per month; rent: the bill")
    resale_usd: float = Field(0.0, description="buy: the resale the total nets at the horizon (cost.local_cost)")
    fits: bool
    feasible: bool
    excluded_reason: str | None = None
    pareto: bool = False
    speed_score: float = 0.0  # internal, for the Pareto front: mean speed relative to the fastest fitting
    speed: str = ""  # absolute, per workload: what the CLI shows
    workloads: list[WorkloadOutcome]
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    build_findings: list[Finding] = Field(default_factory=list)
    price_sources: list[str] = Field(default_factory=list)
    stale_prices: list[str] = Field(default_factory=list)
    # buy options: what is bought (each with its resale decline: used GPUs lose value slower) and the
    # busy/idle wall power, exactly as priced here, so the report's business case prices the same box
    purchase_items: list[PurchaseItem] = Field(default_factory=list)
    busy_power_w: float | None = None
    idle_power_w: float | None = None
    build: Build | None = None
    notes: list[str] = Field(default_factory=list)


def workload_speed(w: WorkloadOutcome) -> float:
    if not w.fits:
        return 0.0
    return float((w.train_tokens_per_s if w.task != "inference" else w.decode_tok_s) or 0.0)


def score(opts: list[RankedOption]) -> None:
    """speed_score = mean over workloads of speed / best speed among fitting options (0 if it does not fit).
    Only used for the Pareto front; the displayed speed is absolute."""
    n = len(opts[0].workloads) if opts else 0
    for i in range(n):
        best = max((workload_speed(o.workloads[i]) for o in opts), default=0.0)
        for o in opts:
            s = workload_speed(o.workloads[i])
            o.speed_score += (s / best if best > 0 else (1.0 if o.workloads[i].fits else 0.0)) / n


def _objective_key(o: RankedOption, objective: Objective) -> tuple[float, ...]:
    if objective == "time":
        train_h = sum(w.hours_per_run or 0.0 for w in o.workloads if w.task != "inference")
        infer_s = sum(
            1000.0 / w.decode_tok_s if w.decode_tok_s else math.inf for w in o.workloads if w.task == "inference"
        )
        return (train_h, infer_s, o.total_cost_usd)
    if objective == "usd-per-mtok":
        vals = [w.usd_per_mtok if w.usd_per_mtok is not None else math.inf
                for w in o.workloads if w.task == "inference"]
        return (sum(vals) / len(vals) if vals else math.inf, o.total_cost_usd)
    return (float(unvalidated_training(o)), o.total_cost_usd, -o.speed_score)


def unvalidated_training(o: RankedOption) -> bool:
    """Whether a training workload's speed on this option is a guess: no published run of its method on
    the option's hardware class checks it (`evaluation.speed_band`: the band `plan` shows). The 'tco' objective
    ranks such options after every option whose training speed is validated: a total cost compares
    options doing the same work only if each does it in the time stated, and for these the time is not
    known. Without this, a Jetson AGX Orin dev kit (LPDDR5 at 204.8 GB/s, 42.5 TFLOPS derived, no published
    training run) came first for an 8B LoRA fine-tune on its 10 W idle draw alone: $1,253 over 3 years at
    47 h/run against a used RTX 3090 desktop's $1,498 at 14 h/run (validated, 12.5-16.4 h)."""
    return any(w.task != "inference" and w.fits and not w.speed_validated for w in o.workloads)


def sort_options(opts: list[RankedOption], objective: Objective) -> None:
    opts.sort(key=lambda o: (not o.feasible, _objective_key(o, objective), o.name))
    for i, o in enumerate(opts, 1):
        o.rank = i


def mark_pareto(opts: list[RankedOption]) -> None:
    """Pareto front on (total cost ↓, speed score ↑) among feasible options."""
    f = [o for o in opts if o.feasible]
    for o in f:
        o.pareto = not any(
            (p.total_cost_usd <= o.total_cost_usd and p.speed_score >= o.speed_score)
            and (p.total_cost_usd < o.total_cost_usd or p.speed_score > o.speed_score)
            for p in f
        )


# ------------------------------------------------------------------------------------------- explain


def explain(o: RankedOption, all_opts: list[RankedOption], g: GPU, ref_4090_usd: float | None,
            any_training: bool) -> None:
    """Plain-language reasons grounded in the numbers, and the seeds' traps as warnings."""
    for w in o.workloads:
        if w.per_gpu_gib is not None and w.capacity_gib is not None:
            verb = "fits" if w.fits else "does NOT fit"
            how = f", {w.parallel}" if w.parallel else ""
            speed = f"; {w.speed_text()}" if w.fits else (f"; {w.hint}" if w.hint else "")
            o.reasons.append(f"{w.label}: {verb} ({w.per_gpu_gib:.1f} of {w.capacity_gib:.1f} GiB per GPU{how}){speed}")
        elif w.note:
            o.reasons.append(f"{w.label}: {w.note}")
    if o.kind == "buy":
        o.reasons.append(
            f"${o.upfront_usd:,.0f} up front; ${o.cost_per_month_usd:,.0f}/month over the horizon"
            f" incl. power (busy and idle) and resale ({o.busy_hours_per_month:,.0f} busy h/month)")
    else:
        o.reasons.append(
            f"${o.usd_per_hour:,.2f}/h × {o.busy_hours_per_month:,.0f} busy h/month ="
            f" ${o.cost_per_month_usd:,.0f}/month, nothing up front")
    _same_vram(o, all_opts)
    if o.build is not None:
        b = o.build
        assert b.cpu is not None
        units = f"{b.psu.count}× " if b.psu.count > 1 else ""
        board = b.motherboard.name if b.motherboard is not None else ""
        o.reasons.append(
            f"build as priced: {units}{b.psu.watts:,.0f} W {b.psu.standard} PSU, {b.ram_gib:g} GiB RAM,"
            f" {b.cpu.name} ({b.cpu.cores} cores, {b.cpu.pcie_lanes} lanes), {board}"
            + (", open frame on risers" if b.risers else "") + " - check it with `mlrig build check`")
        report = check_build(b, resolve=lambda _name: g)
        o.build_findings = [x for x in report.findings if x.severity in ("error", "warning")]
    o.reasons += o.notes
    _warnings(o, g, ref_4090_usd, any_training)


def _same_vram(o: RankedOption, all_opts: list[RankedOption]) -> None:
    if not (o.feasible and o.kind == "buy"):
        return
    same = [p for p in all_opts if p.feasible and p.kind == "buy" and p is not o and p.category != "owned"
            and abs(p.total_gpu_memory_gib - o.total_gpu_memory_gib) < 1.0 and p.upfront_usd < o.upfront_usd]
    if not same:
        return
    cheap = min(same, key=lambda p: p.upfront_usd)
    ratio = o.upfront_usd / max(cheap.upfront_usd, 1.0)
    rel = [(a.label, workload_speed(a) / workload_speed(b)) for a, b in zip(o.workloads, cheap.workloads, strict=True)
           if workload_speed(a) > 0 and workload_speed(b) > 0]
    per = "; ".join(f"{label} {x:.1f}×" for label, x in rel)
    if any(x > 1.05 for _, x in rel):
        o.reasons.append(
            f"VRAM is the constraint: {cheap.name} has the same {cheap.total_gpu_memory_gib:.0f} GiB"
            f" for {1 / ratio:.0%} of the price; {ratio:.1f}× the money buys this speed relative to it: {per}")
    else:
        o.reasons.append(
            f"dominated: {cheap.name} has the same {cheap.total_gpu_memory_gib:.0f} GiB for"
            f" {1 / ratio:.0%} of the price and is as fast or faster (this option: {per})")


def _warnings(o: RankedOption, g: GPU, ref_4090_usd: float | None, any_training: bool) -> None:
    for w in o.workloads:
        if w.fits and w.per_gpu_gib is not None and w.capacity_gib and w.per_gpu_gib > TIGHT_FIT * w.capacity_gib:
            o.warnings.append(
                f"{w.label}: tight fit ({w.per_gpu_gib:.1f} of {w.capacity_gib:.1f} GiB per GPU); a longer"
                " sequence, bigger batch or another process on the GPU will not fit")
        if w.fits and w.task != "inference" and not w.speed_validated:
            o.warnings.append(
                f"{w.label}: training speed of this method on {g.hardware_class} hardware is not validated (fewer"
                " than 5 published runs in its scope: `mlrig validate`); run time shown with the band `plan` gives it"
                + (f" (±{w.speed_band:.0%})" if w.speed_band is not None else ""))
    arch = (g.architecture or "").lower()
    if any(a in arch for a in ("kepler", "maxwell", "pascal")):
        o.warnings.append(f"{g.id}: old datacentre card - cheap VRAM but slow: no tensor cores, FP16 unusable"
                          " or absent, passive cooling for server airflow, driver support ending")
    if g.hardware_class == "workstation" and o.kind == "buy" and o.purchase_items and ref_4090_usd:
        unit = o.purchase_items[0].price_usd / max(1, o.gpus - o.owned_gpus)
        o.warnings.append(f"workstation card at {unit / ref_4090_usd:.1f}× an RTX 4090's price: more VRAM, but"
                          " GDDR bandwidth and a power-limited cooler; consumer cards give more speed per dollar")
    if g.hardware_class in ("amd", "intel"):
        o.warnings.append(f"{g.vendor}: ROCm/oneAPI support is narrower than CUDA (Flash-Attention and many"
                          " kernels are CUDA-first); budget time for driver work")
    if g.hardware_class == "apple" and any_training:
        o.warnings.append("Apple Silicon: good for memory-bound inference, much slower than CUDA GPUs for"
                          " training (MPS backend, fewer kernels)")
    if o.kind == "buy" and o.gpus > 2 and o.category != "owned":
        o.warnings.append(f"{o.gpus} GPUs: beyond two cards consumer boards run out of lanes - needs a"
                          " workstation board, risers, two PSUs and often its own circuit; multi-GPU consumer"
                          " setups are fragile (seeds)")
    if "(used)" in o.name:
        o.warnings.append("used: no warranty - test under load (memory errors, fans, thermal pads) before paying")
    if "(spot)" in o.name:
        o.warnings.append("spot: may be interrupted at short notice - checkpoint often; cost includes the"
                          " interruption overhead")
    if "marketplace" in o.name:
        o.warnings.append("marketplace host: reliability and bandwidth vary by listing; the price moves daily")


# ------------------------------------------------------------------------------------------- summary


def summary(feasible: list[RankedOption], objective: Objective, years: float) -> list[str]:
    if not feasible:
        return ["no option meets every constraint (see excluded_reason on each option)"]
    best = feasible[0]
    mine = next((o for o in feasible if o.category == "owned"), None)
    lines = [] if mine is None else [
        f"you already have what this needs: {mine.name} ({mine.speed}) for ${mine.cost_per_month_usd:,.0f}/month"
        " in power and upkeep; anything below is bought for speed or headroom"]
    lines += [f"best for objective '{objective}': {best.name} - {best.speed} - ${best.total_cost_usd:,.0f} over"
             f" {years:g} years (${best.cost_per_month_usd:,.0f}/month, ${best.upfront_usd:,.0f} up front)"]
    cheaper_guess = [o for o in feasible if objective == "tco" and unvalidated_training(o)
                     and not unvalidated_training(best) and o.total_cost_usd < best.total_cost_usd]
    if cheaper_guess:
        g = min(cheaper_guess, key=lambda o: o.total_cost_usd)
        lines.append(f"ranked after it: {g.name} (${g.total_cost_usd:,.0f} over {years:g} years, {g.speed}) costs"
                     " less, but no published run validates its training speed, so it is listed after"
                     " the options whose speed is validated")
    # The step up: among the faster Pareto options that cost at most STEP_UP_MAX_EXTRA more, the one that
    # buys the most extra speed per extra dollar (the incremental cost-effectiveness ratio of a
    # cost-benefit analysis), not merely the next cheapest; the cheapest faster one when none is that close.
    faster_options = [o for o in feasible if o.pareto and o.speed_score > 1.2 * best.speed_score]
    near = [o for o in faster_options if o.total_cost_usd <= (1 + STEP_UP_MAX_EXTRA) * best.total_cost_usd]
    faster = (max(near, key=lambda o: (o.speed_score - best.speed_score)
                  / max(o.total_cost_usd - best.total_cost_usd, 1.0)) if near
              else min(faster_options, default=None, key=lambda o: o.total_cost_usd))
    if faster is not None and best.speed_score > 0 and objective == "tco" and not _fast_enough(best):
        extra = faster.total_cost_usd - best.total_cost_usd
        why = (f"the most added speed per added dollar within +{STEP_UP_MAX_EXTRA:.0%}" if near else
               f"the cheapest faster option (none is within +{STEP_UP_MAX_EXTRA:.0%})")
        lines.append(f"step up: {faster.name} ({faster.speed}) for ${extra:,.0f} more over {years:g} years"
                     f" (+{extra / max(best.total_cost_usd, 1.0):.0%}): "
                     f"{faster.speed_score / best.speed_score:.1f}× the speed, {why}")
    buy = next((o for o in feasible if o.kind == "buy" and o.category != "owned"), None)
    rent = next((o for o in feasible if o.kind == "rent"), None)
    if buy and rent:
        cheaper = "buying" if buy.total_cost_usd < rent.total_cost_usd else "renting"
        # when buying wins only by the resale its total nets, the payback line below (resale ignored) reads as the
        # opposite answer unless this one says so
        resale_usd = buy.resale_usd
        by_resale = (f", but only by reselling it for ~${resale_usd:,.0f} after {years:g} years (an estimated"
                     " decline; without it renting is cheaper)"
                     if cheaper == "buying" and buy.total_cost_usd + resale_usd >= rent.total_cost_usd else "")
        lines.append(f"best buy {buy.name} ${buy.total_cost_usd:,.0f} vs best rent {rent.name}"
                     f" ${rent.total_cost_usd:,.0f} over {years:g} years: {cheaper} is cheaper at this usage"
                     + by_resale)
        saving = rent.cost_per_month_usd - buy.running_usd_per_month
        if saving > 0:
            months = buy.upfront_usd / saving
            when = (f"buying pays for itself after {months:,.1f} months ({months / 12:.1f} years, resale ignored)"
                    if months <= years * 12 else
                    f"buying would take {months / 12:,.1f} years to pay for itself (resale ignored): longer than"
                    f" the {years:g}-year horizon")
            lines.append(
                f"payback: {buy.name} costs ${buy.upfront_usd:,.0f}; renting {rent.name} would cost"
                f" ${rent.cost_per_month_usd:,.0f}/month vs ${buy.running_usd_per_month:,.0f}/month to run it,"
                f" so {when}")
        else:
            lines.append(f"payback: never - renting {rent.name} costs less per month than running {buy.name}")
    front = [o.name for o in feasible if o.pareto]
    lines.append(f"Pareto front (cost vs speed): {', '.join(front[:6])}")
    return lines


def _fast_enough(o: RankedOption) -> bool:
    """No step-up is worth suggesting when every run already takes under an hour and every chat streams at
    3× reading speed (30 tok/s) or more (a judgement call, stated here)."""
    return all((w.hours_per_run is not None and w.hours_per_run < 1.0) if w.task != "inference"
               else (w.decode_tok_s or 0.0) >= 30.0 for w in o.workloads)


def uncertainty(feasible: list[RankedOption], objective: Objective,
                borderline: list[RankedOption] | None = None) -> list[str]:
    """Where the speed model's band could change the answer: an option whose cost range (at the ends of
    its speed band) overlaps the best one's, or a cheaper option excluded by a floor it meets within its
    band - so the answer may flip within the model's own uncertainty."""
    out = []
    if feasible:
        for o in borderline or []:
            # an unvalidated training speed ranks after the validated options whatever its cost (`_objective_key`)
            after = objective == "tco" and unvalidated_training(o) and not unvalidated_training(feasible[0])
            if o.total_cost_usd < feasible[0].total_cost_usd and not after:
                # both costs: the total alone (resale netted) read as a price the price book contradicts
                out.append(f"uncertain: {o.name} (${o.total_cost_usd:,.0f} over the horizon, ${o.upfront_usd:,.0f}"
                           f" up front) would come first if its speed is at the better end of its band:"
                           f" {o.excluded_reason}")
    if objective != "tco" or len(feasible) < 2:
        return out[:3]
    best = feasible[0]
    b_lo, b_hi = best.total_cost_range_usd or (best.total_cost_usd, best.total_cost_usd)
    for o in feasible[1:8]:
        lo, hi = o.total_cost_range_usd or (o.total_cost_usd, o.total_cost_usd)
        if lo < b_hi:  # sorted by central cost, so this can only happen when a band is wide
            unval = any(not w.speed_validated for w in (*best.workloads, *o.workloads) if w.task != "inference")
            why = "training speed here is unvalidated" if unval else "within the speed model's p90 band"
            out.append(f"uncertain: {o.name} could be cheaper than {best.name} - ${lo:,.0f}-{hi:,.0f} vs"
                       f" ${b_lo:,.0f}-{b_hi:,.0f} over the horizon; {why}")
    return out[:3]
