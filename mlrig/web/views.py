"""Figures the pages draw besides the CLI's JSON: the roofline points and "fits on" across the catalog.

No formulas here: the roofline's FLOPs and bytes per pass come from the speed model's own pure
functions (`mlrig.estimators.performance.prefill_cost` / `decode_cost`, `peak_tflops`), at the context the
speed model uses for decode (prompt + half the output), and the attained rates are the plan's reported
speeds (`ttft_ms`, `decode_tok_s`). "Fits on" is the planner run for the same plan on each catalog GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlrig.catalog.models import ModelArch


def roofline(data: dict[str, Any], result: dict[str, Any], arch: ModelArch | None = None) -> dict[str, Any] | None:
    """Ceilings (datasheet peak TFLOPS for the GEMM dtype, memory GB/s) and the prefill and decode passes
    as (arithmetic intensity FLOP/byte, attained TFLOPS per GPU). None for training or without figures."""
    from mlrig.estimators import performance as perf
    from mlrig.planner import parse_plan, resolve_arch, resolve_hardware, resolve_plan

    speed = result.get("performance") or {}
    if result.get("error") or not speed.get("decode_tok_s") or not speed.get("ttft_ms"):
        return None
    p = parse_plan(data)
    if p.workload.task != "inference":
        return None
    arch = arch or resolve_arch(p)
    gpu = resolve_hardware(p)
    r = resolve_plan(p, arch=arch, gpu=gpu)[0]  # defaults taken; with replicas, one replica's plan and batch
    p = r.plan
    w = p.workload
    engine = r.engine or ""
    peak = perf.peak_tflops(gpu, perf.gemm_dtype_on(gpu, r.precision, engine, w.engine_version), engine)
    if not peak:
        return None
    tp = p.hardware.tensor_parallel
    b, prompt = w.batch_size, max(1, w.prompt_tokens)
    emb = r.weight_parts.get("embedding")
    experts, vision = r.weight_parts.get("experts_routed"), r.weight_parts.get("vision")
    pre = perf.prefill_cost(arch, r.weight_bytes, r.kv_bytes_per_element, b, prompt, w.flash_attention,
                            embedding_bytes=emb, expert_bytes=experts, vision_bytes=vision)
    dec = perf.decode_cost(arch, r.weight_bytes, r.kv_bytes_per_element, b, w.mean_decode_context,
                           perf.decode_kv_read_factor(arch, engine, w.flash_attention, w.engine_version,
                                                     r.kv_bytes_per_element), embedding_bytes=emb,
                           expert_bytes=experts, vision_bytes=vision)
    points = []
    for name, cost, seconds in (("prefill", pre, speed["ttft_ms"] / 1e3), ("decode", dec, 1.0 / speed["decode_tok_s"])):
        if cost.bytes > 0 and seconds > 0:
            points.append({"name": name, "intensity_flop_per_byte": cost.flops / cost.bytes,
                           "attained_tflops": cost.flops / seconds / tp / 1e12})
    bw = gpu.memory_bandwidth_gb_s
    return {"gpu": gpu.id, "peak_tflops": peak, "bandwidth_gb_s": bw, "ridge_flop_per_byte": peak * 1e3 / bw,
            "points": points, "engine": engine}


def fits_on(data: dict[str, Any], arch: ModelArch | None = None) -> list[dict[str, Any]]:
    """The same plan on every catalog GPU (same count): fits?, memory per GPU, speed. Fitting first, fastest
    first. Rows that cannot be evaluated (e.g. a precision the GPU lacks) are left out."""
    from mlrig.catalog.gpus import load_gpus
    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate, parse_plan, resolve_arch

    base = parse_plan(data)
    arch = arch or resolve_arch(base)
    training = base.workload.task != "inference"
    rows: list[dict[str, Any]] = []
    for g in load_gpus():
        d = {**data, "hardware": {**(data.get("hardware") or {}), "gpu": g.id}}
        try:
            r = evaluate(d, arch=arch, gpu=g)
        except MlrigError:
            continue
        if r.memory is None or r.performance is None:
            continue
        speed = r.performance.train_tokens_per_s if training else r.performance.decode_tok_s
        rows.append({"gpu": g.id, "name": g.name, "fits": bool(r.fits), "per_gpu_gib": r.memory.per_gpu_gib,
                     "capacity_gib": r.memory.gpu_capacity_gib, "speed": speed, "bound": r.performance.bound})
    rows.sort(key=lambda r: (not r["fits"], -(r["speed"] or 0.0)))
    return rows
