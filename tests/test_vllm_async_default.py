"""vLLM turns async scheduling on by default from 0.14.0 (engines.VLLM_ASYNC_SCHEDULING_FROM): read in the release
wheels, 0.13.0's SchedulerConfig has `async_scheduling: bool = False` and 0.14.0's `Field(default=None)`, which
VllmConfig.__post_init__ turns on. 0.12 was assumed before; AZIR5070TI's vLLM 0.13 rows (fit) were priced with an
iteration they do not wait for."""

from __future__ import annotations

import pytest

from mlrig.estimators.engines import vllm_async_scheduling_default
from mlrig.planner import evaluate


@pytest.mark.parametrize(("version", "on"), [
    ("0.11.2", False), ("0.12.0", False), ("0.13.0", False), ("0.13.0+faa43dbf.nv26.01", False),
    ("0.14.0", True), ("0.18.0", True), (None, True),
])
def test_async_scheduling_default_by_release(version: str | None, on: bool) -> None:
    assert vllm_async_scheduling_default(version) is on


def test_a_013_closed_loop_waits_one_iteration_less_than_014() -> None:
    """The same closed loop of 8 users on an RTX 5070 Ti: 0.14's request waits for the iteration already scheduled
    after the running one, 0.13's does not, so its median TTFT is about one decode iteration lower (TPOT ~9-12 ms
    there; AZIR5070TI-0074 measured 35.1 ms under 0.13)."""
    def perf(version: str) -> tuple[float, float]:
        p = evaluate({"model": "meta-llama/Llama-3.1-8B-Instruct",
                      "workload": {"task": "inference", "precision": "fp8", "engine": "vllm", "engine_version": version,
                                   "load": "concurrency", "batch_size": 8, "num_requests": 80, "prompt_tokens": 60,
                                   "cached_prompt_tokens": 48, "output_tokens": 256},
                      "hardware": {"gpu": "NVIDIA GeForce RTX 5070 Ti", "count": 1}}).performance
        assert p is not None and p.ttft_ms is not None and p.tpot_ms is not None
        return p.ttft_ms, p.tpot_ms

    (old_ttft, old_tpot), (new_ttft, new_tpot) = perf("0.13.0"), perf("0.14.0")
    assert old_tpot == pytest.approx(new_tpot, rel=1e-6)  # the per-sequence host time is 0 for both
    assert 0.5 * new_tpot < new_ttft - old_ttft < 2.0 * new_tpot
