"""User stories (../shared/docs/USER-STORIES.md) a walk-through left open, each as the one command a user
would type, checked through the CLI (typer's CliRunner)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from typer.testing import CliRunner


def invoke(*args: str) -> Any:
    from mlrig.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point (errors become one line and exit status 2 there)."""
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, timeout=120)


def run(*args: str) -> str:
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    return str(res.stdout)


def test_plan_markdown_is_a_table_to_paste_into_an_issue() -> None:
    """"A table to paste into an issue": the same figures as --json, with units, engine and scopes."""
    import json

    md = run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--markdown")
    data = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--json"))
    assert "(vllm) on 1 × rtx-4090" in md.splitlines()[0]  # the engine, as the terminal headline says it
    assert "GiB = 2^30 bytes" in md and "| memory per GPU | GiB |" in md and "|---|---:|" in md
    assert f"| **total per GPU** | **{data['memory']['per_gpu_gib']:.2f}** |" in md
    assert f"| weights | {data['memory']['weights_gib']:.2f} |" in md
    decode = data["validation"]["decode_tok_s"]
    assert f"{decode['rows']} runs ({decode['scope']})" in md  # the validation scope, as "Validated:" says
    assert "not validated (vllm prefill_tok_s, GDDR" in md
    assert "\x1b" not in md and "━" not in md


def test_plan_markdown_lists_the_fixes_when_it_does_not_fit() -> None:
    md = run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method", "full", "--markdown")
    assert "✘ does not fit" in md and "To make it fit, change one of:" in md and "| `--zero 1` |" in md


def test_compare_markdown_has_units_bands_and_scopes() -> None:
    md = run("compare", "llama-3-8b", "--precision", "q4_k_m", "--gpu", "M2 Max 64GB", "--gpu", "RTX 4070",
             "--markdown")
    lines = md.splitlines()
    header = next(line for line in lines if line.startswith("| variant"))
    assert "GiB/GPU" in header and "decode tok/s" in header and "TTFT ms" in header and "engine" in header
    row = next(line for line in lines if line.startswith("| RTX 4070"))
    assert "| llama.cpp |" in row and "(llama.cpp decode_tok_s, GDDR)" in row and "±" in row
    assert "GiB = 2^30 bytes" in lines[0]


def test_json_and_markdown_together_is_a_one_line_error() -> None:
    res = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--markdown", "--json")
    assert res.returncode == 2 and "give one" in res.stderr and "Traceback" not in res.stderr
