"""vLLM's KV pool under lock-step loads: full-length footprint, preemption by recompute, the persistent queue."""

from __future__ import annotations

from types import SimpleNamespace

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.kv_limit import kv_limited_running_batch
from mlrig.estimators.performance import prefill_pass
from mlrig.estimators.resolved import resolve
from mlrig.estimators.serving import (
    lockstep_pool,
    lockstep_recompute_s,
    lockstep_round_admits_all,
    serving_performance,
)
from mlrig.planner import parse_plan, resolve_arch


def _resolved(**w: object):  # type: ignore[no-untyped-def]
    wl: dict[str, object] = {"precision": "fp16", "engine": "vllm", "engine_version": "0.7.3",
                             "prompt_tokens": 1024, "output_tokens": 1024, "load": "concurrency",
                             "batch_size": 64, "num_requests": 500, "lengths": "fixed"}
    wl.update(w)
    p = parse_plan({"model": "llama-3-8b", "workload": wl, "hardware": {"gpu": "a100-sxm-80gb"}})
    return resolve(resolve_arch(p), p, resolve_gpu("a100-sxm-80gb"))


def test_a_pool_of_exactly_k_full_sequences_runs_k_in_lockstep() -> None:
    """Hand check: a pool of 20 x (1,024 + 1,024) tokens holds 20 sequences at their full length; at the mean
    footprint (1,536) it would hold 26. Lock-step sequences all reach full length together: 20."""
    pool = 20 * 2048
    assert kv_limited_running_batch(pool, 1024, 1024, "vllm", lockstep=True) == 20
    assert kv_limited_running_batch(pool, 1024, 1024, "vllm") == 26
    assert kv_limited_running_batch(pool - 1, 1024, 1024, "vllm", lockstep=True) == 19


def test_only_fixed_length_vllm_runs_are_lockstep() -> None:
    w = _resolved().workload
    assert lockstep_pool(w, "vllm", 1.0)
    assert not lockstep_pool(w, "vllm", 0.25)  # a loop that drifts out of step
    assert not lockstep_pool(w, "lmdeploy", 1.0)
    assert not lockstep_pool(_resolved(lengths="varied").workload, "vllm", 1.0)
    assert lockstep_pool(_resolved(load="offline", batch_size=1).workload, "vllm", 0.0)


def test_recompute_of_k_preempted_by_hand() -> None:
    """A pool of exactly k = 20 full sequences (1,024 + 1,024) admits 40 prompts (pool // 1,024); they fill the
    pool after g1 = (40,960 - 40 x 1,024) / 40 = 0 tokens, so the 20 preempted have generated 0..1,024 tokens,
    512 on average: 20 prompts of 1,024 + 512 re-prefilled over the round's 1,024 iterations."""
    r = _resolved()
    got = lockstep_recompute_s(r, 20 * 2048, 40, 20)
    assert got == prefill_pass(r, 20, 1536).seconds / 1024
    assert got > 0
    assert lockstep_recompute_s(r, 20 * 2048, 20, 20) == 0.0  # nobody preempted


def _perf(kv: int, **w: object):  # type: ignore[no-untyped-def]
    return serving_performance(_resolved(**w), SimpleNamespace(engine="vllm", kv_cache_capacity_tokens=kv))


def test_a_bigger_pool_never_lowers_throughput() -> None:
    for load in ({"load": "concurrency", "batch_size": 128}, {"load": "offline", "num_requests": 1000}):
        last = 0.0
        for kv in range(8_000, 300_000, 4_000):
            thr = _perf(kv, **load).throughput_tok_s
            assert thr is not None and thr >= last * (1 - 1e-9), (load, kv)
            last = thr


def test_users_beyond_the_pool_queue_every_round() -> None:
    """128 users of 1,024 + 1,024 tokens, 500 requests, on a pool of 64 full sequences: each round runs 64 and
    the other 64 wait a whole request, round after round (FCFS: the finished users' next requests queue
    behind them), so the median request's TTFT holds a request's duration. Before, the opening wave's median
    member (rank 64, within the first 64) was reported: one prefill wave."""
    pool = 64 * 2048
    full = _perf(pool, batch_size=128)
    roomy = _perf(128 * 2048, batch_size=128)
    assert full.ttft_ms is not None and roomy.ttft_ms is not None and full.tpot_ms is not None
    assert full.ttft_ms > 1024 * full.tpot_ms * 0.8  # about one request's decode time queued
    assert roomy.ttft_ms < 0.3 * full.ttft_ms  # one wave of 128 prompts, no queue
    assert "capped at 64 running" in (full.explanation or "")


def test_an_offline_run_preempts_only_what_is_left_of_it() -> None:
    """Hand check: 1,500 requests of 128 + 4,096 tokens admitted at once on a pool of exactly 449 full
    sequences (449 x 4,224 = 1,896,576 tokens; 14,817 prompts' room): rounds of 449 survivors preempt 1,051,
    then 602 of the 1,051 left, then 153 of the 602: 1,806 over 1,500 / 449 rounds, 540.6 per round (not
    1,051 in each). g1 = (1,896,576 - 1,500 x 128) / 1,500 = 1,136.4 tokens, so the preempted are re-prefilled
    at 128 + (1,136.4 + 4,096) / 2 = 2,744 tokens."""
    r = _resolved(prompt_tokens=128, output_tokens=4096, load="offline", num_requests=1500)
    pool = 449 * 4224
    per_round = 1806 * 449 / 1500
    want = prefill_pass(r, 541, 2744).seconds * per_round / 541 / 4096
    got = lockstep_recompute_s(r, pool, 1500, 449, 1500)
    assert abs(got / want - 1) < 1e-12
    closed = lockstep_recompute_s(r, pool, 1500, 449)  # a closed loop: 1,051 every round
    assert abs(closed / (prefill_pass(r, 1051, 2744).seconds / 4096) - 1) < 1e-12


def test_a_round_the_pool_takes_back_whole_has_no_slot_queue_by_hand() -> None:
    """Hand check: 128 users of 1,024 + 1,024 tokens on a pool of 100 full sequences (204,800 tokens). A round
    admits all 128 prompts (131,072 tokens), fills the pool after g1 = (204,800 - 131,072) / 128 = 576 tokens
    each, and ends with 100; the 28 preempted come back at 1,024 + (576 + 1,024) / 2 = 1,824 tokens: 28 x 1,824
    + 100 x 1,024 = 153,472 <= 204,800, so the next round is admitted whole. On a pool of 64 full sequences
    (131,072) the 64 preempted at 1,536 and 64 prompts need 163,840: they queue."""
    assert lockstep_round_admits_all(100 * 2048, 128, 100, 256, 1024, 1024)
    assert not lockstep_round_admits_all(64 * 2048, 128, 64, 256, 1024, 1024)
    assert not lockstep_round_admits_all(100 * 2048, 128, 100, 110, 1024, 1024)  # the batch cap holds users back
    assert not lockstep_round_admits_all(None, 128, 100, 256, 1024, 1024)
    assert not lockstep_round_admits_all(100 * 2048, 100, 100, 256, 1024, 1024)  # nobody preempted: no queue
    # exactly at the boundary: 28 x 1,824 + 100 x 1,024 = 153,472 tokens of a pool that holds 100 x 2,048
    assert lockstep_round_admits_all(100 * 2048, 128, 100, None, 1024, 1024)


def test_a_round_taken_back_whole_waits_for_its_wave_not_a_request() -> None:
    """With the pool 4 % short of 128 full sequences (DSTACKR1-0149's case) the median TTFT is the round's wave
    (and the preempted few's re-prefill), not a request's duration in the slot queue as on a pool half as big."""
    short = _perf(int(0.96 * 128 * 2048), batch_size=128)
    roomy = _perf(128 * 2048, batch_size=128)
    half = _perf(64 * 2048, batch_size=128)
    assert short.ttft_ms is not None and roomy.ttft_ms is not None and half.ttft_ms is not None
    assert short.tpot_ms is not None
    assert roomy.ttft_ms <= short.ttft_ms < 1.5 * roomy.ttft_ms
    assert short.ttft_ms < 0.3 * 1024 * short.tpot_ms  # no request-long slot wait
    assert half.ttft_ms > 1024 * half.tpot_ms * 0.8


def test_the_concurrency_curve_takes_the_same_round_back() -> None:
    """`serve`'s curve prices the same closed loop as `plan` does (one speed path)."""
    from mlrig.estimators.serving import serving_curve

    kv = int(0.96 * 128 * 2048)
    plan = _perf(kv, batch_size=128)
    point = serving_curve(_resolved(batch_size=128), [128], kv)[0]
    assert plan.ttft_ms is not None
    assert abs(point.ttft_ms / plan.ttft_ms - 1) < 1e-9
