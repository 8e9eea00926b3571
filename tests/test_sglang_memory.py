"""SGLang's memory (issue 10): each release's default --mem-fraction-static, the activations and CUDA graphs that
must fit beside that reservation, and the total the process holds (mlrig/estimators/memory.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.engines import sglang_mem_fraction_static
from mlrig.estimators.memory import sglang_runtime_bytes
from mlrig.planner import evaluate, resolve_plan
from mlrig.units import GiB


def _plan(model: str = "meta-llama/Llama-3.1-8B", gpu: str = "H100 SXM", **w: Any) -> dict[str, Any]:
    wl: dict[str, Any] = {"precision": "bf16", "engine": "sglang", "engine_version": "0.5.5", "load": "static",
                          "batch_size": 8, "prompt_tokens": 1000, "output_tokens": 200}
    wl.update(w)
    return {"model": {"name": model}, "workload": wl, "hardware": {"gpu": gpu}}


def test_mem_fraction_static_before_0_5_3_follows_each_release() -> None:
    """server_args.py of each release's wheel: by TP size alone before 0.4.6 (0.83 at TP 8 in 0.3.4.post2, 0.81 from
    0.4.0); 0.4.6-0.4.7 give cards over 81,920 MiB (gpu_mem - 13 GiB) / gpu_mem; 0.4.8-0.5.2 reserve a size by
    card: an H100 (81,562 MiB) at TP 1 (9.5 + 1/2) GiB -> round((81,562 - 10,240) / 81,562, 3) = 0.874; an L4
    (23,030 MiB) (2.8 + 1/10) GiB -> round((23,030 - 2,970) / 23,030, 3) = 0.871; an MI300X 32 GiB at any TP."""
    h100, h200, l4, mi300x = (resolve_gpu(g) for g in ("H100 SXM", "H200 SXM", "L4", "MI300X"))
    assert sglang_mem_fraction_static(h100, 8, 1, "0.3.4.post2") == 0.83
    assert sglang_mem_fraction_static(h100, 8, 1, "0.4.2.post4") == 0.81
    assert sglang_mem_fraction_static(h100, 4, 1, "0.4.0") == 0.85
    assert sglang_mem_fraction_static(h100, 2, 1, "0.4.6") == 0.87  # 81,562 MiB: not over 81,920
    assert sglang_mem_fraction_static(h100, 1, 1, "0.4.5") == 0.88
    mib = h200.memory_gib * 1024
    assert sglang_mem_fraction_static(h200, 8, 1, "0.4.6") == pytest.approx((mib - 13 * 1024) / mib)
    assert sglang_mem_fraction_static(h200, 8, 1, "0.4.6") == pytest.approx(0.907, abs=1e-3)
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5.2") == 0.874
    assert sglang_mem_fraction_static(l4, 1, 1, "0.4.8") == 0.871
    assert sglang_mem_fraction_static(mi300x, 8, 1, "0.5.1") == round((mi300x.memory_gib - 32) / mi300x.memory_gib, 3)
    # a series stands for its newest release: "0.4" is 0.4.10's card rule, "0.5" the current heuristic
    assert sglang_mem_fraction_static(h100, 1, 1, "0.4") == 0.874
    # (the current release reserves its 58 prefill CUDA graphs too: round((81,562 - 13,904) / 81,562, 3) = 0.830)
    assert sglang_mem_fraction_static(h100, 1, 1, "0.5") == sglang_mem_fraction_static(h100, 1, 1, None) == 0.83


def test_runtime_bytes_hand_checked() -> None:
    """Llama-3.1-8B on an 80 GB H100, 0.5.x defaults (8,192-token chunks, 256 graph slots): one chunk's forward
    8,192 x 3.85 x (4,096 + 14,336) x 2 B = 1.0828 GiB, logits 1.75 x 256 x 128,256 x 4 B = 0.2141 GiB, graphs
    256 x 2 MiB = 0.5 GiB: 1.797 GiB. A 1,024-token chunk: 0.1354 + 0.2141 + 0.5 = 0.8494 GiB."""
    r, _ = resolve_plan(_plan())
    assert sglang_runtime_bytes(r.arch, r.gpu, r.plan) / GiB == pytest.approx(1.797, abs=2e-3)
    r, _ = resolve_plan(_plan(max_num_batched_tokens=1024))
    assert sglang_runtime_bytes(r.arch, r.gpu, r.plan) / GiB == pytest.approx(0.8494, abs=2e-3)


def test_per_gpu_is_the_reservation_plus_what_runs_beside_it() -> None:
    """The process holds mem_fraction_static x the card (weights + KV pool) and the activations and graphs beside
    it: 0.835 x 79.65 + 1.797 = 68.31 GiB on the H100 (was 66.51: the activations were left out)."""
    res = evaluate(_plan())
    assert res.fits and res.performance is not None
    assert res.memory.activations_gib == pytest.approx(1.797, abs=2e-3)
    assert res.memory.per_gpu_gib == pytest.approx(0.835 * 79.65 + 1.797, abs=0.01)
    assert res.memory.per_gpu_gib <= res.memory.gpu_capacity_gib


def test_activations_that_do_not_fit_beside_the_reservation_are_refused() -> None:
    """--mem-fraction-static 0.98 on an H100 leaves 0.02 x 79.65 = 1.59 GiB, less than the 1.80 GiB the 8,192-token
    chunk and the graphs need: SGLang runs out of memory, so no speed, and the refusal names both fixes. With
    --chunked-prefill-size 1024 (0.85 GiB) it runs."""
    res = evaluate(_plan(gpu_memory_utilization=0.98))
    assert not res.fits and res.performance is None
    refusal = [n for n in res.notes if "run out of memory" in n]
    assert len(refusal) == 1
    # the fix names mlrig's own flags (a typed --mem-fraction-static is no option of `plan`), with SGLang's names beside
    assert "--gpu-memory-utilization (SGLang's mem_fraction_static) to 0.97 or less" in refusal[0]
    assert "--max-num-batched-tokens (SGLang's --chunked-prefill-size)" in refusal[0]
    small = evaluate(_plan(gpu_memory_utilization=0.98, max_num_batched_tokens=1024))
    assert small.fits and small.performance is not None


def test_weights_beyond_the_reservation_name_sglangs_own_knob() -> None:
    """Llama-3.1-70B bf16 (131 GiB) on one H100: the weights alone exceed 0.835 x 79.65 = 66.5 GiB; the refusal
    names mem_fraction_static, not vLLM's --gpu-memory-utilization."""
    res = evaluate(_plan(model="meta-llama/Llama-3.1-70B"))
    assert not res.fits and res.performance is None
    refusal = [n for n in res.notes if "would refuse to start" in n]
    assert len(refusal) == 1 and "mem_fraction_static=0.835" in refusal[0]
    assert "gpu-memory-utilization" not in refusal[0]
