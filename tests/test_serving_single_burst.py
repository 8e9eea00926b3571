"""One burst of N prompts sent at once into an idle vLLM engine, written two ways: `load: offline` with
num_requests N, and `load: concurrency` with batch_size = num_requests = N (every user sends exactly one
request, all at t = 0). Both describe the same run and must get the same figures
(serving.single_burst_loop)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.planner import evaluate

# VLLMARC-0002's setup (vLLM 0.10.2 XPU on one Arc Pro B60, gpt-oss-20b, 8,192-token budget)
ARC: dict[str, Any] = {
    "model": {"name": "openai/gpt-oss-20b"},
    "workload": {"cuda_graphs": False, "task": "inference", "precision": "mxfp4", "engine": "vllm",
                 "engine_version": "0.10.2", "prompt_tokens": 1024, "output_tokens": 1024,
                 "max_num_batched_tokens": 8192, "max_model_len": 16384, "gpu_memory_utilization": 0.9},
    "hardware": {"gpu": "Intel Arc Pro B60", "count": 1, "tensor_parallel": 1}}


def _llama(gpu: str, version: str, count: int = 1) -> dict[str, Any]:
    # vLLM 0.6.3 is V0; Llama 3.1's 131,072-token max_model_len (> 32K) turns its chunked prefill on by default
    return {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": version,
                         "prompt_tokens": 2048, "output_tokens": 256},
            "hardware": {"gpu": gpu, "count": count}}


def _both(plan: dict[str, Any], n: int) -> tuple[Any, Any]:
    off = {**plan, "workload": {**plan["workload"], "load": "offline", "num_requests": n}}
    loop = {**plan, "workload": {**plan["workload"], "load": "concurrency", "batch_size": n, "num_requests": n}}
    return evaluate(off).performance, evaluate(loop).performance


@pytest.mark.parametrize(("plan", "n"), [
    (ARC, 75),  # GDDR, V1 (the report: 9.7 s offline against 5.4 s as a closed loop)
    (ARC, 16),
    (_llama("H100 SXM", "0.10.2"), 64),  # HBM, V1
    (_llama("L40S", "0.10.2"), 8),  # GDDR, V1
    (_llama("H100 SXM", "0.6.3"), 64),  # HBM, V0 with chunked prefill
    (_llama("L40S", "0.6.3"), 64),  # GDDR, V0 with chunked prefill
])
def test_offline_burst_and_one_round_closed_loop_agree(plan: dict[str, Any], n: int) -> None:
    off, loop = _both(plan, n)
    assert off is not None and loop is not None
    for figure in ("ttft_ms", "tpot_ms", "throughput_tok_s"):
        a, b = getattr(off, figure), getattr(loop, figure)
        assert a == pytest.approx(b, rel=0.02), figure
    assert "one burst" in (loop.explanation or "")


@pytest.mark.parametrize("version", ["0.6.3", "0.10.2"])
def test_burst_keeps_the_whole_burst_measured_on_its_rows(version: str) -> None:
    # V0 (0.6.3, LHLMI300X) and V1 (0.10.2, VLLMARC): the offline burst's TTFT is the static batch's (every first
    # token at the burst's end), and the closed loop of one round now matches it (before, it priced the median
    # member after half the burst)
    plan = _llama("H100 SXM", version)
    off, loop = _both(plan, 64)
    static = evaluate({**plan, "workload": {**plan["workload"], "load": "static", "batch_size": 64}}).performance
    assert off is not None and loop is not None and static is not None
    assert off.ttft_ms == pytest.approx(static.ttft_ms, rel=1e-9)
    assert loop.ttft_ms == pytest.approx(static.ttft_ms, rel=1e-9)


def test_a_burst_past_the_cap_is_left_to_the_closed_loop() -> None:
    # 512 users, 512 requests, 256 running at most (LDSINGH-0023's shape): the closed loop keeps its own pricing,
    # which reports the mean apart
    plan = _llama("H100 SXM", "0.10.2")
    plan["workload"].update(max_num_seqs=64, prompt_tokens=64, output_tokens=64)
    _, loop = _both(plan, 256)
    assert loop is not None and loop.ttft_mean_ms is not None
    assert "one burst" not in (loop.explanation or "")
