"""`mlrig compare` without --gpu runs every row on the default GPU: the output names it, as `mlrig plan` does."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mlrig.cli import app

WIDE = {"COLUMNS": "400"}


def test_compare_without_gpu_names_the_gpu_assumed() -> None:
    for extra in ([], ["--markdown"]):
        out = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "-q", "q4_k_m", "-q", "q8_0", *extra], env=WIDE)
        assert out.exit_code == 0, out.output
        assert "no GPU given: assumed NVIDIA GeForce RTX 4090" in out.output


def test_compare_with_a_gpu_says_nothing_of_it() -> None:
    out = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "-q", "q4_k_m", "-g", "RTX 3090"], env=WIDE)
    assert out.exit_code == 0 and "no GPU given" not in out.output
    as_json = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "-q", "q4_k_m", "-q", "q8_0", "--json"])
    json.loads(as_json.output)  # --json stays pure JSON (the note is in each row's notes)


def test_a_row_error_is_printed_whole() -> None:
    # rich read '[hardware.gpu_spec]' in an unknown GPU's error as markup and dropped it
    out = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "-g", "RTX 4090", "-g", "NoSuchGPU"], env=WIDE)
    assert out.exit_code == 1
    assert "[hardware.gpu_spec]" in out.output
