"""Bits per weight of real formats (ggml block structs, bitsandbytes, GPTQ/AWQ, MXFP4)."""

from __future__ import annotations

import pytest

from mlrig import quant
from mlrig.catalog.models import resolve_model
from mlrig.errors import MlrigError


def test_ggml_block_sizes() -> None:
    assert quant.bits_per_weight("q8_0") == 8.5  # 34 B / 32
    assert quant.bits_per_weight("Q4_K_M") == 4.5  # Q4_K: 144 B / 256
    assert quant.bits_per_weight("q6_k") == 6.5625  # 210 B / 256
    assert quant.bits_per_weight("q4_0") == 4.5  # 18 B / 32
    assert quant.bits_per_weight("q2_k") == 2.625  # 84 B / 256


def test_bnb_gptq_mxfp4() -> None:
    assert quant.bits_per_weight("nf4-nodq") == 4.5
    assert quant.bits_per_weight("nf4") == pytest.approx(4.127, abs=1e-3)
    assert 4.125 <= quant.bits_per_weight("gptq") <= 4.25
    assert quant.bits_per_weight("mxfp4") == 4.25


def test_unknown_precision_lists_valid() -> None:
    with pytest.raises(MlrigError, match="q4_k_m"):
        quant.bits_per_weight("q9_z")
    with pytest.raises(MlrigError):
        quant.kv_bytes_per_element("int3")


def test_kv_and_compute_dtypes() -> None:
    assert quant.kv_bytes_per_element("bf16") == 2
    assert quant.kv_bytes_per_element("fp8") == 1
    assert quant.kv_bytes_per_element("q4_k_m") == 2  # weight-only quant: KV at 16-bit
    assert quant.compute_dtype("awq") == "fp16"
    assert quant.compute_dtype("fp8") == "fp8"


def test_seven_b_fp16_is_about_14_gb() -> None:
    gb = quant.weight_bytes(resolve_model("llama-2-7b"), "fp16") / 1e9
    assert 13.0 < gb < 14.5


def test_llama31_8b_published_file_sizes() -> None:
    """Published GGUF sizes (bartowski/Meta-Llama-3.1-8B-Instruct-GGUF): Q4_K_M 4.92 GB,
    Q8_0 8.54 GB; safetensors bf16 16.06 GB."""
    arch = resolve_model("llama-3.1-8b")
    assert quant.weight_bytes(arch, "q4_k_m") / 1e9 == pytest.approx(4.92, rel=0.03)
    assert quant.weight_bytes(arch, "q8_0") / 1e9 == pytest.approx(8.54, rel=0.03)
    assert quant.weight_bytes(arch, "bf16") / 1e9 == pytest.approx(16.06, rel=0.01)


def test_gguf_keeps_output_at_q6k_and_gptq_keeps_embeddings_16bit() -> None:
    arch = resolve_model("llama-3.1-8b")
    bits = quant.weight_bits_by_component(arch, "q4_k_m")
    assert bits["lm_head"] == arch.params().lm_head * 6.5625
    assert quant.weight_bits_by_component(arch, "gptq")["embedding"] == arch.params().embedding * 16


def test_gpt_oss_native_mxfp4_is_smaller_than_bf16() -> None:
    arch = resolve_model("gpt-oss-20b")
    native = quant.weight_bytes(arch)  # checkpoint ships MXFP4 experts
    assert native == quant.weight_bytes(arch, "mxfp4")
    assert native < quant.weight_bytes(arch, "bf16") / 2.5


def test_file_bytes_win_when_format_matches() -> None:
    arch = resolve_model("llama-3.1-8b").model_copy(update={"weight_bytes": 123456789, "weight_format": "Q4_K_M"})
    assert quant.weight_bytes(arch, "q4_k_m") == 123456789
    assert quant.weight_bytes(arch) == 123456789
    assert quant.weight_bytes(arch, "bf16") != 123456789
