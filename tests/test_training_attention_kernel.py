"""The flash-attention kernel of a training step (`training.attention_kernel`, `--attention-kernel`) and
prime-rl's long-context runs on HBM GPUs (training_speed.attention_kernel, attention_efficiency,
prime_rl_rest_rel_eff; eff.TRAIN_ATTN_REL_EFF["fa3-hopper"], eff.TRAIN_REST_REL_EFF_PRIME_RL_HBM)."""

from __future__ import annotations

from typing import Any

import pytest
from calibration_lookup import ratio
from typer.testing import CliRunner

from mlrig.catalog.gpus import resolve_gpu
from mlrig.cli import app
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators.training_speed import attention_efficiency, attention_kernel, prime_rl_rest_rel_eff
from mlrig.planner import evaluate

# Qwen3-4B-Instruct-2507: 36 layers, d_model 2560, 32 query heads of 128 (query width 4096). H100 SXM:
# 989.4 TFLOPS dense bf16 (catalog); HBM training GEMMs 0.72 x 2560 / (2560 + 220) = 0.663022.
LAYERS, D_MODEL, Q_WIDTH, SEQ = 36, 2560, 32 * 128, 65536
GEMM_EFF = 0.72 * D_MODEL / (D_MODEL + 220)
PEAK_FLOPS = 989.4e12


def _plan(kernel: str | None, engine: str = "prime-rl", gpu: str = "H100 SXM") -> dict[str, Any]:
    training: dict[str, Any] = {"method": "lora", "seq_len": SEQ, "activation_checkpointing": "full",
                                "zero_stage": 3, "global_batch_tokens": 2 * SEQ, "chunked_loss": True}
    if kernel:
        training["attention_kernel"] = kernel
    return {"model": {"name": "Qwen/Qwen3-4B-Instruct-2507"},
            "workload": {"task": "finetune", "precision": "bf16-mixed", "batch_size": 1, "engine": engine},
            "training": training, "hardware": {"gpu": gpu, "count": 1}}


def _step_s(plan: dict[str, Any]) -> float:
    r = evaluate(plan)
    assert r.performance is not None and r.performance.step_time_s
    return r.performance.step_time_s


def test_the_kernel_defaults_to_the_engines_own() -> None:
    h100, a100 = resolve_gpu("H100 SXM"), resolve_gpu("A100 SXM4 80GB")
    assert attention_kernel(h100, "prime-rl") == "flash_attention_2"  # prime-rl's ModelConfig.attn default
    assert attention_kernel(h100, "nemo") == "cudnn"  # Transformer Engine's fused attention on Hopper
    assert attention_kernel(a100, "nemo") == "flash_attention_2"
    assert attention_kernel(h100, "torchtune", "flash_attention_3") == "flash_attention_3"


def test_fa3_is_priced_on_hopper_only() -> None:
    """FlashAttention-3's kernels are sm90 code: on an A100 or a B200 the plan is priced as FA2 there."""
    h100, a100, b200 = resolve_gpu("H100 SXM"), resolve_gpu("A100 SXM4 80GB"), resolve_gpu("B200")
    assert attention_efficiency(h100, "prime-rl", "flash_attention_3") == eff.TRAIN_ATTN_REL_EFF["fa3-hopper"]
    assert attention_efficiency(h100, "prime-rl", "flash_attention_2") == eff.TRAIN_ATTN_REL_EFF["hopper+"]
    assert attention_efficiency(a100, "prime-rl", "flash_attention_3") == eff.TRAIN_ATTN_REL_EFF["other"]
    assert attention_efficiency(b200, "prime-rl", "flash_attention_3") == eff.TRAIN_ATTN_REL_EFF["hopper+"]
    # naming cudnn for an engine that defaults to FA2 prices cuDNN's rate
    assert attention_efficiency(h100, "torchtune", "cudnn") == eff.TRAIN_ATTN_REL_EFF["cudnn-hopper+"]


def test_fa3_saves_the_hand_checked_attention_time() -> None:
    """Qwen3-4B LoRA at 65,536 tokens, full recompute: attention executes 4 x 4096 x 36 x 65536 / 2 =
    1.9327e10 FLOPs per token forward (causal half), x 4 with backward and recompute, over 131,072 tokens a
    step: 1.0133e16 FLOPs. At FA2's 0.225 and FA3's 0.60 of the GEMM rate (0.663022 x 989.4 TFLOPS) that is
    68.65 s and 25.74 s: FA3 saves 42.91 s; nothing else in the step depends on the kernel."""
    flops = 4.0 * (4 * Q_WIDTH * LAYERS * SEQ / 2) * 2 * SEQ
    assert flops == pytest.approx(1.0133e16, rel=1e-4)
    saved = flops / (GEMM_EFF * PEAK_FLOPS) * (1 / 0.225 - 1 / 0.60)
    assert saved == pytest.approx(42.91, abs=0.01)
    assert _step_s(_plan("flash_attention_2")) - _step_s(_plan("flash_attention_3")) == pytest.approx(saved, rel=1e-6)
    assert _step_s(_plan(None)) == _step_s(_plan("flash_attention_2"))


def test_prime_rl_rest_factor_is_its_own_and_hbm_only() -> None:
    assert prime_rl_rest_rel_eff("prime-rl", "hbm") == eff.TRAIN_REST_REL_EFF_PRIME_RL_HBM
    assert prime_rl_rest_rel_eff("prime-rl", "gddr") == 1.0
    assert prime_rl_rest_rel_eff("torchtune", "hbm") == 1.0
    assert prime_rl_rest_rel_eff(None, "hbm") == 1.0


def test_prime_rl_long_context_lora_rows_and_their_short_pairs() -> None:
    """prime-rl's 64k LoRA runs on H100 / H200 with FA3 (fit rows) came out 0.42-0.43x of measured with FA3
    priced as FA2 and no prime-rl factor; their 16k pairs within 10 %. Both within 30 % now."""
    for long_row, short_row in (("PRIMERL-0035", "PRIMERL-0033"), ("PRIMERL-0071", "PRIMERL-0069"),
                                ("PRIMERL-0099", "PRIMERL-0097")):
        assert 0.7 < ratio(long_row) < 1.3, long_row
        assert 0.75 < ratio(short_row) < 1.3, short_row


def test_the_flag_sets_the_plan_key_and_a_bad_kernel_is_one_line() -> None:
    base = ["plan", "Qwen/Qwen3-4B-Instruct-2507", "--task", "finetune", "--method", "lora", "--gpu",
            "H100 SXM", "--engine", "prime-rl", "--seq-len", "16384"]
    fa2 = CliRunner().invoke(app, [*base, "--attention-kernel", "flash_attention_2"])
    fa3 = CliRunner().invoke(app, [*base, "--attention-kernel", "flash_attention_3"])
    assert fa2.exit_code == 0 and fa3.exit_code == 0
    assert "kernel flash_attention_3" in " ".join(fa3.output.split())
    assert fa2.output != fa3.output
    # an MlrigError: `mlrig.cli.main` prints it as one line and exits 2 (tests/test_bad_input_cli.py)
    bad = CliRunner().invoke(app, [*base, "--attention-kernel", "fa3"])
    assert isinstance(bad.exception, MlrigError)
    assert "flash_attention_3" in str(bad.exception) and "\n" not in str(bad.exception)


def test_interleaved_pipeline_bubble_is_v_fold_smaller() -> None:
    """Narayanan et al. 2021, sec. 2.2.2: 8 stages, 8 micro-batches: plain 1F1B idles 7 / 15 = 46.7 % of the
    step; with 8 model chunks per rank the idle time is 7 / 8 micro-batch times: 0.875 / 8.875 = 9.86 %."""
    from mlrig.estimators.training_speed import pipeline_bubble

    assert pipeline_bubble(8, 8) == pytest.approx(7 / 15)
    assert pipeline_bubble(8, 8, 8) == pytest.approx(0.098592, abs=1e-6)
    assert pipeline_bubble(1, 8, 8) == 0.0


def test_mlperf_interleaved_lora_row_states_its_virtual_stages() -> None:
    """MLPERF-FT50-0005 (512 GB200, TP4 PP8 with 8 virtual stages, 8 micro-batches) came out 0.49x of
    measured with the plain 1F1B bubble (47 % of the step idle); with the interleaved one it is within 30 %."""
    assert 0.7 < ratio("MLPERF-FT50-0005") < 1.3
