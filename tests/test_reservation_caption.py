"""A serving engine's memory figure is its whole reservation (gpu_memory_utilization x the card, filled with KV
cache): `fit` and `compare` tables say so, so that a 0.5B model "taking" 21.6 GiB of a 3090 is not read as its need."""

from __future__ import annotations

from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.commands._common import reservation_caption, reserves_pool

WIDE = {"COLUMNS": "400"}


def test_reserves_pool_tells_a_reservation_from_free_memory() -> None:
    assert reserves_pool(24.0, 21.6, 19.87)  # vLLM: 0.9 x 24 reserved, the pool beyond one sequence spare
    assert not reserves_pool(24.0, 3.1, 20.9)  # llama.cpp: what is not used is free
    assert reservation_caption([], headroom_column=True) is None


def test_compare_says_a_vllm_figure_is_the_reservation() -> None:
    out = CliRunner().invoke(app, ["compare", "qwen2.5-0.5b", "--gpu", "RTX 3090", "--gpu", "RTX 4090",
                                   "--engine", "vllm"], env=WIDE)
    assert out.exit_code == 0, out.output
    assert "vllm: GiB is the engine's reservation" in out.output
    llama = CliRunner().invoke(app, ["compare", "qwen2.5-0.5b", "--gpu", "RTX 3090", "--gpu", "RTX 4090",
                                     "--engine", "llama.cpp"], env=WIDE)
    assert llama.exit_code == 0 and "reservation" not in llama.output


def test_fit_says_what_its_headroom_column_is_for_vllm_rows() -> None:
    out = CliRunner().invoke(app, ["fit", "qwen2.5-0.5b", "--gpu", "RTX 3090", "--engine", "vllm"], env=WIDE)
    assert out.exit_code == 0, out.output
    assert "headroom: that KV pool beyond one sequence" in " ".join(out.output.split())  # the caption wraps


def test_markdown_says_it_too() -> None:
    plan = CliRunner().invoke(app, ["plan", "qwen2.5-0.5b", "--gpu", "RTX 3090", "--engine", "vllm", "--markdown"])
    assert plan.exit_code == 0 and "the engine's reservation, +" in plan.output
    llama = CliRunner().invoke(app, ["plan", "qwen2.5-0.5b", "--gpu", "RTX 3090", "--engine", "llama.cpp",
                                     "--markdown"])
    assert llama.exit_code == 0 and "reservation" not in llama.output
    compare = CliRunner().invoke(app, ["compare", "qwen2.5-0.5b", "--gpu", "RTX 3090", "--gpu", "RTX 4090",
                                       "--engine", "vllm", "--markdown"])
    assert compare.exit_code == 0 and "vllm: GiB is the engine's reservation" in compare.output
