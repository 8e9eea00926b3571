"""User stories (../shared/docs/USER-STORIES.md) a walk-through left open, each as the one command a user
would type, checked through the CLI (typer's CliRunner)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
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
    md = run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method", "full", "--zero", "0", "--markdown")
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


def test_build_suggest_sizes_a_2x4090_training_box_in_one_command() -> None:
    """"Which PSU, how much RAM, which CPU for a 2×4090 training box?" Hand-checked from build check's rules:
    sustained 2 × 450 + 125 (CPU) + 75 (rest) = 1,100 W, /0.8 = 1,375 -> 1,400 W; transients 2 × 450 × 1.4
    + 200 = 1,460 W ≤ 1,400 × 1.6; RAM ≥ 48 GiB VRAM -> 64 GiB; cores 4 × 2 + 2 = 10."""
    import json

    out = run("build", "suggest", "--gpu", "RTX 4090", "-n", "2")
    assert "1,400 W ATX 3.1" in out and "64 GiB" in out and "≥ 10 cores" in out and "x8/x8" in out
    s = json.loads(run("build", "suggest", "--gpu", "RTX 4090", "-n", "2", "--json"))
    assert (s["psu_w"], s["ram_gib"], s["cpu_cores"], s["cpu_pcie_lanes"]) == (1400, 64, 10, 16)
    assert s["sustained_w"] == 1100 and s["transient_w"] == 1460


def test_build_suggest_sizes_ram_for_the_plans_offload_and_passes_build_check() -> None:
    """With a workload, RAM covers what the plan keeps in host RAM (optimizer offload) on top of VRAM, and
    the suggested parts pass `build check`'s PSU, RAM and CPU checks."""
    import json

    from mlrig.advisor.build import as_build, check_build, suggest_build
    from mlrig.catalog.gpus import resolve_gpu

    args = ("build", "suggest", "--gpu", "RTX 3090", "-n", "4", "--model", "llama-3.2-3b", "--method", "full",
            "--offload", "optimizer", "--json")
    s = json.loads(run(*args))
    plan = json.loads(run("plan", "llama-3.2-3b", "--gpu", "RTX 3090", "-n", "4", "--task", "finetune",
                          "--method", "full", "--offload", "optimizer", "--json"))
    host = plan["memory"]["host_ram_gib"]
    assert host > 20 and abs(s["host_ram_gib"] - host) < 0.01
    assert s["ram_needed_gib"] >= s["total_vram_gib"] + host - 0.01 and s["ram_gib"] >= s["ram_needed_gib"]
    assert s["cpu_pcie_lanes"] >= 64 and "workstation" in s["platform"]
    # the data read rate is the plan's (tokens/s x bytes per token), not the 0.5 GB/s-per-GPU rule of thumb
    assert s["storage_gb_s"] == pytest.approx(plan["training"]["data_read_mb_s"] / 1e3, rel=0.01)  # --json rounds
    assert s["storage_gb_s"] < 0.1
    for name, n in (("RTX 4090", 2), ("RTX 3090", 1), ("H100 PCIe", 4)):
        g = resolve_gpu(name)
        report = check_build(as_build(suggest_build(g, n), g, n))
        bad = [f for f in report.findings if f.check in ("psu", "ram", "cpu") and f.severity in ("error", "warning")]
        assert not bad, bad


def test_nvlink_on_a_gpu_without_it_is_a_one_line_error() -> None:
    """"Does NVLink matter for my training?": `--interconnect nvlink` on 2× RTX 4090 was accepted and priced at
    NVLink 4's 450 GB/s; the 4090 has no NVLink connector (NVIDIA's spec: PCIe 4.0 x16 only)."""
    res = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "-n", "2", "--interconnect", "nvlink")
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert "RTX 4090 has no NVLink" in res.stderr and "PCIe 4.0 x16" in res.stderr and "pcie4" in res.stderr
    assert "has no NVLink" in mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--interconnect", "nvlink").stderr
    # the catalog's NVLink cards keep it: the RTX 3090's bridge, an H100 SXM's NVSwitch
    assert "fits" in run("plan", "llama-3.1-8b", "--gpu", "RTX 3090", "-n", "2", "--interconnect", "nvlink")
    assert "fits" in run("plan", "llama-3.1-70b", "--gpu", "H100 SXM", "-n", "8", "--interconnect", "nvswitch")
    assert "fits" in run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "-n", "2", "--interconnect", "pcie4")


def test_multi_gpu_full_finetune_headline_says_zero_stage_and_fix_is_first() -> None:
    """"How long to fine-tune a 7B on 8×A100?": with ZeRO 0 (plain data parallel) it "does not fit"; the headline
    says the stage and `--zero` heads the fixes (it keeps the job as asked: same method, same optimizer). With no
    stage given a multi-GPU full fine-tune is now ZeRO 3 (tests/test_user_stories_s33.py)."""
    import json

    assert "ZeRO 3 (FSDP full shard)" in run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method",
                                             "full").splitlines()[0]
    out = run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method", "full", "--zero", "0")
    head = out.splitlines()[0]
    assert "ZeRO 0 (plain DDP" in head and "--zero 1-3" in head
    fixes = out.split("To make it fit", 1)[1].splitlines()[1]
    assert fixes.split()[:2] == ["--zero", "1"]
    data = json.loads(run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method", "full", "--zero", "0",
                          "--json"))
    assert data["fixes"][0]["flags"] == "--zero 1" and data["fixes"][0]["per_gpu_gib"] < 80
    assert "ZeRO 3 (FSDP full shard)" in run("plan", "llama-2-7b", "--gpu", "A100 80GB", "-n", "8", "--method",
                                             "full", "--zero", "3").splitlines()[0]
    assert "ZeRO" not in run("plan", "llama-2-7b", "--gpu", "A100 80GB", "--method", "lora").splitlines()[0]


def test_nvlink_named_on_a_3090_is_its_own_bridge() -> None:
    """`--interconnect nvlink` (the alias of NVLink 4, 450 GB/s) on 2× RTX 3090 was priced at 450 GB/s; the
    card's bridge is 56.25 GB/s per direction (the catalog's figure), as the default link already prices it."""
    import json

    base = ("plan", "llama-3.1-8b", "--gpu", "RTX 3090", "-n", "2", "--method", "full", "--zero", "3", "--json")
    speeds = {json.loads(run(*base, *extra))["performance"]["train_tokens_per_s"]
              for extra in ((), ("--interconnect", "nvlink"), ("--interconnect", "nvlink-3090-bridge"))}
    assert len(speeds) == 1
