"""TensorRT-LLM's host-side first-token costs and the serving front end's serial work per request.

- In process, TensorRT-LLM's LLM API / executor path adds ~1.8 ms to a static run's TTFT
  (efficiency.TRTLLM_REQUEST_PATH_S, performance.request_path_s; fit rows MKTRTLAT-*), not to its prefill rate.
- Behind trtllm-serve a single user's TTFT carries a ~10.5 ms front end (efficiency.API_FRONTEND_S["trt-llm"]; fit
  rows WAYNETRT-0146 / -0164, a TensorRT engine at one user). The PyTorch backend adds its prefill's eager pass
  (performance.trtllm_prefill_host_layer_s: no CUDA graph for a batch with a context request), layers x 0.6 ms
  overlapped with the GPU's work: for Llama-3.1-8B (32 layers) ~19 ms where the prompt is short.
- A closed loop's wave of m requests crosses the Python front end one request at a time: the member of rank k
  waits (k - 1) x 3.5 ms (efficiency.FRONTEND_SERIAL_S_PER_REQUEST, serving.front_end_queue_s), or the GPU's
  wave where that is longer. Hand check: the mean member of a wave of 128 is rank 64.5: 63.5 x 3.5 = 222.25 ms;
  of 64, rank 32.5: 110.25 ms; their difference 112 ms.
"""

from __future__ import annotations

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import request_path_s
from mlrig.estimators.serving import front_end_queue_s
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import CalibrationRow, load_rows


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith(("MKTRTLAT", "WAYNETRT", "LDSINGH"))}


def _ttft_ms(plan: dict[str, object]) -> float:
    perf = evaluate(plan).performance
    assert perf is not None and perf.ttft_ms is not None
    return perf.ttft_ms


def _resolved(engine: str, version: str | None = None, load: str = "concurrency"):  # type: ignore[no-untyped-def]
    work: dict[str, object] = {"engine": engine, "precision": "bf16", "load": load, "batch_size": 1}
    if version:
        work["engine_version"] = version
    return resolve_plan({"model": "llama-3.1-8b", "workload": work, "hardware": {"gpu": "h100-sxm-80gb"}})[0]


def test_request_path_is_trtllm_llm_api_only() -> None:
    assert request_path_s(_resolved("trt-llm", "1.2.0", "static")) == pytest.approx(1.8e-3)
    assert request_path_s(_resolved("trt-llm", None, "static")) == pytest.approx(1.8e-3)  # current release
    assert request_path_s(_resolved("trt-llm", "0.5", "static")) == 0.0  # gptSessionBenchmark, no executor
    assert request_path_s(_resolved("vllm", None, "static")) == 0.0


def test_trtllm_bench_latency_short_prompt_ttft() -> None:
    """MKTRTLAT-0001 / -0031 (fit: trtllm-bench latency, 8-token prompts, Qwen2.5-0.5B bf16 / FP8 on an RTX PRO
    6000): 3.474 / 2.416 ms measured, where the prefill alone is ~1.0-1.2 ms (-59..-65 % without the request
    path). The prefill rate is not changed: TTFT less the prompt's time at prefill_tok_s is the 1.8 ms."""
    rows = _rows()
    for rid in ("MKTRTLAT-0001", "MKTRTLAT-0031"):
        row = rows[rid]
        assert _ttft_ms(row.plan) == pytest.approx(row.value, rel=0.2), rid
    perf = evaluate(rows["MKTRTLAT-0001"].plan).performance
    assert perf is not None and perf.ttft_ms is not None and perf.prefill_tok_s is not None
    prompt = rows["MKTRTLAT-0001"].plan["workload"]["prompt_tokens"]
    assert perf.ttft_ms - prompt / perf.prefill_tok_s * 1e3 == pytest.approx(1.8, abs=1e-6)


def test_trtllm_serve_single_user_ttft_carries_its_front_end() -> None:
    """WAYNETRT-0146 / -0164 (fit: trtllm-serve 0.20 over a compiled TensorRT engine, Llama-3.1-8B bf16 at TP 2 on
    H100s, one user, 13-token prompt): 14.9 / 15.4 ms measured against ~4.7 ms without a front end."""
    rows = _rows()
    for rid in ("WAYNETRT-0146", "WAYNETRT-0164"):
        assert _ttft_ms(rows[rid].plan) == pytest.approx(rows[rid].value, rel=0.1), rid


def test_the_backend_is_read_from_the_version_label() -> None:
    from mlrig.estimators.engines import trtllm_tensorrt_engine

    assert trtllm_tensorrt_engine("0.20.0") and not trtllm_tensorrt_engine("1.2.0")  # each release's default
    assert not trtllm_tensorrt_engine("0.20.0+pytorch") and trtllm_tensorrt_engine("1.2.0+tensorrt")
    assert not trtllm_tensorrt_engine(None)  # the current release: PyTorch backend


def test_pytorch_backend_prefills_in_an_eager_pass() -> None:
    """The same single-user run (WAYNETRT-0038's plan: 13-token prompt, GPU work ~3 ms) behind a TensorRT engine and
    the PyTorch backend: the latter's prefill pass runs without CUDA graphs, 32 layers x 0.6 ms of host time, which
    the GPU's few ms hide little of (p-norm, efficiency.HOST_OVERLAP_P): ~19 ms more. AZIR5070TI-0008 / -0032
    (fit, 1.3.0rc15 on an RTX 5070 Ti, 4 users, 59 of ~60 prompt tokens cached) measured 44.3 / 48.1 ms, 38.2 /
    32.5 ms before this pass was priced (-14 / -32 %)."""
    rows = _rows()
    plan = rows["WAYNETRT-0038"].plan
    work = dict(plan["workload"])  # type: ignore[arg-type]
    engine = _ttft_ms({**plan, "workload": {**work, "engine_version": "0.20.0+tensorrt"}})
    pytorch = _ttft_ms({**plan, "workload": {**work, "engine_version": "0.20.0+pytorch"}})
    assert engine == pytest.approx(_ttft_ms({**plan, "workload": {**work, "engine_version": "0.20.0"}}))
    assert pytorch - engine == pytest.approx(32 * eff.TRTLLM_EAGER_HOST_LAYER_S * 1e3, rel=0.2)
    azir = {r.id: r for r in load_rows() if r.id in ("AZIR5070TI-0008", "AZIR5070TI-0032")}
    for rid, row in azir.items():
        assert _ttft_ms(row.plan) == pytest.approx(row.value, rel=0.2), rid


def test_front_end_queue_hand_check() -> None:
    vllm = _resolved("vllm")
    assert front_end_queue_s(vllm, 64.5) == pytest.approx(63.5 * 3.5e-3)
    assert front_end_queue_s(vllm, 1.0) == 0.0  # the first of a wave waits for nobody
    assert front_end_queue_s(_resolved("trt-llm"), 32.5) == pytest.approx(31.5 * 4.0e-3)  # trtllm-serve: branch s38-trt
    assert front_end_queue_s(_resolved("lmdeploy"), 64.5) == 0.0  # in-process profile runs: no HTTP front end
    assert front_end_queue_s(_resolved("tgi"), 64.5) == 0.0  # TGI's router is Rust, not modelled here


def test_wave_ttft_grows_with_the_users_through_the_front_end() -> None:
    """WAYNETRT closed loops (fit) of 12-13-token prompts: TTFT grows ~1.6-2.2 ms per user; at 128 users the GPU's
    wave alone gave 40 ms (vLLM, -81 %) and 23 ms (trtllm-serve, -92 %). With the serial stage the step from 64 to
    128 users is the mean member's 32 more requests ahead: 112 ms at vLLM's 3.5 ms, 128 ms at trtllm-serve's 4.0 ms
    (efficiency.FRONTEND_SERIAL_S_PER_REQUEST; measured 285 - 153 = 132 ms, WAYNETRT-0017 / -0014)."""
    rows = _rows()
    for rid in ("WAYNETRT-0017", "WAYNETRT-0035", "WAYNETRT-0071"):
        assert _ttft_ms(rows[rid].plan) == pytest.approx(rows[rid].value, rel=0.2), rid
    step = _ttft_ms(rows["WAYNETRT-0017"].plan) - _ttft_ms(rows["WAYNETRT-0014"].plan)
    assert step == pytest.approx(32 * 4.0, abs=0.5)


def test_the_front_end_queue_overlaps_a_long_gpu_wave(monkeypatch: pytest.MonkeyPatch) -> None:
    """LDSINGH-0023 (fit: 512 users of long prompts at once, vLLM 0.23 on an RTX A6000): the GPU's prefills take
    longer than the front end's queue, so its TTFT is the same with or without the serial cost (the larger of the
    two, not their sum)."""
    plan = _rows()["LDSINGH-0023"].plan
    with_queue = _ttft_ms(plan)
    monkeypatch.setitem(eff.FRONTEND_SERIAL_S_PER_REQUEST, "vllm", 0.0)
    assert _ttft_ms(plan) == pytest.approx(with_queue, rel=1e-9)


def test_a_lockstep_round_of_trtllm_prompts_shares_a_pass() -> None:
    """AZIR5070TI-0046 / -0058 (fit: TensorRT-LLM 1.3.0rc15 NVFP4 on an RTX 5070 Ti, lock-step rounds of 64 / 48
    users, 1-token prompts after the prefix cache, 256 outputs; the -0058 run with CUDA-graph padding): 6,487 /
    4,681 output tok/s. Each prompt priced as a pass of its own (19 ms eager on the PyTorch backend) gave 3,981 /
    3,380 (-39 / -28 %); one pass for the round's prompts (TensorRT-LLM's micro-batch scheduler takes them all) is
    within 15 %."""
    rows = {r.id: r for r in load_rows() if r.id in ("AZIR5070TI-0046", "AZIR5070TI-0058")}
    for rid, row in rows.items():
        perf = evaluate(row.plan).performance
        assert perf is not None and perf.throughput_tok_s is not None
        assert perf.throughput_tok_s == pytest.approx(row.value, rel=0.15), rid
