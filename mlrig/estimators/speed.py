"""The one entry point for a plan's speed: a static inference batch (performance), a serving load
(serving) or a training step (training_speed). The planner and `mlrig serve` call this; the three
estimators below it do not import one another for dispatch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlrig.estimators.performance import StaticInference
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.results import Performance


def estimate_performance(r: ResolvedPlan, memory: Any | None = None,
                         static: StaticInference | None = None) -> Performance:
    """Speed of the plan's workload: training tasks by `training_speed.estimate_training`; inference
    under a serving load (`workload.load` concurrency | offline | rate) by
    `serving.serving_performance`; a static batch by `performance.estimate_inference` (`static`: its
    figures already worked out, one element of an array pass)."""
    if r.workload.task != "inference":
        from mlrig.estimators.training_speed import estimate_training

        return estimate_training(r)
    if r.workload.load != "static":
        from mlrig.estimators.serving import serving_performance

        return serving_performance(r, memory)
    from mlrig.estimators.performance import estimate_inference

    return estimate_inference(r, memory, static)
