"""Poisson arrivals into a capped batch: the stochastic wait for a slot (serving.median_slot_wait_s, issue 10)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import prefill_pass
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.estimators.serving import (
    _iteration,
    erlang_c,
    load_point,
    median_slot_wait_s,
    rate_run_point,
    rbm_quantile,
    rbm_tail,
)
from mlrig.planner import evaluate, parse_plan, resolve_arch
from mlrig.validation import calibration_dir


def _plan(**w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "bf16", "engine": "trt-llm", "prompt_tokens": 214, "output_tokens": 200,
                             "max_num_seqs": 40, "load": "rate", "request_rate": 1.0,
                             "lengths": "varied"}
    wl.update(w)
    return {"model": "llama-3-8b", "workload": wl, "hardware": {"gpu": "rtx-3090"}}


def _resolved(data: dict[str, object]) -> ResolvedPlan:
    p = parse_plan(data)
    return resolve(resolve_arch(p), p, resolve_gpu("rtx-3090"))


def _capacity_rps(r: ResolvedPlan, cap: int = 40) -> float:
    """Requests/s a full batch of `cap` completes (the fluid model's capacity)."""
    step, _ = _iteration(r, cap, prefill_pass(r, 1, 214).seconds / 214)
    return cap / step / 200


def test_erlang_c_textbook_values() -> None:
    """Erlang C: M/M/1 waits with probability rho; M/M/2 at 1 Erlang with 1/3 (a^c/c! c/(c-a) over
    1 + a + that = 1 / 3); the Erlang B recursion agrees with the closed form at 5 servers; saturation
    (a >= c) always waits."""
    assert erlang_c(1, 0.5) == pytest.approx(0.5)
    assert erlang_c(2, 1.0) == pytest.approx(1.0 / 3.0)
    a, c = 3.5, 5
    top = a**c / math.factorial(c) * c / (c - a)
    closed = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    assert erlang_c(c, a) == pytest.approx(closed, rel=1e-12)
    assert erlang_c(40, 40.0) == 1.0 and erlang_c(40, 0.0) == 0.0
    assert 0.0 < erlang_c(256, 240.0) < 1.0  # finite for hundreds of servers


def test_median_slot_wait_hand_checked() -> None:
    """M/M/1 at rho = 0.8, 1 s of service: P(wait) = 0.8, waits exponential at rate (1 - 0.8) / 1 s, so the
    median is ln(1.6) / 0.2 = 2.35 s; fixed lengths (cv2 = 0) halve it (Lee & Longton); below half the
    arrivals waiting (here rho = 0.4) the median request does not wait; a run started idle has, at t =
    tau / 4, half the stationary wait (sqrt growth), and all of it from tau on."""
    assert median_slot_wait_s(1, 0.8, 1.0, 1.0) == pytest.approx(math.log(1.6) / 0.2)
    assert median_slot_wait_s(1, 0.8, 1.0, 0.0) == pytest.approx(math.log(1.6) / 0.4)
    assert median_slot_wait_s(1, 0.4, 1.0, 1.0) == 0.0
    # at or past saturation a steady state has no finite wait
    assert median_slot_wait_s(40, 6.0, 7.0, 1.0) == 0.0


def test_reflected_brownian_queue_hand_checked() -> None:
    """The transient law of reflected Brownian motion from 0 (Abate & Whitt 1987): with no drift it is |B(t)|,
    P(Z > s) = 2 (1 - Phi(1)) = 0.3173 at one standard deviation s = sqrt(var t), median 0.6745 s; with a negative
    drift it tends to the stationary exponential of mean var / (2 |drift|) (median var ln 2 / (2 |drift|)), entered
    with probability p: var ln(2 p) / (2 |drift|); with a positive drift its median tends to drift x t."""
    assert rbm_tail(3.0, 0.0, 1.0, 9.0) == pytest.approx(math.erfc(1.0 / math.sqrt(2.0)), rel=1e-9)
    assert rbm_tail(0.0, -1.0, 2.0, 5.0) == pytest.approx(1.0)
    assert rbm_quantile(1.0, 0.0, 4.0, 25.0) == pytest.approx(0.674490 * 10.0, rel=1e-4)
    assert rbm_quantile(1.0, -0.2, 2.0, 1e6) == pytest.approx(2.0 * math.log(2.0) / 0.4, rel=1e-3)
    assert rbm_quantile(0.8, -0.2, 2.0, 1e6) == pytest.approx(2.0 * math.log(1.6) / 0.4, rel=1e-3)
    assert rbm_quantile(0.5, -0.2, 2.0, 1e6) == 0.0
    assert rbm_quantile(1.0, 1.0, 1.0, 1e4) == pytest.approx(1e4, rel=1e-3)
    # a large positive drift: the reflected term's exp() would overflow without its asymptotic series
    assert 0.0 <= rbm_tail(5e3, 50.0, 1.0, 100.0) <= 1.0


def test_finite_run_slot_wait_hand_checked() -> None:
    """A run from an idle engine (`elapsed_s`): M/M/1 at rho = 0.8 reaches the steady state's ln(1.6) / 0.2 s
    after long enough; at capacity (40 slots of 7 s, varied lengths: var = 2 mu per s) a full batch's queue
    at t = 100 s is the median of |B|, 0.6745 sqrt(2 mu t) requests, / mu = 0.6745 sqrt(2 x 100 x 7 / 40) = 3.99 s;
    it is continuous through capacity, and far past it only a sliver beside the fluid queue's mean growth."""
    stationary = median_slot_wait_s(1, 0.8, 1.0, 1.0)
    assert median_slot_wait_s(1, 0.8, 1.0, 1.0, elapsed_s=1e7, occupancy=0.8) == pytest.approx(stationary, rel=1e-3)
    # it builds from 0 over the run
    early = median_slot_wait_s(1, 0.8, 1.0, 1.0, elapsed_s=5.0, occupancy=0.8)
    assert 0.0 < early < median_slot_wait_s(1, 0.8, 1.0, 1.0, elapsed_s=50.0, occupancy=0.8) < stationary * 1.001
    mu = 40 / 7.0
    assert median_slot_wait_s(40, mu, 7.0, 1.0, elapsed_s=100.0, occupancy=40) == pytest.approx(
        0.674490 * math.sqrt(2 * 100 * 7 / 40), rel=1e-3)
    below = median_slot_wait_s(40, 0.999 * mu, 7.0, 1.0, elapsed_s=100.0, occupancy=40 * 0.999)
    above = median_slot_wait_s(40, 1.001 * mu, 7.0, 1.0, elapsed_s=100.0, occupancy=40)
    assert below == pytest.approx(above, rel=0.05)
    # twice the capacity: the queue grows by mu requests/s (100 s of mean growth = 100 s of waiting); the
    # fluctuation's share is a small fraction of it
    assert 0.0 <= median_slot_wait_s(40, 2 * mu, 7.0, 1.0, elapsed_s=100.0, occupancy=40) < 2.0
    # a batch the run has not filled yet (a quarter of the slots busy) rarely makes an arrival wait
    assert median_slot_wait_s(40, 2 * mu, 7.0, 1.0, elapsed_s=1.0, occupancy=10) == 0.0


def test_a_rate_load_near_its_batch_cap_waits_for_a_slot() -> None:
    """TensorRT-LLM with max_batch_size 40 on an RTX 3090: at ~60 % of the slots' capacity the median request
    is admitted at once; at ~98 % the batch is often full and it waits seconds (the held-out ZHJUNQIN-0053 run,
    5 req/s against its batch of 40, measured a 1.65 s median TTFT where 1-2 req/s gave 0.10 s), where the
    fluid model alone admitted it at once (~0.1 s). Fixed lengths wait about half as long as varied ones at the
    same utilisation (Kingman's heavy-traffic wait grows with (1 + cv^2) / 2: cv^2 = 1 for exponential slot times,
    0 for fixed ones) and in proportion to the slot time O x step: the varied run's iterations are the longer
    (its running sequences are the long ones and read 214 + 200 tokens of context, the fixed run's 214 + 100:
    `serving.running_output_tokens`), so its capacity mu is lower and each run is loaded at 0.98 x its own mu; the
    fixed run's extra wait is the varied one's x 1/2 x mu_varied / mu_fixed (5.52 / 5.62 req/s)."""
    r = _resolved(_plan())
    mu = _capacity_rps(r)
    light = load_point(r, rate=0.6 * mu, cap=40)
    heavy = load_point(r, rate=0.98 * mu, cap=40)
    assert not light.saturated and not heavy.saturated
    assert light.ttft_s < 0.15
    assert heavy.ttft_s > 1.0 and heavy.queue_s > 10 * light.queue_s
    r_fixed = _resolved(_plan(lengths="fixed"))
    mu_fixed = _capacity_rps(r_fixed)
    assert mu_fixed > mu * 1.01  # the fixed run's shorter context
    fixed = load_point(r_fixed, rate=0.98 * mu_fixed, cap=40)
    light_fixed = load_point(r_fixed, rate=0.6 * mu_fixed, cap=40)
    extra_varied, extra_fixed = heavy.queue_s - light.queue_s, fixed.queue_s - light_fixed.queue_s
    assert extra_fixed == pytest.approx(extra_varied / 2 * mu / mu_fixed, rel=0.02)
    # the plan path users run gives the same figure
    perf = evaluate(_plan(request_rate=0.98 * mu)).performance
    assert perf is not None and perf.ttft_ms == pytest.approx(heavy.ttft_s * 1e3, rel=1e-6)


def test_a_finite_run_builds_the_slot_queue_over_time() -> None:
    """A run from an idle engine near the cap: its median request waits less than the steady state says, more
    in a longer run (the queue builds as sqrt(t) until the relaxation time), and the wait meets the fluid
    queue's at capacity instead of dropping to it (1,000 requests just below and just above capacity)."""
    r = _resolved(_plan())
    mu = _capacity_rps(r)
    rate = 0.98 * mu
    steady = load_point(r, rate=rate, cap=40)
    short, long = rate_run_point(r, rate, 1000, cap=40), rate_run_point(r, rate, 20000, cap=40)
    assert not short.saturated
    assert 0.3 < short.queue_s < long.queue_s <= steady.queue_s * 1.05
    below, above = rate_run_point(r, 0.995 * mu, 1000, cap=40), rate_run_point(r, 1.01 * mu, 1000, cap=40)
    assert above.saturated and not below.saturated
    assert above.ttft_s >= 0.8 * below.ttft_s
    # far below the cap nothing changes: the light run's TTFT is its prefill and iteration wait
    assert rate_run_point(r, 0.5 * mu, 1000, cap=40).queue_s < 0.05


def test_zhjunqin_sharegpt_rows_state_varied_lengths() -> None:
    """zhjunqin's runs sample ShareGPT conversations (benchmark_serving.py --dataset-name sharegpt): prompts and
    outputs vary, so the TensorRT-LLM and LMDeploy rows' plans say lengths = varied (the default, fixed, would
    price their slot waits as for identical requests)."""
    rows = [json.loads(line) for line in
            Path(calibration_dir(), "serving_gddr_zhjunqin.jsonl").read_text().splitlines() if line.strip()]
    ours = [row for row in rows if row["plan"]["workload"]["engine"] in ("trt-llm", "lmdeploy")
            and row["metric"] != "kv_cache_capacity_tokens"]  # the server log's KV pool (ZHJUNQIN-0058): no load
    assert len(ours) == 30
    assert all(row["plan"]["workload"]["lengths"] == "varied" for row in ours)
    assert all("ShareGPT" in row["source_note"] for row in ours)
