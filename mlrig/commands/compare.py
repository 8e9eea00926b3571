"""`mlrig compare`: one workload side by side across GPUs, precisions or engines."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mlrig.commands._common import (
    BatchOpt,
    ContextOpt,
    CountOpt,
    JsonOpt,
    KvPrecisionOpt,
    OutputOpt,
    PromptOpt,
    TaskOpt,
    TpOpt,
    fmt_num,
    workload_fields,
)

GpusOpt = Annotated[list[str] | None, typer.Option("--gpu", "-g", help="GPU to compare (repeat)")]
PrecisionsOpt = Annotated[list[str] | None, typer.Option("--precision", "-q", help="precision to compare (repeat)")]
EnginesOpt = Annotated[list[str] | None, typer.Option("--engine", "-e", help="engine to compare (repeat)")]


def compare_cmd(
    model: Annotated[str, typer.Argument(help="catalog id, HF id, config.json, .gguf ...")],
    gpu: GpusOpt = None,
    precision: PrecisionsOpt = None,
    engine: EnginesOpt = None,
    task: TaskOpt = None,
    kv_precision: KvPrecisionOpt = None,
    batch: BatchOpt = None,
    prompt: PromptOpt = None,
    output: OutputOpt = None,
    context: ContextOpt = None,
    tp: TpOpt = None,
    count: CountOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Memory per GPU, fits, decode/prefill tok/s, TTFT and bound, one column per variant."""
    from mlrig.commands._common import console, print_json
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate, plan_from_fields

    gpus: list[str | None] = list(gpu) if gpu else [None]
    precs: list[str | None] = list(precision) if precision else [None]
    engines: list[str | None] = list(engine) if engine else [None]
    if len(gpus) * len(precs) * len(engines) > 64:
        raise MlrigError("too many combinations (> 64); compare fewer GPUs, precisions or engines at once")
    rows: list[dict[str, Any]] = []
    for g in gpus:
        for q in precs:
            for e in engines:
                fields = workload_fields(
                    task=task,
                    precision=q,
                    kv_precision=kv_precision,
                    engine=e,
                    batch=batch,
                    prompt=prompt,
                    output=output,
                    context=context,
                    tp=tp,
                    count=count,
                )
                fields["gpu"] = g
                res = evaluate(plan_from_fields(model, None, **fields))
                label = " / ".join(x for x in (g, q, e) if x) or "default"
                rows.append(
                    {"variant": label, "gpu": g, "precision": q, "engine": e, "result": res.model_dump(mode="json")}
                )
    if as_json:
        print_json(rows)
        return
    from rich.table import Table

    table = Table(title=f"{model}: side by side")
    for col in ("variant", "GiB/GPU", "fits", "decode tok/s", "prefill tok/s", "TTFT ms", "bound"):
        table.add_column(col, justify="left" if col in ("variant", "bound") else "right")
    for r in rows:
        res = r["result"]
        mem, perf = res.get("memory") or {}, res.get("performance") or {}
        table.add_row(
            r["variant"],
            fmt_num(mem.get("per_gpu_gib"), 2),
            "yes" if res.get("fits") else "no",
            fmt_num(perf.get("decode_tok_s")),
            fmt_num(perf.get("prefill_tok_s")),
            fmt_num(perf.get("ttft_ms")),
            perf.get("bound") or "—",
        )
    console().print(table)


def register(app: typer.Typer) -> None:
    app.command("compare")(compare_cmd)
