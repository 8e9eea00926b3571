"""A new user's hour (issue 10 §3, session 37): the rough edges found walking docs USER-STORIES with the CLI.
Each test runs the installed CLI (tests/cli_run.py) and fails on the behaviour it replaced."""

from __future__ import annotations

import json
from typing import Any

from cli_run import mlrig


def _json(*args: str) -> Any:
    res = mlrig(*args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# ---- 1. one default request for plan and serve -------------------------------------------------------------
# `plan` priced 512 prompt + 128 output tokens and `serve` 512 + 256, so the same setup's decode speed at one user
# differed between the two commands; `serve --context 8k` sized the KV cache for 8k but priced a 512-token prompt.

def test_serve_prices_the_request_plan_prices_by_default() -> None:
    serve = _json("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1")
    plan = _json("plan", "llama-3.1-8b", "--gpu", "L40S", "--engine", "vllm", "--load", "concurrency", "--batch", "1")
    assert (serve["prompt_tokens"], serve["output_tokens"]) == (512, 128)
    assert (plan["performance"]["prompt_tokens"], plan["performance"]["output_tokens"]) == (512, 128)
    assert serve["curve"][0]["tpot_ms"] == plan["performance"]["tpot_ms"]
    assert serve["curve"][0]["ttft_ms"] == plan["performance"]["ttft_ms"]


def test_serve_with_a_context_alone_fills_it_as_plan_does() -> None:
    serve = _json("serve", "llama-3.1-8b", "--gpu", "L40S", "--context", "8k", "--concurrency", "1")
    plan = _json("plan", "llama-3.1-8b", "--gpu", "L40S", "--engine", "vllm", "--context", "8k", "--load",
                 "concurrency", "--batch", "1")
    assert (serve["prompt_tokens"], serve["output_tokens"]) == (8192 - 128, 128)
    assert serve["curve"][0]["ttft_ms"] == plan["performance"]["ttft_ms"]
    short = _json("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1")
    assert serve["curve"][0]["ttft_ms"] > 5 * short["curve"][0]["ttft_ms"]  # an 8k prompt, not 512 tokens


def test_serve_headline_states_the_request() -> None:
    res = mlrig("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1")
    assert res.returncode == 0, res.stderr
    assert "512-token prompt, 128 out (640 tokens per sequence)" in " ".join(res.stdout.split())


# ---- 2. which AdamW a training plan prices, and saying otherwise ---------------------------------------------
# A custom training loop (no engine) was priced with foreach temporaries in memory but a fused AdamW's step
# time, and `--optimizer adamw-fused` under HF Trainer still got the foreach step time.

FT = ("plan", "mistral-7b", "--gpu", "A100 80GB", "-n", "8", "--task", "finetune", "--method", "full")


def test_a_custom_loop_is_priced_with_torch_adamw_default_and_says_so() -> None:
    default, fused = _json(*FT), _json(*FT, "--optimizer", "adamw-fused")
    note = next(n for n in default["memory"]["notes"] if n.startswith("optimizer adamw"))
    assert "foreach" in note and "--optimizer adamw-fused" in note
    # foreach: its temporaries at the step (memory) and ~42 against 30 B per parameter moved (speed)
    assert default["memory"]["per_gpu_gib"] > fused["memory"]["per_gpu_gib"]
    assert default["performance"]["train_tokens_per_s"] < fused["performance"]["train_tokens_per_s"]


def test_fused_adamw_named_under_hf_trainer_is_priced_fused() -> None:
    hf = _json(*FT, "--engine", "hf-trainer")
    fused = _json(*FT, "--engine", "hf-trainer", "--optimizer", "adamw-fused")
    assert fused["performance"]["train_tokens_per_s"] > hf["performance"]["train_tokens_per_s"]
    assert fused["memory"]["per_gpu_gib"] < hf["memory"]["per_gpu_gib"]
