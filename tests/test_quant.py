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


# ---- formats people download (issue 14 §2) ------------------------------------------------------

def test_iquant_bits_come_from_the_ggml_block_structs() -> None:
    """Each i-quant's bits per weight equal the gguf package's GGML_QUANT_SIZES (block bytes x 8 / block)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    for prec, base in [("iq1_s", "IQ1_S"), ("iq1_m", "IQ1_M"), ("iq2_xxs", "IQ2_XXS"), ("iq2_xs", "IQ2_XS"),
                       ("iq3_xxs", "IQ3_XXS"), ("iq3_s", "IQ3_S"), ("iq4_xs", "IQ4_XS"), ("iq4_nl", "IQ4_NL")]:
        block, nbytes = GGML_QUANT_SIZES[GGMLQuantizationType[base]]
        assert quant.bits_per_weight(prec) == 8 * nbytes / block, prec
    # llama.cpp file types store their bulk in a neighbouring block type (llama-quant.cpp)
    assert quant.bits_per_weight("iq2_s") == quant.GGML_BPW["IQ2_XS"]
    assert quant.bits_per_weight("iq2_m") == quant.GGML_BPW["IQ2_S"]
    assert quant.bits_per_weight("iq3_m") == quant.GGML_BPW["IQ3_S"]


def test_iquant_files_grow_with_their_rate_and_keep_a_q5k_head() -> None:
    arch = resolve_model("llama-3.1-8b")
    ladder = ["iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_m", "iq3_xxs", "iq3_m", "iq4_xs", "iq4_nl", "q4_k_m"]
    sizes = [quant.weight_bytes(arch, p) for p in ladder]
    assert sizes == sorted(sizes)
    assert quant.weight_bits_by_component(arch, "iq2_xxs")["lm_head"] == arch.params().lm_head * 5.5  # Q5_K
    assert quant.weight_bits_by_component(arch, "iq3_m")["lm_head"] == arch.params().lm_head * 6.5625  # Q6_K
    # bartowski's _L files: the _M mix with embedding and output at Q8_0
    assert quant.weight_bytes(arch, "q4_k_l") > quant.weight_bytes(arch, "q4_k_m")
    assert quant.weight_bits_by_component(arch, "q4_k_l")["linear"] == \
        quant.weight_bits_by_component(arch, "q4_k_m")["linear"]


def test_gptq_int8_nvfp4_mxfp8_mlc_rates() -> None:
    assert quant.bits_per_weight("GPTQ-Int8") == 8 + 16 / 128 + 8 / 128
    assert quant.bits_per_weight("nvfp4") == 4.5  # FP8 scale per 16 FP4 values
    assert quant.bits_per_weight("mxfp8") == 8.25  # E8M0 scale per 32 FP8 values
    assert quant.bits_per_weight("q4f16_1") == 4.5  # int4 + fp16 scale per 32
    assert quant.bits_per_weight("q3f16_1") == pytest.approx(3.6)
    arch = resolve_model("llama-3.1-8b")
    # MLC quantises the embedding and the head too; q4f16_2 does not
    assert quant.weight_bytes(arch, "q4f16_1") < quant.weight_bytes(arch, "q4f16_2")
    assert quant.compute_dtype("mxfp8") == "fp8"
    assert quant.kv_bytes_per_element("nvfp4") == 2  # weight format only: KV stays 16-bit


@pytest.mark.parametrize("spelling", ["exl2-4.65", "EXL2_4.65", "exl2:4.65", "exl2-4.65bpw", "4.65bpw-exl2", "4.65bpw"])
def test_exl2_at_any_stated_rate(spelling: str) -> None:
    assert quant.normalise_precision(spelling) == "exl2-4.65"
    assert quant.bits_per_weight(spelling) == 4.65
    arch = resolve_model("llama-3.1-8b")
    bits = quant.weight_bits_by_component(arch, spelling)
    assert bits["embedding"] == arch.params().embedding * 16 and bits["lm_head"] == arch.params().lm_head * 6


def test_exl2_unlisted_rate_and_errors() -> None:
    assert quant.normalise_precision("exl2-3.7") == "exl2-3.7"  # not in the table: added on first use
    assert "exl2-3.7" in quant.SCHEMES
    with pytest.raises(MlrigError, match=r"exl2-4\.65"):
        quant.normalise_precision("exl2")
    with pytest.raises(MlrigError, match="outside"):
        quant.normalise_precision("exl2-40")


@pytest.mark.parametrize(("spelling", "bpw"), [
    ("mlx-4bit", 4.5), ("mlx-5bit", 5.5), ("mlx-2bit", 2.5), ("mlx-4bit-g64", 4.5),
    ("mlx-4bit-g32", 5.0), ("mlx-5bit-g32", 6.0), ("mlx-8bit-g32", 9.0), ("mlx-4bit-g128", 4.25),
])
def test_mlx_group_sizes(spelling: str, bpw: float) -> None:
    # mlx.core.quantize affine: a 16-bit scale and a 16-bit bias per group -> bits + 32 / group
    assert quant.bits_per_weight(spelling) == bpw


def test_mlx_group_32_model_bytes_grow_by_half_a_bit() -> None:
    arch = resolve_model("llama-3.1-8b")
    g64, g32 = quant.weight_bytes(arch, "mlx-4bit"), quant.weight_bytes(arch, "mlx-4bit-g32")
    # every weight (embedding and head included, as mlx-lm quantises them) gains 0.5 bit
    assert g32 - g64 == pytest.approx(arch.total_params * 0.5 / 8, rel=0.01)


def test_mlx_bad_bits_or_group_is_one_line() -> None:
    with pytest.raises(MlrigError, match="group 32, 64 or 128"):
        quant.normalise_precision("mlx-4bit-g16")
    with pytest.raises(MlrigError, match="bits must be one of"):
        quant.normalise_precision("mlx-7bit-g32")


def test_amp_mixed_precisions_keep_fp32_weights_and_compute_16_bit() -> None:
    for name, compute in (("bf16-mixed", "bf16"), ("fp16-mixed", "fp16"), ("16-mixed", "fp16")):
        assert quant.bits_per_weight(name) == 32
        assert quant.compute_dtype(name) == compute
        assert quant.master_in_weights(name)
    assert not quant.master_in_weights("bf16")
    with pytest.raises(MlrigError):  # Lightning's bf16-true is bf16 + adamw-bf16, not a precision alias
        quant.normalise_precision("bf16-true")
    arch = resolve_model("llama-2-7b")
    assert quant.weight_bytes(arch, "bf16-mixed") == 2 * quant.weight_bytes(arch, "bf16")


def test_gguf_tied_embedding_is_stored_at_the_output_type() -> None:
    """llama.cpp quantises a tied token_embd with the output tensor's type (Q6_K in the K-quant mixes,
    llama_tensor_get_type): Llama-3.2-1B's 128256 x 2048 table at 6.5625 bpw, not Q4_K's 4.5; an untied
    model (Llama-3.1-8B) keeps token_embd at the base type and its output at Q6_K."""
    small = resolve_model("meta-llama/Llama-3.2-1B-Instruct")
    _, parts = quant.weight_bytes_by_component(small, "q4_k_m")
    assert parts["embedding"] == pytest.approx(128256 * 2048 * 6.5625 / 8)
    assert parts["lm_head"] == 0
    big = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    _, parts = quant.weight_bytes_by_component(big, "q4_k_m")
    assert parts["embedding"] == pytest.approx(128256 * 4096 * 4.5 / 8)
    assert parts["lm_head"] == pytest.approx(128256 * 4096 * 6.5625 / 8)
    # safetensors formats are untouched: the tied table stays 16-bit
    _, parts = quant.weight_bytes_by_component(small, "bf16")
    assert parts["embedding"] == pytest.approx(128256 * 2048 * 2)


def test_gptq_kernel_names_keep_gptq_bytes() -> None:
    """gptq-marlin / gptq-exllamav2 name the kernel a GPTQ checkpoint runs with (HF transformers prices
    their batched decode apart, efficiency.GPTQ_KERNEL_ROWS); the checkpoint's bytes are GPTQ's."""
    from mlrig.catalog.models import resolve_model
    from mlrig.quant import normalise_precision, weight_bytes

    assert normalise_precision("gptq_marlin") == normalise_precision("Marlin") == "gptq-marlin"
    assert normalise_precision("gptq_exllamav2") == "gptq-exllamav2"
    arch = resolve_model("llama-2-13b")
    assert weight_bytes(arch, "gptq-marlin") == weight_bytes(arch, "gptq-exllamav2") == weight_bytes(arch, "gptq")


def test_int4_group_sizes_of_gpt_fast_and_torchao() -> None:
    """gpt-fast's '4-bit (G=32)' and torchao's int4wo-64 store 4 bits + a bf16 scale and zero per group and
    quantise the output head too: torchao's README prints Llama-3-8B int4wo-64 at 'Model Size 4.22 GB'
    (generate.py's size without the embedding): (all linears + head) x 4.5 bits."""
    import pytest

    from mlrig.catalog.models import resolve_model
    from mlrig.errors import MlrigError
    from mlrig.quant import SCHEMES, normalise_precision, weight_bytes_by_component

    assert normalise_precision("int4-g32") == normalise_precision("INT4_G32") == "int4-g32"
    assert SCHEMES["int4-g32"].linear_bpw == SCHEMES["int4-g32"].head_bpw == 5.0
    assert normalise_precision("int4-g64") == "int4-g64" and SCHEMES["int4-g64"].linear_bpw == 4.5
    with pytest.raises(MlrigError, match="group size 48"):
        normalise_precision("int4-g48")
    _, parts = weight_bytes_by_component(resolve_model("meta-llama/Meta-Llama-3-8B"), "int4-g64")
    assert (parts["linear"] + parts["lm_head"]) / 1e9 == pytest.approx(4.22, abs=0.02)


def test_more_bits_fraction_counts_llama_cpps_use_more_bits_layers() -> None:
    """quant._more_bits_fraction counts without a loop what llama.cpp's `use_more_bits(i, n)` picks layer
    by layer (src/llama-quant.cpp: i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2)."""
    from mlrig.quant import _more_bits_fraction

    for n in range(1, 400):
        picked = [i for i in range(n) if i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2]
        assert _more_bits_fraction(n) == len(picked) / n, n
    assert _more_bits_fraction(32) == 16 / 32  # Llama-3-8B: layers 0-3, 28-31 and 6, 9, ..., 27 between
