"""No engine given on a desktop card that the model does not fit: the fixes include the GGUF build its users run."""

from __future__ import annotations

from mlrig.fixes import Fix, make_it_fit
from mlrig.planner import evaluate, parse_plan, resolve_arch, resolve_hardware


def fixes_for(model: str, gpu_name: str, **workload: object) -> list[Fix]:
    plan = parse_plan({"model": model, "workload": {"task": "inference", **workload}, "hardware": {"gpu": gpu_name}})
    arch, gpu = resolve_arch(plan), resolve_hardware(plan)
    result = evaluate(plan, arch=arch, gpu=gpu)
    assert not result.fits
    return make_it_fit(plan, arch, gpu, result)


def test_8b_on_a_12gb_geforce_offers_a_gguf_precision_beside_fp8() -> None:
    fixes = fixes_for("llama-3.1-8b", "RTX 3060")
    flags = [f.flags for f in fixes]
    assert "--precision fp8" in flags  # the serving engine's own smaller format stays first
    gguf = next(f for f in fixes if f.flags == "--precision q8_0")
    assert gguf.note is not None and "runs on llama.cpp" in gguf.note
    assert gguf.per_gpu_gib <= gguf.gpu_capacity_gib


def test_70b_on_a_4090_offers_q4_k_m_with_layers_on_the_cpu() -> None:
    fixes = fixes_for("llama-3.1-70b", "RTX 4090")
    partial = next(f for f in fixes if f.flags.startswith("--precision q4_k_m --ngl "))
    layers = int(partial.flags.split()[-1])
    assert 1 <= layers < 80
    assert partial.note is not None and "host RAM" in partial.note
    assert partial.tok_s is not None and partial.tok_s < 10  # CPU layers bound it: a few tok/s, not 20+


def test_no_gguf_offer_on_a_datacentre_card_or_with_an_engine_given() -> None:
    datacentre = fixes_for("llama-3.1-70b", "A100 40GB")
    assert all("(GGUF)" not in f.change and "--ngl" not in f.flags for f in datacentre)
    assert all("(GGUF)" not in f.change for f in fixes_for("llama-3.1-8b", "RTX 3060", engine="vllm"))
