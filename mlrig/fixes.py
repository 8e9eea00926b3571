"""How to make it fit: the smallest single changes that turn a plan that does not fit into one that does.

Each candidate is the user's plan with one thing changed (a lower precision, an 8-bit KV cache, a shorter
context, a smaller batch, llama.cpp layers left on the CPU, more GPUs; with no engine given on a desktop card, the
GGUF build its users run, whole or with layers on the CPU; for training LoRA/QLoRA, an 8-bit
optimizer, activation checkpointing, a higher ZeRO stage, offload, a shorter sequence), and its memory
comes from `mlrig.planner.evaluate` on that changed plan: the same code path as `mlrig plan`, no separate
formula. The largest context / batch and the fewest GPUs come from the planner's `limits` (bisection over
the same memory estimator). A handful of evaluations per plan (at most ~25), so `mlrig plan` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from mlrig.estimators.engines import runs_llama_cpp

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch
    from mlrig.results import PlanResult
    from mlrig.workload import Plan

# Highest quality first. GGUF formats for llama.cpp; what GPU serving engines load for the others.
GGUF_LADDER = ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")
SERVING_LADDER = ("fp8", "int8", "awq")
ANY_LADDER = ("fp8", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "awq", "q3_k_m", "q2_k")
# Cards whose users mostly run GGUF builds on one desktop GPU: with no engine given, a GGUF precision is offered
# beside the serving engine's smaller format (planner.default_engine prices GGUF on llama.cpp)
DESKTOP_CLASSES = ("geforce", "amd", "intel", "workstation")


class Fix(BaseModel):
    """One change that makes the plan fit, with the memory the planner gives for the changed plan."""

    change: str = Field(description="what changes, in words: 'precision bf16 -> q4_k_m'")
    flags: str = Field(description="the command-line flags that make the change: '--precision q4_k_m'")
    per_gpu_gib: float = Field(description="memory per GPU of the changed plan, GiB")
    gpu_capacity_gib: float = Field(description="usable memory per GPU, GiB")
    gpus: int = Field(description="GPUs in the changed plan (count x nodes)")
    tok_s: float | None = Field(None, description="decode tok/s per sequence (inference) or training "
                                                  "tokens/s of the changed plan")
    note: str | None = Field(None, description="what the change costs (quality, speed, host RAM)")


def _with(plan: Plan, **changes: Any) -> Plan:
    """A copy of `plan` with section__field values changed (validated like a plan file)."""
    from mlrig.workload import Plan

    data = plan.model_dump(exclude_unset=True)
    for key, value in changes.items():
        section, field = key.split("__")
        data.setdefault(section, {})
        if data[section] is None:
            data[section] = {}
        data[section][field] = value
    return Plan.model_validate(data)


def _tokens(n: int) -> str:
    """8192 -> '8k' (k = 1024, as --context reads it), else the plain number."""
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)


def _round_tokens(n: int) -> int:
    """Down to a multiple of 1024 when at least 1024 (a context people type), else as is."""
    return n - n % 1024 if n >= 1024 else n


def make_it_fit(plan: Plan, arch: ModelArch, gpu: GPU, result: PlanResult,
                lims: dict[str, int | None] | None = None) -> list[Fix]:
    """The single changes that make `plan` fit on `gpu`, each evaluated by the planner; [] when it fits.

    `result` is the planner's answer for `plan` (its resolved precision and engine are used) and `lims`
    its `limits` when already computed."""
    from pydantic import ValidationError

    from mlrig import quant
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate, limits, training_seq_len

    if result.fits or result.memory is None:
        return []
    lims = lims or limits(plan, arch=arch, gpu=gpu)
    fixes: list[Fix] = []
    n_gpus = plan.hardware.count * plan.hardware.nodes
    # Unified memory (Apple, CPU hosts): layers "on the CPU" use the same memory, and a second Mac is not
    # a second GPU of this kind, so neither -ngl nor more devices is offered.
    unified = gpu.hardware_class in ("apple", "cpu")

    def attempt(change: str, flags: str, note: str | None = None, **changes: Any) -> Fix | None:
        try:
            r = evaluate(_with(plan, **changes), arch=arch, gpu=gpu)
        except (MlrigError, ValidationError):  # a change this model/GPU/engine cannot take: not a fix
            return None
        if not r.fits or r.memory is None:
            return None
        h = changes.get("hardware__count", plan.hardware.count) * plan.hardware.nodes
        if inference and plan.workload.engine is None and r.engine and result.engine and r.engine != result.engine:
            # no engine given: the default follows the precision (GGUF -> llama.cpp), so the fix changes it too
            note = f"{note + '; ' if note else ''}runs on {r.engine}, not {result.engine}"
        if ("training__offload" in changes or "workload__gpu_layers" in changes) and r.memory.host_ram_gib:
            # what the move costs in system RAM, which the user must have (USER-STORIES: "how much system RAM")
            note = f"{note + '; ' if note else ''}needs {r.memory.host_ram_gib:,.0f} GiB host RAM"
        perf = r.performance
        speed = None if perf is None else (perf.decode_tok_s if inference else perf.train_tokens_per_s)
        return Fix(change=change, flags=flags, per_gpu_gib=r.memory.per_gpu_gib,
                   gpu_capacity_gib=r.memory.gpu_capacity_gib, gpus=h, tok_s=speed, note=note)

    def first(*tries: tuple[str, str, str | None, dict[str, Any]]) -> None:
        for change, flags, note, changes in tries:
            fix = attempt(change, flags, note, **changes)
            if fix is not None:
                fixes.append(fix)
                return

    inference = plan.workload.task == "inference"
    w, t = plan.workload, plan.training
    if inference:
        engine = (result.engine or "").lower()
        given = w.engine is not None
        ladder = GGUF_LADDER if runs_llama_cpp(engine) else SERVING_LADDER if given else ANY_LADDER
        bits = quant.bits_per_weight(result.precision or w.precision)
        first(*((f"precision {result.precision} -> {q}", f"--precision {q}",
                 f"{quant.bits_per_weight(q):.1f} bits per weight instead of {bits:.1f}",
                 {"workload__precision": q})
                for q in ladder if quant.bits_per_weight(q) < bits))
        if not given and not runs_llama_cpp(engine) and gpu.hardware_class in DESKTOP_CLASSES \
                and not any(f.flags.startswith("--precision") and f.flags.split()[-1] in GGUF_LADDER for f in fixes):
            # no engine given on a desktop card: the GGUF build most such users run (llama.cpp, ollama, LM Studio),
            # beside the serving engine's own smaller format
            before = len(fixes)
            first(*((f"precision {result.precision} -> {q} (GGUF)", f"--precision {q}",
                     f"{quant.bits_per_weight(q):.1f} bits per weight", {"workload__precision": q})
                    for q in GGUF_LADDER if quant.bits_per_weight(q) < bits))
            if len(fixes) == before and w.gpu_layers is None:
                # no GGUF build fits whole: the common desktop answer, q4_k_m with some layers on the CPU
                _offload_layers(plan, arch, gpu, fixes, attempt, precision="q4_k_m")
        kv = w.kv_cache_precision or quant.default_kv_precision(result.precision or w.precision)
        if quant.kv_bytes_per_element(kv) >= 1.5:  # a 16/32-bit cache
            kv8 = "q8_0" if runs_llama_cpp(engine) else "fp8"
            first((f"KV cache {kv} -> {kv8}", f"--kv-precision {kv8}", "half the KV-cache bytes per token",
                   {"workload__kv_cache_precision": kv8}))
        ctx = _round_tokens(lims.get("max_context_tokens") or 0)
        if min(1024, w.context // 2) <= ctx < w.context:  # a few hundred tokens is no fix
            lengths = {} if w.follows_context else {  # else the shorter context is filled anew
                "workload__prompt_tokens": min(w.prompt_tokens, ctx),
                "workload__output_tokens": min(w.output_tokens, ctx)}
            first((f"context {w.context:,} -> {ctx:,} tokens", f"--context {_tokens(ctx)}", None,
                   {"workload__context_tokens": ctx, **lengths}))
        batch = lims.get("max_batch_size") or 0
        if 0 < batch < w.batch_size:
            first((f"batch {w.batch_size} -> {batch}", f"--batch {batch}", None, {"workload__batch_size": batch}))
        if runs_llama_cpp(engine) and w.gpu_layers is None and not unified:
            _offload_layers(plan, arch, gpu, fixes, attempt)
    elif t is not None:
        sharding = n_gpus > 1 and t.zero_stage < 3  # a higher ZeRO stage keeps the job as asked: listed first
        if sharding:
            first(*((f"ZeRO stage {t.zero_stage} -> {z}", f"--zero {z}", None, {"training__zero_stage": z})
                    for z in range(t.zero_stage + 1, 4)))
        if plan.workload.task == "finetune" and t.method == "full":
            first(("full fine-tune -> LoRA", "--method lora", "trains adapters only; base weights frozen",
                   {"training__method": "lora"}),
                  ("full fine-tune -> QLoRA", "--method qlora", "base weights frozen at 4 bits, nf4",
                   {"training__method": "qlora"}))
        if t.optimizer == "adamw":
            first(("optimizer adamw -> adamw-8bit", "--optimizer adamw-8bit", "bitsandbytes 8-bit states",
                   {"training__optimizer": "adamw-8bit"}))
        if not t.gradient_checkpointing:
            first(("activation checkpointing on", "--checkpointing", "~1/3 more compute per step",
                   {"training__gradient_checkpointing": True}))
        order = ("none", "optimizer", "params")
        first(*((f"offload {t.offload} -> {o}", f"--offload {o}", "states in host RAM; slower steps",
                 {"training__offload": o}) for o in order[order.index(t.offload) + 1:]))
        batch = lims.get("max_batch_size") or 0
        if 0 < batch < w.batch_size:
            first((f"micro-batch {w.batch_size} -> {batch}", f"--batch {batch}", None,
                   {"workload__batch_size": batch}))
        seq = _round_tokens(lims.get("max_context_tokens") or 0)
        current = training_seq_len(arch, plan)
        if min(1024, current // 2) <= seq < current:
            first((f"sequence length {current:,} -> {seq:,}", f"--seq-len {_tokens(seq)}", None,
                   {"training__seq_len": seq, "workload__context_tokens": seq}))
    more = lims.get("min_gpus")
    if more and more > n_gpus and plan.hardware.nodes == 1 and not unified:
        changes: dict[str, Any] = {"hardware__count": more}
        flags = f"-n {more}"
        if inference and more > 8:
            changes.update(hardware__tensor_parallel=8, hardware__pipeline_parallel=more // 8)
            flags += f" --tp 8 --pp {more // 8}"
        elif inference and {"tensor_parallel", "pipeline_parallel"} & plan.hardware.model_fields_set:
            # a layout given stays given: -n alone would add data-parallel replicas, each as short of memory
            # (planner.with_defaults): the model spans the added GPUs, along the axis llama.cpp / a serving engine
            # widens by default (layers / TP), the other axis as given
            hw = plan.hardware
            llama = runs_llama_cpp(w.engine)
            other = hw.tensor_parallel if llama else hw.pipeline_parallel
            key, flag = ("pipeline_parallel", "--pp") if llama else ("tensor_parallel", "--tp")
            changes[f"hardware__{key}"] = max(1, more // other)
            flags += f" {flag} {max(1, more // other)}"
        elif t is not None and t.zero_stage != 3:
            changes["training__zero_stage"] = 3
            flags += " --zero 3"
        first((f"{n_gpus} -> {more} GPUs", flags, None, changes))
    return fixes


def _offload_layers(plan: Plan, arch: ModelArch, gpu: GPU, fixes: list[Fix], attempt: Any,
                    precision: str | None = None) -> None:
    """llama.cpp -ngl: the most layers (at least one) that fit on the GPU(s), the rest on the CPU
    (bisection, ~7 tries); with `precision`, at that GGUF precision too."""
    lo, hi, best = 1, arch.num_layers - 1, None
    also: dict[str, Any] = {} if precision is None else {"workload__precision": precision}
    lead = "" if precision is None else f"{precision}, "
    flag = "" if precision is None else f"--precision {precision} "
    while lo <= hi:
        mid = (lo + hi) // 2
        fix = attempt(f"{lead}{mid} of {arch.num_layers} layers on the GPU, the rest on the CPU",
                      f"{flag}--ngl {mid}", "CPU layers run at host-RAM speed", workload__gpu_layers=mid, **also)
        if fix is not None:
            best, lo = fix, mid + 1
        else:
            hi = mid - 1
    if best is not None:
        fixes.append(best)
