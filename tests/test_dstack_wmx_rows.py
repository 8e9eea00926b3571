"""Rows added on branch s25-data2: dstack's Llama-3.1-405B serving runs on AMD MI300X and H100 (DSTACKCMP, fit;
DSTACK405B, held out) and an L4 closed-loop concurrency sweep of vLLM 0.23 (WMXL4, fit). They load, every plan
that is scored resolves through the planner, and the conversions and figures agree with the published tables.

Hand checks (numbers copied from the sources):
- dstack comparison/h100sxm5_vs_mi300x/csv_data/throughput_comparsion.csv, row '8xMi300 1FP8-amd,128,2048,4,
  67.79069331,4,8704,...,128.3952055': benchmark_throughput.py's tokens_per_second counts prompt + output tokens
  (8,704 / 67.79 s = 128.40); output tokens/s = 4 x 2,048 / 67.79 s = 120.84 = 128.40 x 2,048 / 2,176.
- dstack amd/tgi_vs_vllm/vllm/data/result_vllm_short.csv, 2 requests: 127 tokens generated in 4.66 s, printed
  as 27.28 output tok/s (127 / 4.66 = 27.25; the CSV's duration is rounded to 10 ms).
- ai.wmx.dev/benchmarks, concurrency 32: E2E p50 1,082 ms = TTFT p50 135.3 + 127 x ITL p50 7.1 (= 1,037) within
  5 %; output 3,773 tok/s = 32 users x 128 tokens / 1.082 s (= 3,786) within 1 %.
"""

from __future__ import annotations

import json

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.planner import evaluate
from mlrig.validation.runner import CalibrationRow, calibration_files, check

FILES = {"serving_gddr_wmx_l4.jsonl": ("WMXL4", "fit", 18),
         "serving_dstack_h100_mi300x_405b_fp8.jsonl": ("DSTACKCMP", "fit", 110),
         "serving_dstack_mi300x_405b_bf16.jsonl": ("DSTACK405B", "holdout", 63)}


def _rows(name: str) -> list[CalibrationRow]:
    path = next(p for p in calibration_files() if p.name == name)
    return [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def by_id() -> dict[str, CalibrationRow]:
    return {r.id: r for name in FILES for r in _rows(name)}


@pytest.mark.parametrize("name", sorted(FILES))
def test_rows_load_with_one_tag_one_split_and_a_pinned_source(name: str) -> None:
    tag, split, count = FILES[name]
    rows = _rows(name)
    assert len(rows) == count
    assert {r.id.rsplit("-", 1)[0] for r in rows} == {tag}
    assert {r.split for r in rows} == {split}
    for r in rows:
        w = r.plan["workload"]
        assert w["engine"] == "vllm" and w.get("engine_version"), r.id
        if tag.startswith("DSTACK"):
            assert r.source_url.startswith("https://github.com/dstackai/benchmarks/blob/06c957ab5157"), r.id
        else:
            assert r.source_url == "https://ai.wmx.dev/benchmarks" and r.source_date == "undated"


def test_every_scored_plan_resolves_through_the_planner(by_id: dict[str, CalibrationRow]) -> None:
    """28 rows (Meta's FP8 checkpoint on MI300X, which dstack calls unoptimised for that GPU: 19 offline runs,
    9 ShareGPT serving figures) are marked anomaly and not scored; every other plan gives the figure it measured."""
    anomalies = [r.id for r in by_id.values() if r.anomaly]
    assert len(anomalies) == 28
    assert all(by_id[i].plan["model"]["name"] == "meta-llama/Llama-3.1-405B"
               and by_id[i].plan["hardware"]["gpu"] == "AMD Instinct MI300X" for i in anomalies)
    failed = []
    for r in by_id.values():
        if r.anomaly:
            continue
        c = check(r)
        if c.predicted is None or c.error:
            failed.append((r.id, c.error))
    assert failed == []


def test_offline_rows_are_output_tokens_per_second(by_id: dict[str, CalibrationRow]) -> None:
    r = by_id["DSTACKCMP-0049"]
    w = r.plan["workload"]
    assert (w["num_requests"], w["prompt_tokens"], w["output_tokens"]) == (4, 128, 2048)
    assert r.plan["hardware"] == {"gpu": "AMD Instinct MI300X", "count": 8, "tensor_parallel": 8}
    assert r.value == pytest.approx(4 * 2048 / 67.79069331, abs=0.01)
    assert r.value == pytest.approx(128.3952055 * 2048 / (128 + 2048), abs=0.01)
    assert by_id["DSTACK405B-0003"].value == pytest.approx(127 / 4.66, rel=0.005)


def test_aggregated_replica_rows_are_not_taken(by_id: dict[str, CalibrationRow]) -> None:
    """The CSVs' '8xMi300x 2FP8-amd' rows are two 4-GPU replicas computed from the 4-GPU runs (the repo's
    raw_data/8xMi300x-throughput-quark-2fp8/README.md says so): not measurements, none is in the file."""
    for r in by_id.values():
        assert "2FP8" not in r.source_note.split("csv_data/")[-1][:40], r.id
    counts = {(r.plan["hardware"]["count"], r.metric) for r in by_id.values() if r.id.startswith("DSTACKCMP")}
    assert (4, "throughput_tok_s") in counts and (8, "throughput_tok_s") in counts


def test_wmx_sweep_is_internally_consistent(by_id: dict[str, CalibrationRow]) -> None:
    """Closed loop: throughput = users x 128 / E2E; E2E = TTFT + 127 x ITL (the page's own numbers)."""
    e2e_ms = {1: 679, 2: 698, 4: 722, 8: 772, 16: 880, 32: 1082}
    levels: dict[int, dict[str, float]] = {}
    for r in by_id.values():
        if r.id.startswith("WMXL4"):
            levels.setdefault(r.plan["workload"]["batch_size"], {})[r.metric] = r.value
    assert sorted(levels) == sorted(e2e_ms)
    for users, m in levels.items():
        assert m["ttft_ms"] + 127 * m["tpot_ms"] == pytest.approx(e2e_ms[users], rel=0.05)
        # one request at a time leaves client gaps between requests: 168 measured, 188 from E2E alone
        assert m["throughput_tok_s"] == pytest.approx(users * 128 / (e2e_ms[users] / 1e3), rel=0.12)
    ttft = [levels[u]["ttft_ms"] for u in sorted(levels)]
    assert ttft == sorted(ttft) and ttft[-1] > 4 * ttft[0]


def test_batch_one_decode_is_not_faster_than_reading_the_weights(by_id: dict[str, CalibrationRow]) -> None:
    """Figures sane: one decode step of Llama-3.1-405B (405.9 B parameters) reads every weight once, so TPOT at
    one request is at least the bytes per GPU over the card's peak bandwidth (bf16 on 8 MI300X: 101 GB at
    5.3 TB/s = 19 ms; measured 50.2 ms), and 4 sequences of 2,048 tokens on 8 H100 in FP8 take at least
    2,048 x 50.7 GB / 3.35 TB/s = 31 s (measured 71.3 s)."""
    params = 405.9e9
    r = by_id["DSTACK405B-0002"]
    assert r.metric == "tpot_ms" and r.plan["workload"]["batch_size"] == 1
    mi300x = resolve_gpu(r.plan["hardware"]["gpu"])
    floor_ms = params * 2 / 8 / (mi300x.memory_bandwidth_gb_s * 1e9) * 1e3
    assert 15 < floor_ms < r.value
    h = by_id["DSTACKCMP-0011"]
    assert h.plan["workload"]["num_requests"] == 4 and h.plan["hardware"]["gpu"] == "NVIDIA H100 SXM"
    h100 = resolve_gpu(h.plan["hardware"]["gpu"])
    per_seq_ceiling = (h100.memory_bandwidth_gb_s * 1e9) / (params / 8)  # steps/s reading FP8 weights once
    assert h.value < 4 * per_seq_ceiling


def test_base_model_rate_ttft_rows_count_only_requests_with_output(by_id: dict[str, CalibrationRow]) -> None:
    """dstack's H100 runs of the base Llama-3.1-405B-FP8 (raw_data/8xH100SXM5-serving/*.json): 378-379 of the
    1,000 ShareGPT requests returned no text, and benchmark_serving.py leaves their ttft at 0.0 while counting
    them as completed, so the CSV's median_ttft_ms (403.32 / 3,637.38 / 9,156.04 ms at 16 / 32 / 1,000 req/s)
    mixes ~38 % zeros into the median. The rows hold the median over the requests that produced a first token,
    recomputed from the per-request ttfts (956.39 / 12,530.36 / 27,605.79 ms); the planner's fluid model of
    V0 chunked prefill (512-token budget, decodes first) lands within 20 % of them at 32 and 1,000 req/s, where it
    was 176-270 % above the CSV's figures. At 16 req/s the run is at the knee (1.16 x the 13.8 req/s the model
    gives this setup), where the median request's wait is the queue's fluctuation about the fluid's
    (serving.median_slot_wait_s, reflected Brownian motion: +0.45 s): 64 % above, within the TTFT band that
    result states there (serving.overload_ttft_band) and below the CSV's +176 %."""
    published = {"DSTACKCMP-0076": 403.32, "DSTACKCMP-0079": 3637.38, "DSTACKCMP-0082": 9156.04}
    with_output = {"DSTACKCMP-0076": 956.39, "DSTACKCMP-0079": 12530.36, "DSTACKCMP-0082": 27605.79}
    for rid, value in with_output.items():
        r = by_id[rid]
        assert r.metric == "ttft_ms" and not r.anomaly
        assert r.value == pytest.approx(value)
        assert str(published[rid]) in r.unit  # the published figure stays visible beside the corrected one
        c = check(r)
        assert c.predicted is not None
        if rid == "DSTACKCMP-0076":
            perf = evaluate(r.plan).performance
            assert perf is not None and perf.ttft_ms == pytest.approx(c.predicted)
            assert 1.0 < c.predicted / r.value < 1.0 + min(0.7, perf.error_band["ttft_ms"]), (rid, c.predicted)
            continue
        assert c.predicted / r.value == pytest.approx(1.0, abs=0.20), (rid, c.predicted, r.value)


def test_offline_rows_state_the_chunked_prefill_that_ran(by_id: dict[str, CalibrationRow]) -> None:
    """benchmark_throughput.py's chunked prefill, by the build each run used (branch s37d-dstackcmp, read in vLLM's
    git history): AMD's fork build c9fc1608 (2024-10-24) predates PR #9529 (2024-10-22 upstream, not merged into
    it): its script passes False unless told, as the EmbeddedLLM 0.6.3.dev109 build's (rows -0018..-0036) does.
    The H100 nightly (commit b489fc3c, 2024-11-08) is after #9529, whose script takes EngineArgs' CLI (None, which
    V0 turns on above a 32K max_model_len), but which copy of the script ran is not stated: left unset, said so.
    None of the commands gives the flag."""
    offline = [r for r in by_id.values()
               if r.id.startswith("DSTACKCMP") and int(r.id[-4:]) <= 74]  # benchmark_throughput.py runs
    assert len(offline) == 74
    for r in offline:
        w = r.plan["workload"]
        assert w["load"] == "offline" and "benchmark_throughput.py" in r.source_note
        command = r.source_note.split("benchmark_throughput.py ", 1)[1].split(": all prompts", 1)[0]
        assert "--max-model-len 91680" in command and "chunked" not in command, r.id
        assert w["max_model_len"] == 91680
        if w["engine_version"] == "0.6.3.post2.dev308":  # H100 nightly: script copy not stated, left to the default
            assert "enable_chunked_prefill" not in w and "Not settled" in r.source_note, r.id
        else:
            assert w["enable_chunked_prefill"] is False, r.id
    for rid in ("DSTACKCMP-0001", "DSTACKCMP-0017"):
        assert "PR #9529" in by_id[rid].source_note and "b489fc3c" in by_id[rid].source_note
    for rid in ("DSTACKCMP-0037", "DSTACKCMP-0058", "DSTACKCMP-0074"):
        r = by_id[rid]
        assert r.plan["workload"]["engine_version"] == "rocm/vllm 0.6.4.dev4" and "c9fc1608" in r.software
        assert "c9fc1608" in r.source_note and "enable_chunked_prefill = false" in r.source_note


def test_unchunked_long_prompts_are_prefilled_whole(by_id: dict[str, CalibrationRow]) -> None:
    """DSTACKCMP-0037 (8x MI300X, 4 x 32,784-token prompts): with chunked prefill off as the script ran it, the
    prediction differs from the same plan priced at V0's 512-token chunks (what the row said before)."""
    r = by_id["DSTACKCMP-0037"]
    off = check(r)
    chunked = r.model_copy(deep=True)
    chunked.plan["workload"].pop("enable_chunked_prefill", None)
    on = check(chunked)
    assert off.predicted is not None and on.predicted is not None
    assert off.predicted != pytest.approx(on.predicted, rel=0.05)
