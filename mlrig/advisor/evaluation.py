"""Evaluation: each workload on one hardware option, through exactly the planner path users run.

Every speed and memory figure the advisor shows comes from `mlrig.planner.evaluate` on the option's own
plan (the GPU, the count, the host RAM of the machine); the advisor never scales a speed itself. Multi-GPU
inference is left to the planner's defaults (llama.cpp splits layers, serving engines use tensor
parallelism), as `mlrig plan` would run it.

`evaluate_batch` is the one place plans are evaluated: a vectorised planner (issue 15) can replace its
loop without touching the rest. Pure otherwise: the evaluate callable is injected.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from mlrig.catalog.gpus import GPU
from mlrig.errors import MlrigError
from mlrig.results import PlanResult
from mlrig.workload import full_shard_default

Evaluate = Callable[[dict[str, Any], GPU], PlanResult]
DAYS_PER_MONTH = 365.0 / 12.0
WEEKS_PER_MONTH = 52.0 / 12.0

# Interactive inference: ~10 tok/s keeps a chat reply ahead of reading speed (~5 words/s ≈ 7 tok/s;
# Brysbaert 2019, "How many words do we read per minute?", 238 wpm silent reading), and a first token
# within a few seconds. Defaults, stated in every answer; --min-tok-s 0 / --max-ttft 0 switch them off.
DEFAULT_MIN_TOK_S = 10.0
DEFAULT_MAX_TTFT_S = 5.0
DEFAULT_HOURS_PER_DAY = 8.0
# Seed ("Hardware for ML Practitioners", exercise): 2-3 training jobs a week of 4-6 h on an A100.
DEFAULT_RUNS_PER_WEEK = 1.0
DEFAULT_HOURS_PER_RUN = 4.0
# Seeds: Kepler/Maxwell/Pascal datacentre cards are cheap VRAM but slow, no usable FP16 (osmarks.net).
OLD_ARCH = ("kepler", "maxwell", "pascal")
# NVIDIA added bf16 with Ampere (NVIDIA A100 Tensor Core GPU Architecture whitepaper, 2020).
NO_BF16_ARCH = ("kepler", "maxwell", "pascal", "volta", "turing")
# Training speed is validated per scope (method x memory class: full, LoRA, QLoRA on HBM and on GDDR
# cards, from the published runs in mlrig/data/calibration/). A scope with too few runs (Apple unified
# memory, CPU, full fine-tuning on GDDR today) carries no validated band: its band is the one `plan` shows
# (planner.attach_validation: the wider of training_speed.TRAIN_ERROR_BAND_WIDE and the nearest validated
# scope's p90), so `plan`, `recommend` and `cost` give the same ± for the same estimate.


class WorkloadUsage(BaseModel):
    """How much of a workload: serving hours per day, or fine-tuning runs per week × their length.

    `hours_per_run` is measured on `reference_gpu` (e.g. "4-6 h on an A100"); it is turned into tokens
    with the reference's planner speed and each option's run time is those tokens at its own speed.
    `min_tok_s`/`max_ttft_s`: None = the interactive defaults; 0 = no floor.
    """

    model_config = ConfigDict(allow_inf_nan=False)

    hours_per_day: float | None = Field(None, ge=0, le=24)
    runs_per_week: float | None = Field(None, ge=0, le=1000)
    hours_per_run: float | None = Field(None, gt=0, le=10000)
    tokens_per_run: float | None = Field(None, gt=0, le=1e15)
    reference_gpu: str = "a100-sxm-80gb"
    min_tok_s: float | None = Field(None, ge=0, le=1e6, description="per-stream decode tok/s")
    max_ttft_s: float | None = Field(None, ge=0, le=3600, description="time to first token, s (0 = none)")
    min_throughput_tok_s: float | None = Field(None, ge=0, le=1e9, description="aggregate tok/s over the batch")


class Workload(BaseModel):
    label: str
    plan: dict[str, Any]  # a plan (PLAN-FORMAT.md) without hardware; hardware is set per option
    usage: WorkloadUsage = Field(default_factory=WorkloadUsage)

    @property
    def task(self) -> str:
        return str((self.plan.get("workload") or {}).get("task", "inference"))

    @property
    def training(self) -> dict[str, Any]:
        return dict(self.plan.get("training") or {})


@dataclass(frozen=True)
class Setup:
    """The hardware a workload runs on: `count` × gpu, the machine's host RAM (None: not limiting, or
    unified memory shared with the GPU, where offloading to "host" RAM frees nothing)."""

    count: int
    host_ram_gib: float | None
    unified: bool = False


class Fit(BaseModel):
    """The best way the workload runs on a setup: the planner's result, the recipe that made it fit,
    and when nothing fits, the nearest change that would (evaluated by the planner too)."""

    result: PlanResult | None = None
    recipe: str = ""
    error: str | None = None
    hint: str | None = None


# ------------------------------------------------------------------------------------ the planner call


def planner_evaluate(plan: dict[str, Any], gpu: GPU) -> PlanResult:
    """The advisor's only call into the planner: `mlrig plan` on this plan and GPU."""
    from mlrig.planner import evaluate

    return evaluate(plan, gpu=gpu)


def evaluate_batch(requests: Sequence[tuple[dict[str, Any], GPU]], evaluate: Evaluate) -> list[PlanResult | str]:
    """Evaluate many plans; a plan the planner rejects comes back as its one-line error.

    The single evaluation step of the advisor: issue 15's batch planner replaces this loop."""
    out: list[PlanResult | str] = []
    for plan, gpu in requests:
        try:
            out.append(evaluate(plan, gpu))
        except MlrigError as exc:
            out.append(str(exc))
    return out


# ------------------------------------------------------------------------------------ recipes


def recipes(workload: Workload, setup: Setup) -> list[tuple[str, dict[str, Any]]]:
    """Memory-saving training recipes a user would try, as (label, training overrides); the plan as given
    comes first and wins ties. Settings the user pinned are never overridden.

    - 8-bit AdamW (bitsandbytes; Dettmers et al. 2022, "8-bit Optimizers via Block-wise Quantization");
      paged 8-bit AdamW for LoRA/QLoRA (Dettmers et al. 2023, "QLoRA", sec. 3 "Paged Optimizers").
    - gradient checkpointing (Chen et al. 2016) when the plan switched it off.
    - n > 1: FSDP full shard = ZeRO stage 3 (Rajbhandari et al. 2020), as in Answer.AI's FSDP+QLoRA
      (2024-03-06) for 70B on two 24 GB cards.
    - optimizer / parameter offload to host RAM (ZeRO-Offload, Ren et al. 2021; ZeRO-Infinity): checked
      by the planner against the machine's RAM and charged for its PCIe traffic. Not on unified memory.
    """
    if workload.task == "inference":
        return [("", {})]
    t = workload.training
    method = t.get("method", "full")
    eight_bit = {} if "optimizer" in t else {
        "optimizer": "paged-adamw-8bit" if method in ("lora", "qlora") else "adamw-8bit"}
    # a multi-GPU full fine-tune with no stage given is already ZeRO 3 (workload.sharded_by_default): said in its label
    engine = (workload.plan.get("workload") or {}).get("engine")
    sharded = "zero_stage" not in t and full_shard_default(workload.task, method, setup.count, engine)
    given = "FSDP (ZeRO-3)" if sharded else ""
    out: list[tuple[str, dict[str, Any]]] = [(given, {})]
    if t.get("gradient_checkpointing") is False:
        out.append((", ".join(x for x in (given, "gradient checkpointing") if x), {"gradient_checkpointing": True}))
    if eight_bit:
        out.append((", ".join(x for x in (given, str(eight_bit["optimizer"])) if x), eight_bit))
    zero = {} if "zero_stage" in t or setup.count == 1 or sharded else {"zero_stage": 3}
    if zero:
        out.append(("FSDP (ZeRO-3)", zero))
        if eight_bit:
            out.append((f"FSDP (ZeRO-3), {eight_bit['optimizer']}", {**zero, **eight_bit}))
    if not setup.unified and "offload" not in t:
        out.append(("optimizer offload to RAM", {"offload": "optimizer", **zero}))
        if "zero_stage" not in t:
            out.append(("parameter + optimizer offload to RAM", {"offload": "params", "zero_stage": 3}))
    return out


def _with_hardware(plan: dict[str, Any], gpu: GPU, setup: Setup) -> dict[str, Any]:
    p = copy.deepcopy(plan)
    # what the workload says about any hardware: host RAM, a power cap, expert parallelism (--ep: an option
    # whose GPU count it does not divide is refused by the planner, with its reason)
    kept = ("host_ram_gib", "power_limit_w", "expert_parallel")
    hw: dict[str, Any] = {k: v for k, v in (p.get("hardware") or {}).items() if k in kept}
    hw.update({"gpu": gpu.id, "count": setup.count})
    if setup.host_ram_gib is not None and "host_ram_gib" not in hw:
        hw["host_ram_gib"] = setup.host_ram_gib
    p["hardware"] = hw
    return p


def _speed(r: PlanResult, task: str) -> float:
    p = r.performance
    if p is None:
        return 0.0
    return float((p.train_tokens_per_s if task != "inference" else p.decode_tok_s) or 0.0)


def gate(workload: Workload, gpu: GPU, allow_old: bool, any_vendor: bool = False) -> str | None:
    """Reasons an option cannot serve the workload whatever its memory says (None: no objection).

    Besides old architectures and bf16, fine-tuning on AMD/Intel GPUs is left out unless asked for: the
    seeds call NVIDIA "your only practical choice for compute" (osmarks.net: Flash-Attention and other
    kernels are CUDA-first) and the tools people fine-tune with (bitsandbytes for QLoRA, Unsloth) treat
    ROCm/XPU as secondary backends; the planner's speed for them is unvalidated besides."""
    arch = (gpu.architecture or "").lower()
    if (workload.task != "inference" and not any_vendor and gpu.vendor in ("AMD", "Intel")
            and gpu.hardware_class in ("amd", "intel")):
        return (f"{gpu.id}: fine-tuning tools (bitsandbytes, FlashAttention, Unsloth) are CUDA-first and"
                " ROCm/XPU support is secondary (seeds: NVIDIA is the practical choice); --any-vendor to include")
    if not allow_old and any(a in arch for a in OLD_ARCH):
        return (f"{gpu.id}: old {gpu.architecture} card - no tensor cores, FP16 unusable or absent, passive"
                " cooling, driver support ending (seed: osmarks.net); --allow-old to include it")
    precision = str((workload.plan.get("workload") or {}).get("precision", "bf16")).lower()
    if (workload.task != "inference" and precision in ("bf16", "bfloat16") and gpu.vendor == "NVIDIA"
            and any(a in arch for a in NO_BF16_ARCH)):
        return (f"{gpu.id} ({gpu.architecture}) has no bf16: a bf16 fine-tune cannot run on it;"
                " fp16 mixed precision with loss scaling can (pass --precision fp16)")
    return None


Request = tuple[Workload, GPU, Setup]


def best_fit(workload: Workload, gpu: GPU, setup: Setup, evaluate: Evaluate) -> Fit:
    """`best_fits` for one request."""
    return best_fits([(workload, gpu, setup)], evaluate)[0]


def best_fits(requests: Sequence[Request], evaluate: Evaluate) -> list[Fit]:
    """For each (workload, gpu, setup): try the plan as given and each recipe; keep the fitting one with
    the highest speed (ties: fewest changes). When none fits, evaluate the changes that alter the job
    (QLoRA instead of full/LoRA, a shorter context, 4-bit weights) and name the first that fits as a hint -
    the job asked stays unmet. All trials go through one `evaluate_batch` call (two with hints)."""
    fits = _try_recipes(requests, evaluate)
    misses = [i for i, f in enumerate(fits) if f.result is not None and not f.result.fits]
    alts = [(i, label, alt) for i in misses for label, alt in _alternatives(requests[i][0])]
    alt_fits = _try_recipes([(alt, requests[i][1], requests[i][2]) for i, _, alt in alts], evaluate)
    for (i, label, _), f in zip(alts, alt_fits, strict=True):
        if fits[i].hint is None and f.result is not None and f.result.fits and f.result.memory is not None:
            how = f" + {f.recipe}" if f.recipe else ""
            fits[i].hint = (f"would fit with {label}{how} ({f.result.memory.per_gpu_gib:.1f} of"
                            f" {f.result.memory.gpu_capacity_gib:.1f} GiB per GPU)")
    return fits


def _try_recipes(requests: Sequence[Request], evaluate: Evaluate) -> list[Fit]:
    trials: list[tuple[int, int, str]] = []  # (request, recipe index, label)
    plans: list[tuple[dict[str, Any], GPU]] = []
    for r, (workload, gpu, setup) in enumerate(requests):
        for k, (label, over) in enumerate(recipes(workload, setup)):
            plan = copy.deepcopy(workload.plan)
            if over:
                plan["training"] = {**(plan.get("training") or {}), **over}
            trials.append((r, k, label))
            plans.append((_with_hardware(plan, gpu, setup), gpu))
    best: dict[int, tuple[tuple[bool, float, int], PlanResult, str]] = {}
    errors: dict[int, str] = {}
    for (r, k, label), res in zip(trials, evaluate_batch(plans, evaluate), strict=True):
        if isinstance(res, str):
            errors.setdefault(r, res)
            continue
        key = (bool(res.fits), _speed(res, requests[r][0].task), -k)
        if r not in best or key > best[r][0]:
            best[r] = (key, res, label)
    return [Fit(result=best[r][1], recipe=best[r][2]) if r in best else Fit(error=errors.get(r))
            for r in range(len(requests))]


def _alternatives(workload: Workload) -> list[tuple[str, Workload]]:
    """Job-changing alternatives, nearest first: a shorter context, 4-bit weights, QLoRA."""
    out: list[tuple[str, dict[str, Any]]] = []
    w = dict(workload.plan.get("workload") or {})
    if workload.task == "inference":
        ctx = w.get("context_tokens")
        for c in (32768, 16384, 8192, 4096):
            if ctx and c < ctx:
                out.append((f"a {c:,}-token context", {"workload": {**w, "context_tokens": c}}))
        if str(w.get("precision", "bf16")).lower() in ("bf16", "fp16", "float16", "bfloat16", "fp32"):
            out.append(("Q4_K_M weights", {"workload": {**w, "precision": "q4_k_m"}}))
    else:
        t = workload.training
        if t.get("method", "full") != "qlora":
            out.append((f"QLoRA instead of {t.get('method', 'full')}", {"training": {**t, "method": "qlora"}}))
    return [(label, Workload(label=workload.label, plan={**copy.deepcopy(workload.plan), **change},
                             usage=workload.usage)) for label, change in out]


def speed_band(result: PlanResult, gpu: GPU, task: str, method: str = "full") -> tuple[float, float, bool]:
    """(low, high) multipliers on the speed, and whether they come from validation.

    The planner's validation object says whether published runs of this scope (figure x engine or
    training method x memory class) check the speed: if so, its p90 error is the band
    (performance.error_band); if not, the band `plan` shows for it (the wider of the default band and the nearest
    validated scope's p90, planner.attach_validation), flagged as unvalidated. The band is read as `plan` prints it
    (`band_multipliers`)."""
    figure = "decode_tok_s" if task == "inference" else "train_tokens_per_s"
    bands = result.performance.error_band if result.performance is not None else {}
    v = result.validation.get(figure)
    if (v is not None and v.validated) or task == "inference":
        # decode is the best-measured figure: an unvalidated inference scope keeps its (widened) band.
        b = bands.get(figure, (v.p90_error if v is not None else None) or 0.2)
        return (*band_multipliers(b), True)
    from mlrig.estimators.training_speed import TRAIN_ERROR_BAND_WIDE

    return (*band_multipliers(bands.get(figure, TRAIN_ERROR_BAND_WIDE)), False)


def band_multipliers(band: float) -> tuple[float, float]:
    """(low, high) multipliers on a speed of a ± fraction `band`, read as `plan` prints it: 1 ± band (a ±60 %
    band is ×0.4-×1.6 on the speed, ×0.63-×2.5 on a run's hours), up to the ±100 % where that reading reaches a
    speed of 0; from there a ratio both ways (a p90 of 120 % is ×1/2.2-×2.2). Before session 38 `recommend` took
    every band past ±50 % as a ratio (±60 % as ×1/1.6-×1.6) and an unvalidated training band as ×0.5-2, while
    `plan` printed ±60 % for the same estimate."""
    return (1.0 - band if band < 1.0 else 1.0 / (1.0 + band)), 1.0 + band
