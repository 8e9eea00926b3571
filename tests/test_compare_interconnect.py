"""`mlrig compare --interconnect`: one for every compared GPU, or one per --gpu in order; any other count is a
one-line error (exit 2)."""

from __future__ import annotations

import os
import subprocess
import sys

from mlrig.commands.compare import compare_rows


def test_one_interconnect_per_gpu_is_paired_in_order() -> None:
    rows = compare_rows("llama-3.1-70b", ["2x RTX 3090", "2x RTX 4090"], ["q4_k_m"], ["vllm"],
                        interconnect=["nvlink", "pcie4"])
    assert [r.get("interconnect") for r in rows] == ["nvlink", "pcie4"]
    assert rows[0]["variant"].endswith("/ nvlink") and rows[1]["variant"].endswith("/ pcie4")
    # the links reach the plan: the same 2x RTX 3090 row differs between NVLink and host-staged PCIe
    pcie = compare_rows("llama-3.1-70b", ["2x RTX 3090", "2x RTX 4090"], ["q4_k_m"], ["vllm"],
                        interconnect=["pcie4", "pcie4"])
    assert rows[0]["result"]["performance"]["decode_tok_s"] != pcie[0]["result"]["performance"]["decode_tok_s"]


def test_one_interconnect_applies_to_every_gpu() -> None:
    rows = compare_rows("llama-3.1-70b", ["2x RTX 3090", "2x RTX 4090"], ["q4_k_m"], interconnect=["nvlink"])
    assert [r.get("interconnect") for r in rows] == ["nvlink", "nvlink"]
    assert "nvlink" not in rows[0]["variant"]  # the same in every row: the title says it


def test_default_keeps_a_gpus_own_links() -> None:
    rows = compare_rows("llama-3.1-70b", ["2x RTX 3090", "2x RTX 4090"], ["q4_k_m"],
                        interconnect=["nvlink", "default"])
    assert [r.get("interconnect") for r in rows] == ["nvlink", None]


def test_a_count_mismatch_is_one_line_and_exit_2() -> None:
    r = subprocess.run([sys.executable, "-m", "mlrig.cli", "compare", "llama-3.1-8b", "--gpu", "RTX 3090", "--gpu",
                        "RTX 4090", "--gpu", "L40S", "--interconnect", "pcie4", "--interconnect", "nvlink"],
                       capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 2
    assert "2 --interconnect for 3 --gpu" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_one_gpu_twice_with_two_links_is_two_rows() -> None:
    """"Does NVLink matter for my training?" as one command: the same GPU twice, one row per link (the duplicate
    GPU was dropped before the links were paired, and the count check then refused the question)."""
    rows = compare_rows("llama-3.1-8b", ["2x RTX 3090", "2x RTX 3090"], task="finetune", method="full",
                        interconnect=["pcie4", "nvlink"])
    assert [r["variant"] for r in rows] == ["pcie4", "nvlink"]
    slow, fast = (r["result"]["performance"]["train_tokens_per_s"] for r in rows)
    assert fast >= slow
