"""The engine assumed when none is given is the one a user of that setup runs (s35): mlx-lm for an HF 16-bit
checkpoint or MLX weights on Apple silicon, llama.cpp for GGUF builds there and on CPU hosts, vLLM for an HF
checkpoint on a single NVIDIA GPU (eager transformers shown beside it); each plan shows the alternatives."""

from __future__ import annotations

import pytest

import mlrig
from mlrig.errors import MlrigError
from mlrig.planner import evaluate


@pytest.mark.parametrize(("model", "gpu", "precision", "engine"), [
    ("llama-3.1-8b", "M2 Max 64GB", "bf16", "mlx"),  # mlx-lm loads the safetensors; llama.cpp needs GGUF
    ("llama-3.1-8b", "M2 Max 64GB", "fp16", "mlx"),
    ("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", "M2 Max 64GB", None, "mlx"),  # was llama.cpp: cannot load it
    ("llama-3.1-8b", "M2 Max 64GB", "mlx-4bit", "mlx"),
    ("llama-3.1-8b", "M2 Max 64GB", "q4_k_m", "llama.cpp"),  # a GGUF quant
    ("llama3.1:8b-instruct-fp16", "M2 Max 64GB", None, "llama.cpp"),  # ollama's F16 GGUF build
    ("llama-3.1-8b", "cpu", "bf16", "llama.cpp"),
    ("llama-3.1-8b", "RTX 4090", "bf16", "vllm"),
])
def test_default_engine_per_setup(model: str, gpu: str, precision: str | None, engine: str) -> None:
    r = mlrig.plan(model, gpu=gpu, precision=precision) if precision else mlrig.plan(model, gpu=gpu)
    assert r.engine == engine
    assert any(n.startswith(f"no engine given: assumed {engine}") for n in r.notes)


def test_the_mac_default_says_why_and_shows_llama_cpp_beside_it() -> None:
    r = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "M2 Max 64GB"}}, alternatives=True)
    assert any("llama.cpp needs it converted to GGUF" in n for n in r.notes)
    assert r.performance is not None and "llama.cpp" in (r.performance.other_engines or {})


def test_a_cpu_host_shows_transformers_beside_llama_cpp() -> None:
    r = evaluate({"model": "llama-3.1-8b", "hardware": {"gpu": "cpu"}}, alternatives=True)
    assert r.engine == "llama.cpp"
    assert r.performance is not None and "transformers" in (r.performance.other_engines or {})


def test_mlx_weights_on_an_nvidia_gpu_are_a_clear_error() -> None:
    with pytest.raises(MlrigError, match=r"Apple silicon only.*--precision q4_k_m"):
        mlrig.plan("llama-3.1-8b", gpu="RTX 4090", precision="mlx-4bit")
