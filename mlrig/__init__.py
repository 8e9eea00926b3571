"""mlrig: will this model fit, how fast will it run, what should I buy or rent.

Python API (returns pydantic models):

    import mlrig
    r = mlrig.plan("meta-llama/Llama-3.1-8B", gpu="RTX 4090", precision="q4_k_m", context_tokens=8192)
    r.fits, r.memory.per_gpu_gib, r.performance.decode_tok_s

Heavy modules load on first use, so `import mlrig` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch
    from mlrig.results import PlanResult
    from mlrig.workload import Plan


def plan(model: str | None = None, gpu: str | None = None, **fields: Any) -> PlanResult:
    """Evaluate one workload: `fields` are plan fields (precision, batch_size, context_tokens, task,
    method, zero_stage, count, tensor_parallel, ...) placed in their plan section automatically."""
    from mlrig.planner import evaluate, plan_from_fields

    return evaluate(plan_from_fields(model, gpu=gpu, **fields))


def evaluate(plan: Plan | dict[str, Any]) -> PlanResult:
    """Evaluate a plan given as a `Plan` or a dict in the PLAN-FORMAT shape."""
    from mlrig.planner import evaluate as _evaluate

    return _evaluate(plan)


def fit(model: str, gpus: list[str] | None = None, **fields: Any) -> list[PlanResult]:
    """The same workload on several GPUs (default: the whole catalog)."""
    from mlrig.catalog.gpus import load_gpus
    from mlrig.planner import evaluate as _evaluate
    from mlrig.planner import plan_from_fields, resolve_arch

    ids = gpus or [g.id for g in load_gpus()]
    first = plan_from_fields(model, gpu=ids[0], **fields)
    from mlrig.planner import parse_plan

    arch = resolve_arch(parse_plan(first))
    return [_evaluate(plan_from_fields(model, gpu=g, **fields), arch=arch) for g in ids]


def model(name_or_path: str) -> ModelArch:
    """Resolve a catalog id, HF id or local file to an architecture."""
    from mlrig.catalog.models import resolve_model

    return resolve_model(name_or_path)


def gpu(name: str) -> GPU:
    """Resolve a GPU name ("RTX 4090", "NVIDIA A100-SXM4-80GB", ...) to its catalog entry."""
    from mlrig.catalog.gpus import resolve_gpu

    return resolve_gpu(name)


__all__ = ["__version__", "evaluate", "fit", "gpu", "model", "plan"]
