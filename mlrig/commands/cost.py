"""`mlrig cost`: total cost of ownership of one box against cloud instances doing the same work (render only).

Hours are busy hours on the box you would buy. With a workload (`--model M ...`, the same flags as
`recommend`), every option is evaluated by the planner: a cloud instance that trains twice as fast is
billed half the hours, one that cannot hold the model is listed as such, and inference is also priced
per million tokens against hosted APIs. Without one, only instances with the same GPU are compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from mlrig.commands._common import usd
from mlrig.commands.advisor import (
    CTX,
    WORKLOAD_HELP,
    JsonFlag,
    Kwh,
    PlanOpt,
    PricesOpt,
    SourcesFlag,
    Years,
    _user_errors,
)

DEFAULT_SAME_GPU_ONLY = "speeds not compared: give --model ... to compare other GPUs doing the same work"


def cost_cmd(
    ctx: typer.Context,
    buy: Annotated[str | None, typer.Option("--buy", help="price key (gpu.* or system.*) or a GPU name")] = None,
    plan: PlanOpt = None,
    count: Annotated[int, typer.Option("--count", "-n", help="GPUs in the box (1-8)")] = 1,
    price: Annotated[float | None, typer.Option(
        "--price", help="override the per-GPU/system price, USD: 1600, 1.6k, $1,600", metavar="<usd>",
        parser=usd("--price"))] = None,
    rent: Annotated[list[str] | None, typer.Option("--rent", help="cloud price key (repeatable)")] = None,
    spot: Annotated[bool, typer.Option("--spot", help="also price spot where listed")] = False,
    hours_per_month: Annotated[float | None, typer.Option(
        "--hours-per-month", help="busy hours a month on the box (≤ 730)")] = None,
    runs_per_week: Annotated[float | None, typer.Option(
        "--runs-per-week", help="fine-tuning runs per week (with --hours-per-run)")] = None,
    hours_per_run: Annotated[float | None, typer.Option("--hours-per-run", help="hours per run on the box")] = None,
    utilization: Annotated[float, typer.Option("--utilization", help="average GPU draw / TDP while busy")] = 0.8,
    measured_w: Annotated[float | None, typer.Option("--measured-w", help="measured wall power while busy")] = None,
    on_hours: Annotated[float | None, typer.Option(
        "--on-hours-per-month", help="hours a month the box is on (idle power; default 730)")] = None,
    years: Years = 3.0,
    kwh_price: Kwh = None,
    pue: Annotated[float | None, typer.Option("--pue", help="facility overhead (1.0 at home)")] = None,
    tokens_per_s: Annotated[float | None, typer.Option("--tokens-per-s", help="served tokens/s for $/Mtok")] = None,
    prices: PricesOpt = None,
    sources: SourcesFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Total cost of ownership, local vs cloud doing the same work: per month, break-even, $/run, $/Mtok."""
    report = cost_report(list(ctx.args), buy=buy, plan=plan, count=count, price=price, rent=rent, spot=spot,
                         hours_per_month=hours_per_month, runs_per_week=runs_per_week, hours_per_run=hours_per_run,
                         utilization=utilization, measured_w=measured_w, on_hours=on_hours, years=years,
                         kwh_price=kwh_price, pue=pue, tokens_per_s=tokens_per_s, prices=prices,
                         sources=sources or as_json)
    if as_json:
        from mlrig.commands._common import print_json

        print_json(cost_json(report))
        return
    _print(report.res, report.setup, years, report.res.usage.hours_per_month, hours_per_run, sources)


@dataclass(frozen=True)
class CostReport:
    """What `mlrig cost` computes: the TcoResult, the option rows behind it and the stale price keys."""

    res: Any
    setup: dict[str, Any]
    stale: list[str]


def cost_report(args: list[str] | None = None, *, buy: str | None = None, plan: list[Path] | None = None,
                count: int = 1, price: float | None = None, rent: list[str] | None = None, spot: bool = False,
                hours_per_month: float | None = None, runs_per_week: float | None = None,
                hours_per_run: float | None = None, utilization: float = 0.8, measured_w: float | None = None,
                on_hours: float | None = None, years: float = 3.0, kwh_price: float | None = None,
                pue: float | None = None, tokens_per_s: float | None = None, prices: list[Path] | None = None,
                sources: bool = False) -> CostReport:
    """`mlrig cost` for its flags (`args`: the workload flags, `--model M ...`); raises MlrigError on bad input."""
    from mlrig.advisor.cost import HOURS_PER_MONTH, WEEKS_PER_MONTH, compare_tco
    from mlrig.advisor.prices import load_prices
    from mlrig.commands.advisor import parse_workload_args, plan_file_workload
    from mlrig.errors import MlrigError, require_positive

    if not 1 <= count <= 8:
        raise MlrigError(f"--count must be 1-8, got {count}")
    require_positive("--utilization", utilization, maximum=1.0)
    for name, opt, top in (("--price", price, 1e8), ("--hours-per-month", hours_per_month, None),
                           ("--runs-per-week", runs_per_week, 1000), ("--hours-per-run", hours_per_run, 10000),
                           ("--measured-w", measured_w, 1e5), ("--kwh-price", kwh_price, 10),
                           ("--tokens-per-s", tokens_per_s, 1e9), ("--on-hours-per-month", on_hours, None)):
        require_positive(name, opt, allow_zero=True, maximum=top)
    for name, h in (("--hours-per-month", hours_per_month), ("--on-hours-per-month", on_hours)):
        if h is not None and h > HOURS_PER_MONTH:
            raise MlrigError(f"{name} {h:g} is more than a month has ({HOURS_PER_MONTH:.0f} h)")
    workloads = parse_workload_args(list(args or []), [plan_file_workload(p) for p in plan or []], command="cost")
    if len(workloads) > 1:
        raise MlrigError("cost compares one workload; give one --model (use `mlrig recommend` for several)")
    work = workloads[0] if workloads else None
    if work is not None:  # the workload's own usage flags (`--model M --hours-per-day 8`), as recommend reads them
        u = work.usage
        if hours_per_month is None and u.hours_per_day is not None:
            hours_per_month = u.hours_per_day * HOURS_PER_MONTH / 24.0
        runs_per_week = runs_per_week if runs_per_week is not None else u.runs_per_week
        hours_per_run = hours_per_run if hours_per_run is not None else u.hours_per_run
    if hours_per_month is None:
        if runs_per_week is None or hours_per_run is None:
            raise MlrigError("give --hours-per-month, --hours-per-day after --model (serving), or --runs-per-week"
                             " with --hours-per-run")
        hours_per_month = runs_per_week * hours_per_run * WEEKS_PER_MONTH
        if hours_per_month > HOURS_PER_MONTH:
            raise MlrigError(f"--runs-per-week × --hours-per-run = {hours_per_month:,.0f} h a month; a month has"
                             f" {HOURS_PER_MONTH:.0f}")
    book = load_prices(prices)
    setup = _plan_cost(book, buy, count, price, rent, spot, hours_per_month, hours_per_run, utilization, measured_w,
                      on_hours, years, kwh_price, pue, tokens_per_s, work)
    res = compare_tco(setup["local"], setup["clouds"], setup["usage"], hours_per_run=hours_per_run)
    res.prices_used = book.used_summary() + setup["sources"]
    res.warnings += setup["warnings"]
    est = [k for k in setup["keys"] if k in set(book.estimate_keys())]
    if est:
        res.warnings.append(f"estimated prices (re-check): {', '.join(est)}")
    stale = book.stale(setup["keys"], setup["today"])
    if stale:
        res.warnings.append(f"prices older than 6 months: {', '.join(stale)} - re-check (`mlrig prices --stale`)")
    a = book.assumptions
    if sources:
        res.assumptions += [f"resale source: {a.resale_source}", f"electricity source: {a.electricity_source}",
                            f"idle power source: {a.idle_source}"]
    return CostReport(res=res, setup=setup, stale=stale)


def cost_json(report: CostReport) -> dict[str, Any]:
    """`mlrig cost --json`: the TcoResult with the option rows, exclusions, hosted-API quotes and stale prices."""
    out: dict[str, Any] = report.res.model_dump(mode="json")
    out["options"] = report.setup["rows"]
    out["excluded"] = report.setup["excluded"]
    out["api_quotes"] = [q.model_dump() for q in report.setup["quotes"]]
    out["stale_prices"] = report.stale
    return out


def _plan_cost(book: Any, buy: str | None, count: int, price: float | None, rent: list[str] | None, spot: bool,
               hours: float, hours_per_run: float | None, utilization: float, measured_w: float | None,
               on_hours: float | None, years: float, kwh_price: float | None, pue: float | None,
               tokens_per_s: float | None, work: Any) -> dict[str, Any]:
    """Everything `cost` compares: the local spec, each cloud spec with its slowdown from the planner (when a
    workload is given), the usage, the rows to print and the sources."""
    import datetime as dt

    from mlrig.advisor.cost import (
        CloudSpec,
        LocalSpec,
        PurchaseItem,
        Usage,
        api_quotes,
        usd_per_million_tokens,
    )
    from mlrig.advisor.evaluation import Setup, best_fit, gate, planner_evaluate
    from mlrig.advisor.options import choose_platform, is_unified
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.commands.advisor import _validated
    from mlrig.errors import MlrigError

    a = book.assumptions
    today = dt.date.today()
    keys: list[str] = []
    warnings: list[str] = []
    key = buy or "rtx-3090-used"
    from mlrig.catalog.gpus import split_gpu_count

    counted = split_gpu_count(key)
    if counted is not None and key not in book.systems and key not in book.gpus:  # --buy '2x RTX 3090'
        if count not in (1, counted[0]):
            raise MlrigError(f"--buy {key!r} holds a count of {counted[0]} and --count says {count}: give one")
        count, key = counted
    host_ram: float | None
    if key in book.systems:
        s = book.systems[key]
        g = resolve_gpu(s.gpu)
        if count != 1:
            raise MlrigError(f"{key} is a whole machine; --count does not apply")
        items = [PurchaseItem(name=key, price_usd=price if price is not None else s.price_usd,
                              annual_decline=a.resale_decline_new_per_year)]
        power, idle, host_ram, keys = s.power_w * utilization, s.idle_w, None, [key]
    else:
        entry = book.gpus.get(key)
        if entry is None:
            g = resolve_gpu(key)
            matches = sorted((e for e in book.gpus.values() if _gid(e.gpu) == g.id), key=lambda e: e.price_usd)
            if not matches and price is None:
                why = book.unpriced_reason(g.id) or "not in the price book yet"
                raise MlrigError(f"no price for {g.id} ({why}); give --price USD")
            entry = matches[0] if matches else None
        g = resolve_gpu(entry.gpu if entry else key)
        unit = price if price is not None else entry.price_usd if entry else 0.0
        choice = choose_platform(book, g, count)
        if choice is None:
            raise MlrigError(f"no platform in the price book holds {count} GPUs; use --count 1-4")
        used = bool(entry and entry.condition == "used")
        decline = a.resale_decline_used_per_year if used else a.resale_decline_new_per_year
        cond = " (used)" if used else ""
        items = [PurchaseItem(name=f"{count}× {g.id}{cond}", price_usd=unit * count, annual_decline=decline),
                 PurchaseItem(name=choice.key, price_usd=choice.price_usd,
                              annual_decline=a.resale_decline_new_per_year)]
        power = count * (g.tdp_w or 300.0) * utilization + a.system_overhead_w
        idle = count * a.idle_gpu_w + a.idle_system_w
        host_ram = choice.ram_gib
        keys = ([entry.key] if entry else []) + [choice.key]
        warnings += [f"platform {choice.key}: priced upgrade {u}" for u in choice.upgrades]
    if measured_w is not None:
        power = measured_w
    local_name = " + ".join(i.name for i in items)
    usage = _validated(Usage, {
        "hours_per_month": hours, "years": years,
        "usd_per_kwh": kwh_price if kwh_price is not None else a.electricity_usd_per_kwh,
        "pue": pue if pue is not None else a.pue_home,
        "on_hours_per_month": on_hours if on_hours is not None else a.powered_on_hours_per_month,
    }, flags={"hours_per_month": "--hours-per-month", "years": "--years", "usd_per_kwh": "--kwh-price",
              "pue": "--pue", "on_hours_per_month": "--on-hours-per-month"})

    unvalidated: list[str] = []  # training scopes without enough published runs, as speed_of meets them

    def speed_of(gpu: Any, n: int, ram: float | None) -> tuple[float | None, float | None, str | None]:
        """(training or decode speed, throughput, why not) of the workload on n × gpu, via the planner."""
        if work is None:
            return None, None, None
        blocked = gate(work, gpu, allow_old=True)
        if blocked:
            return None, None, blocked
        f = best_fit(work, gpu, Setup(count=n, host_ram_gib=ram, unified=is_unified(gpu)), planner_evaluate)
        r = f.result
        if r is None or not r.fits or r.performance is None:
            mem = r.memory if r is not None else None
            need = f"needs {mem.per_gpu_gib:.1f} of {mem.gpu_capacity_gib:.1f} GiB per GPU" if mem else (f.error or "")
            return None, None, f"{work.label} does not fit ({need})"
        p = r.performance
        if work.task == "inference":
            return p.decode_tok_s, p.throughput_tok_s or p.decode_tok_s, None
        v = r.validation.get("train_tokens_per_s")
        if v is None or not v.validated:
            unvalidated.append(v.scope if v is not None else gpu.id)
        return p.train_tokens_per_s, None, None

    local_speed, local_tput, why = speed_of(g, count, host_ram)
    if why:
        raise MlrigError(f"{local_name}: {why}; pick a bigger box or change the workload")
    local = LocalSpec(name=local_name, items=items, power_w=power, idle_power_w=idle,
                      upkeep_fraction_per_year=a.upkeep_fraction_per_year)
    if rent:
        chosen = []
        for k in rent:
            if k not in book.clouds:
                raise MlrigError(f"unknown cloud price key {k!r}; see `mlrig prices --section cloud`")
            cl = book.clouds[k]
            chosen.append((k, count if cl.per_gpu and cl.max_count >= count else cl.gpu_count))
    else:
        chosen = _default_clouds(book, g.id, count, work is not None)
        if work is None and not any(_gid(book.clouds[k].gpu) == g.id for k, _ in chosen):
            warnings.append(DEFAULT_SAME_GPU_ONLY)
    clouds, rows, excluded = [], [], []
    fitted: set[str] = set()  # a listing that already fits at a smaller count: more of it cannot cost less
    for k, n in sorted(chosen, key=lambda kn: (kn[0], kn[1])):
        cl = book.clouds[k]
        cg = resolve_gpu(cl.gpu)
        rate = cl.on_demand_usd_h * (n if cl.per_gpu else 1)
        if k in fitted:
            continue
        sp, tput, why = speed_of(cg, n, None)
        if why:
            excluded.append({"key": k, "gpus": n, "reason": why})
            continue
        fitted.add(k)
        slow = 1.0
        if work is not None and work.task != "inference" and sp and local_speed:
            slow = local_speed / sp
        size = f" ×{n}" if cl.per_gpu and n > 1 else ""
        keys.append(k)
        variants = [(False, rate)] + ([(True, cl.spot_usd_h * (n if cl.per_gpu else 1))]
                                      if spot and cl.spot_usd_h is not None else [])
        for is_spot, r in variants:
            name = f"{cl.provider} {cl.instance}{size}{' (spot)' if is_spot else ''}"
            clouds.append(CloudSpec(name=name, usd_per_hour=r, spot=is_spot, slowdown=slow,
                                    interruption_overhead=a.spot_interruption_overhead))
            rows.append({"name": name, "key": k, "gpus": n, "gpu": cg.id, "speed": sp, "throughput_tok_s": tput,
                         "slowdown": slow, "usd_per_mtok": usd_per_million_tokens(r, tput or tokens_per_s or 0)})
    if not clouds:
        raise MlrigError("no cloud option can run this; see the reasons with --json, or give --rent KEY")
    if work is not None and work.task != "inference" and unvalidated:
        warnings.append(
            f"training speed is not validated for {', '.join(sorted(set(unvalidated))[:3])} (fewer than 5"
            f" published runs: `mlrig validate`); the billed hours there carry the band `plan` gives the speed")
    quotes = []
    if work is not None and work.task == "inference":
        from mlrig.catalog.models import resolve_model

        m = work.plan["model"]["name"]
        arch = resolve_model(m)
        from mlrig.workload import request_lengths

        quotes = api_quotes(list(book.apis.values()), arch.id, arch.total_params / 1e9,
                            *request_lengths(work.plan.get("workload") or {}))
        keys += [q.key for q in quotes[:3]]
    return {"local": local, "clouds": clouds, "usage": usage, "rows": rows, "excluded": excluded, "keys": keys,
            "sources": [book.source_line(k) for k in dict.fromkeys(keys)], "warnings": warnings, "quotes": quotes,
            "local_speed": local_speed, "local_tput": local_tput or tokens_per_s, "work": work, "today": today,
            "hours_per_run": hours_per_run}


def _gid(name: str) -> str | None:
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import MlrigError

    try:
        return resolve_gpu(name).id
    except MlrigError:
        return None


def _default_clouds(book: Any, gid: str, count: int, have_work: bool) -> list[tuple[str, int]]:
    """Same GPU at the same count where listed; with a workload, also the cheapest instance per GPU type
    that has at least as many GPUs' worth of memory (the planner then says which can hold the job)."""
    out: list[tuple[str, int]] = []
    for k, cl in book.clouds.items():
        if _gid(cl.gpu) != gid:
            continue
        if (cl.per_gpu and cl.max_count >= count) or (not cl.per_gpu and cl.gpu_count == count):
            out.append((k, count))
    if have_work or not out:
        cheapest: dict[str, tuple[float, str, int]] = {}
        for k, cl in book.clouds.items():
            g = _gid(cl.gpu)
            if g is None or g == gid:
                continue
            for n in ((1, 2, 4, 8) if cl.per_gpu else (cl.gpu_count,)):
                if n > (cl.max_count if cl.per_gpu else cl.gpu_count):
                    continue
                rate = cl.on_demand_usd_h * (n if cl.per_gpu else 1)
                slot = f"{g}/{n}"
                if slot not in cheapest or rate < cheapest[slot][0]:
                    cheapest[slot] = (rate, k, n)
        ranked = sorted(cheapest.values())
        out += [(k, n) for _, k, n in ranked[: (12 if have_work else 5)]]
    return out


def _print(res: Any, plan: dict[str, Any], years: float, hours: float, hours_per_run: float | None,
           sources: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    from mlrig.advisor.cost import break_even_text
    from mlrig.commands.advisor import _console

    con = _console()
    lc = res.local
    con.print(
        f"[bold]{escape(lc.name)}[/]: ${lc.upfront_usd:,.0f} up front, energy ${lc.energy_usd_per_month:,.0f}/month"
        f" (${lc.idle_energy_usd_per_month:,.0f} of it idle), resale after {years:g} y ${lc.resale_usd:,.0f}"
        f" → ${lc.cost_per_month_usd:,.0f}/month (${lc.total_usd:,.0f} total)")
    work = plan["work"]
    if work is not None and plan["local_speed"]:
        unit = "tok/s decode" if work.task == "inference" else "tok/s training"
        con.print(f"{escape(work.label)} on it: {plan['local_speed']:,.0f} {unit} (planner); every cloud below is"
                  " billed for the same work" + ("" if work.task == "inference" else " at its own speed"))
    t = Table(title=f"{hours:,.0f} busy h/month on the box, over {years:g} years")
    columns = ["cloud", "$/h", "h/month\nbilled", "$/month", "owning pays\noff", "payback\nmonths"]
    if hours_per_run is not None:
        columns += ["$/run\ncloud", "$/run\nlocal"]
    for col in columns:
        t.add_column(col, justify="left" if col in ("cloud", "owning pays\noff") else "right",
                     no_wrap=col != "cloud")

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"

    for cmp in sorted(res.comparisons, key=lambda x: x.cloud.cost_per_month_usd):
        be = break_even_text(cmp.break_even_hours_per_month)
        be = be.split(" (")[0] if be.startswith("never") else be.removeprefix("above ").replace(" busy", "")
        pay = cmp.payback_months
        cells = [f(cmp.cloud.usd_per_hour), f(cmp.cloud.billed_hours_per_month), f(cmp.cloud.cost_per_month_usd),
                 ("> " if not be.startswith("never") else "") + be,
                 # no saving at all: never; a saving too small to repay within the horizon: beyond it (a
                 # 73-month payback is not "never", beside an "owning pays off > 51 h/month" met at 60)
                 "never" if pay is None else f"> {12 * years:.0f}" if pay > 12 * years else f(pay),
                 f(cmp.cost_per_run_usd), f(cmp.local_cost_per_run_usd)]
        t.add_row(escape(cmp.cloud.name), *cells[: len(columns) - 1])
    con.print(t)
    con.print(escape(res.verdict))
    fitted = {r["key"] for r in plan["rows"]}
    for e in plan["excluded"]:
        if e["key"] not in fitted:
            con.print(f"   ✗ {escape(e['key'])} ×{e['gpus']}: {escape(e['reason'])}")
    tput = plan["local_tput"]
    if tput and lc.cost_per_busy_hour_usd:
        from mlrig.advisor.cost import usd_per_million_tokens

        local_mtok = usd_per_million_tokens(lc.cost_per_busy_hour_usd, tput) or 0.0
        con.print(f"$/Mtok at {tput:,.0f} tok/s: local ${local_mtok:,.2f}")
    for q in plan["quotes"][:3]:
        con.print(f"hosted API: {escape(q.provider)} {escape(q.model)} ${q.usd_per_mtok_generated:,.2f} per million"
                  f" generated tokens (${q.input_usd_per_mtok:g} in / ${q.output_usd_per_mtok:g} out, {q.date})")
    for line in res.assumptions:
        con.print(f"assumption: {line}", style="dim", markup=False)
    if sources:
        for p in res.prices_used:
            con.print(f"prices: {p}", style="dim", markup=False)
    else:
        con.print(f"prices: {len(res.prices_used)} sources (--sources to list them)", style="dim", markup=False)
    for w in res.warnings:
        con.print(f"[yellow]warning:[/] {escape(w)}")


cost_cmd.__doc__ = f"{cost_cmd.__doc__}\n\nOptional workload (compared like for like): {WORKLOAD_HELP}"


def register(app: typer.Typer) -> None:
    app.command("cost", context_settings=CTX)(_user_errors(cost_cmd))

