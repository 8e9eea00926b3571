"""`mlrig sweep`: ranges, patterns, and rows that are exactly what `mlrig plan` gives."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.commands.sweep import match_gpus, parse_count, parse_range
from mlrig.errors import MlrigError
from mlrig.planner import evaluate

runner = CliRunner()


def test_counts_and_ranges() -> None:
    assert parse_count("4k", "--context") == 4096 and parse_count("1M", "x") == 1_048_576
    assert parse_count("512", "x") == 512
    assert parse_range("1..64", "--batch") == [1, 2, 4, 8, 16, 32, 64]
    assert parse_range("3..20", "--batch") == [3, 6, 12, 20]  # doubling from LOW, then HIGH itself
    assert parse_range("4k..16k,1000", "--context") == [1000, 4096, 8192, 16384]
    for bad in ("", "0", "x", "8..4", "-1"):
        with pytest.raises(MlrigError):
            parse_range(bad, "--batch")


def test_gpu_patterns() -> None:
    ids = {g.id for g in match_gpus("RTX 40*")}
    assert "rtx-4090" in ids and "rtx-4060-ti-16gb" in ids and not any(i.startswith("rtx-30") for i in ids)
    assert [g.id for g in match_gpus("h100 sxm")] == ["h100-sxm-80gb"]
    with pytest.raises(MlrigError):
        match_gpus("nosuchgpu*")


def test_rows_equal_plan_and_cover_every_combination(tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    r = runner.invoke(app, ["sweep", "llama-3.1-8b", "--gpu", "rtx-4090,h100-sxm-80gb", "--precision",
                            "bf16,q4_k_m", "--context", "4k..16k", "--batch", "1,8", "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2 * 2 * 3 * 2
    row = next(x for x in rows if x["gpu"] == "rtx-4090" and x["precision"] == "q4_k_m"
               and x["context"] == "8192" and x["batch"] == "8")
    plan = evaluate({"model": "llama-3.1-8b", "workload": {
        "precision": "q4_k_m", "batch_size": 8, "context_tokens": 8192, "prompt_tokens": 8064,
        "output_tokens": 128}, "hardware": {"gpu": "rtx-4090"}})
    assert plan.memory is not None and plan.performance is not None
    assert float(row["per_gpu_gib"]) == pytest.approx(plan.memory.per_gpu_gib, abs=1e-3)
    assert float(row["decode_tok_s"]) == pytest.approx(plan.performance.decode_tok_s, rel=1e-3)
    assert row["fits"] == str(plan.fits)
    # invariant: at one GPU and precision, more context never needs less memory
    for gpu in ("rtx-4090", "h100-sxm-80gb"):
        mem = [float(x["per_gpu_gib"]) for x in rows if x["gpu"] == gpu and x["precision"] == "bf16"
               and x["batch"] == "1"]
        assert mem == sorted(mem)


def test_jsonl_and_bad_model_row(tmp_path: Path) -> None:
    r = runner.invoke(app, ["sweep", "llama-3.1-8b", "--gpu", "rtx-4090", "--precision", "bf16,nosuchformat",
                            "--format", "jsonl"])
    assert r.exit_code == 0, r.output
    lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 2
    assert lines[0]["error"] is None and lines[1]["error"] and "precision" in lines[1]["error"]


@pytest.mark.parametrize("args, needle", [
    (["--gpu", ""], "--gpu is empty"),
    (["--gpu", "rtx-4090", "--precision", ","], "--precision is empty"),
    (["--gpu", "rtx-4090", "--context", "8..4"], "goes down"),
    (["--gpu", "rtx-4090", "--format", "xlsx"], "--format"),
])
def test_bad_sweeps_are_one_line_and_write_nothing(args: list[str], needle: str) -> None:
    r = runner.invoke(app, ["sweep", "llama-3.1-8b", *args])  # the CLI's main() turns MlrigError into exit 2
    assert isinstance(r.exception, MlrigError) and needle in str(r.exception)
    assert "model,gpu" not in r.stdout


def test_unknown_model_or_a_folder_as_output_fail_before_any_row(tmp_path: Path) -> None:
    r = runner.invoke(app, ["sweep", "nosuchmodel-xyz", "--gpu", "rtx-4090"])
    assert isinstance(r.exception, MlrigError) and "model,gpu" not in r.stdout
    r = runner.invoke(app, ["sweep", "llama-3.1-8b", "--gpu", "rtx-4090", "-o", str(tmp_path)])
    assert isinstance(r.exception, MlrigError) and "not a regular file" in str(r.exception)
