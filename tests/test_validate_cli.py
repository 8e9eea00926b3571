"""`mlrig validate` rendering: one line per group at 80 columns; --json keeps the groups as they are."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mlrig.commands.validate import split_group

ROOT = Path(__file__).resolve().parents[1]


def run_validate(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    r = subprocess.run([sys.executable, "-m", "mlrig.cli", "validate", *args], capture_output=True, text=True,
                       timeout=300, env=env, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_split_group() -> None:
    assert split_group("decode_tok_s / llama.cpp-metal / apple") == ("decode", "llama.cpp-metal", "apple")
    assert split_group("tokens_per_s_per_gpu") == ("train/GPU", "", "")
    assert split_group("vllm_kv_tokens") == ("vllm_kv_tokens", "", "")  # memory groups keep their names


def test_table_fits_80_columns_one_line_per_group() -> None:
    out = run_validate()
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    # each group on one line: metric, engine and hardware class side by side
    metal = [line.split() for line in lines if "llama.cpp-metal" in line]
    assert ["decode", "llama.cpp-metal", "apple"] in [cells[:3] for cells in metal]
    assert ["prefill", "llama.cpp-metal", "apple"] in [cells[:3] for cells in metal]
    decode_all = next(line.split() for line in lines if line.split()[:3] == ["decode", "all", "all"])
    assert decode_all[-1] in ("ok", "over") and decode_all[-2] == "10%"  # the threshold shows
    assert any(line.split()[:1] == ["vllm_kv_tokens"] for line in lines)  # the memory suite too
    # the 'skipped' pseudo-group is a line under the table, not a row with n = 0
    skipped = [line for line in lines if line.startswith("skipped:")]
    assert len(skipped) == 1 and "ANOMALY" in skipped[0] and "%" not in skipped[0]


def test_json_unchanged() -> None:
    from mlrig.validation import memory, speed

    got = json.loads(run_validate("--json"))
    want = [g.model_dump(mode="json", exclude={"rows"}) for g in [*memory.run(), *speed.run()]]
    assert got == want
    assert any(g["name"] == "decode_tok_s / llama.cpp-metal / apple" for g in got)
    assert any(g["name"].startswith("skipped:") and g["n"] == 0 for g in got)
