"""TensorRT-LLM serving on HBM (issue 10 section 2), checked on the WAYNETRT fit rows (trtllm-serve 0.20 on H100 SXM
NVLink, TP 2 / 4, closed loops of 1-128 users, 13-token prompts, 256 outputs).

- The AUTO all-reduce of TensorRT-LLM from 0.12 sends small messages through its one-shot kernel (one flag barrier,
  then each rank pulls its peers' slices: engines.trtllm_one_shot_allreduce), which pays the two link hops of
  `interconnects.allreduce_time_s` and no NCCL-style hand-shake (efficiency.ONE_SHOT_ALLREDUCE_ENGINES). With the
  10 us of efficiency.ALLREDUCE_SYNC_S on each of a step's 64 all-reduces, Llama-3.1-8B FP8 at TP 2 and one user came
  out 4.13 ms against 2.56 measured.
- trtllm-serve streams every token through its server process's Python (performance.trtllm_stream_host_s,
  efficiency.TRTLLM_STREAM_TOKEN_S): at 128 users that work, not the GPU, sets TPOT (measured 7.82 ms where the GPU's
  step is ~4.1 ms); offline and static runs (trtllm-bench in process) do not pay it.
"""

from __future__ import annotations

import pytest

from mlrig.catalog.interconnects import allreduce_time_s
from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import trtllm_one_shot_allreduce
from mlrig.estimators.performance import decode_step, trtllm_stream_host_s
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import CalibrationRow, load_rows


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith(("WAYNETRT", "TRTBENCH70"))}


def _tpot_ms(plan: dict) -> float:  # type: ignore[type-arg]
    perf = evaluate(plan).performance
    assert perf is not None and perf.tpot_ms is not None
    return float(perf.tpot_ms)


def test_one_shot_size_rule_follows_the_auto_strategy() -> None:
    # allreducePlugin.cpp selectImplementation: the 16 MB workspace at 2 ranks, < 1 MB at 3-4, < 500 KB above
    assert trtllm_one_shot_allreduce(16e6, 2) and not trtllm_one_shot_allreduce(16e6 + 1, 2)
    assert trtllm_one_shot_allreduce(999_999, 4) and not trtllm_one_shot_allreduce(1e6, 4)
    assert trtllm_one_shot_allreduce(499_999, 8) and not trtllm_one_shot_allreduce(500e3, 8)


def test_one_shot_decode_all_reduce_pays_two_hops_and_no_sync() -> None:
    row = _rows()["WAYNETRT-0003"]  # Llama-3.1-8B FP8, TP 2, one user: 2.56 ms
    assert row.value == 2.56 and row.plan["hardware"]["tensor_parallel"] == 2
    r, _notes = resolve_plan(row.plan)
    step = decode_step(r, 1, 141)
    assert r.link is not None
    # 32 layers x 2 all-reduces of one token's 4,096 bf16 activations (8 KiB, one-shot at 2 ranks)
    per_call = allreduce_time_s(2.0 * 4096, 2, r.link, peer_to_peer=True)
    assert step.comm_s == pytest.approx(64 * per_call)
    assert step.comm_s < 64 * (per_call + eff.ALLREDUCE_SYNC_S["nvlink"]) - 0.5e-3
    assert _tpot_ms(row.plan) == pytest.approx(row.value, rel=0.4)  # was +61 %
    assert _tpot_ms(row.plan) < 3.6


def test_large_messages_keep_the_sync_term() -> None:
    """A TP 8 pass of a 70B (8,192-wide) over 31 tokens exceeds the 500 KB one-shot limit: two-shot / NCCL, priced as
    before with efficiency.ALLREDUCE_SYNC_S."""
    row = _rows()["TRTBENCH70-0001"]
    r, _notes = resolve_plan(row.plan)
    assert r.hardware.tensor_parallel == 8 and r.link is not None
    tokens = 64
    step = decode_step(r, tokens, 192)
    per_call = (allreduce_time_s(2.0 * 8192 * tokens, 8, r.link, peer_to_peer=True)
                + eff.ALLREDUCE_SYNC_S["nvlink"])
    assert step.comm_s == pytest.approx(2 * 80 * per_call)


def test_streaming_host_time_sets_tpot_at_128_users() -> None:
    rows = _rows()
    r64, r128 = rows["WAYNETRT-0015"], rows["WAYNETRT-0018"]  # FP8, TP 2: 3.59 and 7.82 ms measured
    assert (r64.value, r128.value) == (3.59, 7.82)
    resolved, _notes = resolve_plan(r128.plan)
    assert eff.TRTLLM_STREAM_TOKEN_S == 55e-6
    assert trtllm_stream_host_s(resolved, "trt-llm", 128) == pytest.approx(128 * 55e-6)
    assert _tpot_ms(r128.plan) == pytest.approx(r128.value, rel=0.12)  # was -46 %
    # the GPU's step grows ~10 % from 64 to 128 users; the streamed tokens' host time doubles
    assert _tpot_ms(r128.plan) > 1.6 * _tpot_ms(r64.plan)


def test_in_process_runs_pay_no_streaming_host_time() -> None:
    offline = _rows()["TRTBENCH70-0001"]  # trtllm-bench throughput, in process
    r, _notes = resolve_plan(offline.plan)
    assert trtllm_stream_host_s(r, "trt-llm", 512) == 0.0
    served = dict(_rows()["WAYNETRT-0018"].plan)
    served["workload"] = {**served["workload"], "load": "static"}
    r2, _notes = resolve_plan(served)
    assert trtllm_stream_host_s(r2, "trt-llm", 128) == 0.0
    old = dict(_rows()["WAYNETRT-0018"].plan)
    old["workload"] = {**old["workload"], "engine_version": "0.9.0"}  # Triton's C++ backend era, before the LLM API
    r3, _notes = resolve_plan(old)
    assert trtllm_stream_host_s(r3, "trt-llm", 128) == 0.0
