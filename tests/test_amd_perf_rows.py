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
