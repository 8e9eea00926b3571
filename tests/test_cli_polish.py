"""Rough edges a newcomer hits (issue 14 §3): token-count short forms, 80 columns, --version, examples in
--help, fits-first ordering, the assumed GPU, rounded JSON, and "how to make it fit"."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mlrig.commands._common import parse_token_count
from mlrig.errors import MlrigError


def mlrig(*args: str, columns: int | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env)


@pytest.mark.parametrize("text, binary, expected", [
    ("8192", True, 8192), ("8k", True, 8192), ("32K", True, 32768), ("128k", True, 131072),
    ("1M", True, 1048576), ("8_192", True, 8192), ("8,192", True, 8192), ("1.5k", True, 1536),
    ("1e11", False, 100_000_000_000), ("15T", False, 15_000_000_000_000), ("100B", False, 100_000_000_000),
    ("2k", False, 2000),
])
def test_token_counts(text: str, binary: bool, expected: int) -> None:
    assert parse_token_count(text, binary=binary) == expected


@pytest.mark.parametrize("junk", ["abc", "8kk", "", "-8k", "8 tokens", "1.3"])
def test_token_count_junk(junk: str) -> None:
    with pytest.raises(MlrigError, match="token count"):
        parse_token_count(junk, flag="--context")


def test_context_short_form_on_the_command_line() -> None:
    """`--context 128k` is 131,072 tokens: the KV cache of Llama 3.1 8B in bf16 at 128 KiB/token is 16 GiB."""
    short = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--context", "128k", "--json",
                             "--no-limits").stdout)
    long = json.loads(mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--context", "131072", "--json",
                            "--no-limits").stdout)
    assert short["memory"] == long["memory"]
    assert short["memory"]["kv_cache_gib"] == pytest.approx(16.0, abs=0.01)


@pytest.mark.parametrize("args", [
    ["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--context", "eight"],
    ["fit", "--gpu", "RTX 4090", "--context", "8q"],
    ["recommend", "--model", "llama-3.1-8b", "--context", "32x"],
])
def test_junk_token_count_is_one_line(args: list[str]) -> None:
    r = mlrig(*args)
    assert r.returncode == 2
    assert "--context" in r.stderr and "8k" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
