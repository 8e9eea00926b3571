"""Catalog-wide invariants (benchmarks/invariants.py) on a small sample, and the bugs the full sweep found."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import invariants

from mlrig.planner import evaluate


def test_sampled_sweep_keeps_every_invariant() -> None:
    """A slice of the full sweep (python benchmarks/invariants.py runs it all, ~1 min): two models, three GPUs,
    three precisions, three engines; every invariant the module lists, none violated."""
    violations = list(invariants.sweep(["llama-3.1-8b", "gemma-2-9b"], ["rtx-4090", "h100-sxm-80gb", "l4"],
                                       ["bf16", "awq", "q4_k_m"], [None, "vllm", "sglang"]))
    assert violations == []


def test_sglang_headroom_agrees_with_fits() -> None:
    """SGLang's KV pool is mem_fraction_static x card - weights - non-torch memory, its activations outside the
    reservation; the headroom subtracted the activations as well, so a plan whose pool holds its sequence
    (fits) reported negative headroom (Llama 3.1 70B q4_k_m on an RTX A6000: -0.49 GiB). The headroom is now
    the pool's room beyond one full sequence. (Under SGLang 0.5.9: from 0.5.10 SGLang also reserves 400 MiB for its
    prefill CUDA graphs on this card, engines.SGLANG_PREFILL_GRAPHS, and the pool holds ~3,700 tokens: a refusal,
    with a negative headroom that agrees with it.)"""
    r = evaluate(invariants.plan("llama-3.1-70b", "rtx-a6000", "q4_k_m", "sglang", engine_version="0.5.9"))
    assert r.fits and r.memory is not None
    assert r.memory.headroom_gib >= 0
    assert r.kv_cache_capacity_tokens is not None and r.kv_cache_capacity_tokens >= 4096
    now = evaluate(invariants.plan("llama-3.1-70b", "rtx-a6000", "q4_k_m", "sglang"))
    assert not now.fits and now.memory is not None and now.memory.headroom_gib < 0
