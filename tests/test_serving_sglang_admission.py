"""SGLang's admission keeps new_token_ratio x each running request's remaining output free
(serving.sglang_reserved_output_tokens, issue 10 §2): its steady running batch is narrower than a pool holding
current tokens alone, by the ratio's run mean (serving.sglang_mean_new_token_ratio), near its floor in a long run."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from mlrig.estimators.serving import (
    running_slots,
    sglang_mean_new_token_ratio,
    sglang_reserved_output_tokens,
)
from mlrig.planner import evaluate, parse_plan


def _workload(**w: object):  # type: ignore[no-untyped-def]
    wl: dict[str, object] = {"precision": "bf16", "engine": "sglang", "prompt_tokens": 513, "output_tokens": 509,
                             "load": "offline", "lengths": "uniform"}
    wl.update(w)
    return parse_plan({"model": "llama-3-8b", "workload": wl, "hardware": {"gpu": "a100-sxm-80gb"}}).workload


def test_mean_new_token_ratio_hand_checked() -> None:
    """0.7 falling by (0.7 - 0.098) / 600 a step to 0.7 x 0.14 = 0.098: a run of no stated length sits at the floor;
    over 300 steps the mean is 0.7 - 0.602 x 300 / 1,200 = 0.5495; over 600 (0.7 + 0.098) / 2 = 0.399; over 4,000
    (600 x 0.399 + 3,400 x 0.098) / 4,000 = 0.14315."""
    assert sglang_mean_new_token_ratio(None) == pytest.approx(0.098)
    assert sglang_mean_new_token_ratio(300) == pytest.approx(0.5495)
    assert sglang_mean_new_token_ratio(600) == pytest.approx(0.399)
    assert sglang_mean_new_token_ratio(4000) == pytest.approx(0.14315)
    # the reservation: the ratio x the output to come, clipped at 4,096 (CLIP_MAX_NEW_TOKENS_ESTIMATION)
    assert sglang_reserved_output_tokens(509 * 2 / 3, None) == pytest.approx(0.098 * 339.33, rel=1e-4)
    assert sglang_reserved_output_tokens(10_000, None) == pytest.approx(0.098 * 4096)


def test_sglang_running_batch_keeps_the_reservation_free() -> None:
    """174,400 tokens of 513 + 509-token requests, lengths uniform in [0, 2 O]: a running request holds
    509 x (1 + 1/3) / 2 = 339.33 output tokens and has as many to come. A pool of current tokens holds
    174,400 // 852.33 = 204 (vLLM); SGLang at its floor keeps 0.098 x 339.33 = 33.25 more free each:
    174,400 / 885.59 = 196.9 -> 196. A run of 1,000 requests starts at 0.7: 1,000 x 509 / 196 = 2,597 steps,
    mean ratio (239.4 + 1,996.9 x 0.098) / 2,597 = 0.1676, 852.33 + 56.9 = 909.2 -> 191; again with 191:
    2,665 steps, 0.1658, 908.6 -> 191."""
    pool = 174_400
    steady = _workload()
    assert running_slots(pool, _workload(engine="vllm"), "vllm") == 204
    assert running_slots(pool, steady, "sglang") == 196
    assert running_slots(pool, _workload(num_requests=1000), "sglang") == 191
    # fixed lengths: O / 2 held and to come, 513 + 254.5 (vLLM's integer half: 254) + 0.098 x 254.5
    assert running_slots(pool, _workload(lengths="fixed"), "sglang") == int(pool // (513 + 254 + 0.098 * 254.5))
    assert running_slots(pool, _workload(lengths="fixed", engine="vllm"), "vllm") == pool // (513 + 254)


def test_livinfly_long_output_burst_runs_a_narrower_batch() -> None:
    """LIVINFLYA100-0020 (fit: SGLang 0.4.7.post1, Mistral-7B on one A100 PCIe 40GB, 1,000 requests of 129 + 2,098
    tokens, lengths uniform in [1, 4,096]): the source's running batch, 2,170.8 tok/s x 33.97 ms mean ITL, is ~74.
    On mlrig's pool of 174,416 tokens a running request holds 2,098 x 2 / 3 = 1,398.7 output tokens and has as many
    to come: current tokens alone hold 174,416 // 1,527.7 = 114; the reservation over a run of 1,000 x 2,098 / 114 =
    18,404 steps, mean ratio (239.4 + 17,804 x 0.098) / 18,404 = 0.1078, takes 150.8 more each: 174,416 // 1,678.5
    = 103, and again with 103 (20,369 steps, 0.1069): 103. (The rest of the gap is the pool: see
    `sglang_reserved_output_tokens`.)"""
    text = resources.files("mlrig.data.calibration").joinpath("serving_sglang_livinfly_a100pcie.jsonl").read_text()
    row = next(json.loads(line) for line in text.splitlines() if '"LIVINFLYA100-0020"' in line)
    result = evaluate(row["plan"])
    w = parse_plan(row["plan"]).workload
    assert running_slots(174_416, w, "vllm") == 114
    assert running_slots(174_416, w, "sglang") == 103
    # the product path runs the same batch on the pool it sizes (174,416 tokens when this was written)
    kv = result.kv_cache_capacity_tokens
    assert result.performance is not None and kv
    assert f"{running_slots(kv, w, 'sglang')} sequences decode together" in (result.performance.explanation or "")
