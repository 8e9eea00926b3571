"""`mlrig serve` (serving curve, concurrency limits, speculative decoding) and `mlrig compare`."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise
from typing import Any

import pytest
from typer.testing import CliRunner

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.cli import app
from mlrig.commands.serve import default_concurrency, kv_capacity_with_draft, parse_concurrency
from mlrig.errors import MlrigError
from mlrig.estimators.performance import (
    speculative_speedup,
    speculative_speedup_at_batch,
    verify_cost_ratio,
)
from mlrig.estimators.resolved import resolve
from mlrig.estimators.serving import concurrency_limits, serving_curve
from mlrig.planner import evaluate
from mlrig.workload import Plan

ARCH = resolve_model("llama-3.1-8b")
L40S = resolve_gpu("L40S")
# Llama-3.2-1B by hand (config.json: vocab 128256, hidden 2048, 16 layers, MLP 8192, 32 heads, 8 KV heads of
# 64, tied embeddings): embedding 262,668,288 + 16 x (q 4,194,304 + k,v 2 x 1,048,576 + o 4,194,304
# + MLP 3 x 16,777,216 + norms 4,096) + final norm 2,048 = 1,235,814,400 params, x 2 bytes in bf16.
DRAFT_WEIGHT_BYTES = 1_235_814_400 * 2
DRAFT_KV_PER_TOKEN = 16 * 2 * 8 * 64 * 2  # layers x (K, V) x KV heads x head dim x bf16 = 32 KiB
TARGET_KV_PER_TOKEN = 32 * 2 * 8 * 128 * 2  # Llama-3.1-8B: 128 KiB


def serve_plan(**workload: object) -> Plan:
    w: dict[str, object] = {"engine": "vllm", "prompt_tokens": 512, "output_tokens": 256, **workload}
    return Plan.model_validate({"model": "llama-3.1-8b", "workload": w, "hardware": {"gpu": L40S.id}})


def kv_capacity(p: Plan) -> int:
    cap = evaluate(p, arch=ARCH, gpu=L40S).kv_cache_capacity_tokens
    assert cap is not None and cap > 0
    return cap


def invoke(*args: str) -> Any:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


# ---- estimators --------------------------------------------------------------------------------

def test_speculative_speedup_hand_check() -> None:
    # k = 4, α = 0.7, free draft: (1 - 0.7^5) / (1 - 0.7) = (1 - 0.16807) / 0.3 = 2.7731 tokens per step
    assert speculative_speedup(4, 0.7, 0.0) == pytest.approx(2.7731, abs=1e-4)
    # a draft costing 10 % of a target step: 2.7731 / (4 x 0.1 + 1)
    assert speculative_speedup(4, 0.7, 0.1) == pytest.approx(2.7731 / 1.4, abs=1e-4)


def test_serving_curve_monotone_up_to_kv_capacity() -> None:
    p = serve_plan()
    cap = kv_capacity(p)
    seqs = cap // p.workload.context
    cs = sorted({1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, seqs // 2, seqs - 1, seqs})
    pts = serving_curve(resolve(ARCH, p, L40S), cs, cap)
    assert all(pt.fits for pt in pts)
    for a, b in pairwise(pts):
        assert b.throughput_tok_s >= a.throughput_tok_s
        assert b.tok_s_per_user <= a.tok_s_per_user
        assert b.ttft_ms >= a.ttft_ms
    # past the KV capacity requests queue: no more throughput, and TTFT jumps by the wait for a slot. Users
    # who drift apart (varied lengths: the steady state) wait a whole request for one; a fixed-length loop in
    # lock-step already waits for its wave's prefills at capacity, and twice the users run two waves a round
    for lengths, jump in (("varied", 10.0), ("fixed", 1.9)):
        q = serve_plan(lengths=lengths)
        over = serving_curve(resolve(ARCH, q, L40S), [seqs, 2 * seqs], cap)
        assert not over[1].fits
        assert over[1].throughput_tok_s == pytest.approx(over[0].throughput_tok_s)
        assert over[1].tok_s_per_user == pytest.approx(over[0].tok_s_per_user / 2)
        assert over[1].ttft_ms > jump * over[0].ttft_ms, lengths


def test_max_concurrency_speed_bound() -> None:
    p = serve_plan()
    cap = kv_capacity(p)
    lim = concurrency_limits(resolve(ARCH, p, L40S), 20.0, cap)
    n = lim.max_concurrency
    assert lim.binding_limit == "tok/s per user"
    assert 1 <= n <= cap // p.workload.context
    at, above = serving_curve(resolve(ARCH, p, L40S), [n, n + 1], cap)
    assert at.fits and at.tok_s_per_user >= 20.0
    assert above.tok_s_per_user < 20.0


def test_max_concurrency_kv_bound() -> None:
    # half the memory reserved and a lax speed target: the KV cache runs out first
    p = serve_plan(gpu_memory_utilization=0.5)
    cap = kv_capacity(p)
    lim = concurrency_limits(resolve(ARCH, p, L40S), 5.0, cap)
    assert lim.binding_limit == "KV cache capacity"
    assert lim.max_concurrency == cap // p.workload.context == lim.by_kv_capacity
    assert lim.by_tok_s_per_user > lim.max_concurrency
    assert not serving_curve(resolve(ARCH, p, L40S), [lim.max_concurrency + 1], cap)[0].fits


def test_max_concurrency_ttft_bound() -> None:
    p = serve_plan()
    cap = kv_capacity(p)
    ttft_1 = serving_curve(resolve(ARCH, p, L40S), [1], cap)[0].ttft_ms
    lim = concurrency_limits(resolve(ARCH, p, L40S), 1.0, cap, max_ttft_ms=ttft_1 * 1.05)
    assert lim.binding_limit == "TTFT"
    assert lim.by_ttft is not None and lim.max_concurrency == lim.by_ttft < lim.by_tok_s_per_user
    assert serving_curve(resolve(ARCH, p, L40S), [lim.max_concurrency], cap)[0].ttft_ms <= ttft_1 * 1.05


def test_speculation_shrinks_at_high_concurrency() -> None:
    p = serve_plan()
    assert verify_cost_ratio(resolve(ARCH, p, L40S), 1, 4) == pytest.approx(1.0, abs=0.1)  # memory-bound
    assert verify_cost_ratio(resolve(ARCH, p, L40S), 256, 4) > 1.5
    low = speculative_speedup_at_batch(resolve(ARCH, p, L40S), 1, 4, 0.7, 0.1)
    high = speculative_speedup_at_batch(resolve(ARCH, p, L40S), 256, 4, 0.7, 0.1)
    assert low == pytest.approx(speculative_speedup(4, 0.7, 0.1), rel=0.1)
    assert high < low


def test_concurrency_list_parsing() -> None:
    assert parse_concurrency("8, 1,2,2") == [1, 2, 8]
    for bad in ("", "1,,2", "0", "-4", "2.5", "a"):
        with pytest.raises(MlrigError):
            parse_concurrency(bad)
    assert default_concurrency(48, 37) == [1, 2, 4, 8, 16, 32, 37, 48]


# ---- CLI ---------------------------------------------------------------------------------------

def test_serve_json_shape() -> None:
    d = invoke("serve", "llama-3.1-8b", "--gpu", "L40S", "--draft-model", "llama-3.2-1b", "--json")
    assert set(d) >= {"model", "gpu", "engine", "kv_cache_capacity_tokens", "curve", "max_concurrency",
                      "binding_limit", "speculative", "fits"}
    assert d["engine"] == "vllm" and d["gpu"] == "l40s" and d["fits"] is True
    assert (d["prompt_tokens"], d["output_tokens"], d["context_tokens"]) == (512, 128, 640)  # plan's default request
    seqs = d["kv_cache_capacity_tokens"] // 640
    assert d["curve"][-1]["concurrency"] == seqs  # tabulated up to the KV capacity
    assert {pt["concurrency"] for pt in d["curve"]} >= {1, d["max_concurrency"]}
    assert set(d["curve"][0]) == {"concurrency", "throughput_tok_s", "tok_s_per_user", "tpot_ms", "ttft_ms",
                                  "bound", "fits"}
    assert 1 <= d["max_concurrency"] <= seqs
    spec = d["speculative"]
    assert 0 < spec["draft_cost_ratio"] < 0.3  # 1B draft reads a fraction of what 8B reads
    assert spec["speedup_batch_1"] == pytest.approx(
        speculative_speedup(4, 0.7, spec["draft_cost_ratio"]), rel=1e-3)  # both rounded to 4 digits
    assert spec["speedup_at_concurrency"] <= spec["speedup_batch_1"]
    # the JSON rounding rule (PLAN-FORMAT "Numbers in JSON"): 4 significant digits
    for pt in d["curve"]:
        for key in ("throughput_tok_s", "tok_s_per_user", "tpot_ms"):
            assert pt[key] == float(f"{pt[key]:.4g}"), (key, pt[key])


def test_per_user_band_widens_to_tpot_under_load() -> None:
    """One user decodes alone (decode scope); more users' speed is 1 / TPOT under load (TPOT scope)."""
    from mlrig.validation.scopes import per_user_band

    assert per_user_band(0.10, 0.44, 1) == 0.10
    assert per_user_band(0.10, 0.44, 2) == 0.44
    assert per_user_band(0.30, 0.20, 64) == 0.30  # never narrower than batch-1 decode


def test_serve_bands_come_from_the_plans_validation() -> None:
    d = invoke("serve", "llama-3.1-8b", "--gpu", "RTX 4090", "--json")
    plan = invoke("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--json")
    band = plan["performance"]["error_band"]
    assert d["decode_error_band"] == pytest.approx(band["decode_tok_s"])
    assert d["tpot_error_band"] == pytest.approx(band["tpot_ms"])
    assert plan["validation"]["tpot_ms"]["validated"] is True  # vLLM TPOT on GDDR cards has published rows
    r = CliRunner().invoke(app, ["serve", "llama-3.1-8b", "--gpu", "RTX 4090"], env={"COLUMNS": "200"})
    one = d["curve"][0]
    two = next(p for p in d["curve"] if p["concurrency"] >= 2)
    wide = max(d["decode_error_band"], d["tpot_error_band"])
    # the table prints unrounded figures to 0.1, the JSON keeps 4 significant digits: compare numerically
    import re

    shown = [(float(a.replace(",", "")), float(b)) for a, b in re.findall(r"│\s*([\d.,]+)±([\d.]+)\s*│", r.stdout)]
    for point, band, (speed, pm) in ((one, d["decode_error_band"], shown[0]), (two, wide, shown[1])):
        assert speed == pytest.approx(point["tok_s_per_user"], abs=0.06)
        assert pm == pytest.approx(point["tok_s_per_user"] * band, abs=0.06)


def test_serve_human_answer_line() -> None:
    r = CliRunner().invoke(app, ["serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "20"])
    assert r.exit_code == 0, r.output
    assert "largest concurrency meeting ≥ 20 tok/s per user" in " ".join(r.stdout.split())
    assert "KV cache holds" in r.stdout


def test_serve_does_not_fit_is_one_line() -> None:
    d = invoke("serve", "llama-3.1-70b", "--gpu", "L40S", "--json")
    assert d["fits"] is False and d["curve"] == [] and d["max_concurrency"] == 0
    r = CliRunner().invoke(app, ["serve", "llama-3.1-70b", "--gpu", "L40S"], env={"COLUMNS": "400"})
    assert r.exit_code == 0
    assert len(r.stdout.strip().splitlines()) == 1 and "does not fit" in r.stdout


@pytest.mark.parametrize("args, needle", [
    (["--min-tok-s", "0"], "--min-tok-s"),
    (["--min-tok-s", "-5"], "--min-tok-s"),
    (["--acceptance", "1"], "--acceptance"),
    (["--acceptance", "-0.1"], "--acceptance"),
    (["--spec-k", "0"], "--spec-k"),
    (["--concurrency", "1,two,4"], "--concurrency"),
    (["--concurrency", "0"], "--concurrency"),
])
def test_serve_bad_input_exit_2_one_line(args: list[str], needle: str) -> None:
    r = subprocess.run([sys.executable, "-m", "mlrig.cli", "serve", "llama-3.1-8b", "--gpu", "L40S", *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_compare_two_gpus_json() -> None:
    rows = invoke("compare", "llama-3.1-8b", "--gpu", "RTX 3090", "--gpu", "RTX 4090", "--json")
    assert [r["variant"] for r in rows] == ["RTX 3090", "RTX 4090"]
    assert [r["result"]["gpu"] for r in rows] == ["rtx-3090", "rtx-4090"]
    for r in rows:
        res = r["result"]
        assert res["fits"] is True and res["error"] is None
        assert res["memory"]["gpu_capacity_gib"] == pytest.approx(24.0, abs=0.05)
        assert res["performance"]["decode_tok_s"] > 0
    # same model and memory, but the 4090 has more bandwidth (1008 vs 936 GB/s): decodes faster
    assert rows[0]["result"]["memory"]["weights_gib"] == pytest.approx(rows[1]["result"]["memory"]["weights_gib"])
    assert rows[1]["result"]["performance"]["decode_tok_s"] > rows[0]["result"]["performance"]["decode_tok_s"]


def test_serve_target_out_of_reach_says_so() -> None:
    r = CliRunner().invoke(app, ["serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "500"],
                           env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert "no concurrency meets ≥ 500 tok/s per user" in r.stdout
    d = invoke("serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "500", "--json")
    assert d["max_concurrency"] == 0 and d["binding_limit"] == "tok/s per user"


# ---- speculative decoding: the draft's memory comes out of the KV pool ---------------------------

def test_kv_capacity_with_draft_hand_check() -> None:
    # pool 1000 x 100 B = 100,000 B; less 10,100 B of draft weights = 89,900 B; each token now 100 + 25 B
    assert kv_capacity_with_draft(1000, 100.0, 10_100.0, 25.0) == 719  # 89,900 / 125 = 719.2
    assert kv_capacity_with_draft(1000, 100.0, 10_100.0, 25.0, block_tokens=16) == 704  # 44 blocks of 2,000 B
    assert kv_capacity_with_draft(1000, 100.0, 10_000.0, 25.0, block_tokens=16) == 720  # exactly 45 blocks
    assert kv_capacity_with_draft(1000, 100.0, 0.0, 0.0) == 1000  # a free draft changes nothing
    assert kv_capacity_with_draft(1000, 100.0, 100_001.0, 25.0) == 0  # weights alone overflow the pool


def test_draft_subtracted_from_kv_capacity() -> None:
    # half the memory reserved and a lax speed target, so the KV cache binds and the draft lowers concurrency
    args = ("serve", "llama-3.1-8b", "--gpu", "L40S", "--gpu-memory-utilization", "0.5", "--min-tok-s", "5",
            "--json")
    alone = invoke(*args)
    spec = invoke(*args, "--draft-model", "llama-3.2-1b")
    before, after = alone["kv_cache_capacity_tokens"], spec["kv_cache_capacity_tokens"]
    assert alone["kv_capacity_tokens_without_draft"] == before == spec["kv_capacity_tokens_without_draft"]
    assert 0 < after < before
    assert spec["kv_capacity_sequences"] < alone["kv_capacity_sequences"]
    assert alone["binding_limit"] == spec["binding_limit"] == "KV cache capacity"
    assert spec["max_concurrency"] == after // 640 < alone["max_concurrency"] == before // 640  # 512 + 128 tokens
    s = spec["speculative"]
    assert s["draft_weights_gib"] == pytest.approx(DRAFT_WEIGHT_BYTES / 2**30, abs=5e-4)  # JSON keeps 1 MiB
    assert s["draft_kv_bytes_per_token"] == DRAFT_KV_PER_TOKEN and s["draft_tensor_parallel"] == 1
    # the target KV given up pays for the draft's weights and the draft KV of every token still held,
    # to within one 16-token vLLM block of (target + draft) KV
    freed = (before - after) * TARGET_KV_PER_TOKEN
    draft_bytes = DRAFT_WEIGHT_BYTES + after * DRAFT_KV_PER_TOKEN
    assert 0 <= freed - draft_bytes < 16 * (TARGET_KV_PER_TOKEN + DRAFT_KV_PER_TOKEN)
    assert after % 16 == 0


def test_draft_split_by_tensor_parallelism() -> None:
    # `--count 4` alone means TP 4 for vLLM, for the speed model as well as for memory
    implicit = invoke("serve", "llama-3.1-70b", "--gpu", "H100 SXM", "--count", "4", "--draft-model", "llama-3.2-1b",
                      "--json")
    explicit = invoke("serve", "llama-3.1-70b", "--gpu", "H100 SXM", "--count", "4", "--tp", "4",
                      "--draft-model", "llama-3.2-1b", "--json")
    assert implicit == explicit
    s = explicit["speculative"]
    assert s["draft_tensor_parallel"] == 4
    assert s["draft_weights_gib"] == pytest.approx(DRAFT_WEIGHT_BYTES / 4 / 2**30, abs=5e-4)  # JSON keeps 1 MiB
    assert s["draft_kv_bytes_per_token"] == DRAFT_KV_PER_TOKEN / 4  # 8 KV heads, 2 per GPU
    assert explicit["kv_cache_capacity_tokens"] < explicit["kv_capacity_tokens_without_draft"]


def test_draft_that_leaves_no_room_does_not_fit() -> None:
    # an 8B draft (15 GiB) beside an 8B target on a 24 GB card: no KV room left for one sequence
    args = ["serve", "llama-3.1-8b", "--gpu", "RTX 4090", "--draft-model", "llama-3.1-8b"]
    d = invoke(*args, "--json")
    assert d["fits"] is False and d["max_concurrency"] == 0 and d["binding_limit"] == "memory"
    assert d["kv_cache_capacity_tokens"] < 640 < d["kv_capacity_tokens_without_draft"]
    r = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert len(r.stdout.strip().splitlines()) == 1 and "with the draft" in r.stdout


def test_draft_note_states_the_assumption() -> None:
    r = CliRunner().invoke(app, ["serve", "llama-3.1-8b", "--gpu", "L40S", "--draft-model", "llama-3.2-1b"],
                           env={"COLUMNS": "400"})
    assert r.exit_code == 0, r.output
    assert "not deducted" not in r.stdout
    assert "split like the target, TP 1" in r.stdout and "taken from the KV pool" in r.stdout


def test_compare_reports_a_bad_variant_and_runs_the_rest() -> None:
    r = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu", "RTX 9999",
                                 "--precision", "q4_k_m", "--json"])
    assert r.exit_code == 1, r.output
    rows = json.loads(r.stdout)
    assert [row["variant"] for row in rows] == ["RTX 4090", "RTX 9999"]  # the fixed precision is not repeated
    assert rows[0]["result"]["error"] is None and rows[0]["result"]["performance"]["decode_tok_s"] > 0
    assert "unknown GPU 'RTX 9999'" in rows[1]["result"]["error"]
    assert "RTX 4090" in rows[1]["result"]["error"]  # the closest names


def test_compare_unknown_model_is_one_line_exit_2() -> None:
    argv = ["compare", "no-such-model", "--gpu", "4090", "--gpu", "3090"]
    r = subprocess.run([sys.executable, "-m", "mlrig.cli", *argv], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "unknown model" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
