"""llama.cpp inference memory, hand-checked against published load logs (LCPPMEM* rows in
mlrig/data/calibration/inference_memory_llamacpp_logs.jsonl): llama.cpp prints its buffers in MiB
(bytes / 1024^2), so these checks are exact to the printed 0.01 MiB."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import (
    estimate_memory,
    llama_cpp_compute_buffer_bytes,
    llama_cpp_kv_cells,
)
from mlrig.estimators.resolved import resolve
from mlrig.validation.runner import CalibrationRow, check
from mlrig.workload import Plan

MiB = 2**20


def _plan(model: str, **workload: Any) -> Plan:
    workload = {"task": "inference", "engine": "llama.cpp", **workload}
    return Plan.model_validate({"model": model, "workload": workload, "hardware": {}})


def _mib(model: str, gpu: str, **workload: Any) -> dict[str, float]:
    est = estimate_memory(resolve(resolve_model(model), _plan(model, **workload), resolve_gpu(gpu)))
    b = est.breakdown
    return {"weights": b.weights_gib * 1024, "kv": b.kv_cache_gib * 1024, "compute": b.activations_gib * 1024}


def test_kv_cells_are_padded_as_llama_cpp_pads_them() -> None:
    # src/llama-kv-cache.cpp llama_kv_cache_get_padding: 256 with flash attention, 32 without
    assert llama_cpp_kv_cells(4000, True) == 4096
    assert llama_cpp_kv_cells(4000, False) == 4000
    assert llama_cpp_kv_cells(4001, False) == 4032
    assert llama_cpp_kv_cells(4096, True) == 4096


def test_compute_buffer_matches_printed_sizes_without_flash_attention() -> None:
    llama2 = resolve_model("llama-2-7b")
    # A770, b3617, -c 4096: "compute buffer size = 296.00 MiB" (scores 256 + mask 8 + 4 x n_embd 32)
    assert llama_cpp_compute_buffer_bytes(llama2, 4096, False, llama2.num_heads) / MiB == pytest.approx(296.00)
    # b3038, -c 512: the logits dominate, 512 x (32000 + 4096) x 4 = 70.50 MiB
    assert llama_cpp_compute_buffer_bytes(llama2, 512, False, llama2.num_heads) / MiB == pytest.approx(70.50)
    qwen2 = resolve_model("qwen2-7b")
    # Qwen2-7B Q8_0, -c 32768 (its training context): 1,884.00 MiB
    assert llama_cpp_compute_buffer_bytes(qwen2, 32768, False, qwen2.num_heads) / MiB == pytest.approx(1884.00)


def test_flash_attention_drops_the_scores_from_the_compute_buffer() -> None:
    qwen2 = resolve_model("qwen2-7b")
    fa = llama_cpp_compute_buffer_bytes(qwen2, 32768, True, qwen2.num_heads)
    assert fa < llama_cpp_compute_buffer_bytes(qwen2, 32768, False, qwen2.num_heads) / 4
    # Qwen3-14B, b5505, -fa, -c 32768: the logits are the peak, 512 x (151936 + 5120) x 4 = 306.75 MiB printed
    qwen3 = resolve_model("qwen3-14b")
    assert llama_cpp_compute_buffer_bytes(qwen3, 32768, True, qwen3.num_heads) / MiB == pytest.approx(306.75)


def test_plan_buffers_match_the_a770_load_log() -> None:
    # secext2022/pmks-2 article 56: llama-2-7b.Q4_K_M, Vulkan, -c 4096 (token_embd 70.31 MiB stays on the CPU)
    got = _mib("llama-2-7b", "arc-a770-16gb", precision="q4_k_m", context_tokens=4096, prompt_tokens=10,
               output_tokens=100, flash_attention=False)
    assert got["weights"] == pytest.approx(3820.93, abs=0.1)  # breakdowns are rounded to 1e-4 GiB
    assert got["kv"] == pytest.approx(2048.0, abs=0.1)
    assert got["compute"] == pytest.approx(296.0, abs=0.1)


def test_untied_embedding_stays_in_host_ram_tied_one_does_not_leave_the_gpu() -> None:
    untied = _mib("llama-2-7b", "rtx-4090", precision="q4_k_m", context_tokens=4096)
    p = _plan("llama-2-7b", precision="q4_k_m", context_tokens=4096)
    whole = resolve(resolve_model("llama-2-7b"), p, resolve_gpu("rtx-4090")).weight_bytes / MiB
    assert whole - untied["weights"] == pytest.approx(70.31, abs=0.1)  # the CPU buffer the log prints
    tied = resolve_model("qwen3-0.6b")
    assert tied.tie_word_embeddings
    pt = _plan("qwen3-0.6b", precision="q8_0", context_tokens=4096)
    r = resolve(tied, pt, resolve_gpu("rtx-4090"))
    assert estimate_memory(r).breakdown.weights_gib * 1024 == pytest.approx(r.weight_bytes / MiB, abs=0.1)


def test_flash_attention_pads_the_kv_cache_to_256_cells() -> None:
    off = _mib("llama-3.1-8b", "rtx-4090", precision="q4_k_m", context_tokens=4000, flash_attention=False)
    on = _mib("llama-3.1-8b", "rtx-4090", precision="q4_k_m", context_tokens=4000, flash_attention=True)
    assert off["kv"] == pytest.approx(500.0, abs=0.1)  # 4000 cells x 128 KiB
    assert on["kv"] == pytest.approx(512.0, abs=0.1)  # 4096 cells


def test_engine_buffers_measure_leaves_out_the_cuda_context() -> None:
    row = CalibrationRow.model_validate({
        "id": "T-0001", "metric": "per_gpu_gib", "value": 6.0204, "memory_measure": "engine_buffers",
        "source_url": "https://example.invalid",
        "plan": {"model": {"name": "meta-llama/Llama-2-7b-hf"},
                 "workload": {"task": "inference", "precision": "q4_k_m", "engine": "llama.cpp",
                              "context_tokens": 4096, "prompt_tokens": 10, "output_tokens": 100,
                              "flash_attention": False},
                 "hardware": {"gpu": "Intel Arc A770 16GB"}}})
    checked = check(row)
    assert checked.predicted == pytest.approx((3820.93 + 2048 + 296) / 1024, abs=1e-3)


def test_ollama_default_context_by_release_and_vram() -> None:
    from mlrig.estimators.memory import ollama_default_num_ctx

    assert ollama_default_num_ctx("0.5.7", 24.0, 131072) == 2048
    assert ollama_default_num_ctx("0.6.7", 24.0, 131072) == 4096
    assert ollama_default_num_ctx("0.12.0", 80.0, 131072) == 4096
    assert ollama_default_num_ctx(None, 23.99, 131072) == 32768  # the RTX 4090 tier (>= 23 GiB)
    assert ollama_default_num_ctx(None, 22.0, 131072) == 4096
    assert ollama_default_num_ctx("0.19.0", 80.0, 131072) == 131072  # 256k capped at the model's context


def test_ollama_without_a_context_allocates_its_default_num_ctx() -> None:
    # llama-3.1-8b: 128 KiB of f16 KV per token; 32,768 tokens on a 24 GB card = 4 GiB
    got = _mib("llama-3.1-8b", "rtx-4090", precision="q4_k_m", engine="ollama")
    assert got["kv"] == pytest.approx(4096.0, abs=0.1)
    given = _mib("llama-3.1-8b", "rtx-4090", precision="q4_k_m", engine="ollama", context_tokens=8192)
    assert given["kv"] == pytest.approx(1024.0, abs=0.1)
    old = _mib("llama-3.1-8b", "rtx-4090", precision="q4_k_m", engine="ollama", engine_version="0.5.7")
    assert old["kv"] == pytest.approx(256.0, abs=0.1)
