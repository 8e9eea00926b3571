"""MoE prompt passes in llama.cpp's CUDA build (efficiency.py 1-CUDA-MMQ-TILE).

Since PR #13199 the CUDA build runs a micro-batch's expert GEMMs as one MMQ launch whose column tile (mmq_x) is chosen
for the whole launch: 128 with int8 tensor cores (Turing and later), 64 on Pascal with dp4a. A tile is computed whole
however few of its columns an expert fills. Volta and GP100 take the per-expert cuBLAS fallback at a prompt's
micro-batch, and builds before the PR looped over the experts, each with its own tile width."""

from __future__ import annotations

import pytest
from llamacpp_moe_plans import moe_plan, prefill_tok_s, tile_factor

DEEPSEEK_V3 = "deepseek-ai/DeepSeek-V3"
QWEN3_MOE = "Qwen/Qwen3-30B-A3B"
GPT_OSS_20B = "openai/gpt-oss-20b"
MIXTRAL = "mistralai/Mixtral-8x7B-Instruct-v0.1"


@pytest.mark.parametrize(("model", "gpu", "precision", "factor"), [
    # 512 x 8 of 256 experts: 16 rows an expert, one 128-column tile each: 256 x 128 / 4096
    (DEEPSEEK_V3, "h100-sxm-80gb", "q4_k_m", 8.0),
    # 512 x 8 of 128: 32 rows an expert (32 + 128 / 2 < 128): 128 x 128 / 4096
    (QWEN3_MOE, "rtx-4090", "q4_k_m", 4.0),
    # 512 x 4 of 32: 64 rows an expert (64 + 64 = 128): 32 x 128 / 2048
    (GPT_OSS_20B, "rtx-5090", "mxfp4", 2.0),
    # 512 x 2 of 8: 128 rows an expert, Poisson counts spill into a second tile: 8 x (128 + 64) / 1024
    (MIXTRAL, "rtx-3090", "q4_k_m", 1.5),
    # IQ-quants go through MMQ as K-quants do
    (QWEN3_MOE, "rtx-4090", "iq2_xxs", 4.0),
    # Turing (T4) has the int8 MMA MMQ too
    (QWEN3_MOE, "t4", "q4_k_m", 4.0),
    # Pascal GP102 (cc 6.1): dp4a MMQ at every batch, mmq_x up to 64: 32 rows (32 + 32 = 64): 128 x 64 / 4096
    (QWEN3_MOE, "p40", "q4_k_m", 2.0),
])
def test_the_cuda_build_computes_whole_column_tiles_for_each_expert(model: str, gpu: str, precision: str,
                                                                    factor: float) -> None:
    assert tile_factor(model, gpu, precision=precision) == pytest.approx(factor, rel=2e-3)


@pytest.mark.parametrize(("model", "gpu", "precision", "version"), [
    (QWEN3_MOE, "v100-sxm2-32gb", "q4_k_m", None),  # Volta: cuBLAS per expert at 64 tokens and more
    (QWEN3_MOE, "p100-pcie-16gb", "q4_k_m", None),  # GP100 (cc 6.0, no dp4a): never MMQ
    (QWEN3_MOE, "rtx-4090", "q4_k_m", "2025-04"),  # before PR #13199: each expert its own mul_mat and tile
    (QWEN3_MOE, "rtx-4090", "q4_k_m", "b2843"),  # a 2024 build ("llama.cpp-2024")
    (QWEN3_MOE, "rtx-4090", "f16", None),  # 16-bit weights do not go through MMQ
    (QWEN3_MOE, "rtx-4090", "iq1_m", None),  # nor IQ1_M (not in should_use_mmq's list)
    ("meta-llama/Llama-3.1-8B-Instruct", "rtx-4090", "q4_k_m", None),  # dense
])
def test_the_tiles_apply_only_where_the_cuda_build_runs_one_mmq_launch(model: str, gpu: str, precision: str,
                                                                      version: str | None) -> None:
    assert tile_factor(model, gpu, precision=precision, version=version) == 1.0


def test_the_first_label_after_pr_13199_takes_the_tiles() -> None:
    assert tile_factor(QWEN3_MOE, "rtx-4090", version="2025-05") == pytest.approx(4.0, rel=2e-3)


def test_a_short_prompt_takes_a_narrower_tile() -> None:
    """40 tokens: mmq_x = 40 covers the launch in one tile. 320 rows on 128 x (1 - (15/16)^40) = 117.6 experts,
    2.7 rows each, 40 columns each: 117.6 x 40 / 320 = 14.7."""
    touched = 128 * (1 - (1 - 8 / 128) ** 40)
    assert tile_factor(QWEN3_MOE, "rtx-4090", tokens=40) == pytest.approx(touched * 40 / 320, rel=1e-3)


def test_qwen3_moe_prefill_on_a_4090_is_slower_with_the_tiles() -> None:
    """The padded expert arithmetic (4x the routed rows) makes the current build's pp512 slower than a build before
    PR #13199's, where nothing else differs in mlrig for this setup."""
    old = prefill_tok_s(moe_plan(QWEN3_MOE, "rtx-4090", version="2025-04"))
    new = prefill_tok_s(moe_plan(QWEN3_MOE, "rtx-4090", version="2025-06"))
    assert new < 0.9 * old
