"""`mlrig trace`: exact memory of the real Hugging Face program, traced on fake tensors (no GPU)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mlrig.commands._common import (
    BatchOpt,
    CkptOpt,
    ContextOpt,
    EngineOpt,
    GpuOpt,
    JsonOpt,
    LoraRankOpt,
    MethodOpt,
    OptimizerOpt,
    OutputOpt,
    PrecisionOpt,
    PromptOpt,
    SeqLenOpt,
    TaskOpt,
    workload_fields,
)

if TYPE_CHECKING:
    from mlrig.trace.report import TraceReport

OptimizerImplOpt = Annotated[str | None, typer.Option(
    "--optimizer-impl", help="foreach | fused | forloop (default fused: HF Trainer's adamw_torch_fused)")]
AttentionOpt = Annotated[str | None, typer.Option(
    "--attention", help="flash | efficient | eager (default: flash, or eager when the plan turns flash off)")]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="trace again even if a cached result exists")]
DirectOpt = Annotated[bool, typer.Option(
    "--direct", help="trace every layer instead of two short stacks extended per layer (slower)")]

_LABELS = {"parameters": "parameters", "gradients": "gradients", "optimizer_state": "optimizer state",
           "optimizer_temporaries": "optimizer temporaries", "kv_cache": "KV cache",
           "weight_copies": "weight copies (autocast casts)", "activations": "activations (saved for backward)",
           "logits_loss": "logits and loss", "temporaries": "temporaries"}


def run_trace_for_plan(plan_data: dict[str, Any], *, optimizer_impl: str | None, attention: str | None,
                       use_cache: bool = True, direct: bool = False) -> tuple[Any, TraceReport]:
    """Parse and default a plan, trace it; (the formula's PlanResult, the trace report)."""
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate, parse_plan, resolve_arch, resolve_hardware, with_defaults, with_seq_len
    from mlrig.trace.api import trace_plan

    if optimizer_impl is not None and optimizer_impl not in ("foreach", "fused", "forloop"):
        raise MlrigError(f"--optimizer-impl takes foreach, fused or forloop, got {optimizer_impl!r}")
    if attention is not None and attention not in ("flash", "efficient", "eager"):
        raise MlrigError(f"--attention takes flash, efficient or eager, got {attention!r}")
    plan = parse_plan(plan_data)
    arch, gpu = resolve_arch(plan), resolve_hardware(plan)
    result = evaluate(plan, arch=arch, gpu=gpu)
    defaulted = one_replica(with_seq_len(arch, with_defaults(plan, gpu, arch)[0]))
    rep = trace_plan(defaulted, arch, gpu, optimizer_impl=optimizer_impl,  # type: ignore[arg-type]
                     attention=attention, use_cache=use_cache, direct=direct)  # type: ignore[arg-type]
    return result, rep


def exact_trace(plan: Any, arch: Any, gpu: Any) -> TraceReport:
    """`mlrig plan --exact`: the trace of a parsed plan, with the defaults the planner fills in."""
    from mlrig.planner import with_defaults, with_seq_len
    from mlrig.trace.api import trace_plan

    return trace_plan(one_replica(with_seq_len(arch, with_defaults(plan, gpu, arch)[0])), arch, gpu)


def one_replica(defaulted: Any) -> Any:
    """The plan one data-parallel replica runs (its GPUs, its share of the batch: estimators/replicas.py), as
    the formula prices it; the plan itself where its GPUs hold one copy of the model."""
    from mlrig.estimators.replicas import replica_plan, serving_replicas

    return replica_plan(defaulted, serving_replicas(defaulted))


def render_trace(rep: TraceReport) -> None:
    """A person's view: the three peak figures, phases, categories, recipe, formula beside it."""
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False)
    where = f" on {rep.gpu}" if rep.gpu else ""
    con.print(f"[bold]{rep.model}[/] · {rep.recipe.task} · traced{where} "
              f"({'cached' if rep.cached else f'{rep.trace_seconds:.1f} s'})")
    if rep.fits is not None:
        verdict = "[green]✔ fits[/]" if rep.fits else "[red]✘ does not fit[/]"
        con.print(f"{verdict} — nvidia-smi ≈ {rep.nvidia_smi_gib:.2f} GiB of {rep.gpu_capacity_gib:.2f} GiB")
    con.print(f"peak allocated {rep.peak_allocated_gib:.2f} GiB (torch.cuda.max_memory_allocated) · "
              f"reserved {rep.peak_reserved_gib:.2f} GiB (max_memory_reserved) · nvidia-smi ≈ "
              f"{rep.nvidia_smi_gib:.2f} GiB (+{rep.cuda_context_gib:.2f} GiB CUDA context, 0.3-0.7 in practice)")
    t = Table(title="Peak allocated by phase, and what is live at it (GiB = 2^30 bytes)", header_style="bold")
    t.add_column("category")
    for ph in rep.phases:
        t.add_column(ph.phase + (" *" if ph.phase == rep.peak_phase else ""), justify="right")
    cats = [k for k in _LABELS if any(ph.by_category_gib.get(k) for ph in rep.phases)]
    for k in cats:
        t.add_row(_LABELS[k], *[f"{ph.by_category_gib.get(k, 0.0):.2f}" for ph in rep.phases])
    t.add_row("[bold]peak allocated[/]", *[f"[bold]{ph.peak_allocated_gib:.2f}[/]" for ph in rep.phases])
    con.print(t)
    con.print("Recipe: " + "; ".join(rep.recipe_text)
              + (f"; kernels used: {', '.join(rep.kernels)}" if rep.kernels else ""))
    con.print(f"{rep.params / 1e9:.3g}B parameters ({rep.trainable_params / 1e6:,.1f} M trainable), "
              f"{rep.layers} layers" + (f", traced at {' and '.join(map(str, rep.layers_traced))} layers and "
                                        "extended per layer" if rep.extrapolated else ""))
    if rep.comparison is not None:
        c = Table(title="Trace vs formula (mlrig plan)", header_style="bold")
        c.add_column("component")
        c.add_column("trace GiB", justify="right")
        c.add_column("formula GiB", justify="right")
        for name, tr, fo in rep.comparison.rows:
            c.add_row(name, f"{tr:.2f}", f"{fo:.2f}")
        con.print(c)
        for line in rep.comparison.explanations:
            con.print(f"[cyan]why:[/] {line}")
    for note in rep.notes:
        con.print(f"[yellow]note:[/] {note}")


def trace_cmd(
    model: Annotated[str | None, typer.Argument(help="catalog id, HF id, config.json or model dir")] = None,
    gpu: GpuOpt = None,
    file: Annotated[Path | None, typer.Option("--file", "-f", help="plan file (TOML or JSON)")] = None,
    task: TaskOpt = None, precision: PrecisionOpt = None, engine: EngineOpt = None, batch: BatchOpt = None,
    prompt: PromptOpt = None, output: OutputOpt = None, context: ContextOpt = None, method: MethodOpt = None,
    lora_rank: LoraRankOpt = None, optimizer: OptimizerOpt = None, seq_len: SeqLenOpt = None,
    checkpointing: CkptOpt = None, optimizer_impl: OptimizerImplOpt = None, attention: AttentionOpt = None,
    no_cache: NoCacheOpt = False, direct: DirectOpt = False, as_json: JsonOpt = False,
) -> None:
    """Exact memory of the real HF transformers/PEFT program, traced on fake tensors (no GPU needed).

    Needs the trace extra: pip install 'mlrig[trace]'."""
    from mlrig.commands._common import missing_model_message, print_json
    from mlrig.errors import MlrigError
    from mlrig.planner import load_plan_file, plan_from_fields

    base = load_plan_file(file) if file else None
    if model is None and base is None:
        raise MlrigError(missing_model_message("mlrig trace llama-3.2-1b --task finetune", method))
    # trace replays HF transformers; with no engine named that is the engine (not plan's default).
    fields = workload_fields(task=task, precision=precision, engine=engine or ("transformers" if (
                                 task or "inference") == "inference" and not (base or {}).get("workload", {}).get(
                                 "engine") else None), batch=batch, prompt=prompt,
                             output=output, context=context, method=method, lora_rank=lora_rank,
                             optimizer=optimizer, seq_len=seq_len, checkpointing=checkpointing)
    data = plan_from_fields(model, base=base, gpu=gpu, **fields)
    result, rep = run_trace_for_plan(data, optimizer_impl=optimizer_impl, attention=attention,
                                     use_cache=not no_cache, direct=direct)
    if as_json:
        out = result.model_dump(mode="json")
        out["trace"] = rep.model_dump(mode="json")
        print_json(out)
    else:
        render_trace(rep)


def register(app: typer.Typer) -> None:
    app.command("trace")(trace_cmd)
