"""llama.cpp's KV cache for sliding-window models: which architectures get a window-sized cache, and how big."""

from __future__ import annotations

import itertools

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import estimate_memory
from mlrig.estimators.resolved import resolve
from mlrig.units import GiB
from mlrig.workload import Plan


def kv_gib(model: str, context: int, batch: int = 1) -> float:
    p = Plan.model_validate({"model": model, "workload": {"task": "inference", "engine": "llama.cpp",
                                                          "context_tokens": context, "batch_size": batch}})
    return estimate_memory(resolve(resolve_model(model), p, resolve_gpu("h100-sxm-80gb"))).breakdown.kv_cache_gib


def test_mistral_v01_holds_every_layer_for_the_whole_context() -> None:
    # the plain `llama` architecture sets no window: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 B = 128 KiB/token
    assert kv_gib("mistralai/Mistral-7B-v0.1", 16384) == pytest.approx(16384 * 131072 / GiB, rel=1e-4)


def test_gemma3_window_cache_is_window_plus_ubatch_padded() -> None:
    # 62 layers, 52 windowed (1,024 tokens), 16 KV heads x 128 x 2 x 2 B = 8 KiB per layer per token:
    # 10 x 16,384 + 52 x pad256(1,024 + 512) = 10 x 16,384 + 52 x 1,536 cells
    expected = (10 * 16384 + 52 * 1536) * 8192 / GiB
    assert kv_gib("google/gemma-3-27b-it", 16384) == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("model", ["mistralai/Mistral-7B-v0.1", "google/gemma-3-27b-it", "gpt-oss-20b",
                                   "microsoft/Phi-3-mini-4k-instruct"])
def test_kv_never_shrinks_as_the_context_grows(model: str) -> None:
    sizes = [kv_gib(model, c, b) for b in (1, 3) for c in (1000, 4000, 4100, 7169, 8192, 14338)]
    for b in range(2):
        row = sizes[b * 6:(b + 1) * 6]
        assert all(x <= y + 1e-9 for x, y in itertools.pairwise(row)), row
