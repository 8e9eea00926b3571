"""The resolved plan (issue 15): a precision is parsed once, and estimators never parse strings again."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig import quant
from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import estimate_memory
from mlrig.estimators.resolved import resolve
from mlrig.estimators.speed import estimate_performance
from mlrig.planner import parse_plan, with_defaults


@pytest.mark.parametrize("spelling,name,family", [
    ("Q4_K_M", "q4_k_m", "kquant"), ("iq4_xs", "iq4_xs", "kquant"), ("q4_0", "q4_0", "legacy"),
    ("q8_0", "q8_0", "q8"), ("fp8-dynamic", "fp8", "q8"), ("gptq-8bit", "gptq-int8", "q8"),
    ("mxfp4", "mxfp4", "fp4"), ("nvfp4", "nvfp4", "fp4"), ("awq", "awq", "gpu4"), ("bnb-4bit", "nf4", "gpu4"),
    ("exl2-4.65", "exl2-4.65", "gpu4"), ("bfloat16", "bf16", "f16"), ("bf16-amp", "bf16-mixed", "f16"),
])
def test_a_spelling_parses_to_its_canonical_name_and_family(spelling: str, name: str, family: str) -> None:
    p = quant.parse_precision(spelling)
    assert (p.name, p.family) == (name, family)
    assert quant.parse_precision(p) is p  # a parsed precision is never parsed again
    assert p.llama_cpp_only == (family in ("kquant", "legacy") or name == "q8_0")


def test_gemm_dtype_and_kv_default_follow_the_format() -> None:
    fp8, q4, fp32, nf4 = (quant.parse_precision(x) for x in ("fp8", "q4_k_m", "fp32", "nf4"))
    assert fp8.gemm_dtype("vllm") == "fp8" and fp8.gemm_dtype("llama.cpp") == "fp16"  # no fp8 kernels there
    assert fp32.gemm_dtype("transformers") == "fp32" and q4.gemm_dtype("llama.cpp") == "fp16"
    # the KV cache keeps the activations' 16-bit dtype under weight-only or 8-bit weights
    assert (fp8.kv_default, q4.kv_default, fp32.kv_default, nf4.kv_default) == ("bf16", "fp16", "fp32", "bf16")


PLANS: list[dict[str, Any]] = [
    {"model": "llama-3.1-8b", "workload": {"precision": "Q4_K_M"}, "hardware": {"gpu": "rtx-4090"}},
    {"model": "llama-3.1-70b", "workload": {"precision": "fp8", "batch_size": 8},
     "hardware": {"gpu": "h100-sxm-80gb", "count": 2}},
    {"model": "qwen3-30b-a3b", "workload": {"precision": "awq", "load": "concurrency", "batch_size": 16},
     "hardware": {"gpu": "l40s"}},
    {"model": "llama-3.1-8b", "workload": {"task": "finetune", "precision": "bf16"},
     "training": {"method": "qlora"}, "hardware": {"gpu": "rtx-3090"}},
    {"model": "llama-3.1-8b", "workload": {"task": "pretrain", "precision": "fp8"},
     "training": {"zero_stage": 3}, "hardware": {"gpu": "h100-sxm-80gb", "count": 8}},
]


@pytest.mark.parametrize("data", PLANS, ids=lambda d: f"{d['model']}-{d['workload'].get('task', 'inference')}")
def test_estimators_parse_no_precision_string(data: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Once resolved, memory and speed read the parsed precision: neither the precision parser nor
    the KV-dtype reader is called again (counted on their uncached entry points)."""
    p = parse_plan(data)
    arch, gpu = resolve_model(p.model.name or ""), resolve_gpu(p.hardware.gpu)
    p, _ = with_defaults(p, gpu, arch)
    r = resolve(arch, p, gpu)
    calls: list[str] = []
    real = quant.normalise_precision

    def counting(precision: str) -> str:
        calls.append(precision)
        return real(precision)

    quant._parse.cache_clear()
    quant.kv_bytes_per_element.cache_clear()
    monkeypatch.setattr(quant, "normalise_precision", counting)
    memory = estimate_memory(r)
    perf = estimate_performance(r, memory)
    assert calls == []
    assert perf.decode_tok_s or perf.train_tokens_per_s or perf.throughput_tok_s


def test_varied_keeps_the_parse_and_follows_engine_and_gpu_count() -> None:
    arch, gpu = resolve_model("llama-3.1-8b"), resolve_gpu("rtx-4090")
    r = resolve(arch, parse_plan({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m", "engine": "llama.cpp"},
                                  "hardware": {"gpu": "rtx-4090"}}), gpu)
    assert r.engine == "llama.cpp" and r.link is None
    old = r.varied(engine_version="b2800")
    assert old.engine == "llama.cpp-2024" and old.precision is r.precision and old.weight_bytes == r.weight_bytes
    two = r.varied(count=2)
    assert two.link is not None and two.hardware.count == 2 and r.hardware.count == 1  # r itself unchanged
    with pytest.raises(TypeError, match="not a workload or hardware field"):
        r.varied(lora_rank=8)


def test_a_variant_is_the_resolved_plan_init_would_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ResolvedPlan.with_plan` builds a variant by copying the fields (no __init__, whose eleven frozen
    sets cost more than the rest of it: `mlrig eval` makes one per line): the same object __init__
    would build, field for field, for another batch, another engine and another GPU count."""
    import dataclasses

    from mlrig.estimators.resolved import ResolvedPlan

    p = parse_plan({"model": "llama-3.1-8b", "workload": {"precision": "fp8", "engine": "vllm"},
                    "hardware": {"gpu": "h100-sxm-80gb", "count": 2}})
    p, _ = with_defaults(p, resolve_gpu("h100-sxm-80gb"), resolve_model("llama-3.1-8b"))
    r = resolve(resolve_model("llama-3.1-8b"), p, resolve_gpu("h100-sxm-80gb"))
    variants = [p.model_copy(update={"id": "b8", "workload": p.workload.model_copy(update={"batch_size": 8})}),
                p.model_copy(update={"workload": p.workload.model_copy(update={"engine": "sglang"})}),
                p.model_copy(update={"hardware": p.hardware.model_copy(update={"count": 4, "tensor_parallel": 4})})]
    expected = [resolve(r.arch, q, r.gpu) for q in variants]
    assert not hasattr(ResolvedPlan, "__post_init__") and not hasattr(ResolvedPlan, "__slots__")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("ResolvedPlan.__init__ called")

    monkeypatch.setattr(ResolvedPlan, "__init__", refuse)
    for q, want in zip(variants, expected, strict=True):
        got = r.with_plan(q)
        assert type(got) is ResolvedPlan and got.plan is q
        assert dataclasses.asdict(got) == dataclasses.asdict(want) and got == want
