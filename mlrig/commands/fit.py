"""`mlrig fit`: the fit question from three sides.

- `mlrig fit MODEL`            every GPU in the catalog for this workload
- `mlrig fit MODEL --gpu G`    every precision on that GPU (which quant, how much context is left)
- `mlrig fit --gpu G`          every catalog model: the best precision that fits, largest models first

Every view lists what fits first (then what does not), keeping its own order within each group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from mlrig.commands._common import (
    SHORT_BOUND,
    BatchOpt,
    ContextOpt,
    CountOpt,
    EngineOpt,
    GpuOpt,
    GpuSpecOpt,
    JsonOpt,
    PrecisionOpt,
    TaskOpt,
    TpOpt,
    band_caption,
    fmt_num,
    method_default_caption,
    narrow_table,
    reservation_caption,
    reserves_pool,
    seq_len_caption,
    setup_options,
    workload_fields,
    zero_default_caption,
)

if TYPE_CHECKING:
    from mlrig.results import PlanResult
    from mlrig.workload import HardwareSpec, WorkloadSpec

# A list, so that a second -m is an error naming `compare` (typer keeps the last of a repeated single option)
FitMethodOpt = Annotated[list[str] | None, typer.Option(
    "--method", "-m", help="full | lora | qlora (training; one: `mlrig compare -m full -m lora` compares them)")]

# Highest quality first: the formats users pick between when something does not fit
# (llama.cpp K-quants for GGUF users; FP8 / 4-bit AWQ for GPU serving engines).
PRECISION_LADDER = ("bf16", "fp8", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "awq", "q3_k_m", "q2_k")
# Training: the formats trainers run (no GGUF: workload.Plan._no_gguf_training). Full training keeps every weight
# trainable, so its formats are the ones an optimizer updates: 16-bit mixed precision (bf16, or fp16 with loss
# scaling where a GPU has no bf16: V100, T4), FP8 GEMMs over bf16 master weights (Transformer Engine / torchao
# float8) and plain fp32. A LoRA base is frozen at 16 bits (a 4-bit base is QLoRA); QLoRA's base is NF4 whatever
# the precision, which sets only its compute dtype.
TRAINING_LADDER = {"full": ("bf16", "fp16", "fp8", "fp32"), "lora": ("bf16", "fp16"), "qlora": ("bf16",)}
# `fit MODEL --gpu G`'s line for the training precisions it leaves out, and why
TRAINING_LEFT_OUT = {
    "full": "not listed: GGUF/AWQ/GPTQ/NF4 (an optimizer cannot update them; a frozen 4-bit base is --method "
            "qlora), and fp8 on a GPU without FP8 tensor cores",
    "lora": "not listed: 8-bit (--precision int8) and 4-bit (--method qlora) frozen bases",
    "qlora": "QLoRA: the base is NF4 whatever --precision (it sets the compute dtype)"}


def _ladder(precision: str | None, fields: dict[str, Any]) -> list[str]:
    """The precisions a view tries: the one given, else the ladder for the task (and training method)."""
    if precision:
        return [precision]
    if (fields.get("task") or "inference") == "inference":
        return list(PRECISION_LADDER)
    return list(TRAINING_LADDER.get(str(fields.get("method") or "full").lower(), ("bf16",)))


def _speed(r: PlanResult, training: bool) -> float | None:
    p = r.performance
    if p is None or not r.fits:
        return None
    return p.train_tokens_per_s if training else p.decode_tok_s


@setup_options
def fit_cmd(
    model: Annotated[str | None, typer.Argument(
        help="catalog id, HF id, config.json, model dir, .gguf, .safetensors; omit to scan the catalog")] = None,
    gpu: GpuOpt = None,
    gpu_spec_text: GpuSpecOpt = None,
    task: TaskOpt = None, precision: PrecisionOpt = None, engine: EngineOpt = None, batch: BatchOpt = None,
    context: ContextOpt = None, method: FitMethodOpt = None, count: CountOpt = None, tp: TpOpt = None,
    vendor: Annotated[str | None, typer.Option("--vendor", help="only this vendor (NVIDIA, AMD, Apple...)")] = None,
    fits_only: Annotated[bool, typer.Option("--fits-only", help="hide rows that do not fit")] = False,
    as_json: JsonOpt = False,
    *, setup: dict[str, Any],
) -> None:
    """Which GPUs fit a model, which precision fits a GPU, or which models fit a GPU — with speed."""
    one = one_method(method, model, gpu)
    rows, title = fit_rows(model, gpu, task=task, precision=precision, engine=engine, batch=batch, context=context,
                           method=one, count=count, tp=tp, vendor=vendor, fits_only=fits_only,
                           gpu_spec_text=gpu_spec_text, **setup)
    if as_json:
        from mlrig.commands._common import print_json

        print_json(fit_json(rows))
        return
    one_gpu = gpu is not None or gpu_spec_text is not None
    varies = {"model": model is None, "GPU": not one_gpu, "precision": not (model is None or not one_gpu)}
    if model is None and precision is None:
        varies["precision"] = True
    training = (task or ("finetune" if method else "inference")) != "inference"
    left_out = TRAINING_LEFT_OUT.get(str(one or "full").lower()) if training and model and one_gpu and \
        precision is None else None
    _render(rows, title, training=training, varies=varies, left_out=left_out)


def one_method(methods: list[str] | None, model: str | None, gpu: str | None) -> str | None:
    """fit's one --method; given several, a one-line MlrigError naming `mlrig compare`, which takes several."""
    from mlrig.errors import MlrigError

    if not methods:
        return None
    if len(methods) > 1:
        gpu_flag = f" --gpu {gpu!r}" if gpu else " --gpu G"
        repeat = " ".join(f"-m {m}" for m in methods)
        raise MlrigError(f"--method given {len(methods)} times ({', '.join(methods)}); fit takes one: give one, or "
                         f"compare them with `mlrig compare {model or 'MODEL'}{gpu_flag} {repeat}`")
    return methods[0]


def fit_rows(model: str | None, gpu: str | None, *, task: str | None = None, precision: str | None = None,
             engine: str | None = None, batch: int | None = None, context: int | None = None,
             method: str | None = None, count: int | None = None, tp: int | None = None, vendor: str | None = None,
             fits_only: bool = False, gpu_spec_text: str | None = None,
             **setup: Any) -> tuple[list[dict[str, Any]], str]:
    """The rows `mlrig fit` shows (arguments as its flags; `setup`: the serving-setup flags,
    `_common.SETUP_OPTIONS`) and their title; raises MlrigError on bad input."""
    from mlrig.errors import MlrigError

    fields = workload_fields(task=task, engine=engine, batch=batch, context=context, method=method,
                             count=count, tp=tp, gpu_spec=gpu_spec_text, **setup)
    fields.pop("precision")  # each view sets its own
    if model is None and gpu is None and gpu_spec_text is None:
        raise MlrigError("give a MODEL, a --gpu, or both (e.g. mlrig fit --gpu 'RTX 3090' --context 8192)")
    if gpu is None and gpu_spec_text is None:
        assert model is not None
        rows, title = _across_gpus(model, vendor, precision, fields)
    elif model is not None:
        rows, title = _across_precisions(model, gpu, precision, fields)
    else:
        rows, title = _across_models(gpu, precision, fields)
    rows.sort(key=lambda r: not r["result"].fits)  # stable: what fits first, each view's order kept
    asked = [f"{context:,}-token context" if context else "", f"batch {batch}" if batch and batch > 1 else ""]
    if any(asked):  # "the biggest model at 8k context": the title says the context every row was fitted at
        title += " at " + ", ".join(a for a in asked if a)
    if fits_only:
        rows = [r for r in rows if r["result"].fits]
    return rows, title


def fit_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`mlrig fit --json`: each row's PlanResult with the precision tried and its limits."""
    from mlrig.jsonout import round_floats

    return [round_floats({**r["result"].model_dump(mode="json"), "precision": r["precision"], "limits": r["limits"]})
            for r in rows]


def _row(result: PlanResult, precision: str, lims: dict[str, int | None] | None = None) -> dict[str, Any]:
    return {"result": result, "precision": precision, "limits": lims}


def _across_gpus(model: str, vendor: str | None, precision: str | None,
                 fields: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    from mlrig.catalog.gpus import load_gpus
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate, parse_plan, plan_from_fields, resolve_arch

    gpus = [g for g in load_gpus() if not vendor or g.vendor.lower() == vendor.lower()]
    prec = precision or "bf16"
    first = parse_plan(plan_from_fields(model, gpu=gpus[0].id if gpus else "rtx-4090", precision=prec, **fields))
    arch = resolve_arch(first)
    rows, refused = [], []
    for g in gpus:
        try:
            rows.append(_row(evaluate(plan_from_fields(model, gpu=g.id, precision=prec, **fields), arch=arch, gpu=g),
                             prec))
        except MlrigError as exc:  # a setup this device cannot run at all (QLoRA on a TPU): not a candidate
            refused.append(str(exc))
    if refused and not rows:
        raise MlrigError(refused[0])
    training = first.workload.task != "inference"
    rows.sort(key=lambda r: (not r["result"].fits, -(_speed(r["result"], training) or 0.0)))
    method = f"{first.training.method} " if training and first.training is not None else ""
    return rows, f"{arch.hf_id or arch.id} · {prec} · {method}{first.workload.task} on every GPU"


def _across_precisions(model: str, gpu: str | None, precision: str | None,
                       fields: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    from mlrig.planner import evaluate, limits, parse_plan, plan_from_fields, resolve_arch, resolve_hardware

    ladder = _ladder(precision, fields)
    first = parse_plan(plan_from_fields(model, gpu=gpu, precision=ladder[0], **fields))
    arch, spec = resolve_arch(first), resolve_hardware(first)
    if precision is None and first.workload.task != "inference" and not spec.fp8_tflops_dense:
        ladder = [p for p in ladder if p != "fp8"]  # FP8 training GEMMs need FP8 tensor cores (Ada, Hopper, ...)
    rows = []
    for prec in ladder:
        p = parse_plan(plan_from_fields(model, gpu=gpu, precision=prec, **fields))
        rows.append(_row(evaluate(p, arch=arch, gpu=spec), prec, limits(p, arch=arch, gpu=spec)))
    return rows, f"{arch.hf_id or arch.id} on {_gpus(first.hardware, spec.name)}: every precision"


def _across_models(gpu: str | None, precision: str | None,
                   fields: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """For each decoder in the catalog, the highest-quality precision that fits (largest models first):
    each precision's memory (`planner.resolve_plan`, `memory_fits`) until one fits, and the whole
    result (`estimate_memory`, `planner.result_of`, as `evaluate` gives it) of that one, or of the last
    tried, with its limits (`planner.resolved_limits`, as `limits` gives them)."""
    from mlrig.catalog.models import load_model_catalog
    from mlrig.estimators.memory import estimate_memory, memory_fits
    from mlrig.planner import (
        parse_plan,
        plan_from_fields,
        resolve_hardware,
        resolve_plan,
        resolved_limits,
        result_of,
    )

    # the best that fits: fp16 and fp32 need as much memory as bf16 or more, so a catalog scan skips them
    ladder = [p for p in _ladder(precision, fields) if precision or p not in ("fp16", "fp32")]
    archs = sorted((a for a in load_model_catalog() if a.kind == "decoder"), key=lambda a: -a.total_params)
    base = parse_plan(plan_from_fields("custom", gpu=gpu, **fields))
    hardware, spec = base.hardware, resolve_hardware(base)
    workloads = _ladder_workloads(gpu, ladder, fields)
    rows = []
    for arch in archs:
        last = None
        p0 = parse_plan(plan_from_fields(arch.id, gpu=gpu, **fields))
        if arch.max_position_embeddings and p0.workload.task == "inference" and (
                p0.workload.context_tokens or 0) > arch.max_position_embeddings and not p0.workload.allow_long_context:
            continue  # a model that cannot hold this context is no candidate (plan refuses it)
        for k, prec in enumerate(ladder):
            p = p0.model_copy(update={"workload": workloads[prec]})  # = parse_plan of these fields with prec
            r, notes = resolve_plan(p, arch=arch, gpu=spec)
            if memory_fits(r)[0] or k == len(ladder) - 1:  # only the row shown needs its memory's notes and speed
                memory = estimate_memory(r)
                last = _row(result_of(r, memory, notes), prec)
                if memory.fits:
                    last["limits"] = resolved_limits(r)
                    break
        if last is not None:
            rows.append(last)
    return rows, f"catalog models on {_gpus(hardware, spec.name)}: the best precision that fits"


def _gpus(hardware: HardwareSpec, name: str) -> str:
    """'2 × NVIDIA GeForce RTX 3090' for a title: with -n 2 the figures are per GPU of two, which the bare
    GPU name did not say."""
    n = hardware.count * hardware.nodes
    return f"{n} × {name}" if n > 1 else name


def _ladder_workloads(gpu: str | None, ladder: list[str], fields: dict[str, Any]) -> dict[str, WorkloadSpec]:
    """The workload section of each precision's plan, validated once for the whole catalog: a plan's
    workload does not depend on its model (the plan's own checks read only its training and hardware), so
    `parse_plan(plan_from_fields(model, gpu=gpu, precision=prec, **fields))` is the model's plan without
    a precision with this section put in (tests/test_fit.py checks the two are equal, fields set included)."""
    from mlrig.planner import parse_plan, plan_from_fields

    return {prec: parse_plan(plan_from_fields("custom", gpu=gpu, precision=prec, **fields)).workload
            for prec in ladder}


def _render(rows: list[dict[str, Any]], title: str, training: bool, varies: dict[str, bool],
            left_out: str | None = None) -> None:
    """One row per result; columns that are the same in every row live in the title instead. `left_out`: a
    caption line saying which precisions the view leaves out and why (TRAINING_LEFT_OUT)."""
    from rich.console import Console

    cols = [(c, j) for c, j in [("model", "left"), ("GPU", "left"), ("precision", "left")] if varies[c]]
    # GGUF rows run on llama.cpp, fp8 / AWQ ones on a serving engine: their tok/s differ by more than the format.
    # One model's rows say which in a column; the catalog's (model names fill 80 columns) in the caption.
    engines = sorted({r["result"].engine for r in rows if r["result"].fits and r["result"].engine})
    mixed = not training and len(engines) > 1
    if mixed and not varies["model"]:
        cols.append(("engine", "left"))
    # fine-tunes that name no method take each GPU's (planner.default_finetune_method): a column when they differ
    methods = {r["result"].training.method for r in rows if training and r["result"].training}
    if len(methods) > 1:
        cols.append(("method", "left"))
    cols += [("GiB", "right"), ("headroom", "right")]  # headroom carries ✔/✘
    if any(r["limits"] for r in rows):
        cols.append(("max ctx", "right"))
    cols += [("train tok/s" if training else "tok/s", "right"), ("bound", "left")]
    cells = [_cells(r, training) for r in rows]
    t = narrow_table(f"{title} (GiB per GPU; GiB = 2^30 bytes)", cols, [[c[n] for n, _ in cols] for c in cells],
                     flexible=("model", "GPU"))
    metric = "train_tokens_per_s" if training else "decode_tok_s"
    shown = [({metric: r["result"].performance.error_band[metric]}, r["result"].validation) for r in rows
             if r["result"].fits and r["result"].performance and metric in r["result"].performance.error_band]
    caption = band_caption(shown)
    if caption:
        t.caption = caption + ("" if training else "; tok/s: decode per sequence")
        if mixed and varies["model"]:
            t.caption += f" on {' or '.join(engines)} (GGUF precisions on llama.cpp)"
    notes = [r["result"].notes or [] for r in rows]
    pooled = [r["result"].engine or "" for r in rows if (m := r["result"].memory) is not None
              and reserves_pool(m.gpu_capacity_gib, m.per_gpu_gib, m.headroom_gib)]
    extras = ([seq_len_caption(notes), zero_default_caption(notes), method_default_caption(notes), left_out]
              if training
              else [reservation_caption(pooled, headroom_column=True)])
    if not varies["model"]:  # the title names the catalog entry: say why when the user gave another name
        extras.insert(0, next((n for n in (notes[0] if notes else []) if "resolved to catalog entry" in n), None))
    for extra in extras:
        if extra:
            t.caption = f"{t.caption}\n{extra}" if t.caption else extra
    Console().print(t)


def _cells(r: dict[str, Any], training: bool) -> dict[str, str]:
    """One table row's cells by column name (rich markup)."""
    res: PlanResult = r["result"]
    m, p, lims = res.memory, res.performance, r["limits"]
    ctx = lims.get("max_context_tokens") if lims and res.fits else None
    named = {"model": (res.model or "?").split("/")[-1], "GPU": res.gpu or "?", "precision": r["precision"],
             "engine": (res.engine or "—") if res.fits else "",
             "method": (res.training.method or "") if res.training else ""}
    mark = "[green]✔[/]" if res.fits else "[red]✘[/]"
    named["GiB"] = f"{m.per_gpu_gib:.1f}" if m else "—"
    named["headroom"] = f"{mark} {m.headroom_gib:+.1f}" if m else mark
    named["max ctx"] = f"{ctx:,}" if ctx else "—"
    named["tok/s"] = named["train tok/s"] = fmt_num(_speed(res, training))
    named["bound"] = SHORT_BOUND.get(p.bound or "", p.bound or "") if p and res.fits else ""
    return named


def register(app: typer.Typer) -> None:
    app.command("fit")(fit_cmd)
