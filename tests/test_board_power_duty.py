"""The board-power bound is on power averaged over a window (NVML: a 1-s average on Ampere and newer except GA100), so
a Poisson-rate load that asks for a share d < 1 of the sustained tensor rate runs its passes at the rating
(serving.board_power_duty, performance.peak_tflops' `gemm_duty`): with a constant energy per FLOP its energy does not
depend on the clock. Fit rows: MOONCAKEA10-* (vLLM 0.6.2 on an
A10, Qwen2.5-7B GPTQ, Poisson 2-8 req/s)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from calibration_lookup import ratio, row

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import peak_tflops, prefill_pass
from mlrig.estimators.serving import board_power_duty
from mlrig.planner import evaluate, resolve_plan


def test_duty_below_one_lifts_the_bound_to_the_rating() -> None:
    """A10 16-bit: 0.42 TFLOP/J x 150 W / 0.80 = 78.75 of 125 TFLOPS at a sustained load (d = 1); at d = 0.95 or 0.5
    the rating, 125. An unbound card keeps its rating."""
    a10 = resolve_gpu("A10")
    assert peak_tflops(a10, "fp16", "vllm") == pytest.approx(78.75)
    assert peak_tflops(a10, "fp16", "vllm", 1.0) == pytest.approx(78.75)
    assert peak_tflops(a10, "fp16", "vllm", 0.95) == pytest.approx(125.0)
    assert peak_tflops(a10, "fp16", "vllm", 0.5) == pytest.approx(125.0)
    assert peak_tflops(resolve_gpu("RTX 5090"), "bf16", "vllm", 0.5) == pytest.approx(209.5)


def test_duty_of_mooncake_a10_run_by_hand() -> None:
    """MOONCAKEA10-0005: 2 req/s of 245 prompt + 6 output tokens, Qwen2.5-7B (6.53 B matmul parameters without the
    LM head): ~2 x 6.53e9 x 251 = 3.28 TFLOP a request, 6.56 TFLOP/s, over the A10's sustained 0.42 x 150 = 63
    TFLOPS: d ~ 0.104. At 8 req/s (-0017) four times that."""
    r, _ = resolve_plan(row("MOONCAKEA10-0005").plan)
    assert board_power_duty(r, 2.0) == pytest.approx(0.104, abs=0.004)
    assert board_power_duty(r, 8.0) == pytest.approx(4 * board_power_duty(r, 2.0))
    assert board_power_duty(r, 0.0) == 1.0
    assert board_power_duty(r, 100.0) == 1.0  # more than the board sustains: the bound holds


def test_no_bound_no_duty() -> None:
    """Where no bound is known (Hopper: efficiency.BOARD_TFLOP_PER_J takes none) the duty is 1."""
    r, _ = resolve_plan({"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
                         "workload": {"task": "inference", "engine": "vllm", "load": "rate", "request_rate": 2,
                                      "num_requests": 100, "prompt_tokens": 256, "output_tokens": 64},
                         "hardware": {"gpu": "H100 SXM"}})
    assert board_power_duty(r, 2.0) == 1.0


def test_prefill_pass_at_duty_runs_at_the_rating() -> None:
    """The 245-token prefill of MOONCAKEA10-0005 is compute-bound: at d = 0.104 its GEMMs run at the 125 TFLOPS
    rating, 78.75 / 125 = 0.63 of the time they take at the sustained bound."""
    r, _ = resolve_plan(row("MOONCAKEA10-0005").plan)
    bound = prefill_pass(r, 1, 245)
    burst = prefill_pass(replace(r, gemm_duty=board_power_duty(r, 2.0)), 1, 245)
    assert burst.compute_s == pytest.approx(bound.compute_s * 78.75 / 125.0, rel=1e-6)


def test_mooncake_a10_ttft_rows_move_to_measured() -> None:
    """The A10's median TTFTs (fit) were 1.25-2.55x measured with every prefill at the sustained bound (the 245-token
    prefill alone took 73 ms against 56 ms measured for the whole TTFT at 2 req/s); at the load's duty all ten lie
    within 0.75-1.25x."""
    ids = [f"MOONCAKEA10-{n:04d}" for n in range(1, 20, 2)]
    for i in ids:
        assert 0.75 <= ratio(i) <= 1.25, (i, ratio(i))


def test_saturated_rate_load_keeps_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A rate the card does not keep up with even at the rating (ACCELMARKGD-0016: Llama-3-8B at 5 req/s on an L4, a
    41 s median TTFT measured) is priced at the bound although its FLOPs alone ask for d < 1: the card never idles, so
    the limiter holds it there. Its figures are those of a duty of 1; a load below capacity (MOONCAKEA10-0005) moves."""
    import mlrig.estimators.serving as serving

    plan = row("ACCELMARKGD-0016").plan
    r, _ = resolve_plan(plan)
    assert board_power_duty(r, 5.0) < 1.0
    result = evaluate(plan).performance
    assert result.capacity_requests_per_s is not None and result.capacity_requests_per_s < 5.0
    below = evaluate(row("MOONCAKEA10-0005").plan).performance
    monkeypatch.setattr(serving, "board_power_duty", lambda r, rate: 1.0)
    assert evaluate(plan).performance.ttft_ms == result.ttft_ms
    assert evaluate(row("MOONCAKEA10-0005").plan).performance.ttft_ms > 1.2 * (below.ttft_ms or 0.0)


def test_explanation_says_when_the_duty_lifts_the_bound() -> None:
    """The A10 run at 2 req/s says its prefills run at the 125 TFLOPS rating, not the 79 of a sustained load; the
    saturated L4 run and an unbound card say nothing of it."""
    text = evaluate(row("MOONCAKEA10-0005").plan).performance.explanation or ""
    assert "125 dense TFLOPS, above the 79 of a sustained load" in text
    assert "sustained load" not in (evaluate(row("ACCELMARKGD-0016").plan).performance.explanation or "")
    assert "sustained load" not in (evaluate(row("OPENINFER5090-0001").plan).performance.explanation or "")


def test_rates_between_the_bound_and_the_sustained_power_run_at_the_rating() -> None:
    """MOONCAKEA10-0005's setup at 14 req/s: d = 14 x 3.28 / 63 = 0.73, more than the bound's capacity (~13 req/s) but
    kept up with at the rating, so priced there like 2 req/s (the same capacity); at 21 req/s d = 1.09: the bound,
    and the lower capacity."""
    plan = row("MOONCAKEA10-0005").plan

    def at(rate: float) -> float:
        p = {**plan, "workload": {**plan["workload"], "request_rate": rate}}
        cap = evaluate(p).performance.capacity_requests_per_s
        assert cap is not None
        return cap

    low, mid, high = at(2.0), at(14.0), at(21.0)
    assert mid == pytest.approx(low)
    assert high < 14.0 < low
