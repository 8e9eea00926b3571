"""vLLM V0's prefill passes under a Poisson load (serving.rate_run_point), against AccelMark's one-harness runs
(serving_accelmark.jsonl).

Hand check of the prefill capacity (Llama-3-8B, 255-token prompts): a full V0 prefill pass holds
max(max_model_len 4,096, 2,048) // 255 = 16 prompts; its time per prompt token is the admission limit of
the fluid model, 0.95 / (255 x t). At 100 req/s an A100 cannot keep up (t ~ 90 us: ~41 req/s); an H100
(t ~ 36 us: ~105 req/s) nearly can."""

from __future__ import annotations

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import prefill_pass
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.estimators.serving import (
    PREFILL_SHARE_MAX,
    rate_run_point,
    separate_prefill_passes,
    whole_prompt_pass_cap,
)
from mlrig.planner import evaluate, parse_plan, resolve_arch
from mlrig.validation.runner import load_rows


def _plan(gpu: str, **w: object) -> dict[str, object]:
    wl: dict[str, object] = {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": "0.7.3",
                             "batch_size": 1, "prompt_tokens": 255, "output_tokens": 343, "load": "rate",
                             "request_rate": 100, "num_requests": 300, "max_model_len": 4096}
    wl.update(w)
    return {"model": {"name": "meta-llama/Meta-Llama-3-8B-Instruct"}, "workload": wl,
            "hardware": {"gpu": gpu, "count": 1, "tensor_parallel": 1}}


def _resolved(data: dict[str, object]) -> ResolvedPlan:
    p = parse_plan(data)
    hw = data["hardware"]
    assert isinstance(hw, dict)
    return resolve(resolve_arch(p), p, resolve_gpu(str(hw["gpu"])))


def _ttft_ms(data: dict[str, object]) -> float:
    perf = evaluate(data).performance
    assert perf is not None and perf.ttft_ms is not None
    return perf.ttft_ms


def test_whole_prompt_pass_holds_what_v0_schedules() -> None:
    w = parse_plan(_plan("H100 SXM")).workload
    assert whole_prompt_pass_cap(w, 255, 256) == 16  # 4,096 // 255
    assert whole_prompt_pass_cap(w, 255, 10) == 10  # the free batch slots bound it too
    short = parse_plan(_plan("H100 SXM", max_model_len=1024)).workload
    assert whole_prompt_pass_cap(short, 255, 256) == 2048 // 255  # V0 never takes fewer than 2,048 tokens
    given = parse_plan(_plan("H100 SXM", max_num_batched_tokens=8192)).workload
    assert whole_prompt_pass_cap(given, 255, 256) == 32


def test_only_v0_vllm_runs_prefills_as_passes_of_their_own() -> None:
    assert separate_prefill_passes(_resolved(_plan("H100 SXM")), None)
    assert not separate_prefill_passes(_resolved(_plan("H100 SXM", engine_version="0.20.1")), 2048)
    for engine in ("trt-llm", "lmdeploy"):  # in-flight batching: context requests ride in the iteration
        assert not separate_prefill_passes(_resolved(_plan("H100 SXM", engine=engine, engine_version=None)), None)
    # LMDeploy before PR #775 (v0.1.0a1) prefilled new prompts in ContextDecode passes before each decode step
    assert separate_prefill_passes(_resolved(_plan("H100 SXM", engine="lmdeploy", engine_version="0.1.0a1")), None)


def test_v0_backlog_beyond_the_prefill_capacity_queues() -> None:
    """A100 at 100 req/s: prompts arrive faster than full prefill passes take them, so the median request
    (arriving at 1.5 s) waits for the backlog ahead of it, (rate - a_max) x 1.5 s / a_max. Measured p50
    TTFT 2,046 / 1,440 / 1,271 ms on an A100 80GB / A100 40GB / A800 (ACCELMARK-0032 / -0056 / -0068); the
    fluid model without the prefill limit admitted everything at once and gave 0.55-0.59 s."""
    data = _plan("A100 SXM4 80GB")
    r = _resolved(data)
    full = prefill_pass(r, 16, 255).seconds / (16 * 255)
    a_max = PREFILL_SHARE_MAX / (255 * full)
    assert 35 < a_max < 60
    backlog_s = (100 - a_max) * 1.5 / a_max
    ttft = _ttft_ms(data) / 1e3
    assert backlog_s <= ttft <= backlog_s + 1.0
    for gpu, measured in (("A100 SXM4 80GB", 2.046), ("A100 SXM4 40GB", 1.440), ("A800 SXM4 80GB", 1.271)):
        assert measured / 2 < _ttft_ms(_plan(gpu)) / 1e3 < measured * 2.2


def test_v0_batches_the_prompts_that_wait_and_a_new_one_waits_for_the_running_pass() -> None:
    """H100 at 100 req/s: the GPU prefills the arrivals in passes of a few prompts (the weights read once per
    pass), ~0.7 of its time, and an arrival waits for the decode pass that runs, not for the whole time
    between two of a sequence's tokens (TPOT, which spans the prefill passes too). Measured p50 TTFT 62.8 ms
    (ACCELMARK-0008), 5.5x over before (344 ms: every prompt priced as a pass of its own, 0.95 of the GPU)."""
    data = _plan("H100 SXM")
    r = _resolved(data)
    one = prefill_pass(r, 1, 255).seconds / 255
    three = prefill_pass(r, 3, 255).seconds / (3 * 255)
    assert three < 0.85 * one  # the weight read shared by the pass's prompts
    ttft = _ttft_ms(data)
    assert 62.8 < ttft < 62.8 * 3  # 174 ms: the H100's prefill near its capacity (the model's prefill is slow)
    full = prefill_pass(r, 16, 255).seconds / (16 * 255)
    assert PREFILL_SHARE_MAX / (255 * full) > 100  # full passes keep up with 100 req/s: no fluid backlog
    pt = rate_run_point(r, 100.0, 300, cap=256, budget=None)
    assert pt.queue_s < 0.15  # the prefill queue near its capacity, not a backlog (the A100's is seconds)


def test_accelmark_rows_from_engines_that_cache_prompts_say_so() -> None:
    """AccelMark's suite_A scenarios send the same prompts again within one engine process (3 runs of the
    same 100 / 150 / 300 prompts), so under SGLang's radix cache and vLLM V1's prefix caching (both on by
    default) the median request's prompt is cached; vLLM 0.7.3 (V0) has prefix caching off by default. The
    vLLM 0.20 streaming runs go through AsyncLLMEngine, whose ENGINE_CONTEXT usage keeps SchedulerConfig's
    128 sequences / 2,048 tokens."""
    seen = 0
    for row in load_rows():
        w = row.plan["workload"]
        if not row.id.startswith("ACCELMARK-") or w.get("prompt_tokens") != 255 or w.get("batch_size", 0) > 1:
            continue
        if row.plan["hardware"].get("count", 1) > 1:
            continue
        seen += 1
        caches = w["engine"] == "sglang" or w.get("engine_version") == "0.20.1"
        cached = w.get("cached_prompt_tokens", 0)
        assert (cached >= 247) == caches, row.id
        if w.get("engine_version") == "0.20.1":
            assert (w.get("max_num_seqs"), w.get("max_num_batched_tokens")) == (128, 2048), row.id
    assert seen >= 40
