"""`trace_plan`: trace a plan's real program, extrapolate per layer, cache, compare with the formula.

torch/transformers/peft are imported only when a trace actually runs (not for a cache hit), so a
missing `mlrig[trace]` extra is one line naming the install command.

Per-layer extrapolation: tracing every layer of a 70B costs time but teaches nothing new, since the
decoder layers repeat. `layer_plan` picks two short stacks (2 and 4 layers; for models whose layers
follow a pattern, such as Gemma's sliding/global 5:1, one and two whole periods after any leading
dense layers), and every region's peak, each category at that peak and the reserved bytes are
extended linearly to the full depth. Each region (forward body/head, backward head/layers/
embeddings, optimizer step) keeps the same structure as the stack grows, so its peak is linear in
the layer count; the overall peak is the largest extended region peak. `benchmarks/trace.py`
checks this against direct traces.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from mlrig.catalog.gpus import GPU
from mlrig.catalog.models import ModelArch
from mlrig.errors import MlrigError
from mlrig.trace.recipe import Attention, OptimizerImpl, Recipe, cache_key, recipe_from_plan
from mlrig.trace.report import CUDA_CONTEXT_GIB, Comparison, PhasePeak, TraceReport
from mlrig.workload import Plan

GIB = 2**30
INSTALL_HINT = "pip install 'mlrig[trace]'"
_HF_ENGINES = ("transformers", "hf", "pytorch", "torch")


def require_torch() -> None:
    """One line naming the install command when the trace extra is missing."""
    import importlib.util

    missing = [m for m in ("torch", "transformers", "peft") if importlib.util.find_spec(m) is None]
    if missing:
        raise MlrigError(f"mlrig trace needs {', '.join(missing)}: {INSTALL_HINT}")


def cache_dir() -> Path:
    """$MLRIG_HOME/trace-cache, else $XDG_CACHE_HOME/mlrig/trace (~/.cache/mlrig/trace)."""
    home = os.environ.get("MLRIG_HOME")
    if home:
        return Path(home).expanduser() / "trace-cache"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mlrig" / "trace"


def load_config(plan: Plan, arch: ModelArch) -> tuple[dict[str, Any], str]:
    """The model's config.json as a dict, and where it came from: the built-in catalog copy, a
    local config.json / model folder, or the Hub (config only; never code)."""
    from mlrig.catalog.readers.hf_config import read_json_file

    if plan.model.is_explicit:
        raise MlrigError("trace builds the model from its config.json: give a catalog name, an HF id or a "
                         "path to config.json, not an explicit architecture")
    name = plan.model.name or ""
    from mlrig.userfiles import expand_user, path_exists

    p = expand_user(name)
    if path_exists(p):
        cfg_path = p / "config.json" if p.is_dir() else p
        if p.name.endswith((".gguf", ".safetensors")):
            cfg_path = p.parent / "config.json"
        if not cfg_path.is_file() or not cfg_path.name.endswith(".json"):
            raise MlrigError(f"trace needs a config.json; none found for {name!r}")
        data = read_json_file(cfg_path)
        source = str(cfg_path)
    elif arch.catalog_id:
        path = Path(__file__).resolve().parent.parent / "data" / "models" / f"{arch.catalog_id}.json"
        data = read_json_file(path)
        source = f"catalog {path.name}"
    elif arch.hf_id:
        try:
            from huggingface_hub import hf_hub_download

            local = hf_hub_download(arch.hf_id, "config.json")
        except Exception as exc:  # offline, gated, missing: all one message
            raise MlrigError(f"cannot fetch config.json of {arch.hf_id} ({type(exc).__name__}); download it and "
                             "pass its path") from None
        data = read_json_file(Path(local))
        source = f"hub {arch.hf_id}"
    else:
        raise MlrigError(f"no config.json known for {name!r}; pass a path to one")
    if not isinstance(data, dict):
        raise MlrigError(f"config {source} must hold a JSON object")
    return data, source


def layer_plan(layer_kinds: list[str], lead: int, total: int) -> list[int]:
    """The stack depths to trace: [total] (direct) or two shorter ones to extend linearly.

    `layer_kinds` is the per-layer pattern (transformers' `config.layer_types`, or empty), `lead`
    the leading layers that differ (DeepSeek's `first_k_dense_replace`). Each stack holds `lead`
    layers plus whole periods of the pattern, at least two layers per step."""
    period = 1
    body = layer_kinds[lead:] if len(layer_kinds) == total else []
    for p in range(1, len(body) + 1):
        if all(body[i] == body[i % p] for i in range(len(body))):
            period = p
            break
    per = period * max(1, -(-2 // period))
    first, second = lead + per, lead + 2 * per
    if second >= total:
        return [total]
    return [first, second]


def _phase(region: str) -> str:
    tag, _, rest = region.partition(":")
    if tag == "p":
        return "prefill"
    if tag == "d":
        return "decode"
    return rest.split(".", 1)[0] if rest else tag


def _regions(run: Any) -> dict[str, tuple[float, dict[str, float], float]]:
    """region -> (peak allocated, categories at that peak, reserved at its end), in bytes."""
    out: dict[str, tuple[float, dict[str, float], float]] = {}
    for r in run.peaks:
        cats = {k: float(v) for k, v in r.by_category.items()}
        prev = out.get(r.name)
        if prev is None or r.peak_allocated > prev[0]:
            out[r.name] = (float(r.peak_allocated), cats, float(r.reserved_end))
    return out


def _extend(a: float, b: float, la: int, lb: int, total: int) -> float:
    return max(0.0, a + (b - a) * (total - la) / (lb - la))


def combine(runs: list[Any], total: int) -> tuple[dict[str, tuple[float, dict[str, float]]], float]:
    """Region peaks and peak reserved at `total` layers, from one direct run or two to extend."""
    if len(runs) == 1:
        regs = _regions(runs[0])
        return {k: (v[0], v[1]) for k, v in regs.items()}, float(runs[0].reserved)
    r1, r2 = runs
    g1, g2 = _regions(r1), _regions(r2)
    l1, l2 = r1.layers, r2.layers
    out: dict[str, tuple[float, dict[str, float]]] = {}
    for name, (p2, c2, _) in g2.items():
        p1, c1, _ = g1.get(name, (p2, c2, 0.0))
        cats = {k: _extend(c1.get(k, 0.0), c2.get(k, 0.0), l1, l2, total) for k in set(c1) | set(c2)}
        out[name] = (_extend(p1, p2, l1, l2, total), {k: v for k, v in cats.items() if v > 0})
    # the allocator's slack (reserved - peak allocated) is taken from the deeper stack as it is: it
    # comes from the largest transient blocks (logits, the optimizer step), which do not grow with
    # depth; extending it per layer overshot by 3-24% in benchmarks/trace.py
    peak2 = max(v[0] for v in g2.values())
    slack = max(0.0, float(r2.reserved) - peak2)
    return out, max(v[0] for v in out.values()) + slack


def _report_from_runs(runs: list[Any], total: int, recipe: Recipe, model: str, source: str,
                      seconds: float) -> TraceReport:
    regions, reserved = combine(runs, total)
    last_step = f"s{recipe.steps}:"
    peak_name = max(regions, key=lambda k: regions[k][0])
    peak, cats = regions[peak_name]
    reserved = max(reserved, peak)
    phases: dict[str, PhasePeak] = {}
    for name, (value, c) in regions.items():
        ph = _phase(name)
        if ph in ("setup", "zero_grad") or (recipe.task == "train" and not name.startswith(last_step)):
            continue
        if ph not in phases or value > phases[ph].peak_allocated_gib * GIB:
            phases[ph] = PhasePeak(phase=ph, peak_allocated_gib=round(value / GIB, 4),
                                   by_category_gib={k: round(v / GIB, 4) for k, v in c.items()})
    order = ["forward", "backward", "optimizer", "prefill", "decode"]
    big = runs[-1]
    notes = list(dict.fromkeys(n for r in runs for n in r.notes))
    if len(runs) > 1:
        notes.append(f"traced {runs[0].layers} and {runs[1].layers} of {total} layers and extended each region's "
                     "peak linearly per layer (see benchmarks/trace.py for its error against direct traces)")
    return TraceReport(
        model=model, config_source=source, recipe=recipe, recipe_text=recipe.describe(),
        kernels=sorted({k for r in runs for k in r.kernels}),
        params=round(_extend(runs[0].params, big.params, runs[0].layers, big.layers, total)
                     if len(runs) > 1 else big.params),
        trainable_params=round(_extend(runs[0].trainable, big.trainable, runs[0].layers, big.layers, total)
                               if len(runs) > 1 else big.trainable),
        layers=total, layers_traced=[r.layers for r in runs], extrapolated=len(runs) > 1,
        peak_allocated_gib=round(peak / GIB, 4), peak_reserved_gib=round(reserved / GIB, 4),
        nvidia_smi_gib=round(reserved / GIB + CUDA_CONTEXT_GIB, 4),
        peak_phase=_phase(peak_name),
        by_category_gib={k: round(v / GIB, 4) for k, v in sorted(cats.items(), key=lambda kv: -kv[1])},
        phases=[phases[p] for p in order if p in phases],
        trace_seconds=round(seconds, 2), notes=notes)


def trace_plan(plan: Plan, arch: ModelArch, gpu: GPU | None, *, optimizer_impl: OptimizerImpl | None = None,
               attention: Attention | None = None, layers: int | None = None, use_cache: bool = True,
               direct: bool = False) -> TraceReport:
    """Trace the program `plan` describes (plan already given its defaults: `planner.with_defaults`).

    `layers` traces a stack of that depth instead of the model's (for tests); `direct` traces the
    whole depth without extrapolation."""
    w = plan.workload
    if w.task == "inference" and (w.engine or "transformers").lower() not in _HF_ENGINES:
        raise MlrigError(f"trace replays Hugging Face transformers `generate`, not {w.engine}; pass "
                         "--engine transformers, or use `mlrig plan` without --exact for other engines")
    if w.gpu_layers is not None:
        raise MlrigError("trace does not model llama.cpp partial offload (--gpu-layers)")
    recipe = recipe_from_plan(plan, optimizer_impl=optimizer_impl, attention=attention)
    cfg, source = load_config(plan, arch)
    mode = layers if layers is not None else ("direct" if direct else "auto")
    key = cache_key(cfg, recipe, mode if isinstance(mode, int) else None) + ("-direct" if mode == "direct" else "")
    path = cache_dir() / f"{key}.json"
    model = arch.hf_id or arch.id
    if use_cache and path.is_file():
        try:
            rep = TraceReport.model_validate_json(path.read_text(encoding="utf-8"))
            rep.cached = True
            return _finish(rep, plan, arch, gpu)
        except (OSError, ValueError):
            pass  # a damaged cache entry: trace again
    require_torch()
    from mlrig.trace.engine import hf_config, layer_count, layer_pattern, run_trace

    started = time.perf_counter()
    config = hf_config(cfg)
    total = layers if layers is not None else layer_count(config)
    if total <= 0:
        raise MlrigError(f"config {source} names no decoder layers (num_hidden_layers)")
    depths = [total] if (direct or layers is not None) else layer_plan(*layer_pattern(config), total)
    runs = [run_trace(cfg, recipe, d) for d in depths]
    rep = _report_from_runs(runs, total, recipe, model, source, time.perf_counter() - started)
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(rep.model_dump_json(), encoding="utf-8")
        except OSError:
            rep.notes.append(f"could not write the trace cache in {path.parent}; set MLRIG_HOME to a writable folder")
    return _finish(rep, plan, arch, gpu)


def _finish(rep: TraceReport, plan: Plan, arch: ModelArch, gpu: GPU | None) -> TraceReport:
    """GPU capacity, fits, and the formula estimate beside the trace (recomputed: not cached)."""
    if gpu is not None:
        rep.gpu = gpu.id
        rep.gpu_capacity_gib = gpu.capacity_gib
        rep.fits = rep.nvidia_smi_gib <= gpu.capacity_gib
        from mlrig.planner import evaluate

        result = evaluate(plan, arch=arch, gpu=gpu)
        if result.memory is not None:
            rep.comparison = compare(rep, result)
    return rep


def compare(rep: TraceReport, result: Any) -> Comparison:
    """Component by component, trace (at its peak) against the formula (everything at once), with the
    reasons for the differences the trace can name."""
    mem = result.memory
    c = rep.by_category_gib
    r = rep.recipe
    work = sum(c.get(k, 0.0) for k in ("activations", "logits_loss", "temporaries", "weight_copies"))
    formula_alloc = None
    if r.task == "train":
        live = mem.weights_gib + mem.gradients_gib + mem.optimizer_gib + mem.activations_gib
        formula_alloc = round(live, 4)
    rows = [("parameters", c.get("parameters", 0.0), mem.weights_gib),
            ("gradients", c.get("gradients", 0.0), mem.gradients_gib),
            ("optimizer state", c.get("optimizer_state", 0.0), mem.optimizer_gib),
            ("optimizer temporaries", c.get("optimizer_temporaries", 0.0), 0.0),
            ("KV cache", c.get("kv_cache", 0.0), mem.kv_cache_gib),
            ("activations, logits, temporaries", round(work, 4), mem.activations_gib)]
    rows = [(n, round(t, 4), round(f, 4)) for n, t, f in rows if t or f]
    if formula_alloc is not None:
        rows.append(("allocated (live tensors)", rep.peak_allocated_gib, formula_alloc))
    rows.append(("nvidia-smi (reserved + CUDA context)", rep.nvidia_smi_gib, mem.per_gpu_gib))
    ex: list[str] = []
    diff = rep.nvidia_smi_gib - mem.per_gpu_gib
    ex.append(f"trace {rep.nvidia_smi_gib:.2f} GiB vs formula {mem.per_gpu_gib:.2f} GiB "
              f"({diff:+.2f} GiB, {diff / max(mem.per_gpu_gib, 1e-9):+.1%}); the trace's peak is in the "
              f"{rep.peak_phase}")
    if r.task == "train":
        if r.weights_dtype == "fp32" and r.autocast:
            ex.append("mixed precision as AMP runs it: fp32 weights (4 B/param) and fp32 gradients, where the "
                      "formula books 16-bit weights and gradients plus a 4 B fp32 master copy in the optimizer")
        opt_t = c.get("optimizer_temporaries", 0.0)
        if opt_t > 0.01:
            ex.append(f"{r.optimizer} ({r.optimizer_impl}) holds {opt_t:.2f} GiB of temporaries during the step "
                      "(foreach: a parameter-sized sqrt(v) buffer); the formula has none")
        elif r.optimizer == "adamw" and r.optimizer_impl == "fused" and rep.peak_phase == "optimizer":
            ex.append("fused AdamW updates in place: no parameter-sized temporaries at the step")
        if r.gradient_checkpointing and rep.peak_phase in ("optimizer", "backward"):
            ex.append(f"gradient checkpointing: at this {rep.peak_phase} peak only {work:.2f} GiB of activations "
                      "and working memory are live (the gradients have taken their place); the formula adds "
                      f"{mem.activations_gib:.2f} GiB of activations on top of the gradients")
        if r.method != "full" and c.get("parameters", 0.0) > mem.weights_gib * 1.05:
            ex.append(f"{r.method}: the trace's parameters ({c.get('parameters', 0.0):.2f} GiB) include fp32 "
                      "adapters and, for QLoRA, the norms, embeddings and output head upcast to fp32 by "
                      "PEFT's prepare_model_for_kbit_training")
    lg = c.get("logits_loss", 0.0)
    if lg > 0.05:
        ex.append(f"logits and loss: {lg:.2f} GiB live at the peak (HF upcasts logits to fp32 for the loss and "
                  "keeps log-softmax for backward)")
    slack = rep.peak_reserved_gib - rep.peak_allocated_gib
    from mlrig.estimators.memory import CAL

    ex.append(f"caching allocator: reserved - allocated = {slack:.2f} GiB "
              f"({slack / max(rep.peak_allocated_gib, 1e-9):.1%} of allocated; the formula's training factors are "
              f"x{CAL.training_static_slack:g} on weights and states, x{CAL.training_fragmentation:g} on "
              "per-step tensors)")
    return Comparison(formula_allocated_gib=formula_alloc, formula_per_gpu_gib=mem.per_gpu_gib,
                      rows=rows, explanations=ex)


__all__ = ["INSTALL_HINT", "cache_dir", "combine", "layer_plan", "load_config", "require_torch", "trace_plan"]
