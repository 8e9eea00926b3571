"""SGLang's card-sized memory default and the drain of varied-length offline runs (GPUStack's lab, issue 10)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import serving
from mlrig.estimators.engines import sglang_gpu_defaults, sglang_mem_fraction_static
from mlrig.estimators.performance import decode_step
from mlrig.planner import evaluate, resolve_plan


def _plan(**w: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {"precision": "bf16", "engine": "sglang", "engine_version": "0.5.5.post1",
                          "prompt_tokens": 217, "output_tokens": 202}
    wl.update(w)
    return {"model": {"name": "Qwen/Qwen3-32B"}, "workload": wl, "hardware": {"gpu": "H100 SXM"}}


# ---- SGLang's --mem-fraction-static from 0.5.3 --------------------------------------------------------
def test_sglang_mem_fraction_by_card_hand_checked() -> None:
    """server_args.py `_handle_gpu_memory_settings`: an 80 GB H100 (79.65 GiB, 81,562 MiB as nvidia-smi gives)
    at TP 1 takes 8,192-token chunks and a CUDA-graph cap of 256, so it reserves 512 + 1.5 x 8,192 + 2 x 256 +
    1/8 x 1,024 = 13,440 MiB: (81,562 - 13,440) / 81,562 = 0.835 (an SGLang issue reports 0.828 for Qwen3-32B
    on an H100 with a later release's extra reservations). At TP 8: 512 + 12,288 + 1,024 + 1,024 = 14,848."""
    h100 = resolve_gpu("H100 SXM")
    assert sglang_gpu_defaults(h100, 1) == (8192, 256) and sglang_gpu_defaults(h100, 8) == (8192, 512)
    mib = h100.memory_gib * 1024
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.5.post1") == pytest.approx((mib - 13440) / mib, abs=1e-3)
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.5.post1") == pytest.approx(0.835, abs=1e-3)
    assert sglang_mem_fraction_static(h100, 8, 1, "0.5.3") == pytest.approx((mib - 14848) / mib, abs=1e-3)
    # the current release takes the heuristic (with the prefill CUDA graphs' reserve from 0.5.10: 58 x 8 MiB more,
    # round((81,562 - 13,904) / 81,562, 3) = 0.830); releases before 0.5.3 their own rule (0.4.x: by TP size, 0.81
    # at TP 8, 0.88 at TP 1; tests/test_sglang_memory.py)
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.6") == 0.835
    assert sglang_mem_fraction_static(h100, 1, 1, None) == sglang_mem_fraction_static(h100, 1, 1, "0.5.10") == 0.83
    assert sglang_mem_fraction_static(h100, 8, 1, "0.4.3.post2") == 0.81
    assert sglang_mem_fraction_static(h100, 1, 1, "0.4.3.post2") == 0.88
    # a 24 GB card under 0.5.5: 2,048-token chunks, 24 graph slots, no 10 GiB floor
    l4 = resolve_gpu("L4")
    lmib = l4.memory_gib * 1024
    assert sglang_gpu_defaults(l4, 1, "0.5.5") == (2048, 24)
    assert sglang_mem_fraction_static(l4, 1, 1, "0.5.5") == pytest.approx((lmib - 3760) / lmib, abs=1e-3)


def test_sglang_kv_pool_follows_the_release() -> None:
    """Qwen3-32B bf16 (61 GiB of weights) on one H100: 0.835 of the card leaves ~5 GiB of KV pool where 0.88
    left ~8.6 GiB; GPUStack's SGLang 0.5.5 run peaked at ~1,330 output tok/s at a ~55 ms TPOT, ~70 running
    (GPUSTACK-0076, held out, checked only), where the 0.88 pool held ~110 sequences of its mean length."""
    new = evaluate(_plan(load="static", batch_size=1))
    old = evaluate(_plan(load="static", batch_size=1, engine_version="0.4.6"))
    assert new.memory.kv_cache_gib is not None and old.memory.kv_cache_gib is not None
    cap = resolve_gpu("H100 SXM").capacity_gib
    assert old.memory.kv_cache_gib - new.memory.kv_cache_gib == pytest.approx((0.88 - 0.835) * cap, rel=0.01)
    assert any("mem_fraction_static=0.835" in n for n in new.memory.notes)


# ---- the drain of a varied-length offline run ------------------------------------------------------
class _Pass:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds


def test_drain_hand_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """With every decode iteration taking c seconds and free prefills, N requests of exponential outputs
    (mean O) all running at once end with the longest of them, after O H_N iterations in expectation (H_N the
    N-th harmonic number: the order statistics of exponentials end O / N, O / (N - 1), ..., O apart), less
    the first, whose tokens came with the prefill: the run's throughput is N O / (c (O H_N - 1)).
    One request: O / (c (O - 1)), its TTFT (here 0) and O - 1 TPOTs."""
    r, _ = resolve_plan(_plan(load="offline", num_requests=100, lengths="varied"))
    c = 0.01
    monkeypatch.setattr(serving, "decode_step", lambda *a, **k: _Pass(c))
    monkeypatch.setattr(serving, "prefill_pass", lambda *a, **k: _Pass(0.0))
    h100 = math.fsum(1 / j for j in range(1, 101))  # 5.187
    assert serving.varied_offline_throughput(r, 100, 100, 0.0) == pytest.approx(100 * 202 / (c * (202 * h100 - 1)),
                                                                                 rel=1e-9)
    assert serving.varied_offline_throughput(r, 1, 1, 0.0) == pytest.approx(202 / (c * 201), rel=1e-9)
    # with a queue: 900 more completions at the full batch, 900 x O / 100 iterations of the steady step first
    steady = 0.03
    expect = 1000 * 202 / (900 * 202 / 100 * steady + c * (202 * h100 - 1))
    assert serving.varied_offline_throughput(r, 1000, 100, steady) == pytest.approx(expect, rel=1e-9)


def test_varied_offline_runs_drain_and_fixed_ones_do_not() -> None:
    """Varied lengths only lengthen an offline run: same tokens, a tail of small batches. A run that fits at
    once (N <= the running limit) loses most (1,000 ShareGPT requests at once on SGLang's H100 pool of a
    14B model: GPUSTACK-0003 measured 4,044 tok/s over 49.9 s, where the fixed-length static batch gives
    ~7,900); the TTFT of the burst is the same backlog either way, drained at the steady batch's completions,
    whose iterations are longer with varied lengths (their running sequences are the long ones:
    `serving.running_output_tokens`)."""
    base = {"model": {"name": "Qwen/Qwen3-14B"}, "hardware": {"gpu": "H100 SXM"},
            "workload": {"precision": "bf16", "engine": "sglang", "engine_version": "0.5.5.post1",
                         "prompt_tokens": 217, "output_tokens": 202, "load": "offline", "num_requests": 1000}}
    fixed = evaluate(base).performance
    varied_plan = {**base, "workload": {**base["workload"], "lengths": "varied"}}
    varied = evaluate(varied_plan).performance
    assert fixed is not None and varied is not None
    assert fixed.throughput_tok_s is not None and varied.throughput_tok_s is not None
    assert 0.4 * fixed.throughput_tok_s < varied.throughput_tok_s < 0.8 * fixed.throughput_tok_s
    assert varied.requests_per_s == pytest.approx(varied.throughput_tok_s / 202)
    assert "drain" in (varied.explanation or "") and "drain" not in (fixed.explanation or "")
    # a queued run (vLLM's cap of 256 on an A100) drains too, less: most of it runs at the full batch
    a100 = {**base, "hardware": {"gpu": "a100-sxm-80gb"},
            "workload": {**base["workload"], "engine": "vllm", "engine_version": "0.11.0"}}
    qf = evaluate(a100).performance
    qv = evaluate({**a100, "workload": {**a100["workload"], "lengths": "varied"}}).performance
    assert qf is not None and qv is not None and qf.throughput_tok_s and qv.throughput_tok_s
    assert 0.7 * qf.throughput_tok_s < qv.throughput_tok_s < qf.throughput_tok_s
    # By hand: the median request (rank 500) waits for 500 - 256 completions at 256 / (O x step) per s, then is
    # prefilled in one chunk iteration with the running decodes (`serving.offline_backlog`, `_admitted_ttft`).
    # The varied run's running sequences hold E[L^2] / (2 E[L]) = O = 202 output tokens (uncapped exponential
    # lengths), the fixed run's O / 2 = 101, so each of its iterations is longer by
    # d = t_dec(256, 217 + 202) - t_dec(256, 217 + 101) and its TTFT by (244 x 202 / 256 + 1) x d (~0.5 s).
    r_q, _ = resolve_plan(a100)
    d_ms = (decode_step(r_q, 256, 217 + 202).seconds - decode_step(r_q, 256, 217 + 101).seconds) * 1e3
    assert d_ms > 1.0
    assert qv.ttft_ms == pytest.approx(qf.ttft_ms + (244 * 202 / 256 + 1) * d_ms, rel=1e-6)
    assert "drain" in (qv.explanation or "")
    # more requests behind the same cap: the tail is a smaller share of the run
    more = evaluate({**a100, "workload": {**a100["workload"], "lengths": "varied", "num_requests": 4000}}).performance
    assert more is not None and more.throughput_tok_s is not None
    assert qv.throughput_tok_s / qf.throughput_tok_s < more.throughput_tok_s / qf.throughput_tok_s < 1.0


# ---- rows say the engine their page section ran ------------------------------------------------------
def _gpustack_rows() -> list[dict[str, Any]]:
    import json
    from importlib import resources

    text = resources.files("mlrig.data.calibration").joinpath("serving_gpustack_perflab.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_gpustack_rows_take_the_engine_their_section_names() -> None:
    """Each GPUStack row quotes the page section it comes from; a section that names one engine ('2. Quantization
    in TensorRT-LLM', '2. Parallelism in SGLang') ran that engine, whatever a copied serving command says. The
    Qwen3-32B H100 page's FP8 step under 'Quantization in TensorRT-LLM' quotes an SGLang command, but its summary
    counts it as TensorRT-LLM's quantisation step (+50.6 %) and the chunked-prefill step after it (+7.0 %) is
    `trtllm-serve` on the same checkpoint: GPUSTACK-0080/0081 are TensorRT-LLM 1.2.0rc1 (the page's release)."""
    import re

    names = {"tensorrt-llm": "trt-llm", "sglang": "sglang", "vllm": "vllm"}
    checked = 0
    for row in _gpustack_rows():
        m = re.search(r"section '([^']*)'", row["source_note"])
        assert m, row["id"]
        named = {e for k, e in names.items() if k in m.group(1).lower()}
        if len(named) == 1:
            checked += 1
            assert row["plan"]["workload"]["engine"] == named.pop(), row["id"]
    assert checked >= 10
    rows = {r["id"]: r for r in _gpustack_rows()}
    for rid in ("GPUSTACK-0080", "GPUSTACK-0081"):
        w = rows[rid]["plan"]["workload"]
        assert (w["engine"], w["engine_version"]) == ("trt-llm", "1.2.0rc1")
        assert rows[rid]["software"] == "TensorRT-LLM 1.2.0rc1"
