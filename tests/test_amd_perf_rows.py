"""AMD's own vLLM results on MI300X (amd.com "Performance results", rows AMDPERF-*): fit rows for vLLM on
AMD HBM next to the held-out ROCMVLLM / ARGONNE sources. The conversions are hand-checked and the batch-1..4
decode rows, which the planner already prices from first principles (weights at the HBM figure, TP 8 all-reduce
over Infinity Fabric, per-step host time), must stay near AMD's published latencies."""

from __future__ import annotations

import json

import pytest

from mlrig.validation.runner import CalibrationRow, calibration_files, check


def _amd_rows() -> list[CalibrationRow]:
    path = next(p for p in calibration_files() if p.name == "serving_amd_perf_results_mi300x.jsonl")
    return [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_amd_perf_rows_are_cited_fit_rows_on_mi300x() -> None:
    rows = _amd_rows()
    assert len(rows) == 29
    assert {r.split for r in rows} == {"fit"}
    for r in rows:
        assert r.source_url.startswith("https://www.amd.com/") and "performance-results" in r.source_url
        assert r.plan["hardware"] == {"gpu": "AMD Instinct MI300X", "count": 8, "tensor_parallel": 8}
        assert r.plan["workload"]["engine"] == "vllm" and r.plan["workload"]["engine_version"].startswith("rocm/vllm ")


def test_amd_perf_latency_rows_hand_converted() -> None:
    """'Latency (sec)' of one static batch (prefill + 2,048 decode steps): output tok/s = batch x 2048 / latency.
    vLLM 0.10.2, 70B FP8 TP 8: batch 1 in 15.882 s -> 128.95 tok/s; batch 4 in 18.487 s -> 443.12 tok/s."""
    by_id = {r.id: r for r in _amd_rows()}
    assert by_id["AMDPERF-0025"].value == pytest.approx(2048 / 15.882, abs=0.01)
    assert by_id["AMDPERF-0027"].value == pytest.approx(4 * 2048 / 18.487, abs=0.01)
    assert by_id["AMDPERF-0025"].plan["workload"]["load"] == "static"


def test_tp8_static_decode_on_mi300x_near_amds_latency_table() -> None:
    """Llama-3.1-70B FP8, TP 8, 128 in / 2,048 out, batch 1/2/4 on vLLM 0.9.1 / 0.10.2: AMD publishes 15.9-18.5 s
    per batch (119-443 tok/s); the planner must land within 15 % on each (it did at 0.90-1.01 when the rows
    were added)."""
    static = [r for r in _amd_rows() if r.plan["workload"]["load"] == "static"]
    assert len(static) == 5
    for r in static:
        c = check(r)
        assert c.predicted is not None, c.error
        assert 0.85 < c.predicted / r.value < 1.15, (r.id, c.predicted, r.value)


def _rocm_readme_rows() -> list[CalibrationRow]:
    path = next(p for p in calibration_files() if p.name == "serving_rocm_vllm_mi300x.jsonl")
    return [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _output_tok_s(r: CalibrationRow) -> float:
    w = r.plan["workload"]
    if r.metric == "total_throughput_tok_s":
        return r.value * w["output_tokens"] / (w["prompt_tokens"] + w["output_tokens"])
    assert r.metric == "throughput_tok_s"
    return r.value


def test_amd_offline_tables_read_as_output_tokens_per_second() -> None:
    """AMD's 'Throughput (tokens/s)' tables of offline runs are output tokens/s. Read as prompt + output tokens/s,
    an offline run of N >= 500 prompts of 2,048 + 2,048 tokens would be slower (in output tokens/s) than the
    same suite's static batch of 128 such prompts (ROCm/vllm dev-docker README, each release: 70B 4,405 / 5,014
    tok/s at batch 128 in vLLM 0.6.6 / 0.10.0, against 8,239 / 7,561 'tokens/s' for 1,500 prompts, which as
    totals are 4,120 / 3,780 output tokens/s), although the KV pool holds all of them at their full length: a
    continuous batch of N would then lose to N / 128 static batches run one after another."""
    readme = _rocm_readme_rows()
    static = {(r.plan["model"]["name"], r.plan["workload"]["engine_version"], r.plan["workload"]["prompt_tokens"],
               r.plan["workload"]["output_tokens"]): r.value
              for r in readme if r.plan["workload"]["load"] == "static" and r.plan["workload"]["batch_size"] == 128}
    checked = 0
    for r in readme:
        w = r.plan["workload"]
        key = (r.plan["model"]["name"], w["engine_version"], w["prompt_tokens"], w["output_tokens"])
        if w["load"] == "offline" and key in static:
            assert _output_tok_s(r) > static[key], (r.id, _output_tok_s(r), static[key])
            checked += 1
    assert checked == 16  # 70B and 405B at 128/2048 and 2048/2048, vLLM 0.6.6, 0.7.3, 0.9.1 and 0.10.0
    # AMD's later page (this fit source) prints the same benchmark's column: output tokens/s too
    offline = [r for r in _amd_rows() if r.plan["workload"]["load"] == "offline"]
    assert len(offline) == 24 and {r.metric for r in offline} == {"throughput_tok_s"}
