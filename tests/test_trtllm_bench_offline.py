"""trtllm-bench offline runs (TRTBENCH70-*): fixed-length waves under GUARANTEED_NO_EVICT
(serving.fixed_length_waves) and the FP8-cache decode attention read (performance.fp8_kv_decode_attention_bw_rel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import decode_step, fp8_kv_decode_attention_bw_rel
from mlrig.planner import evaluate, resolve_plan

CAL = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "calibration"

# Llama-3.1-70B FP8 weights + FP8 KV cache, TP 8 on 8x H100 SXM, TensorRT-LLM 0.16 (TRTBENCH70-0008's setup)
TRT_70B_FP8 = {"model": {"name": "meta-llama/Llama-3.1-70B-Instruct"},
               "workload": {"task": "inference", "precision": "fp8", "kv_cache_precision": "fp8", "engine": "trt-llm",
                            "engine_version": "0.16.0", "prompt_tokens": 128, "output_tokens": 16384,
                            "load": "offline", "num_requests": 400, "max_num_seqs": 2048,
                            "max_num_batched_tokens": 8192, "max_model_len": 25000},
               "hardware": {"gpu": "NVIDIA H100 SXM", "count": 8, "tensor_parallel": 8}}


def _plan(**workload: object) -> dict:
    return {**TRT_70B_FP8, "workload": {**TRT_70B_FP8["workload"], **workload}}


def _throughput(plan: dict) -> float:
    perf = evaluate(plan).performance
    assert perf is not None and perf.throughput_tok_s is not None
    return perf.throughput_tok_s


def test_offline_fixed_lengths_run_in_whole_waves() -> None:
    """5 requests at 2 at a time are 3 waves of O iterations, the last of one request: time = 2 x O x step(2)
    + O x step(1). step(2) from the 4-request run (2 full waves: 2 / step(2) tok/s), step(1) from a closed loop
    of one user (1 / step(1) tok/s). The steady state alone would give the 4-request figure (2.5 waves)."""
    small = {"prompt_tokens": 512, "output_tokens": 512, "max_num_seqs": 2, "max_model_len": 2048}
    thr4 = _throughput(_plan(num_requests=4, **small))
    thr1 = _throughput(_plan(load="concurrency", batch_size=1, num_requests=None, **small))
    thr5 = _throughput(_plan(num_requests=5, **small))
    assert thr5 == pytest.approx(5.0 / (2 * 2.0 / thr4 + 1.0 / thr1), rel=1e-6)
    assert thr5 < 0.9 * thr4  # the one-request wave reads all the weights for O iterations
    # a whole number of waves is the steady state
    assert _throughput(_plan(num_requests=6, **small)) == pytest.approx(thr4, rel=1e-6)


def test_fp8_cache_read_rate_applies_to_trt_llm_fp8_caches_only() -> None:
    r8, _ = resolve_plan(TRT_70B_FP8)
    assert fp8_kv_decode_attention_bw_rel(r8, "trt-llm") == eff.FP8_KV_DECODE_ATTN_BW_REL["trt-llm"]
    r16, _ = resolve_plan(_plan(kv_cache_precision="fp16"))
    assert fp8_kv_decode_attention_bw_rel(r16, "trt-llm") == 1.0
    rv, _ = resolve_plan(_plan(engine="vllm", engine_version="0.6.3"))
    assert fp8_kv_decode_attention_bw_rel(rv, "vllm") == 1.0
    # TensorRT-LLM before XQA (v0.8) keeps its own per-query-head read instead
    ro, _ = resolve_plan(_plan(engine_version="0.6.1"))
    assert fp8_kv_decode_attention_bw_rel(ro, "trt-llm-2023") == 1.0


def test_fp8_cache_read_time_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """165 sequences at 8,256 tokens: 165 x 8,256 x 80 layers x 2 x 1 KV head per GPU x 128 x 1 B = 27.9 GB per
    GPU, at 3,350 GB/s x 0.82 = 10.16 ms; read at 0.45 of that rate it takes 22.58 ms, 12.42 ms more."""
    r, _ = resolve_plan(TRT_70B_FP8)
    slow = decode_step(r, 165, 8256).seconds
    monkeypatch.setattr(eff, "FP8_KV_DECODE_ATTN_BW_REL", {})
    fast = decode_step(r, 165, 8256).seconds
    kv_s = 165 * 8256 * 80 * 2 * 128 * 1 / (r.gpu.memory_bandwidth_gb_s * 1e9 * eff.BW_EFF["trt-llm"]["hbm"])
    assert kv_s * 1e3 == pytest.approx(10.16, abs=0.05)
    assert slow - fast == pytest.approx(kv_s * (1 / 0.45 - 1), rel=0.03)


def _row(row_id: str) -> dict:
    for line in (CAL / "serving_trtllm_bench_h100_70b.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["id"] == row_id:
            return row
    raise AssertionError(row_id)


@pytest.mark.parametrize("row_id", ["TRTBENCH70-0004", "TRTBENCH70-0006", "TRTBENCH70-0008", "TRTBENCH70-0032"])
def test_long_output_trtllm_bench_rows(row_id: str) -> None:
    """Published: 128 in / 1,024, 4,096, 16,384 out and 1,024 / 16,384: 19,788 / 12,428 / 4,558 / 3,919 tok/s
    (trtllm-bench logs). Without the waves and the FP8-cache read they came out 1.31 / 1.59 / 1.76 / 1.89x."""
    row = _row(row_id)
    assert _throughput(row["plan"]) == pytest.approx(row["value"], rel=0.15)
