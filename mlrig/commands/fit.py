"""`mlrig fit MODEL`: one GPU, or a table across the catalog — which GPUs fit this workload, how fast."""

from __future__ import annotations

from typing import Annotated

import typer

from mlrig.commands._common import (
    BatchOpt,
    ContextOpt,
    CountOpt,
    EngineOpt,
    GpuOpt,
    JsonOpt,
    MethodOpt,
    PrecisionOpt,
    TaskOpt,
    fmt_num,
    workload_fields,
)


def fit_cmd(
    model: Annotated[str, typer.Argument(help="catalog id, HF id, config.json, model dir, .gguf, .safetensors")],
    gpu: GpuOpt = None,
    task: TaskOpt = None, precision: PrecisionOpt = None, engine: EngineOpt = None, batch: BatchOpt = None,
    context: ContextOpt = None, method: MethodOpt = None, count: CountOpt = None,
    vendor: Annotated[str | None, typer.Option("--vendor", help="only this vendor (NVIDIA, AMD, Apple...)")] = None,
    fits_only: Annotated[bool, typer.Option("--fits-only", help="hide GPUs that do not fit")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Which GPUs fit MODEL for this workload, with the memory needed, headroom and decode speed."""
    from mlrig.catalog.gpus import load_gpus, resolve_gpu
    from mlrig.commands._common import print_json
    from mlrig.planner import evaluate, parse_plan, plan_from_fields, resolve_arch

    fields = workload_fields(task=task, precision=precision, engine=engine, batch=batch, context=context,
                             method=method, count=count)
    gpus = [resolve_gpu(gpu)] if gpu else load_gpus()
    if vendor:
        gpus = [g for g in gpus if g.vendor.lower() == vendor.lower()]
    first = parse_plan(plan_from_fields(model, gpu=gpus[0].id if gpus else "rtx-4090", **fields))
    arch = resolve_arch(first)
    results = []
    for g in gpus:
        r = evaluate(plan_from_fields(model, gpu=g.id, **fields), arch=arch, gpu=g)
        if fits_only and not r.fits:
            continue
        results.append(r)
    results.sort(key=lambda r: (not r.fits, -(r.performance.decode_tok_s or r.performance.train_tokens_per_s or 0)
                                if r.performance else 0))
    if as_json:
        print_json(results)
        return
    from rich.console import Console
    from rich.table import Table

    training = first.workload.task != "inference"
    t = Table(title=f"{arch.hf_id or arch.id} · {first.workload.precision} · {first.workload.task}"
              f" (GiB = 2^30 bytes)")
    for col, just in [("GPU", "left"), ("fits", "center"), ("needs GiB/GPU", "right"), ("capacity GiB", "right"),
                      ("headroom GiB", "right"), ("train tok/s" if training else "decode tok/s", "right"),
                      ("bound", "left")]:
        t.add_column(col, justify=just)  # type: ignore[arg-type]
    for r in results:
        m, p = r.memory, r.performance
        speed = (p.train_tokens_per_s if training else p.decode_tok_s) if p and r.fits else None
        t.add_row(r.gpu or "?", "[green]✔[/]" if r.fits else "[red]✘[/]",
                  f"{m.per_gpu_gib:.1f}" if m else "—", f"{m.gpu_capacity_gib:.1f}" if m else "—",
                  f"{m.headroom_gib:+.1f}" if m else "—", fmt_num(speed), (p.bound or "") if p and r.fits else "")
    Console().print(t)


def register(app: typer.Typer) -> None:
    app.command("fit")(fit_cmd)
