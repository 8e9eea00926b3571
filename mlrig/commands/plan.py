"""`mlrig plan`: will it fit, where every GiB goes, and how fast — for one workload."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mlrig.commands._common import (
    ActCkptOpt,
    ActOffloadOpt,
    AttnKernelOpt,
    BatchOpt,
    ChunkedLossOpt,
    CkptOpt,
    ContextOpt,
    CountOpt,
    CpOpt,
    CudaGraphOpt,
    DataBytesOpt,
    EngineOpt,
    Fp8DpaOpt,
    GpuLayersOpt,
    GpuOpt,
    GpuSpecOpt,
    JsonOpt,
    KvPrecisionOpt,
    LoadOpt,
    LoraRankOpt,
    LoraTargetsOpt,
    MarkdownOpt,
    MethodOpt,
    MtbfOpt,
    NodesOpt,
    NumRequestsOpt,
    OffloadOpt,
    OptimizerOpt,
    OutputOpt,
    PpOpt,
    PrecisionOpt,
    PromptOpt,
    RequestRateOpt,
    SeqLenOpt,
    SpOpt,
    StorageOpt,
    TaskOpt,
    TokensOpt,
    TpOpt,
    TpOverlapOpt,
    VppOpt,
    ZeroOpt,
    fmt_num,
    limits_line,
    max_model_len_clause,
    precision_text,
    reserves_pool,
    setup_options,
    training_fields,
    workload_fields,
)

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch
    from mlrig.fixes import Fix
    from mlrig.results import PlanResult, TrainingRun
    from mlrig.workload import Plan


def render_result(result: PlanResult, plan: dict[str, Any], lims: dict[str, int | None] | None,
                  fixes: list[Fix] | None = None, follows_context: bool = False,
                  train_seq_len: int | None = None) -> None:
    """A person's view: verdict, memory breakdown, speed with its explanation, limits, notes.
    `follows_context`: the plan gave its context and no prompt (`WorkloadSpec.follows_context`), so its
    request fills the context; a note says so and how to ask about a shorter one. `train_seq_len`: a training
    plan's sequence length (given or defaulted), which the speed line states with the micro-batch."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    # Colours come from our markup; rich's automatic highlighter compiles ~30 regexes (~5 ms of start-up).
    # No ":name:" emoji codes either: none is ours, loading rich's emoji table costs ~4 ms, and a model
    # or file name holding one (":fire:") is printed as given.
    con = Console(highlight=False, emoji=False)
    mem = result.memory
    perf = result.performance
    wl = plan.get("workload", {})
    hw = plan.get("hardware", {})
    n_gpus = int(hw.get("count", 1)) * int(hw.get("nodes", 1))
    failures = n_gpus > 1 or hw.get("mtbf_hours") is not None  # one GPU: no failure-rate lines unless asked
    task = wl.get("task", "inference")
    engine = f" ({result.engine})" if result.engine else ""
    precision = precision_text(result.precision, result.base_weights_precision)
    head = (f"[bold]{result.model}[/] · {precision} · {task}{engine}"
            f" on {n_gpus} × {result.gpu}{sharding_text(plan, n_gpus)}")
    con.print(head)
    from mlrig.estimators.replicas import layout_line

    layout = layout_line(result.data_parallel_replicas, result.notes)  # "8 GPUs = 8 replicas x TP 1"
    if layout:
        con.print(f"{escape(layout)} (data parallel: each replica serves its share of the load)")
    # said at once, not among the notes: the GPU assumed, and a fine-tune's method where the plan names none
    assumed = [n for n in result.notes if n.startswith(("no GPU given", "method: "))]
    for note in assumed:
        con.print(f"[yellow]note:[/] {escape(note)}")
    if mem is None:
        return
    verdict = "[green]✔ fits[/]" if result.fits else "[red]✘ does not fit[/]"
    if result.fits and result.max_model_len_limit_tokens is not None:
        verdict = f"[yellow]✔ fits{escape(max_model_len_clause(result.max_model_len_limit_tokens))}[/]"
    if not result.fits and mem.headroom_gib >= 0:  # memory holds it, but the engine would not start (a note says why)
        verdict = "[red]✘ the engine would not start[/]"
    # A serving engine takes its whole reservation; its headroom is KV-pool room beyond one sequence
    pooled = reserves_pool(mem.gpu_capacity_gib, mem.per_gpu_gib, mem.headroom_gib)
    spare = "KV pool to spare beyond one sequence" if pooled else "headroom"
    room = f"{mem.headroom_gib:+.2f} GiB {spare}"
    if mem.headroom_gib < 0:  # "-26 GiB to spare" reads as a contradiction: say how much is missing
        room = f"{-mem.headroom_gib:.2f} GiB short" + (
            " of the engine's reservation, one sequence's KV cache included" if pooled else "")
    con.print(f"{verdict} — {mem.per_gpu_gib:.2f} GiB of {mem.gpu_capacity_gib:.2f} GiB per GPU ({room})")
    t = Table(title="Memory per GPU (GiB = 2^30 bytes)", show_header=True, header_style="bold")
    t.add_column("component")
    t.add_column("GiB", justify="right")
    rows = [("weights", mem.weights_gib), ("KV cache", mem.kv_cache_gib),
            ("activations / workspace", mem.activations_gib), ("gradients", mem.gradients_gib),
            ("optimizer states", mem.optimizer_gib), ("runtime overhead", mem.overhead_gib)]
    for name, val in rows:
        if val:
            t.add_row(name, f"{val:.2f}")
    t.add_row("[bold]total per GPU[/]", f"[bold]{mem.per_gpu_gib:.2f}[/]")
    if mem.host_ram_gib:
        t.add_row("host RAM", f"{mem.host_ram_gib:.2f}")
    con.print(t)
    if result.kv_cache_capacity_tokens is not None:
        n_replicas = result.data_parallel_replicas or 1
        each = f" per replica (x{n_replicas} replicas)" if n_replicas > 1 else ""
        con.print(f"KV-cache capacity: {result.kv_cache_capacity_tokens:,} tokens{each}")
    if perf is not None:
        from mlrig.commands.markdown import band_text

        band = perf.error_band
        shown = {"capacity_requests_per_s": perf.capacity_requests_per_s}

        def pm(metric: str) -> str:
            """A figure's band worded as --markdown and compare word it (markdown.band_text); '' without one."""
            return f" ({band_text(metric, band[metric], shown)})" if metric in band else ""
        label = "Speed" if result.fits else "Speed if it fit"
        if task == "inference":
            if perf.prompt_tokens is not None and perf.decode_context_tokens is not None:
                label += (f" ({perf.prompt_tokens:,}-token prompt, {perf.output_tokens:,} out; "
                          f"{decode_context_text(perf)})")
            # every load's TTFT/TPOT band as --markdown and compare give it; a rate run's TTFT band near or past
            # capacity is wide and one-sided (serving.overload_ttft_band)
            ttft_band = pm("ttft_ms") if perf.ttft_ms is not None else ""
            tpot_band = pm("tpot_ms") if perf.tpot_ms is not None else ""
            con.print(f"{label}: prefill {fmt_num(perf.prefill_tok_s)} tok/s{pm('prefill_tok_s')}, "
                      f"TTFT {fmt_num(perf.ttft_ms)} ms{ttft_band} · decode {fmt_num(perf.decode_tok_s)} tok/s per "
                      f"sequence{pm('decode_tok_s')}, TPOT {fmt_num(perf.tpot_ms)} ms{tpot_band} · throughput "
                      f"{fmt_num(perf.throughput_tok_s)} tok/s{pm('throughput_tok_s')}")
        else:
            mfu = f", MFU {perf.mfu * 100:.0f}%" if perf.mfu is not None else ""
            if perf.hfu is not None and perf.mfu is not None and perf.hfu > perf.mfu + 0.005:
                mfu += f" (HFU {perf.hfu * 100:.0f}% with recompute)"
            ttt = (f", time to train {perf.time_to_train_s / 3600:,.1f} h"
                   if perf.time_to_train_s is not None else "")
            if train_seq_len is not None:
                label += f" (micro-batch {int(wl.get('batch_size', 1)):,} × {train_seq_len:,} tokens per GPU)"
            con.print(f"{label}: {fmt_num(perf.train_tokens_per_s)} tokens/s"
                      f"{pm('train_tokens_per_s')}, step {fmt_num(perf.step_time_s, 2)} s{mfu}{ttt}")
        if perf.requests_per_s is not None:
            con.print(f"Serving: {fmt_num(perf.requests_per_s, 2)} requests/s, "
                      f"{fmt_num(perf.total_throughput_tok_s)} prompt + output tok/s")
        if perf.explanation:
            con.print(f"[dim]{escape(perf.explanation)}[/]")
        if perf.other_engines:
            con.print("Other engines (decode / prefill tok/s): " + " · ".join(
                f"{name} {fmt_num(v['decode_tok_s'])} / {fmt_num(v['prefill_tok_s'])}"
                for name, v in perf.other_engines.items()))
    line = validation_line(result, task)
    if line:
        con.print(f"[dim]{escape(line)}[/]")
    if result.training is not None:
        _render_training_run(con, result.training, failures=failures)
    if lims:
        con.print(limits_line(lims))
    if not result.fits:
        _render_fixes(con, fixes or [], task)
    run_notes = result.training.notes if result.training else []
    if not failures:
        run_notes = [n for n in run_notes if not n.startswith("MTBF")]
    filled = []
    if follows_context and perf is not None and perf.prompt_tokens is not None and task == "inference":
        filled = [f"only the context given: the request fills its {int(wl.get('context_tokens') or 0):,} tokens "
                  f"({perf.prompt_tokens:,} prompt + {perf.output_tokens:,} output), so TTFT and decode are priced "
                  "there; pass --prompt/--output for a shorter request"]
    for note in [*mem.notes, *(n for n in result.notes if n not in assumed), *run_notes, *filled]:
        con.print(f"[yellow]note:[/] {escape(note)}")


def sharding_text(plan: dict[str, Any], n_gpus: int) -> str:
    """' · ZeRO 0 (...)' for training on several GPUs: the headline says which ZeRO/FSDP stage the memory
    assumes, since stage 0 (plain data parallel, the default) keeps every state on every GPU."""
    t = plan.get("training")
    if (plan.get("workload") or {}).get("task", "inference") == "inference" or not t or n_gpus < 2:
        return ""
    z = int(t.get("zero_stage", 0))
    what = {0: "plain DDP, all states on every GPU; --zero 1-3 shards them", 1: "optimizer states sharded",
            2: "optimizer states + gradients sharded", 3: "FSDP full shard"}[z]
    return f" · ZeRO {z} ({what})"


def validation_line(result: PlanResult, task: str) -> str:
    """One line: how many published runs each headline figure was checked on, and their errors; a small
    scope says its band was kept at the default (scopes.SMALL_SCOPE_ROWS)."""
    from mlrig.validation.scopes import SMALL_SCOPE_TEXT, small_scope

    shown = (("decode_tok_s", "decode"), ("prefill_tok_s", "prefill")) if task == "inference" else \
        (("train_tokens_per_s", "speed"),)
    parts = []
    for figure, label in (*shown, ("per_gpu_gib", "memory")):
        v = result.validation.get(figure)
        if v is None:
            continue
        if v.validated:
            banded = result.performance is not None and figure in result.performance.error_band
            few = f" ({SMALL_SCOPE_TEXT})" if banded and small_scope(v.rows) else ""
            parts.append(f"{label} on {v.rows} runs ({v.scope}), median {(v.median_error or 0) * 100:.0f}%, "
                         f"p90 {(v.p90_error or 0) * 100:.0f}%{few}")
        else:
            near = f"; nearest: {v.nearest}" if v.nearest else ""
            parts.append(f"{label} not validated ({v.scope}{near})")
    return ("Validated: " + " · ".join(parts)) if parts else ""


def _render_fixes(con: Any, fixes: list[Fix], task: str) -> None:
    """'To make it fit, change one of:' and one line per change with its new memory per GPU."""
    from rich.markup import escape

    if not fixes:
        con.print("[bold]To make it fit:[/] no single change found (tried precision, context, batch, "
                  "offload, ZeRO, LoRA/QLoRA and up to 64 GPUs)")
        return
    from rich.table import Table

    unit = "tok/s" if task == "inference" else "tokens/s"
    con.print("[bold]To make it fit[/], change one of:")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for f in fixes:
        speed = f", {fmt_num(f.tok_s)} {unit}" if f.tok_s else ""
        note = f" ({escape(f.note)})" if f.note else ""
        grid.add_row("", escape(f.flags), f"{f.per_gpu_gib:.2f} of {f.gpu_capacity_gib:.2f} GiB/GPU{speed}: "
                     f"{escape(f.change)}{note}")
    con.print(grid)


def _render_training_run(con: Any, run: TrainingRun, failures: bool = True) -> None:
    """Data, checkpoint and failure arithmetic of a training run, two or three lines. `failures=False`
    (one GPU) leaves out the interruption rate and checkpoint interval: Llama 3's per-GPU failure rate
    is about clusters, and a one-GPU job's checkpoint cadence is the user's choice (JSON keeps both)."""
    if run.compute_optimal_tokens is not None:
        planned = f"{_count(run.tokens_to_train)} tokens planned; " if run.tokens_to_train else ""
        con.print(f"Run: {planned}compute-optimal ~{_count(run.compute_optimal_tokens)} tokens "
                  "(Chinchilla, 20 per parameter)")
    verdict = "ok" if run.data_pipeline_ok else "[red]too slow: data bound[/]"
    con.print(f"Data: reads {_rate(run.data_read_mb_s)} of training data ({run.data_bytes_per_token:g} B/token) "
              f"from storage at {run.storage_gb_s:g} GB/s: {verdict}")
    cost = f"~{run.checkpoint_overhead:.1%}" if run.checkpoint_overhead >= 0.001 else "< 0.1%"
    ckpt = (f"Checkpoints: {run.checkpoint_gib:,.1f} GiB (trainable weights + optimizer states), "
            f"{fmt_num(run.checkpoint_write_s)} s to write")
    if failures:
        ckpt += (f"; MTBF {run.mtbf_hours:,.0f} h -> every {_duration(run.checkpoint_interval_s)} (Young/Daly), "
                 f"{cost} of run time")
    con.print(ckpt)


def _rate(mb_s: float) -> str:
    """A read rate in decimal units with three significant figures (units.read_rate_text): kB/s, MB/s, GB/s."""
    from mlrig.units import MB, read_rate_text

    return read_rate_text(mb_s * MB)


def _count(n: float) -> str:
    """Token counts as people say them: 160B, 1.2T, 500M."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if n >= div:
            v = n / div
            return f"{v:,.0f}{unit}" if v >= 100 else f"{v:.3g}{unit}"
    return f"{n:.0f}"


def _duration(seconds: float) -> str:
    """A human span: minutes below two hours, hours below two days, else days."""
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


@setup_options
def plan_cmd(
    model: Annotated[str | None, typer.Argument(
        help="catalog id, HF id, config.json, model dir, .gguf, .safetensors")] = None,
    gpu: GpuOpt = None,
    spec: GpuSpecOpt = None,
    file: Annotated[Path | None, typer.Option(
        "--file", "-f", help="plan file (TOML or JSON); flags override it")] = None,
    task: TaskOpt = None, precision: PrecisionOpt = None, kv_precision: KvPrecisionOpt = None,
    engine: EngineOpt = None, batch: BatchOpt = None, prompt: PromptOpt = None, output: OutputOpt = None,
    context: ContextOpt = None, method: MethodOpt = None,
    lora_rank: LoraRankOpt = None, optimizer: OptimizerOpt = None, seq_len: SeqLenOpt = None,
    checkpointing: CkptOpt = None, zero: ZeroOpt = None, offload: OffloadOpt = None, tp: TpOpt = None,
    pp: PpOpt = None, count: CountOpt = None, nodes: NodesOpt = None, tokens: TokensOpt = None,
    gpu_layers: GpuLayersOpt = None, storage_gb_s: StorageOpt = None, mtbf_h: MtbfOpt = None,
    data_bytes_per_token: DataBytesOpt = None, load: LoadOpt = None, request_rate: RequestRateOpt = None,
    num_requests: NumRequestsOpt = None,
    activation_checkpointing: ActCkptOpt = None,
    lora_targets: LoraTargetsOpt = None,
    chunked_loss: ChunkedLossOpt = None, activation_offload: ActOffloadOpt = None, cp: CpOpt = None,
    sp: SpOpt = None, attention_kernel: AttnKernelOpt = None, vpp: VppOpt = None,
    fp8_dot_product_attention: Fp8DpaOpt = None, enable_cuda_graph: CudaGraphOpt = None,
    tp_comm_overlap: TpOverlapOpt = None,
    machine: Annotated[str | None, typer.Option(
        "--machine", help="'local': use this machine's measured figures from `mlrig probe`")] = None,
    show_limits: Annotated[bool, typer.Option(
        "--limits/--no-limits", help="largest batch/context, fewest GPUs")] = True,
    as_json: JsonOpt = False,
    markdown: MarkdownOpt = False,
    exact: Annotated[bool, typer.Option(
        "--exact", help="also trace the real HF program on fake tensors (needs pip install 'mlrig[trace]')")] = False,
    *, setup: dict[str, Any],
) -> None:
    """Will it fit, and how fast? Memory per GPU and host RAM, KV capacity, speed and what bounds it.

    Inference speed is priced for a 512-token prompt and 128 output tokens, or, with --context and no
    --prompt, for a request that fills the context; the speed line says which."""
    from mlrig.commands._common import missing_model_message, print_json
    from mlrig.errors import MlrigError
    from mlrig.planner import load_plan_file, plan_from_fields

    if as_json and markdown:
        raise MlrigError("--json and --markdown both asked for: give one")
    base = load_plan_file(file) if file else None
    if model is None and base is None:
        raise MlrigError(missing_model_message("mlrig plan llama-3.1-8b --gpu 'RTX 4090'", method))
    fields = workload_fields(task=task, precision=precision, kv_precision=kv_precision, engine=engine,
                             batch=batch, prompt=prompt, output=output, context=context, method=method,
                             lora_rank=lora_rank, optimizer=optimizer, seq_len=seq_len,
                             checkpointing=checkpointing, zero=zero, offload=offload, tp=tp, pp=pp,
                             count=count, nodes=nodes, tokens=tokens, storage_gb_s=storage_gb_s, mtbf_h=mtbf_h,
                             data_bytes_per_token=data_bytes_per_token, gpu_layers=gpu_layers,
                             gpu_spec=spec, load=load, request_rate=request_rate, num_requests=num_requests,
                             **setup)
    fields.update(training_fields(activation_checkpointing=activation_checkpointing, lora_targets=lora_targets,
                                  chunked_loss=chunked_loss, activation_offload=activation_offload, cp=cp, sp=sp,
                                  attention_kernel=attention_kernel, vpp=vpp,
                                  fp8_dot_product_attention=fp8_dot_product_attention,
                                  enable_cuda_graph=enable_cuda_graph, tp_comm_overlap=tp_comm_overlap))
    overrides = None
    if machine is not None:
        gpu, overrides, fields["host_memory_bandwidth_gb_s"], disk_gb_s, ram_gib = _local_machine(machine, gpu)
        if gpu is None and fields.get("gpu_spec") is None:  # no GPU here: the CPU runs it (llama.cpp's CPU backend)
            fields["gpu_spec"] = _local_cpu_spec()
        fields["host_ram_gib"] = ram_gib  # offload's host RAM is checked against what this machine has
        if fields["storage_gb_s"] is None:
            fields["storage_gb_s"] = disk_gb_s
    data = plan_from_fields(model, base=base, gpu=gpu, **fields)
    result, plan, lims, fixes = plan_outputs(data, overrides, show_limits)
    trace = None
    if exact:
        from mlrig.commands.trace import exact_trace, render_trace
        from mlrig.planner import resolve_arch, resolve_hardware

        trace = exact_trace(plan, resolve_arch(plan), resolve_hardware(plan, overrides))
    if as_json:
        out = plan_json(result, lims, fixes)
        if trace is not None:
            out["trace"] = trace.model_dump(mode="json")
        print_json(out)
        return
    # the human views add one note where the default TP is beaten by replicas (planner.replicas_hint); --json,
    # like every other command's result, keeps the plan's own figures and notes
    from mlrig.planner import replicas_hint, resolve_arch, resolve_hardware, training_seq_len

    hint = replicas_hint(plan, result, resolve_arch(plan), resolve_hardware(plan, overrides))
    if hint:
        result = result.model_copy(update={"notes": [*result.notes, hint]})
    if markdown:
        from mlrig.commands.markdown import plan_markdown

        hw = plan.hardware
        dumped = plan.model_dump(mode="json")
        typer.echo(plan_markdown(plan_json(result, lims, fixes), hw.count * hw.nodes, plan.workload.task,
                                 sharding_text(dumped, hw.count * hw.nodes),
                                 precision_text(result.precision, result.base_weights_precision)))
    else:
        seq = training_seq_len(resolve_arch(plan), plan) if plan.training is not None else None
        render_result(result, plan.model_dump(mode="json"), lims, fixes, follows_context=plan.workload.follows_context,
                      train_seq_len=seq)
        if trace is not None:
            render_trace(trace)


def plan_outputs(data: dict[str, Any], overrides: dict[str, Any] | None = None, show_limits: bool = True,
                 arch: ModelArch | None = None
                 ) -> tuple[PlanResult, Plan, dict[str, int | None] | None, list[Fix]]:
    """What `mlrig plan` computes for a plan dict: the result, the parsed plan, the limits (None when
    not asked) and, when it does not fit, the single changes that would make it fit (mlrig.fixes).
    `arch` may be given pre-resolved (an uploaded model file in `mlrig web`)."""
    from mlrig.fixes import make_it_fit
    from mlrig.planner import evaluate, limits, parse_plan, resolve_arch, resolve_hardware

    plan = parse_plan(data)
    arch, gpu_spec = arch or resolve_arch(plan), resolve_hardware(plan, overrides)
    result = evaluate(plan, arch=arch, gpu=gpu_spec, alternatives=True)
    lims = limits(plan, arch=arch, gpu=gpu_spec) if show_limits or not result.fits else None
    fixes = make_it_fit(plan, arch, gpu_spec, result, lims)
    return result, plan, lims if show_limits else None, fixes


def plan_json(result: PlanResult, lims: dict[str, int | None] | None,
              fixes: list[Fix] | None = None) -> dict[str, Any]:
    """`mlrig plan --json`: the result (PLAN-FORMAT.md) with the limits under "limits" when computed and
    the changes that would make it fit under "fixes" (empty when it fits)."""
    out = result.model_dump(mode="json")
    if lims is not None:
        out["limits"] = lims
    if fixes is not None:
        out["fixes"] = [f.model_dump(mode="json") for f in fixes]
    from mlrig.jsonout import round_floats

    return dict(round_floats(out))


def _local_machine(machine: str, gpu: str | None) -> tuple[str | None, dict[str, Any], float | None, float | None,
                                                           float]:
    """This machine's measured figures from the latest `mlrig probe`: the GPU it has (unless --gpu
    names one), GPU fields measured there (bandwidth, matmul TFLOPS), the host's STREAM triad
    bandwidth (for CPU-offloaded layers), the disk's sequential write rate in GB/s (checkpoints) and
    the host RAM present (GiB, checked against what offloaded layers need).
    Measured rates are achieved, not peak, so the speed model's
    efficiency factors on top make the estimate conservative."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import MlrigError
    from mlrig.probe import latest_profile, profile_to_gpu_overrides

    if machine != "local":
        raise MlrigError(f"--machine takes 'local' (this machine's last probe), got {machine!r}")
    profile = latest_profile()
    if profile is None:
        raise MlrigError("no measurements of this machine yet; run `mlrig probe` first")
    local = next((g for g in profile.gpus if g.catalog_id), None)
    overrides: dict[str, Any] = {}
    if gpu is None:
        if local is None:
            if profile.gpus:  # a GPU the catalog does not know: its figures are not the CPU's
                raise MlrigError("the last probe found no GPU the catalog knows; pass --gpu NAME (or --gpu-spec) as"
                                 " well")
            return None, overrides, profile.host_memory_bandwidth_gb_s, _disk_gb_s(profile), profile.memory.total_gib
        gpu = local.catalog_id
        overrides = dict(profile_to_gpu_overrides(profile, local.index))
    elif local is not None and resolve_gpu(gpu).id == local.catalog_id:
        overrides = dict(profile_to_gpu_overrides(profile, local.index))
    return gpu, overrides, profile.host_memory_bandwidth_gb_s, _disk_gb_s(profile), profile.memory.total_gib


def _disk_gb_s(profile: Any) -> float | None:
    return profile.disk_bench.seq_write_mb_s / 1e3 if profile.disk_bench else None


def _local_cpu_spec() -> str:
    """A machine whose probe found no GPU runs on its CPU: a device (hardware_class cpu, as the catalog's cpu-*
    hosts) with the RAM it has, the STREAM triad bandwidth `mlrig probe` measured there, and the FP32 peak the
    catalog's cpu-* hosts are priced at (physical cores x FLOP per cycle of the widest FMA the CPU reports x its
    clock), as `--gpu-spec` gives it. The efficiency factors for CPU prefill are fitted against such peaks: the
    probe's numpy matmul is an achieved rate (OpenBLAS sgemm reaches ~90 % of peak on an idle machine, and only
    what other jobs leave on a busy one: 22-25 GFLOP/s at n = 2,048-4,096 on this project's 2-core AVX-512 VM at
    load 6, against a 2 x 64 x 2.6 GHz = 333 GFLOP/s peak), so pricing it as the peak derated prefill twice (1.1 tok/s
    for an 8B on such a VM). The measured rate stands in only where the probe read no flags or clock."""
    from mlrig.errors import MlrigError
    from mlrig.probe import latest_profile

    profile = latest_profile()
    assert profile is not None  # _local_machine checked
    if not profile.host_memory_bandwidth_gb_s:
        raise MlrigError("the last probe found no GPU and did not measure host memory bandwidth; run `mlrig probe`"
                         " without --history, or pass --gpu NAME")
    model = "".join(" " if c in ",=" else c for c in profile.cpu.model)[:60]
    spec = {"memory_gib": f"{profile.memory.total_gib:.4f}",
            "bandwidth_gb_s": f"{profile.host_memory_bandwidth_gb_s:.4f}",
            "hardware_class": "cpu", "name": f"this machine's CPU ({model})"}
    cpu = profile.cpu
    cores = cpu.physical_cores or cpu.logical_cpus
    if cpu.fp32_flop_per_cycle and cpu.clock_mhz and cores:
        spec["fp32_tflops"] = f"{cores * cpu.fp32_flop_per_cycle * cpu.clock_mhz / 1e6:.4g}"
    elif profile.matmul and profile.matmul.gflops > 0:
        spec["fp32_tflops"] = f"{profile.matmul.gflops / 1e3:.4g}"
    return ",".join(f"{k}={v}" for k, v in spec.items())


def register(app: typer.Typer) -> None:
    app.command("plan")(plan_cmd)


def decode_context_text(perf: Any) -> str:
    """Where the speed line's decode figures are priced: "decode at ~N tokens of context". A serving load with
    varied lengths prices its iterations (TPOT, throughput) at the running sequences' mean context
    (`performance.decode_context_tokens`, serving.running_decode_context), longer than the mean request's
    prompt + output / 2 that one sequence alone (decode tok/s per sequence) reads: then both are named."""
    alone = max(1, (perf.prompt_tokens or 0) + (perf.output_tokens or 0) // 2)
    if perf.decode_context_tokens == alone:
        return f"decode at ~{alone:,} tokens of context"
    return f"decode at ~{alone:,} tokens of context alone, ~{perf.decode_context_tokens:,} in the running batch"
