"""`mlrig recommend`, `mlrig report`, `mlrig build check`: the advisor's command line (render only).

`mlrig cost` lives in mlrig/commands/cost.py and `mlrig prices` in mlrig/commands/prices.py; both reuse
the workload flags and error handling defined here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from mlrig.commands._common import usd

PricesOpt = Annotated[list[Path] | None, typer.Option("--prices", help="extra price file(s), merged by key")]
JsonFlag = Annotated[bool, typer.Option("--json", help="print JSON")]
SourcesFlag = Annotated[bool, typer.Option("--sources", help="list the source of every price used")]


def _tokens(text: str) -> int:
    from mlrig.commands._common import parse_token_count

    return parse_token_count(text)


def _total_tokens(text: str) -> int:
    from mlrig.commands._common import parse_token_count

    return parse_token_count(text, binary=False)


WORKLOAD_FLAGS: dict[str, tuple[str, str, Callable[[str], Any]]] = {
    "--task": ("workload", "task", str),
    "--precision": ("workload", "precision", str),
    "--engine": ("workload", "engine", str),
    "--batch": ("workload", "batch_size", int),
    "--context": ("workload", "context_tokens", _tokens),
    "--prompt": ("workload", "prompt_tokens", _tokens),
    "--output": ("workload", "output_tokens", _tokens),
    "--method": ("training", "method", str),
    "--seq-len": ("training", "seq_len", _tokens),
    "--optimizer": ("training", "optimizer", str),
    "--zero-stage": ("training", "zero_stage", int),
    "--offload": ("training", "offload", str),
    "--lora-rank": ("training", "lora_rank", int),
    "--min-tok-s": ("usage", "min_tok_s", float),
    "--max-ttft": ("usage", "max_ttft_s", float),
    "--min-throughput": ("usage", "min_throughput_tok_s", float),
    "--hours-per-day": ("usage", "hours_per_day", float),
    "--runs-per-week": ("usage", "runs_per_week", float),
    "--hours-per-run": ("usage", "hours_per_run", float),
    "--tokens-per-run": ("usage", "tokens_per_run", _total_tokens),
    "--reference-gpu": ("usage", "reference_gpu", str),
}


# The short forms and spellings `plan`, `fit` and `compare` take for the same options, so a flag copied from
# one command works in the other (`-q q4_k_m`, `--zero 3`).
FLAG_ALIASES = {"-t": "--task", "-q": "--precision", "--quant": "--precision", "-e": "--engine", "-b": "--batch",
                "-c": "--context", "-m": "--method", "--zero": "--zero-stage"}


def _setup_flags() -> dict[str, tuple[str, str, Callable[[str], Any] | None, Any]]:
    """The serving-setup flags every serving command takes (`_common.SETUP_OPTIONS`): --eager, --ep, ..."""
    from mlrig.commands._common import setup_flag_table

    return setup_flag_table()


SETUP_FLAGS = _setup_flags()
CTX = {"allow_extra_args": True, "ignore_unknown_options": True}
WORKLOAD_HELP = (
    "Workloads: --plan FILE, or workload options after --model (each --model starts one; options before any"
    " --model apply to the --plan files):\n\n\b\n"
    + "\n".join(f"  {flag:<24} {meaning}" for flag, meaning in {
        "[--model] M": "catalog id, HF id or model file (starts a workload)",
        **{flag: f"{section}.{field}" for flag, (section, field, _) in WORKLOAD_FLAGS.items()},
        **{flag: f"{section}.{field}" + ("" if conv else f" = {str(value).lower()}")
           for flag, (section, field, conv, value) in SETUP_FLAGS.items()},
        "--interconnect": "refused here: each option has its own GPU links",
    }.items())
    + "\n\nE.g. `--model M --precision q4_k_m --min-tok-s 15 --hours-per-day 8` or `--model M --method qlora"
    " --runs-per-week 2 --hours-per-run 3` (hours per run on --reference-gpu, default A100 80GB)."
)


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


USAGE_FLAGS = {field: flag for flag, (sec, field, _) in WORKLOAD_FLAGS.items() if sec == "usage"}


def parse_workload_args(args: list[str], plans: list[Any] | None = None, command: str = "recommend") -> list[Any]:
    """Split `--model A --task ... --model B ...` into workloads: each --model starts a new one. A bare word
    where a flag is expected is a model, as `plan MODEL` takes it (`recommend qwen2.5-32b --budget 2000`).
    Workload flags given before any --model apply to the `plans` (workloads read from --plan files), e.g.
    `--plan chat.toml --min-tok-s 8`; without plans that is an error. `command` names the help an unknown flag
    points to (`mlrig cost` reads the same flags)."""
    from mlrig.advisor.recommend import Workload, WorkloadUsage
    from mlrig.errors import MlrigError

    common: dict[str, dict[str, Any]] = {"plan": {}, "usage": {}}
    groups: list[dict[str, dict[str, Any]]] = []
    i = 0
    while i < len(args):
        flag, value = args[i], None
        if not flag.startswith("-"):  # a positional model name
            flag, value = "--model", args[i]
        elif "=" in flag and flag.startswith("--"):
            flag, value = flag.split("=", 1)
            flag = FLAG_ALIASES.get(flag, flag)
        else:
            flag = FLAG_ALIASES.get(flag, flag)
            if i + 1 < len(args) and SETUP_FLAGS.get(flag, ("", "", str, None))[2] is not None:
                value = args[i + 1]
                i += 1
        i += 1
        if flag not in WORKLOAD_FLAGS and flag not in SETUP_FLAGS and flag != "--model":
            if command == "cost" and flag in ("--gpu", "-g"):  # cost prices a machine to buy, not a --gpu
                raise MlrigError(f"unknown option {flag!r}: `mlrig cost` takes the GPU to buy as --buy NAME "
                                 "(-n for how many); see `mlrig cost --help`")
            raise MlrigError(f"unknown option {flag!r}; see `mlrig {command} --help`")
        switch = flag in SETUP_FLAGS and SETUP_FLAGS[flag][2] is None
        if switch and value is not None:
            raise MlrigError(f"{flag} takes no value (got {value!r})")
        if value is None and not switch:
            raise MlrigError(f"{flag} needs a value")
        if flag == "--model":
            groups.append({"plan": {"model": {"name": value}}, "usage": {}})
            continue
        if not groups and not plans:
            raise MlrigError(f"{flag} given before --model; put workload flags after the --model they describe")
        if flag == "--interconnect":  # each option is a machine with its own links
            raise MlrigError("--interconnect describes one machine's GPU links; recommend prices each option with "
                             "its own: compare links with `mlrig plan MODEL --gpu G -n 2 --interconnect nvlink`")
        if flag in SETUP_FLAGS:
            section, field, conv, v = SETUP_FLAGS[flag]
        else:
            section, field, conv = WORKLOAD_FLAGS[flag]
        try:
            v = conv(value) if conv is not None and value is not None else v
        except MlrigError as exc:
            raise MlrigError(f"{flag}: {str(exc).split(': ', 1)[-1]}") from None
        except ValueError:
            kind = {"int": "a whole number", "float": "a number"}.get(getattr(conv, "__name__", ""), "a value")
            raise MlrigError(f"{flag} expects {kind}, got {value!r}") from None
        target = groups[-1] if groups else common
        if section == "usage":
            target["usage"][field] = v
        else:
            target["plan"].setdefault(section, {})[field] = v
            if section == "training":
                target["plan"].setdefault("workload", {}).setdefault("task", "finetune")
    out = []
    for w in plans or []:
        plan = {**w.plan, **{k: {**(w.plan.get(k) or {}), **v} for k, v in common["plan"].items()}}
        validate_plan(plan, w.label)
        usage = _validated(WorkloadUsage, {**w.usage.model_dump(exclude_unset=True), **common["usage"]},
                           "usage ", flags=USAGE_FLAGS)
        out.append(Workload(label=w.label, plan=plan, usage=usage))
    for g in groups:
        validate_plan(g["plan"], f"--model {g['plan']['model']['name']}")
        label = f"{g['plan']['model']['name']} {g['plan'].get('workload', {}).get('task', 'inference')}"
        out.append(Workload(label=label, plan=g["plan"], usage=_validated(WorkloadUsage, g["usage"], "usage ",
                                                                           flags=USAGE_FLAGS)))
    return out


def validate_plan(plan: dict[str, Any], where: str) -> None:
    """Reject an unknown key or impossible value in a workload plan up front (one line naming the field),
    instead of letting every option fail on it. Hardware is set per option, so a stand-in is used."""
    from mlrig.errors import MlrigError
    from mlrig.planner import parse_plan

    try:
        parse_plan({**plan, "hardware": {"gpu": "rtx-4090"}})
    except MlrigError as exc:
        raise MlrigError(f"{where}: {exc}") from None


def _validated(model: Any, data: dict[str, Any], what: str = "", flags: dict[str, str] | None = None) -> Any:
    """`model.model_validate(data)`; a ValidationError becomes a one-line MlrigError naming the field
    (as the command-line flag when `flags` maps field names to flags)."""
    from pydantic import ValidationError

    from mlrig.errors import MlrigError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        msg = e["msg"].removeprefix("Value error, ")
        got = repr(e.get("input"))
        got = got if len(got) <= 80 else got[:77] + "..."
        loc = ".".join(map(str, e["loc"]))
        name = (flags or {}).get(str(e["loc"][0]), f"{what}{loc}") if e["loc"] else what.rstrip(". ")
        raise MlrigError(f"{name}: {msg} (got {got})") from None


CONSTRAINT_FLAGS = {
    "budget_usd": "--budget", "max_power_w": "--max-power", "max_gpus": "--max-gpus", "years": "--years",
    "objective": "--objective", "usd_per_kwh": "--kwh-price", "gpus": "--gpu", "have": "--have",
    "pc_ram_gib": "--pc-ram", "on_hours_per_month": "--on-hours-per-month",
}


def plan_file_workload(path: str | Path) -> Any:
    """A plan file; an optional [usage] table (hours_per_day, runs_per_week, ...) is taken out of it.
    The label is the plan's `id`, else the file name."""
    from mlrig.advisor.recommend import Workload, WorkloadUsage
    from mlrig.errors import MlrigError
    from mlrig.planner import load_plan_file

    p = Path(path)
    data = load_plan_file(p)
    usage = data.pop("usage", {}) or {}
    if not isinstance(usage, dict):
        raise MlrigError(f"plan file {str(p)!r}: [usage] must be a table (hours_per_day, runs_per_week, ...)")
    data.pop("hardware", None)
    validate_plan(data, f"plan file {str(p)!r}")
    label = data.get("id") if isinstance(data.get("id"), str) and data.get("id") else p.stem
    return Workload(label=label, plan=data, usage=_validated(WorkloadUsage, usage, f"plan file {str(p)!r}: usage."))


def _run_recommend(ctx: typer.Context) -> tuple[Any, Any]:
    """Recommend for the options recommend and report share (read from `ctx.params`) and the workload flags."""
    return run_recommend(ctx.params, list(ctx.args))


def run_recommend(o: dict[str, Any], args: list[str]) -> tuple[Any, Any]:
    """(Recommendation, price book) for recommend's options `o` (parameter names of `recommend_cmd`) and
    the workload flags `args` (`--model M --precision q4_k_m ...`). `mlrig recommend --json` prints the first."""
    from mlrig.advisor.prices import load_prices
    from mlrig.advisor.recommend import Constraints, budget_line, cheapest_over_budget, recommend

    workloads = parse_workload_args(args, [plan_file_workload(p) for p in o["plan"] or []])
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
            # 'usd_per_mtok' as --json writes the field, or any case: the option's own spelling
            "objective": o["objective"].strip().lower().replace("_", "-") if isinstance(o["objective"], str)
            else o["objective"],
            "usd_per_kwh": o["kwh_price"],
            "allow_old": o["allow_old"],
            "any_vendor": o["any_vendor"],
            "gpus": o["gpu"] or [],
            "have": o["have"] or [],
            "have_pc": o["have_pc"],
            "pc_ram_gib": o["pc_ram"],
            "on_hours_per_month": o["on_hours_per_month"],
        },
        flags=CONSTRAINT_FLAGS,
    )
    book = load_prices(o["prices"])
    rec = recommend(workloads, book, c)
    local = not c.cloud_only and (c.local_only or c.budget_usd is not None)
    quantised = local_quantised(workloads) if local and not any(x.feasible for x in rec.options) else None
    if quantised is not None:
        again = recommend(quantised, book, c)
        if any(x.feasible for x in again.options):
            again.summary.insert(0, LOCAL_QUANT_NOTE)
            return again, book
        rec.warnings.append(f"also tried GGUF {LOCAL_QUANT.upper()} on llama.cpp: nothing meets every constraint "
                            "at that precision either")
        # over budget at both: name the cheaper machine that would do the job ($2,000 for 30B-class models: a
        # used 3090 box at Q4_K_M just over it, not a 4-GPU box at bf16)
        cheap, cheap_q = cheapest_over_budget(rec.options, c), cheapest_over_budget(again.options, c)
        if cheap_q is not None and (cheap is None or cheap_q.upfront_usd < cheap.upfront_usd):
            rec.summary = [line for line in rec.summary if not line.startswith("nothing to buy within")]
            rec.summary += budget_line(again.options, c, at=f" at GGUF {LOCAL_QUANT.upper()} on llama.cpp")
    return rec, book


LOCAL_QUANT = "q4_k_m"
LOCAL_QUANT_NOTE = ("nothing to buy runs it at the default precision (bf16): shown at GGUF Q4_K_M on llama.cpp, "
                    "the 4-bit format local users run (give --precision, e.g. -q q8_0, to choose another)")


def local_quantised(workloads: list[Any]) -> list[Any] | None:
    """The workloads at GGUF Q4_K_M on llama.cpp, what local users run a model too big for their cards at (the
    llama.cpp README's quantisation table lists Q4_K_M as the recommended 4-bit mix), for `recommend` to try
    when nothing local runs them at the default precision; None unless every workload is inference with no
    precision given and no engine or llama.cpp."""
    from mlrig import quant
    from mlrig.planner import parse_plan, resolve_arch

    out = []
    for w in workloads:
        wl = w.plan.get("workload") or {}
        if w.task != "inference" or wl.get("precision") is not None or (wl.get("engine") or "llama.cpp") != "llama.cpp":
            return None
        stored = resolve_arch(parse_plan({**w.plan, "hardware": {"gpu": "rtx-4090"}})).weight_format
        if quant.bits_per_weight(stored or "bf16") < 16:  # a quantised re-upload or file: its own format
            return None
        plan = {**w.plan, "workload": {**wl, "precision": LOCAL_QUANT, "engine": "llama.cpp"}}
        out.append(w.model_copy(update={"plan": plan, "label": f"{w.label} at {LOCAL_QUANT} (llama.cpp)"}))
    return out


Budget = Annotated[float | None, typer.Option(
    "--budget", help="most you will pay up front, USD: 2000, 2k, $2,000", metavar="<usd>", parser=usd("--budget"))]
LocalOnly = Annotated[bool, typer.Option("--local-only", help="buy only, no cloud")]
CloudOnly = Annotated[bool, typer.Option("--cloud-only", help="rent only, nothing to buy")]
MaxPower = Annotated[float | None, typer.Option("--max-power", help="wall power limit for a local box, W")]
MaxGpus = Annotated[int | None, typer.Option("--max-gpus", help="at most N GPUs")]
NoUsed = Annotated[bool, typer.Option("--no-used", help="new hardware only")]
Years = Annotated[float, typer.Option("--years", help="ownership horizon, years")]
ObjectiveOpt = Annotated[str, typer.Option("--objective", help="tco | time | usd-per-mtok")]
Kwh = Annotated[float | None, typer.Option("--kwh-price", help="electricity USD/kWh")]
PlanOpt = Annotated[list[Path] | None, typer.Option(
    "--plan", help="plan file (repeatable); [usage] table optional")]
AllowOld = Annotated[bool, typer.Option("--allow-old", help="include Kepler/Maxwell/Pascal datacentre cards (P40...)")]
AnyVendor = Annotated[bool, typer.Option(
    "--any-vendor", help="include AMD/Intel GPUs for fine-tuning (CUDA-first tools)")]
GpuFilter = Annotated[list[str] | None, typer.Option(
    "--gpu", help="only these GPUs, buy and rent (repeatable): --gpu 'RTX 4090' --gpu 'H100 PCIe'")]
Have = Annotated[list[str] | None, typer.Option(
    "--have", help="cards you own, priced at $0 (repeatable): --have 'RTX 3090' or --have '2x RTX 3090'")]
HavePc = Annotated[bool, typer.Option("--have-pc", help="you own a PC that takes one GPU: price only the card")]
PcRam = Annotated[float, typer.Option("--pc-ram", help="RAM of the PC you own, GiB (with --have/--have-pc)")]
OnHours = Annotated[float | None, typer.Option(
    "--on-hours-per-month", help="hours a month a bought box is powered on (idle power; default 730 = always)")]
Top = Annotated[int, typer.Option("--top", help="rows to show (1-500)")]


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
    allow_old: AllowOld = False,
    any_vendor: AnyVendor = False,
    gpu: GpuFilter = None,
    have: Have = None,
    have_pc: HavePc = False,
    pc_ram: PcRam = 32.0,
    on_hours_per_month: OnHours = None,
    prices: PricesOpt = None,
    top: Top = 12,
    report: Annotated[Path | None, typer.Option("--report", help="also write a .md/.html report")] = None,
    sources: SourcesFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """What to buy or rent, ranked by total cost, time or $/Mtok, with absolute speeds and their bands."""
    from mlrig.commands._common import print_json
    from mlrig.errors import MlrigError

    if not 1 <= top <= 500:
        raise MlrigError(f"--top must be 1-500, got {top}")
    rec, book = _run_recommend(ctx)
    if report is not None:
        _write_report(rec, book, report, "html" if report.suffix.lower() in (".html", ".htm") else "md")
    if as_json:
        print_json(rec)
        return
    _print_recommendation(rec, top, sources)


recommend_cmd.__doc__ = f"{recommend_cmd.__doc__}\n\n{WORKLOAD_HELP}"


def _console() -> Any:
    from rich.console import Console

    con = Console()
    return con if con.is_terminal else Console(width=160)  # piped: rich would wrap names at 80 columns


def _print_recommendation(rec: Any, top: int, sources: bool) -> None:
    from rich.markup import escape
    from rich.table import Table

    con = _console()
    t = Table(title=f"options for {', '.join(rec.workloads)} · objective {rec.objective} · {rec.years:g} years")
    t.caption = "★ on the cost-vs-speed Pareto front · speed as the planner estimates it, with its band"
    for col in ("#", "option", "kind", "GPU mem\nGiB", "upfront\n$", "$/month", "total $", "speed"):
        t.add_column(col, justify="left" if col in ("option", "kind", "speed") else "right", overflow="fold")
    shown = [o for o in rec.options if o.feasible][:top]
    for o in shown:
        kind = "owned" if o.category == "owned" else o.kind
        t.add_row(str(o.rank), escape(o.name) + (" ★" if o.pareto else ""), kind, f"{o.total_gpu_memory_gib:.0f}",
                  f"{o.upfront_usd:,.0f}", f"{o.cost_per_month_usd:,.0f}", f"{o.total_cost_usd:,.0f}", escape(o.speed))
    con.print(t)
    for s in rec.summary:
        con.print(f"• {escape(s)}")
    for u in rec.uncertainty:
        con.print(f"[yellow]• {escape(u)}[/]")
    for o in shown:
        con.print(f"[bold]{o.rank}. {escape(o.name)}[/]")
        for r in o.reasons:
            con.print(f"   {escape(r)}")
        for w in o.warnings + [f"build {f.severity}: {f.what} → {f.fix}" for f in o.build_findings]:
            con.print(f"   [yellow]⚠ {escape(w)}[/]")
        if sources:
            for s in o.price_sources:
                con.print(f"   source: {s}", style="dim", markup=False)
    excluded = [o for o in rec.options if not o.feasible]
    if excluded:
        con.print(f"excluded {len(excluded)} options; the cheapest of each kind and why:")
        seen: set[str] = set()
        for o in sorted(excluded, key=lambda o: o.upfront_usd if o.kind == "buy" else o.cost_per_month_usd):
            fam = f"{o.category}:{o.gpu}"  # each GPU once per kind: the reasons differ by GPU (memory, speed)
            if fam in seen or len(seen) >= 10:
                continue
            seen.add(fam)
            con.print(f"   ✗ {escape(o.name)}: {escape(o.excluded_reason or '')}")
    for a in rec.assumptions:
        con.print(f"assumption: {a}", style="dim", markup=False)
    for p in rec.prices_used:
        con.print(f"prices: {p}", style="dim", markup=False)
    if rec.stale_prices:
        con.print(f"[yellow]warning:[/] prices older than 6 months used here: {escape(', '.join(rec.stale_prices))}"
                  " - re-check them (`mlrig prices --stale`)")
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
    allow_old: AllowOld = False,
    any_vendor: AnyVendor = False,
    gpu: GpuFilter = None,
    have: Have = None,
    have_pc: HavePc = False,
    pc_ram: PcRam = 32.0,
    on_hours_per_month: OnHours = None,
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


# Boards `build check --board` knows by chipset: the slot layout most boards of it ship (the same as the example
# build files), with what to check. B650: AMD's AM5 CPUs give the graphics slot x16, and most B650 ATX boards wire
# the second full-length slot to the chipset at x4 (PCIe 4.0) with no x8/x8 split (examples/
# build-2x3090-1000w-b650.toml); a B650E / X670E board that splits x8/x8 needs a build file.
TYPICAL_BOARDS: dict[str, tuple[list[dict[str, object]], str]] = {
    "b650": ([{"lanes": 16, "position": 1, "gen": 4}, {"lanes": 4, "position": 4, "gen": 4, "chipset": True}],
             "the typical B650 ATX layout assumed (slot 1 x16 from the CPU, slot 4 x4 from the chipset, no x8/x8); "
             "check the manual's expansion-slot table, or describe yours in a build file"),
}


def _board_key(board: str) -> str:
    return "".join(c for c in board.lower() if c.isalnum()).removeprefix("amd")


def board_slots(board: str) -> dict[str, object]:
    """The motherboard table of a build for `--board NAME` (TYPICAL_BOARDS); a one-line error for a board it does
    not know."""
    from mlrig.errors import MlrigError

    key = _board_key(board)
    if key not in TYPICAL_BOARDS:
        raise MlrigError(f"--board knows {', '.join(k.upper() for k in TYPICAL_BOARDS)} only, not {board!r}; describe "
                         "the board's slots in a build file (see examples/build-2x3090-1000w-b650.toml)")
    return {"name": f"typical {board}", "slots": TYPICAL_BOARDS[key][0]}


build_app = typer.Typer(
    help="Check a whole machine: PSU transients, wall circuit, RAM, PCIe lanes, spacing, risers, cooling.",
    no_args_is_help=True,
)


def build_check_cmd(
    path: Annotated[Path | None, typer.Argument(
        help="build.toml (see examples/build-2x3090.toml); or describe it with the flags")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", "-g", help="the GPU, as nvidia-smi or a shop names it")] = None,
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=16, help="how many of it")] = 1,
    psu_w: Annotated[float | None, typer.Option("--psu-w", "--psu", help="PSU rating, W")] = None,
    psu_standard: Annotated[str, typer.Option("--psu-standard", help="'ATX 3.1' for a 12V-2x6 unit")] = "ATX 2.x",
    ram_gib: Annotated[float | None, typer.Option("--ram-gib", "--ram", help="system RAM, GiB (64)")] = None,
    cpu_cores: Annotated[int | None, typer.Option("--cpu-cores", min=1, help="CPU cores (default 8)")] = None,
    cpu_lanes: Annotated[int | None, typer.Option("--cpu-lanes", min=1, help="CPU PCIe lanes (default 24)")] = None,
    board: Annotated[str | None, typer.Option("--board", help="the board's chipset: B650 (its typical slots; other"
                                              " boards: a build file)")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Check BUILD: each finding says severity, what, why and what to do. Exit 1 when there are errors.
    Without a file, the flags describe the machine: `mlrig build check --gpu "RTX 3090" -n 2 --psu-w 1000
    --ram-gib 64` (the board's slots need a file)."""
    from mlrig.advisor.build import check_build, load_build, parse_build
    from mlrig.commands._common import print_json
    from mlrig.errors import MlrigError

    assumed: list[str] = []
    if path is not None:
        if gpu is not None or psu_w is not None or ram_gib is not None or board is not None:
            raise MlrigError("give a build file or --gpu/--psu-w/--ram-gib, not both")
        build = load_build(path)
    else:
        from mlrig.catalog.gpus import split_gpu_count

        counted = split_gpu_count(gpu) if gpu else None
        if counted is not None and count in (1, counted[0]):  # '--gpu "2x RTX 3090"', as plan and compare read it
            count, gpu = counted
        missing = [f for f, v in (("--gpu", gpu), ("--psu-w", psu_w), ("--ram-gib", ram_gib)) if v is None]
        if missing:
            raise MlrigError(f"build check needs a build file or {', '.join(missing)} (e.g. mlrig build check "
                             "--gpu 'RTX 3090' -n 2 --psu-w 1000 --ram-gib 64)")
        if cpu_cores is None or cpu_lanes is None:
            # a current desktop CPU: Ryzen 7 7700X / 9700X, 8 cores and 24 usable PCIe 5.0 lanes (AMD AM5 spec
            # pages); the same CPU `build suggest` prices for one or two GPUs
            assumed.append(f"CPU not given: {cpu_cores or 8} cores and {cpu_lanes or 24} PCIe lanes assumed (a "
                           "desktop Ryzen 7); pass --cpu-cores and --cpu-lanes")
        described: dict[str, object] = {
            "name": f"{count}x {gpu}", "gpus": [{"name": gpu, "count": count}],
            "psu": {"watts": psu_w, "standard": psu_standard}, "ram_gib": ram_gib,
            "cpu": {"cores": cpu_cores or 8, "pcie_lanes": cpu_lanes or 24}}
        if board is None:
            assumed.append("no board given: slot spacing, chipset lanes and bifurcation are not checked; pass "
                           "--board B650 or describe the slots in a build file (see "
                           "examples/build-2x3090-1000w-b650.toml)")
        else:
            described["motherboard"] = board_slots(board)
            assumed.append(f"board {board}: {TYPICAL_BOARDS[_board_key(board)][1]}")
        build = parse_build(described)
    report = check_build(build)
    if as_json:
        print_json({**report.model_dump(mode="json"), "assumptions": assumed} if assumed else report)
    else:
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        con = Console(highlight=False)  # the terminal's width (COLUMNS when piped); long lines wrap indented
        con.print(
            f"[bold]{escape(report.name)}[/]: {', '.join(report.gpus)}, {report.total_vram_gib:.0f} GiB VRAM;"
            f" sustained {report.sustained_w:.0f} W (~{report.wall_w:,.0f} W at the wall), transient"
            f" ~{report.transient_w:,.0f} W, PSU {report.psu_w:,.0f} W"
        )
        colors = {"error": "red", "warning": "yellow", "info": "cyan", "ok": "green"}
        grid = Table.grid(padding=(0, 1))
        grid.add_column(no_wrap=True, min_width=7)
        grid.add_column(no_wrap=True, min_width=8)
        grid.add_column(overflow="fold")
        for f in report.findings:
            grid.add_row(f"[{colors[f.severity]}]{f.severity}[/]", f.check, escape(f.what))
            if f.severity != "ok":
                grid.add_row("", "", f"why: {escape(f.why)}")
                grid.add_row("", "", f"do:  {escape(f.fix)}")
        con.print(grid)
        for line in assumed:
            con.print(f"assumed: {escape(line)}")
    if not report.ok:
        raise typer.Exit(1)


def build_suggest_cmd(
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="the GPU (catalog name, as nvidia-smi or a shop says it)")],
    count: Annotated[int, typer.Option("--count", "-n", min=1, max=16, help="how many of it")] = 1,
    model: Annotated[str | None, typer.Option("--model", "-m", help="size RAM and storage for this workload")] = None,
    task: Annotated[str | None, typer.Option("--task", help="inference | finetune | pretrain (with --model)")] = None,
    method: Annotated[str | None, typer.Option("--method", help="full | lora | qlora (with --model)")] = None,
    precision: Annotated[str | None, typer.Option("--precision", "--quant", "-q", help="weights precision")] = None,
    offload: Annotated[str | None, typer.Option("--offload", help="none | optimizer | params (training)")] = None,
    zero: Annotated[int | None, typer.Option("--zero", help="ZeRO stage 0-3 (training)")] = None,
    seq_len: Annotated[str | None, typer.Option("--seq-len", help="training sequence length (4096, 4k)")] = None,
    batch: Annotated[int | None, typer.Option("--batch", "-b", help="batch size")] = None,
    context: Annotated[str | None, typer.Option("--context", "-c", help="inference context (8k)")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Size a machine for N of one GPU: PSU watts with transient headroom, system RAM (with --model, for
    what the plan keeps in host RAM: loading, offload), CPU cores and PCIe lanes, storage, wall circuit.
    Every figure comes from a rule `mlrig build check` applies, and the suggestion passes that check."""
    from mlrig.advisor.build import as_build, check_build, suggest_build
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.commands._common import print_json

    g = resolve_gpu(gpu)
    host = offload_gib = ckpt = data_gb_s = None
    use: Any = "training"
    notes: list[str] = []
    if model is not None:
        from mlrig.commands._common import workload_fields
        from mlrig.planner import evaluate, parse_plan, plan_from_fields

        if task is None and method is not None:
            task = "finetune"
        fields = workload_fields(task=task, method=method, precision=precision, offload=offload, zero=zero,
                                 seq_len=_tokens(seq_len) if seq_len else None, batch=batch,
                                 context=_tokens(context) if context else None, count=count)
        plan = parse_plan(plan_from_fields(model, None, gpu=g.id, **fields))
        res = evaluate(plan)
        if res.memory is not None:
            host = res.memory.host_ram_gib
            t = plan.training
            offloads = t is not None and (t.offload != "none" or bool(t.activation_offload))
            offload_gib = host if offloads else 0.0
            if not res.fits:
                notes.append(f"the workload does not fit on {count}× {g.id} ({res.memory.per_gpu_gib:.1f} GiB per GPU "
                             f"of {res.memory.gpu_capacity_gib:.1f}): `mlrig plan` with the same flags lists the fixes")
        if res.training is not None:
            ckpt = res.training.checkpoint_gib
            data_gb_s = res.training.data_read_mb_s / 1e3  # the plan's tokens/s x bytes per token
        use = "inference" if plan.workload.task == "inference" else "training"
    s = suggest_build(g, count, use=use, host_ram_gib=host, offload_gib=offload_gib or 0.0, checkpoint_gib=ckpt,
                      data_gb_s=data_gb_s)
    s.notes = notes + s.notes
    report = check_build(as_build(s, g, count, offload_gib=offload_gib or 0.0, use=use))
    s.notes += [f"build check {f.severity}: {f.what} → {f.fix}" for f in report.findings
                if f.severity in ("error", "warning") and f.check != "pcie"]  # lanes: the CPU line says them
    if as_json:
        print_json(s)
        return
    from rich.console import Console
    from rich.markup import escape

    con = Console(highlight=False)
    ram_why = (f"≥ {s.ram_needed_gib:,.0f} GiB: {s.total_vram_gib:,.0f} GiB VRAM"
               + (f" + {offload_gib:,.0f} GiB offload" if offload_gib else "")
               + (f"; the plan keeps {host:,.1f} GiB in host RAM" if host is not None else "") + "; RAM ≥ VRAM")
    rows = [
        ("PSU", f"{s.psu_w:,.0f} W ATX 3.1 (sustained {s.sustained_w:,.0f} W ≤ 80%; transients ~{s.transient_w:,.0f}"
                f" W within 160% for 10 ms)"),
        ("wall", f"~{s.wall_w:,.0f} W at 90% efficiency; circuits: "
                 + (", ".join(s.circuits) if s.circuits else "none single: split the load")),
        ("RAM", f"{s.ram_gib:,.0f} GiB ({ram_why})"),
        ("CPU", f"≥ {s.cpu_cores} cores (4 data-loader workers per GPU + 2), {s.cpu_pcie_lanes} PCIe lanes for "
                f"the GPUs: {s.platform}"),
        ("storage", s.storage),
    ]
    if s.nvlink:
        rows.append(("NVLink", s.nvlink + ": helps tensor-parallel training; optional"))
    con.print(f"[bold]Build for {escape(s.gpus)}[/] ({s.total_vram_gib:,.0f} GiB VRAM"
              + (f", {escape(model)}" if model else "") + ")")
    for k, v in rows:
        con.print(f"  {k:<8} {escape(v)}")
    for n in s.notes:
        con.print(f"[yellow]note:[/] {escape(n)}")
    con.print(f"[dim]check your own parts: mlrig build check --gpu {escape(repr(gpu))} -n {count} --psu-w W "
              "--ram-gib G (or a build.toml: examples/build-2x3090.toml)[/]")


def register(app: typer.Typer) -> None:
    app.command("recommend", context_settings=CTX)(_user_errors(recommend_cmd))
    app.command("report", context_settings=CTX)(_user_errors(report_cmd))
    build_app.command("check")(_user_errors(build_check_cmd))
    build_app.command("suggest")(_user_errors(build_suggest_cmd))
    app.add_typer(build_app, name="build")
