"""The one entry point for a plan's speed: a static inference batch (performance), a serving load
(serving) or a training step (training_speed). The planner and `mlrig serve` call this; the three
estimators below it do not import one another for dispatch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlrig.estimators.performance import StaticInference
    from mlrig.estimators.resolved import ResolvedPlan
    from mlrig.estimators.training_speed import TrainingSpeed
    from mlrig.results import Performance


def estimate_performance(r: ResolvedPlan, memory: Any | None = None,
                         figures: StaticInference | TrainingSpeed | None = None) -> Performance:
    """Speed of the plan's workload: training tasks by `training_speed.estimate_training`; inference
    under a serving load (`workload.load` concurrency | offline | rate) by
    `serving.serving_performance`; a static batch by `performance.estimate_inference`. `figures`: a
    training step's or a static batch's figures already worked out (one element of an array pass)."""
    if r.workload.task != "inference":
        from mlrig.estimators.training_speed import TrainingSpeed, estimate_training

        assert figures is None or isinstance(figures, TrainingSpeed)
        return estimate_training(r, figures)
    if r.workload.load != "static":
        from mlrig.estimators.serving import serving_performance

        return serving_performance(r, memory)
    from mlrig.estimators.kv_limit import apply_static_waves
    from mlrig.estimators.performance import StaticInference, estimate_inference

    assert figures is None or isinstance(figures, StaticInference)
    # a batch larger than the engine runs at once (KV pool, max_num_seqs) runs in waves (kv_limit)
    return apply_static_waves(r, memory, estimate_inference(r, memory, figures))
