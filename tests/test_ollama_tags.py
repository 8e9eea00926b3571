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


@pytest.mark.parametrize(("tag", "catalog_id", "precision"), [
    # ollama.com/library/deepseek-r1: the sizes below 671b are DeepSeek's distills, not R1 itself
    ("deepseek-r1:32b", "deepseek-r1-distill-qwen-32b", "q4_k_m"), ("deepseek-r1:70b", "deepseek-r1-distill-llama-70b",
                                                                    "q4_k_m"),
    ("deepseek-r1:7b-qwen-distill-q8_0", "deepseek-r1-distill-qwen-7b", "q8_0"),
    ("deepseek-r1:8b-llama-distill-q4_K_M", "deepseek-r1-distill-llama-8b", "q4_k_m"),
    # ':latest' is ollama's default tag (8b / 7b / ... Q4_K_M)
    ("llama3.1:latest", "llama-3.1-8b", "q4_k_m"), ("qwen2.5:latest", "qwen2.5-7b", "q4_k_m"),
    ("mistral:latest", "mistral-7b-v0.3", "q4_k_m"), ("llama3.2:latest", "llama-3.2-3b", "q4_k_m"),
    ("gpt-oss:20b", "gpt-oss-20b", "mxfp4"),  # ollama runs gpt-oss's MXFP4 weights as shipped
])
def test_ollama_tags_name_the_model_ollama_downloads(tag: str, catalog_id: str, precision: str) -> None:
    arch = resolve_model(tag)
    assert (arch.id, arch.weight_format) == (catalog_id, precision)


def test_every_default_tag_resolves() -> None:
    from mlrig.catalog.models import OLLAMA_LATEST_SIZE, OLLAMA_TAG_MODELS

    for family in OLLAMA_LATEST_SIZE:
        assert resolve_model(f"{family}:latest").weight_format in ("q4_k_m", "mxfp4"), family
    for tag in OLLAMA_TAG_MODELS:
        assert resolve_model(tag).gguf_packaged, tag


def test_a_bare_family_name_points_at_its_latest_tag() -> None:
    from mlrig.errors import MlrigError

    with pytest.raises(MlrigError, match=r"ollama's 'llama3.1' is llama3.1:latest, its 8b build"):
        resolve_model("llama3.1")


def test_bare_names_keep_their_catalog_meaning() -> None:
    assert resolve_model("deepseek-r1").id == "deepseek-r1" and resolve_model("deepseek-r1").weight_format is None
    assert resolve_model("phi4").weight_format is None
    assert resolve_model("deepseek-r1:latest").weight_format == "q4_k_m"  # ollama's 8b build, not R1 in FP8


def test_an_fp16_tag_prices_on_llama_cpp() -> None:
    # was vLLM: ollama runs the GGUF F16 build on llama.cpp
    r = mlrig.plan("llama3.1:8b-instruct-fp16", gpu="RTX 4090")
    assert r.precision == "fp16" and r.engine == "llama.cpp"
    assert mlrig.plan("llama-3.1-8b", gpu="RTX 4090", precision="fp16").engine == "vllm"  # an HF checkpoint: unchanged


@pytest.mark.parametrize(("tag", "catalog_id", "precision"), [
    # ollama.com/library/qwq, /llama4, /command-r, /qwen3, /mistral-small3.2: each tag's model and its Q4_K_M default
    ("qwq", "qwen2.5-32b", "q4_k_m"), ("qwq:32b", "qwen2.5-32b", "q4_k_m"), ("qwq:32b-q8_0", "qwen2.5-32b", "q8_0"),
    ("llama4:scout", "llama-4-scout-17b-16e", "q4_k_m"), ("llama4:maverick", "llama-4-maverick-17b-128e", "q4_k_m"),
    ("llama4:latest", "llama-4-scout-17b-16e", "q4_k_m"), ("llama4:128x17b", "llama-4-maverick-17b-128e", "q4_k_m"),
    ("llama4:scout-q8_0", "llama-4-scout-17b-16e", "q8_0"),
    ("llama4:17b-maverick-128e-instruct-q8_0", "llama-4-maverick-17b-128e", "q8_0"),
    ("command-r:35b", "c4ai-command-r-08-2024", "q4_k_m"), ("command-r:latest", "c4ai-command-r-08-2024", "q4_k_m"),
    ("command-r:35b-08-2024-q8_0", "c4ai-command-r-08-2024", "q8_0"),
    ("command-r:35b-v0.1", "c4ai-command-r-v01", "q4_k_m"),
    ("command-r-plus:latest", "c4ai-command-r-plus-08-2024", "q4_k_m"),
    ("qwen3:30b", "qwen3-30b-a3b", "q4_k_m"), ("qwen3:235b", "qwen3-235b-a22b", "q4_k_m"),
    ("mistral-small3.2:24b", "mistral-small-3.1-24b-2503", "q4_k_m"), ("gemma3:27b-it-qat", "gemma-3-27b", "q4_0"),
    ("mistral-small:latest", "mistral-small-24b-2501", "q4_k_m"),
])
def test_popular_ollama_names_resolve(tag: str, catalog_id: str, precision: str) -> None:
    arch = resolve_model(tag)
    assert (arch.id, arch.weight_format) == (catalog_id, precision)
    assert arch.gguf_packaged


def test_ollama_caveats_are_stated() -> None:
    assert any("Qwen2.5-32B" in n for n in resolve_model("qwq").notes)
    assert resolve_model("command-r").weight_format is None  # the bare name keeps its catalog (HF) meaning


def test_ollama_command_r_is_the_08_2024_gqa_release() -> None:
    """ollama's command-r:35b is Command R 08-2024 (8 KV heads of 128); its v0.1 tags are v01 (64 KV heads). Per token
    the 08-2024 KV cache is 40 layers x 2 x 8 x 128 values, 1/8 of v01's."""
    new, old = resolve_model("command-r:35b"), resolve_model("command-r:35b-v0.1")
    assert (new.num_kv_heads, old.num_kv_heads) == (8, 64)
    assert new.kv_values_per_token(0) == 40 * 2 * 8 * 128 == old.kv_values_per_token(0) // 8


def test_a_bare_multi_model_family_still_points_at_its_tag() -> None:
    from mlrig.errors import MlrigError

    with pytest.raises(MlrigError, match=r"llama4:latest"):
        resolve_model("llama4")
