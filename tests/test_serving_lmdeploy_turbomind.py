"""LMDeploy TurboMind's scheduler by release (engines.lmdeploy_unified_iterations, engines.lmdeploy_prefill_budget,
serving.lmdeploy_iteration_budget): before PR #775 (v0.1.0a1 and older) new prompts are prefilled in passes of their
own before each decode step; from v0.1.0a2 one `forwardUnified` pass per iteration carries the decodes and the
prompts' tokens up to a budget (session_len, then max_prefill_token_num 8,192); the default max_batch_size by
device from v0.6 (engines.lmdeploy_default_max_batch_size)."""

from __future__ import annotations

import json

import pytest
from calibration_lookup import row

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import serving
from mlrig.estimators.engines import lmdeploy_default_max_batch_size, lmdeploy_unified_iterations
from mlrig.planner import evaluate, parse_plan
from mlrig.validation import calibration_dir


def _plan(**w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "fp16", "engine": "lmdeploy", "kv_cache_precision": "fp16",
                             "load": "concurrency", "batch_size": 16, "prompt_tokens": 2048, "output_tokens": 128}
    wl.update(w)
    return {"model": {"name": "meta-llama/Llama-2-13b-chat-hf"}, "workload": wl,
            "hardware": {"gpu": "A100 SXM4 80GB", "count": 1, "tensor_parallel": 1}}


@pytest.mark.parametrize(("version", "unified"), [
    ("0.0.14", False), ("0.1.0a0", False), ("0.1.0a1", False), ("v0.1.0a1", False),  # before PR #775
    ("0.1.0a2", True), ("0.1.0", True), ("0.1", True), ("0.2.0", True), ("0.10", True), (None, True),
])
def test_unified_iterations_from_pr_775(version: str | None, unified: bool) -> None:
    """PR #775 (merged 2023-12-04) is in the tag v0.1.0a2 (2023-12-06) and not in v0.1.0a1 (2023-11-29): read from
    InternLM/lmdeploy's history. A series ("0.1") is its newest release, 0.1.0."""
    assert lmdeploy_unified_iterations(version) is unified


@pytest.mark.parametrize(("version", "model", "gpu", "tokens"), [
    ("0.1.0a1", "meta-llama/Llama-2-13b-chat-hf", "A100 SXM4 80GB", None),  # ContextDecode passes: no budget
    ("0.1.0", "meta-llama/Llama-2-13b-chat-hf", "A100 SXM4 80GB", 4096),  # session_len (max_position_embeddings)
    ("0.2.0", "meta-llama/Llama-2-13b-chat-hf", "A100 SXM4 80GB", 4096),
    ("0.4.0", "meta-llama/Meta-Llama-3-8B-Instruct", "NVIDIA GeForce RTX 3090", 8192),  # min(8,192, 8,192)
    ("0.4.0", "meta-llama/Llama-2-13b-chat-hf", "A100 SXM4 80GB", 4096),  # min(8,192, 4,096)
    ("0.6.0", "meta-llama/Llama-2-13b-chat-hf", "A100 SXM4 80GB", 8192 + 256),  # 8,192 + max_batch_size
    ("0.10.0", "meta-llama/Meta-Llama-3-8B-Instruct", "H100 SXM5 80GB", 8192 + 1024),
    ("0.10.0", "meta-llama/Meta-Llama-3-8B-Instruct", "NVIDIA GeForce RTX 3090", 8192 + 128),
])
def test_turbomind_iteration_budget_by_release(version: str, model: str, gpu: str, tokens: int | None) -> None:
    """Hand-read from LlamaBatch.cc / LlamaTritonModel.cc / target_model/base.py at each tag (engines.py's notes)."""
    data = _plan(engine_version=version)
    data["model"] = {"name": model}
    data["hardware"] = {"gpu": gpu}
    plan = parse_plan(data)
    from mlrig.planner import resolve_arch

    arch = resolve_arch(plan)
    assert serving.prefill_budget(plan, "lmdeploy", resolve_gpu(gpu), True, arch.max_position_embeddings) == tokens


def test_a_plans_max_num_batched_tokens_is_max_prefill_token_num() -> None:
    a100 = resolve_gpu("A100 SXM4 80GB")
    old = parse_plan(_plan(engine_version="0.4.0", max_num_batched_tokens=2048))
    new = parse_plan(_plan(engine_version="0.10.0", max_num_batched_tokens=2048, max_num_seqs=64))
    assert serving.prefill_budget(old, "lmdeploy", a100, True, 4096) == 2048
    assert serving.prefill_budget(new, "lmdeploy", a100, True, 4096) == 2048 + 64  # the decodes come on top
    pre = parse_plan(_plan(engine_version="0.1.0a1", max_num_batched_tokens=2048))
    assert serving.prefill_budget(pre, "lmdeploy", a100, True, 4096) is None


@pytest.mark.parametrize(("version", "gpu", "cap"), [
    ("0.4.0", "H100 SXM5 80GB", 128), ("0.6.0", "A100 SXM4 80GB", 256), ("0.9.0", "H100 SXM5 80GB", 512),
    ("0.9.0", "H200 SXM 141GB", 128), ("0.10.0", "H200 SXM 141GB", 1024), ("0.10.0", "A100 SXM4 40GB", 384),
    (None, "H100 SXM5 80GB", 1024), ("0.10.0", "L40S", 128), ("0.6.0", "NVIDIA GeForce RTX 4090", 128),
    # a series stands for its newest release: "0.10" (v0.10.x) has v0.10.0's table, "0.6" v0.6's, "0.5" none
    ("0.10", "H100 SXM5 80GB", 1024), ("0.10+pytorch", "A100 SXM4 80GB", 384), ("0.6", "H100 SXM5 80GB", 512),
    ("0.5", "H100 SXM5 80GB", 128), ("0.18+pytorch", "H200 SXM 141GB", 1024),
])
def test_default_max_batch_size_by_release_and_device(version: str | None, gpu: str, cap: int) -> None:
    """lmdeploy/utils.py get_max_batch_size: v0.6.0 (PR #2434) a100/a800 256, h100/h800 512, else 128; v0.10.0
    (PR #3921) a100/a800 384, h100/h800/h200/l20y 1,024; before v0.6 TurbomindEngineConfig's 128."""
    g = resolve_gpu(gpu)
    assert lmdeploy_default_max_batch_size(g, version) == cap
    assert serving.batch_cap(parse_plan(_plan(engine_version=version)), "lmdeploy", g, True) == cap


def test_a_wave_waits_for_all_prompts_before_pr_775_and_for_its_share_after() -> None:
    """16 users of 2,048-token prompts, Llama-2-13B on an A100 (LMDEPLOY-0053, measured on v0.1.0a1: mean first-token
    latency 3.44 s, min 0.245 s, max 3.67 s, 16 x 0.242 s = 3.87 s of prefill): the old scheduler hands the wave's
    first tokens out together after its whole prefill; TurboMind's unified iterations (two prompts per 4,096-token
    iteration) hand them out pair by pair, about half of that on average."""
    old = evaluate(_plan(engine_version="0.1.0a1")).performance
    new = evaluate(_plan(engine_version="0.2.0")).performance
    assert old and new and old.ttft_ms and new.ttft_ms
    old_mean, new_mean = old.ttft_mean_ms or old.ttft_ms, new.ttft_mean_ms or new.ttft_ms  # one wave: no mean apart
    assert old_mean == pytest.approx(3442.0, rel=0.35)
    assert new_mean < 0.7 * old_mean


def test_decodes_ride_in_turbomind_iterations() -> None:
    """From PR #775 the running requests decode in the iterations that prefill a wave's prompts, so a fixed-length
    closed loop drifts apart as vLLM's chunked loop does (serving.closed_loop_wave_share); before it they stall."""
    assert serving.decodes_ride_in_prefill_chunks("lmdeploy", 4096)
    assert not serving.decodes_ride_in_prefill_chunks("lmdeploy", None)
    w = parse_plan(_plan(engine_version="0.2.0", num_requests=48)).workload
    assert serving.closed_loop_wave_share(w, "lmdeploy", 4096) == pytest.approx(16 / 48)
    assert serving.closed_loop_wave_share(w, "lmdeploy", None) == 1.0


def test_lmdeploy_a100_table_rows_name_the_release_they_measured() -> None:
    """The LMDEPLOY rows come from docs/en/benchmark/a100_fp16.md, whose first version (PR #794, 2023-12-06) says
    "The tested lmdeploy version is `v0.1.0a1`"; the v0.1.0 page relabelled the same figures."""
    rows = [json.loads(line) for line in (calibration_dir() / "serving_lmdeploy_a100.jsonl").read_text().splitlines()]
    a100 = [r for r in rows if r["id"].startswith("LMDEPLOY-")]
    assert len(a100) == 208
    assert {r["plan"]["workload"]["engine_version"] for r in a100} == {"0.1.0a1"}
    assert all(not lmdeploy_unified_iterations(r["plan"]["workload"]["engine_version"]) for r in a100)


def test_old_turbomind_prefills_a_loops_co_arrivals_before_the_first_tokens() -> None:
    """LlamaBatch.cc `InternalThreadEntry` at v0.1.0a1: each loop dequeues every queued request, `ContextDecode()`
    prefills all of them, then one `Generate()` samples their first tokens. A request's own part of TTFT is then
    its prompt and the lam x step others dequeued with it (serving.turbomind_co_arrivals), not its prompt alone
    behind an FCFS prefill queue; from v0.1.0a2 (unified iterations) the rule does not apply."""
    from mlrig.estimators.resolved import resolve
    from mlrig.planner import resolve_arch

    p = parse_plan(row("LMDEPLOY-0204").plan)  # Llama-2-70B, TP 4, 128 users, ShareGPT (248 in / 233 out)
    r = resolve(resolve_arch(p), p, resolve_gpu("A100 SXM4 80GB"))
    assert serving.turbomind_loop_prefill(r, None)
    assert not serving.turbomind_loop_prefill(r, 4096)
    lam, step, t_p = 6.0, 0.080, 0.25e-3  # req/s, s, s per prompt token: hand values
    wait, own, dec_only = serving._admitted_ttft(r, 128, lam, step, t_p, t_p, None, others=127, closed_loop=True)
    assert serving.turbomind_co_arrivals(lam, step) == pytest.approx(0.48)
    assert own - dec_only == pytest.approx(248 * 0.25e-3 * 1.48)  # 91.8 ms: its prompt and 0.48 others'
    assert wait == pytest.approx(step)  # the closed loop's whole iteration (no front end), no FCFS queue on top
    new = parse_plan({**p.model_dump(mode="json"), "workload": {**p.workload.model_dump(mode="json"),
                                                                 "engine_version": "0.2.0"}})
    r_new = resolve(resolve_arch(new), new, resolve_gpu("A100 SXM4 80GB"))
    assert not serving.turbomind_loop_prefill(r_new, None)


@pytest.mark.parametrize(("row_id", "measured_ms"), [("LMDEPLOY-0188", 412.0), ("LMDEPLOY-0204", 633.0)])
def test_sharegpt_mean_ttft_counts_the_co_dequeued_prompts(row_id: str, measured_ms: float) -> None:
    """LMDeploy's own A100 table (v0.1.0a1, profile_throughput on ShareGPT, 128 users, mean first-token latency
    0.412 s for Llama-2-13B, 0.633 s for Llama-2-70B at TP 4): the co-dequeued prompts bring the predictions to
    351 / 447 ms (332 / 416 ms with the request's prompt alone)."""
    perf = evaluate(row(row_id).plan).performance
    assert perf is not None and perf.ttft_mean_ms is not None
    assert perf.ttft_mean_ms == pytest.approx(measured_ms, rel=0.33)
    assert perf.ttft_mean_ms > {"LMDEPLOY-0188": 345.0, "LMDEPLOY-0204": 440.0}[row_id]


@pytest.mark.parametrize(("version", "group", "kv_8bit", "reads"), [
    ("0.0.14", 8, False, 8.0),  # FasterTransformer's masked MHA: one query head per block
    ("0.1.0a1", 8, False, 2.0),  # HeadPerCta 4 (the branch for 8 commented out): Llama-2-70B reads twice
    ("0.1.0a1", 4, False, 1.0),
    ("0.2.0", 6, False, 3.0),  # 6 % 4 != 0, 6 % 2 == 0: HeadPerCta 2
    ("0.2.6", 8, True, 8.0),  # int8 cache: HeadPerCta 1
    ("0.2", 8, False, 2.0),  # a series: its newest release, 0.2.6
    ("0.3.0", 8, False, 1.0),  # PR #1116: Qh 8
    ("0.3.0", 8, True, 4.0),  # v0.3's sm80 int8 path: Qh 2
    ("0.4.0", 7, False, 7.0),  # v0.4.0: Qh 8 / 6 / 4, else 1
    ("0.4.1", 7, False, 1.0),  # PR #1491, variable CTA_H: one Qh per group size
    ("0.10", 8, False, 1.0), (None, 8, False, 1.0),
    ("0.1.0a1", 1, False, 1.0),  # multi-head attention: nothing shared
])
def test_turbomind_decode_reads_the_cache_once_per_block_of_query_heads(
        version: str | None, group: int, kv_8bit: bool, reads: float) -> None:
    """Hand-read from InternLM/lmdeploy at each tag: decoder_multihead_attention.cu `DispatchDecoderMultiheadAttention`
    (v0.1.0a0-v0.2.6), kernels/attention/decoding.cu `dispatchDecoding` (v0.3.0, v0.4.0, v0.4.1)."""
    from mlrig.estimators.engines import turbomind_kv_reads_per_step

    assert turbomind_kv_reads_per_step(group, version, kv_8bit) == reads


def test_llama2_70b_tp4_decode_on_turbomind_01_pays_the_second_cache_read() -> None:
    """LMDeploy's own A100 table (v0.1.0a1, profile_generation): Llama-2-70B at TP 4, 64 users of 2,048 + 2,048
    tokens decode at 55 ms per token (LMDEPLOY-0172), 37 ms at 128 + 128 (LMDEPLOY-0164). Read once, the cache
    (~0.33 MB per token, ~3,000 tokens held by each of 64 users) put the long-context step at 42 ms (-24 %); read
    twice (HeadPerCta 4 for a group of 8) it comes to ~52 ms. The short-context row hardly moves."""
    long_ctx = evaluate(row("LMDEPLOY-0172").plan).performance
    short_ctx = evaluate(row("LMDEPLOY-0164").plan).performance
    assert long_ctx is not None and short_ctx is not None
    assert long_ctx.tpot_ms == pytest.approx(55.0, rel=0.10)
    assert long_ctx.tpot_ms > 48.0
    assert short_ctx.tpot_ms == pytest.approx(37.0, rel=0.12)
    from mlrig.estimators.performance import decode_kv_read_factor
    from mlrig.planner import resolve_arch

    arch = resolve_arch(parse_plan(row("LMDEPLOY-0172").plan))  # 64 query heads over 8 KV heads
    assert decode_kv_read_factor(arch, "lmdeploy", engine_version="0.1.0a1") == 2.0
    assert decode_kv_read_factor(arch, "lmdeploy", engine_version="0.1.0a1", kv_bytes_per_element=1.0) == 8.0
    assert decode_kv_read_factor(arch, "lmdeploy", engine_version="0.4.1") == 1.0
    assert decode_kv_read_factor(arch, "vllm", engine_version="0.1.0a1") == 1.0  # TurboMind's rule only
