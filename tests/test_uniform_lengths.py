"""`lengths = "uniform"`: a benchmark client's random dataset with a range ratio (vllm bench serve / SGLang
bench_serving `--dataset-name random --random-range-ratio`), each request's lengths uniform around the plan's means.

- `WorkloadSpec.range_ratio` / `length_spread`, and the refusals that keep it to uniform lengths;
- `serving.slot_service_cv2` and `serving.running_output_tokens` for uniform lengths (hand values);
- `serving.renewal_lag_cycles` / `backlog_wait_s`: the first wave's renewal lag behind a burst (hand values from the
  renewal function of U[0, 2], m(t) = e^(t / 2) - 1 for t <= 2, and Smith's asymptote (1 - cv^2) / 2);
- `serving.uniform_drain_s`: one fresh request drains in O iterations;
- the plan round-trip: `mlrig plan --lengths uniform --range-ratio --json`, a plan file through `mlrig eval`, and
  `planner.evaluate` give the same figures.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from cli_run import mlrig, one_line_error
from pydantic import ValidationError
from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.estimators.serving import (
    backlog_wait_s,
    decode_step,
    renewal_lag_cycles,
    running_output_tokens,
    slot_service_cv2,
    uniform_drain_s,
)
from mlrig.planner import evaluate, resolve_plan
from mlrig.workload import WorkloadSpec

UNIFORM = WorkloadSpec(lengths="uniform")  # range ratio 1: lengths uniform in [0, 2 L] (SGLang's default ratio 0)
HALF = WorkloadSpec(lengths="uniform", range_ratio=0.5)  # [0.5 L, 1.5 L] (vllm bench serve --random-range-ratio 0.5)


def _plan(**extra: Any) -> dict[str, Any]:
    return {"model": {"name": "mistralai/Mistral-7B-Instruct-v0.3"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "sglang", "engine_version": "0.4.7.post1",
                         "prompt_tokens": 513, "output_tokens": 509, "load": "offline", "num_requests": 1000, **extra},
            "hardware": {"gpu": "NVIDIA A100-PCIE-40GB", "count": 1}}


def test_range_ratio_keys() -> None:
    """The default spread is 1 ([0, 2 L]); a range ratio belongs to uniform lengths only, and uniform lengths
    take no max_tokens cap (their upper end is L (1 + r))."""
    assert UNIFORM.length_spread == 1.0
    assert HALF.length_spread == 0.5
    assert WorkloadSpec(lengths="varied").length_spread == 0.0
    assert WorkloadSpec(lengths="Uniform").lengths == "uniform"
    with pytest.raises(ValidationError, match="range_ratio applies to lengths = 'uniform'"):
        WorkloadSpec(lengths="varied", range_ratio=0.5)
    with pytest.raises(ValidationError, match="max_output_tokens applies to lengths = 'varied'"):
        WorkloadSpec(lengths="uniform", max_output_tokens=512)
    with pytest.raises(ValidationError):
        WorkloadSpec(lengths="uniform", range_ratio=1.5)


def test_uniform_cv2_and_running_output_hand_checked() -> None:
    """U[L (1 - r), L (1 + r)] has variance (2 r L)^2 / 12, so cv^2 = r^2 / 3: 1/3 at r = 1, 1/12 at r = 0.5.
    Running sequences hold E[L^2] / (2 E[L]) = L (1 + cv^2) / 2 output tokens: 300 x 4/3 / 2 = 200 at r = 1,
    300 x 13/12 / 2 = 162.5 at r = 0.5 (fixed lengths: O / 2 = 150, the None default)."""
    assert slot_service_cv2(UNIFORM) == pytest.approx(1 / 3)
    assert slot_service_cv2(HALF) == pytest.approx(1 / 12)
    assert running_output_tokens(WorkloadSpec(lengths="uniform", output_tokens=300)) == pytest.approx(200.0)
    assert running_output_tokens(WorkloadSpec(lengths="uniform", range_ratio=0.5, output_tokens=300)) == \
        pytest.approx(162.5)
    assert running_output_tokens(WorkloadSpec(output_tokens=300)) is None


def test_renewal_lag_hand_checked() -> None:
    """Slots starting together, lengths U[0, 2 mu]: m(t) = e^(t / 2 mu) - 1 for t <= 2 mu, so 0.5 / 1 completions
    per slot take 2 ln 1.5 = 0.8109 / 2 ln 2 = 1.3863 cycles: lags 0.3109 / 0.3863. Far out, Smith's asymptote
    (1 - cv^2) / 2: 1/3 at r = 1, (1 - 1/12) / 2 = 0.4583 at r = 0.5. Exponential (varied) and fixed lengths
    keep the fluid (0)."""
    assert renewal_lag_cycles(0.5, UNIFORM) == pytest.approx(2 * math.log(1.5) - 0.5, abs=2e-3)
    assert renewal_lag_cycles(1.0, UNIFORM) == pytest.approx(2 * math.log(2.0) - 1.0, abs=2e-3)
    assert renewal_lag_cycles(3.0, UNIFORM) == pytest.approx(1 / 3, abs=0.01)  # numeric, near the asymptote
    assert renewal_lag_cycles(10.0, UNIFORM) == pytest.approx(1 / 3)
    assert renewal_lag_cycles(10.0, HALF) == pytest.approx(11 / 24)
    assert renewal_lag_cycles(0.0, UNIFORM) == 0.0
    assert renewal_lag_cycles(2.5, WorkloadSpec(lengths="varied")) == 0.0
    assert renewal_lag_cycles(2.5, WorkloadSpec()) == 0.0


def test_backlog_wait_hand_checked() -> None:
    """100 requests past a first wave of 200 at 5 req/s: the fluid's 100 / 5 = 20 s plus the lag of 0.5
    completions per slot, 0.3109 cycles of 200 / 5 = 40 s: 32.44 s. Exponential lengths: the fluid's 20 s."""
    assert backlog_wait_s(UNIFORM, 100, 200, 5.0) == pytest.approx(20 + (2 * math.log(1.5) - 0.5) * 40, abs=0.1)
    assert backlog_wait_s(WorkloadSpec(lengths="varied"), 100, 200, 5.0) == pytest.approx(20.0)
    assert backlog_wait_s(UNIFORM, 0, 200, 5.0) == 0.0


def test_one_fresh_request_drains_in_its_length() -> None:
    """One sequence of U[0, 2 O] output tokens, just started, runs O iterations on average (its mean), each a
    batch-1 decode step."""
    r, _ = resolve_plan(_plan(lengths="uniform", num_requests=1))
    ctx = 513 + 509 // 2
    assert uniform_drain_s(r, 1, 0.0) == pytest.approx(509 * decode_step(r, 1, ctx).seconds, rel=1e-6)


def test_uniform_burst_waits_longer_than_exponential_at_the_same_rate() -> None:
    """LIVINFLYA100-0025's plan (1,000 random 1024/1024 prompts at once on SGLang, range ratio 0): the median
    request is past the first wave, so uniform lengths add the renewal lag to its wait; the explanation names the
    drain as for varied lengths."""
    perf = evaluate(_plan(lengths="uniform")).performance
    assert perf is not None and perf.ttft_ms is not None and perf.throughput_tok_s is not None
    assert "drain" in (perf.explanation or "")


def test_plan_flag_file_and_eval_agree(tmp_path: Path) -> None:
    """`--lengths uniform --range-ratio 0.5` on the command line, the same plan through `mlrig eval`, and
    `planner.evaluate` give the same figures; a range ratio with other lengths is a one-line error, status 2."""
    plan = _plan(lengths="uniform", range_ratio=0.5)
    direct = evaluate(plan).performance
    assert direct is not None
    args = ["plan", "mistralai/Mistral-7B-Instruct-v0.3", "--gpu", "NVIDIA A100-PCIE-40GB", "--engine", "sglang",
            "--engine-version", "0.4.7.post1", "--precision", "bf16", "--prompt", "513", "--output", "509",
            "--load", "offline", "--num-requests", "1000"]
    res = CliRunner().invoke(app, [*args, "--lengths", "uniform", "--range-ratio", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    flag = json.loads(res.output)["performance"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"id": "u", **plan}) + "\n")
    out = CliRunner().invoke(app, ["eval", str(cases)])
    assert out.exit_code == 0, out.output
    evald = json.loads(out.output.splitlines()[0])["performance"]
    for key in ("ttft_ms", "tpot_ms", "throughput_tok_s"):
        assert flag[key] == pytest.approx(getattr(direct, key), rel=1e-3)
        assert evald[key] == pytest.approx(getattr(direct, key), rel=1e-3)
    varied = evaluate(_plan(lengths="varied")).performance
    assert varied is not None and flag["ttft_ms"] != pytest.approx(varied.ttft_ms, rel=1e-3)
    line = one_line_error(mlrig(*args, "--lengths", "varied", "--range-ratio", "0.5"))
    assert "range_ratio applies to lengths = 'uniform'" in line


def test_livinfly_burst_wait_at_its_own_rate() -> None:
    """LIVINFLYA100-0025 (fit: SGLang 0.4.7.post1, Mistral-7B on one A100 PCIe, 1,000 random 1024/1024 prompts at
    once, range ratio 0): median TTFT 80.1 s. Its median request is 349 past a first wave of 151 (SGLang's
    reservation, `sglang_burst_admitted`, in 0.4.7.post1's pool of 131,680 tokens: mem_fraction_static 0.75,
    `engines.sglang_era_version`; 200 in the 174,416-token pool 0.88 gave); at the run's own completion rate,
    1,000 / 194.6 s, the fluid gives 349 / 5.14 = 67.9 s of queue and the renewal lag adds 0.336 x 151 / 5.14 =
    9.9 s, so with the wave's prefill (6.6 s) the wait comes to ~84 s (+5 %), the fluid alone to ~74 s (-7 %)."""
    from mlrig.estimators.serving import frontend_s, prefill_pass, prefill_tokens, sglang_burst_admitted

    plan = json.loads(next(line for line in (Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"
                                             / "serving_sglang_livinfly_a100pcie.jsonl").open()
                           if '"LIVINFLYA100-0025"' in line))
    res = evaluate(plan["plan"])
    r, _ = resolve_plan(plan["plan"])
    assert res.kv_cache_capacity_tokens is not None
    prompt, out = prefill_tokens(r.workload), r.workload.output_tokens
    first = sglang_burst_admitted(int(res.kv_cache_capacity_tokens), prompt, out)
    assert first == 151
    rate = 1000 / 194.63
    fixed_s = prefill_pass(r, first, prompt).seconds + prefill_pass(r, 1, prompt).seconds + frontend_s(r)
    behind = 500 - first
    assert backlog_wait_s(r.workload, behind, first, rate) == pytest.approx(behind / rate + 0.336 * first / rate,
                                                                            rel=0.01)
    assert fixed_s + backlog_wait_s(r.workload, behind, first, rate) == pytest.approx(80.06, rel=0.06)
    assert fixed_s + behind / rate < 0.95 * 80.06
