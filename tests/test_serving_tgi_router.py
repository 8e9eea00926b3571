"""TGI's router before 3.0 (serving.tgi_burst_schedule / tgi_offline_burst; engines.tgi_*), against
huggingface/text-generation-inference at sha-11d7af7 (backends/v3/src/backend.rs `batching_task`, queue.rs
`State::next_batch`, launcher/src/main.rs) and the dstack MI300X runs (serving_tgi_dstack_mi300x_405b.jsonl).

Hand checks of the admission rule: 16 requests of 10,000-token prompts, 130,049 prefill tokens a batch (13
prompts), ratio 0.3: the first request alone, then 13 at once (floor(1 x 0.3) = 0 needed); then 2 wait, fewer than
floor(14 x 0.3) = 4, so they are taken only once 20 decode steps have passed since the last admission. Under the
old ratio 1.2 a batch of 13 is refused while floor(14 x 1.2) = 16 or more are needed, even with 26 waiting."""

from __future__ import annotations

from mlrig.estimators.engines import (
    tgi_chunked_prefill,
    tgi_max_batch_prefill_tokens,
    tgi_waiting_served_ratio,
)
from mlrig.estimators.serving import tgi_burst_schedule
from mlrig.planner import evaluate


def test_tgi_releases() -> None:
    assert not tgi_chunked_prefill("2024-10")  # the sha-11d7af7 ROCm build of 2024-10-04
    assert not tgi_chunked_prefill("2.4.1")
    assert tgi_chunked_prefill("3.0.0") and tgi_chunked_prefill("2024-12") and tgi_chunked_prefill(None)
    assert tgi_waiting_served_ratio("2.0.1") == 1.2
    assert tgi_waiting_served_ratio("2.0.2") == 0.3 and tgi_waiting_served_ratio("2024-10") == 0.3


def test_tgi_default_prefill_budget() -> None:
    # max_input_tokens + 50, max_input_tokens = --max-total-tokens - 1
    assert tgi_max_batch_prefill_tokens(None, 130_000, 131_072, 10_000) == 130_049
    # nothing given: the launcher caps max_position_embeddings at 4,096
    assert tgi_max_batch_prefill_tokens(None, None, 131_072, 80) == 4_145
    assert tgi_max_batch_prefill_tokens(None, None, 131_072, 10_000) == 10_050  # a longer prompt was allowed
    assert tgi_max_batch_prefill_tokens(8_192, 130_000, 131_072, 80) == 8_192


def test_waiting_requests_wait_for_the_ratio_or_twenty_steps() -> None:
    ops, spans = tgi_burst_schedule(16, 13, 10_000, 0.3, [30] * 16)
    assert ops[:3] == [("prefill", 1), ("decode", 1), ("prefill", 13)]
    assert ops[3:22] == [("decode", 14)] * 19
    assert ops[22] == ("prefill", 2)
    assert all(op == ("decode", 16) for op in ops[23:32])
    # request 0: 29 decode steps after its prefill, 1 + 19 + 9 of them before it ends
    assert spans[0] == (0, 31)
    assert spans[15][0] == 22


def test_old_ratio_needs_the_whole_batch_to_hold_the_minimum() -> None:
    ops, _ = tgi_burst_schedule(40, 13, 10_000, 1.2, [100] * 40)
    prefills = [(i, k) for i, (kind, k) in enumerate(ops) if kind == "prefill"]
    assert [k for _, k in prefills] == [1, 13, 13, 13]
    # the third batch comes only after max_waiting_tokens: 19 decode steps of 14 between the 2nd and 3rd prefills
    assert prefills[2][0] - prefills[1][0] == 20


def test_running_cap_bounds_admission() -> None:
    ops, _ = tgi_burst_schedule(10, 100, 4, 0.3, [5] * 10)
    assert max(k for kind, k in ops if kind == "decode") == 4


def _dstack_plan(requests: int, version: str) -> dict[str, object]:
    return {"model": {"name": "meta-llama/Llama-3.1-405B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "tgi", "engine_version": version,
                         "prompt_tokens": 10_000, "output_tokens": 119, "lengths": "varied", "load": "offline",
                         "num_requests": requests, "max_num_seqs": 8192, "max_model_len": 130_000},
            "hardware": {"gpu": "AMD Instinct MI300X", "count": 8, "tensor_parallel": 8}}


def test_later_prefills_stall_earlier_requests_decoding() -> None:
    # DSTACKTGI-0055: 64 requests of 10,000-token prompts, median TPOT 872 ms against 47 ms for one request
    perf = evaluate(_dstack_plan(64, "2024-10")).performance
    assert perf is not None and perf.tpot_ms is not None
    assert 0.8 * 872 < perf.tpot_ms < 1.2 * 872
    one = evaluate(_dstack_plan(1, "2024-10")).performance
    assert one is not None and one.tpot_ms is not None and one.tpot_ms < 80
    # TGI 3.0 prefills in chunks beside the decodes: no whole-batch stall, but the 31.5 prompts behind the median
    # request still land between its tokens, one chunk per decode step (`serving.chunked_burst_tpot_extra_s`): its
    # TPOT is a 4,096-token chunked pass, the same order as the stalled one, far above a plain decode step
    chunked = evaluate(_dstack_plan(64, "3.0.0")).performance
    assert chunked is not None and chunked.tpot_ms is not None
    assert 0.5 * perf.tpot_ms < chunked.tpot_ms < 2.0 * perf.tpot_ms
    assert chunked.tpot_ms > 5 * one.tpot_ms
