"""An ollama library tag ('llama3.1:70b') is the Q4_K_M build ollama downloads for it, not the bf16 checkpoint; a
quant at the tag's end chooses another."""

from __future__ import annotations

import pytest

import mlrig
from mlrig.catalog.models import resolve_model


@pytest.mark.parametrize(("tag", "catalog_id", "precision"), [
    ("llama3.1:70b", "llama-3.1-70b", "q4_k_m"), ("qwen2.5:32b", "qwen2.5-32b", "q4_k_m"),
    ("llama3.1:8b-instruct-q8_0", "llama-3.1-8b", "q8_0"), ("llama3.1:8b-instruct-fp16", "llama-3.1-8b", "fp16"),
    ("qwen3:30b-a3b", "qwen3-30b-a3b", "q4_k_m"), ("qwen3:30b-a3b-q8_0", "qwen3-30b-a3b", "q8_0"),
])
def test_ollama_tag_reads_its_quant(tag: str, catalog_id: str, precision: str) -> None:
    arch = resolve_model(tag)
    assert (arch.id, arch.weight_format) == (catalog_id, precision)
    assert any("as an ollama library tag" in n for n in arch.notes)


def test_other_names_keep_their_precision() -> None:
    assert resolve_model("llama-3.1-8b").weight_format is None
    assert resolve_model("llama3.1-8b").weight_format is None  # hyphen, not a tag


def test_a_plan_of_an_ollama_tag_prices_the_q4_build() -> None:
    # was bf16 on vLLM: 'does not fit' on a 4090 for a model ollama runs there in 4-bit
    r = mlrig.plan("qwen2.5:32b", gpu="RTX 4090")
    assert r.precision == "q4_k_m" and r.engine == "llama.cpp" and r.fits
