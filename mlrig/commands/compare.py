"""`mlrig compare`: one workload side by side across GPUs, precisions or engines."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mlrig.commands._common import (
    NO_PRICES,
    BatchOpt,
    ContextOpt,
    CountOpt,
    GpuSpecOpt,
    JsonOpt,
    KvPrecisionOpt,
    LoadOpt,
    LoraRankOpt,
    MarkdownOpt,
    NumRequestsOpt,
    OutputOpt,
    PromptOpt,
    RequestRateOpt,
    SeqLenOpt,
    TaskOpt,
    TokensOpt,
    TpOpt,
    fmt_num,
    price_cells,
    price_footnote,
    setup_options,
    workload_fields,
)
from mlrig.jsonout import round_floats

GpusOpt = Annotated[list[str] | None, typer.Option(
    "--gpu", "-g", help="GPU to compare (repeat, or a comma list); '8x A100 80GB' for 8 of them")]
PrecisionsOpt = Annotated[list[str] | None, typer.Option(
    "--precision", "--quant", "-q", help="precision to compare (repeat, or a comma list)")]
EnginesOpt = Annotated[list[str] | None, typer.Option(
    "--engine", "-e", help="engine to compare (repeat, or a comma list)")]
InterconnectsOpt = Annotated[list[str] | None, typer.Option(
    "--interconnect", help="links between each machine's GPUs: one for every --gpu, one row each for one --gpu, "
    "or one per --gpu in the same order ('default': what that GPU has); pcie4 | pcie4-p2p | nvlink | ... "
    "(mlrig/data/interconnects.json)")]
PriceFilesOpt = Annotated[list[Path] | None, typer.Option(
    "--prices", help="extra price file(s) for the price columns, merged by key (as `recommend`; `mlrig prices` lists "
    "the book)")]
MethodsOpt = Annotated[list[str] | None, typer.Option(
    "--method", "-m", help="full | lora | qlora (training; repeat or a comma list to compare: -m full,lora,qlora; "
    "default: full where it fits, else lora, else qlora)")]


def _compare_setup(fn: Any) -> Any:
    return setup_options(fn, overrides={"interconnect": InterconnectsOpt})


@_compare_setup
def compare_cmd(
    model: Annotated[str, typer.Argument(help="catalog id, HF id, config.json, .gguf ...")],
    gpu: GpusOpt = None,
    precision: PrecisionsOpt = None,
    engine: EnginesOpt = None,
    task: TaskOpt = None,
    method: MethodsOpt = None,
    lora_rank: LoraRankOpt = None,
    seq_len: SeqLenOpt = None,
    tokens: TokensOpt = None,
    kv_precision: KvPrecisionOpt = None,
    batch: BatchOpt = None,
    prompt: PromptOpt = None,
    output: OutputOpt = None,
    context: ContextOpt = None,
    tp: TpOpt = None,
    count: CountOpt = None,
    gpu_spec_text: GpuSpecOpt = None,
    load: LoadOpt = None,
    request_rate: RequestRateOpt = None,
    num_requests: NumRequestsOpt = None,
    prices: PriceFilesOpt = None,
    as_json: JsonOpt = False,
    markdown: MarkdownOpt = False,
    *, setup: dict[str, Any],
) -> None:
    """Memory per GPU, fits, decode/prefill tok/s, TTFT and bound, one row per variant (for --task
    finetune / pretrain or --method: training tokens/s, step time and MFU instead), and where the price
    book has the GPU, the cards' price and $ per decode (or training) tok/s: "is it worth the price?".

    A variant that cannot be evaluated (a misspelt GPU, a precision the engine lacks) is reported
    in its row and the others still run; the exit status is then 1, as `mlrig eval`'s."""
    from mlrig.commands._common import print_json
    from mlrig.errors import MlrigError

    if as_json and markdown:
        raise MlrigError("--json and --markdown both asked for: give one")
    gpu, precision, engine, method = (split_commas(v) for v in (gpu, precision, engine, method))  # as compare_rows
    rows = compare_rows(model, gpu, precision, engine, task=task, method=method, lora_rank=lora_rank,
                        seq_len=seq_len, tokens=tokens, kv_precision=kv_precision, batch=batch,
                        prompt=prompt, output=output, context=context, tp=tp, count=count, gpu_spec=gpu_spec_text,
                        load=load, request_rate=request_rate, num_requests=num_requests, price_files=prices,
                        **setup)
    failed = sum(1 for r in rows if r["result"].get("error"))
    varying = _varying(gpu, precision, engine, method)
    if method and not varying[3]:  # the training method is the same in every row: the title says it
        model = f"{model} · {method[0]}"
    links = setup.get("interconnect") or []
    if len(links) == 1 and links[0].strip().lower() != "default":  # one --interconnect for every row: the title
        model = f"{model} · {links[0]}"
    if count and count > 1:  # so is the GPU count, and the figures are per GPU of it
        model = f"{model} · {count} GPUs"
    # no --gpu: every row ran on the default GPU, which neither the title nor a row names; say which (once)
    assumed = None if gpu else next((n for r in rows for n in (r["result"].get("notes") or [])
                                     if n.startswith("no GPU given")), None)
    if as_json:
        print_json(rows)
    elif markdown:
        from mlrig.commands.markdown import compare_markdown

        fixed = [x for x, v in zip((gpu, precision, engine), varying[:3], strict=True) if x and not v]
        typer.echo(compare_markdown(" · ".join([model, *(x[0] for x in fixed)]), rows, training=is_training(rows)))
        if assumed:
            typer.echo(f"\nnote: {assumed}")
    else:
        _render(model, rows, [x for x, v in zip((gpu, precision, engine), varying[:3], strict=True) if x and not v])
        if assumed:
            typer.echo(f"note: {assumed}")
    if failed:
        raise typer.Exit(1)


def is_training(rows: list[dict[str, Any]]) -> bool:
    """Whether the rows are training plans (their tables show training tokens/s, step time and MFU, not
    decode/prefill/TTFT, which a training plan does not have)."""
    return any((r["result"].get("performance") or {}).get("train_tokens_per_s") is not None for r in rows)


def _varying(gpu: list[str] | None, precision: list[str] | None, engine: list[str] | None,
             method: list[str] | None = None) -> list[bool]:
    """Which of GPU / precision / engine / training method vary across the rows (they label a row; the rest go
    in the title)."""
    return [(len(set(gpu)) > 1 if gpu else True), len(set(precision or [])) > 1, len(set(engine or [])) > 1,
            len(set(method or [])) > 1]


def split_commas(values: list[str] | None) -> list[str] | None:
    """Repeated options with comma lists flattened: ['RTX 4090,RTX 3090', 'L40S'] -> ['RTX 4090', 'RTX 3090', 'L40S'];
    a value that is nothing but commas stays as given, so its own error names it."""
    if not values:
        return values
    out = [part.strip() for v in values for part in v.split(",") if part.strip()]
    return out if len(out) >= len(values) else list(values)


def compare_rows(model: str, gpu: list[str] | None = None, precision: list[str] | None = None,
                 engine: list[str] | None = None, price_files: list[Path] | None = None,
                 **common: Any) -> list[dict[str, Any]]:
    """`mlrig compare --json`: one row per GPU x precision x engine, each with its PlanResult (an error in
    the row when that variant cannot be evaluated). `common` are workload_fields() arguments (task,
    batch, context, ..., and the serving-setup flags; `method` one name or a list to compare); each row's `price`
    is row_price's (the built-in price book, the user's and `price_files` merged). Raises MlrigError
    for over 64 variants, or when every variant fails alike."""
    from mlrig.catalog.gpus import split_gpu_count
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate_case, plan_from_fields

    # '--gpu "RTX 4090,RTX 3090"' / '-q q4_k_m,q8_0', as `sweep` takes lists: one variant per item (no GPU name,
    # precision or engine holds a comma; the comma list was an "unknown GPU" error)
    gpu, precision, engine = (split_commas(v) for v in (gpu, precision, engine))
    # a variant given twice (`-q q4_k_m -q q4_k_m`) is one row, not two identical ones
    given_gpus: list[str | None] = list(gpu) if gpu else [None]
    links_given = common.get("interconnect")
    if len(set(given_gpus)) == 1 and isinstance(links_given, list) and len(links_given) > len(given_gpus):
        # '--gpu "2x RTX 3090" --interconnect pcie4 --interconnect nvlink': does NVLink matter? one row per link
        given_gpus = given_gpus[:1] * len(links_given)
    # each GPU with its links, paired before duplicates go: '--gpu "2x RTX 3090" --gpu "2x RTX 3090"
    # --interconnect pcie4 --interconnect nvlink' asks whether NVLink matters, two rows of one GPU
    pairs = list(dict.fromkeys(zip(given_gpus, _interconnects(given_gpus, common.pop("interconnect", None)),
                                   strict=True)))
    precs: list[str | None] = list(dict.fromkeys(precision)) if precision else [None]
    engines: list[str | None] = list(dict.fromkeys(engine)) if engine else [None]
    given = common.pop("method", None)
    method = [given] if isinstance(given, str) else list(dict.fromkeys(split_commas(given) or []))
    methods: list[str | None] = list(method) if method else [None]
    if len(pairs) * len(precs) * len(engines) * len(methods) > 64:
        raise MlrigError("too many combinations (> 64); compare fewer GPUs, precisions, engines or methods at once")
    # label a row by what varies; what is fixed goes in the title
    varying = _varying(gpu, precision, engine, method)
    varying[0] = len({g for g, _ in pairs}) > 1 or not gpu  # one GPU with two kinds of links: the links label rows
    vary_links = len({link for _, link in pairs}) > 1
    rows: list[dict[str, Any]] = []
    prices = _price_lookup(price_files)
    for g, link in pairs:
        for q in precs:
            for e in engines:
                for m in methods:
                    fields = workload_fields(precision=q, engine=e, method=m, interconnect=link, **common)
                    counted = split_gpu_count(g) if g else None
                    fields["gpu"] = g
                    if counted is not None:  # '8x A100 80GB': 8 GPUs of that kind in this row
                        fields["count"], fields["gpu"] = counted
                    res = evaluate_case(plan_from_fields(model, None, **fields))  # errors come back in `res`
                    parts = [x for x, v in zip((g, q, e, m), varying, strict=True) if x and v]
                    if vary_links:  # the links label the row, after what else varies
                        parts.append(link or "default links")
                    label = " / ".join(parts) or g or q or e or m or "default"  # the title has the rest
                    row = {"variant": label, "gpu": g, "precision": q, "engine": e}
                    if link is not None:
                        row["interconnect"] = link
                    if m is not None:
                        row["method"] = m
                    result = round_floats(res.model_dump(mode="json"))
                    gpus = (fields.get("count") or 1) * (fields.get("nodes") or 1)
                    rows.append({**row, "result": result, "price": row_price(result, gpus, prices)})
    if all(r["result"].get("error") for r in rows) and len({r["result"]["error"] for r in rows}) == 1:
        raise MlrigError(rows[0]["result"]["error"])  # e.g. an unknown model: one line, exit 2
    return rows


def _price_lookup(files: list[Path] | None = None) -> tuple[Any, dict[str, str]]:
    """The price book (built-in + the user's ~/.config/mlrig/prices.toml + `files`, as `recommend` and `mlrig prices`
    read it) and each `[gpu]` entry's catalog GPU id."""
    from mlrig.advisor.prices import load_prices, resolved_entries
    from mlrig.catalog.gpus import resolve_gpu

    book = load_prices(files)
    return book, resolved_entries(book, resolve_gpu)


def row_price(result: dict[str, Any], gpus: int, prices: tuple[Any, dict[str, str]]) -> dict[str, Any] | None:
    """A compare row's price (None when the price book has no card price for its GPU): the card's price
    (mlrig.advisor.prices.card_price: new, else used), the row's `gpus` of them, and the value figure
    `usd_per_tok_s` = the cards' price / the row's speed, the speed being decode tok/s for inference and training
    tokens/s for training (the figure the table shows: a whole row's, all its GPUs). Lower is better. It is None
    where the row has no speed (an error, a plan that does not fit). Price-to-performance guides divide the price
    by the speed ("dollars per hour divided by tokens per second", https://www.gmicloud.ai/en/blog/gpu-price-
    performance-formula-inference, 2026-04-13, for rented GPUs; others print its inverse, tokens/s per dollar):
    for a card bought, its price / tok/s, which reads as a price ("$131 buys one decode tok/s")."""
    import datetime as dt

    from mlrig.advisor.prices import card_price

    book, ids = prices
    if not result.get("gpu"):
        return None
    card = card_price(book, result["gpu"], ids)
    if card is None:
        return None
    perf = result.get("performance") or {}
    training = perf.get("train_tokens_per_s") is not None
    metric = "train_tokens_per_s" if training else "decode_tok_s"
    speed = perf.get(metric) if result.get("fits") is not False and not result.get("error") else None
    usd = card.price_usd * gpus
    return {"key": card.key, "condition": card.condition, "usd_per_gpu": card.price_usd, "gpus": gpus, "usd": usd,
            "usd_per_tok_s": round(usd / speed, 2) if speed else None, "per": metric,
            "date": card.date, "age_days": card.age_days(dt.date.today()), "verification": card.verification,
            "source": card.source}


def _interconnects(gpus: list[str | None], given: list[str] | str | None) -> list[str | None]:
    """The --interconnect of each compared GPU, in --gpu order: none given -> each GPU's own links; one -> the
    same links for every GPU; one per --gpu -> paired in order ('default' keeps that GPU's own). Any other
    count is an error that says the rule."""
    from mlrig.errors import MlrigError

    links = [given] if isinstance(given, str) else list(given or [])
    named: list[str | None] = [None if x.strip().lower() in ("default", "") else x.strip() for x in links]
    if not named:
        return [None] * len(gpus)
    if len(named) == 1:
        return named * len(gpus)
    if len(named) != len(gpus):
        raise MlrigError(f"{len(named)} --interconnect for {len(gpus)} --gpu: give one --interconnect for every "
                         "GPU, one per --gpu in the same order ('default' for a GPU's own links), or any number "
                         "for one --gpu (a row each)")
    return named


def _render(model: str, rows: list[dict[str, Any]], fixed: list[list[str]]) -> None:
    from rich.markup import escape
    from rich.measure import Measurement

    from mlrig.commands._common import (
        SHORT_BOUND,
        band_caption,
        console,
        default_method,
        method_default_caption,
        pooled_engines,
        reservation_caption,
        seq_len_caption,
        shortfall_text,
        zero_default_caption,
    )

    title = " · ".join([model, *(x[0] for x in fixed)])
    training = is_training(rows)
    # engines that vary are in the variant label; training plans have no serving engine
    show_engine = len({r["engine"] for r in rows}) == 1 and not training
    # --tokens: the time to train them, the figure "how long on 8x A100? on one 4090?" asks for
    hours = training and any((r["result"].get("performance") or {}).get("time_to_train_s") for r in rows)
    speed_cols = (["train\ntok/s", "step\ns", "MFU\n%", *(["train\nh"] if hours else [])] if training
                  else ["decode\ntok/s", "prefill\ntok/s", "TTFT\nms"])
    priced = any(r.get("price") for r in rows)  # no GPU in the price book: no price columns, as before
    price_cols = ["price\n$", f"$ per\n{'train' if training else 'decode'}\ntok/s"] if priced else []
    cols = ["variant", *(["engine"] if show_engine else []), "GiB\n/GPU", "fits", *speed_cols, *price_cols, "bound"]
    cells: list[list[str]] = []
    bands: list[tuple[dict[str, float], dict[str, Any]]] = []
    rate_runs: list[bool] = []  # rows whose TTFT band may be a rate run's one-sided overload band
    errors: list[str] = []
    for r in rows:
        res = r["result"]
        prices = price_cells(r.get("price")) if priced else []
        if res.get("error"):
            cells.append([r["variant"], *(["—"] if show_engine else []), "—", "[red]error[/]",
                          *["—"] * len(speed_cols), *prices, "—"])
            errors.append(f"[red]{escape(r['variant'])}:[/] {escape(res['error'])}")  # '[hardware.gpu_spec]' is text
            continue
        mem, perf = res.get("memory") or {}, res.get("performance") or {}
        if res.get("fits") is False:
            # a plan that does not fit has no speed to show, only why (as `plan`): the shortfall, said below
            perf = {}
        else:
            bands.append((perf.get("error_band") or {}, res.get("validation") or {}))
            rate_runs.append(perf.get("capacity_requests_per_s") is not None)
        mfu = perf.get("mfu")
        speeds = ([fmt_num(perf.get("train_tokens_per_s")), fmt_num(perf.get("step_time_s"), 2),
                   "—" if mfu is None else f"{mfu * 100:.0f}"] if training else
                  [fmt_num(perf.get("decode_tok_s")), fmt_num(perf.get("prefill_tok_s")), fmt_num(perf.get("ttft_ms"))])
        if hours:
            ttt = perf.get("time_to_train_s")
            speeds.append("—" if ttt is None else fmt_num(ttt / 3600))
        chosen = default_method(res.get("notes") or [])
        cells.append([
            r["variant"] if chosen is None else f"{r['variant']} · {chosen}",
            *([res.get("engine") or "—"] if show_engine else []),
            fmt_num(mem.get("per_gpu_gib"), 2),
            "yes" if res.get("fits") else "[red]no[/]",
            *speeds,
            *prices,
            SHORT_BOUND.get(perf.get("bound") or "", perf.get("bound") or "—"),
        ])
    con = console()
    table = _table(f"{title}: side by side", cols, cells)
    bound_dropped = False
    if priced and Measurement.get(con, con.options.update_width(10_000), table).maximum > con.width:
        # the price columns are what does not fit (80 columns fit the rest): the bound column makes room
        table, bound_dropped = _table(f"{title}: side by side", cols[:-1], [c[:-1] for c in cells]), True
    notes = [r["result"].get("notes") or [] for r in rows]
    pooled = pooled_engines([r["result"] for r in rows])
    captions = [band_caption(bands, rate_runs), reservation_caption(pooled, headroom_column=False),
                seq_len_caption(notes), zero_default_caption(notes), method_default_caption(notes)]
    table.caption = "\n".join(c for c in captions if c) or None
    con.print(table)
    if priced:
        con.print(price_footnote(rows, training, bound_dropped), highlight=False, markup=False)
    elif any(not r["result"].get("error") for r in rows):
        con.print(NO_PRICES, highlight=False, markup=False)
    for line in errors:
        con.print(line)
    short = [f"{r['variant']}{shortfall_text(r['result'])}" for r in rows
             if not r["result"].get("error") and r["result"].get("fits") is False]
    if short:  # `plan` lists the changes that would make a plan fit; a "no" here should say where to look
        name = model.split(" · ")[0]  # the title's model, without the method / link / count the title adds
        con.print(f"does not fit (no speed shown): {', '.join(short)}; `mlrig plan {name}` with that row's GPU and "
                  "these flags lists the changes that make it fit (precision, --zero, --method lora, more GPUs, ...)",
                  highlight=False)


def _table(title: str, cols: list[str], cells: list[list[str]]) -> Any:
    from rich import box
    from rich.table import Table

    table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)  # fits 80 columns
    for col in cols:
        text = col in ("variant", "engine", "bound")
        table.add_column(col, justify="left" if text else "right", no_wrap=True)
    for row in cells:
        table.add_row(*row)
    return table


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
