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
    training = run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method", "full").splitlines()[1]
    assert "GiB short)" in training and "headroom" not in training


def test_min_throughput_names_the_batch() -> None:
    """"Cheapest cloud instance that serves Llama 3.1 70B FP8 at 1,000 tok/s aggregate?": without --batch the
    aggregate is one request's, so nothing qualified and nothing said why; now the answer says to give --batch
    and lists each GPU's reason, and with --batch an option qualifies."""
    out = run("recommend", "--model", "llama-3.1-70b", "--precision", "fp8", "--min-throughput", "1000",
              "--cloud-only")
    assert "pass --batch N" in out
    excluded = out.split("excluded ", 1)[1]
    assert "does not fit" in excluded and "aggregate over --batch sequences is below the 1,000" in excluded
    rec = run_json("recommend", "--model", "llama-3.1-70b", "--precision", "fp8", "--batch", "32",
                   "--min-throughput", "1000", "--cloud-only")
    assert any(o["feasible"] for o in rec["options"])


def test_a_p40_runs_llama_cpp_by_default() -> None:
    """"Is a P40 a bargain?": the serving engines need compute capability 7.0 (vLLM's GPU requirements), so a
    Pascal card's default engine is llama.cpp; a V100 (7.0) keeps vLLM."""
    assert run_json("plan", "llama-3.1-8b", "--gpu", "Tesla P40")["engine"] == "llama.cpp"
    assert run_json("plan", "llama-3.1-8b", "--gpu", "V100 SXM2 16GB", "-q", "fp16")["engine"] == "vllm"


def test_nvlink_question_has_a_flag() -> None:
    """"Does NVLink matter for my training?": `--interconnect` (a plan-file key) is a flag now."""
    base = ["plan", "llama-3.1-8b", "--gpu", "RTX 3090", "-n", "2", "--method", "full", "--zero", "3"]
    nvlink = run_json(*base, "--interconnect", "nvlink")["performance"]["train_tokens_per_s"]
    pcie3 = run_json(*base, "--interconnect", "pcie3")["performance"]["train_tokens_per_s"]
    assert nvlink > 2 * pcie3
    res = mlrig(*base, "--interconnect", "carrier-pigeon")
    assert res.returncode == 2 and "one of: pcie3-x4" in res.stderr and "nvlink" in res.stderr
    res = mlrig("recommend", "--model", "llama-3.1-8b", "--interconnect", "nvlink")
    assert res.returncode == 2 and "mlrig plan" in res.stderr and len(res.stderr.strip().splitlines()) == 1
