"""The planner's refusal reads vLLM's reservation as the memory model does: of the CUDA driver's total on NVIDIA
cards (0.46 GiB below the board's), of the listed memory elsewhere."""

from __future__ import annotations

import copy

import pytest

from mlrig.estimators.engines import CUDA_DRIVER_RESERVED_GIB
from mlrig.estimators.memory import driver_total_gib
from mlrig.planner import evaluate


def test_driver_total_is_less_the_reserve_on_nvidia_only() -> None:
    assert driver_total_gib(79.65, "NVIDIA") == pytest.approx(79.65 - CUDA_DRIVER_RESERVED_GIB)
    assert driver_total_gib(191.14, "AMD") == 191.14


def test_an_mi300x_pool_of_a_few_hundred_tokens_is_refused_for_its_kv_not_its_weights() -> None:
    # a reservation 0.2 GiB above weights + activations: the memory model leaves a ~0.2 GiB KV pool; the refusal
    # must say so, not that the weights exceed the reservation (which an NVIDIA driver reserve on AMD made it say)
    base = {"model": "llama-3.1-70b", "workload": {"task": "inference", "engine": "vllm", "context_tokens": 4096},
            "hardware": {"gpu": "MI300X"}}
    m = evaluate(base).memory
    assert m is not None
    fixed = m.weights_gib + m.activations_gib + m.overhead_gib
    plan = copy.deepcopy(base)
    plan["workload"]["gpu_memory_utilization"] = round((fixed + 0.2) / m.gpu_capacity_gib, 4)
    r = evaluate(plan)
    assert r.memory is not None and 0 < r.memory.kv_cache_gib < 0.46
    refusal = next(n for n in r.notes if "would refuse to start" in n)
    assert "KV pool holds" in refusal and "exceed its memory reservation" not in refusal
