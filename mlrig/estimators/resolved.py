"""A plan resolved once, at the boundary, for the estimators (issue 15).

`resolve(arch, plan, gpu)` reads every string the estimators branch on exactly once: the weight
precision (`quant.Precision`), the KV-cache dtype and its bytes per element, the engine's family key
(`engines.engine_family`), the GPU's memory class and the link between the plan's GPUs, and it
prices the whole model's weights. Estimators take the `ResolvedPlan` and read these fields; none
of them parses a precision or an engine name again. It is immutable: a question that varies the
plan (the largest batch that fits, the fewest GPUs) builds a new one with `ResolvedPlan.varied`.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    # those bytes by component (quant.weight_bytes_by_component); MoE adds "experts_routed", a sub-part of
    # "linear" (quant.routed_expert_bytes), and "plain_16bit_read" (quant.plain_read_bytes), a vision model
    # "vision", a sub-part of "other" (quant.vision_bytes), so the values do not sum to weight_bytes
    weight_parts: Mapping[str, float]
    memory_class: str  # hbm / gddr / unified / host (efficiency.memory_class)
    engine: str | None  # inference: the efficiency tables' family key; training: None
    link: Interconnect | None  # between the plan's GPUs (None for one GPU)
    # inference on more GPUs than one copy of the model spans: `plan` is ONE replica's (its GPUs, its share of
    # the load; mlrig/estimators/replicas.py), `replicas` how many run, `replica_scale` what its throughput is
    # multiplied by for the whole deployment (`replicas.replica_scale`)
    replicas: int = 1
    replica_scale: float = 1.0
    # the share of the board's sustained power the load's tensor work asks for (serving.board_power_duty): a
    # Poisson-rate run below it lifts the board-power bound of the GEMMs (performance.peak_tflops); 1 by default
    gemm_duty: float = 1.0

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
        re-validated (`with_plan` for a validated variant)."""
        plan = self.plan
        w = {k: v for k, v in changes.items() if k in type(plan.workload).model_fields}
        h = {k: v for k, v in changes.items() if k in type(plan.hardware).model_fields}
        unknown = set(changes) - set(w) - set(h)
        if unknown:
            raise TypeError(f"not a workload or hardware field: {', '.join(sorted(unknown))}")
        return self.with_plan(plan.model_copy(update={"workload": plan.workload.model_copy(update=w),
                                                      "hardware": plan.hardware.model_copy(update=h)}))

    def with_plan(self, plan: Plan) -> ResolvedPlan:
        """A variant of this plan on the same model and GPU, resolved reusing this parse where the
        variant keeps the precision and KV dtype: the engine family follows its engine, the link its
        GPU count (the bisections of `memory.max_batch_size` and friends resolve once, not per probe)."""
        w, mine = plan.workload, self.plan.workload
        if (w.precision, w.kv_cache_precision, w.task) != (mine.precision, mine.kv_cache_precision, mine.task):
            return resolve(self.arch, plan, self.gpu)
        engine = self.engine
        if engine is not None and (w.engine, w.engine_version) != (mine.engine, mine.engine_version):
            engine = engine_family(w.engine, self.precision, self.gpu, w.engine_version)
        same_hardware = plan.hardware is self.plan.hardware or plan.hardware == self.plan.hardware
        link = self.link if same_hardware else _link(plan, self.gpu)
        # this plan's fields with three replaced: what __init__ would build, without its eleven frozen
        # sets (`mlrig eval` makes one variant per line)
        twin = object.__new__(ResolvedPlan)
        twin.__dict__.update(self.__dict__)
        twin.__dict__.update(plan=plan, engine=engine, link=link)
        return twin


def _link(plan: Plan, gpu: GPU) -> Interconnect | None:
    if plan.hardware.total_gpus > 1:
        return plan_link(plan, gpu)
    if plan.hardware.interconnect:  # one GPU uses no link, but a fabric it lacks is still a mistake to say
        plan_link(plan, gpu)
    return None


def resolve(arch: ModelArch, plan: Plan, gpu: GPU) -> ResolvedPlan:
    """Parse the plan's precision, KV dtype and engine once (MlrigError naming the bad one)."""
    w = plan.workload
    precision = quant.parse_precision(w.precision)
    kv = w.kv_cache_precision or precision.kv_default
    kv_bytes = quant.kv_bytes_per_element(kv)
    engine = engine_family(w.engine, precision, gpu, w.engine_version) if w.task == "inference" else None
    weight_bytes, parts = quant.weight_bytes_by_component(arch, precision)
    if arch.is_moe:
        # a sub-part of "linear", read by decode at its touched share (performance.read_weight_bytes)
        parts = {**parts, "experts_routed": quant.routed_expert_bytes(arch, precision),
                 "plain_16bit_read": quant.plain_read_bytes(arch, precision)}
    if arch.vision_params:
        parts = {**parts, "vision": quant.vision_bytes(arch, parts)}  # a sub-part of "other", never streamed
    return ResolvedPlan(plan, arch, gpu, precision, kv, kv_bytes, float(weight_bytes), parts,
                        gpu_memory_class(gpu), engine, _link(plan, gpu))
