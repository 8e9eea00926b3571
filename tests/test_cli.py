"""The command line as a user meets it: exit codes, one-line errors, JSON shapes."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("args, needle", [
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4099"], "RTX 4090"),
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--batch", "-3"], "batch_size"),
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q9_z"], "q9_z"),
    (["plan", "no-such-model-at-all", "--gpu", "RTX 4090"], "no-such-model-at-all"),
    (["plan", "--file", "/nonexistent/plan.toml"], "not found"),
    (["plan"], "give a MODEL"),
])
def test_bad_input_exit_2_one_line(args: list[str], needle: str) -> None:
    r = mlrig(*args)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_plan_json_contract() -> None:
    r = mlrig("plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "NVIDIA GeForce RTX 4090", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert set(d) >= {"id", "error", "fits", "memory", "kv_cache_capacity_tokens", "performance"}
    assert d["memory"]["gpu_capacity_gib"] == pytest.approx(23.99, abs=0.05)
    assert d["fits"] is True


def test_plan_human_output() -> None:
    r = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 3090", "--precision", "q4_k_m")
    assert r.returncode == 0, r.stderr
    assert "fits" in r.stdout and "GiB" in r.stdout
