"""The decode context of a continuous batch with varied output lengths is length-biased (serving.running_decode_context,
issue 10 §2): the sequences running at a given step are the long ones."""

from __future__ import annotations

import math

import pytest

from mlrig.estimators.performance import decode_step
from mlrig.estimators.serving import _iteration, running_decode_context, running_output_tokens
from mlrig.planner import evaluate, parse_plan, resolve_plan


def _plan(**w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "bf16", "engine": "vllm", "prompt_tokens": 255, "output_tokens": 343,
                             "load": "rate", "request_rate": 2.0}
    wl.update(w)
    return {"model": "llama-3-8b", "workload": wl, "hardware": {"gpu": "a100-sxm-80gb"}}


def test_running_decode_context_hand_checked() -> None:
    """Fixed lengths: the prompt and half the output, 255 + 171. Exponential lengths of mean O: a request of L
    tokens runs L iterations holding L^2 / 2 token-iterations of output, so a running sequence holds
    E[L^2] / (2 E[L]) = 2 O^2 / (2 O) = O: 255 + 343. Capped at C = 512 (AccelMark's suite): mu = 593 solves
    mu (1 - e^(-512 / mu)) = 343, E[L^2] = 2 mu^2 (1 - e^(-c) (1 + c)), c = 512 / mu, 219.6 held: 255 + 220."""
    fixed = parse_plan(_plan()).workload
    assert running_decode_context(fixed) == 255 + 171 == fixed.mean_decode_context
    varied = parse_plan(_plan(lengths="varied")).workload
    assert running_decode_context(varied) == 255 + 343
    capped = parse_plan(_plan(lengths="varied", max_output_tokens=512)).workload
    mu = 593.0
    assert mu * -math.expm1(-512 / mu) == pytest.approx(343, rel=2e-3)
    c = 512 / mu
    held = 2 * mu * mu * (1 - math.exp(-c) * (1 + c)) / (2 * 343)
    assert held == pytest.approx(219.6, abs=0.1)
    assert running_output_tokens(capped) == pytest.approx(held, rel=5e-3)
    assert running_decode_context(capped) == 255 + 220
    # a cap at or below the mean: every output reaches it, the lengths are fixed
    assert running_decode_context(parse_plan(_plan(lengths="varied", max_output_tokens=343)).workload) == 255 + 171


def test_a_varied_batch_decodes_at_a_longer_context_than_a_fixed_one_of_the_same_mean() -> None:
    """An iteration of 64 running sequences with varied lengths reads each one's prompt and O generated tokens,
    the fixed-length batch of the same mean O / 2: the varied iteration is the longer, by the KV read of 64 x 172
    more tokens per layer, and so is the TPOT of the same steady rate load on the product path."""
    r_fixed, _ = resolve_plan(_plan())
    r_varied, _ = resolve_plan(_plan(lengths="varied"))
    fixed_s = _iteration(r_fixed, 64, 0.0)[0]
    varied_s = _iteration(r_varied, 64, 0.0)[0]
    assert fixed_s == pytest.approx(decode_step(r_fixed, 64, 255 + 171).seconds, rel=1e-12)
    assert varied_s == pytest.approx(decode_step(r_varied, 64, 255 + 343).seconds, rel=1e-12)
    assert varied_s > fixed_s * 1.01
    fixed = evaluate(_plan()).performance
    varied = evaluate(_plan(lengths="varied")).performance
    assert fixed is not None and varied is not None and fixed.tpot_ms is not None and varied.tpot_ms is not None
    assert varied.tpot_ms > fixed.tpot_ms * 1.002
