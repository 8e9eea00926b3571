"""User-facing leftovers found walking through docs USER-STORIES with fresh eyes (issue 10): a one-value option
given twice kept the last without a word; click's usage errors took four lines; compare --markdown called a
static TTFT band "up to xN"; the shown decode context of a varied load was not the one its estimate priced."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from cli_run import mlrig, one_line_error

# ---- 1. a one-value option given twice: one line naming the option, not the last value kept silently

@pytest.mark.parametrize(("args", "flag"), [
    (("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "bf16", "--precision", "q4_k_m"), "--precision"),
    (("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "-q", "bf16", "--precision=q4_k_m"), "--precision"),
    (("plan", "llama-3.1-8b", "--gpu", "H100 SXM", "-n2", "--count", "4"), "--count"),
    (("compare", "llama-3.1-8b", "--gpu", "RTX 3090", "--gpu", "RTX 4090", "-c", "4k", "--context", "8k"),
     "--context"),
    (("build", "suggest", "-g", "RTX 4090", "-n", "2", "-n", "3"), "--count"),
])
def test_a_one_value_option_given_twice_is_one_line_naming_it(args: tuple[str, ...], flag: str) -> None:
    line = one_line_error(mlrig(*args))
    assert f"{flag} given 2 times" in line and "give it once" in line


def test_both_sides_of_a_switch_is_an_error_and_the_same_switch_twice_is_not() -> None:
    line = one_line_error(mlrig("plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--eager", "--cuda-graphs"))
    assert "--eager and --cuda-graphs both given" in line
    same = mlrig("plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--json", "--json")
    assert same.returncode == 0 and json.loads(same.stdout)["fits"]


def test_values_and_collecting_options_are_not_counted_as_repeats() -> None:
    from mlrig.cli import build_app, repeated_option

    # a value that looks like an option, options that collect values, recommend's per-workload flags
    assert repeated_option(build_app("gpus"), ["gpus", "--search", "--json"]) is None
    assert repeated_option(build_app("compare"), ["compare", "m", "-q", "bf16", "--precision", "fp8"]) is None
    assert repeated_option(build_app("recommend"), ["recommend", "--model", "a", "--precision", "q4_k_m",
                                                    "--model", "b", "--precision", "q4_k_m"]) is None
    assert repeated_option(build_app("diagnose"), ["diagnose", "--", "x", "-n", "1", "-n", "2"]) is None


# ---- 2. click's usage errors (unknown option, bad value, missing option) are one line with the fix

@pytest.mark.parametrize(("args", "words"), [
    (("plan", "llama-3.1-8b", "--gradient-checkpointing"), ("No such option: --gradient-checkpointing",
                                                            "--checkpointing", "`mlrig plan --help`")),
    (("serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "abc"), ("'--min-tok-s'", "not a valid float",
                                                                        "`mlrig serve --help`")),
    (("plann", "llama-3.1-8b"), ("No such command 'plann'", "'plan'", "`mlrig --help`")),
    (("monitor",), ("Missing option '--prometheus'", "`mlrig monitor --help`")),
])
def test_click_usage_errors_are_one_line(args: tuple[str, ...], words: tuple[str, ...]) -> None:
    line = one_line_error(mlrig(*args))
    assert all(w in line for w in words), line


def test_help_and_version_still_exit_zero() -> None:
    assert mlrig("plan", "--help").returncode == 0
    assert mlrig("--version").returncode == 0
    bare = mlrig()  # no command: the help, as click shows it (stderr, status 2), not an "error: Usage..." line
    assert bare.returncode == 2 and bare.stderr.startswith("Usage: mlrig") and "mlrig: error" not in bare.stderr


# ---- 3. a TTFT band above 100 %: one-sided "up to xN" only for a rate run's overload band, as `plan` words it

def _row(variant: str, ttft_band: float, capacity: float | None) -> dict[str, object]:
    perf = {"decode_tok_s": 50.0, "prefill_tok_s": 5000.0, "ttft_ms": 120.0, "bound": "memory-bandwidth",
            "capacity_requests_per_s": capacity, "error_band": {"decode_tok_s": 0.2, "ttft_ms": ttft_band}}
    return {"variant": variant, "result": {"error": None, "fits": True, "engine": "vllm",
                                           "memory": {"per_gpu_gib": 20.0}, "performance": perf, "validation": {}}}


def test_compare_markdown_words_a_static_ttft_band_above_100_percent_as_plus_minus() -> None:
    from mlrig.commands.markdown import compare_markdown

    text = compare_markdown("m", [_row("static", 1.2, None), _row("rate", 2.5, 4.0)])
    static = next(line for line in text.splitlines() if line.startswith("| static"))
    rate = next(line for line in text.splitlines() if line.startswith("| rate"))
    assert "120 ±120%" in static and "up to" not in static
    assert "120 up to x3.5 if the capacity is lower" in rate  # mlrig plan's words for the same band


def test_compare_caption_words_a_rate_runs_overload_band_as_plan_does() -> None:
    from mlrig.commands._common import band_caption

    bands = [({"ttft_ms": 2.5}, {}), ({"ttft_ms": 0.6}, {})]
    caption = band_caption(bands, [True, True]) or ""
    assert "TTFT up to x3.5 if the capacity is lower" in caption and "±250%" not in caption
    assert "TTFT ±120%" in (band_caption([({"ttft_ms": 1.2}, {})], [False]) or "")


# ---- 4. a varied serving load reports the decode context its iterations are priced at

ACCELMARK_LIKE: dict[str, Any] = {"model": {"name": "llama-3.1-8b"}, "hardware": {"gpu": "H100 SXM"},
                  "workload": {"task": "inference", "engine": "vllm", "load": "concurrency", "batch_size": 32,
                               "lengths": "varied", "prompt_tokens": 512, "output_tokens": 343,
                               "max_output_tokens": 512}}


def test_varied_load_reports_the_running_decode_context() -> None:
    """Outputs of mean 343 capped at 512: the running sequences hold E[L^2] / (2 E[L]) = 219.6 output tokens each
    (serving.running_output_tokens), not 343 / 2 = 171: the loaded iterations read 512 + 220 = 732 tokens."""
    from mlrig.estimators.serving import running_decode_context
    from mlrig.planner import evaluate, parse_plan

    res = evaluate(ACCELMARK_LIKE)
    assert res.performance is not None
    assert res.performance.decode_context_tokens == 732
    assert running_decode_context(parse_plan(ACCELMARK_LIKE).workload) == 732
    fixed = evaluate({**ACCELMARK_LIKE, "workload": {**ACCELMARK_LIKE["workload"], "lengths": "fixed"}})
    assert fixed.performance is not None and fixed.performance.decode_context_tokens == 512 + 343 // 2
    static = evaluate({**ACCELMARK_LIKE, "workload": {"task": "inference", "engine": "vllm", "prompt_tokens": 512,
                                                      "output_tokens": 343}})
    assert static.performance is not None and static.performance.decode_context_tokens == 512 + 171


def test_plan_names_both_decode_contexts_of_a_varied_load() -> None:
    args = ("plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--engine", "vllm", "--load", "concurrency", "--batch", "32",
            "--lengths", "varied", "--prompt", "512", "--output", "343", "--max-output-tokens", "512")
    res = mlrig(*args)
    assert res.returncode == 0, res.stderr
    assert "decode at ~683 tokens of context alone, ~732 in the running batch" in res.stdout


# ---- 5. "$2,000 for 30B-class models locally": over budget at bf16 and at Q4_K_M, name the cheaper machine

def test_over_budget_names_the_cheapest_machine_at_the_precision_it_was_tried_at() -> None:
    """Qwen2.5-32B at >= 15 tok/s on $2,000: nothing at bf16 under a 4-GPU box, nothing at Q4_K_M within the budget
    either, but a used-3090 desktop at Q4_K_M is close above it. The budget line named the bf16 box (~$8,800)."""

    res = mlrig("recommend", "--budget", "2000", "--local-only", "--model", "qwen2.5-32b", "--min-tok-s", "15",
                "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    lines = [s for s in out["summary"] if s.startswith("nothing to buy within the $2,000 budget")]
    assert len(lines) == 1 and "at GGUF Q4_K_M on llama.cpp" in lines[0], out["summary"]
    named = re.search(r"costs \$([\d,]+)", lines[0])
    assert named is not None
    bf16_cheapest = min(o["upfront_usd"] for o in out["options"]
                        if o["kind"] == "buy" and o["fits"] and "budget" in (o["excluded_reason"] or ""))
    assert float(named.group(1).replace(",", "")) < bf16_cheapest


# ---- 6. compare's "no" says where the changes that make it fit are listed

def test_compare_points_a_row_that_does_not_fit_to_plans_fixes() -> None:
    res = mlrig("compare", "mistral-7b", "--task", "finetune", "--method", "full", "--gpu", "2x RTX 4090", "--gpu",
                "RTX 4090")
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert re.search(r"does not fit \(no speed shown\): 2x RTX 4090 \([\d.,]+ GiB short per GPU\), RTX 4090 "
                     r"\([\d.,]+ GiB short per GPU\); `mlrig plan mistral-7b`", text), text
    fits = mlrig("compare", "mistral-7b", "--task", "finetune", "--method", "lora", "--gpu", "RTX 4090")
    assert fits.returncode == 0 and "does not fit" not in fits.stdout


def test_models_search_with_no_match_says_what_to_do() -> None:
    res = mlrig("models", "--search", "no-such-model-zzz")
    assert res.returncode == 0 and "no catalog model matches" in res.stdout and "HF id" in res.stdout


def test_compare_a_variant_given_twice_is_one_row() -> None:
    from mlrig.commands.compare import compare_rows

    rows = compare_rows("llama-3.1-8b", gpu=["RTX 4090", "RTX 4090"], precision=["q4_k_m", "q4_k_m"])
    assert len(rows) == 1


# ---- 7. the web plan page: a rate run's overload TTFT band as plan words it, and no negative range

def test_web_plan_page_words_an_overload_ttft_band_and_keeps_its_range_above_zero() -> None:
    pytest.importorskip("fastapi")

    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1:8765")
    page = client.get("/plan?model=llama-3.1-8b&gpu=RTX+3090&load=rate&request_rate=20&num_requests=500")
    assert page.status_code == 200, page.text[:500]
    row = page.text.split('data-key="ttft_ms"')[1].split("</tr>")[0]
    assert "up to x" in row and "if the capacity is lower" in row, row
    assert not re.search(r"±\d{3,}%", row)  # not "±215%" for a one-sided band
    assert not re.search(r">-\d", row)  # its range starts at zero or above


# ---- 8. fit's rows say which engine their tok/s is for (GGUF on llama.cpp, AWQ on vLLM)

def test_fit_every_precision_names_each_rows_engine() -> None:
    res = mlrig("fit", "Llama 3.1 70B", "--gpu", "RTX 3090", "-n", "2")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert "engine" in next(line for line in lines if line.startswith("precision"))
    assert any(line.split()[:2] == ["q4_k_m", "llama.cpp"] for line in lines)
    assert any(line.split()[:2] == ["awq", "vllm"] for line in lines)


def test_an_inference_power_cap_says_it_is_not_priced() -> None:
    """`--power-limit-w` scales training's compute peak only: an inference plan with it had the same figures and
    no word about the flag."""
    from mlrig.planner import evaluate

    plan = {"model": {"name": "llama-3.1-8b"}, "hardware": {"gpu": "RTX 4090", "power_limit_w": 300}}
    res = evaluate(plan)
    assert any(n.startswith("power_limit_w 300 W: inference speed is priced at full clocks") for n in res.notes)
    assert not any("power_limit_w" in n for n in evaluate({**plan, "hardware": {"gpu": "RTX 4090"}}).notes)


def test_ollama_with_no_version_says_what_it_is_priced_as() -> None:
    """ollama runs llama.cpp: with no engine_version the answer says so, as it does for the engines it names in
    `engines.CURRENT` (before, "ollama" matched no key there and the note was missing)."""
    from mlrig.planner import evaluate

    res = evaluate({"model": "meta-llama/Llama-3.1-8B", "workload": {"precision": "q4_k_m", "engine": "ollama"},
                    "hardware": {"gpu": "rtx-3090"}})
    note = next(n for n in res.notes if "no engine_version given" in n)
    assert "ollama's current release assumed" in note and "llama.cpp's current build" in note
