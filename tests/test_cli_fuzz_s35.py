"""Typos and absurd values on the commands' flags are one line with the fix and exit 2, never a traceback
(found by fuzzing plan/fit/compare/serve/recommend and plan --task finetune with bad values, s35)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mlrig.errors import MlrigError
from mlrig.units import parse_token_count


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.mark.parametrize("text", ["1e999", "1e400k"])
def test_an_infinite_token_count_is_an_error_not_an_overflow(text: str) -> None:
    # was OverflowError: cannot convert float infinity to integer (a traceback on --context 1e999)
    with pytest.raises(MlrigError, match="too large for a token count"):
        parse_token_count(text, flag="--context")


@pytest.mark.parametrize(("args", "needle"), [
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--context", "1e999"], "--context"),
    (["plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--max-model-len", "1e999"], "--max-model-len"),
    (["recommend", "--model", "llama-3.1-8b", "--batch", "nan", "--local-only"], "--batch expects a whole number"),
])
def test_bad_numbers_exit_2_on_one_line(args: list[str], needle: str) -> None:
    res = mlrig(*args)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and needle in res.stderr


@pytest.mark.parametrize(("gpu", "needle"), [
    ("0x RTX 4090", "0 is no GPU count"), ("-2x RTX 4090", "-2 is no GPU count"),
    ("999999x RTX 4090", "999999 is no GPU count"),
    ("2x RTX 4099", "did you mean: NVIDIA GeForce RTX 4090"),  # was: CPU hosts first, matched on '2x'
])
def test_a_gpu_with_a_bad_count_says_which_part_is_wrong(gpu: str, needle: str) -> None:
    from mlrig.catalog.gpus import resolve_gpu

    with pytest.raises(MlrigError, match=needle):
        resolve_gpu(gpu)
