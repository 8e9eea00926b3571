"""One list of the names that run llama.cpp (estimators.engines.runs_llama_cpp): the planner's layout, the memory
model and the speed model all treat a front-end as llama.cpp, whatever its spelling."""

from __future__ import annotations

import pytest

import mlrig
from mlrig.estimators.engines import llama_cpp_front_end, runs_llama_cpp


@pytest.mark.parametrize("name", ["llama.cpp", "llama-cpp", "LLAMA_CPP", "llama-server", "ollama", "LM Studio",
                                  "lm-studio", "lm_studio", "lmstudio", "llamafile", "koboldcpp", "KoboldCpp"])
def test_every_spelling_runs_llama_cpp(name: str) -> None:
    assert runs_llama_cpp(name)


@pytest.mark.parametrize("name", ["vllm", "llama-factory", "transformers", "mlx", "exllamav2", "", None])
def test_other_engines_do_not(name: str | None) -> None:
    assert not runs_llama_cpp(name)


def test_front_ends_are_not_llama_cpp_itself() -> None:
    assert llama_cpp_front_end("LM Studio") and llama_cpp_front_end("koboldcpp")
    assert not llama_cpp_front_end("llama.cpp") and not llama_cpp_front_end("llama-server")


@pytest.mark.parametrize("front_end", ["LM Studio", "lmstudio", "llamafile", "koboldcpp"])
def test_a_front_end_is_sized_split_and_priced_as_llama_cpp(front_end: str) -> None:
    # 2 x 3090: llama.cpp splits layers (pipeline); "LM Studio" used to be sized as transformers (2.85 GiB,
    # not 3.10) and split by tensor parallelism (193 tok/s, not 144); koboldcpp was an unknown engine
    fields = {"precision": "q4_k_m", "count": 2}
    ref = mlrig.plan("llama-3.1-8b", gpu="RTX 3090", engine="llama.cpp", **fields)
    got = mlrig.plan("llama-3.1-8b", gpu="RTX 3090", engine=front_end, **fields)
    assert got.memory.per_gpu_gib == ref.memory.per_gpu_gib
    assert got.performance is not None and ref.performance is not None
    assert got.performance.decode_tok_s == ref.performance.decode_tok_s
    assert any("splits layers" in n for n in got.notes)
    assert any("priced as llama.cpp's current build" in n for n in got.notes)


def test_the_web_pages_offer_the_engines_the_planner_names() -> None:
    pytest.importorskip("fastapi")
    from mlrig.estimators.engines import ENGINE_NAMES
    from mlrig.web.pages import ENGINES

    assert [e.strip() for e in ENGINE_NAMES.split(",")] == ENGINES
    assert {"lm-studio", "llamafile", "koboldcpp"} <= set(ENGINES)
