"""Argonne's LLM-Inference-Bench vLLM rows (ARGONNE-*, held out): every plan names the 2024 vLLM release that ran,
so the host's per-sequence scheduling time of those releases (efficiency.SEQ_STEP_OVERHEAD_S, exposed before vLLM
0.12's async scheduling) is priced; without a version the current release, which hides it, was assumed."""

from __future__ import annotations

import json

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import before
from mlrig.estimators.performance import decode_step
from mlrig.planner import resolve_plan
from mlrig.validation.runner import CalibrationRow, calibration_files


def _argonne_vllm_rows() -> list[CalibrationRow]:
    path = next(p for p in calibration_files() if p.name == "serving_argonne_inference_bench.jsonl")
    rows = [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.plan["workload"]["engine"] == "vllm"]


def test_every_argonne_vllm_row_names_a_2024_release() -> None:
    """The results were committed by 2024-09-27: A100 from vLLM v0.6.1's requirement files, H100 from an unpinned
    `pip install vllm` of 2024-09-20 (0.6.1.post2 the newest), GH200 0.5.3.post1, MI300X v0.6.1 from source."""
    rows = _argonne_vllm_rows()
    assert len(rows) == 167  # 117 (branch s24-data) + 50 GH200 rows added on branch s28-dataserve
    for r in rows:
        version = r.plan["workload"].get("engine_version")
        assert version, r.id
        assert before(version, (0, 7)), (r.id, version)


def test_h100_batch_64_step_carries_the_v0_host_time() -> None:
    """ARGONNE-0097 (Llama-3-8B fp16, TP 4 on H100 SXM, 64 sequences): a decode step holds 64 x 100 us of host
    scheduling beyond the same step under the current release (measured: 64 x 1,024 tokens in 13.65 s, 13.3 ms a
    step, where the GPU's share alone is ~6 ms)."""
    row = next(r for r in _argonne_vllm_rows() if r.id == "ARGONNE-0097")
    r_old, _ = resolve_plan(row.plan)
    plan_now = json.loads(json.dumps(row.plan))
    del plan_now["workload"]["engine_version"]
    r_now, _ = resolve_plan(plan_now)
    ctx = 1024 + 512
    extra = decode_step(r_old, 64, ctx).seconds - decode_step(r_now, 64, ctx).seconds
    assert extra == pytest.approx(64 * eff.SEQ_STEP_OVERHEAD_S["vllm"], rel=1e-6)
