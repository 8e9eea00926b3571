"""ExLlamaV2 under the names users give it (TabbyAPI, the server it runs in; exllamav2 itself)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import estimate_memory
from mlrig.estimators.resolved import resolve
from mlrig.workload import Plan

NOT_MODELLED = "no memory model of its own"  # the note was "not modelled specifically" before session 38b


def _memory(engine: str):  # type: ignore[no-untyped-def]
    p = Plan.model_validate({"model": "meta-llama/Llama-2-13b-hf",
                             "workload": {"task": "inference", "engine": engine, "precision": "exl2-4.65",
                                          "prompt_tokens": 3200, "output_tokens": 800},
                             "hardware": {"gpu": "rtx-3090"}})
    return estimate_memory(resolve(resolve_model("meta-llama/Llama-2-13b-hf"), p, resolve_gpu("rtx-3090")))


@pytest.mark.parametrize("engine", ["tabbyapi", "tabby", "exllamav2_hf"])
def test_exllama_spellings_share_exllamav2_memory_and_say_so(engine: str) -> None:
    # the speed model already takes these as ExLlamaV2 (engines.engine_family); the memory notes said
    # "engine 'tabbyapi' not modelled specifically: treated like HF transformers" beside an exllamav2 speed line
    base, other = _memory("exllamav2"), _memory(engine)
    assert other.breakdown.per_gpu_gib == pytest.approx(base.breakdown.per_gpu_gib)
    assert not any(NOT_MODELLED in n for n in other.breakdown.notes)


def test_an_engine_without_a_memory_path_still_says_so() -> None:
    assert any(NOT_MODELLED in n for n in _memory("mlc").breakdown.notes)
