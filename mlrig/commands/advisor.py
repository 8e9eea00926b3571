"""`mlrig recommend`, `mlrig cost`, `mlrig build check`, `mlrig report`: the advisor's command line (render only)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

PricesOpt = Annotated[list[Path] | None, typer.Option("--prices", help="extra price file(s), merged by key")]
JsonFlag = Annotated[bool, typer.Option("--json", help="print JSON")]
WORKLOAD_FLAGS = {
    "--task": ("workload", "task", str),
    "--precision": ("workload", "precision", str),
    "--engine": ("workload", "engine", str),
    "--batch": ("workload", "batch_size", int),
    "--context": ("workload", "context_tokens", int),
    "--method": ("training", "method", str),
    "--seq-len": ("training", "seq_len", int),
    "--optimizer": ("training", "optimizer", str),
    "--zero-stage": ("training", "zero_stage", int),
    "--offload": ("training", "offload", str),
    "--lora-rank": ("training", "lora_rank", int),
    "--min-tok-s": ("usage", "min_tok_s", float),
    "--min-throughput": ("usage", "min_throughput_tok_s", float),
    "--hours-per-day": ("usage", "hours_per_day", float),
    "--runs-per-week": ("usage", "runs_per_week", float),
    "--hours-per-run": ("usage", "hours_per_run", float),
    "--tokens-per-run": ("usage", "tokens_per_run", float),
    "--reference-gpu": ("usage", "reference_gpu", str),
}
CTX = {"allow_extra_args": True, "ignore_unknown_options": True}


def _user_errors(fn: Callable[..., None]) -> Callable[..., None]:
    """MlrigError → one line on stderr and exit 2, also under typer.testing.CliRunner."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        from mlrig.errors import MlrigError

        try:
            fn(*args, **kwargs)
        except MlrigError as exc:
            typer.echo(f"mlrig: error: {exc}", err=True)
            raise typer.Exit(2) from None

    return wrapper


def parse_workload_args(args: list[str]) -> list[Any]:
    """Split `--model A --task ... --model B ...` into workloads: each --model starts a new one."""
    from mlrig.advisor.recommend import Workload, WorkloadUsage
    from mlrig.errors import MlrigError

    groups: list[dict[str, dict[str, Any]]] = []
    i = 0
    while i < len(args):
        flag, value = args[i], None
        if "=" in flag and flag.startswith("--"):
            flag, value = flag.split("=", 1)
        elif i + 1 < len(args):
            value = args[i + 1]
            i += 1
        i += 1
        if flag not in WORKLOAD_FLAGS and flag != "--model":
            raise MlrigError(f"unknown option {flag!r}; see `mlrig recommend --help`")
        if value is None:
            raise MlrigError(f"{flag} needs a value")
        if flag == "--model":
            groups.append({"plan": {"model": {"name": value}}, "usage": {}})
            continue
        if not groups:
            raise MlrigError(f"{flag} given before --model; put workload flags after the --model they describe")
        section, field, conv = WORKLOAD_FLAGS[flag]
        try:
            v = conv(value)
        except ValueError:
            raise MlrigError(f"{flag} expects a {conv.__name__}, got {value!r}") from None
        if section == "usage":
            groups[-1]["usage"][field] = v
        else:
            groups[-1]["plan"].setdefault(section, {})[field] = v
            if section == "training":
                groups[-1]["plan"].setdefault("workload", {}).setdefault("task", "finetune")
    out = []
    for g in groups:
        label = f"{g['plan']['model']['name']} {g['plan'].get('workload', {}).get('task', 'inference')}"
        out.append(Workload(label=label, plan=g["plan"], usage=_validated(WorkloadUsage, g["usage"], "usage ")))
    return out


def _validated(model: Any, data: dict[str, Any], what: str = "") -> Any:
    """`model.model_validate(data)`; a ValidationError becomes a one-line MlrigError naming the field."""
    from pydantic import ValidationError

    from mlrig.errors import MlrigError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise MlrigError(f"{what}{'.'.join(map(str, e['loc']))}: {e['msg']} (got {e.get('input')!r})") from None


def plan_file_workload(path: Path) -> Any:
    """A plan file; an optional [usage] table (hours_per_day, runs_per_week, ...) is taken out of it."""
    from mlrig.advisor.recommend import Workload, WorkloadUsage
    from mlrig.planner import load_plan_file

    data = load_plan_file(path)
    usage = data.pop("usage", {}) or {}
    data.pop("hardware", None)
    return Workload(label=data.get("id") or path.stem, plan=data, usage=_validated(WorkloadUsage, usage, "usage "))


def _run_recommend(ctx: typer.Context) -> tuple[Any, Any]:
    """Recommend for the options recommend and report share (read from `ctx.params`) and the workload flags."""
    return run_recommend(ctx.params, list(ctx.args))


def run_recommend(o: dict[str, Any], args: list[str]) -> tuple[Any, Any]:
    """(Recommendation, price book) for recommend's options `o` (parameter names of `recommend_cmd`) and
    the workload flags `args` (`--model M --precision q4_k_m ...`). `mlrig recommend --json` prints the first."""
    from mlrig.advisor.prices import load_prices
    from mlrig.advisor.recommend import Constraints, recommend

    workloads = [plan_file_workload(p) for p in o["plan"] or []] + parse_workload_args(args)
    c = _validated(
        Constraints,
        {
            "budget_usd": o["budget"],
            "local_only": o["local_only"],
            "cloud_only": o["cloud_only"],
            "max_power_w": o["max_power"],
            "max_gpus": o["max_gpus"],
            "no_used": o["no_used"],
            "years": o["years"],
            "objective": o["objective"],
            "usd_per_kwh": o["kwh_price"],
        },
    )
    book = load_prices(o["prices"])
    return recommend(workloads, book, c), book


Budget = Annotated[float | None, typer.Option("--budget", help="most you will pay up front, USD")]
LocalOnly = Annotated[bool, typer.Option("--local-only", help="buy only, no cloud")]
CloudOnly = Annotated[bool, typer.Option("--cloud-only", help="rent only, nothing to buy")]
MaxPower = Annotated[float | None, typer.Option("--max-power", help="wall power limit for a local box, W")]
MaxGpus = Annotated[int | None, typer.Option("--max-gpus", help="at most N GPUs")]
NoUsed = Annotated[bool, typer.Option("--no-used", help="new hardware only")]
Years = Annotated[float, typer.Option("--years", help="ownership horizon, years")]
ObjectiveOpt = Annotated[str, typer.Option("--objective", help="tco | time | usd-per-mtok")]
Kwh = Annotated[float | None, typer.Option("--kwh-price", help="electricity USD/kWh")]
PlanOpt = Annotated[list[Path] | None, typer.Option("--plan", help=r"plan file (repeatable); \[usage] table optional")]


def recommend_cmd(
    ctx: typer.Context,
    plan: PlanOpt = None,
    budget: Budget = None,
    local_only: LocalOnly = False,
    cloud_only: CloudOnly = False,
    max_power: MaxPower = None,
    max_gpus: MaxGpus = None,
    no_used: NoUsed = False,
    years: Years = 3.0,
    objective: ObjectiveOpt = "tco",
    kwh_price: Kwh = None,
    prices: PricesOpt = None,
    top: Annotated[int, typer.Option("--top", help="rows to show")] = 12,
    report: Annotated[Path | None, typer.Option("--report", help="also write a .md/.html report")] = None,
    as_json: JsonFlag = False,
) -> None:
    """What to buy or rent, ranked by total cost, time or $/Mtok.

    Workloads: --plan FILE, or `--model M --task inference --precision q4_k_m
    --min-tok-s 15 --hours-per-day 8` and `--model M --method qlora --runs-per-week 2 --hours-per-run 3`
    (each --model starts a workload; hours per run are on --reference-gpu, default A100 80GB)."""
    from mlrig.commands._common import print_json

    rec, book = _run_recommend(ctx)
    if report is not None:
        _write_report(rec, book, report, "html" if report.suffix.lower() in (".html", ".htm") else "md")
    if as_json:
        print_json(rec)
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console()
    if not con.is_terminal:  # piped: rich would wrap option names at 80 columns
        con = Console(width=160)
    t = Table(title=f"options for {', '.join(rec.workloads)} · objective {rec.objective} · {rec.years:g} years")
    t.caption = "★ on the cost-vs-speed Pareto front"
    for col in ("#", "option", "kind", "GPU mem\nGiB", "upfront\n$", "$/month", "total $", "speed"):
        t.add_column(col, justify="left" if col in ("option", "kind") else "right", overflow="fold")
    for o in [o for o in rec.options if o.feasible][:top]:
        t.add_row(
            str(o.rank),
            escape(o.name) + (" ★" if o.pareto else ""),
            o.kind,
            f"{o.total_gpu_memory_gib:.0f}",
            f"{o.upfront_usd:,.0f}",
            f"{o.cost_per_month_usd:,.0f}",
            f"{o.total_cost_usd:,.0f}",
            f"{o.speed_score:.2f}",
        )
    con.print(t)
    for s in rec.summary:
        con.print(f"• {escape(s)}")
    for o in [o for o in rec.options if o.feasible][:3]:
        con.print(f"[bold]{escape(o.name)}[/]")
        for r in o.reasons:
            con.print(f"   {escape(r)}")
        for w in o.warnings + [f"build {f.severity}: {f.what} → {f.fix}" for f in o.build_findings]:
            con.print(f"   [yellow]⚠ {escape(w)}[/]")
    excluded = [o for o in rec.options if not o.feasible]
    if excluded:
        con.print(f"excluded {len(excluded)} options; the cheapest of each kind and why:")
        seen: set[str] = set()
        for o in sorted(excluded, key=lambda o: o.upfront_usd if o.kind == "buy" else o.cost_per_month_usd):
            fam = o.gpu if o.category not in ("apple", "cloud") else o.category
            if fam in seen or len(seen) >= 8:
                continue
            seen.add(fam)
            con.print(f"   ✗ {escape(o.name)}: {escape(o.excluded_reason or '')}")
    for p in rec.prices_used:
        con.print(f"prices: {p}", style="dim", markup=False)
    for w in rec.warnings:
        con.print(f"[yellow]warning:[/] {escape(w)}")


def _write_report(rec: Any, book: Any, path: Path, fmt: str) -> None:
    from mlrig.advisor.report import business_case, render_html, render_markdown
    from mlrig.errors import MlrigError

    case = business_case(rec, book)
    text = render_html(rec, case) if fmt == "html" else render_markdown(rec, case)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise MlrigError(f"cannot write report {str(path)!r}: {exc.strerror}; pick a writable path") from None


def report_cmd(
    ctx: typer.Context,
    plan: PlanOpt = None,
    budget: Budget = None,
    local_only: LocalOnly = False,
    cloud_only: CloudOnly = False,
    max_power: MaxPower = None,
    max_gpus: MaxGpus = None,
    no_used: NoUsed = False,
    years: Years = 3.0,
    objective: ObjectiveOpt = "tco",
    kwh_price: Kwh = None,
    prices: PricesOpt = None,
    fmt: Annotated[str, typer.Option("--format", help="md | html")] = "md",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="file (default: stdout)")] = None,
) -> None:
    """A business case for a budget holder (options, costs, break-even, sensitivity); same inputs as recommend."""
    from mlrig.advisor.report import business_case, render_html, render_markdown
    from mlrig.errors import MlrigError

    if fmt not in ("md", "html"):
        raise MlrigError(f"--format must be md or html, got {fmt!r}")
    rec, book = _run_recommend(ctx)
    if output is not None:
        _write_report(rec, book, output, fmt)
        return
    case = business_case(rec, book)
    typer.echo(render_html(rec, case) if fmt == "html" else render_markdown(rec, case))


def cost_cmd(
    buy: Annotated[str | None, typer.Option("--buy", help="price key (gpu.* or system.*) or a GPU name")] = None,
    count: Annotated[int, typer.Option("--count", "-n", help="GPUs in the box")] = 1,
    price: Annotated[float | None, typer.Option("--price", help="override the per-GPU/system price, USD")] = None,
    rent: Annotated[list[str] | None, typer.Option("--rent", help="cloud price key (repeatable)")] = None,
    spot: Annotated[bool, typer.Option("--spot", help="also price spot where listed")] = False,
    hours_per_month: Annotated[float | None, typer.Option("--hours-per-month", help="busy GPU hours")] = None,
    runs_per_week: Annotated[
        float | None, typer.Option("--runs-per-week", help="fine-tuning runs per week (with --hours-per-run)")
    ] = None,
    hours_per_run: Annotated[
        float | None, typer.Option("--hours-per-run", help="hours per run on the cloud GPU")
    ] = None,
    local_slowdown: Annotated[float, typer.Option("--local-slowdown", help="local hours per cloud hour")] = 1.0,
    utilization: Annotated[float, typer.Option("--utilization", help="average GPU draw / TDP while busy")] = 0.8,
    measured_w: Annotated[float | None, typer.Option("--measured-w", help="measured wall power while busy")] = None,
    years: Years = 3.0,
    kwh_price: Kwh = None,
    pue: Annotated[float | None, typer.Option("--pue", help="facility overhead (1.0 at home)")] = None,
    tokens_per_s: Annotated[float | None, typer.Option("--tokens-per-s", help="served tokens/s for $/Mtok")] = None,
    prices: PricesOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Total cost of ownership, local vs cloud: per month, break-even hours, cost per run, $/Mtok, sensitivity."""
    from mlrig.advisor.cost import usd_per_million_tokens as per_mtok
    from mlrig.commands._common import print_json

    res = cost_result(buy=buy, count=count, price=price, rent=rent, spot=spot, hours_per_month=hours_per_month,
                      runs_per_week=runs_per_week, hours_per_run=hours_per_run, local_slowdown=local_slowdown,
                      utilization=utilization, measured_w=measured_w, years=years, kwh_price=kwh_price, pue=pue,
                      tokens_per_s=tokens_per_s, prices=prices)
    hours_per_month = res.usage.hours_per_month
    if as_json:
        print_json(cost_json(res, tokens_per_s))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    con = Console()
    lc = res.local
    con.print(
        f"[bold]{lc.name}[/]: ${lc.upfront_usd:,.0f} up front, energy ${lc.energy_usd_per_month:,.0f}/month,"
        f" resale after {years:g} y ${lc.resale_usd:,.0f} → ${lc.cost_per_month_usd:,.0f}/month"
        f" (${lc.total_usd:,.0f} total)"
    )
    t = Table(title=f"{hours_per_month:,.0f} busy h/month over {years:g} years")
    columns = ["cloud", "$/h", "$/month", "break-even\nh/month", "payback\nmonths"]
    if hours_per_run is not None:  # cost per run is only known when the run length is
        columns += ["$/run\ncloud", "$/run\nlocal"]
    for col in columns:
        t.add_column(col, justify="left" if col == "cloud" else "right", no_wrap=col != "cloud")

    def f(x: float | None) -> str:
        return "—" if x is None else f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"

    for cmp in sorted(res.comparisons, key=lambda x: x.cloud.cost_per_month_usd):
        cells = [
            f(cmp.cloud.usd_per_hour),
            f(cmp.cloud.cost_per_month_usd),
            f(cmp.break_even_hours_per_month),
            f(cmp.payback_months),
            f(cmp.cost_per_run_usd),
            f(cmp.local_cost_per_run_usd),
        ]
        t.add_row(cmp.cloud.name, *cells[: len(columns) - 1])
    con.print(t)
    con.print(res.verdict)
    if tokens_per_s:
        con.print(
            f"$/Mtok at {tokens_per_s:g} tok/s: local {f(per_mtok(lc.cost_per_busy_hour_usd or 0, tokens_per_s))}"
        )
    for line in res.assumptions:
        con.print(f"assumption: {line}", style="dim", markup=False)
    for p in res.prices_used:
        con.print(f"prices: {p}", style="dim", markup=False)
    for w in res.warnings:
        con.print(f"[yellow]warning:[/] {escape(w)}")


def cost_result(*, buy: str | None = None, count: int = 1, price: float | None = None, rent: list[str] | None = None,
                spot: bool = False, hours_per_month: float | None = None, runs_per_week: float | None = None,
                hours_per_run: float | None = None, local_slowdown: float = 1.0, utilization: float = 0.8,
                measured_w: float | None = None, years: float = 3.0, kwh_price: float | None = None,
                pue: float | None = None, tokens_per_s: float | None = None, prices: list[Path] | None = None) -> Any:
    """The TcoResult `mlrig cost` computes (arguments as its flags); raises MlrigError on bad input."""
    from mlrig.advisor.build import UNKNOWN_GPU_TDP_W
    from mlrig.advisor.cost import WEEKS_PER_MONTH, CloudSpec, LocalSpec, PurchaseItem, Usage, compare_tco
    from mlrig.advisor.prices import load_prices
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import MlrigError, require_positive

    for name, v in (("--count", count), ("--local-slowdown", local_slowdown), ("--utilization", utilization)):
        require_positive(name, v)
    optional: tuple[tuple[str, float | None], ...] = (
        ("--price", price),
        ("--hours-per-month", hours_per_month),
        ("--runs-per-week", runs_per_week),
        ("--hours-per-run", hours_per_run),
        ("--measured-w", measured_w),
        ("--kwh-price", kwh_price),
        ("--tokens-per-s", tokens_per_s),
    )
    for name, opt in optional:
        require_positive(name, opt, allow_zero=True)
    book = load_prices(prices)
    a = book.assumptions
    if hours_per_month is None:
        if runs_per_week is None or hours_per_run is None:
            raise MlrigError("give --hours-per-month, or --runs-per-week with --hours-per-run")
        hours_per_month = runs_per_week * hours_per_run * WEEKS_PER_MONTH
    key = buy or "rtx-3090-used"
    items: list[PurchaseItem]
    if key in book.systems:
        s = book.systems[key]
        items = [
            PurchaseItem(
                name=key,
                price_usd=price if price is not None else s.price_usd,
                annual_decline=a.resale_decline_new_per_year,
            )
        ]
        power = s.power_w * utilization
        sources = [f"{key}: {s.source} ({s.date}, {s.verification})"]
    else:
        entry = book.gpus.get(key)
        if entry is None:
            gid = resolve_gpu(key).id
            matches = sorted((e for e in book.gpus.values() if resolve_gpu(e.gpu).id == gid), key=lambda e: e.price_usd)
            if not matches and price is None:
                raise MlrigError(f"no price for {gid!r}; give --price USD or one of: {', '.join(book.gpus)}")
            entry = matches[0] if matches else None
        g = resolve_gpu(entry.gpu if entry else key)
        unit = price if price is not None else entry.price_usd  # type: ignore[union-attr]
        plat = sorted((p.price_usd, k) for k, p in book.platforms.items() if p.max_gpus >= count)
        if not plat:
            raise MlrigError(f"no platform in the price book holds {count} GPUs; use --count 1-4")
        decline = (
            a.resale_decline_used_per_year if entry and entry.condition == "used" else a.resale_decline_new_per_year
        )
        items = [
            PurchaseItem(name=f"{count}× {g.id}", price_usd=unit * count, annual_decline=decline),
            PurchaseItem(name=plat[0][1], price_usd=plat[0][0], annual_decline=a.resale_decline_new_per_year),
        ]
        power = count * (g.tdp_w or UNKNOWN_GPU_TDP_W) * utilization + a.system_overhead_w
        sources = (
            [f"{entry.key}: {entry.source} ({entry.date}, {entry.verification})"]
            if entry
            else ["--price given on the command line"]
        )
        sources.append(f"{plat[0][1]}: {book.platforms[plat[0][1]].source}")
    if measured_w is not None:
        power = measured_w
    local = LocalSpec(
        name=" + ".join(i.name for i in items),
        items=items,
        power_w=power,
        upkeep_fraction_per_year=a.upkeep_fraction_per_year,
        slowdown=local_slowdown,
    )
    keys = rent or [k for k, c in book.clouds.items() if c.gpu_count == 1]
    clouds = []
    for k in keys:
        if k not in book.clouds:
            raise MlrigError(f"unknown cloud price key {k!r}; one of: {', '.join(book.clouds)}")
        c = book.clouds[k]
        clouds.append(CloudSpec(name=f"{c.provider} {c.instance}", usd_per_hour=c.on_demand_usd_h))
        sources.append(f"{k}: {c.source} ({c.date}, {c.verification})")
        if spot and c.spot_usd_h is not None:
            clouds.append(
                CloudSpec(
                    name=f"{c.provider} {c.instance} (spot)",
                    usd_per_hour=c.spot_usd_h,
                    spot=True,
                    interruption_overhead=a.spot_interruption_overhead,
                )
            )
    usage = _validated(
        Usage,
        {
            "hours_per_month": hours_per_month,
            "years": years,
            "usd_per_kwh": kwh_price if kwh_price is not None else a.electricity_usd_per_kwh,
            "pue": pue if pue is not None else a.pue_home,
        },
    )
    res = compare_tco(local, clouds, usage, hours_per_run=hours_per_run)
    res.prices_used = book.used_summary() + sources
    est = [s.split(":", 1)[0] for s in sources if "estimate)" in s]
    if est:
        res.warnings.append(f"estimated prices (re-check): {', '.join(est)}")
    res.assumptions.append(f"resale source: {a.resale_source}")
    res.assumptions.append(f"electricity source: {a.electricity_source}")
    return res


def cost_json(res: Any, tokens_per_s: float | None) -> dict[str, Any]:
    """`mlrig cost --json`: the TcoResult, plus $/Mtok per option when a served rate is given."""
    from mlrig.advisor.cost import usd_per_million_tokens as per_mtok

    out: dict[str, Any] = res.model_dump(mode="json")
    if tokens_per_s:
        out["usd_per_mtok"] = {
            "local": per_mtok(res.local.cost_per_busy_hour_usd or 0.0, tokens_per_s),
            **{c.cloud.name: per_mtok(c.cloud.usd_per_hour, tokens_per_s) for c in res.comparisons},
        }
    return out


build_app = typer.Typer(
    help="Check a whole machine: PSU transients, RAM, PCIe lanes, spacing, NVLink, cooling.", no_args_is_help=True
)


def build_check_cmd(
    path: Annotated[Path, typer.Argument(help="build.toml (see examples/build-2x3090.toml)")], as_json: JsonFlag = False
) -> None:
    """Check BUILD: each finding says severity, what, why and what to do. Exit 1 when there are errors."""
    from mlrig.advisor.build import check_build, load_build
    from mlrig.commands._common import print_json

    report = check_build(load_build(path))
    if as_json:
        print_json(report)
    else:
        from rich.console import Console
        from rich.markup import escape

        con = Console()
        if not con.is_terminal:
            con = Console(width=160)
        con.print(
            f"[bold]{escape(report.name)}[/]: {', '.join(report.gpus)}, {report.total_vram_gib:.0f} GiB VRAM;"
            f" sustained {report.sustained_w:.0f} W, transient ~{report.transient_w:.0f} W, PSU {report.psu_w:.0f} W"
        )
        colors = {"error": "red", "warning": "yellow", "info": "cyan", "ok": "green"}
        for f in report.findings:
            con.print(f"[{colors[f.severity]}]{f.severity:7}[/] {f.check:8} {escape(f.what)}")
            if f.severity != "ok":
                con.print(f"{'':17}why: {escape(f.why)}\n{'':17}do:  {escape(f.fix)}")
    if not report.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("recommend", context_settings=CTX)(_user_errors(recommend_cmd))
    app.command("report", context_settings=CTX)(_user_errors(report_cmd))
    app.command("cost")(_user_errors(cost_cmd))
    build_app.command("check")(_user_errors(build_check_cmd))
    app.add_typer(build_app, name="build")
