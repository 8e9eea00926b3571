"""vLLM admits a waiting request by the KV blocks of its prompt (kv_limit.VllmKvAdmission, issue 10)."""

from __future__ import annotations

import itertools

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import serving
from mlrig.estimators.kv_limit import VllmKvAdmission, vllm_admissible_sequences, vllm_admission_pool_tokens
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.planner import evaluate, parse_plan, resolve_arch


def test_v0_keeps_its_watermark_free_and_v1_admits_to_the_last_block() -> None:
    """V0's BlockSpaceManager keeps int(0.01 x blocks) free (can_allocate); V1 none: 47,040 tokens are 2,940
    blocks of 16, 29 kept free under V0."""
    assert vllm_admission_pool_tokens(47_040, v1=False) == (2_940 - 29) * 16 == 46_576
    assert vllm_admission_pool_tokens(47_040, v1=True) == 47_040
    assert vllm_admission_pool_tokens(47_045, v1=True) == 47_040  # whole blocks only


def test_admission_counts_the_prompt_blocks_not_the_output_to_come() -> None:
    """Fresh 255-token prompts take 16 blocks (256 tokens) each: 46,576 / 256 = 181.94 of them are admitted,
    where sequences that have grown to 219.6 output tokens each (and half a block of slack) fit 96.6."""
    assert vllm_admissible_sequences(46_576, 255, 0.0) == pytest.approx(46_576 / 256)
    assert vllm_admissible_sequences(46_576, 255, 219.6) == pytest.approx(46_576 / (255 + 219.6 + 7.5))
    # a prompt of exactly 16 blocks wastes nothing when fresh: a pool of N prompts admits exactly N
    assert vllm_admissible_sequences(10 * 256, 256, 0.0) == pytest.approx(10.0)
    # more output held, fewer admitted (monotone)
    counts = [vllm_admissible_sequences(46_576, 255, h) for h in (0, 4, 8, 16, 64, 256)]
    assert counts == sorted(counts, reverse=True)


def test_growth_preempts_the_newest_who_come_back_before_new_requests() -> None:
    """A pool of 100 fresh 16-token prompts (1,600 tokens): 100 admitted at once; after 16 decode iterations
    each holds 16 + 16 tokens and half a block of slack, 39.5, so 1,600 / 39.5 = 40.5 fit and 59.5 are preempted;
    they are re-admitted before any new request (the head of vLLM's waiting queue)."""
    kv = VllmKvAdmission(pool_tokens=1_600, prompt_tokens=16, held_cap=100.0)
    assert kv.limit() == pytest.approx(100.0)
    assert kv.step(0.0, 100.0, 0.0, 0.0, cap=256.0) == pytest.approx(100.0)
    assert kv.preempted == 0.0
    running = kv.step(100.0, 0.0, 0.0, 16.0, cap=256.0)
    assert kv.held == pytest.approx(16.0)
    assert running == pytest.approx(1_600 / 39.5)
    assert kv.preempted == pytest.approx(100.0 - 1_600 / 39.5)
    assert kv.readmitted(10.0) == pytest.approx(10.0)  # the first 10 admissions are preempted ones coming back
    left = kv.preempted
    assert kv.readmitted(100.0) == pytest.approx(left)  # then only what is left of them; the rest are new
    assert kv.preempted == 0.0
    # the held output never passes the steady state's (the pool then holds `running_slots`' batch)
    kv.step(running, 0.0, 0.0, 1_000.0, cap=256.0)
    assert kv.held == pytest.approx(100.0)
    # the batch cap binds before the pool does
    fresh = VllmKvAdmission(pool_tokens=1_600, prompt_tokens=16, held_cap=100.0)
    assert fresh.step(0.0, 100.0, 0.0, 0.0, cap=64.0) == pytest.approx(64.0)


def _plan(**w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "fp8", "engine": "vllm", "engine_version": "0.13.0", "load": "rate",
                             "prompt_tokens": 2_000, "output_tokens": 1_000, "max_model_len": 4_096,
                             "gpu_memory_utilization": 0.9, "lengths": "varied"}
    wl.update(w)
    return {"model": "meta-llama/Llama-3.1-8B-Instruct", "workload": wl, "hardware": {"gpu": "rtx-5070-ti"}}


def _resolved(data: dict[str, object]) -> ResolvedPlan:
    p = parse_plan(data)
    hw = data["hardware"]
    assert isinstance(hw, dict)
    return resolve(resolve_arch(p), p, resolve_gpu(str(hw["gpu"])))


def test_a_burst_on_a_16_gb_card_gets_first_tokens_by_its_prompt_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 16 GB card whose pool holds ~34.4k tokens (vLLM's share taken of the CUDA driver's total): 2,000-token
    prompts with exponential outputs of mean 1,000 run 11 at a time in the steady state (pool // 3,000: a running
    sequence holds O output tokens on average, `running_output_tokens`) but 17 fresh prompts' blocks fit (34,416 /
    2,000), so a burst's first tokens come to ~17 before anyone waits, and the median request of a 40-request burst
    waits for fewer completions than with the admissions capped at the steady 11; the capacity (the steady batch's)
    is the same."""
    data = _plan(request_rate=1_000.0, num_requests=40)
    r = _resolved(data)
    result = evaluate(data)
    kv_tokens = result.kv_cache_capacity_tokens
    assert kv_tokens is not None
    slots = serving.running_slots(kv_tokens, r.workload, "vllm")
    assert slots == kv_tokens // 3_000
    assert vllm_admissible_sequences(vllm_admission_pool_tokens(kv_tokens, True), 2_000, 0.0) >= slots + 2
    with_kv = serving.rate_run_point(r, 1_000.0, 40, slots=slots, cap=256, budget=2_048, kv_tokens=kv_tokens)
    without = serving.rate_run_point(r, 1_000.0, 40, slots=slots, cap=256, budget=2_048)
    assert with_kv.ttft_s < 0.9 * without.ttft_s
    assert with_kv.capacity_rps == pytest.approx(without.capacity_rps)
    # the plan takes it (serving_performance passes the pool), and without it the old figure comes back
    perf = result.performance
    assert perf is not None and perf.ttft_ms == pytest.approx(with_kv.ttft_s * 1e3, rel=1e-6)
    assert f"up to ~17 fresh prompts at once, ~{slots} once they have grown" in (perf.explanation or "")
    monkeypatch.setattr(serving, "vllm_kv_admission", lambda _r, _kv: None)
    old = evaluate(data).performance
    assert old is not None and old.ttft_ms == pytest.approx(without.ttft_s * 1e3, rel=1e-6)


def test_a_pool_that_never_binds_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short requests on the same card: the pool holds more than the batch cap, so the KV admission never
    binds and the rate run is the same as with an admission limit that never binds. (The same run without the
    KV admission takes the coarser steps of `serving.RATE_RUN_STEPS_PER_DURATION`, which give it 146 ms where
    finer steps, with or without it, give 69 ms.)"""
    data = _plan(prompt_tokens=60, output_tokens=256, request_rate=20.0, num_requests=200, max_num_seqs=64)
    perf = evaluate(data).performance
    monkeypatch.setattr(VllmKvAdmission, "limit", lambda _self: float("inf"))
    old = evaluate(data).performance
    assert perf is not None and old is not None
    assert perf.ttft_ms == pytest.approx(old.ttft_ms, rel=1e-9)
    assert perf.tpot_ms == pytest.approx(old.tpot_ms, rel=1e-9)
    assert perf.throughput_tok_s == pytest.approx(old.throughput_tok_s, rel=1e-9)


_SWEEP_RATES = (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 25, 50, 100)


@pytest.mark.parametrize("version", ["0.7.3", None])
def test_an_l4_rate_sweep_of_the_same_requests_rises_smoothly(version: str | None) -> None:
    """The same 300 requests (Llama-3-8B-Instruct bf16, 255 + 343 tokens, varied lengths) sent at 0.5-100 req/s
    to vLLM on an L4: the median TTFT never falls as the rate grows, and past the one pair of rates where the
    median request first has to wait for a slot (its TTFT from under 1 s to seconds) no neighbouring rate moves it
    more than ~2x. With ten fluid steps per request duration the KV admission's first fill depended on where the
    steps fell (`serving.RATE_RUN_KV_STEP_ITERATIONS`): 0.7.3 gave 5.1 / 4.9 / 3.6 / 2.4 / 3.2 / 22 s at
    6 / 8 / 10 / 15 / 25 / 50 req/s. The first pair past the crossing is the steepest: 3.3 -> 15.0 s (0.7.3) at
    2 -> 3 req/s since V0's profile counts its sampler's sort (a KV pool of 29,104 tokens, 36,000 before, when it
    was 3.6 -> 7.2 s at 4 -> 5 req/s), as before the KV admission (6.8 -> 14.5 s at 3 -> 4 req/s under V1); the
    pairs after it move it by less than ~2x. AccelMark measured this run at 41 / 61 / 65 s at 5 / 25 / 100 req/s
    (ACCELMARKGD-0016/-0018/-0020): 27 / 43 / 47 s here, 7 s at 5 req/s before. With the L4's board-power bound
    (hardware.board_power_tflops) V1 crosses at 3 -> 4 req/s to 2.2 s and reaches 6.0 s at 5: just past the
    capacity the wait grows with the excess rate, which one 25 % step of the grid can multiply several times."""
    ttft_ms = []
    for rate in _SWEEP_RATES:
        w: dict[str, object] = {"precision": "bf16", "engine": "vllm", "load": "rate", "request_rate": rate,
                                "num_requests": 300, "prompt_tokens": 255, "output_tokens": 343, "lengths": "varied"}
        if version:
            w["engine_version"] = version
        perf = evaluate({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "workload": w,
                         "hardware": {"gpu": "l4"}}).performance
        assert perf is not None and perf.ttft_ms is not None
        ttft_ms.append(perf.ttft_ms)
    pairs = list(zip(_SWEEP_RATES, _SWEEP_RATES[1:], ttft_ms, ttft_ms[1:], strict=False))
    assert all(b >= a for _r0, _r1, a, b in pairs), ttft_ms
    crossings = [(r0, r1) for r0, r1, a, b in pairs if a < 1_000.0 <= b]
    assert len(crossings) == 1, ttft_ms  # the median request starts to queue once
    past = [(a, b) for _r0, _r1, a, b in pairs if a >= 1_000.0]
    assert all(b / a <= 2.1 for a, b in past[1:]), ttft_ms


@pytest.mark.parametrize("version", ["0.7.3", None])
@pytest.mark.parametrize("gpu", ["l4", "a10", "rtx-3090"])
def test_a_median_ttft_that_falls_with_rate_is_called_bimodal(gpu: str, version: str | None) -> None:
    """Short prompts with long outputs (128 + 1,024, varied): a faster burst admits more fresh prompts before the
    grown sequences overflow the pool, so the median request (#150 of 300) can move from the waiting group into
    the first fill and its TTFT fall from minutes to under a second as the rate rises. Wherever the median TTFT
    falls by half or more between neighbouring rates, one of the two answers says the median sits at the first
    fill's edge (`serving.first_fill_edge_note`)."""
    results = []
    for rate in (0.5, 1, 2, 3, 4, 5, 6, 8, 10, 15, 25):
        w: dict[str, object] = {"precision": "bf16", "engine": "vllm", "load": "rate", "request_rate": rate,
                                "num_requests": 300, "prompt_tokens": 128, "output_tokens": 1024,
                                "lengths": "varied"}
        if version:
            w["engine_version"] = version
        perf = evaluate({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "workload": w,
                         "hardware": {"gpu": gpu}}).performance
        assert perf is not None and perf.ttft_ms is not None
        results.append((perf.ttft_ms, "at the edge between them" in (perf.explanation or "")))
    falls = [(a, b) for a, b in itertools.pairwise(results) if b[0] < 0.5 * a[0]]  # from one group to the other
    assert all(a[1] or b[1] for a, b in falls), results
