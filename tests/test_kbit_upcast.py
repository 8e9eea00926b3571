"""QLoRA on the Hugging Face stack (memory.kbit_upcast): PEFT's prepare_model_for_kbit_training leaves the norms
in fp32, so the hidden states between layers are fp32 and recomputation keeps them at 4 B; TRL casts the
embedding and head back to bf16, axolotl casts everything back."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators.memory import KbitUpcast, kbit_upcast
from mlrig.planner import evaluate
from mlrig.units import GiB

MISTRAL_7B_LAYERS, MISTRAL_7B_HIDDEN, MISTRAL_7B_VOCAB = 32, 4096, 32000


def _fms_plan(engine: str, batch: int, gpus: int = 1, zero_stage: int = 0) -> dict[str, Any]:
    """The fms-acceleration A100 runs (FMSACC rows): Mistral-7B QLoRA, r=16 on q/k/v/o, 4,096 packed tokens,
    TRL 0.13.0."""
    return {"model": {"name": "mistralai/Mistral-7B-v0.1"},
            "workload": {"task": "finetune", "precision": "nf4", "batch_size": batch, "engine": engine,
                         "engine_version": "0.13.0" if engine == "trl" else "2025-02", "flash_attention": True},
            "training": {"method": "qlora", "lora_rank": 16, "lora_targets": ["q_proj", "k_proj", "v_proj", "o_proj"],
                         "seq_len": 4096, "optimizer": "adamw", "activation_checkpointing": "full",
                         "zero_stage": zero_stage},
            "hardware": {"gpu": "A100 80GB", "count": gpus}}


def _allocated_gib(engine: str, batch: int, **kw: Any) -> float:
    m = evaluate(_fms_plan(engine, batch, **kw)).memory
    assert m is not None
    return float(m.allocated_gib)


def test_which_framework_keeps_what_in_fp32() -> None:
    assert kbit_upcast("hf-peft", sharded=False) == KbitUpcast(ends_fp32=True, stream_fp32=True)
    assert kbit_upcast(None, sharded=False) == KbitUpcast(ends_fp32=True, stream_fp32=True)
    assert kbit_upcast("trl", sharded=False, version="0.13.0") == KbitUpcast(ends_fp32=False, stream_fp32=True)
    assert kbit_upcast("trl", sharded=False, version="0.25.1") == KbitUpcast(ends_fp32=False, stream_fp32=True)
    assert kbit_upcast("trl", sharded=False, version="2025-06") == KbitUpcast(ends_fp32=False, stream_fp32=True)
    # TRL 0.26 (December 2025) stopped upcasting; no version: the current release
    assert kbit_upcast("trl", sharded=False, version="0.26.0") == KbitUpcast(ends_fp32=False, stream_fp32=False)
    assert kbit_upcast("trl", sharded=False, version="2026-01") == KbitUpcast(ends_fp32=False, stream_fp32=False)
    assert kbit_upcast("trl", sharded=False) == KbitUpcast(ends_fp32=False, stream_fp32=False)
    assert kbit_upcast("axolotl", sharded=False) == KbitUpcast(ends_fp32=False, stream_fp32=False)
    assert kbit_upcast("torchtune", sharded=False) == KbitUpcast(ends_fp32=False, stream_fp32=False)
    # FSDP / ZeRO-3 QLoRA: TRL and axolotl skip the preparation
    assert kbit_upcast("trl", sharded=True, version="0.13.0") == KbitUpcast(ends_fp32=False, stream_fp32=False)
    assert kbit_upcast("axolotl", sharded=True) == KbitUpcast(ends_fp32=False, stream_fp32=False)


def test_fp32_stream_costs_two_bytes_per_kept_layer_input() -> None:
    """With full recomputation the only activations kept across the forward are the layers' inputs: fp32
    instead of bf16 adds 2 B x hidden x tokens x layers, 1.0 GiB per 4,096-token sample on Mistral-7B. TRL and
    the no-upcast plugin store the embedding and head alike (bf16), so that is the whole difference."""
    per_sample = 2 * MISTRAL_7B_HIDDEN * 4096 * MISTRAL_7B_LAYERS / GiB
    for batch in (4, 8):
        diff = _allocated_gib("trl", batch) - _allocated_gib("fms-acceleration", batch)
        assert diff == pytest.approx(batch * per_sample, abs=1e-3)


def test_published_pair_difference() -> None:
    """fms-acceleration refs/a100_80gb.csv at 24bdadb (FMSACC-0001..0004): the same Mistral-7B runs peak at
    19.25 / 34.46 GiB through TRL's SFTTrainer (PEFT's upcast) and 15.25 / 26.46 GiB through the plugin without it,
    at batch 4 / 8. mlrig gave both the same activations before."""
    assert _allocated_gib("trl", 4) - _allocated_gib("fms-acceleration", 4) == pytest.approx(19.25 - 15.25, rel=0.02)
    assert _allocated_gib("trl", 8) - _allocated_gib("fms-acceleration", 8) == pytest.approx(34.46 - 26.46, rel=0.02)
    assert _allocated_gib("trl", 8) == pytest.approx(34.46, rel=0.10)


def test_plain_peft_also_stores_the_ends_in_fp32() -> None:
    """Without TRL's cast back, the embedding and the untied head stay fp32: 2 B more per parameter."""
    ends = 2 * 2 * MISTRAL_7B_VOCAB * MISTRAL_7B_HIDDEN / GiB
    assert _allocated_gib("hf-peft", 4) - _allocated_gib("trl", 4) == pytest.approx(ends, abs=1e-3)
    r = evaluate(_fms_plan("hf-peft", 4))
    assert any("hidden states between layers are fp32" in n for n in r.memory.notes)


def test_sharded_trl_qlora_has_no_fp32_stream() -> None:
    """Under FSDP over two GPUs TRL does not prepare the model: its activations are those of the no-upcast path."""
    trl = _allocated_gib("trl", 2, gpus=2, zero_stage=3)
    plugin = _allocated_gib("fms-acceleration", 2, gpus=2, zero_stage=3)
    assert trl == pytest.approx(plugin, abs=1e-3)
