"""`mlrig serve`: how many concurrent users one setup serves at a per-user speed, and what
speculative decoding buys — the throughput/latency curve over concurrency up to the KV capacity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mlrig.commands._common import (
    ContextOpt,
    CountOpt,
    EngineOpt,
    GpuOpt,
    GpuSpecOpt,
    JsonOpt,
    KvPrecisionOpt,
    OutputOpt,
    PrecisionOpt,
    PromptOpt,
    TpOpt,
    fmt_num,
    setup_options,
    workload_fields,
)

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.workload import Plan

DEFAULT_ENGINE = "vllm"  # serving means continuous batching: vLLM where `planner.default_engine` names none
# serve prices a request as `plan` does (one default for both commands): 512 prompt + 128 output tokens, or, with
# only --context given, a request that fills it (workload.DEFAULT_PROMPT_TOKENS / DEFAULT_OUTPUT_TOKENS,
# workload.lengths_filling); None here means "the plan's default", so the two commands cannot drift apart
DEFAULT_PROMPT_TOKENS: int | None = None
DEFAULT_OUTPUT_TOKENS: int | None = None
MAX_CONCURRENCY = 1_000_000
MAX_SPEC_K = 64  # draft tokens per step; engines use 1-10 (vLLM num_speculative_tokens, EAGLE trees ~60)

MinTokSOpt = Annotated[float, typer.Option("--min-tok-s", help="per-user decode speed to hold (tok/s)")]
MaxTtftOpt = Annotated[float | None, typer.Option("--max-ttft-ms", help="time-to-first-token limit (ms)")]
ConcurrencyOpt = Annotated[str | None, typer.Option(
    "--concurrency", help="concurrencies to tabulate, e.g. 1,2,4,8 (default: powers of 2 up to the KV capacity)")]
DraftOpt = Annotated[str | None, typer.Option("--draft-model", help="draft model for speculative decoding")]
SpecKOpt = Annotated[int, typer.Option("--spec-k", help="draft tokens proposed per target step")]
AcceptanceOpt = Annotated[float, typer.Option("--acceptance", help="per-token acceptance rate α in [0, 1)")]


def parse_concurrency(text: str) -> list[int]:
    """'1,2,4' → [1, 2, 4] (sorted, unique); anything else is a one-line MlrigError."""
    from mlrig.errors import MlrigError

    values: list[int] = []
    for part in text.split(","):
        part = part.strip()
        try:
            n = int(part)
        except ValueError:
            raise MlrigError(f"--concurrency takes whole numbers separated by commas, e.g. 1,2,4,8; "
                             f"got {part!r}") from None
        if not 1 <= n <= MAX_CONCURRENCY:
            raise MlrigError(f"--concurrency values must be between 1 and {MAX_CONCURRENCY:,}, got {n}")
        values.append(n)
    return sorted(set(values))


def default_concurrency(kv_sequences: int | None, answer: int) -> list[int]:
    """Powers of two up to the KV capacity (in sequences), plus the capacity and the answer."""
    top = kv_sequences if kv_sequences is not None else max(64, 2 * answer)
    top = max(1, min(top, 4096))
    points = {1 << i for i in range(13) if 1 << i <= top}
    points.add(top)
    if answer > 0:
        points.add(min(answer, top))
    return sorted(points)


def check_inputs(min_tok_s: float, max_ttft_ms: float | None, spec_k: int, acceptance: float) -> None:
    from mlrig.errors import MlrigError

    if not min_tok_s > 0:
        raise MlrigError(f"--min-tok-s must be > 0 tok/s per user, got {min_tok_s:g}")
    if max_ttft_ms is not None and not max_ttft_ms > 0:
        raise MlrigError(f"--max-ttft-ms must be > 0, got {max_ttft_ms:g}")
    if not 1 <= spec_k <= MAX_SPEC_K:
        raise MlrigError(f"--spec-k must be between 1 and {MAX_SPEC_K} draft tokens per step, got {spec_k}")
    if min_tok_s > 1e6:
        raise MlrigError(f"--min-tok-s {min_tok_s:g} is absurdly large (limit 1,000,000 tok/s per user)")
    if max_ttft_ms is not None and max_ttft_ms > 1e9:
        raise MlrigError(f"--max-ttft-ms {max_ttft_ms:g} is absurdly large (limit 10^9 ms)")
    if not 0.0 <= acceptance < 1.0:
        raise MlrigError(f"--acceptance must be in [0, 1) (a rate, e.g. 0.7), got {acceptance:g}")


@dataclass(frozen=True)
class DraftMemory:
    """What a speculative-decoding draft model takes from the target's KV pool, per GPU."""

    weights_bytes: float  # draft weights on one GPU
    kv_bytes_per_token: float  # draft KV per token on one GPU
    kv_capacity_tokens: int  # target tokens (each with its draft KV) left in the pool


def kv_capacity_with_draft(capacity_tokens: int, target_kv_bytes_per_token: float, draft_weights_bytes: float,
                           draft_kv_bytes_per_token: float, block_tokens: int = 1) -> int:
    """Target KV tokens left once a draft shares the pool: the pool (taken as the bytes the target's KV
    fills at `capacity_tokens`, so at most one block below the engine's) loses the draft's weights, and
    every token held then needs the draft's KV beside the target's (vLLM V1 puts the draft's attention
    layers in the same paged pool, so a block holds both). Rounded down to whole blocks."""
    pool = capacity_tokens * target_kv_bytes_per_token - draft_weights_bytes
    per_block = block_tokens * (target_kv_bytes_per_token + draft_kv_bytes_per_token)
    if pool <= 0 or per_block <= 0:
        return 0
    return int(pool // per_block) * block_tokens


def draft_memory(draft: ModelArch, arch: ModelArch, plan: Plan, capacity_tokens: int) -> DraftMemory:
    """Draft weights at the plan's precision and its KV at the plan's KV dtype and context, split like
    the target: the same TP (vLLM's default `draft_tensor_parallel_size`) and, for llama.cpp's layer split,
    the same pipeline split. The draft's activations are not added: assumed to fit under the target's profiled
    peak, since the draft runs after the target's forward pass."""
    from mlrig import quant
    from mlrig.estimators.memory import PAGED_ENGINES, VLLM_BLOCK_TOKENS, kv_bytes_per_token, weights_per_gpu_bytes

    w, hw = plan.workload, plan.hardware
    tp, pp = hw.tensor_parallel, hw.pipeline_parallel
    kv_prec = w.kv_cache_precision or quant.default_kv_precision(w.precision)
    weights = weights_per_gpu_bytes(draft, w.precision, tp, pp)
    draft_kv = kv_bytes_per_token(draft, w.context, kv_prec, tp, pp)
    target_kv = kv_bytes_per_token(arch, w.context, kv_prec, tp, pp)
    engine = (w.engine or "transformers").lower().replace("_", "-")
    block = VLLM_BLOCK_TOKENS if engine in PAGED_ENGINES else 1  # others count KV room in single tokens
    left = kv_capacity_with_draft(capacity_tokens, target_kv, weights, draft_kv, block)
    return DraftMemory(weights_bytes=weights, kv_bytes_per_token=draft_kv, kv_capacity_tokens=left)


def speculative_report(r: ResolvedPlan, draft: ModelArch, k: int, acceptance: float,
                       at_concurrency: int, mem: DraftMemory | None) -> dict[str, Any]:
    """Expected speed-up at batch 1 (Leviathan et al. 2023, draft cost from bytes read per token)
    and with the verify pass priced by the roofline at `at_concurrency` sequences, plus what the
    draft takes from the KV pool (`mem`; None where the engine's KV capacity is not modelled)."""
    from mlrig.estimators.performance import (
        draft_cost_ratio,
        model_weight_bytes,
        speculative_speedup,
        speculative_speedup_at_batch,
    )

    ratio = draft_cost_ratio(r, draft)
    at = max(1, at_concurrency)
    tokens_per_step = float(k + 1) if acceptance >= 1 else (1 - acceptance ** (k + 1)) / (1 - acceptance)
    return {
        "draft_model": draft.hf_id or draft.id,
        "k": k,
        "acceptance_rate": acceptance,
        "draft_cost_ratio": ratio,
        "tokens_per_target_step": tokens_per_step,
        "speedup_batch_1": speculative_speedup(k, acceptance, ratio),
        "at_concurrency": at,
        # `r` is one replica's plan: its share of the users is the batch it verifies
        "speedup_at_concurrency": speculative_speedup_at_batch(r, -(-at // r.replicas), k, acceptance, ratio),
        "draft_weights_total_gib": model_weight_bytes(draft, r.precision) / 2**30,
        "draft_tensor_parallel": r.hardware.tensor_parallel,
        "draft_weights_gib": None if mem is None else mem.weights_bytes / 2**30,  # per GPU
        "draft_kv_bytes_per_token": None if mem is None else mem.kv_bytes_per_token,  # per GPU
    }


@setup_options
def serve_cmd(
    model: Annotated[str, typer.Argument(help="catalog id, HF id, config.json, model dir, .gguf ...")],
    gpu: GpuOpt = None,
    gpu_spec_text: GpuSpecOpt = None,
    count: CountOpt = None,
    tp: TpOpt = None,
    precision: PrecisionOpt = None,
    kv_precision: KvPrecisionOpt = None,
    engine: EngineOpt = None,
    prompt: PromptOpt = DEFAULT_PROMPT_TOKENS,
    output: OutputOpt = DEFAULT_OUTPUT_TOKENS,
    context: ContextOpt = None,
    min_tok_s: MinTokSOpt = 20.0,
    max_ttft_ms: MaxTtftOpt = None,
    concurrency: ConcurrencyOpt = None,
    draft_model: DraftOpt = None,
    spec_k: SpecKOpt = 4,
    acceptance: AcceptanceOpt = 0.7,
    as_json: JsonOpt = False,
    *, setup: dict[str, Any],
) -> None:
    """How many concurrent users at ≥ N tok/s each?

    Throughput/latency over concurrency, KV capacity, the binding limit, and the speed-up from speculative
    decoding (--draft-model; the draft's weights and KV cache come out of the target's KV pool)."""
    from mlrig.commands._common import print_json
    from mlrig.jsonout import round_floats

    res = serve_report(model, gpu=gpu, count=count, tp=tp, precision=precision, kv_precision=kv_precision,
                       engine=engine, prompt=prompt, output=output, context=context, min_tok_s=min_tok_s,
                       max_ttft_ms=max_ttft_ms, concurrency=concurrency, draft_model=draft_model, spec_k=spec_k,
                       acceptance=acceptance, gpu_spec_text=gpu_spec_text, **setup)
    out = res.out
    if as_json:
        print_json(round_floats(out))
    elif out["fits"]:
        _render(out)
    elif res.target_fits and res.draft_name is not None and res.draft_mem is not None:
        _print_no_room_for_draft(out, res.draft_name, res.draft_mem)
    else:
        _print_no_fit(out, res.per_gpu_gib, res.capacity_gib)


@dataclass(frozen=True)
class ServeReport:
    """`out` is `mlrig serve --json`; the rest is what the no-fit messages need."""

    out: dict[str, Any]
    target_fits: bool
    draft_name: str | None
    draft_mem: DraftMemory | None
    per_gpu_gib: float | None
    capacity_gib: float | None


def serve_report(model: str, *, gpu: str | None = None, count: int | None = None, tp: int | None = None,
                 precision: str | None = None, kv_precision: str | None = None, engine: str | None = None,
                 prompt: int | None = DEFAULT_PROMPT_TOKENS, output: int | None = DEFAULT_OUTPUT_TOKENS,
                 context: int | None = None, min_tok_s: float = 20.0,
                 max_ttft_ms: float | None = None, concurrency: str | None = None, draft_model: str | None = None,
                 spec_k: int = 4, acceptance: float = 0.7, gpu_spec_text: str | None = None,
                 **setup: Any) -> ServeReport:
    """What `mlrig serve` computes (arguments as its flags; `setup`: the serving-setup flags,
    `_common.SETUP_OPTIONS`); raises MlrigError on bad input."""
    from mlrig.catalog.models import resolve_model
    from mlrig.estimators.replicas import deployment_curve, deployment_limits
    from mlrig.planner import (
        evaluate,
        parse_plan,
        plan_from_fields,
        resolve_arch,
        resolve_hardware,
        resolve_plan,
        with_defaults,
    )

    check_inputs(min_tok_s, max_ttft_ms, spec_k, acceptance)
    if output == 0:  # a user who receives no tokens has no per-user speed: every row of the curve would be 0
        from mlrig.errors import MlrigError

        raise MlrigError("--output 0: serve prices users receiving tokens; give --output 1 or more (default 128), or "
                         "`mlrig plan --output 0` for a prompt-only pass")
    wanted = parse_concurrency(concurrency) if concurrency is not None else None
    fields = workload_fields(task="inference", precision=precision, kv_precision=kv_precision,
                             engine=engine, prompt=prompt, output=output, context=context,
                             tp=tp, count=count, gpu_spec=gpu_spec_text, **setup)
    plan = parse_plan(plan_from_fields(model, gpu=gpu, **fields))
    arch, gpu_spec = resolve_arch(plan), resolve_hardware(plan)
    if plan.workload.engine is None:
        # the engine `plan` assumes for a batched load (`planner.default_engine`): vLLM for HF checkpoints on
        # NVIDIA and datacentre cards, llama.cpp for GGUF weights and Apple silicon (a fixed vLLM refused a Mac
        # and served GGUF files that plan and compare give to llama.cpp)
        w = plan.workload
        batched = plan.model_copy(update={"workload": w.model_copy(update={"load": "concurrency"})})
        chosen = with_defaults(batched, gpu_spec, arch)[0].workload.engine or DEFAULT_ENGINE
        plan = plan.model_copy(update={"workload": w.model_copy(update={"engine": chosen})})
    # The speed model gets the plan the memory model sees: `--count 4` alone means TP 4 for vLLM.
    plan, _ = with_defaults(plan, gpu_spec, arch)
    draft = resolve_model(draft_model) if draft_model is not None else None
    result = evaluate(plan, arch=arch, gpu=gpu_spec)
    ctx = plan.workload.context
    kv_without_draft = result.kv_cache_capacity_tokens
    mem = None
    if draft is not None and kv_without_draft is not None:
        mem = draft_memory(draft, arch, plan, kv_without_draft)
    kv_tokens = kv_without_draft if mem is None else mem.kv_capacity_tokens
    fits = bool(result.fits) and (mem is None or mem.kv_capacity_tokens >= ctx)
    out: dict[str, Any] = {
        "model": result.model, "gpu": result.gpu, "gpu_count": plan.hardware.total_gpus,
        "data_parallel_replicas": result.data_parallel_replicas,
        "engine": plan.workload.engine, "precision": plan.workload.precision, "fits": fits,
        "context_tokens": ctx, "prompt_tokens": plan.workload.prompt_tokens,
        "output_tokens": plan.workload.output_tokens, "lengths": plan.workload.lengths,
        "kv_cache_capacity_tokens": kv_tokens,
        "kv_capacity_sequences": None if kv_tokens is None else kv_tokens // ctx,
        "kv_capacity_tokens_without_draft": kv_without_draft,
        "min_tok_s_per_user": min_tok_s, "max_ttft_ms": max_ttft_ms,
        "decode_error_band": 0.0, "tpot_error_band": 0.0, "curve": [], "max_concurrency": 0, "binding_limit": None,
        "limits": None, "speculative": None,
    }
    if result.performance is not None:
        band = result.performance.error_band
        out["decode_error_band"] = band.get("decode_tok_s", 0.0)
        out["tpot_error_band"] = band.get("tpot_ms", out["decode_error_band"])
        from mlrig.commands._common import band_kind

        # what each band is: its scope's p90, or the default where too few runs back it (the caption says which)
        v = result.validation
        out["decode_band_kind"] = band_kind(out["decode_error_band"], v.get("decode_tok_s"))
        out["tpot_band_kind"] = (band_kind(out["tpot_error_band"], v.get("tpot_ms")) if "tpot_ms" in band
                                 else out["decode_band_kind"])
    if not fits:
        out["binding_limit"] = "memory"
    else:
        # one replica's plan, as `plan` prices it; with several replicas the users spread over them
        r = resolve_plan(plan, arch=arch, gpu=gpu_spec)[0]
        if r.replicas > 1 and out["kv_capacity_sequences"] is not None:
            out["kv_capacity_sequences"] *= r.replicas  # every replica's pool
        lims = deployment_limits(r, min_tok_s, kv_tokens, max_ttft_ms)
        points = wanted or default_concurrency(out["kv_capacity_sequences"], lims.max_concurrency)
        curve = deployment_curve(r, points, kv_tokens)
        out.update(curve=[p.model_dump() for p in curve], max_concurrency=lims.max_concurrency,
                   binding_limit=lims.binding_limit, limits=lims.model_dump())
        if draft is not None:
            out["speculative"] = speculative_report(r, draft, spec_k, acceptance, lims.max_concurrency, mem)
    return ServeReport(out=out, target_fits=bool(result.fits),
                       draft_name=None if draft is None else draft.hf_id or draft.id, draft_mem=mem,
                       per_gpu_gib=result.memory.per_gpu_gib if result.memory else None,
                       capacity_gib=result.memory.gpu_capacity_gib if result.memory else None)


def requests_text(out: dict[str, Any]) -> str:
    """The request the curve is priced for, as `plan`'s speed line says it: "512-token prompt, 128 out (640 tokens
    per sequence)"; with --context larger than prompt + output, the KV held per sequence is the context."""
    text = f"{out['prompt_tokens']:,}-token prompt, {out['output_tokens']:,} out"
    return f"{text} ({out['context_tokens']:,} tokens per sequence)"


def _print_no_fit(out: dict[str, Any], need_gib: float | None, have_gib: float | None) -> None:
    from mlrig.commands._common import console

    need = f": needs {need_gib:.2f} GiB of {have_gib:.2f} GiB per GPU" if need_gib and have_gib else ""
    console().print(f"[red]✘[/] {out['model']} ({out['precision']}) does not fit on {out['gpu_count']} × "
                    f"{out['gpu']} with {out['engine']}{need}, KV cache room for "
                    f"{out['kv_cache_capacity_tokens'] or 0:,} tokens (one sequence is {out['context_tokens']:,}); "
                    "try more GPUs (--count N --tp N) or a smaller --precision")


def _print_no_room_for_draft(out: dict[str, Any], draft_name: str, mem: DraftMemory) -> None:
    from mlrig.commands._common import console

    console().print(f"[red]✘[/] {out['model']} fits on {out['gpu_count']} × {out['gpu']} alone "
                    f"({out['kv_capacity_tokens_without_draft']:,} KV tokens), but with the draft {draft_name} "
                    f"({mem.weights_bytes / 2**30:.2f} GiB of weights per GPU and its own KV cache) the pool holds "
                    f"{mem.kv_capacity_tokens:,} tokens, less than one {out['context_tokens']:,}-token sequence; "
                    "try a smaller draft, more GPUs (--count N --tp N) or a smaller --precision")


def _answer_line(out: dict[str, Any]) -> str:
    """'largest concurrency meeting ≥ 20 tok/s per user: 37 (KV cache holds 48 sequences of 768 tokens)'."""
    target = f"≥ {out['min_tok_s_per_user']:g} tok/s per user"
    if out["max_ttft_ms"] is not None:
        target += f" and TTFT ≤ {out['max_ttft_ms']:g} ms"
    kv = (f"KV cache holds {out['kv_capacity_sequences']:,} sequences of {out['context_tokens']:,} tokens"
          if out["kv_capacity_sequences"] is not None else "KV capacity not modelled for this engine")
    binding = {"tok/s per user": "the per-user speed target binds", "TTFT": "the TTFT target binds",
               "KV cache capacity": "KV cache capacity binds: more memory or a smaller KV dtype would help",
               "search limit": "above 4,096 the search stops"}[out["binding_limit"]]
    if out["max_concurrency"] == 0:
        one = out["curve"][0] if out["curve"] and out["curve"][0]["concurrency"] == 1 else None
        # per user = output tokens over the whole request, TTFT included (serving.deployment_curve), so below
        # `mlrig plan`'s decode speed (1000 / TPOT): name both, or the two commands read as disagreeing
        alone = (f" (a single user gets {one['tok_s_per_user']:.1f} tok/s over a request, TTFT included; "
                 f"{1000.0 / one['tpot_ms']:.1f} while decoding)" if one and one.get("tpot_ms") else "")
        return (f"[red]no concurrency meets {target}[/]{alone}; {kv}; try more GPUs (--tp), "
                "a lower --precision or a lower target")
    return f"largest concurrency meeting {target}: [bold]{out['max_concurrency']:,}[/] ({kv}); {binding}"


def _render(out: dict[str, Any]) -> None:
    from rich.table import Table

    from mlrig.commands._common import console
    from mlrig.validation.scopes import per_user_band

    con = console()
    one, more = out["decode_error_band"], out["tpot_error_band"]
    replicas = out.get("data_parallel_replicas") or 1
    spread = f" ({replicas} data-parallel replicas, users spread evenly)" if replicas > 1 else ""
    con.print(f"[bold]{out['model']}[/] · {out['precision']} · {out['engine']} on {out['gpu_count']} × "
              f"{out['gpu']}{spread} · {requests_text(out)}")
    if out.get("lengths") == "fixed":  # the TTFT column depends on it; `plan --load concurrency` assumes the same
        con.print("[dim]fixed lengths: each round's requests arrive together (a benchmark's loop); "
                  "--lengths varied for users who drift apart[/]")
    kind_one, kind_more = out.get("decode_band_kind", "p90"), out.get("tpot_band_kind", "p90")
    above = kind_more if more >= one else kind_one
    table = Table(title=f"Serving curve (continuous batching; ± = validation band: decode {one:.0%} at 1 user "
                        f"({kind_one}), TPOT {max(one, more):.0%} above ({above}))",
                  header_style="bold")
    for col in ("users", "total tok/s", "tok/s/user", "TPOT ms", "TTFT ms", "KV fits?", "bound"):
        table.add_column(col, justify="left" if col == "bound" else "right", no_wrap=True)
    for p in out["curve"]:
        per_user = p["tok_s_per_user"]
        band = per_user_band(one, more, -(-p["concurrency"] // replicas))  # one replica's users
        mark = "" if per_user >= out["min_tok_s_per_user"] else "[dim]"
        table.add_row(f"{p['concurrency']:,}", fmt_num(p["throughput_tok_s"]),
                      f"{mark}{fmt_num(per_user)}±{fmt_num(per_user * band)}",
                      fmt_num(p["tpot_ms"]), fmt_num(p["ttft_ms"]), "yes" if p["fits"] else "[red]no[/] queue",
                      p["bound"].replace("memory-bandwidth", "memory"))
    con.print(table)
    con.print("[dim]tok/s/user: output tokens over the whole request (TTFT included), as a user waits for them; "
              "decoding alone runs at 1000 / TPOT ms (`mlrig plan`'s decode tok/s)[/]")
    con.print(_answer_line(out))
    spec = out["speculative"]
    if spec is not None:
        con.print(f"speculative decoding with {spec['draft_model']} (k={spec['k']}, α={spec['acceptance_rate']:g}, "
                  f"draft costs {spec['draft_cost_ratio']:.2f} of a target step): "
                  f"[bold]{spec['speedup_batch_1']:.2f}×[/] at batch 1 "
                  f"({spec['tokens_per_target_step']:.2f} tokens per target step)" + (
                      f"; shrinks to {spec['speedup_at_concurrency']:.2f}× at concurrency "
                      f"{spec['at_concurrency']:,} as the verify pass turns compute-bound"
                      if spec["at_concurrency"] > 1 else "; it shrinks at high concurrency (compute-bound)"))
        con.print(_draft_memory_line(out))


def _draft_memory_line(out: dict[str, Any]) -> str:
    """Where the draft's memory went: out of the KV pool, at the target's TP (vLLM's default)."""
    spec = out["speculative"]
    if spec["draft_weights_gib"] is None:
        return (f"[yellow]note:[/] the draft's {spec['draft_weights_total_gib']:.2f} GiB of weights and its KV "
                "cache also need room; KV capacity is not modelled for this engine, so not deducted")
    before, after = out["kv_capacity_tokens_without_draft"], out["kv_cache_capacity_tokens"]
    ctx = out["context_tokens"]
    why = " (vLLM's default draft_tensor_parallel_size)" if str(out["engine"]).lower() == "vllm" else ""
    return (f"[yellow]note:[/] draft assumed split like the target, TP {spec['draft_tensor_parallel']}{why}: "
            f"its {spec['draft_weights_gib']:.2f} GiB of weights per GPU and "
            f"{spec['draft_kv_bytes_per_token'] / 1024:.3g} KiB of KV per token are taken from the KV pool above "
            f"({before:,} → {after:,} tokens, {before // ctx:,} → {after // ctx:,} sequences); the curve's speeds "
            "are without speculation")


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
