"""Memory estimator: published anchor figures, hand-checked KV cache, invariants."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlrig.catalog.gpus import GPU, resolve_gpu
from mlrig.catalog.models import ModelArch, resolve_model
from mlrig.errors import MlrigError
from mlrig.estimators.memory import (
    estimate_memory,
    kv_bytes_per_token,
    largest_true,
    max_batch_size,
    max_context_tokens,
    min_gpus,
    weights_per_gpu_bytes,
)
from mlrig.estimators.resolved import resolve
from mlrig.units import GiB
from mlrig.workload import Plan

LLAMA1_65B = ModelArch(id="llama-65b", hidden_size=8192, num_layers=80, num_heads=64, intermediate_size=22016,
                       vocab_size=32000)


def plan(model: str = "llama-3.1-8b", *, task: str = "inference", hw: dict[str, Any] | None = None,
         training: dict[str, Any] | None = None, **workload: Any) -> Plan:
    data: dict[str, Any] = {"model": model, "workload": {"task": task, **workload}, "hardware": hw or {}}
    if training is not None:
        data["training"] = training
    return Plan.model_validate(data)


def gpu(name: str = "rtx-4090") -> GPU:
    return resolve_gpu(name)


def test_full_adam_7b_is_16_bytes_per_param() -> None:
    arch = resolve_model("llama-2-7b")
    p = plan("llama-2-7b", task="finetune", training={"optimizer": "adamw"})
    est = estimate_memory(resolve(arch, p, gpu("h100-sxm-80gb")))
    b = est.breakdown
    states_gb = (b.weights_gib + b.gradients_gib + b.optimizer_gib) * GiB / 1e9
    assert states_gb == pytest.approx(16 * arch.total_params / 1e9, rel=0.01)
    assert 105 < states_gb < 115  # "a 7B model needs ~112 GB before activations"
    assert not est.fits


def test_3b_full_finetune_does_not_fit_a_3090() -> None:
    arch = resolve_model("llama-3.2-3b")
    est = estimate_memory(resolve(arch, plan("llama-3.2-3b", task="finetune", batch_size=1, context_tokens=512),
                          gpu("rtx-3090")))
    b = est.breakdown
    assert 45 < (b.weights_gib + b.gradients_gib + b.optimizer_gib) * GiB / 1e9 < 55
    assert not est.fits


def test_qlora_65b_fits_one_48gb_gpu() -> None:
    """QLoRA paper abstract: finetune a 65B model on a single 48 GB GPU."""
    p = plan(task="finetune", batch_size=1, context_tokens=512,
             training={"method": "qlora", "optimizer": "paged-adamw", "gradient_checkpointing": True})
    est = estimate_memory(resolve(LLAMA1_65B, p, gpu("rtx-a6000")))
    assert est.fits
    assert est.breakdown.per_gpu_gib > 30  # and not trivially
    full = plan(task="finetune", batch_size=1, context_tokens=512, training={"method": "lora"})
    assert not estimate_memory(resolve(LLAMA1_65B, full, gpu("rtx-a6000"))).fits


def test_rtx_4090_fits_exactly_what_3090_fits() -> None:
    for model in ("llama-3.1-8b", "qwen2.5-14b", "llama-3.2-3b"):
        arch = resolve_model(model)
        for precision in ("bf16", "q8_0", "q4_k_m", "nf4"):
            for batch in (1, 4):
                for ctx in (2048, 8192, 32768):
                    p = plan(model, precision=precision, batch_size=batch, context_tokens=ctx, engine="llama.cpp")
                    a = estimate_memory(resolve(arch, p, gpu("rtx-3090"))).fits
                    assert a == estimate_memory(resolve(arch, p, gpu("rtx-4090"))).fits, (model, precision, batch, ctx)


def test_kv_cache_llama31_8b_8192_tokens_bf16_is_one_gib() -> None:
    arch = resolve_model("llama-3.1-8b")  # 32 layers x 2 x 8 kv heads x 128 x 2 B = 128 KiB/token
    assert kv_bytes_per_token(arch, 8192, "bf16") * 8192 == GiB
    est = estimate_memory(resolve(arch, plan(context_tokens=8192, engine="transformers"), gpu("h100-sxm-80gb")))
    assert est.breakdown.kv_cache_gib == pytest.approx(1.0)


def test_kv_tp_split_and_replication() -> None:
    arch = resolve_model("llama-3.1-8b")  # 8 KV heads
    one = kv_bytes_per_token(arch, 4096, "bf16")
    assert kv_bytes_per_token(arch, 4096, "bf16", tp=8) == one / 8
    assert kv_bytes_per_token(arch, 4096, "bf16", tp=16) == one / 8  # heads replicated beyond 8


def test_mla_kv_deepseek_v3() -> None:
    arch = resolve_model("deepseek-v3")
    assert arch.kv_values_per_token(4096) == 576 * 61
    assert kv_bytes_per_token(arch, 4096, "bf16", tp=8) == 576 * 61 * 2  # latent replicated per rank


def test_sliding_window_mistral_v01_holds_4096() -> None:
    arch = resolve_model("mistralai/Mistral-7B-v0.1")
    at_32k = kv_bytes_per_token(arch, 32768, "fp16") * 32768
    assert at_32k == pytest.approx(kv_bytes_per_token(arch, 4096, "fp16") * 4096)


def test_vllm_capacity_example() -> None:
    """Llama-3.1-8B bf16 on an H100 (79.65 GiB on the board, 79.19 GiB to the CUDA driver, which is what vLLM
    reports), gpu_memory_utilization 0.95: pool = 75.23 - 14.96 weights - ~1.9 activation - 0.25 non-torch
    ~= 58.1 GiB, at 128 KiB/token in blocks of 16 -> ~476k tokens (vLLM v0.19 logged 476,016)."""
    h100 = gpu("h100-sxm-80gb")
    assert h100.memory_gib == 79.65
    est = estimate_memory(resolve(resolve_model("llama-3.1-8b"),
                          plan(engine="vllm", gpu_memory_utilization=0.95, context_tokens=8192, batch_size=32), h100))
    assert est.kv_cache_capacity_tokens is not None
    assert est.kv_cache_capacity_tokens % 16 == 0
    assert est.kv_cache_capacity_tokens == pytest.approx(476_016, rel=0.005)  # 1 % before the driver reservation
    assert est.breakdown.per_gpu_gib == pytest.approx(0.95 * 79.19, rel=1e-3)  # whole reservation
    assert est.fits and est.batch_fits
    assert est.max_concurrent_sequences == pytest.approx(est.kv_cache_capacity_tokens / 8192)  # ~58
    crowded = estimate_memory(resolve(resolve_model("llama-3.1-8b"), plan(engine="vllm", gpu_memory_utilization=0.95,
                                                                  context_tokens=8192, batch_size=64), h100))
    assert crowded.fits and not crowded.batch_fits  # starts, but 64 x 8192 tokens queue


def test_vllm_refuses_when_weights_do_not_fit() -> None:
    est = estimate_memory(resolve(resolve_model("llama-3.1-70b"), plan("llama-3.1-70b", engine="vllm"),
                                  gpu("h100-sxm-80gb")))
    assert not est.fits
    assert est.kv_cache_capacity_tokens == 0


def test_bad_input_is_a_one_line_error() -> None:
    with pytest.raises(MlrigError):
        estimate_memory(resolve(resolve_model("llama-3.1-8b"), plan(precision="q9"), gpu()))
    with pytest.raises(MlrigError):
        estimate_memory(resolve(resolve_model("llama-3.1-8b"), plan(task="finetune", training={"optimizer": "magic"}),
                                gpu()))


def test_inverse_questions() -> None:
    arch = resolve_model("llama-3.1-8b")
    p = plan(precision="q4_k_m", engine="llama.cpp", context_tokens=8192)
    b = max_batch_size(arch, p, gpu())
    assert b >= 1
    p_b = plan(precision="q4_k_m", engine="llama.cpp", context_tokens=8192, batch_size=b)
    assert estimate_memory(resolve(arch, p_b, gpu())).fits
    p_b1 = plan(precision="q4_k_m", engine="llama.cpp", context_tokens=8192, batch_size=b + 1)
    assert not estimate_memory(resolve(arch, p_b1, gpu())).fits
    ctx = max_context_tokens(arch, p, gpu())
    assert 8192 < ctx < 1_000_000
    assert max_batch_size(resolve_model("llama-3.1-70b"), plan("llama-3.1-70b"), gpu()) == 0
    n = min_gpus(resolve_model("llama-3.1-70b"), plan("llama-3.1-70b", engine="vllm"), gpu("h100-sxm-80gb"))
    assert n == 2
    assert min_gpus(resolve_model("llama-3.1-405b"), plan("llama-3.1-405b"), gpu("rtx-4090"), max_gpus=8) is None


# ---- invariants -------------------------------------------------------------------------
MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mistralai/Mistral-7B-v0.1", "gpt-oss-20b", "llama-3.2-3b"]
ENGINES = [None, "vllm", "llama.cpp", "transformers", "sglang"]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from(ENGINES), st.integers(1, 64), st.integers(1, 64),
       st.integers(256, 65536))
def test_more_batch_or_context_never_less(model: str, engine: str | None, b1: int, b2: int, ctx: int) -> None:
    arch = resolve_model(model)
    lo, hi = sorted((b1, b2))
    g = gpu("h100-sxm-80gb")

    def used(batch: int, c: int) -> tuple[float, bool]:
        e = estimate_memory(resolve(arch, plan(model, engine=engine, batch_size=batch, context_tokens=c), g))
        return e.breakdown.per_gpu_gib, e.fits and e.batch_fits

    assert used(lo, ctx)[0] <= used(hi, ctx)[0] + 1e-9
    assert used(lo, ctx)[1] >= used(hi, ctx)[1]
    assert used(lo, ctx)[0] <= used(lo, ctx * 2)[0] + 1e-9


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from([1, 2, 4, 8]), st.integers(1, 8), st.integers(256, 8192))
def test_training_batch_and_zero3(model: str, n: int, batch: int, seq: int) -> None:
    arch = resolve_model(model)
    g = gpu("h100-sxm-80gb")

    def per_gpu(count: int, b: int) -> float:
        p = plan(model, task="finetune", batch_size=b, context_tokens=seq, hw={"count": count},
                 training={"zero_stage": 3, "seq_len": seq})
        return estimate_memory(resolve(arch, p, g)).breakdown.per_gpu_gib

    assert per_gpu(n * 2, batch) <= per_gpu(n, batch) + 1e-9
    assert per_gpu(n, batch) <= per_gpu(n, batch + 1) + 1e-9


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(MODELS), st.sampled_from([1, 2, 4]))
def test_more_tp_never_more_weights_and_fewer_bits_never_more(model: str, tp: int) -> None:
    arch = resolve_model(model)
    assert weights_per_gpu_bytes(arch, "bf16", tp * 2, 1) <= weights_per_gpu_bytes(arch, "bf16", tp, 1)
    for four, eight, sixteen in (("q4_k_m", "q8_0", "bf16"), ("int4", "int8", "fp16"), ("nf4", "int8", "bf16")):
        w4, w8, w16 = (weights_per_gpu_bytes(arch, p, tp, 1) for p in (four, eight, sixteen))
        assert w4 <= w8 <= w16


@pytest.mark.parametrize("threshold,lo,hi,expected", [(37, 1, 100, 37), (0, 1, 100, 0), (500, 1, 100, 100),
                                                      (1, 1, 1, 1), (5, 5, 9, 5)])
def test_largest_true_bisection(threshold: int, lo: int, hi: int, expected: int) -> None:
    calls: list[int] = []

    def pred(n: int) -> bool:
        calls.append(n)
        return n <= threshold

    assert largest_true(pred, lo, hi) == expected
    assert len(calls) <= 2 + (hi - lo).bit_length()  # a bisection, not a scan


def test_bf16_mixed_full_adam_is_16_bytes_per_param_split_4_4_8() -> None:
    # AMP (Lightning bf16-mixed): fp32 weights are the master copy, fp32 grads, two fp32 moments
    arch = resolve_model("llama-2-7b")
    p = plan("llama-2-7b", task="finetune", precision="bf16-mixed", training={"optimizer": "adamw"})
    b = estimate_memory(resolve(arch, p, gpu("h100-sxm-80gb"))).breakdown
    n_gb = arch.total_params / 1e9
    assert b.weights_gib * GiB / 1e9 == pytest.approx(4 * n_gb, rel=0.01)
    assert b.gradients_gib * GiB / 1e9 == pytest.approx(4 * n_gb, rel=0.01)
    assert b.optimizer_gib * GiB / 1e9 == pytest.approx(8 * n_gb, rel=0.01)


def test_bf16_mixed_lora_base_costs_twice_bf16() -> None:
    arch = resolve_model("llama-2-7b")
    tr = {"method": "lora", "lora_rank": 8, "lora_targets": ["q", "v"]}
    mixed = estimate_memory(resolve(arch, plan("llama-2-7b", task="finetune", precision="bf16-mixed", training=tr),
                            gpu("h100-sxm-80gb"))).breakdown
    true16 = estimate_memory(resolve(arch, plan("llama-2-7b", task="finetune", precision="bf16", training=tr),
                             gpu("h100-sxm-80gb"))).breakdown
    assert mixed.weights_gib == pytest.approx(2 * true16.weights_gib, rel=0.01)
    # autocast: 16-bit activations, plus the matmuls' 16-bit weight copies and fp32 layer inputs
    # (exact figures: test_training_memory_phases.test_autocast_keeps_16_bit_weight_copies_and_fp32_layer_inputs)
    assert mixed.activations_gib > true16.activations_gib


def test_paging_and_host_ram_notes_reach_the_output() -> None:
    """The notes written after the breakdown is built (a paged optimizer's spill, an offload that needs
    more host RAM than given) are in the plan's notes; before the resolved-plan rewrite they were lost."""
    from mlrig.planner import evaluate

    paged = evaluate({"model": "llama-3.1-70b", "workload": {"task": "finetune", "precision": "bf16"},
                      "training": {"method": "lora", "optimizer": "paged-adamw-8bit", "seq_len": 2048},
                      "hardware": {"gpu": "rtx-4090"}})
    assert paged.memory is not None and paged.memory.optimizer_gib == 0.0  # all of it paged out
    assert any(n.startswith("paged optimizer: 1.2 GiB") for n in paged.memory.notes)
    offload = evaluate({"model": "llama-3.1-8b", "workload": {"task": "finetune", "precision": "bf16"},
                        "training": {"method": "full", "offload": "optimizer", "seq_len": 2048},
                        "hardware": {"gpu": "rtx-4090", "host_ram_gib": 32}})
    assert not offload.fits and offload.memory is not None
    assert offload.memory.notes[-1].startswith("offload needs") and "only 32 GiB given" in offload.memory.notes[-1]


def test_largest_true_bisects_and_gallops_to_the_same_answer() -> None:
    """The bisection behind fit's limits: for a predicate true up to t, the largest n in [lo, hi] is
    min(t, hi) (lo - 1 if none), with or without the galloping start the largest batch uses."""
    import random

    from mlrig.estimators.memory import largest_true

    rng = random.Random(7)
    for _ in range(2000):
        lo = rng.randint(0, 5)
        hi = lo + rng.randint(0, 5000)
        t = rng.choice([rng.randint(-2, 50), rng.randint(0, 6000), hi, lo, lo - 1])
        want = min(t, hi) if t >= lo else lo - 1
        for gallop in (False, True):
            calls: list[int] = []

            def pred(n: int, t: int = t, calls: list[int] = calls) -> bool:
                calls.append(n)
                return n <= t

            assert largest_true(pred, lo, hi, gallop=gallop) == want, (lo, hi, t, gallop)
            assert all(lo <= n <= hi for n in calls)


def test_torchao_on_an_intel_gpu_keeps_the_bf16_load_reserved() -> None:
    """torchao's generate.py loads the bf16 checkpoint on the device and quantises it there; on NVIDIA the
    CUDA-graph capture empties the allocator's cache before the peak counters restart, on an Intel GPU
    nothing does, so the reported max_memory_reserved is the load's: bf16 weights + two 16-bit temporaries
    of the largest matrix (memory.TORCHAO_QUANT_TEMP_BYTES_PER_PARAM). Published (torchao README, Max 1100):
    int8wo peaks above bf16 there (18.60 vs 16.35 GB for Llama-3.1-8B), below it on an A100."""
    from mlrig.estimators.memory import TORCHAO_QUANT_TEMP_BYTES_PER_PARAM, estimate_memory

    def peak_gib(gpu: str, precision: str, version: str) -> float:
        p = Plan.model_validate({"model": "meta-llama/Llama-3.1-8B", "hardware": {"gpu": gpu},
                                 "workload": {"precision": precision, "engine": "gpt-fast", "engine_version": version,
                                              "batch_size": 1, "prompt_tokens": 6, "output_tokens": 200}})
        g = resolve_gpu(gpu)
        return estimate_memory(resolve(resolve_model("meta-llama/Llama-3.1-8B"), p, g)).breakdown.per_gpu_gib

    xpu = "Intel Data Center GPU Max 1100"
    int8_xpu, bf16_xpu = peak_gib(xpu, "int8", "torchao adc78b7"), peak_gib(xpu, "bf16", "torchao adc78b7")
    assert int8_xpu > bf16_xpu
    assert peak_gib("a100-sxm-80gb", "int8", "torchao adc78b7") < peak_gib("a100-sxm-80gb", "bf16", "torchao adc78b7")
    # gpt-fast's own flow loads a checkpoint quantised offline (quantize.py): no bf16 copy on the device
    assert peak_gib(xpu, "int8", "c9f683e") < bf16_xpu
    # hand check: 8,030,261,248 params x 2 B + 4 B x the 128,256 x 4,096 head + the 0.45 GiB context
    expected = (8_030_261_248 * 2 + TORCHAO_QUANT_TEMP_BYTES_PER_PARAM * 128_256 * 4_096) / GiB + 0.45
    assert int8_xpu == pytest.approx(expected, abs=0.01)
    assert int8_xpu == pytest.approx(18.60e9 / GiB, rel=0.05)  # TORCHAO-0034 (held out), as published
