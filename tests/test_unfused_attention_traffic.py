"""Unfused attention's DRAM traffic over the b x a x s x s score tensor in training step time
(`training_speed.unfused_score_passes` / `unfused_score_traffic`), byte counts checked by hand against the code
they were read from (Megatron-LM 5281919 / 50a4b5f / d98e8a6, transformers' `eager_attention_forward`)."""

from __future__ import annotations

import pytest

from mlrig.estimators import score_traffic as ts
from mlrig.planner import evaluate


def test_passes_by_code_path() -> None:
    """transformers eager: scale 4 + mask add 4 + fp32 softmax 6 + cast back 6 = 20 B forward, cast 6 +
    softmax 10 + scale 4 = 20 B backward, no dropout. Megatron's fused kernel: 1 (the causal triangle read) + 2
    written, + dropout 5 = 8; backward 2 + 2 + dropout 5 = 9. Where the kernel does not apply (keys beyond
    2048 in 2021, beyond 4096 now; b x heads not a multiple of 4) the torch path: fp32 with the 2021
    layer scaling (36 + 5 / 40 + 5), 16-bit now (8 + 5 / 10 + 5); before the kernel (2020-09) 16-bit."""
    assert ts.unfused_score_passes("transformers", None, 2048, 32) == (20.0, 20.0)
    assert ts.unfused_score_passes("megatron", None, 2048, 32) == (8.0, 9.0)
    assert ts.unfused_score_passes("megatron", "2021-04", 2048, 32) == (8.0, 9.0)
    assert ts.unfused_score_passes("megatron", "2021-04", 4096, 32) == (41.0, 45.0)
    assert ts.unfused_score_passes("megatron", "2021-04", 2048, 10) == (41.0, 45.0)  # 80 heads / TP 8, b = 1
    assert ts.unfused_score_passes("megatron", None, 4096, 32) == (8.0, 9.0)
    assert ts.unfused_score_passes("megatron", None, 8192, 32) == (13.0, 15.0)
    assert ts.unfused_score_passes("megatron", "2020-09", 1024, 32) == (13.0, 15.0)


def _one_layer_plan(engine: str, checkpointing: str, flash: bool = False) -> dict:
    return {"model": {"name": "one-layer-test", "hidden_size": 4096, "num_layers": 1, "num_heads": 32,
                      "intermediate_size": 16384, "mlp": "plain", "vocab_size": 32000},
            "workload": {"task": "pretrain", "precision": "fp16", "batch_size": 1, "engine": engine,
                         "flash_attention": flash},
            "training": {"method": "full", "seq_len": 2048, "activation_checkpointing": checkpointing},
            "hardware": {"gpu": "A100 SXM4 80GB", "count": 1}}


def _seconds_per_token(plan: dict) -> float:
    perf = evaluate(plan).performance
    assert perf is not None and perf.train_tokens_per_s
    return 1.0 / perf.train_tokens_per_s


@pytest.mark.parametrize(("engine", "checkpointing", "bytes_per_token"), [
    # one layer, b = 1, s = 2048, 32 heads, fp16: 32 x 2048 = 65,536 score elements per token
    ("transformers", "none", 65536 * (20 + 20)),        # 2,621,440 B: 5.37 GB a sequence
    ("megatron", "full", 65536 * (2 * 8 + 9)),          # the forward's passes again in the recompute
])
def test_one_layer_hand_checked_bytes(monkeypatch: pytest.MonkeyPatch, engine: str, checkpointing: str,
                                      bytes_per_token: int) -> None:
    """On the product path, the element-wise passes add exactly their bytes at the training bandwidth (A100
    SXM4 80GB, 2,039 GB/s x TRAIN_BW_EFF): the step with them minus the step with them zeroed."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.estimators import efficiency as eff

    plan = _one_layer_plan(engine, checkpointing)
    with_passes = _seconds_per_token(plan)
    monkeypatch.setattr(ts, "unfused_score_passes", lambda *a: (0.0, 0.0))
    without = _seconds_per_token(plan)
    bw = resolve_gpu("A100 SXM4 80GB").memory_bandwidth_gb_s * 1e9 * eff.TRAIN_BW_EFF
    assert with_passes - without == pytest.approx(bytes_per_token / bw, rel=1e-9)


def test_score_gemms_are_priced_no_faster_than_their_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The score GEMMs move 4 B forward and 8 B backward per element; made to move far more, they set the
    attention's time (the slower of arithmetic and bytes), and flash attention moves none of them."""
    plan = _one_layer_plan("transformers", "none")
    base = _seconds_per_token(plan)
    monkeypatch.setattr(ts, "SCORE_GEMM_BYTES_FWD", 4000.0)
    monkeypatch.setattr(ts, "SCORE_GEMM_BYTES_BWD", 8000.0)
    slowed = _seconds_per_token(plan)
    assert slowed > base * 2
    flash = _one_layer_plan("transformers", "none", flash=True)
    monkeypatch.undo()
    flash_s = _seconds_per_token(flash)
    monkeypatch.setattr(ts, "SCORE_GEMM_BYTES_FWD", 4000.0)
    assert _seconds_per_token(flash) == flash_s


def test_prefill_shares_the_eager_forward_count() -> None:
    """Inference prefill with transformers' eager attention moves the forward's score bytes, 4 (QK^T write,
    PV read) + 20 (scale, mask, fp32 softmax, cast back) = 24 B per element of the s x s square per head and
    layer; other engines keep the 8 B (fp32 written and read) the prefill has always counted."""
    from mlrig.catalog.models import resolve_model
    from mlrig.estimators.performance import prefill_cost

    assert ts.prefill_score_bytes("transformers") == 24.0
    assert ts.prefill_score_bytes("llama.cpp") == 8.0
    llama = resolve_model("meta-llama/Meta-Llama-3.1-8B")
    eager = prefill_cost(llama, 16e9, 2.0, 1, 2048, flash_attention=False, score_bytes=24.0)
    assert eager.spill_bytes == pytest.approx(24.0 * 32 * 2048**2 * 32)  # 103 GB for one 2,048-token prompt
    assert prefill_cost(llama, 16e9, 2.0, 1, 2048, flash_attention=True).spill_bytes == 0.0
