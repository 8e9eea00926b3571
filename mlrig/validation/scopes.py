"""How well each figure of a result is validated: its scope and that scope's record.

A *scope* is figure x engine family (or training method) x memory class (GDDR, HBM, unified, host):
the unit in which published runs tell us how far to trust a number. `mlrig validate --write`
(mlrig/validation/runner.py) runs every calibration row through the planner and stores each scope's
row count and errors in mlrig/data/validation_scopes.json; the planner reads that table here and
attaches, per figure, either the scope's record or "not validated" with the nearest validated scope
(docs/PLAN-FORMAT.md, "the per-figure validation object").

No numpy here: this runs on every `mlrig plan`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from mlrig.results import FigureValidation

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.results import PlanResult
    from mlrig.workload import Plan

# A scope counts as validated from this many published runs: fewer cannot give a p90 worth showing.
MIN_ROWS = 5
# A validated scope with fewer runs than this is small: its p90 is shown, but it never narrows a figure's ± band
# below the estimator's default (performance.ERROR_BAND, training_speed.TRAIN_ERROR_BAND; planner.attach_validation).
# The p90 of n runs is an order statistic: the chance that all n runs fall below the true 90th percentile of
# the error is 0.9^n, 59 % at 5 runs, 35 % at 10, 12 % at 20, so below 20 a scope's p90 understates the band
# more often than one time in eight (vLLM decode on GDDR: 5 runs of 8B-class models at 16 bits, p90 2 %, would
# otherwise give +-2 % to a 70B FP8 on 4x RTX 3090 or to GGUF weights on vLLM, setups none of the 5 ran).
SMALL_SCOPE_ROWS = 20
SMALL_SCOPE_TEXT = "few runs: band kept at the default"


def small_scope(rows: int) -> bool:
    """A validated scope too small to narrow a band (SMALL_SCOPE_ROWS)."""
    return MIN_ROWS <= rows < SMALL_SCOPE_ROWS

# The figures a result carries that calibration rows measure, and where each lives in the result.
PERFORMANCE_FIGURES = ("prefill_tok_s", "decode_tok_s", "ttft_ms", "tpot_ms", "throughput_tok_s",
                       "requests_per_s", "train_tokens_per_s", "step_time_s", "mfu")
MEMORY_FIGURES = ("per_gpu_gib", "weights_gib", "kv_cache_gib")
CLASS_LABELS = {"gddr": "GDDR", "hbm": "HBM", "unified": "unified memory", "host": "CPU host"}

SCOPES_FILE = "validation_scopes.json"


class ScopeRecord(BaseModel):
    """One scope's record over the calibration rows (both splits), the held-out rows also apart."""

    figure: str
    engine: str
    memory_class: str
    rows: int
    median_error: float  # median |pred/meas - 1|, a fraction
    p90_error: float
    holdout_rows: int = 0
    holdout_median_error: float | None = None

    @property
    def key(self) -> str:
        return scope_key(self.figure, self.engine, self.memory_class)

    @property
    def label(self) -> str:
        return scope_label(self.figure, self.engine, self.memory_class)


def per_user_band(decode_band: float, tpot_band: float, users: int) -> float:
    """The ± band of a serving curve's per-user speed at `users` concurrent users: the decode scope's p90
    for one user; above, each user's speed is 1 / TPOT under load, so the wider of that and the TPOT
    scope's p90 (published TPOT under load misses more than batch-1 decode does)."""
    return decode_band if users <= 1 else max(decode_band, tpot_band)


def scope_key(figure: str, engine: str, memory_class: str) -> str:
    return f"{figure} / {engine} / {memory_class}"


def scope_label(figure: str, engine: str, memory_class: str) -> str:
    return f"{engine} {figure}, {CLASS_LABELS.get(memory_class, memory_class)}"


def plan_scope(plan: Plan, gpu: GPU) -> tuple[str, str]:
    """(engine label, memory class) of a plan with its defaults filled in. Inference: the engine
    family (its dated builds and backends counted with it, except llama.cpp's HIP build on AMD; the memory class already
    separates Apple).
    Training: the method ("training-full", "training-lora", "training-qlora"). Worked out once per
    (task, method, engine and its version, precision, GPU class and memory type): what it reads of the plan and GPU."""
    w = plan.workload
    method = (plan.training.method if plan.training is not None else "full") if w.task != "inference" else None
    key = (method, w.engine, w.engine_version, w.precision, gpu.hardware_class, gpu.memory_type)
    found = _PLAN_SCOPES.get(key)
    if found is None:
        found = _plan_scope(plan, gpu)
        if len(_PLAN_SCOPES) >= 10_000:
            _PLAN_SCOPES.clear()
        _PLAN_SCOPES[key] = found
    return found


_PLAN_SCOPES: dict[tuple[str | None, ...], tuple[str, str]] = {}


def _plan_scope(plan: Plan, gpu: GPU) -> tuple[str, str]:
    from mlrig.estimators.efficiency import memory_class

    mclass = memory_class(gpu.hardware_class, gpu.memory_type)
    if plan.workload.task != "inference":
        method = plan.training.method if plan.training is not None else "full"
        return f"training-{method}", mclass
    from mlrig.estimators.engines import engine_family

    family = engine_family(plan.workload.engine, plan.workload.precision or "", gpu, plan.workload.engine_version)
    base = family.split("-20")[0]  # "llama.cpp-2024", "trt-llm-2023": dated builds of one family
    if base == "llama.cpp-hip":
        # llama.cpp's HIP build on AMD GPUs is its own scope: ggml-cuda compiled for ROCm, with its own kernel
        # choices (engines.llama_cpp_backend, efficiency.HIP_DP4A_MMQ_EFF), so its runs say nothing about how
        # well the CUDA build is priced on an NVIDIA card of the same memory class, nor the other way round
        return base, mclass
    engine_name = (plan.workload.engine or "").lower()
    if base == "exllamav2" and ("exllamav3" in engine_name or "exl3" in engine_name):
        # ExLlamaV3 is priced with ExLlamaV2's kernels (engines.engine_family), but it is another code base (new
        # kernels, EXL3's trellis quantisation): the EXL2 runs do not validate it, so it is its own (empty) scope
        return "exllamav3", mclass
    if base == "lmdeploy":
        from mlrig.estimators.engines import lmdeploy_pytorch_engine

        if lmdeploy_pytorch_engine(plan.workload.engine, plan.workload.engine_version):
            # LMDeploy's PyTorch engine (engines.lmdeploy_pytorch_engine) is another code base than TurboMind
            # (Python scheduler with prefill passes of their own, Triton kernels): TurboMind's runs do not vouch
            # for it, so it is its own scope
            return "lmdeploy-pytorch", mclass
    return ("llama.cpp" if base.startswith("llama.cpp") else base), mclass


@lru_cache(maxsize=1)
def scope_table() -> dict[str, ScopeRecord]:
    """The packaged table written by `mlrig validate --write` (empty when it is missing)."""
    try:
        text = (Path(__file__).resolve().parent.parent / "data" / SCOPES_FILE).read_text(encoding="utf-8")
    except OSError:  # a source tree before its first `mlrig validate --write`: every figure unvalidated
        return {}
    data: dict[str, Any] = json.loads(text)
    records = [ScopeRecord.model_validate(s) for s in data.get("scopes", [])]
    return {r.key: r for r in records}


# An engine label priced with another family's physics, and so nearest to that family's runs.
PRICED_AS = {"exllamav3": "exllamav2", "lmdeploy-pytorch": "lmdeploy"}


def _nearest(figure: str, engine: str, mclass: str, table: dict[str, ScopeRecord]) -> ScopeRecord | None:
    """Same figure and the same kind of work (inference or training), preferring the same engine on
    another memory class, then the family it is priced as (PRICED_AS) on the same class, then another engine on
    the same class, then any; most rows wins a tie."""
    training = engine.startswith("training-")  # an inference figure is never vouched for by training runs
    same_figure = [r for r in table.values() if r.figure == figure and r.rows >= MIN_ROWS
                   and r.engine.startswith("training-") == training]
    priced_as = PRICED_AS.get(engine, engine)
    for pick in (lambda r: r.engine == engine, lambda r: r.engine == priced_as and r.memory_class == mclass,
                 lambda r: r.memory_class == mclass, lambda r: True):
        found = [r for r in same_figure if pick(r)]
        if found:
            return max(found, key=lambda r: r.rows)
    return None


def _validation_fields(figure: str, engine: str, mclass: str, table: dict[str, ScopeRecord]) -> dict[str, Any]:
    rec = table.get(scope_key(figure, engine, mclass))
    label = scope_label(figure, engine, mclass)
    if rec is not None and rec.rows >= MIN_ROWS:
        return dict(validated=True, scope=label, rows=rec.rows, median_error=rec.median_error,
                    p90_error=rec.p90_error)
    near = _nearest(figure, engine, mclass, table)
    return dict(validated=False, scope=label, rows=rec.rows if rec else 0,
                nearest=near.label if near else None,
                nearest_p90_error=near.p90_error if near else None)


# (the packaged table, {(figure, engine, memory class): FigureValidation}): every plan of a batch asks
# the same few questions of the same table. Rebuilt when `scope_table()` gives another table
# (`mlrig validate --write` clears its cache); the table is held, so its identity is safe.
_MEMO: tuple[dict[str, ScopeRecord], dict[tuple[str, str, str], FigureValidation]] | None = None


def figure_validation(figure: str, engine: str, mclass: str,
                      table: dict[str, ScopeRecord] | None = None) -> FigureValidation:
    """The figure's validation object: its scope's record, or "not validated" and the nearest scope.
    With the packaged table (no `table` given) it is worked out once per scope and shared (frozen)."""
    global _MEMO
    if table is not None:
        return FigureValidation(**_validation_fields(figure, engine, mclass, table))
    shipped = scope_table()
    if _MEMO is None or _MEMO[0] is not shipped:
        _MEMO = (shipped, {})
    key = (figure, engine, mclass)
    found = _MEMO[1].get(key)
    if found is None:
        found = _MEMO[1][key] = FigureValidation(**_validation_fields(figure, engine, mclass, shipped))
    return found


def validation_for(result: PlanResult, plan: Plan, gpu: GPU) -> dict[str, FigureValidation]:
    """A `validation` entry for every figure the result has that published runs measure."""
    engine, mclass = plan_scope(plan, gpu)
    out: dict[str, FigureValidation] = {}
    perf, mem = result.performance, result.memory
    for figure in PERFORMANCE_FIGURES:
        if perf is not None and getattr(perf, figure, None) is not None:
            out[figure] = figure_validation(figure, engine, mclass)
    for figure in MEMORY_FIGURES:
        if mem is not None and getattr(mem, figure, None):
            out[figure] = figure_validation(figure, engine, mclass)
    if result.kv_cache_capacity_tokens is not None:
        out["kv_cache_capacity_tokens"] = figure_validation("kv_cache_capacity_tokens", engine, mclass)
    return out
