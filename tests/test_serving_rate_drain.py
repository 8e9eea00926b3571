"""A finite Poisson-rate run with varied output lengths ends in the drain of its longest requests.

`serving.rate_run_point` follows the run's last request; with fixed lengths the run ends O tokens after its
first, with varied (exponential) lengths when the longest of the requests still running then ends
(`serving.varied_drain_s`, the drain `varied_offline_throughput` already prices).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlrig.estimators.performance import decode_step
from mlrig.estimators.serving import varied_drain_s
from mlrig.planner import evaluate, resolve_plan

CALIBRATION = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"


def _row(name: str, row_id: str) -> dict[str, Any]:
    for line in (CALIBRATION / name).open():
        row: dict[str, Any] = json.loads(line)
        if row["id"] == row_id:
            return row
    raise KeyError(row_id)


def _rate_plan(lengths: str) -> dict[str, Any]:
    return {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "engine_version": "0.8.5",
                         "prompt_tokens": 256, "output_tokens": 256, "load": "rate", "request_rate": 4.0,
                         "num_requests": 400, "lengths": lengths},
            "hardware": {"gpu": "H100 SXM", "count": 1}}


def test_drain_of_one_sequence_is_o_single_steps() -> None:
    """Hand check: one running sequence of exponential length (mean O) drains in E[L] = O iterations (the expected
    longest of one, mu H_1), each a batch-1 decode step at the mean context; two in mu H_2 = 1.5 O iterations,
    of which the first O / 2 (the expected shorter one) at batch 2 and the rest at batch 1 (the order statistics of
    exponentials: the first ends after mu / 2, the other mu later), which the drain's intervals price within a few
    per mille."""
    r, _ = resolve_plan(_rate_plan("varied"))
    step = decode_step(r, 1, 256 + 128).seconds
    assert varied_drain_s(r, 1) == pytest.approx(256 * step, rel=1e-9)
    two = decode_step(r, 2, 256 + 128).seconds
    assert varied_drain_s(r, 2) == pytest.approx(128 * two + 256 * step, rel=5e-3)
    assert varied_drain_s(r, 0.4) == 0.0


def test_varied_rate_run_lasts_longer_than_fixed() -> None:
    """Same run, same mean lengths: only the varied one waits for its longest requests, so its throughput
    (N x O over the run) is lower; the median request's TTFT / TPOT do not depend on the end. Its TPOT differs
    only by the context its batch's decodes read: the varied run's running sequences are the long ones and hold
    E[L^2] / (2 E[L]) = O = 256 output tokens (uncapped exponential lengths, `serving.running_output_tokens`),
    the fixed run's O / 2 = 128."""
    fixed = evaluate(_rate_plan("fixed")).performance
    varied = evaluate(_rate_plan("varied")).performance
    assert fixed is not None and varied is not None
    assert fixed.throughput_tok_s is not None and varied.throughput_tok_s is not None
    # 400 requests at 4 req/s arrive over 100 s; the drain adds seconds, not a fraction of a percent
    assert varied.throughput_tok_s < 0.97 * fixed.throughput_tok_s
    # By hand: the median request runs with n ~ rate x duration = 4 x 256 x 8.2 ms ~ 8.4 others, 9 with it (Little's
    # law), and its TPOT is the decode step over the share the prompts leave, t_dec(n, ctx) / (1 - f), f the same
    # in both runs: the varied TPOT is the fixed one times t_dec(9, 256 + 256) / t_dec(9, 256 + 128) = 1.0070
    # (the fluid's batch drifts by a sequence or so: 1.0063-1.0077 for n of 8-10, hence rel 1e-3)
    r, _ = resolve_plan(_rate_plan("varied"))
    ratio = decode_step(r, 9, 256 + 256).seconds / decode_step(r, 9, 256 + 128).seconds
    assert ratio > 1.005
    assert varied.tpot_ms == pytest.approx(fixed.tpot_ms * ratio, rel=1e-3)


@pytest.mark.parametrize("row_id", ["DSTACKCMP-0075", "DSTACKCMP-0078"])
def test_dstack_405b_rate_runs_throughput(row_id: str) -> None:
    """dstack's 1,000 ShareGPT requests at 16 / 32 req/s on 8x H100 (405B FP8, fit rows): 1,199 / 1,252 output
    tok/s measured, runs of ~100 s for arrivals over 62 / 31 s. Without the drain the planner said 1,610 /
    1,691 (34-35 % high); with it within 10 %."""
    row = _row("serving_dstack_h100_mi300x_405b_fp8.jsonl", row_id)
    perf = evaluate(row["plan"]).performance
    assert perf is not None and perf.throughput_tok_s is not None
    assert perf.throughput_tok_s == pytest.approx(row["value"], rel=0.10)


def test_varied_rate_run_says_it_drains() -> None:
    """The explanation names the drain for a varied finite rate run, not for a fixed one."""
    varied = evaluate(_rate_plan("varied")).performance
    fixed = evaluate(_rate_plan("fixed")).performance
    assert varied is not None and fixed is not None
    assert "drain" in (varied.explanation or "") and "drain" not in (fixed.explanation or "")
