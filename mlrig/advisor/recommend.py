"""`mlrig recommend`: what to buy or rent for a set of workloads, ranked by total cost, time or $/Mtok.

Three steps, one module each: `options` enumerates what can be bought or rented and prices the whole
machine; `evaluation` runs every workload on every option through the planner (recipes included); this
module prices each option for the usage given, applies the constraints and floors, and `ranking`
orders and explains the result. Pure: all inputs are arguments (the planner is injectable).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mlrig.advisor.cost import (
    HOURS_PER_MONTH,
    ApiQuote,
    CloudSpec,
    LocalSpec,
    Usage,
    api_quotes,
    cloud_cost,
    local_cost,
    usd_per_million_tokens,
)
from mlrig.advisor.evaluation import (
    DAYS_PER_MONTH,
    DEFAULT_HOURS_PER_DAY,
    DEFAULT_HOURS_PER_RUN,
    DEFAULT_MAX_TTFT_S,
    DEFAULT_MIN_TOK_S,
    DEFAULT_RUNS_PER_WEEK,
    WEEKS_PER_MONTH,
    Evaluate,
    Fit,
    Request,
    Setup,
    Workload,
    WorkloadUsage,
    band_multipliers,
    best_fit,
    best_fits,
    gate,
    planner_evaluate,
    speed_band,
)
from mlrig.advisor.options import Candidate, OptionFilter, Ownership, Resolve, enumerate_candidates
from mlrig.advisor.prices import PriceBook
from mlrig.advisor.ranking import (
    Objective,
    RankedOption,
    WorkloadOutcome,
    explain,
    mark_pareto,
    score,
    sort_options,
    summary,
    uncertainty,
)
from mlrig.catalog.gpus import GPU
from mlrig.errors import MlrigError
from mlrig.results import Performance

# Lambda's 8x A100 80GB instance has 1,800 GiB of RAM (https://lambda.ai/instances, 2026-09-20): 225 per GPU.
REFERENCE_RAM_GIB_PER_GPU = 225.0

__all__ = ["Constraints", "RankedOption", "Recommendation", "Workload", "WorkloadOutcome", "WorkloadUsage",
           "recommend"]


class Constraints(BaseModel):
    model_config = ConfigDict(allow_inf_nan=False)

    budget_usd: float | None = Field(None, ge=0, le=1e9, description="caps the purchase price of buy options")
    local_only: bool = False
    cloud_only: bool = False
    max_power_w: float | None = Field(None, gt=0, le=1e6)
    max_gpus: int | None = Field(None, ge=1, le=1024)
    no_used: bool = False
    years: float = Field(3.0, gt=0, le=20)
    objective: Objective = "tco"
    usd_per_kwh: float | None = Field(None, ge=0, le=10)
    gpu_power_fraction: float = Field(0.8, gt=0, le=1.0, description="average draw while busy / TDP")
    allow_old: bool = False
    any_vendor: bool = False
    gpus: list[str] = Field(default_factory=list, description="only these GPUs (names as users write them)")
    have: list[str] = Field(default_factory=list, description='cards owned, e.g. "RTX 3090" or "2x RTX 3090"')
    have_pc: bool = False
    pc_ram_gib: float = Field(32.0, gt=0, le=65536)
    on_hours_per_month: float | None = Field(None, ge=0, le=HOURS_PER_MONTH)
    today: dt.date | None = None


class Recommendation(BaseModel):
    objective: Objective
    years: float
    constraints: Constraints
    workloads: list[str]
    options: list[RankedOption]  # best first; infeasible ones last with excluded_reason
    summary: list[str]
    uncertainty: list[str] = Field(default_factory=list)
    api_quotes: dict[str, list[ApiQuote]] = Field(default_factory=dict)
    assumptions: list[str] = Field(default_factory=list)
    prices_used: list[str]
    stale_prices: list[str] = Field(default_factory=list)
    warnings: list[str]


# ------------------------------------------------------------------------------------------- inputs


def parse_have(items: list[str], resolve: Resolve) -> dict[str, int]:
    """'2x RTX 3090', '2 × RTX 3090', 'RTX 3090' -> {'rtx-3090': 2} (catalog.gpus.split_gpu_count)."""
    from mlrig.catalog.gpus import split_gpu_count

    out: dict[str, int] = {}
    for item in items:
        n, name = split_gpu_count(item) or (1, item)
        if not 1 <= n <= 64:
            raise MlrigError(f"--have {item!r}: count must be 1-64")
        gid = resolve(name).id
        out[gid] = out.get(gid, 0) + n
    return out


def _usage_defaults(w: Workload) -> tuple[WorkloadUsage, list[str]]:
    u, notes = w.usage, []
    upd: dict[str, Any] = {}
    if w.task == "inference":
        if u.hours_per_day is None:
            upd["hours_per_day"] = DEFAULT_HOURS_PER_DAY
            notes.append(f"{w.label}: no --hours-per-day; assumed {DEFAULT_HOURS_PER_DAY:g} h/day")
        if u.min_tok_s is None:
            upd["min_tok_s"] = DEFAULT_MIN_TOK_S
        if u.max_ttft_s is None:
            upd["max_ttft_s"] = DEFAULT_MAX_TTFT_S
        if u.min_tok_s is None or u.max_ttft_s is None:
            notes.append(f"{w.label}: interactive floor ≥{upd.get('min_tok_s', u.min_tok_s):g} tok/s per user,"
                         f" first token ≤{upd.get('max_ttft_s', u.max_ttft_s):g} s (defaults; --min-tok-s 0"
                         " --max-ttft 0 for batch jobs)")
        if needs_concurrency(w, u):
            notes.append(f"{w.label}: --min-throughput {u.min_throughput_tok_s:,.0f} is aggregate output tok/s: each"
                         " option is priced at the fewest users served at once that reach it, as a closed loop with"
                         " continuous batching (each user sends the next request when the last ends; `mlrig plan"
                         " --load concurrency --batch N`, `mlrig serve`), while each keeps the per-user floors at"
                         " that load (tok/s per user = 1000 / TPOT, TTFT including the wait); --batch N prices one"
                         " static batch of N sequences instead")
    else:
        if u.runs_per_week is None:
            upd["runs_per_week"] = DEFAULT_RUNS_PER_WEEK
            notes.append(f"{w.label}: no --runs-per-week; assumed {DEFAULT_RUNS_PER_WEEK:g} run/week")
        if u.hours_per_run is None and u.tokens_per_run is None and not w.training.get("tokens_to_train"):
            upd["hours_per_run"] = DEFAULT_HOURS_PER_RUN
            notes.append(f"{w.label}: no --hours-per-run or --tokens-per-run; assumed {DEFAULT_HOURS_PER_RUN:g} h"
                         f" per run on {u.reference_gpu} (the seed's '4-6 h on an A100')")
        seq = _default_seq_len(w)
        if seq is not None:
            why = ("the model's training context, at most 8,192" if w.task == "pretrain" else
                   "LLaMA-Factory's cutoff_len default, at most the model's context")
            notes.append(f"{w.label}: no --seq-len; training sequences of {seq:,} tokens assumed ({why})")
    return u.model_copy(update=upd), notes


def _default_seq_len(w: Workload) -> int | None:
    """The training sequence length the planner prices a workload without one at (`planner.default_seq_len`);
    None where it gives one, or where its model does not resolve (its options then say why)."""
    from mlrig.planner import default_seq_len, parse_plan, resolve_arch

    try:
        p = parse_plan(w.plan)
        return default_seq_len(resolve_arch(p), p)
    except MlrigError:
        return None


def _reference_tokens(w: Workload, u: WorkloadUsage, resolve: Resolve, evaluate: Evaluate) -> tuple[float | None, str]:
    """Tokens per run: as given, or hours on the reference GPU × its planner speed. When one reference GPU
    cannot hold the model, the smallest count of it that can (2, 4, 8) is the reference, and said so. The
    reference machine has REFERENCE_RAM_GIB_PER_GPU of host RAM per GPU (a cloud instance's)."""
    tokens = u.tokens_per_run or w.training.get("tokens_to_train")
    if tokens:
        return float(tokens), ""
    try:
        ref = resolve(u.reference_gpu)
    except MlrigError as exc:
        return None, f"{w.label}: reference GPU: {exc}"
    for n in (1, 2, 4, 8):
        f = best_fit(w, ref, Setup(count=n, host_ram_gib=REFERENCE_RAM_GIB_PER_GPU * n), evaluate)
        if f.result is not None and f.result.fits and f.result.performance is not None:
            speed = f.result.performance.train_tokens_per_s or 0.0
            if speed > 0 and u.hours_per_run:
                note = "" if n == 1 else (f"{w.label}: one {ref.id} cannot hold it; the {u.hours_per_run:g} h per"
                                          f" run are taken on {n}× {ref.id}")
                return u.hours_per_run * 3600.0 * speed, note
    return None, f"{w.label}: does not fit even 8× {ref.id}; run time per option unknown"


# ------------------------------------------------------------------------------------------- recommend


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
    evaluate = evaluate or planner_evaluate
    if resolve is None:
        from mlrig.catalog.gpus import resolve_gpu as resolve
    assert resolve is not None
    today = c.today or dt.date.today()
    warnings: list[str] = []
    assumptions: list[str] = []
    usages = []
    for w in workloads:
        u, notes = _usage_defaults(w)
        usages.append(u)
        assumptions += notes
    tokens: list[float | None] = []
    for w, u in zip(workloads, usages, strict=True):
        if w.task == "inference":
            tokens.append(None)
            continue
        t, note = _reference_tokens(w, u, resolve, evaluate)
        tokens.append(t)
        if note:
            (warnings if t is None else assumptions).append(note)

    own = Ownership(gpus=parse_have(c.have, resolve), pc=c.have_pc or bool(c.have), pc_ram_gib=c.pc_ram_gib)
    gpu_ids = sorted({resolve(n).id for n in c.gpus}) if c.gpus else None
    flt = OptionFilter(local_only=c.local_only, cloud_only=c.cloud_only, max_gpus=c.max_gpus,
                       max_power_w=c.max_power_w, no_used=c.no_used, gpu_ids=gpu_ids,
                       gpu_power_fraction=c.gpu_power_fraction)
    cands, w2 = enumerate_candidates(book, resolve, flt, own)
    warnings += w2
    if gpu_ids:
        for gid in gpu_ids:
            if not any(cand.gpu_id == gid and cand.kind == "buy" for cand, _ in cands) and not c.cloud_only:
                why = book.unpriced_reason(gid) or "not in the price book yet: give --prices FILE with its price"
                warnings.append(f"{gid}: no buy option - {why}")

    kwh = c.usd_per_kwh if c.usd_per_kwh is not None else book.assumptions.electricity_usd_per_kwh
    on_hours = c.on_hours_per_month if c.on_hours_per_month is not None else book.assumptions.powered_on_hours_per_month
    # one evaluation pass over every distinct (workload, GPU, count, host RAM) the options need
    keys: dict[FitKey, Request] = {}
    for cand, g in cands:
        for i, w in enumerate(workloads):
            if gate(w, g, c.allow_old, c.any_vendor) is None:
                keys.setdefault(_fit_key(i, cand, g), (w, g, Setup(count=cand.gpus, host_ram_gib=cand.host_ram_gib,
                                                                     unified=cand.unified)))
    fits = dict(zip(keys, best_fits(list(keys.values()), evaluate), strict=True))
    users = _find_concurrency(fits, keys, workloads, usages, evaluate)
    assumptions += _one_slot_notes(workloads, fits, users)
    ranked: list[RankedOption] = []
    gpus: dict[str, GPU] = {}
    for cand, g in cands:
        gpus[g.id] = g
        outcomes = [_outcome(w, u, tokens[i], cand, g, c, fits.get(_fit_key(i, cand, g)),
                             users.get(_fit_key(i, cand, g)))
                    for i, (w, u) in enumerate(zip(workloads, usages, strict=True))]
        ranked.append(_price_option(cand, g, outcomes, usages, c, book, kwh, on_hours, today))

    for i, w in enumerate(workloads):  # an error every option shares is the input's, not the options'
        outs = [o.workloads[i] for o in ranked]
        failed = [x.note or "" for x in outs if (x.note or "").startswith("could not be evaluated")]
        if failed and not any(x.per_gpu_gib is not None for x in outs):
            raise MlrigError(f"{w.label}: {failed[0].removeprefix('could not be evaluated: ')}")
    if c.objective != "time":
        ranked = _drop_bigger_rentals(ranked)
    score(ranked)
    sort_options(ranked, c.objective)
    mark_pareto(ranked)
    ref = book.gpus.get("rtx-4090-new")
    any_training = any(w.task != "inference" for w in workloads)
    for opt in ranked:
        explain(opt, ranked, gpus[opt.gpu], ref.price_usd if ref else None, any_training)
    feasible = [o for o in ranked if o.feasible]
    if not feasible:
        warnings.append("nothing meets every constraint: raise --budget, allow used or cloud, or lower the"
                        " workload (quantise, LoRA/QLoRA, shorter context); each option says why it was excluded")
    shown = {k for o in feasible[:10] for k in _keys(o)}
    quotes = _api_quotes(workloads, book, feasible)
    for qs in quotes.values():
        shown |= {q.key for q in qs[:2]}
    est = sorted(k for k in shown if k in set(book.estimate_keys()))
    if est:
        warnings.append(f"prices marked 'estimate' (re-check before buying): {', '.join(est)}")
    stale = book.stale(sorted(shown), today)
    borderline = [o for o in ranked if not o.feasible and o.fits and "borderline" in (o.excluded_reason or "")]
    return Recommendation(
        objective=c.objective, years=c.years, constraints=c, workloads=[w.label for w in workloads],
        options=ranked, summary=summary(feasible, c.objective, c.years) + budget_line(ranked, c)
        + have_pc_line(ranked, c) + _api_lines(quotes, feasible),
        uncertainty=uncertainty(feasible, c.objective, borderline), api_quotes=quotes,
        assumptions=[
            *assumptions,
            f"electricity ${kwh:.3f}/kWh; a box is on {on_hours:,.0f} h/month and draws idle power when not busy",
            f"busy power = GPUs × TDP × {c.gpu_power_fraction:g} + {book.assumptions.system_overhead_w:g} W",
        ],
        prices_used=book.used_summary(), stale_prices=stale, warnings=warnings)


# Rental counts whose totals differ by less than this share are equally cheap (`_drop_bigger_rentals`): the
# difference is within the speed model's median error (fine-tuning tokens/s ~7-10 %, docs/ACCURACY.md), and
# the fewer GPUs are the simpler job (no FSDP / multi-GPU launch).
RENTAL_COST_TIE = 0.10


def _drop_bigger_rentals(opts: list[RankedOption]) -> list[RankedOption]:
    """Per-GPU pods (the same listing at 1, 2, 4, 8 GPUs) are one choice: keep the count that costs least
    for the work (fewest GPUs on a tie). More GPUs can cost less when fewer would need offloading, so the
    comparison is on total cost, never assumed. Costs within RENTAL_COST_TIE of each other are a tie: a job
    that scales about linearly costs about the same GPU-hours at any count, and a difference inside the
    speed model's own error is no reason to move a single-GPU fine-tune onto FSDP over two."""
    best: dict[tuple[str, bool], RankedOption] = {}

    def better(o: RankedOption, cur: RankedOption) -> bool:
        tie = abs(o.total_cost_usd - cur.total_cost_usd) <= RENTAL_COST_TIE * max(cur.total_cost_usd, 1e-9)
        return o.gpus < cur.gpus if tie else o.total_cost_usd < cur.total_cost_usd

    for o in opts:
        if o.kind == "rent" and o.fits and o.price_sources:
            k = (_keys(o)[0], "(spot)" in o.name)
            cur = best.get(k)
            if cur is None or better(o, cur):
                best[k] = o
    return [o for o in opts if not (o.kind == "rent" and o.price_sources
                                    and (k := (_keys(o)[0], "(spot)" in o.name)) in best and best[k] is not o)]


def _keys(o: RankedOption) -> list[str]:
    return [s.split(":", 1)[0] for s in o.price_sources]


FitKey = tuple[int, str, int, float | None, bool]


def _fit_key(i: int, cand: Candidate, g: GPU) -> FitKey:
    return (i, g.id, cand.gpus, cand.host_ram_gib, cand.unified)


CONCURRENCY_STEPS = tuple(2 ** k for k in range(11))  # 1 .. 1,024 users served at once


def needs_concurrency(w: Workload, u: WorkloadUsage) -> bool:
    """--min-throughput on an inference workload with no --batch (and no serving load of its own, or a
    closed loop): an aggregate target, so the concurrency that reaches it is searched per option
    (`_find_concurrency`). A plan that names its batch, or a static / offline / rate load, is priced as given."""
    spec = w.plan.get("workload") or {}
    return (w.task == "inference" and bool(u.min_throughput_tok_s) and not spec.get("batch_size")
            and spec.get("load", "concurrency") == "concurrency")


def loaded_tok_s_per_user(p: Performance) -> float:
    """One user's decode speed under the load the result was priced at: 1000 / TPOT, the iteration time a
    running request sees (`serving.serving_curve`'s `tpot_ms`), so it counts the other users' decodes and the
    prompts' prefill share that each iteration carries; `decode_tok_s` where there is no TPOT. A closed loop's
    `decode_tok_s` is one sequence alone (`serving.serving_performance`), not what a user gets at that load."""
    return 1000.0 / p.tpot_ms if p.tpot_ms else float(p.decode_tok_s or 0.0)


def _meets(fit: Fit, u: WorkloadUsage) -> tuple[bool, float]:
    """(fits and keeps the per-user floors, aggregate output tok/s) of one concurrency's planner result: a
    closed loop of that many users (`_at_concurrency`), its floors checked on the loaded figures (the TPOT-based
    tok/s per user, `loaded_tok_s_per_user`, and the TTFT under that load)."""
    r = fit.result
    if r is None or not r.fits or r.performance is None:
        return False, 0.0
    p = r.performance
    ttft_s = p.ttft_ms / 1000.0 if p.ttft_ms is not None else None
    ok = not (u.min_tok_s and loaded_tok_s_per_user(p) < u.min_tok_s) and not (
        u.max_ttft_s and ttft_s is not None and ttft_s > u.max_ttft_s)
    return ok, p.throughput_tok_s or p.decode_tok_s or 0.0


def _at_concurrency(w: Workload, users: int) -> Workload:
    """The workload served to a closed loop of `users` (each sends its next request when the last one ends):
    `workload.load = "concurrency"`, `batch_size = users`, exactly `mlrig plan --load concurrency --batch N`
    and a point of `mlrig serve`'s curve (continuous batching, `serving.serving_curve`)."""
    plan = {**w.plan, "workload": {**(w.plan.get("workload") or {}), "load": "concurrency", "batch_size": users}}
    return w.model_copy(update={"plan": plan})


def _find_concurrency(fits: dict[FitKey, Fit], keys: dict[FitKey, Request], workloads: list[Workload],
                      usages: list[WorkloadUsage], evaluate: Evaluate) -> dict[FitKey, int]:
    """For each option of a workload whose --min-throughput is an aggregate target (no --batch): the fewest
    users served at once, each priced as a closed loop with continuous batching (`_at_concurrency`: what
    `mlrig plan --load concurrency --batch N` and `mlrig serve` give for N users), whose aggregate output
    tok/s reaches it while each user keeps the --min-tok-s / --max-ttft floors under that load (`_meets`);
    when none does, the concurrency with the most aggregate tok/s within the floors. Powers of two 1-1,024
    first, then sixteenths between the last two, then every count below the one found down to the last tried
    (so "fewest" is exact where the aggregate rises with the users), each round one batched planner call.
    `fits` is updated to the result at the chosen concurrency; the answer maps each searched key to it. Out of
    reach, the search refines between the best power of two and the next, so "at most" is the most found, not
    proven."""
    todo = {k: usages[k[0]] for k, f in fits.items() if needs_concurrency(workloads[k[0]], usages[k[0]])
            and f.result is not None and f.result.fits}
    if not todo:
        return {}

    def at(batch: int, k: FitKey) -> Request:
        w, g, setup = keys[k]
        return _at_concurrency(w, batch), g, setup

    trials = [(k, n) for k in todo for n in CONCURRENCY_STEPS]
    tried = dict(zip(trials, best_fits([at(n, k) for k, n in trials], evaluate), strict=True))
    chosen: dict[FitKey, int] = {}
    refine: list[tuple[FitKey, int]] = []
    for k, u in todo.items():
        target = u.min_throughput_tok_s or 0.0
        hit = next((n for n in CONCURRENCY_STEPS if (m := _meets(tried[(k, n)], u))[0] and m[1] >= target), None)
        if hit is None:  # the target is out of reach: the most aggregate throughput within the floors
            within = [n for n in CONCURRENCY_STEPS if _meets(tried[(k, n)], u)[0]]
            chosen[k] = best = max(within, key=lambda n: (_meets(tried[(k, n)], u)[1], -n)) if within else 1
            if within and best < CONCURRENCY_STEPS[-1]:
                refine += [(k, best + j * best // 16) for j in range(1, 16) if j * best // 16 > 0]
            continue
        chosen[k] = hit
        if hit > 2:
            refine += [(k, hit // 2 + j * hit // 32) for j in range(1, 16)]
    refine = sorted(set(refine), key=refine.index)
    if refine:
        more = dict(zip(refine, best_fits([at(n, k) for k, n in refine], evaluate), strict=True))
        tried.update(more)
        for k, n in refine:
            u, target = todo[k], todo[k].min_throughput_tok_s or 0.0
            ok, tok_s = _meets(more[(k, n)], u)
            best_tok_s = _meets(tried[(k, chosen[k])], u)[1]
            fewer_users = tok_s >= target and n < chosen[k]  # reaches it with fewer users
            more_tok_s = best_tok_s < target and tok_s > best_tok_s  # out of reach so far: nearer it
            if ok and (fewer_users or more_tok_s):
                chosen[k] = n
    # the users between the chosen count and the refinement step below it: the fewest that reach it, exactly
    last: list[tuple[FitKey, int]] = []
    for k, u in todo.items():
        n = chosen[k] - 1
        if _meets(tried[(k, chosen[k])], u)[1] < (u.min_throughput_tok_s or 0.0):
            continue  # out of reach: the most found stands
        while n > 0 and (k, n) not in tried:  # at most hit / 32 - 1 of them
            last.append((k, n))
            n -= 1
    if last:
        tried.update(zip(last, best_fits([at(n, k) for k, n in last], evaluate), strict=True))
        for k, n in sorted(last, key=lambda kn: kn[1]):
            u = todo[k]
            ok, tok_s = _meets(tried[(k, n)], u)
            if ok and tok_s >= (u.min_throughput_tok_s or 0.0) and n < chosen[k]:
                chosen[k] = n
    for k, n in chosen.items():
        if tried[(k, n)].result is not None:  # the closed loop at the chosen users, even at one
            fits[k] = tried[(k, n)]
    return chosen


def _one_slot_notes(workloads: list[Workload], fits: dict[FitKey, Fit], users: dict[FitKey, int]) -> list[str]:
    """Where the concurrency search ran on an engine that serves one request at a time by default
    (`serving.DEFAULT_MAX_NUM_SEQS`: llama.cpp's server with one --parallel slot, mlx-lm's server, HF
    transformers), say so: the other users queue for the slot, as `mlrig plan` prices it, and --max-num-seqs N
    prices N slots."""
    from mlrig.estimators.serving import DEFAULT_MAX_NUM_SEQS

    out = []
    for i, w in enumerate(workloads):
        if (w.plan.get("workload") or {}).get("max_num_seqs") is not None:
            continue
        engines = sorted({e for k, f in fits.items() if k in users and k[0] == i and f.result is not None
                          and (e := (f.result.engine or "").lower()) and DEFAULT_MAX_NUM_SEQS.get(e) == 1})
        if engines:
            out.append(f"{w.label}: {', '.join(engines)} serve{'s' if len(engines) == 1 else ''} one request at a time"
                       " by default (llama.cpp's server: one --parallel slot), as `mlrig plan` prices it: the other"
                       " users wait for the slot; --max-num-seqs N prices N slots (llama-server --parallel N)")
    return out


def _outcome(w: Workload, u: WorkloadUsage, tokens: float | None, cand: Candidate, g: GPU, c: Constraints,
             fit: Fit | None, users: int | None = None) -> WorkloadOutcome:
    """One workload on one option: the planner's figures, its speed band, and whether it meets the floors.
    `users`: the concurrency `_find_concurrency` chose for an aggregate --min-throughput; `fit` is then that
    closed loop's result, and the per-user figures are the loaded ones (TPOT-based tok/s, TTFT under load)."""
    o = WorkloadOutcome(label=w.label, task=w.task, fits=False, concurrency=users)
    blocked = gate(w, g, c.allow_old, c.any_vendor)
    if blocked or fit is None:
        o.note = blocked
        return o
    r = fit.result
    if r is None:
        o.note = f"could not be evaluated: {fit.error}"
        return o
    o.fits, o.hint, o.engine = bool(r.fits), fit.hint, r.engine
    layout = "single GPU" if cand.gpus == 1 else _layout(r)
    o.parallel = ", ".join(x for x in (layout, fit.recipe) if x)
    if r.memory is not None:
        o.per_gpu_gib, o.capacity_gib = r.memory.per_gpu_gib, r.memory.gpu_capacity_gib
        if not o.fits and r.memory.notes:
            o.note = r.memory.notes[-1]
    p = r.performance
    if not o.fits or p is None:
        return o
    lo, hi, validated = speed_band(r, g, w.task, str(w.training.get("method", "full")))
    if w.task == "inference":
        o.decode_tok_s, o.throughput_tok_s = p.decode_tok_s, p.throughput_tok_s or p.decode_tok_s
        thr_hi = hi
        if users is not None:
            # a closed loop of `users`: the per-user speed is the loaded one (1000 / TPOT), with TPOT's band,
            # and the aggregate carries the throughput band (each figure's own validation scope)
            o.decode_tok_s = loaded_tok_s_per_user(p)
            lo, hi = _ratio_band(p.error_band.get("tpot_ms", hi - 1.0))
            thr_hi = _ratio_band(p.error_band.get("throughput_tok_s", thr_hi - 1.0))[1]
        o.ttft_s = p.ttft_ms / 1000.0 if p.ttft_ms is not None else None
        tb = p.error_band.get("ttft_ms", 0.4)
        if o.ttft_s is not None:
            o.ttft_range_s = (o.ttft_s * (1 - tb), o.ttft_s * (1 + tb))
        if o.decode_tok_s:
            o.decode_range_tok_s = (o.decode_tok_s * lo, o.decode_tok_s * hi)
        misses = []  # (misses on the estimate, still misses at the better end of the band)
        if u.min_tok_s and (o.decode_tok_s or 0.0) < u.min_tok_s:
            misses.append((o.decode_tok_s or 0.0) * hi < u.min_tok_s)
        if u.max_ttft_s and o.ttft_s is not None and o.ttft_s > u.max_ttft_s:
            misses.append(o.ttft_s * (1 - tb) > u.max_ttft_s)
        if u.min_throughput_tok_s and (o.throughput_tok_s or 0.0) < u.min_throughput_tok_s:
            misses.append((o.throughput_tok_s or 0.0) * thr_hi < u.min_throughput_tok_s)
        o.meets_floor = not misses
        o.floor_borderline = bool(misses) and not any(misses)
    else:
        o.train_tokens_per_s, o.speed_validated = p.train_tokens_per_s, validated
        o.speed_band = hi - 1.0
        if tokens and o.train_tokens_per_s:
            o.hours_per_run = tokens / o.train_tokens_per_s / 3600.0
            o.hours_per_run_range = (o.hours_per_run / hi, o.hours_per_run / lo)
    return o


def _ratio_band(b: float) -> tuple[float, float]:
    """(low, high) multipliers of a ± fraction, as `evaluation.speed_band` takes them (`band_multipliers`)."""
    return band_multipliers(b)


def _layout(r: Any) -> str:
    notes = " ".join(r.notes or [])
    if "pipeline" in notes:
        return "layers split (pipeline)"
    if "tensor parallelism" in notes:
        return "tensor parallel"
    return "data parallel" if r.engine is None else "split by the engine"


def _busy_hours(outcomes: list[WorkloadOutcome], usages: list[WorkloadUsage], which: int) -> float:
    """Busy hours a month: serving hours, plus runs × hours per run (which: 0 central, 1 fast, 2 slow)."""
    busy = 0.0
    for o, u in zip(outcomes, usages, strict=True):
        if o.task == "inference":
            busy += (u.hours_per_day or 0.0) * DAYS_PER_MONTH
        elif o.hours_per_run is not None:
            h = o.hours_per_run if which == 0 else (o.hours_per_run_range or (o.hours_per_run,) * 2)[which - 1]
            busy += (u.runs_per_week or 0.0) * WEEKS_PER_MONTH * h
    return busy


def _price_option(cand: Candidate, g: GPU, outcomes: list[WorkloadOutcome], usages: list[WorkloadUsage],
                  c: Constraints, book: PriceBook, kwh: float, on_hours: float, today: dt.date) -> RankedOption:
    a = book.assumptions

    def cost(busy: float) -> tuple[float, float, float, float, float]:
        """(per month, total, running per month, cost per busy hour, resale netted) at `busy` hours a month."""
        usage = Usage(hours_per_month=min(busy, HOURS_PER_MONTH), years=c.years, usd_per_kwh=kwh,
                      pue=a.pue_home, on_hours_per_month=max(on_hours, min(busy, HOURS_PER_MONTH)))
        if cand.kind == "buy":
            lc = local_cost(LocalSpec(name=cand.name, items=cand.items, power_w=cand.busy_power_w,
                                      idle_power_w=cand.idle_power_w,
                                      upkeep_fraction_per_year=a.upkeep_fraction_per_year), usage)
            return (lc.cost_per_month_usd, lc.total_usd, lc.energy_usd_per_month + lc.upkeep_usd_per_month,
                    lc.cost_per_busy_hour_usd or 0.0, lc.resale_usd)
        # renting is not limited to one machine's 730 h: beyond them, instances run side by side
        cc = cloud_cost(CloudSpec(name=cand.name, usd_per_hour=cand.usd_per_hour, spot=cand.spot,
                                  slowdown=max(1.0, busy / HOURS_PER_MONTH),
                                  interruption_overhead=a.spot_interruption_overhead), usage)
        hourly = cand.usd_per_hour * (1 + (a.spot_interruption_overhead if cand.spot else 0.0))
        return cc.cost_per_month_usd, cc.total_usd, cc.cost_per_month_usd, hourly, 0.0

    busy = _busy_hours(outcomes, usages, 0)
    per_month, total, running, hourly, resale = cost(busy)
    lo_total, hi_total = cost(_busy_hours(outcomes, usages, 1))[1], cost(_busy_hours(outcomes, usages, 2))[1]
    for o in outcomes:
        if o.hours_per_run is not None and o.fits:
            o.usd_per_run = hourly * o.hours_per_run
        if o.task == "inference" and o.fits and o.throughput_tok_s:
            o.usd_per_mtok = usd_per_million_tokens(hourly, o.throughput_tok_s)
    fits = all(o.fits for o in outcomes)
    reason = _excluded_reason(cand, outcomes, usages, busy, c)
    sources = [book.source_line(k) for k in cand.price_keys]
    return RankedOption(
        name=cand.name, kind=cand.kind, category=cand.category, gpu=g.id, gpus=cand.gpus,
        owned_gpus=cand.owned_gpus, total_gpu_memory_gib=round(g.capacity_gib * cand.gpus, 2),
        upfront_usd=cand.upfront_usd, usd_per_hour=cand.usd_per_hour if cand.kind == "rent" else None,
        cost_per_month_usd=per_month, total_cost_usd=total,
        total_cost_range_usd=(min(lo_total, hi_total), max(lo_total, hi_total)) if lo_total != hi_total else None,
        busy_hours_per_month=busy, running_usd_per_month=running, resale_usd=resale, fits=fits, feasible=reason is None,
        excluded_reason=reason, speed="; ".join(o.speed_text() for o in outcomes), workloads=outcomes,
        price_sources=sources, stale_prices=book.stale(cand.price_keys, today),
        purchase_items=cand.items if cand.kind == "buy" else [],
        busy_power_w=cand.busy_power_w if cand.kind == "buy" else None,
        idle_power_w=cand.idle_power_w if cand.kind == "buy" else None, build=cand.build, notes=cand.notes)


def _excluded_reason(cand: Candidate, outcomes: list[WorkloadOutcome], usages: list[WorkloadUsage],
                     busy: float, c: Constraints) -> str | None:
    bad = next((o for o in outcomes if not o.fits), None)
    if bad is not None:
        if bad.per_gpu_gib is None or bad.capacity_gib is None:
            return f"{bad.label}: {bad.note}"
        hint = f"; {bad.hint}" if bad.hint else ""
        if bad.per_gpu_gib <= bad.capacity_gib and bad.note:  # fits the GPU, not the machine (host RAM)
            return f"{bad.label} does not fit: {bad.note}{hint}"
        return f"{bad.label} does not fit: needs {bad.per_gpu_gib:.1f} GiB per GPU, has {bad.capacity_gib:.1f}{hint}"
    for o, u in zip(outcomes, usages, strict=True):
        if o.meets_floor:
            continue
        edge = "borderline - " if o.floor_borderline else ""
        if u.min_tok_s and (o.decode_tok_s or 0.0) < u.min_tok_s:
            band = ""
            if o.decode_range_tok_s:
                band = f" (band {o.decode_range_tok_s[0]:.1f}-{o.decode_range_tok_s[1]:.1f})"
            return (f"{o.label}: {edge}{o.decode_tok_s or 0:.1f} tok/s per user{band} is below the"
                    f" {u.min_tok_s:g} tok/s floor (--min-tok-s)")
        if u.max_ttft_s and o.ttft_s is not None and o.ttft_s > u.max_ttft_s:
            band = f" (band {o.ttft_range_s[0]:.1f}-{o.ttft_range_s[1]:.1f} s)" if o.ttft_range_s else ""
            return (f"{o.label}: {edge}first token after {o.ttft_s:.1f} s{band}, over the {u.max_ttft_s:g} s floor"
                    " (--max-ttft)")
        if o.concurrency is not None:
            return (f"{o.label}: at most {o.throughput_tok_s or 0:,.0f} tok/s aggregate (at a load of {o.concurrency}"
                    f" user{'s' if o.concurrency != 1 else ''}, the most the per-user floors allow; closed loop),"
                    f" below the {u.min_throughput_tok_s or 0:,.0f} asked (--min-throughput)")
        return (f"{o.label}: {o.throughput_tok_s or 0:,.0f} tok/s aggregate over --batch sequences is below the"
                f" {u.min_throughput_tok_s or 0:,.0f} asked (--min-throughput; a larger --batch serves more at once)")
    if cand.kind == "buy" and busy > HOURS_PER_MONTH + 1e-6:
        return f"too slow: needs {busy:,.0f} busy h/month at this usage; one machine has {HOURS_PER_MONTH:.0f}"
    if cand.kind == "buy" and c.budget_usd is not None and cand.upfront_usd > c.budget_usd:
        return f"costs ${cand.upfront_usd:,.0f} up front, over the ${c.budget_usd:,.0f} budget"
    return None


def cheapest_over_budget(ranked: list[RankedOption], c: Constraints) -> RankedOption | None:
    """When the budget rules out every purchase, the cheapest purchase that would do the job (it fits and meets
    every floor, only its price is over the budget); None when a purchase is feasible or none would do."""
    if c.budget_usd is None or c.cloud_only or any(o.feasible and o.kind == "buy" for o in ranked):
        return None
    over = [o for o in ranked if o.kind == "buy" and o.fits and "budget" in (o.excluded_reason or "")]
    return min(over, key=lambda o: o.upfront_usd) if over else None


def budget_line(ranked: list[RankedOption], c: Constraints, at: str = "") -> list[str]:
    """When the budget rules out every purchase, say what the cheapest purchase that would do costs (`at`: the
    precision it was priced at, where not the workload's own: " at GGUF Q4_K_M on llama.cpp")."""
    cheap = cheapest_over_budget(ranked, c)
    if cheap is None or c.budget_usd is None:
        return []
    return [f"nothing to buy within the ${c.budget_usd:,.0f} budget: the cheapest machine that does the job{at},"
            f" {cheap.name}, costs ${cheap.upfront_usd:,.0f} ({cheap.speed}); --have-pc if you own a PC for the card"]


# The platform a `--have-pc` PC stands in for: a desktop that takes one GPU (options.Ownership.pc).
ONE_GPU_PLATFORM_PREFIX = "desktop-1gpu"


def have_pc_line(ranked: list[RankedOption], c: Constraints) -> list[str]:
    """With a budget and no `--have-pc`, every card is priced in a new one-GPU desktop (prices.toml
    [platform.desktop-1gpu]: $1,225, an itemised 2026 estimate; the catalog has no used or refurbished base). Name
    the cards that are over the budget only because of that base, and that `--have-pc` would price them alone;
    [] when there are none or the user already said what they own."""
    if c.budget_usd is None or c.have_pc or c.have or c.cloud_only:
        return []
    found: list[tuple[float, str, float]] = []
    for o in ranked:
        if o.kind != "buy" or not o.fits or "budget" not in (o.excluded_reason or ""):
            continue
        base = sum(p.price_usd for p in o.purchase_items if p.name.startswith(ONE_GPU_PLATFORM_PREFIX))
        if base and o.upfront_usd - base <= c.budget_usd:
            found.append((o.upfront_usd - base, o.name.split(" + ")[0], base))
    if not found:
        return []
    found.sort()
    cards = ", ".join(f"{name} at ${usd:,.0f}" for usd, name, _ in found[:3])
    more = f" and {len(found) - 3} more" if len(found) > 3 else ""
    return [f"--have-pc would change this: each card here is priced in a new {ONE_GPU_PLATFORM_PREFIX} "
            f"(${found[0][2]:,.0f}); in a PC you own, {cards}{more} fit the ${c.budget_usd:,.0f} budget"]


def _api_quotes(workloads: list[Workload], book: PriceBook, feasible: list[RankedOption]) -> dict[str, list[ApiQuote]]:
    """Hosted-API prices for each inference workload's model (open models only), at its prompt/output mix."""
    from mlrig.catalog.models import resolve_model
    from mlrig.workload import request_lengths

    out: dict[str, list[ApiQuote]] = {}
    for w in workloads:
        if w.task != "inference":
            continue
        m = w.plan.get("model")
        name = m.get("name") if isinstance(m, dict) else m
        if not isinstance(name, str):
            continue
        try:
            arch = resolve_model(name)
        except MlrigError:
            continue
        params_b = arch.total_params / 1e9
        quotes = api_quotes(list(book.apis.values()), arch.id, params_b,
                            *request_lengths(w.plan.get("workload") or {}))
        if quotes:
            out[w.label] = quotes
    return out


def _api_lines(quotes: dict[str, list[ApiQuote]], feasible: list[RankedOption]) -> list[str]:
    lines = []
    for label, qs in quotes.items():
        q = qs[0]
        best = next((o for o in feasible), None)
        local = next((w.usd_per_mtok for w in best.workloads if w.label == label), None) if best else None
        vs = f" vs {best.name} ${local:,.2f}/Mtok at its throughput" if best and local else ""
        lines.append(f"hosted API: {q.provider} serves {q.model} at ${q.usd_per_mtok_generated:,.2f} per million"
                     f" generated tokens (prompt included; {q.date}){vs}")
    return lines
