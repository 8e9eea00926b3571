from __future__ import annotations

from mlrig.validation.speed import run


def test_speed_validation_thresholds() -> None:
    groups = {g.name: g for g in run()}
    dec, pre, tr = groups["decode_tok_s"], groups["prefill_tok_s"], groups["tokens_per_s_per_gpu"]
    assert dec.n > 250 and pre.n > 250 and tr.n > 100
    assert dec.median_error <= 0.10 and dec.p90_error <= 0.25
    assert pre.median_error <= 0.20
    assert tr.median_error <= 0.15
