"""SGLang's card-sized memory default (GPUStack's lab, issue 10)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.engines import sglang_gpu_defaults, sglang_mem_fraction_static
from mlrig.planner import evaluate


def _plan(**w: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {"precision": "bf16", "engine": "sglang", "engine_version": "0.5.5.post1",
                          "prompt_tokens": 217, "output_tokens": 202}
    wl.update(w)
    return {"model": {"name": "Qwen/Qwen3-32B"}, "workload": wl, "hardware": {"gpu": "H100 SXM"}}


# ---- SGLang's --mem-fraction-static from 0.5.3 --------------------------------------------------------
def test_sglang_mem_fraction_by_card_hand_checked() -> None:
    """server_args.py `_handle_gpu_memory_settings`: an 80 GB H100 (79.65 GiB, 81,562 MiB as nvidia-smi gives)
    at TP 1 takes 8,192-token chunks and a CUDA-graph cap of 256, so it reserves 512 + 1.5 x 8,192 + 2 x 256 +
    1/8 x 1,024 = 13,440 MiB: (81,562 - 13,440) / 81,562 = 0.835 (an SGLang issue reports 0.828 for Qwen3-32B
    on an H100 with a later release's extra reservations). At TP 8: 512 + 12,288 + 1,024 + 1,024 = 14,848."""
    h100 = resolve_gpu("H100 SXM")
    assert sglang_gpu_defaults(h100, 1) == (8192, 256) and sglang_gpu_defaults(h100, 8) == (8192, 512)
    mib = h100.memory_gib * 1024
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.5.post1") == pytest.approx((mib - 13440) / mib, abs=1e-3)
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.5.post1") == pytest.approx(0.835, abs=1e-3)
    assert sglang_mem_fraction_static(h100, 8, 1, "0.5.3") == pytest.approx((mib - 14848) / mib, abs=1e-3)
    # the current release takes the heuristic; releases before 0.5.3 keep the fixed 0.88
    assert sglang_mem_fraction_static(h100, 1, 1, None) == sglang_mem_fraction_static(h100, 1, 1, "0.5.6")
    assert sglang_mem_fraction_static(h100, 8, 1, "0.4.3.post2") == 0.88
    # a 24 GB card: 2,048-token chunks, 24 graph slots, no 10 GiB floor
    l4 = resolve_gpu("L4")
    lmib = l4.memory_gib * 1024
    assert sglang_gpu_defaults(l4, 1) == (2048, 24)
    assert sglang_mem_fraction_static(l4, 1, 1, "0.5.5") == pytest.approx((lmib - 3760) / lmib, abs=1e-3)


def test_sglang_kv_pool_follows_the_release() -> None:
    """Qwen3-32B bf16 (61 GiB of weights) on one H100: 0.835 of the card leaves ~5 GiB of KV pool where 0.88
    left ~8.6 GiB; GPUStack's SGLang 0.5.5 run peaked at ~1,330 output tok/s at a ~55 ms TPOT, ~70 running
    (GPUSTACK-0076, held out, checked only), where the 0.88 pool held ~110 sequences of its mean length."""
    new = evaluate(_plan(load="static", batch_size=1))
    old = evaluate(_plan(load="static", batch_size=1, engine_version="0.4.6"))
    assert new.memory.kv_cache_gib is not None and old.memory.kv_cache_gib is not None
    cap = resolve_gpu("H100 SXM").capacity_gib
    assert old.memory.kv_cache_gib - new.memory.kv_cache_gib == pytest.approx((0.88 - 0.835) * cap, rel=0.01)
    assert any("mem_fraction_static=0.835" in n for n in new.memory.notes)
