"""Rate runs of varied outputs cut at the client's max_tokens: young requests end at the exponential's hazard."""

from __future__ import annotations

import math
from typing import Any

from mlrig.estimators.serving import CappedCompletions, capped_exponential_scale
from mlrig.planner import evaluate, parse_plan


def _plan(**w: Any) -> dict[str, Any]:
    """ACCELMARK-0044's setup: vLLM 0.20 on an A100 80GB, 300 ShareGPT requests at 100 req/s into 128 slots."""
    wl: dict[str, Any] = {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": "0.20.1",
                          "batch_size": 1, "prompt_tokens": 255, "output_tokens": 343, "max_output_tokens": 512,
                          "load": "rate", "lengths": "varied", "request_rate": 100, "num_requests": 300,
                          "max_model_len": 4096, "cached_prompt_tokens": 247, "max_num_seqs": 128,
                          "max_num_batched_tokens": 2048}
    wl.update(w)
    return {"model": {"name": "meta-llama/Meta-Llama-3-8B-Instruct"}, "workload": wl,
            "hardware": {"gpu": "A100 SXM4 80GB", "count": 1, "tensor_parallel": 1}}


def test_cohorts_end_at_the_cap_by_hand() -> None:
    """AccelMark's lengths (mean 343 under a 512 cap): mu ~ 593 and e^(-512 / mu) ~ 42 % of a cohort reach the
    cap, all of them in the iteration that takes them there, none before."""
    w = parse_plan(_plan()).workload
    done = CappedCompletions.of(w)
    assert done is not None
    mu = capped_exponential_scale(343.0, 512)
    assert done.per_token == mu and 585 < mu < 600
    assert math.isclose(done.survive, math.exp(-512 / mu)) and 0.41 < done.survive < 0.43
    done.admit(10.0)
    assert done.crossing(511.0) == 0.0
    assert math.isclose(done.crossing(1.0), 10.0 * done.survive)
    assert done.crossing(1000.0) == 0.0  # each cohort ends once


def test_steady_state_completions_are_the_admissions() -> None:
    """Admissions a per iteration for long enough: n = a x O running, and n / mu + a e^(-C / mu) = a."""
    w = parse_plan(_plan()).workload
    done = CappedCompletions.of(w)
    assert done is not None
    running, per_iter, last = 0.0, 2.0, 0.0
    for _ in range(5000):
        ended = running / done.per_token + done.crossing(1.0)
        running += per_iter - ended
        done.admit(per_iter)
        last = ended
    assert math.isclose(last, per_iter, rel_tol=1e-6)
    assert math.isclose(running, per_iter * 343.0, rel_tol=1e-3)


def test_no_cap_or_fixed_lengths_keep_the_single_rate() -> None:
    assert CappedCompletions.of(parse_plan(_plan(max_output_tokens=None)).workload) is None
    assert CappedCompletions.of(parse_plan(_plan(lengths="fixed")).workload) is None
    assert CappedCompletions.of(parse_plan(_plan(max_output_tokens=300)).workload) is None  # all reach the cap


def test_a_burst_of_young_requests_frees_its_slots_slowly() -> None:
    """ACCELMARK-0044 measured a median TTFT of 1.71 s: the 128 slots fill in 1.3 s and the median request waits
    for the first completions of a batch whose requests are all young. With the fluid's 1 / O hazard it came out
    0.45 s; with the capped lengths' 1 / mu it is ~1.35 s. Without a cap (mu = O) nothing changes."""
    capped = evaluate(_plan()).performance.ttft_ms
    uncapped = evaluate(_plan(max_output_tokens=None)).performance.ttft_ms
    assert capped is not None and uncapped is not None
    assert 1000 < capped < 1710 * 1.2
    assert capped > 2 * uncapped
