"""Questions from ../shared/docs/USER-STORIES.md, each as the one command a user would type: what the answer
must say (and must not), checked through the CLI (typer's CliRunner, or the real entry point for errors)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from typer.testing import CliRunner


def run(*args: str, width: int = 200) -> str:
    from mlrig.cli import app

    res = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)})
    assert res.exit_code == 0, res.output
    return res.stdout


def run_json(*args: str) -> Any:
    return json.loads(run(*args, "--json"))


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, timeout=120)


def test_a_plan_that_does_not_fit_says_how_much_is_missing() -> None:
    """"vLLM says No available memory for the cache blocks: Qwen2.5-32B on an A100 40GB": the headline said
    '(-26.09 GiB KV pool to spare beyond one sequence)' under '✘ does not fit'."""
    head = run("plan", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "A100 40GB").splitlines()[1]
    assert "does not fit" in head and "GiB short of the engine's reservation" in head
    assert "to spare" not in head and "-" not in head.split("(")[1]
    training = run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method", "full",
                   "--zero", "0").splitlines()[1]  # plain DDP: every state on every GPU
    assert "GiB short)" in training and "headroom" not in training


def test_min_throughput_finds_the_concurrency_that_reaches_it() -> None:
    """"Cheapest cloud instance that serves Llama 3.1 70B FP8 at 1,000 tok/s aggregate?": without --batch the
    aggregate was one request's, so nothing qualified and the answer said to pass --batch N. Now each option is
    priced at the fewest users served at once that reach 1,000 tok/s within the per-user floors (the planner's
    own closed-loop figure for that many users), the cheapest such option ranks first and the concurrency is
    shown; with --batch the concurrency is the user's."""
    out = run("recommend", "--model", "llama-3.1-70b", "--precision", "fp8", "--min-throughput", "1000",
              "--cloud-only")
    assert "pass --batch N" not in out and "tok/s aggregate at a load of" in out
    rec = run_json("recommend", "--model", "llama-3.1-70b", "--precision", "fp8", "--min-throughput", "1000",
                   "--cloud-only")
    feasible = [o for o in rec["options"] if o["feasible"]]
    assert feasible and feasible[0] is rec["options"][0]
    assert [o["total_cost_usd"] for o in feasible] == sorted(o["total_cost_usd"] for o in feasible)
    top = feasible[0]["workloads"][0]
    users, gpu, n = top["concurrency"], feasible[0]["gpu"], feasible[0]["gpus"]
    assert users > 1 and top["throughput_tok_s"] >= 1000 and top["decode_tok_s"] >= 10 and top["ttft_s"] <= 5
    loop = ("--load", "concurrency")  # a closed loop of that many users, as `serve` prices it
    at = run_json("plan", "llama-3.1-70b", "--precision", "fp8", "--gpu", gpu, "-n", str(n), *loop,
                  "--batch", str(users))
    assert abs(at["performance"]["throughput_tok_s"] - top["throughput_tok_s"]) < 1  # the planner's figure
    fewer = run_json("plan", "llama-3.1-70b", "--precision", "fp8", "--gpu", gpu, "-n", str(n), *loop,
                     "--batch", str(users - 1))["performance"]
    assert fewer["throughput_tok_s"] < 1000 or fewer["ttft_ms"] > 5000 or fewer["tpot_ms"] > 100  # fewer do not
    excluded = " ".join(out.split("excluded ", 1)[1].split())
    assert "does not fit" in excluded
    assert "users, the most the per-user floors allow; closed loop), below the 1,000" in excluded
    rec = run_json("recommend", "--model", "llama-3.1-70b", "--precision", "fp8", "--batch", "32",
                   "--min-throughput", "1000", "--cloud-only")
    assert any(o["feasible"] for o in rec["options"])
    assert all(o["workloads"][0]["concurrency"] is None for o in rec["options"])


def test_a_p40_runs_llama_cpp_by_default() -> None:
    """"Is a P40 a bargain?": the serving engines need compute capability 7.0 (vLLM's GPU requirements), so a
    Pascal card's default engine is llama.cpp; a V100 (7.0) keeps vLLM."""
    assert run_json("plan", "llama-3.1-8b", "--gpu", "Tesla P40")["engine"] == "llama.cpp"
    assert run_json("plan", "llama-3.1-8b", "--gpu", "V100 SXM2 16GB", "-q", "fp16")["engine"] == "vllm"


def test_nvlink_question_has_a_flag() -> None:
    """"Does NVLink matter for my training?": `--interconnect` (a plan-file key) is a flag now."""
    # at 640-token sequences (the default before planner.default_seq_len): short sequences make ZeRO-3's
    # per-step traffic the bottleneck, which is what the flag is for
    base = ["plan", "llama-3.1-8b", "--gpu", "RTX 3090", "-n", "2", "--method", "full", "--zero", "3",
            "--seq-len", "640"]
    nvlink = run_json(*base, "--interconnect", "nvlink")["performance"]["train_tokens_per_s"]
    pcie3 = run_json(*base, "--interconnect", "pcie3")["performance"]["train_tokens_per_s"]
    assert nvlink > 2 * pcie3
    res = mlrig(*base, "--interconnect", "carrier-pigeon")
    assert res.returncode == 2 and "one of: pcie3-x4" in res.stderr and "nvlink" in res.stderr
    res = mlrig("recommend", "--model", "llama-3.1-8b", "--interconnect", "nvlink")
    assert res.returncode == 2 and "mlrig plan" in res.stderr and len(res.stderr.strip().splitlines()) == 1
