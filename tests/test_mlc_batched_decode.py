"""MLC-LLM's batched decode with 4-bit weights: up to 8 running sequences its GEMV-style low-batch schedule
streams the weights; from 9 the dlight tensor-core GEMM pads the rows to a multiple of 128
(performance.mlc_padded_gemm_rows, efficiency.MLC_GEMM_ROW_TILE; the source is in efficiency.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import (
    decode_step,
    matmul_params,
    mlc_gemm_wave_util,
    mlc_gemv_weight_passes,
    mlc_padded_gemm_rows,
    prefill_pass,
)
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
    """Llama-3-8B q4 on an RTX 3090 (ZHJUNQIN's setup): up to 4 sequences step in about a batch-1 step's time (the
    weights' read once: GEMV buckets of 2 and 4 rows), 5-8 read them twice (two 4-row blocks,
    performance.mlc_gemv_weight_passes); the 9th makes the step do 128 rows of GEMM arithmetic, 2 x 128 x 7.5 B
    params = 1.9 TFLOP in under-filled waves of thread blocks (mlc_gemm_wave_util 0.61 on 82 SMs), so the step
    doubles again (the held-out rows measured 12.8 ms at ~3 running, 36 ms at ~13, 53 ms at ~44); from 9 to 128
    rows only attention's KV reads grow (34.5 -> 40.7 ms at 300 tokens held), and 129 adds a second row tile."""
    r = _resolved("mlc")
    step = {b: float(decode_step(r, b, 300).seconds) for b in (1, 4, 5, 8, 9, 128, 129)}
    assert step[4] < 1.1 * step[1]
    assert 1.5 * step[1] < step[5] < 2.0 * step[1]
    assert step[8] < 1.05 * step[5]
    assert step[9] > 2.0 * step[8]
    assert step[128] < 1.3 * step[9]
    assert step[129] > 1.3 * step[128]
    # the flops the 9-row step is priced with: 128 rows' GEMMs plus 9 sequences' attention
    flops_gemm = 128 * 2.0 * matmul_params(r.arch)
    assert flops_gemm == pytest.approx(2 * 128 * 7.5e9, rel=0.01)
    assert eff.MLC_LOW_BATCH_GEMV_MAX_ROWS == 8 and eff.MLC_GEMM_ROW_TILE == 128


def test_gemv_weight_passes_follow_the_buckets() -> None:
    """LowBatchGemvSpecialize: bucket 2 up to 2 rows, bucket 4 up to 8, one weight pass per bucket of rows; the
    padded GEMM above 8 reads them once."""
    assert [mlc_gemv_weight_passes(b) for b in (1, 2, 3, 4, 5, 8, 9, 64)] == [1, 1, 1, 1, 2, 2, 1, 1]


def test_gemm_wave_util_by_hand() -> None:
    """Llama-3-8B at 128 rows on an RTX 3090 (82 SMs): 128 x 128 blocks, one per SM. Fused QKV N = 6,144 -> 48
    blocks (one wave, 48 / 82 busy), o_proj and down_proj N = 4,096 -> 32 (32 / 82), fused gate/up N = 28,672 ->
    224 (3 waves, 224 / 246), lm_head N = 128,256 -> 1,002 (13 waves, 1,002 / 1,066); their FLOPs weigh the
    times. At 1,024 rows on an RTX 4090 (128 SMs) every linear fills whole waves."""
    r = _resolved("mlc")
    layers, hidden = 32, 4096
    parts = [(6144 * hidden * layers, 48 / 82), (hidden * hidden * layers, 32 / 82),
             (28672 * hidden * layers, 224 / 246), (hidden * 14336 * layers, 32 / 82), (128256 * hidden, 1002 / 1066)]
    by_hand = sum(f for f, _ in parts) / sum(f / u for f, u in parts)
    assert float(mlc_gemm_wave_util(r, "mlc", 128, True)) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(0.612, abs=0.001)
    big = resolve_plan(parse_plan({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "hardware": {"gpu": "RTX 4090"},
                                   "workload": {"engine": "mlc", "precision": "int4"}}))[0]
    assert float(mlc_gemm_wave_util(big, "mlc", 1024, False)) == pytest.approx(1.0)
    # other engines, 16-bit weights and GPUs without an SM count are not de-rated
    assert mlc_gemm_wave_util(r, "vllm", 128, True) == 1.0
    assert mlc_gemm_wave_util(_resolved("mlc", "fp16"), "mlc", 128, True) == 1.0
    a10 = resolve_plan(parse_plan({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "hardware": {"gpu": "A10"},
                                   "workload": {"engine": "mlc", "precision": "int4"}}))[0]
    assert a10.gpu.sm_count is None and mlc_gemm_wave_util(a10, "mlc", 128, True) == 1.0


def test_other_engines_and_16_bit_mlc_keep_a_smooth_step() -> None:
    """TinyChat (its W4A16 GEMM takes any row count) and MLC with 16-bit weights: 9 sequences cost about
    what 8 do."""
    for r in (_resolved("tinychat", "awq"), _resolved("mlc", "fp16")):
        assert float(decode_step(r, 9, 300).seconds) < 1.1 * float(decode_step(r, 8, 300).seconds)


def test_prompt_gemms_pad_only_above_the_gemv_rows() -> None:
    """A prompt of up to 8 tokens goes through the GEMV schedule like a decode step (no padding); from 9 tokens
    the GEMMs compute 128 rows (a 9-token prompt costs about what a 128-token one does), and 129 a second tile."""
    r = _resolved("mlc")
    t = {p: float(prefill_pass(r, 1, p).seconds) for p in (1, 8, 9, 128, 129)}
    assert t[8] < 1.1 * t[1]
    assert t[9] > 3.0 * t[8]
    assert t[128] < 1.15 * t[9]
    assert t[129] > 1.3 * t[128]
