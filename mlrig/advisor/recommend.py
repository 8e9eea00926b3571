"""`mlrig recommend`: what to buy or rent for a set of workloads, ranked by total cost, time or $/Mtok.

Enumerates single GPUs, 2-4 GPU builds, workstation cards, Apple machines, DGX Spark and cloud
instances from the price book; evaluates every workload on each with an `evaluate(plan, gpu)` callable
(default: mlrig.planner.evaluate), prices each with mlrig.advisor.cost, marks the cost-vs-speed Pareto
front and explains the ranking in numbers. Pure: all inputs are arguments.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from mlrig.advisor.build import (
    UNKNOWN_GPU_TDP_W,
    Build,
    BuildGpu,
    Cooling,
    Cpu,
    Finding,
    Motherboard,
    Psu,
    Slot,
    check_build,
)
from mlrig.advisor.cost import (
    WEEKS_PER_MONTH,
    CloudSpec,
    LocalSpec,
    PurchaseItem,
    Usage,
    cloud_cost,
    local_cost,
    usd_per_million_tokens,
)
from mlrig.advisor.prices import PriceBook
from mlrig.catalog.gpus import GPU
from mlrig.errors import MlrigError
from mlrig.results import PlanResult

Evaluate = Callable[[dict[str, Any], GPU], PlanResult]
Resolve = Callable[[str], GPU]
Objective = Literal["tco", "time", "usd-per-mtok"]
DAYS_PER_MONTH = 365.0 / 12.0
OLD_ARCH = ("pascal", "maxwell", "kepler")


class WorkloadUsage(BaseModel):
    """How much of a workload: serving hours per day, or fine-tuning runs per week × hours per run.

    `hours_per_run` is measured on `reference_gpu` (e.g. "4-6 h on an A100"); each option's run time
    scales by its training speed relative to the reference.
    """

    hours_per_day: float | None = Field(None, ge=0, le=24)
    runs_per_week: float | None = Field(None, ge=0, le=1000)
    hours_per_run: float | None = Field(None, gt=0, le=10000)
    tokens_per_run: float | None = Field(None, gt=0)
    reference_gpu: str = "a100-sxm-80gb"
    min_tok_s: float | None = Field(None, ge=0, description="per-stream decode tok/s")
    min_throughput_tok_s: float | None = Field(None, ge=0, description="aggregate tok/s over the batch")


class Workload(BaseModel):
    label: str
    plan: dict[str, Any]  # a plan (PLAN-FORMAT.md) without hardware; hardware is set per option
    usage: WorkloadUsage = Field(default_factory=WorkloadUsage)

    @property
    def task(self) -> str:
        return str(self.plan.get("workload", {}).get("task", "inference"))


class Constraints(BaseModel):
    budget_usd: float | None = Field(None, ge=0, description="caps the purchase price of buy options")
    local_only: bool = False
    cloud_only: bool = False
    max_power_w: float | None = Field(None, gt=0)
    max_gpus: int | None = Field(None, ge=1)
    no_used: bool = False
    years: float = Field(3.0, gt=0, le=20)
    objective: Objective = "tco"
    usd_per_kwh: float | None = Field(None, ge=0)
    gpu_power_fraction: float = Field(0.8, gt=0, le=1.0, description="average draw while busy / TDP")


class Candidate(BaseModel):
    name: str
    kind: Literal["buy", "rent"]
    category: Literal["gpu", "multi-gpu", "workstation", "datacenter", "apple", "dgx", "cloud"]
    gpu_id: str
    gpus: int
    upfront_usd: float = 0.0
    usd_per_hour: float = 0.0
    spot: bool = False
    used: bool = False
    items: list[PurchaseItem] = Field(default_factory=list)
    peak_power_w: float = 0.0
    busy_power_w: float = 0.0
    price_keys: list[str] = Field(default_factory=list)


class WorkloadOutcome(BaseModel):
    label: str
    task: str
    fits: bool
    per_gpu_gib: float | None = None
    capacity_gib: float | None = None
    decode_tok_s: float | None = None
    throughput_tok_s: float | None = None
    train_tokens_per_s: float | None = None
    hours_per_run: float | None = None
    usd_per_run: float | None = None
    usd_per_mtok: float | None = None
    meets_min_tok_s: bool = True
    parallel: str = ""
    note: str | None = None


class RankedOption(BaseModel):
    rank: int = 0
    name: str
    kind: Literal["buy", "rent"]
    category: str
    gpu: str
    gpus: int
    total_gpu_memory_gib: float
    upfront_usd: float
    usd_per_hour: float | None
    cost_per_month_usd: float
    total_cost_usd: float
    busy_hours_per_month: float
    running_usd_per_month: float = Field(0.0, description="buy: energy + upkeep per month; rent: the bill")
    fits: bool
    feasible: bool
    excluded_reason: str | None = None
    pareto: bool = False
    speed_score: float = 0.0
    workloads: list[WorkloadOutcome]
    reasons: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    build_findings: list[Finding] = Field(default_factory=list)
    price_sources: list[str] = Field(default_factory=list)
    # buy options: what is bought (each with its resale decline: used GPUs lose value slower) and the
    # busy wall power, exactly as priced here, so the report's business case prices the same box
    purchase_items: list[PurchaseItem] = Field(default_factory=list)
    busy_power_w: float | None = None


class Recommendation(BaseModel):
    objective: Objective
    years: float
    constraints: Constraints
    workloads: list[str]
    options: list[RankedOption]  # best first; infeasible ones last with excluded_reason
    summary: list[str]
    prices_used: list[str]
    warnings: list[str]


# ------------------------------------------------------------------------------------------- options


def _platform_for(book: PriceBook, n: int) -> tuple[str, float] | None:
    fitting = sorted((p.price_usd, k) for k, p in book.platforms.items() if p.max_gpus >= n)
    return (fitting[0][1], fitting[0][0]) if fitting else None


def enumerate_candidates(
    book: PriceBook, resolve: Resolve, c: Constraints
) -> tuple[list[tuple[Candidate, GPU]], list[str]]:
    """All buy/rent options the price book allows under the hard constraints (used, local, GPUs, power)."""
    out: list[tuple[Candidate, GPU]] = []
    warnings: list[str] = []
    a = book.assumptions

    def gpu_of(name: str, key: str) -> GPU | None:
        try:
            return resolve(name)
        except MlrigError as exc:
            warnings.append(f"price entry {key}: {exc}; skipped")
            return None

    for key, p in book.gpus.items():
        if c.cloud_only:
            break
        if not p.buyable or (c.no_used and p.condition == "used"):
            continue
        g = gpu_of(p.gpu, key)
        if g is None:
            continue
        counts = [1, 2, 3, 4] if g.hardware_class in ("geforce", "amd", "intel") else [1, 2, 4]
        for n in counts:
            if c.max_gpus is not None and n > c.max_gpus:
                continue
            plat = _platform_for(book, n)
            if plat is None:
                continue
            tdp = g.tdp_w or UNKNOWN_GPU_TDP_W
            peak = n * tdp + a.system_overhead_w
            if c.max_power_w is not None and peak > c.max_power_w:
                continue
            decline = a.resale_decline_used_per_year if p.condition == "used" else a.resale_decline_new_per_year
            cat = (
                "workstation"
                if g.hardware_class == "workstation"
                else "datacenter"
                if g.hardware_class == "datacenter"
                else "multi-gpu"
                if n > 1
                else "gpu"
            )
            label = f"{n}× {g.id}{' (used)' if p.condition == 'used' else ''} + {plat[0]}"
            out.append(
                (
                    Candidate(
                        name=label,
                        kind="buy",
                        category=cat,
                        gpu_id=g.id,
                        gpus=n,
                        used=p.condition == "used",
                        upfront_usd=n * p.price_usd + plat[1],
                        items=[
                            PurchaseItem(name=f"{n}× {g.id}", price_usd=n * p.price_usd, annual_decline=decline),
                            PurchaseItem(name=plat[0], price_usd=plat[1], annual_decline=a.resale_decline_new_per_year),
                        ],
                        peak_power_w=peak,
                        busy_power_w=n * tdp * c.gpu_power_fraction + a.system_overhead_w,
                        price_keys=[key, plat[0]],
                    ),
                    g,
                )
            )
    for key, s in book.systems.items():
        if c.cloud_only:
            break
        g = gpu_of(s.gpu, key)
        if g is None or (c.max_power_w is not None and s.power_w > c.max_power_w):
            continue
        out.append(
            (
                Candidate(
                    name=key,
                    kind="buy",
                    category="apple" if g.hardware_class == "apple" else "dgx",
                    gpu_id=g.id,
                    gpus=1,
                    upfront_usd=s.price_usd,
                    items=[PurchaseItem(name=key, price_usd=s.price_usd, annual_decline=a.resale_decline_new_per_year)],
                    peak_power_w=s.power_w,
                    busy_power_w=s.power_w * c.gpu_power_fraction,
                    price_keys=[key],
                ),
                g,
            )
        )
    if not c.local_only:
        for key, cl in book.clouds.items():
            if c.max_gpus is not None and cl.gpu_count > c.max_gpus:
                continue
            g = gpu_of(cl.gpu, key)
            if g is None:
                continue
            rates = [(False, cl.on_demand_usd_h)] + ([(True, cl.spot_usd_h)] if cl.spot_usd_h is not None else [])
            for spot, rate in rates:
                out.append(
                    (
                        Candidate(
                            name=f"{cl.provider} {cl.instance}{' (spot)' if spot else ''}",
                            kind="rent",
                            category="cloud",
                            gpu_id=g.id,
                            gpus=cl.gpu_count,
                            usd_per_hour=rate,
                            spot=spot,
                            price_keys=[key],
                        ),
                        g,
                    )
                )
    return out, warnings


# ------------------------------------------------------------------------------------------- evaluation


HOURS_PER_MONTH = 24.0 * DAYS_PER_MONTH  # 730 h: the most one machine can be busy in a month
BOARD = {1: "x16 slot", 2: "x8/x8 board"}
TIGHT_FIT = 0.97  # < 3 % headroom: within the memory estimator's own error band (docs/DOMAIN.md §2)
SLOW_DECODE_TOK_S = 10.0  # below ~10 tok/s chat output trails reading speed (~5 words/s ≈ 7 tok/s)


def _variants(n: int, task: str) -> list[dict[str, int]]:
    """Ways to use n GPUs: training adds data parallelism (the plan as given, + ZeRO recipes); one
    inference job splits the model by tensor or pipeline (layer) parallelism."""
    if n == 1:
        return [{}]
    split: list[dict[str, int]] = [{"tensor_parallel": n}, {"pipeline_parallel": n}]
    return split if task == "inference" else [{}, *split]


def _recipes(workload: Workload, n: int) -> list[dict[str, Any]]:
    """Memory-saving training recipes tried when the user pinned none (first = plan as given).

    - LoRA/QLoRA: bitsandbytes paged 8-bit AdamW, the QLoRA paper's recipe for a 65B model on one
      48 GB GPU (Dettmers et al. 2023, "QLoRA", sec. 3 "Paged Optimizers").
    - n > 1 data parallel: FSDP full shard = ZeRO stage 3 (Rajbhandari et al. 2020), as in
      Answer.AI's FSDP+QLoRA (2024-03-06) for 70B on two 24 GB cards.
    CPU offload is not tried automatically: the planner's training speed does not charge for it.
    """
    if workload.task == "inference":
        return [{}]
    t = workload.plan.get("training") or {}
    out: list[dict[str, Any]] = [{}]
    paged = t.get("method") in ("lora", "qlora") and "optimizer" not in t
    if paged:
        out.append({"optimizer": "paged-adamw-8bit"})
    if n > 1 and "zero_stage" not in t:
        out.append({"zero_stage": 3})
        if paged:
            out.append({"zero_stage": 3, "optimizer": "paged-adamw-8bit"})
    return out


def _recipe_label(r: dict[str, Any]) -> str:
    return ", ".join(
        "FSDP (ZeRO-3)" if k == "zero_stage" else str(v) if k == "optimizer" else f"{k}={v}" for k, v in r.items()
    )


def _speed(r: PlanResult, task: str) -> float:
    p = r.performance
    if p is None:
        return 0.0
    v = p.train_tokens_per_s if task != "inference" else p.decode_tok_s
    return float(v or 0.0)


def evaluate_on(workload: Workload, gpu: GPU, n: int, evaluate: Evaluate) -> tuple[PlanResult | None, str, str | None]:
    """Best fitting layout of `workload` on n× gpu: (result, layout, error).

    Tries each parallel layout (`_variants`) with each training recipe (`_recipes`); the first
    (plan as given, data parallel) wins ties, so a recipe is only chosen when it fits or is faster.
    """
    best: tuple[PlanResult, str] | None = None
    error = None
    for recipe in _recipes(workload, n):
        for v in _variants(n, workload.task):
            if recipe.get("zero_stage") and v:  # FSDP shards over data-parallel ranks only
                continue
            plan = copy.deepcopy(workload.plan)
            if recipe.get("optimizer") or "zero_stage" in recipe:
                plan["training"] = {**(plan.get("training") or {}), **recipe}
            plan["hardware"] = {
                **{k: x for k, x in plan.get("hardware", {}).items() if k == "host_ram_gib"},
                "gpu": gpu.id,
                "count": n,
                **v,
            }
            try:
                r = evaluate(plan, gpu)
            except MlrigError as exc:
                error = str(exc)
                continue
            layout = ", ".join(f"{k}={x}" for k, x in v.items()) or ("single GPU" if n == 1 else "data parallel")
            if recipe:
                layout += f", {_recipe_label(recipe)}"
            key = (bool(r.fits), _speed(r, workload.task))
            if best is None or key > (bool(best[0].fits), _speed(best[0], workload.task)):
                best = (r, layout)
    if best is None:
        return None, "", error
    return best[0], best[1], None


def _reference_tok_s(w: Workload, resolve: Resolve, evaluate: Evaluate) -> float | None:
    try:
        ref = resolve(w.usage.reference_gpu)
    except MlrigError:
        return None
    r, _, _ = evaluate_on(w, ref, 1, evaluate)
    if r is None or not r.fits:
        return None
    s = _speed(r, w.task)
    return s or None


def _default_usage(w: Workload) -> tuple[WorkloadUsage, str | None]:
    u = w.usage
    if w.task == "inference" and u.hours_per_day is None:
        return u.model_copy(update={"hours_per_day": 8.0}), f"{w.label}: no --hours-per-day; assumed 8 h/day"
    if w.task != "inference" and u.runs_per_week is None:
        return u.model_copy(update={"runs_per_week": 1.0}), f"{w.label}: no --runs-per-week; assumed 1 run/week"
    return u, None


# ------------------------------------------------------------------------------------------- ranking


def recommend(
    workloads: list[Workload],
    book: PriceBook,
    constraints: Constraints | None = None,
    *,
    evaluate: Evaluate | None = None,
    resolve: Resolve | None = None,
) -> Recommendation:
    """Rank buy/rent options for the workloads; see the module docstring."""
    if not workloads:
        raise MlrigError("no workloads given; pass --model ... (or --plan FILE) with --task and usage flags")
    c = constraints or Constraints()
    if c.local_only and c.cloud_only:
        raise MlrigError("--local-only and --cloud-only exclude each other; give at most one")
    if evaluate is None:
        from mlrig.planner import evaluate as planner_evaluate

        def evaluate(plan: dict[str, Any], gpu: GPU) -> PlanResult:
            return planner_evaluate(plan, gpu=gpu)

    if resolve is None:
        from mlrig.catalog.gpus import resolve_gpu as resolve
    assert evaluate is not None and resolve is not None
    warnings: list[str] = []
    usages: list[WorkloadUsage] = []
    for w in workloads:
        u, note = _default_usage(w)
        usages.append(u)
        if note:
            warnings.append(note)
    ref_speed = []
    for w, u in zip(workloads, usages, strict=True):
        if w.task != "inference" and u.hours_per_run is not None and u.tokens_per_run is None:
            s = _reference_tok_s(w, resolve, evaluate)
            if s is None:
                warnings.append(
                    f"{w.label}: could not evaluate on the reference GPU {u.reference_gpu};"
                    " run hours taken as given on every option"
                )
            ref_speed.append(s)
        else:
            ref_speed.append(None)

    cands, w2 = enumerate_candidates(book, resolve, c)
    warnings += w2
    kwh = c.usd_per_kwh if c.usd_per_kwh is not None else book.assumptions.electricity_usd_per_kwh
    cache: dict[tuple[str, int, int], tuple[PlanResult | None, str, str | None]] = {}
    ranked: list[RankedOption] = []
    for cand, g in cands:
        outcomes: list[WorkloadOutcome] = []
        busy = 0.0
        for i, (w, u) in enumerate(zip(workloads, usages, strict=True)):
            key = (g.id, cand.gpus, i)
            if key not in cache:
                cache[key] = evaluate_on(w, g, cand.gpus, evaluate)
            r, layout, err = cache[key]
            o = WorkloadOutcome(
                label=w.label,
                task=w.task,
                fits=bool(r and r.fits),
                parallel=layout,
                note=err or (r.memory.notes[0] if r and r.memory and r.memory.notes else None),
            )
            if r is not None and r.memory is not None:
                o.per_gpu_gib, o.capacity_gib = r.memory.per_gpu_gib, r.memory.gpu_capacity_gib
            if r is not None and r.performance is not None and o.fits:
                p = r.performance
                o.decode_tok_s, o.throughput_tok_s, o.train_tokens_per_s = (
                    p.decode_tok_s,
                    p.throughput_tok_s or p.decode_tok_s,
                    p.train_tokens_per_s,
                )
            if w.task == "inference":
                busy += (u.hours_per_day or 0.0) * DAYS_PER_MONTH
                if u.min_tok_s is not None and (o.decode_tok_s or 0.0) < u.min_tok_s:
                    o.meets_min_tok_s = False
                if u.min_throughput_tok_s is not None and (o.throughput_tok_s or 0.0) < u.min_throughput_tok_s:
                    o.meets_min_tok_s = False
            else:
                hours = u.hours_per_run
                tokens = u.tokens_per_run or (w.plan.get("training") or {}).get("tokens_to_train")
                ref = ref_speed[i]
                if tokens is None and hours is not None and ref:
                    tokens = hours * 3600.0 * ref
                if tokens is not None and o.train_tokens_per_s:
                    hours = tokens / o.train_tokens_per_s / 3600.0
                o.hours_per_run = hours
                busy += (u.runs_per_week or 0.0) * WEEKS_PER_MONTH * (hours or 0.0)
            outcomes.append(o)
        usage = Usage(hours_per_month=busy, years=c.years, usd_per_kwh=kwh, pue=book.assumptions.pue_home)
        if cand.kind == "buy":
            lc = local_cost(
                LocalSpec(
                    name=cand.name,
                    items=cand.items,
                    power_w=cand.busy_power_w,
                    upkeep_fraction_per_year=book.assumptions.upkeep_fraction_per_year,
                ),
                usage,
            )
            per_month, total = lc.cost_per_month_usd, lc.total_usd
            hourly = lc.cost_per_busy_hour_usd or 0.0
            running = lc.energy_usd_per_month + lc.upkeep_usd_per_month
        else:
            cs = CloudSpec(
                name=cand.name,
                usd_per_hour=cand.usd_per_hour,
                spot=cand.spot,
                interruption_overhead=book.assumptions.spot_interruption_overhead,
            )
            cc = cloud_cost(cs, usage)
            per_month, total = cc.cost_per_month_usd, cc.total_usd
            running = per_month
            hourly = cand.usd_per_hour * (1 + (book.assumptions.spot_interruption_overhead if cand.spot else 0.0))
        for o in outcomes:
            if o.hours_per_run is not None and o.fits:
                o.usd_per_run = hourly * o.hours_per_run
            if o.task == "inference" and o.fits and o.throughput_tok_s:
                o.usd_per_mtok = usd_per_million_tokens(hourly, o.throughput_tok_s)
        fits = all(o.fits for o in outcomes)
        reason = None
        if not fits:
            bad = next(o for o in outcomes if not o.fits)
            reason = (
                f"{bad.label} does not fit: needs {bad.per_gpu_gib:.1f} GiB per GPU, has {bad.capacity_gib:.1f}"
                if bad.per_gpu_gib is not None and bad.capacity_gib is not None
                else f"{bad.label} could not be evaluated: {bad.note}"
            )
        elif not all(o.meets_min_tok_s for o in outcomes):
            bad = next(o for o in outcomes if not o.meets_min_tok_s)
            u = next(u for o2, u in zip(outcomes, usages, strict=True) if o2 is bad)
            if u.min_tok_s is not None and (bad.decode_tok_s or 0.0) < u.min_tok_s:
                reason = (
                    f"{bad.label}: {bad.decode_tok_s or 0:.1f} tok/s per stream is below the"
                    f" {u.min_tok_s:g} asked (--min-tok-s)"
                )
            else:
                reason = (
                    f"{bad.label}: {bad.throughput_tok_s or 0:,.0f} tok/s aggregate is below the"
                    f" {u.min_throughput_tok_s or 0:,.0f} asked (--min-throughput)"
                )
        elif cand.kind == "buy" and busy > HOURS_PER_MONTH + 1e-6:
            reason = (
                f"too slow: needs {busy:,.0f} busy h/month at this usage; one machine has {HOURS_PER_MONTH:.0f}"
            )
        elif cand.kind == "buy" and c.budget_usd is not None and cand.upfront_usd > c.budget_usd:
            reason = f"costs ${cand.upfront_usd:,.0f} up front, over the ${c.budget_usd:,.0f} budget"
        sources = []
        for k in cand.price_keys:
            e = book.gpus.get(k) or book.systems.get(k) or book.clouds.get(k) or book.platforms.get(k)
            if e is not None:
                sources.append(f"{k}: {e.source} ({e.date}, {e.verification})")
        ranked.append(
            RankedOption(
                name=cand.name,
                kind=cand.kind,
                category=cand.category,
                gpu=g.id,
                gpus=cand.gpus,
                total_gpu_memory_gib=round(g.capacity_gib * cand.gpus, 2),
                upfront_usd=cand.upfront_usd,
                usd_per_hour=cand.usd_per_hour if cand.kind == "rent" else None,
                cost_per_month_usd=per_month,
                total_cost_usd=total,
                busy_hours_per_month=busy,
                running_usd_per_month=running,
                fits=fits,
                feasible=reason is None,
                excluded_reason=reason,
                workloads=outcomes,
                price_sources=sources,
                purchase_items=cand.items if cand.kind == "buy" else [],
                busy_power_w=cand.busy_power_w if cand.kind == "buy" else None,
            )
        )

    _score(ranked)
    _sort(ranked, c.objective)
    _mark_pareto(ranked)
    gpus = {g.id: g for _, g in cands}
    cand_by_name = {cand.name: cand for cand, _ in cands}
    for opt in ranked:
        _explain(opt, ranked, gpus[opt.gpu], cand_by_name[opt.name], book, workloads)
    for i, opt in enumerate(ranked, 1):
        opt.rank = i
    feasible = [o for o in ranked if o.feasible]
    summary = _summary(feasible, ranked, c)
    if not feasible:
        warnings.append(
            "nothing meets every constraint: raise --budget, allow used or cloud, or lower the"
            " workload (quantise, LoRA/QLoRA, shorter context)"
        )
    est = [k for k in {k for o in ranked[:10] for k in _keys(o)} if k in set(book.estimate_keys())]
    if est:
        warnings.append(f"prices marked 'estimate' (re-check before buying): {', '.join(sorted(est))}")
    return Recommendation(
        objective=c.objective,
        years=c.years,
        constraints=c,
        workloads=[w.label for w in workloads],
        options=ranked,
        summary=summary,
        prices_used=book.used_summary(),
        warnings=warnings,
    )


def _keys(o: RankedOption) -> list[str]:
    return [s.split(":", 1)[0] for s in o.price_sources]


def _score(opts: list[RankedOption]) -> None:
    """speed_score = mean over workloads of speed / best speed among fitting options (0 if it does not fit)."""
    n = len(opts[0].workloads) if opts else 0
    for i in range(n):

        def sp(o: RankedOption, i: int = i) -> float:
            w = o.workloads[i]
            return (w.train_tokens_per_s if w.task != "inference" else w.decode_tok_s) or 0.0 if w.fits else 0.0

        best = max((sp(o) for o in opts), default=0.0)
        for o in opts:
            o.speed_score += (sp(o) / best if best > 0 else (1.0 if o.workloads[i].fits else 0.0)) / n


def _objective_key(o: RankedOption, objective: Objective) -> tuple[float, ...]:
    if objective == "time":
        train_h = sum(w.hours_per_run or 0.0 for w in o.workloads if w.task != "inference")
        infer_s = sum(
            1000.0 / w.decode_tok_s if w.decode_tok_s else math.inf for w in o.workloads if w.task == "inference"
        )
        return (train_h, infer_s, o.total_cost_usd)
    if objective == "usd-per-mtok":
        vals = [
            w.usd_per_mtok if w.usd_per_mtok is not None else math.inf for w in o.workloads if w.task == "inference"
        ]
        return (sum(vals) / len(vals) if vals else math.inf, o.total_cost_usd)
    return (o.total_cost_usd, -o.speed_score)


def _sort(opts: list[RankedOption], objective: Objective) -> None:
    opts.sort(key=lambda o: (not o.feasible, _objective_key(o, objective), o.name))


def _mark_pareto(opts: list[RankedOption]) -> None:
    """Pareto front on (total cost ↓, speed score ↑) among feasible options."""
    f = [o for o in opts if o.feasible]
    for o in f:
        o.pareto = not any(
            (p.total_cost_usd <= o.total_cost_usd and p.speed_score >= o.speed_score)
            and (p.total_cost_usd < o.total_cost_usd or p.speed_score > o.speed_score)
            for p in f
        )


def _explain(
    o: RankedOption,
    all_opts: list[RankedOption],
    g: GPU,
    cand: Candidate,
    book: PriceBook,
    workloads: list[Workload],
) -> None:
    """Plain-language reasons grounded in the numbers, and the seeds' traps as warnings. Speeds carry
    the validation error band (performance.error_band, training_speed.TRAIN_ERROR_BAND)."""
    from mlrig.estimators.performance import error_band
    from mlrig.estimators.training_speed import TRAIN_ERROR_BAND

    decode_band = error_band(g)["decode_tok_s"]

    for w in o.workloads:
        if w.per_gpu_gib is not None and w.capacity_gib is not None:
            verb = "fits" if w.fits else "does NOT fit"
            speed = (f", {w.decode_tok_s:.0f} tok/s decode (±{decode_band:.0%})"
                     if w.decode_tok_s else "") + (
                f", {w.hours_per_run:.1f} h/run (±{TRAIN_ERROR_BAND:.0%})"
                if w.hours_per_run and w.task != "inference" else ""
            )
            o.reasons.append(
                f"{w.label}: {verb} ({w.per_gpu_gib:.1f} of {w.capacity_gib:.1f} GiB per GPU, {w.parallel}){speed}"
            )
    if o.kind == "buy":
        o.reasons.append(
            f"${o.upfront_usd:,.0f} up front; ${o.cost_per_month_usd:,.0f}/month over the horizon"
            f" incl. power and resale ({o.busy_hours_per_month:,.0f} busy h/month)"
        )
    else:
        o.reasons.append(
            f"${o.usd_per_hour:,.2f}/h × {o.busy_hours_per_month:,.0f} busy h/month ="
            f" ${o.cost_per_month_usd:,.0f}/month, nothing up front"
        )
    if o.feasible and o.kind == "buy":
        same = [
            p
            for p in all_opts
            if p.feasible
            and p.kind == "buy"
            and p is not o
            and abs(p.total_gpu_memory_gib - o.total_gpu_memory_gib) < 1.0
            and p.upfront_usd < o.upfront_usd
        ]
        if same:
            cheap = min(same, key=lambda p: p.upfront_usd)
            ratio = o.upfront_usd / max(cheap.upfront_usd, 1.0)
            rel = _speed_ratios(o, cheap)
            per = "; ".join(f"{label} {x:.1f}×" for label, x in rel)
            if any(x > 1.05 for _, x in rel):
                o.reasons.append(
                    f"VRAM is the constraint: {cheap.name} has the same {cheap.total_gpu_memory_gib:.0f} GiB"
                    f" for {1 / ratio:.0%} of the price; {ratio:.1f}× the money buys this speed relative to it: {per}"
                )
            else:
                o.reasons.append(
                    f"dominated: {cheap.name} has the same {cheap.total_gpu_memory_gib:.0f} GiB for"
                    f" {1 / ratio:.0%} of the price and is as fast or faster (this option: {per})"
                )
    for w in o.workloads:
        if w.fits and w.per_gpu_gib is not None and w.capacity_gib and w.per_gpu_gib > TIGHT_FIT * w.capacity_gib:
            o.warnings.append(
                f"{w.label}: tight fit ({w.per_gpu_gib:.1f} of {w.capacity_gib:.1f} GiB per GPU); a longer"
                " sequence, bigger batch or another process on the GPU will not fit"
            )
        if w.task == "inference" and w.fits and w.decode_tok_s is not None and w.decode_tok_s < SLOW_DECODE_TOK_S:
            o.warnings.append(
                f"{w.label}: {w.decode_tok_s:.1f} tok/s per stream is slower than reading speed"
                f" (~{SLOW_DECODE_TOK_S:.0f} tok/s); fine for batch jobs, sluggish for chat - set --min-tok-s"
            )
    arch = (g.architecture or "").lower()
    if any(a in arch for a in OLD_ARCH):
        o.warnings.append(
            f"{g.id}: old datacentre card - cheap VRAM but slow: no tensor cores, FP16 unusable"
            " or absent, passive cooling for server airflow, driver support ending"
        )
    if g.hardware_class == "workstation":
        ref = book.gpus.get("rtx-4090-new")
        mult = f"{cand.items[0].price_usd / cand.gpus / ref.price_usd:.1f}× an RTX 4090's price" if ref else "a premium"
        o.warnings.append(
            f"workstation card at {mult}: more VRAM, but GDDR6 bandwidth and a power-limited cooler;"
            " consumer cards give more speed per dollar"
        )
    if g.hardware_class in ("amd", "intel"):
        o.warnings.append(
            f"{g.vendor}: ROCm/oneAPI support is narrower than CUDA (Flash-Attention and many kernels"
            " are CUDA-first); budget time for driver work"
        )
    if g.hardware_class == "apple" and any(w.task != "inference" for w in workloads):
        o.warnings.append(
            "Apple Silicon: good for memory-bound inference, much slower than CUDA GPUs for training"
            " (MPS backend, fewer kernels)"
        )
    if o.category in ("multi-gpu", "datacenter", "workstation") and o.kind == "buy" and o.gpus > 2:
        o.warnings.append(
            f"{o.gpus} GPUs: beyond two cards consumer boards run out of lanes - needs a"
            " workstation/HEDT board, risers and a large PSU; multi-GPU consumer setups are fragile"
        )
    if cand.used:
        o.warnings.append("used: no warranty - test under load (memory errors, fans, thermal pads) before paying")
    if cand.spot:
        o.warnings.append(
            "spot: may be interrupted at short notice - checkpoint often; cost includes"
            f" {book.assumptions.spot_interruption_overhead:.0%} extra hours"
        )
    if o.kind == "buy" and o.category in ("gpu", "multi-gpu", "workstation", "datacenter"):
        b = proposed_build(g, cand.gpus)
        assert b.psu is not None and b.cpu is not None
        o.reasons.append(
            f"build: {b.psu.watts:.0f} W {b.psu.standard} PSU (GPU transients), {b.ram_gib:.0f} GiB RAM"
            f" (≥ 1.5× the {g.memory_gib * cand.gpus:.0f} GiB VRAM), {b.cpu.name} ({b.cpu.cores} cores,"
            f" {b.cpu.pcie_lanes} lanes), {BOARD.get(cand.gpus, 'HEDT board')}"
            " - check it with `mlrig build check`"
        )
        report = check_build(b, resolve=lambda _name: g)
        o.build_findings = [x for x in report.findings if x.severity in ("error", "warning")]


def _speed_ratios(o: RankedOption, other: RankedOption) -> list[tuple[str, float]]:
    """Per workload: this option's speed / the other's (train tokens/s or decode tok/s)."""
    out = []
    for a, b in zip(o.workloads, other.workloads, strict=True):
        sa = (a.train_tokens_per_s if a.task != "inference" else a.decode_tok_s) or 0.0
        sb = (b.train_tokens_per_s if b.task != "inference" else b.decode_tok_s) or 0.0
        if sa > 0 and sb > 0:
            out.append((a.label, sa / sb))
    return out


def proposed_build(g: GPU, n: int) -> Build:
    """The machine we would build for n× g: ATX 3.1 PSU sized for transients, RAM ≥ 1.5× VRAM, x8/x8 or HEDT.

    CPUs per AMD product pages: Ryzen 9 7900X 12 cores, 170 W, 24 usable PCIe 5.0 lanes; Threadripper 7960X
    24 cores, 350 W, 88 usable lanes. RAM: at least the VRAM (osmarks.net seed, see mlrig.advisor.build) plus
    50% for loading and offload (an estimate), rounded up to a power of two, 64 GiB at the least.
    """
    from mlrig.advisor.build import recommended_psu_w

    tdp = g.tdp_w or UNKNOWN_GPU_TDP_W
    ws = n > 2
    cpu = Cpu(
        name="Threadripper 7960X" if ws else "Ryzen 9 7900X",
        cores=24 if ws else 12,
        pcie_lanes=88 if ws else 24,
        tdp_w=350 if ws else 170,
    )
    psu = recommended_psu_w([(g, tdp)] * n, cpu.tdp_w, atx3=True)
    vram = g.memory_gib * n
    ram = float(max(64, 2 ** math.ceil(math.log2(max(vram * 1.5, 1)))))
    positions = [1, 4, 7, 10][:n] if ws else ([1] if n == 1 else [1, 4])
    slots = [Slot(lanes=16 if (ws or n == 1) else 8, position=p) for p in positions]
    return Build(
        name=f"{n}× {g.id}",
        gpus=[BuildGpu(name=g.id, count=n)],
        psu=Psu(watts=psu, standard="ATX 3.1"),
        ram_gib=ram,
        cpu=cpu,
        motherboard=Motherboard(slots=slots),
        cooling=Cooling(type="open-frame" if ws else "air"),
    )


def _summary(feasible: list[RankedOption], ranked: list[RankedOption], c: Constraints) -> list[str]:
    if not feasible:
        return ["no option meets every constraint (see excluded_reason on each option)"]
    best = feasible[0]
    lines = [
        f"best for objective '{c.objective}': {best.name} - ${best.total_cost_usd:,.0f} over {c.years:g} years"
        f" (${best.cost_per_month_usd:,.0f}/month, ${best.upfront_usd:,.0f} up front)"
    ]
    step = next(
        (o for o in sorted(feasible, key=lambda o: o.total_cost_usd) if o.pareto and o.speed_score > best.speed_score),
        None,
    )
    if step is not None and best.speed_score > 0 and c.objective == "tco" and step.speed_score > 1.2 * best.speed_score:
        extra = step.total_cost_usd - best.total_cost_usd
        lines.append(
            f"step up: {step.name} is {step.speed_score / best.speed_score:.1f}× as fast for"
            f" ${extra:,.0f} more over {c.years:g} years (+{extra / max(best.total_cost_usd, 1.0):.0%})"
        )
    buy = next((o for o in feasible if o.kind == "buy"), None)
    rent = next((o for o in feasible if o.kind == "rent"), None)
    if buy and rent:
        cheaper = "buying" if buy.total_cost_usd < rent.total_cost_usd else "renting"
        lines.append(
            f"best buy {buy.name} ${buy.total_cost_usd:,.0f} vs best rent {rent.name}"
            f" ${rent.total_cost_usd:,.0f} over {c.years:g} years: {cheaper} is cheaper at this usage"
        )
        saving = rent.cost_per_month_usd - buy.running_usd_per_month
        if saving > 0:
            months = buy.upfront_usd / saving
            lines.append(
                f"payback: {buy.name} costs ${buy.upfront_usd:,.0f}; renting {rent.name} would cost"
                f" ${rent.cost_per_month_usd:,.0f}/month vs ${buy.running_usd_per_month:,.0f}/month to run it,"
                f" so buying pays for itself after {months:,.1f} months ({months / 12:.1f} years, resale ignored)"
            )
        else:
            lines.append(f"payback: never - renting {rent.name} costs less per month than powering {buy.name}")
    front = [o.name for o in feasible if o.pareto]
    lines.append(f"Pareto front (cost vs speed): {', '.join(front[:6])}")
    return lines
