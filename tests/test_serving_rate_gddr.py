"""Finite Poisson-rate runs (serving.rate_run_point) and the GDDR serving terms (issue 10)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import prefill_cost, prefill_pass
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.estimators.serving import _iteration, frontend_s, load_point, rate_run_point
from mlrig.planner import evaluate, parse_plan, resolve_arch


def _plan(gpu: str = "rtx-3090", **w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "bf16", "engine": "trt-llm", "prompt_tokens": 214,
                             "output_tokens": 200, "max_num_seqs": 40}
    wl.update(w)
    return {"model": "llama-3-8b", "workload": wl, "hardware": {"gpu": gpu}}


def _resolved(data: dict[str, object]) -> ResolvedPlan:
    p = parse_plan(data)
    hw = data["hardware"]
    assert isinstance(hw, dict)
    return resolve(resolve_arch(p), p, resolve_gpu(str(hw["gpu"])))


def test_overloaded_finite_run_has_the_fluid_queue_ttft() -> None:
    """Above capacity the batch fills to its cap and the queue then grows at rate - capacity: the median
    request (arriving at T / 2 = N / (2 rate)) waits about q / capacity, finite and growing with N, where
    the infinite-horizon steady state has no TTFT at all (ZHJUNQIN-0056: TensorRT-LLM at 8 req/s on an RTX
    3090, 1,000 requests, median TTFT 37.6 s)."""
    r = _resolved(_plan(load="rate", request_rate=8.0, num_requests=1000))
    assert load_point(r, rate=8.0, cap=40).saturated
    step, _ = _iteration(r, 40, prefill_pass(r, 1, 214).seconds / 214)
    mu = 40 / step / 200  # requests/s at the cap
    assert mu < 8.0
    fill = 40 / (8.0 - mu)  # the batch fills at >= rate - mu requests/s (completions are below mu until then)
    pts = {n: rate_run_point(r, 8.0, n, cap=40) for n in (1000, 2000)}
    for n, pt in pts.items():
        assert pt.saturated
        half = n / 8.0 / 2.0
        hi = (8.0 - mu) * half / mu  # queued ahead of it, drained at mu
        lo = (8.0 - mu) * (half - fill) / mu
        assert lo <= pt.queue_s <= hi + 1.0
    assert pts[2000].ttft_s == pytest.approx(2 * pts[1000].ttft_s, rel=0.1)  # linear in the run's length
    result = evaluate(_plan(load="rate", request_rate=8.0, num_requests=1000))
    perf = result.performance
    assert perf is not None and perf.ttft_ms == pytest.approx(pts[1000].ttft_s * 1e3)
    assert "1000 requests over 125 s" in (perf.explanation or "")
    # one note says so (serving.overload_note)
    assert [n for n in result.notes if n.startswith("overloaded: 8 requests/s")
            and "1,000 requests over 125 s" in n and "queue grows through the run" in n]


def test_light_finite_run_throughput_counts_the_tail() -> None:
    """The benchmark's throughput is N x O over its duration: arrivals for N / rate seconds plus the last
    request's own duration (ZHJUNQIN-0001: 100 x 218 tokens at 1 req/s in 105 s, 207 tok/s, not 218).
    Far below capacity the median request sees the steady state."""
    r = _resolved(_plan(load="rate", request_rate=1.0, num_requests=100))
    steady = load_point(r, rate=1.0, cap=40)
    pt = rate_run_point(r, 1.0, 100, cap=40)
    duration = steady.ttft_s + 200 * steady.tpot_s
    assert pt.throughput_tok_s == pytest.approx(100 * 200 / (100 + duration), rel=0.03)
    assert pt.throughput_tok_s < steady.throughput_tok_s
    assert pt.tpot_s == pytest.approx(steady.tpot_s, rel=0.03)
    assert pt.ttft_s == pytest.approx(steady.ttft_s, rel=0.05)
    assert not pt.saturated
    # without num_requests the plan is the infinite-horizon steady state, as before
    perf = evaluate(_plan(load="rate", request_rate=1.0)).performance
    assert perf is not None and perf.throughput_tok_s == pytest.approx(200.0)


def test_near_capacity_a_finite_run_stays_below_the_steady_batch() -> None:
    """Near capacity the batch approaches Little's-law size with a time constant ~ duration / (1 - rho):
    a 1,000-request run at ~97 % load ends long before, so its median request sees a smaller batch (lower
    TPOT) than the steady state; the batch only grows over the run."""
    r = _resolved(_plan(load="rate", request_rate=1.0, num_requests=1000, max_num_seqs=256))
    cap_rps = 256 / _iteration(r, 256, prefill_pass(r, 1, 214).seconds / 214)[0] / 200
    rate = 0.97 * cap_rps
    steady = load_point(r, rate=rate, cap=256)
    short = rate_run_point(r, rate, 1000, cap=256)
    long = rate_run_point(r, rate, 20000, cap=256)
    assert short.running < steady.running and short.tpot_s < steady.tpot_s
    assert short.running <= long.running <= steady.running


def test_vllm_and_lmdeploy_gemms_at_geforce_half_rate() -> None:
    """cuBLAS FP32-accumulating GEMMs (vLLM's unquantised linears, TurboMind's FP16 linears) on a GeForce
    card run at its half tensor rate and reach efficiency.GEFORCE_HALF_RATE_GEMM_EFF of it, as TinyChat's
    FP16 path does, not the engines' full-rate figure (0.55 / 0.60)."""
    for engine in ("vllm", "lmdeploy", "trt-llm", "sglang"):
        r = _resolved(_plan(engine=engine))
        cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 214)
        t = prefill_pass(r, 1, 214)
        assert t.compute_s == pytest.approx(cost.flops / (eff.GEFORCE_HALF_RATE_GEMM_EFF * 71.0e12), rel=1e-6)
    # their 4-bit kernels are not the cuBLAS path: the engine's figure x QUANT_PREFILL_EFF, as before
    r = _resolved(_plan(engine="vllm", precision="awq"))
    cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 214)
    ce = eff.COMPUTE_EFF["vllm"]["gddr"] * eff.QUANT_PREFILL_EFF
    assert prefill_pass(r, 1, 214).compute_s == pytest.approx(cost.flops / (ce * 71.0e12), rel=1e-6)
    # a full-rate workstation card keeps the engine's own figure
    r = _resolved(_plan(gpu="NVIDIA RTX A6000", engine="vllm"))
    cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 214)
    ce = eff.COMPUTE_EFF["vllm"]["gddr"]
    assert prefill_pass(r, 1, 214).compute_s == pytest.approx(cost.flops / (ce * 154.8e12), rel=1e-6)


def test_sglang_prefill_on_geforce_is_the_half_rate_cublas_gemm() -> None:
    """SGLang's unquantised linears are F.linear (cuBLAS, FP32 accumulate), as vLLM's are: a 214-token Llama-3-8B
    prompt on an RTX 3090 (71 TFLOPS half-rate peak) costs ~3.0 TFLOP (2 x ~7.0e9 parameters of the layers x 214
    tokens, logits for the last token only, plus 0.012 TFLOP of causal attention), i.e. ~50 ms at 0.85 of the
    peak, where the inherited 0.55 gave ~77 ms. A full-rate card (RTX A6000, L4, A10G) keeps
    COMPUTE_EFF["sglang"]["gddr"]."""
    r = _resolved(_plan(engine="sglang"))
    cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 214)
    assert 2.9e12 < cost.flops < 3.1e12
    t = prefill_pass(r, 1, 214)
    assert t.compute_s == pytest.approx(cost.flops / (0.85 * 71.0e12), rel=1e-6)
    assert 0.047 < t.compute_s < 0.052
    r = _resolved(_plan(gpu="NVIDIA RTX A6000", engine="sglang"))
    cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 214)
    ce = eff.COMPUTE_EFF["sglang"]["gddr"]
    assert prefill_pass(r, 1, 214).compute_s == pytest.approx(cost.flops / (ce * 154.8e12), rel=1e-6)


def test_vllm_gddr_decode_reaches_its_published_batch1_speed() -> None:
    """Qwen2.5-7B-Instruct AWQ under vLLM 0.11 on an RTX 5060 Ti decodes at 79.0 tok/s (HOMELAB5060-0001,
    fit row); at the assumed 0.82 of the bandwidth figure it came out 71. TGI and gpt-fast keep theirs."""
    perf = evaluate({"model": {"name": "Qwen/Qwen2.5-7B-Instruct"},
                     "workload": {"precision": "awq", "engine": "vllm", "engine_version": "0.11.0",
                                  "batch_size": 1, "prompt_tokens": 35, "output_tokens": 100},
                     "hardware": {"gpu": "NVIDIA GeForce RTX 5060 Ti"}}).performance
    assert perf is not None and perf.decode_tok_s == pytest.approx(79.02, rel=0.05)
    assert eff.BW_EFF["vllm"]["gddr"] == eff.VLLM_GDDR_BW_EFF > eff.BW_EFF["tgi"]["gddr"]
    assert eff.BW_EFF["gpt-fast"]["gddr"] == eff.BW_EFF["tgi"]["gddr"]


def test_a_wave_past_the_batch_cap_reports_its_median_request() -> None:
    """512 users send 512 requests at once to vLLM V1 with a 256-sequence cap (LDSINGH-0023): ranks 1-256
    are admitted and prefilled FCFS in 2,048-token chunks, ranks 257-512 wait for a slot. The median
    request (rank 256) gets its first token after 256 prompts' work, no slot wait; the mean keeps the slot
    wait of the second half (the figure LMDeploy's FTL(ave) rows are compared with)."""
    data = {"model": {"name": "Qwen/Qwen2.5-7B-Instruct"},
            "workload": {"precision": "bf16", "engine": "vllm", "engine_version": "0.23.0", "batch_size": 512,
                         "load": "concurrency", "num_requests": 512, "prompt_tokens": 40, "output_tokens": 52},
            "hardware": {"gpu": "NVIDIA RTX A6000"}}
    r = _resolved(data)
    pt = load_point(r, users=512, cap=256, budget=2048, wave_weight=1.0)
    assert pt.running == 256
    # plus the API server's front end (serving.frontend_s), which every request's TTFT carries
    assert pt.ttft_s == pytest.approx(prefill_pass(r, 256, 40).seconds + frontend_s(r), rel=1e-9)
    assert pt.ttft_mean_s is not None and pt.ttft_mean_s > 2 * pt.ttft_s  # with the second half's slot wait
    perf = evaluate(data).performance
    assert perf is not None and perf.ttft_ms == pytest.approx(pt.ttft_s * 1e3)
    assert perf.ttft_mean_ms == pytest.approx(pt.ttft_mean_s * 1e3)
    # past the first wave the median request waits for the completions ahead of it too
    many = load_point(r, users=1024, cap=256, budget=2048, wave_weight=1.0)
    assert many.ttft_s > prefill_pass(r, 256, 40).seconds + 256 / many.requests_per_s
    # a wave within the cap: the median is the mean (one hump), no separate mean
    within = load_point(r, users=128, cap=256, budget=2048, wave_weight=1.0)
    assert within.ttft_mean_s is None


def test_validation_compares_a_mean_ttft_row_with_the_mean() -> None:
    """Rows saying `"statistic": "mean"` read the result's ttft_mean_ms where it exists (like for like)."""
    from mlrig.validation.runner import CalibrationRow, check

    plan = {"model": {"name": "Qwen/Qwen2.5-7B-Instruct"},
            "workload": {"precision": "bf16", "engine": "vllm", "engine_version": "0.23.0", "batch_size": 512,
                         "load": "concurrency", "num_requests": 512, "prompt_tokens": 40, "output_tokens": 52},
            "hardware": {"gpu": "NVIDIA RTX A6000"}}
    perf = evaluate(plan).performance
    assert perf is not None and perf.ttft_mean_ms is not None and perf.ttft_ms is not None
    row = {"id": "T-0001", "plan": plan, "metric": "ttft_ms", "value": 1000.0, "source_url": "x"}
    assert check(CalibrationRow(**row)).predicted == pytest.approx(perf.ttft_ms)
    assert check(CalibrationRow(**row, statistic="mean")).predicted == pytest.approx(perf.ttft_mean_ms)
