"""vLLM's front-end host time per generated token from 0.12 (issue 10 section 2; performance.vllm_stream_host_s,
efficiency.VLLM_STREAM_TOKEN_S_CLOUD_GDDR / _DESKTOP), checked on the fit rows that chose it.

The output handler turns every running request's token into a RequestOutput (and a server-sent event) in a process
beside the engine core, so it overlaps the GPU's step: it sets TPOT only when the step is short. gemma-3-1b-it on an
A10G at 64 users (LLMSERVE-0014) measured 10.18 ms against a ~7.3 ms GPU step (priced -28 % without it); the same
host's 3B models, whose steps are longer, barely move. Before 0.12 the per-sequence time is serialised with the step
instead (host_seq_step_s), and HBM server hosts show none.
"""

from __future__ import annotations

import copy

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import host_seq_step_s, vllm_stream_host_s
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import CalibrationRow, load_rows


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith(("LLMSERVE", "WMXL4", "WAYNETRT"))}


def _tpot_ms(plan: dict) -> float:  # type: ignore[type-arg]
    perf = evaluate(plan).performance
    assert perf is not None and perf.tpot_ms is not None
    return float(perf.tpot_ms)


def test_small_model_at_64_users_is_host_bound_on_a_cloud_gddr_card() -> None:
    row = _rows()["LLMSERVE-0014"]  # gemma-3-1b-it, A10G, 64 users: 10.18 ms
    assert row.value == 10.18 and row.plan["workload"]["batch_size"] == 64
    r, _notes = resolve_plan(row.plan)
    assert vllm_stream_host_s(r, "vllm", 64) == pytest.approx(64 * 150e-6)
    assert _tpot_ms(row.plan) == pytest.approx(row.value, rel=0.08)  # was -28 %
    # p-norm of the GPU's ~7.3 ms step and 9.6 ms of host time: at least the host's, less than their sum
    assert 9.6 <= _tpot_ms(row.plan) < 7.3 + 9.6


def test_a_long_gpu_step_hides_it() -> None:
    row = _rows()["LLMSERVE-0049"]  # Llama-3.2-3B, A10G, 64 users: 21.44 ms, GPU-bound
    with_host = _tpot_ms(row.plan)
    assert with_host == pytest.approx(row.value, rel=0.05)
    saved = eff.VLLM_STREAM_TOKEN_S_CLOUD_GDDR
    try:
        eff.VLLM_STREAM_TOKEN_S_CLOUD_GDDR = 0.0
        without = _tpot_ms(row.plan)
    finally:
        eff.VLLM_STREAM_TOKEN_S_CLOUD_GDDR = saved
    assert with_host / without - 1 < 0.03  # 9.6 ms of host time under a ~21 ms step: < 3 %


def test_not_priced_before_0_12_nor_on_hbm_servers() -> None:
    rows = _rows()
    old = copy.deepcopy(rows["WMXL4-0018"].plan)  # Qwen2.5-0.5B, L4, 32 users, vLLM 0.23
    r, _notes = resolve_plan(old)
    assert vllm_stream_host_s(r, "vllm", 32) == pytest.approx(32 * 150e-6)
    old["workload"]["engine_version"] = "0.11.0"  # V1 before 0.12: serialised per sequence instead
    r_old, _notes = resolve_plan(old)
    assert vllm_stream_host_s(r_old, "vllm", 32) == 0.0
    assert host_seq_step_s("vllm", "0.11.0") == eff.VLLM_V1_SEQ_STEP_OVERHEAD_S
    h100 = rows["WAYNETRT-0036"].plan  # Llama-3.1-8B, H100 SXM, 128 users: 4.67 ms
    r_h100, _notes = resolve_plan(h100)
    assert vllm_stream_host_s(r_h100, "vllm", 128) == 0.0
    desk = rows["WAYNETRT-0258"].plan  # RTX PRO 6000 workstation, 128 users
    r_desk, _notes = resolve_plan(desk)
    assert vllm_stream_host_s(r_desk, "vllm", 128) == pytest.approx(128 * 70e-6)
    assert vllm_stream_host_s(r_desk, "sglang", 128) == 0.0
