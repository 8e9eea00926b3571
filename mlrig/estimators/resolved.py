"""A plan resolved once, at the boundary, for the estimators (issue 15).

`resolve(arch, plan, gpu)` reads every string the estimators branch on exactly once: the weight
precision (`quant.Precision`), the KV-cache dtype and its bytes per element, the engine's family key
(`engines.engine_family`), the GPU's memory class and the link between the plan's GPUs, and it
prices the whole model's weights. Estimators take the `ResolvedPlan` and read these fields; none
of them parses a precision or an engine name again. It is immutable: a question that varies the
plan (the largest batch that fits, the fewest GPUs) builds a new one with `ResolvedPlan.varied`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlrig import quant
from mlrig.estimators.engines import engine_family
from mlrig.estimators.hardware import gpu_memory_class, plan_link

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.interconnects import Interconnect
    from mlrig.catalog.models import ModelArch
    from mlrig.quant import Precision
    from mlrig.workload import HardwareSpec, Plan, TrainingSpec, WorkloadSpec


@dataclass(frozen=True)
class ResolvedPlan:
    plan: Plan
    arch: ModelArch
    gpu: GPU
    precision: Precision  # the weights' format as given (training may store its base otherwise)
    kv_precision: str  # the KV-cache dtype: given, or the precision's default (`Precision.kv_default`)
    kv_bytes_per_element: float
    weight_bytes: float  # the whole model's weights at `precision` (quant.weight_bytes)
    memory_class: str  # hbm / gddr / unified / host (efficiency.memory_class)
    engine: str | None  # inference: the efficiency tables' family key; training: None
    link: Interconnect | None  # between the plan's GPUs (None for one GPU)

    @property
    def workload(self) -> WorkloadSpec:
        return self.plan.workload

    @property
    def hardware(self) -> HardwareSpec:
        return self.plan.hardware

    @property
    def training(self) -> TrainingSpec | None:
        return self.plan.training

    def varied(self, **changes: Any) -> ResolvedPlan:
        """This plan with workload or hardware fields changed (batch, context, engine, GPU count), not
        re-validated: the precision, KV dtype and weights stay parsed; the engine family and the link
        follow the new engine and GPU count."""
        plan = self.plan
        w = {k: v for k, v in changes.items() if k in type(plan.workload).model_fields}
        h = {k: v for k, v in changes.items() if k in type(plan.hardware).model_fields}
        unknown = set(changes) - set(w) - set(h)
        if unknown:
            raise TypeError(f"not a workload or hardware field: {', '.join(sorted(unknown))}")
        plan = plan.model_copy(update={"workload": plan.workload.model_copy(update=w),
                                       "hardware": plan.hardware.model_copy(update=h)})
        link = self.link if not h else _link(plan, self.gpu)
        engine = self.engine
        if engine is not None and ("engine" in w or "engine_version" in w):
            engine = engine_family(plan.workload.engine, self.precision, self.gpu, plan.workload.engine_version)
        return ResolvedPlan(plan, self.arch, self.gpu, self.precision, self.kv_precision,
                            self.kv_bytes_per_element, self.weight_bytes, self.memory_class, engine, link)


def _link(plan: Plan, gpu: GPU) -> Interconnect | None:
    return plan_link(plan, gpu) if plan.hardware.total_gpus > 1 else None


def resolve(arch: ModelArch, plan: Plan, gpu: GPU) -> ResolvedPlan:
    """Parse the plan's precision, KV dtype and engine once (MlrigError naming the bad one)."""
    w = plan.workload
    precision = quant.parse_precision(w.precision)
    kv = w.kv_cache_precision or precision.kv_default
    kv_bytes = quant.kv_bytes_per_element(kv)
    engine = engine_family(w.engine, precision, gpu, w.engine_version) if w.task == "inference" else None
    return ResolvedPlan(plan, arch, gpu, precision, kv, kv_bytes, float(quant.weight_bytes(arch, precision)),
                        gpu_memory_class(gpu), engine, _link(plan, gpu))
