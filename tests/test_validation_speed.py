from __future__ import annotations

import pytest

from mlrig.estimators.performance import ERROR_BAND
from mlrig.estimators.training_speed import TRAIN_ERROR_BAND
from mlrig.validation import ValidationGroup
from mlrig.validation.speed import run


@pytest.fixture(scope="module")
def groups() -> dict[str, ValidationGroup]:
    return {g.name: g for g in run()}


def test_speed_validation_thresholds(groups: dict[str, ValidationGroup]) -> None:
    dec, pre, tr = groups["decode_tok_s"], groups["prefill_tok_s"], groups["tokens_per_s_per_gpu"]
    assert dec.n > 250 and pre.n > 250 and tr.n > 100
    assert dec.median_error <= 0.10 and dec.p90_error <= 0.25
    assert pre.median_error <= 0.20
    assert tr.median_error <= 0.15


def test_trt_llm_2023_throughput_tables(groups: dict[str, ValidationGroup]) -> None:
    """TensorRT-LLM v0.5/v0.6.1 static-batching tables, with the FP8 KV cache they were built with and
    the pre-XQA GQA decode (KV read once per query head). Without the GQA re-read the multi-GPU
    Llama-2-70B and Falcon-180B rows come out ~2x too fast (median 25%, p90 74%)."""
    thr = groups["total_throughput_tok_s"]
    assert thr.n >= 35
    assert thr.median_error <= 0.15 and thr.p90_error <= 0.30
    gqa = [r for r in thr.rows if r.note.startswith(("llama-2-70b", "falcon-180b"))]
    assert len(gqa) >= 12
    assert max(r.predicted / r.measured for r in gqa) < 1.4


@pytest.mark.parametrize("metric", sorted(ERROR_BAND))
def test_published_error_band_is_the_validation_p90(groups: dict[str, ValidationGroup], metric: str) -> None:
    # ERROR_BAND is documented as the p90 of |pred/meas - 1| per metric, to two decimals: a re-fit
    # that moves the p90 must update the band users see.
    group = {"throughput_tok_s": "total_throughput_tok_s"}.get(metric, metric)
    assert ERROR_BAND[metric] == pytest.approx(groups[group].p90_error, abs=0.005)


def test_training_error_band_covers_the_validation_p90(groups: dict[str, ValidationGroup]) -> None:
    assert groups["tokens_per_s_per_gpu"].p90_error <= TRAIN_ERROR_BAND
