"""MLC-LLM's batched decode with 4-bit weights: up to 8 running sequences its GEMV-style low-batch schedule
streams the weights; from 9 the dlight tensor-core GEMM pads the rows to a multiple of 128
(performance.mlc_padded_gemm_rows, efficiency.MLC_GEMM_ROW_TILE; the source is in efficiency.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import decode_step, matmul_params, mlc_padded_gemm_rows
from mlrig.planner import parse_plan, resolve_plan


def _resolved(engine: str, precision: str = "int4", model: str = "meta-llama/Meta-Llama-3-8B-Instruct") -> Any:
    return resolve_plan(parse_plan({"model": model, "hardware": {"gpu": "NVIDIA GeForce RTX 3090"},
                                    "workload": {"engine": engine, "precision": precision}}))[0]


def test_padded_rows_follow_low_batch_specialization() -> None:
    """1-8 rows as given (GEMV buckets), 9-128 -> 128, 129 -> 256; other engines and 16-bit weights: None."""
    r = _resolved("mlc")
    assert [mlc_padded_gemm_rows(r, "mlc", b) for b in (1, 8, 9, 64, 128, 129)] == [1, 8, 128, 128, 128, 256]
    assert mlc_padded_gemm_rows(r, "vllm", 16) is None
    assert mlc_padded_gemm_rows(_resolved("mlc", "fp16"), "mlc", 16) is None


def test_ninth_sequence_costs_a_padded_gemm_not_one_more_row() -> None:
    """Llama-3-8B q4 on an RTX 3090 (ZHJUNQIN's setup): 8 sequences step in about a batch-1 step's time (the
    weights' read); the 9th makes the step do 128 rows of GEMM arithmetic, 2 x 128 x 7.5 B params = 1.9 TFLOP,
    so the step more than doubles (the held-out rows measured 12.8 ms at ~3 running, 36 ms at ~13); from 9 to
    128 rows only attention's KV reads grow (23.5 -> 29.7 ms at 300 tokens held), and 129 adds a second tile
    (49 ms)."""
    r = _resolved("mlc")
    step = {b: float(decode_step(r, b, 300).seconds) for b in (1, 8, 9, 128, 129)}
    assert step[8] < 1.1 * step[1]
    assert step[9] > 2.0 * step[8]
    assert step[128] < 1.3 * step[9]
    assert step[129] > 1.5 * step[128]
    # the flops the 9-row step is priced with: 128 rows' GEMMs plus 9 sequences' attention
    flops_gemm = 128 * 2.0 * matmul_params(r.arch)
    assert flops_gemm == pytest.approx(2 * 128 * 7.5e9, rel=0.01)
    assert eff.MLC_LOW_BATCH_GEMV_MAX_ROWS == 8 and eff.MLC_GEMM_ROW_TILE == 128


def test_other_engines_and_16_bit_mlc_keep_a_smooth_step() -> None:
    """TinyChat (its W4A16 GEMM takes any row count) and MLC with 16-bit weights: 9 sequences cost about
    what 8 do."""
    for r in (_resolved("tinychat", "awq"), _resolved("mlc", "fp16")):
        assert float(decode_step(r, 9, 300).seconds) < 1.1 * float(decode_step(r, 8, 300).seconds)
