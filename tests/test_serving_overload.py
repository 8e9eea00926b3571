"""Poisson-rate runs at and past the engine's capacity (serving.rate_run_point, median_slot_wait_s,
overload_note, overload_ttft_band; issue 10)."""

from __future__ import annotations

import itertools

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import ERROR_BAND, decode_step, prefill_pass
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.estimators.serving import _iteration, frontend_s, fused_prefill_s_per_token, rate_run_point
from mlrig.planner import evaluate, parse_plan, resolve_arch


def _plan(**w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "bf16", "engine": "trt-llm", "prompt_tokens": 214, "output_tokens": 200,
                             "max_num_seqs": 40, "load": "rate", "request_rate": 1.0, "num_requests": 1000,
                             "lengths": "varied"}
    wl.update(w)
    return {"model": "llama-3-8b", "workload": wl, "hardware": {"gpu": "rtx-3090"}}


def _resolved(data: dict[str, object]) -> ResolvedPlan:
    p = parse_plan(data)
    return resolve(resolve_arch(p), p, resolve_gpu("rtx-3090"))


def _capacity_rps(r: ResolvedPlan, cap: int = 40) -> float:
    """A full batch's completions/s, by hand: cap / (t_dec(cap, ctx) O + cap P t_f), t_f the prompt token's share
    of an in-flight iteration (TensorRT-LLM's in-flight batching: the prompt's arithmetic, `fused_prefill_s_per_token`),
    ctx the context a running sequence's decode reads: with varied (uncapped exponential) lengths the running ones
    are the long ones and hold E[L^2] / (2 E[L]) = 2 O^2 / (2 O) = O = 200 output tokens (length-biased sampling,
    `serving.running_output_tokens`), so ctx = 214 + 200 = 414, not the fixed lengths' 214 + 100."""
    t_f = fused_prefill_s_per_token(prefill_pass(r, 1, 214), 214, None)
    return cap / (decode_step(r, cap, 214 + 200).seconds * 200 + cap * 214 * t_f)


def test_far_past_capacity_the_median_waits_for_the_queue_ahead() -> None:
    """Past capacity the first 40 requests take the batch and the rest queue, drained at the capacity mu: the
    median request (rank 500 of 1,000) arrives at 500 / rate and is admitted when 460 more have completed,
    so it waits (500 - 40) / mu - 500 / rate (the fluid queue; Newell 1982): 82.9 s at 1,000 req/s
    (mu = 5.52 req/s, `_capacity_rps`: 40 / (25.2 ms x 200 + 40 x 214 x t_f, 2.21 s)), 73.4 s at 50 req/s;
    the run's requests/s never passes mu."""
    r = _resolved(_plan())
    mu = _capacity_rps(r)
    assert mu == pytest.approx(5.52, rel=0.01)
    # the product's iteration of 40 decodes with their prompts' share is the hand-checked one
    t_f = fused_prefill_s_per_token(prefill_pass(r, 1, 214), 214, None)
    assert mu == pytest.approx(40 / (200 * _iteration(r, 40, t_f)[0]), rel=1e-9)
    for rate in (1000.0, 50.0):
        pt = rate_run_point(r, rate, 1000, cap=40)
        assert pt.saturated and pt.capacity_rps == pytest.approx(mu, rel=1e-9)
        assert pt.queue_s == pytest.approx((500 - 40) / mu - 500 / rate, rel=0.05)
        assert pt.requests_per_s <= mu * (1 + 1e-9)


def test_the_knee_is_continuous_and_rising() -> None:
    """Through capacity the median request's TTFT rises smoothly: the fluid queue's mean growth plus the
    reflected-Brownian fluctuation about it (`median_slot_wait_s`). The earlier rho -> 1 limit, taken as the
    larger of the two, fell from 1.48 s at capacity to 1.46 s at 1.02 x and then jumped to 3.3 s at 1.05 x."""
    r = _resolved(_plan())
    mu = _capacity_rps(r)
    factors = (0.98, 0.99, 0.995, 1.0, 1.005, 1.01, 1.02, 1.05, 1.1)
    ttft = [rate_run_point(r, f * mu, 1000, cap=40).ttft_s for f in factors]
    assert all(b >= a for a, b in itertools.pairwise(ttft))
    assert all(b / a < 1.8 for a, b in itertools.pairwise(ttft))  # no step: each 0.5-5 % of rate moves it < 1.8x


# engines x cards x lengths whose capacity a 300-request run at 0.5-100 req/s crosses
_ENGINES = (("vllm", "0.7.3"), ("vllm", None), ("sglang", None), ("trt-llm", None), ("lmdeploy", None))
_RATES = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 25, 50, 100)


@pytest.mark.parametrize(("engine", "version"), _ENGINES)
@pytest.mark.parametrize("gpu", ["rtx-3090", "l4"])
def test_a_higher_rate_never_lowers_ttft_for_the_same_run(engine: str, version: str | None, gpu: str) -> None:
    """The same 300 requests (Llama-3-8B, 255 + 343 tokens) sent faster: no request can be served sooner, so the
    median TTFT never falls; requests/s never passes the capacity the result reports. That holds under vLLM's KV
    admission too (`serving.vllm_kv_admission`), once the fluid steps follow the admission limit as the sequences
    grow (`serving.RATE_RUN_KV_STEP_ITERATIONS`), except where the median request sits at the edge of the first
    fill, which the result says (`serving.first_fill_edge_note`)."""
    for lengths in ("fixed", "varied"):
        last = 0.0
        for rate in _RATES:
            w: dict[str, object] = {"precision": "bf16", "engine": engine, "load": "rate", "request_rate": rate,
                                    "num_requests": 300, "prompt_tokens": 255, "output_tokens": 343, "lengths": lengths}
            if version:
                w["engine_version"] = version
            perf = evaluate({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "workload": w,
                             "hardware": {"gpu": gpu}}).performance
            assert perf is not None and perf.ttft_ms is not None and perf.capacity_requests_per_s is not None
            assert perf.requests_per_s is not None and perf.requests_per_s <= perf.capacity_requests_per_s * (1 + 1e-9)
            if "edge between them" in (perf.explanation or ""):
                # the median request sits at the edge of vLLM's first fill (`serving.first_fill_edge_note`): the
                # run's TTFTs are two groups far apart and a faster burst admits more at once, so the median's may
                # fall as the rate rises (vLLM 0.7.3 on an RTX 3090 at 13-15 req/s, its KV pool 40,224 tokens)
                continue
            assert perf.ttft_ms >= last * (1 - 1e-3), (lengths, rate)
            last = perf.ttft_ms


def test_an_overloaded_run_says_so_once_and_widens_its_ttft_band() -> None:
    """At 1.5 x capacity one note says the run is overloaded, its length and the cap on requests/s; below capacity
    none does. The TTFT band there is the TTFT of an engine whose capacity is the throughput band lower (b = 0.45:
    every time 1 / (1 - b) longer, i.e. the rate 1 / (1 - b) higher, times 1 / (1 - b)), over the estimate; far
    below capacity the band is the validation scope's, as for any other figure."""
    mu = _capacity_rps(_resolved(_plan()))
    calm = evaluate(_plan(request_rate=0.3 * mu))
    busy = evaluate(_plan(request_rate=1.5 * mu))
    assert calm.performance is not None and busy.performance is not None
    assert not [n for n in calm.notes if n.startswith("overloaded")]
    notes = [n for n in busy.notes if n.startswith("overloaded")]
    assert len(notes) == 1
    # the run's arrivals span N / rate = 1,000 / (1.5 x 5.52 req/s) = 121 s
    assert f"requests/s is capped at ~{mu:.3g}" in notes[0] and "1,000 requests over 121 s" in notes[0]
    assert busy.performance.capacity_requests_per_s == pytest.approx(mu, rel=1e-9)
    scope_band = calm.performance.error_band["ttft_ms"]
    assert scope_band == pytest.approx(evaluate(_plan(request_rate=0.1 * mu)).performance.error_band["ttft_ms"])
    b = ERROR_BAND["throughput_tok_s"]
    s = 1 / (1 - b)
    slow = evaluate(_plan(request_rate=1.5 * mu * s)).performance
    assert slow is not None and slow.ttft_ms is not None and busy.performance.ttft_ms is not None
    front_ms = frontend_s(_resolved(_plan())) * 1e3
    expected = (s * (slow.ttft_ms - front_ms) + front_ms) / busy.performance.ttft_ms - 1
    assert busy.performance.error_band["ttft_ms"] == pytest.approx(max(expected, scope_band), rel=1e-3)
    assert busy.performance.error_band["ttft_ms"] > scope_band


def test_a_run_that_fits_in_one_batch_is_overloaded_only_by_its_prefills() -> None:
    """300 requests into a batch of 1,024 (vLLM V1 on an H100): the batch never fills, so 100 req/s is not past
    a full batch's completions; only the prompts the GPU can prefill bound it, and there is no overload note."""
    w = {"precision": "bf16", "engine": "vllm", "load": "rate", "request_rate": 100, "num_requests": 300,
         "prompt_tokens": 255, "output_tokens": 343}
    res = evaluate({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "workload": w, "hardware": {"gpu": "h100-sxm"}})
    assert res.performance is not None and res.performance.capacity_requests_per_s is not None
    assert res.performance.capacity_requests_per_s > 100
    assert not [n for n in res.notes if n.startswith("overloaded")]


def test_a_ttft_band_above_100_percent_reads_as_a_multiple() -> None:
    """A TTFT band past 100 % is one-sided (a longer queue, not a negative TTFT): the Markdown view writes it
    "up to xN"; other bands keep their ± form."""
    from mlrig.commands.markdown import band_text

    rate = {"capacity_requests_per_s": 4.0}  # a rate run's result reports its capacity
    assert band_text("ttft_ms", 2.5, rate) == "up to x3.5 if the capacity is lower"
    assert band_text("ttft_ms", 0.7, rate) == "±70%"
    assert band_text("tpot_ms", 2.0, rate) == "±200%"


def test_a_steady_overloaded_rate_says_its_wait_is_unbounded_not_inf() -> None:
    """No num_requests and a rate past capacity: the queue grows without end; the explanation says so in
    words and the TTFT is null, never 'inf ms'."""
    res = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "RTX 3090"},
                    "workload": {"task": "inference", "engine": "trt-llm", "load": "rate", "request_rate": 50.0}})
    assert res.performance is not None and res.performance.ttft_ms is None
    expl = res.performance.explanation or ""
    assert "unbounded waiting" in expl and "inf ms" not in expl
