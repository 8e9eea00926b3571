"""llama.cpp's HIP build on AMD GPUs is validated in its own scope, apart from the CUDA build."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.validation.scopes import plan_scope
from mlrig.workload import Plan


def scope(gpu: str, version: str | None = None, engine: str = "llama.cpp") -> tuple[str, str]:
    w: dict[str, object] = {"task": "inference", "engine": engine, "precision": "q4_k_m"}
    if version:
        w["engine_version"] = version
    return plan_scope(Plan.model_validate({"model": "llama-3.1-8b", "workload": w}), resolve_gpu(gpu))


@pytest.mark.parametrize("gpu,expected", [("MI300X", ("llama.cpp-hip", "hbm")),
                                          ("RX 7900 XTX", ("llama.cpp-hip", "gddr")),
                                          ("H100 SXM", ("llama.cpp", "hbm")),
                                          ("RTX 4090", ("llama.cpp", "gddr"))])
def test_hip_build_has_its_own_scope(gpu: str, expected: tuple[str, str]) -> None:
    assert scope(gpu) == expected


def test_vulkan_build_on_amd_and_front_ends_stay_llama_cpp() -> None:
    assert scope("RX 7900 XTX", "b6000+vulkan") == ("llama.cpp", "gddr")
    assert scope("RX 7900 XTX", engine="ollama") == ("llama.cpp-hip", "gddr")
    assert scope("H100 SXM", "b2000") == ("llama.cpp", "hbm")  # an old CUDA build counts with the family
