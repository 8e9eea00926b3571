"""Validate mlrig on published measurements through the planner, exactly as users run it.

Every calibration row (mlrig/data/calibration/*.jsonl; format in that folder's README.md) is a plan
plus the figure that was measured. `run()` evaluates each plan with `mlrig.planner.evaluate`, reads
the figure the row names from the result, and reports |predicted / measured - 1| per *scope*:
metric x engine x memory class (GDDR, HBM, unified, host), the unit in which a user can trust a
number. Rows of held-out sources (`"split": "holdout"`) are reported apart: they were never used to
choose a factor, so their error is what a user should expect on setups mlrig never saw.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mlrig.validation.scopes import SCOPES_FILE, ScopeRecord

if TYPE_CHECKING:
    from mlrig.results import PlanResult

Split = Literal["fit", "holdout"]


class CalibrationRow(BaseModel):
    """One published measurement (mlrig/data/calibration/README.md)."""

    model_config = ConfigDict(extra="allow")

    id: str
    plan: dict[str, Any]
    metric: str
    value: float = Field(allow_inf_nan=False)  # non-zero: errors are predicted / value - 1
    unit: str = ""
    source_url: str
    source_date: str = ""
    software: str = ""
    source_note: str = ""
    split: Split = "fit"
    anomaly: bool = False
    memory_measure: str | None = None
    statistic: Literal["median", "mean"] = "median"  # what a latency figure (ttft_ms) is over requests

    @field_validator("value")
    @classmethod
    def _non_zero(cls, value: float) -> float:
        if value == 0:
            raise ValueError("a measured value of 0 has no relative error; leave the row out")
        return value

    def catalog_gpu_id(self) -> str:
        """The catalog id of the row's GPU: `hardware.gpu` as the source spells it ("GeForce RTX 4090", "NVIDIA
        A100-SXM4-80GB") through the catalog's name lookup (`resolve_gpu`, the one `mlrig plan` and validation
        use), or the `gpu_spec` card's. Two spellings of one card give one id, so rows group by the card."""
        from mlrig.catalog.gpus import resolve_plan_hardware
        from mlrig.workload import HardwareSpec

        return resolve_plan_hardware(HardwareSpec.model_validate(self.plan.get("hardware", {}))).id


def _per_gpu(value: float | None, row: CalibrationRow) -> float | None:
    hw = row.plan.get("hardware", {})
    gpus = int(hw.get("count", 1) or 1) * int(hw.get("nodes", 1) or 1)
    return None if value is None else value / gpus


def _memory(field: str) -> Callable[[PlanResult], float | None]:
    def get(r: PlanResult) -> float | None:
        return None if r.memory is None else getattr(r.memory, field, None)
    return get


def _perf(field: str) -> Callable[[PlanResult], float | None]:
    def get(r: PlanResult) -> float | None:
        return None if r.performance is None else getattr(r.performance, field, None)
    return get


def _peak_memory(row: CalibrationRow, r: PlanResult) -> float | None:
    """Peak GPU memory as the source measured it: live tensors (torch max_memory_allocated),
    the allocator's reservation, the engine's printed buffers (llama.cpp), or what nvidia-smi shows
    (reservation + CUDA context)."""
    m = r.memory
    if m is None:
        return None
    allocated = getattr(m, "allocated_gib", None)
    reserved = getattr(m, "reserved_gib", None)
    if row.memory_measure == "torch_allocated" and allocated is not None:
        return float(allocated)
    if row.memory_measure == "torch_reserved" and reserved is not None:
        return float(reserved)
    if row.memory_measure == "engine_buffers":
        # the buffers an engine's own load log prints (llama.cpp: model + KV + compute buffer), without
        # the CUDA / Vulkan context no allocator of the engine's names
        return m.per_gpu_gib - m.overhead_gib
    return m.per_gpu_gib


def _ttft(row: CalibrationRow, r: PlanResult) -> float | None:
    """TTFT as the source summarised it: the median (the result's `ttft_ms`), or the mean where the row
    says `"statistic": "mean"` (LMDeploy's profile_generation prints FTL(ave)) and the result has one apart."""
    mean = _perf("ttft_mean_ms")(r)
    return mean if row.statistic == "mean" and mean is not None else _perf("ttft_ms")(r)


# Calibration metric -> (the result figure it checks, how to read it). Per-GPU variants divide the
# result's whole-job figure by the GPUs in the plan.
FIGURES: dict[str, tuple[str, Callable[[CalibrationRow, PlanResult], float | None]]] = {
    "decode_tok_s": ("decode_tok_s", lambda _, r: _perf("decode_tok_s")(r)),
    "prefill_tok_s": ("prefill_tok_s", lambda _, r: _perf("prefill_tok_s")(r)),
    "ttft_ms": ("ttft_ms", lambda row, r: _ttft(row, r)),
    "tpot_ms": ("tpot_ms", lambda _, r: _perf("tpot_ms")(r)),
    "throughput_tok_s": ("throughput_tok_s", lambda _, r: _perf("throughput_tok_s")(r)),
    "throughput_tok_s_per_gpu": ("throughput_tok_s", lambda row, r: _per_gpu(_perf("throughput_tok_s")(r), row)),
    "total_throughput_tok_s": ("throughput_tok_s", lambda _, r: _perf("total_throughput_tok_s")(r)),
    "requests_per_s": ("requests_per_s", lambda _, r: _perf("requests_per_s")(r)),
    "train_tokens_per_s": ("train_tokens_per_s", lambda _, r: _perf("train_tokens_per_s")(r)),
    "train_tokens_per_s_per_gpu": ("train_tokens_per_s",
                                   lambda row, r: _per_gpu(_perf("train_tokens_per_s")(r), row)),
    "mfu": ("mfu", lambda _, r: _perf("mfu")(r)),
    "hfu": ("hfu", lambda _, r: _perf("hfu")(r)),
    "step_time_s": ("step_time_s", lambda _, r: _perf("step_time_s")(r)),
    "time_to_train_s": ("time_to_train_s", lambda _, r: _perf("time_to_train_s")(r)),
    "per_gpu_gib": ("per_gpu_gib", _peak_memory),
    "weights_gib": ("weights_gib", lambda _, r: _memory("weights_gib")(r)),
    "activations_gib": ("activations_gib", lambda _, r: _memory("activations_gib")(r)),
    "overhead_gib": ("overhead_gib", lambda _, r: _memory("overhead_gib")(r)),
    "kv_cache_gib": ("kv_cache_gib", lambda _, r: _memory("kv_cache_gib")(r)),
    "host_ram_gib": ("host_ram_gib", lambda _, r: _memory("host_ram_gib")(r)),
    "kv_cache_capacity_tokens": ("kv_cache_capacity_tokens",
                                 lambda _, r: None if r.kv_cache_capacity_tokens is None
                                 else float(r.kv_cache_capacity_tokens)),
}


# What users need, per figure: (median, p90) of |pred/meas - 1| (issue 10's targets). Memory peaks of
# training and inference differ; a figure not listed has no target.
TARGETS: dict[str, tuple[float, float]] = {
    "decode_tok_s": (0.10, 0.25),
    "prefill_tok_s": (0.20, 0.45),
    "throughput_tok_s": (0.20, 0.50),
    "ttft_ms": (0.20, 0.50),
    "tpot_ms": (0.20, 0.50),
    "requests_per_s": (0.20, 0.50),
    "train_tokens_per_s": (0.12, 0.30),
    "per_gpu_gib/training": (0.12, 0.30),
    "per_gpu_gib/inference": (0.10, 0.30),
    "weights_gib": (0.02, 0.05),
    "kv_cache_capacity_tokens": (0.03, 0.10),
}


def target(figure: str, engine: str) -> tuple[float, float] | None:
    """The (median, p90) target of a scope, or None."""
    if figure == "per_gpu_gib":
        return TARGETS["per_gpu_gib/training" if engine.startswith("training-") else "per_gpu_gib/inference"]
    return TARGETS.get(figure)


class Checked(BaseModel):
    """One row through the planner: the prediction, or why there is none."""

    id: str
    figure: str
    scope: str  # "decode_tok_s / llama.cpp / gddr"
    split: Split
    measured: float
    predicted: float | None = None
    error: str | None = None  # the planner's error, when it refused the plan
    note: str = ""

    @property
    def rel_error(self) -> float:
        assert self.predicted is not None
        return abs(self.predicted / self.measured - 1.0)


def calibration_files(folder: Path | None = None) -> list[Path]:
    from mlrig.validation import calibration_dir

    return sorted((folder or calibration_dir()).glob("*.jsonl"))


def load_rows(folder: Path | None = None) -> list[CalibrationRow]:
    """Every row of every calibration file; a malformed row is a bug in the data: raise, naming it."""
    from mlrig.errors import MlrigError

    rows: list[CalibrationRow] = []
    for path in calibration_files(folder):
        try:
            with path.open(encoding="utf-8") as f:
                for lineno, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        rows.append(CalibrationRow.model_validate(json.loads(line)))
                    except json.JSONDecodeError as exc:
                        raise MlrigError(f"calibration file {path.name} line {lineno} is malformed: {exc}") from None
                    except ValidationError as exc:
                        first = exc.errors()[0]
                        where = ".".join(str(p) for p in first["loc"]) or "row"
                        raise MlrigError(f"calibration file {path.name} line {lineno} is malformed: {where}: "
                                         f"{first['msg']}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise MlrigError(f"cannot read calibration file {str(path)!r} ({exc}); "
                             "unset MLRIG_CALIBRATION_DIR or reinstall mlrig") from None
    return rows


def _scope_of(plan: dict[str, Any], figure: str) -> str:
    """The scope key (mlrig/validation/scopes.py) of a row's plan, as the planner sees it with its
    defaults filled in; rows the planner refuses get what can be read from the row itself."""
    from mlrig.errors import MlrigError
    from mlrig.planner import parse_plan, resolve_arch, resolve_hardware, with_defaults
    from mlrig.validation.scopes import plan_scope, scope_key

    try:
        p = parse_plan(plan)
        gpu = resolve_hardware(p)
        p, _ = with_defaults(p, gpu, resolve_arch(p))
        engine, mclass = plan_scope(p, gpu)
    except (MlrigError, ValueError):
        w = plan.get("workload", {})
        engine = (str(w.get("engine") or "default") if w.get("task", "inference") == "inference"
                  else f"training-{plan.get('training', {}).get('method', 'full')}")
        mclass = "unknown"
    return scope_key(figure, engine, mclass)


def strip_unknown_keys(plan: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of `plan` without the keys the plan model does not know (yet), and their names.
    For exploring while the plan format grows; `mlrig validate` never strips."""
    from mlrig.workload import HardwareSpec, TrainingSpec, WorkloadSpec

    known = {"workload": set(WorkloadSpec.model_fields), "training": set(TrainingSpec.model_fields),
             "hardware": set(HardwareSpec.model_fields)}
    out = json.loads(json.dumps(plan))
    dropped = []
    for section, keys in known.items():
        if isinstance(out.get(section), dict):
            for k in list(out[section]):
                if k not in keys:
                    dropped.append(f"{section}.{k}")
                    out[section].pop(k)
    return out, dropped


def check(row: CalibrationRow, strip_unknown: bool = False) -> Checked:
    """Evaluate one row's plan with the planner and read the figure it measured."""
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate

    if row.metric not in FIGURES:
        return Checked(id=row.id, figure=row.metric, scope=f"{row.metric} / ? / ?", split=row.split,
                       measured=row.value, error=f"metric {row.metric!r} is not a figure of a plan result")
    figure, read = FIGURES[row.metric]
    plan, dropped = strip_unknown_keys(row.plan) if strip_unknown else (row.plan, [])
    try:
        result = evaluate(plan)
    except MlrigError as exc:
        return Checked(id=row.id, figure=figure, scope=_scope_of(plan, figure), split=row.split,
                       measured=row.value, error=str(exc))
    predicted = read(row, result)
    scope = _scope_of(plan, figure)
    if predicted is None or not math.isfinite(predicted) or predicted <= 0:
        return Checked(id=row.id, figure=figure, scope=scope, split=row.split, measured=row.value,
                       error=f"the plan's result has no {figure}")
    return Checked(id=row.id, figure=figure, scope=scope, split=row.split, measured=row.value,
                   predicted=predicted, note=("dropped " + ", ".join(dropped)) if dropped else "")


def _quantiles(errors: list[float]) -> tuple[float, float]:
    from mlrig.validation import quantile

    return quantile(errors, 0.5), quantile(errors, 0.9)


def scopes(checked: Iterable[Checked]) -> list[ScopeRecord]:
    """Median / p90 error per scope over every predicted row, the held-out rows counted apart too."""
    by: dict[str, list[Checked]] = defaultdict(list)
    for c in checked:
        if c.predicted is not None:
            by[c.scope].append(c)
    out = []
    for name, cs in sorted(by.items()):
        figure, engine, mclass = name.split(" / ")
        med, p90 = _quantiles([c.rel_error for c in cs])
        hold = [c.rel_error for c in cs if c.split == "holdout"]
        out.append(ScopeRecord(figure=figure, engine=engine, memory_class=mclass, rows=len(cs), median_error=med,
                         p90_error=p90, holdout_rows=len(hold),
                         holdout_median_error=_quantiles(hold)[0] if hold else None))
    return out


def write_scope_table(records: list[ScopeRecord], rows_total: int, path: Path | None = None) -> Path:
    """Store the scope records where the planner reads them (mlrig/data/validation_scopes.json)."""
    import datetime

    from mlrig.validation.scopes import scope_table

    target = path or Path(__file__).resolve().parent.parent / "data" / SCOPES_FILE
    data = {"written": datetime.date.today().isoformat(), "calibration_rows": rows_total,
            "note": "written by `mlrig validate --write`; every calibration row through mlrig.planner.evaluate",
            "scopes": [{k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.model_dump().items()}
                       for r in records]}
    target.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    scope_table.cache_clear()
    return target


def run(rows: list[CalibrationRow] | None = None, strip_unknown: bool = False) -> list[Checked]:
    """Every non-anomalous calibration row through the planner."""
    return [check(r, strip_unknown) for r in (rows if rows is not None else load_rows()) if not r.anomaly]
