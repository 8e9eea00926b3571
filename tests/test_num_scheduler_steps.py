"""vLLM multi-step scheduling (`workload.num_scheduler_steps`, `--num-scheduler-steps`): the per-sequence host
time of a decode step spread over N steps (vLLM blog 2024-09-05, v0.6.0), in the releases that have it."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import vllm_multi_step
from mlrig.planner import evaluate


def _plan(steps: int | None = None, version: str | None = "0.6.3", **workload: object) -> dict:
    w: dict = {"engine": "vllm", "batch_size": 64, **workload}
    if version:
        w["engine_version"] = version
    if steps is not None:
        w["num_scheduler_steps"] = steps
    return {"model": "llama-3.1-8b", "workload": w, "hardware": {"gpu": "h100-sxm-80gb"}}


def test_tpot_loses_the_amortised_host_time_by_hand() -> None:
    """64 sequences x 100 us of host time per sequence and step (efficiency.SEQ_STEP_OVERHEAD_S), of which the
    scheduling and input part (efficiency.VLLM_MULTI_STEP_AMORTISED_SHARE, 0.6) is spread over 8 scheduler steps:
    7/8 of 60 us gone, 64 x 52.5 us = TPOT 3.36 ms shorter, nothing else changed. Each step's output processing
    (40 us per sequence) stays."""
    # max_model_len 4096: V0 0.6.3 does not chunk either run (above 32k it chunks the single-step run at 512 tokens
    # and not the multi-step one, whose budget is max_model_len: performance.vllm_chunked_iterations_extra_s)
    one = evaluate(_plan(1, max_model_len=4096)).performance
    eight = evaluate(_plan(8, max_model_len=4096)).performance
    assert one is not None and eight is not None and one.tpot_ms is not None and eight.tpot_ms is not None
    assert one.tpot_ms - eight.tpot_ms == pytest.approx(3.36, rel=1e-6)
    assert one.tpot_ms - eight.tpot_ms == pytest.approx(
        64 * eff.SEQ_STEP_OVERHEAD_S["vllm"] * eff.VLLM_MULTI_STEP_AMORTISED_SHARE * 7 / 8 * 1e3, rel=1e-6)
    assert eight.ttft_ms == one.ttft_ms
    default = evaluate(_plan()).performance
    assert default is not None and default.tpot_ms == one.tpot_ms  # N = 1 is vLLM's default


def test_serving_throughput_rises_and_never_falls_with_more_steps() -> None:
    tput = []
    for n in (1, 2, 4, 8, 16):
        perf = evaluate(_plan(n, load="concurrency", num_requests=256)).performance
        assert perf is not None and perf.throughput_tok_s is not None
        tput.append(perf.throughput_tok_s)
    assert all(a <= b for a, b in itertools.pairwise(tput)) and tput[-1] > tput[0]


def test_only_releases_with_multi_step_scheduling_take_it() -> None:
    """0.6.0 (PR #7000) to 0.10.0 (removed with V0, PR #22138): elsewhere the flag changes nothing and a note
    says so; from 0.12 vLLM's async scheduling hides this host time anyway."""
    assert vllm_multi_step("0.6.0") and vllm_multi_step("0.9.2") and vllm_multi_step("0.10.0")
    assert not vllm_multi_step("0.5.3") and not vllm_multi_step("0.10.1") and not vllm_multi_step(None)
    old, plain = evaluate(_plan(8, version="0.5.3")), evaluate(_plan(1, version="0.5.3"))
    assert old.performance is not None and plain.performance is not None
    assert old.performance.tpot_ms == plain.performance.tpot_ms
    assert any("num_scheduler_steps has no effect" in n for n in old.notes)
    assert evaluate(_plan(8, version=None)).performance == evaluate(_plan(1, version=None)).performance


def test_another_engine_refuses_it_in_one_line() -> None:
    out = subprocess.run([sys.executable, "-m", "mlrig.cli", "plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--engine",
                          "sglang", "--num-scheduler-steps", "8"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 2 and "num_scheduler_steps is vLLM's multi-step scheduling" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr


def test_multi_step_gain_matches_the_measured_pairs() -> None:
    """AMD's vLLM fork (0.6.4.dev5), Llama-3.1-8B at TP 8 on 8 x MI300X, benchmark_throughput: 128 / 128 tokens
    at 78.40 req/s without and 146.46 with --num-scheduler-steps 15 (LHLMI300X-0159 / -0168, 1.87x); 2,000 / 2,000
    at 4.31 and 7.53 (-0166 / -0175, 1.75x). Spreading all the host time per sequence over the 15 steps gave
    3.2x and 3.1x; with the output processing left per step the gains are within 20 % of the measured ones."""
    from mlrig.validation.runner import check, load_rows

    rows = {r.id: r for r in load_rows() if r.id.startswith("LHLMI300X-01")}
    for plain, multi, measured_gain in (("0159", "0168", 146.46 / 78.40), ("0166", "0175", 7.53 / 4.31)):
        a, b = check(rows[f"LHLMI300X-{plain}"]), check(rows[f"LHLMI300X-{multi}"])
        assert a.predicted and b.predicted
        assert 0.8 < (b.predicted / a.predicted) / measured_gain < 1.2
