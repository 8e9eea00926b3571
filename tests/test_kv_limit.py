"""A static batch larger than the engine's KV pool runs in waves (mlrig/estimators/kv_limit.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mlrig.estimators.kv_limit import kv_limited_running_batch, static_batch_time
from mlrig.estimators.performance import static_inference
from mlrig.planner import evaluate, resolve_plan

# ARGONNE-0035's setup: Llama-3-70B fp16, TP4 on A100 SXM4 40GB, TensorRT-LLM 0.11, 64 x (1,024 + 1,024)
TRT_70B = {"model": {"name": "meta-llama/Meta-Llama-3-70B"},
           "workload": {"task": "inference", "precision": "fp16", "engine": "trt-llm", "engine_version": "0.11.0",
                        "load": "static", "batch_size": 64, "prompt_tokens": 1024, "output_tokens": 1024,
                        "max_num_seqs": 64},
           "hardware": {"gpu": "NVIDIA A100 SXM4 40GB", "count": 4, "tensor_parallel": 4}}


def _pool(engine: str, kv_tokens: int) -> SimpleNamespace:
    return SimpleNamespace(engine=engine, kv_cache_capacity_tokens=kv_tokens, offload_fraction=0.0, fits=True)


def test_running_batch_by_scheduler_policy() -> None:
    """Hand-checked: 129,760 tokens hold 1,024 + 1,024-token sequences 84 at a time at their mean footprint
    (vLLM: 1,536 tokens each) and 63 at full length (TensorRT-LLM GUARANTEED_NO_EVICT: 2,048)."""
    assert kv_limited_running_batch(129_760, 1024, 1024, "vllm") == 84
    assert kv_limited_running_batch(129_760, 1024, 1024, "trt-llm") == 63
    assert kv_limited_running_batch(100, 1024, 1024, "vllm") == 1  # never 0: one sequence still runs


def test_no_evict_batch_runs_in_whole_waves() -> None:
    """64 sequences on a 68,000-token TensorRT-LLM pool: 68,000 // 2,048 = 33 run, then the other 31;
    the batch takes T(33) + T(31), hand-composed from the static batch times."""
    r, _ = resolve_plan(TRT_70B)
    sw = static_batch_time(r, _pool("trt-llm", 68_000), 64)
    assert sw is not None and sw.running == 33 and sw.waves == 2 and sw.preempted == 0
    t33 = 33 * 1024 / float(static_inference(r, 33, 1024, 1024).throughput_tok_s)
    t31 = 31 * 1024 / float(static_inference(r, 31, 1024, 1024).throughput_tok_s)
    assert sw.total_s == pytest.approx(t33 + t31, rel=1e-9)
    # a pool that holds the whole batch at full length changes nothing
    assert static_batch_time(r, _pool("trt-llm", 64 * 2048), 64) is None


def test_preempting_engine_pays_recompute_only_past_the_pool() -> None:
    """vLLM: 64 x 2,048 tokens need 131,072; a 129,760-token pool (ARGONNE-0133's) runs all 64 at their
    mean footprint, but 64 - 129,760 // 2,048 = 1 is preempted near the end and re-prefilled."""
    plan = {**TRT_70B, "workload": {**TRT_70B["workload"], "engine": "vllm", "engine_version": "0.6.1"},
            "hardware": {"gpu": "AMD Instinct MI300X", "count": 1}}
    del plan["workload"]["max_num_seqs"]  # type: ignore[attr-defined]
    r, _ = resolve_plan(plan)
    sw = static_batch_time(r, _pool("vllm", 129_760), 64)
    assert sw is not None and sw.running == 64 and sw.waves == 1.0 and sw.preempted == 1 and sw.recompute_s > 0
    # a pool a third of that size runs ~1/3 of the batch at a time: ~3 rounds, and throughput falls
    small = static_batch_time(r, _pool("vllm", 129_760 // 3), 64)
    assert small is not None and small.running == 28 and small.waves == pytest.approx(64 / 28)
    assert 64 * 1024 / small.total_s < 64 * 1024 / sw.total_s


def test_plan_applies_waves_and_says_so() -> None:
    """Through `evaluate` (what plan / eval / validate run): the TensorRT-LLM batch that outgrows its pool
    is slower per batch than the same batch on a pool that held it, and the explanation names the waves."""
    res = evaluate(TRT_70B)
    assert res.performance is not None and res.kv_cache_capacity_tokens is not None
    n = res.kv_cache_capacity_tokens // 2048
    assert n < 64
    assert f"runs {n} of the 64 sequences at once" in (res.performance.explanation or "")
    r, _ = resolve_plan(TRT_70B)
    at_once = float(static_inference(r, 64, 1024, 1024).throughput_tok_s)
    assert res.performance.throughput_tok_s is not None and res.performance.throughput_tok_s < 0.75 * at_once


def test_max_num_seqs_caps_a_static_batch() -> None:
    """512 sequences with max_num_seqs 256 and a pool that holds them all: two whole waves of 256, so the
    batch's throughput is the 256-batch's (same-length sequences finish together)."""
    plan = {"model": "llama-3-8b", "hardware": {"gpu": "h100-sxm"},
            "workload": {"precision": "fp16", "engine": "vllm", "load": "static", "batch_size": 512,
                         "prompt_tokens": 128, "output_tokens": 128, "max_num_seqs": 256}}
    res = evaluate(plan)
    r, _ = resolve_plan(plan)
    assert res.performance is not None and res.performance.throughput_tok_s is not None
    assert res.performance.throughput_tok_s == pytest.approx(float(static_inference(r, 256, 128, 128).throughput_tok_s))
    assert "2 waves" in (res.performance.explanation or "")


def test_trt_llm_session_runtime_runs_the_batch_it_is_given() -> None:
    """TensorRT-LLM before 0.8 (gptSessionBenchmark's static batching): no scheduler holds sequences back."""
    plan = {**TRT_70B, "workload": {**TRT_70B["workload"], "engine_version": "0.6.1"}}
    r, _ = resolve_plan(plan)
    assert static_batch_time(r, _pool("trt-llm", 10_000), 64) is None


def test_the_array_pass_prices_waves_itself_and_equals_the_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mlrig.grid`'s array pass runs `kv_limit.static_waves` on the batches that outgrow the pool (no
    configuration goes one by one for it: a sweep of vLLM at large batch x long context was 400x slower
    that way), and every figure equals `plan`'s."""
    import math

    import numpy as np

    from mlrig import grid

    plan = {"model": "llama-3.1-8b", "hardware": {"gpu": "h100-sxm-80gb"},
            "workload": {"precision": "bf16", "engine": "vllm"}}
    b = np.array([1, 8, 64, 256, 512, 300])
    p = np.array([512, 8000, 16000, 4000, 1000, 30000])
    o = np.array([128, 2000, 4000, 1000, 0, 500])
    calls: list[bool] = []
    original = grid._arrays

    def counting(*args: object, **kwargs: object) -> bool:
        filled = original(*args, **kwargs)  # type: ignore[arg-type]
        calls.append(filled)
        return filled

    monkeypatch.setattr(grid, "_arrays", counting)
    g = grid.evaluate_grid(plan, b, p + o, p, o)
    monkeypatch.undo()
    assert calls and all(c is True for c in calls)  # every group filled by the array pass, none one by one
    waves = 0
    for i in range(len(b)):
        w = {**plan["workload"], "batch_size": int(b[i]), "context_tokens": int(p[i] + o[i]),
             "prompt_tokens": int(p[i]), "output_tokens": int(o[i])}
        r = evaluate({**plan, "workload": w})
        assert r.performance is not None
        waves += "runs" in (r.performance.explanation or "") and "at once" in (r.performance.explanation or "")
        for k in ("throughput_tok_s", "tpot_ms", "ttft_ms", "decode_tok_s"):
            v, gv = getattr(r.performance, k), getattr(g, k)[i]
            assert (v is None and math.isnan(gv)) or v == gv
    assert waves >= 3  # the case is exercised
