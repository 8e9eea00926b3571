"""The planner: resolve a plan's model and GPU, run the estimators, assemble a PlanResult.

This is the one place that wires catalogs → estimators. It holds no formulas of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from mlrig.catalog.gpus import GPU
from mlrig.catalog.models import ModelArch
from mlrig.errors import MlrigError
from mlrig.results import PlanResult
from mlrig.workload import Plan


def validation_message(exc: ValidationError, what: str = "plan") -> str:
    """One line from pydantic's error list: the field path, the problem, the value given."""
    parts = []
    for err in exc.errors()[:3]:
        loc = ".".join(str(x) for x in err["loc"] if not str(x).startswith("function-"))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            parts.append(f"unknown field {loc!r} (see docs/PLAN-FORMAT.md for the field names)")
        elif err["type"] == "missing":
            parts.append(f"{loc} is required")
        else:
            given = err.get("input")
            shown = f" (got {given!r})" if not isinstance(given, dict | list) else ""
            parts.append(f"{loc}: {msg}{shown}" if loc else msg)
    more = f" (+{len(exc.errors()) - 3} more)" if len(exc.errors()) > 3 else ""
    return f"invalid {what}: " + "; ".join(parts) + more


def parse_plan(data: Plan | dict[str, Any]) -> Plan:
    if isinstance(data, Plan):
        return data
    if not isinstance(data, dict):
        raise MlrigError(f"a plan must be a JSON object / TOML table, got {type(data).__name__}")
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise MlrigError(validation_message(exc)) from None


def load_plan_file(path: str | Path) -> dict[str, Any]:
    """Read a plan from TOML or JSON (by extension; TOML otherwise)."""
    import tomllib  # only plan files need it; kept off the start-up path of `mlrig plan MODEL`

    p = Path(path)
    if not p.is_file():
        raise MlrigError(f"plan file {str(p)!r} not found; give the path to a .toml or .json plan")
    if p.stat().st_size > 1_000_000:
        raise MlrigError(f"plan file {str(p)!r} is over 1 MB; a plan is a few lines of TOML")
    text = p.read_text(encoding="utf-8", errors="replace")
    try:
        data = json.loads(text) if p.suffix.lower() == ".json" else tomllib.loads(text)
    except (json.JSONDecodeError, tomllib.TOMLDecodeError) as exc:
        raise MlrigError(f"plan file {str(p)!r} is not valid {p.suffix.lstrip('.') or 'TOML'}: {exc}") from None
    if not isinstance(data, dict):
        raise MlrigError(f"plan file {str(p)!r} must hold one plan object")
    return data


def resolve_arch(plan: Plan) -> ModelArch:
    from mlrig.catalog.models import arch_from_ref, resolve_model

    if plan.model.is_explicit:
        return arch_from_ref(plan.model)
    assert plan.model.name is not None
    return resolve_model(plan.model.name)


def resolve_hardware(plan: Plan, overrides: dict[str, Any] | None = None) -> GPU:
    from mlrig.catalog.gpus import resolve_plan_hardware

    gpu = resolve_plan_hardware(plan.hardware)
    if overrides:
        gpu = gpu.model_copy(update=overrides)
    return gpu


def plan_from_fields(model: str | None = None, base: dict[str, Any] | None = None,
                     **fields: Any) -> dict[str, Any]:
    """Build a plan dict from flat keyword fields (CLI flags, API kwargs), placing each in its section.

    `base` (e.g. a plan file) is overlaid by the fields given; None values are ignored.
    """
    from mlrig.workload import HardwareSpec, TrainingSpec, WorkloadSpec

    data: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v) for k, v in (base or {}).items()}
    if isinstance(data.get("model"), str):
        data["model"] = {"name": data["model"]}
    if model is not None:
        data["model"] = {"name": model}
    sections: dict[str, type[BaseModel]] = {
        "workload": WorkloadSpec, "training": TrainingSpec, "hardware": HardwareSpec}
    for key, value in fields.items():
        if value is None:
            continue
        if key == "id":
            data["id"] = value
            continue
        for section, spec in sections.items():
            if key in spec.model_fields:
                data.setdefault(section, {})[key] = value
                break
        else:
            raise MlrigError(f"unknown plan field {key!r}; see docs/PLAN-FORMAT.md")
    return data


def default_engine(precision: str, gpu: GPU) -> str:
    """The engine a user most likely runs when they name none: llama.cpp for GGUF formats and on Apple
    (Metal), else Hugging Face transformers (`from_pretrained` + `generate`). One place, so memory and
    speed always assume the same engine."""
    from mlrig.estimators.performance import format_family, norm_precision

    gguf = format_family(precision) in ("kquant", "legacy") or norm_precision(precision) == "q8_0"
    if norm_precision(precision).startswith("exl2"):
        return "exllamav2"
    if norm_precision(precision).startswith(("q4f16", "q3f16")):
        return "mlc"
    if gpu.hardware_class == "tpu":
        return "vllm"  # vLLM's TPU backend (JAX/XLA); eager PyTorch does not run on a TPU
    return "llama.cpp" if gguf or gpu.hardware_class in ("apple", "cpu") else "transformers"


def with_defaults(p: Plan, gpu: GPU, arch: ModelArch | None = None) -> tuple[Plan, list[str]]:
    """Fill what an inference user usually leaves implicit, and say so in notes:
    - the precision, when none was given and the checkpoint ships quantised (a GGUF file's type,
      gpt-oss's MXFP4, DeepSeek-V3's FP8): the weights as they are;
    - the engine (see `default_engine`);
    - how several GPUs in one node share the model when no parallelism is given: llama.cpp splits
      layers across them (its default `--split-mode layer`), serving engines use tensor parallelism
      (vLLM `--tensor-parallel-size N`). Training keeps data parallelism (+ ZeRO) as given."""
    from mlrig import quant

    notes: list[str] = []
    precision_given = "precision" in p.workload.model_fields_set
    # One spelling per precision from here on ("float16" -> "fp16", "Q4_K_M" -> "q4_k_m"), so every
    # estimator classifies the same format the same way.
    w = p.workload.model_copy(update={
        "precision": quant.normalise_precision(p.workload.precision),
        "kv_cache_precision": (quant.normalise_precision(p.workload.kv_cache_precision)
                               if p.workload.kv_cache_precision else None)})
    p = p.model_copy(update={"workload": w})
    if p.workload.task != "inference":
        return p, notes
    hw = p.hardware
    shipped = arch and (arch.weight_format or arch.quant_method)
    if not precision_given and arch is not None and shipped:
        native = quant.native_precision(arch)
        if native != w.precision:
            w = w.model_copy(update={"precision": native})
            notes.append(f"no precision given: the weights as shipped ({native}); pass --precision to change")
    if w.engine is None:
        w = w.model_copy(update={"engine": default_engine(w.precision, gpu)})
        notes.append(f"no engine given: assumed {w.engine} (pass --engine vllm, llama.cpp, sglang, ... to change)")
    if hw.count > 1 and hw.nodes == 1 and hw.tensor_parallel == 1 and hw.pipeline_parallel == 1:
        assert w.engine is not None
        if w.engine.lower().startswith(("llama", "ollama")):
            hw = hw.model_copy(update={"pipeline_parallel": hw.count})
            notes.append(f"llama.cpp splits layers over the {hw.count} GPUs (pipeline); pass --tp to split rows")
        else:
            hw = hw.model_copy(update={"tensor_parallel": hw.count})
            notes.append(f"{w.engine}: tensor parallelism over the {hw.count} GPUs assumed (pass --tp/--pp to change)")
    return p.model_copy(update={"workload": w, "hardware": hw}), notes


def evaluate(plan: Plan | dict[str, Any], *, arch: ModelArch | None = None, gpu: GPU | None = None,
             gpu_overrides: dict[str, Any] | None = None) -> PlanResult:
    """Memory and speed for one plan. Raises MlrigError on bad input.

    `arch`/`gpu` may be passed pre-resolved (sweeps over many GPUs resolve once);
    `gpu_overrides` replaces datasheet figures with measured ones (`mlrig plan --machine local`).
    """
    p = parse_plan(plan)
    arch = arch or resolve_arch(p)
    gpu = gpu or resolve_hardware(p, gpu_overrides)
    from mlrig.estimators.memory import estimate_memory
    from mlrig.estimators.performance import estimate_performance

    assumed = "gpu" not in p.hardware.model_fields_set and p.hardware.gpu_spec is None
    p, notes = with_defaults(p, gpu, arch)
    notes = [*arch.notes, *gpu.resolution_notes, *notes]
    if assumed:
        notes.insert(0, f"no GPU given: assumed {gpu.name} ({gpu.id}), the default; pass --gpu NAME "
                        "(e.g. --gpu 'RTX 3090', --gpu 'H100 SXM')")
    try:
        memory = estimate_memory(arch, p, gpu)
        performance = estimate_performance(arch, p, gpu, memory)
        training = None
        if p.workload.task != "inference":
            from mlrig.estimators.training_speed import estimate_training_run

            training = estimate_training_run(arch, p, performance)
    except ValidationError as exc:
        raise MlrigError(validation_message(exc, "input")) from None
    result = PlanResult(
        id=p.id,
        fits=memory.fits,
        model=arch.hf_id or arch.id,
        gpu=gpu.id,
        precision=p.workload.precision,
        engine=p.workload.engine if p.workload.task == "inference" else None,
        memory=memory.breakdown,
        kv_cache_capacity_tokens=memory.kv_cache_capacity_tokens,
        performance=performance,
        training=training,
        notes=notes,
    )
    attach_validation(result, p, gpu)
    return result


def attach_validation(result: PlanResult, plan: Plan, gpu: GPU) -> None:
    """Each figure's validation scope (mlrig/validation/scopes.py), and its ± band from that scope:
    the p90 error of the published runs in it, or, when it has too few, the wider of the default band
    and the nearest validated scope's p90."""
    from mlrig.validation.scopes import validation_for

    result.validation = validation_for(result, plan, gpu)
    perf = result.performance
    if perf is None:
        return
    for figure, band in list(perf.error_band.items()):
        v = result.validation.get(figure)
        if v is None:
            continue
        if v.validated and v.p90_error is not None:
            perf.error_band[figure] = round(v.p90_error, 3)
        elif v.nearest_p90_error is not None:
            perf.error_band[figure] = round(max(band, v.nearest_p90_error), 3)


def evaluate_case(obj: Any) -> PlanResult:
    """Like `evaluate`, but never raises: a bad case comes back with `error` set (for batch runs)."""
    case_id = obj.get("id") if isinstance(obj, dict) else None
    try:
        return evaluate(obj)
    except MlrigError as exc:
        return PlanResult(id=case_id if isinstance(case_id, str) else None, error=str(exc))
    except Exception as exc:  # a bug must not stop a batch; say so plainly
        return PlanResult(id=case_id if isinstance(case_id, str) else None,
                          error=f"internal error ({type(exc).__name__}: {exc}); please report it")


def limits(plan: Plan | dict[str, Any], *, arch: ModelArch | None = None,
           gpu: GPU | None = None) -> dict[str, int | None]:
    """The inverse questions: largest batch and context that fit, fewest GPUs of this kind."""
    from mlrig.estimators.memory import max_batch_size, max_context_tokens, min_gpus

    p = parse_plan(plan)
    arch = arch or resolve_arch(p)
    gpu = gpu or resolve_hardware(p)
    p, _ = with_defaults(p, gpu, arch)
    return {
        "max_batch_size": max_batch_size(arch, p, gpu),
        "max_context_tokens": max_context_tokens(arch, p, gpu),
        "min_gpus": min_gpus(arch, p, gpu),
    }
