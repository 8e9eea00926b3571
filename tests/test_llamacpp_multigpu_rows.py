"""Published multi-GPU llama.cpp runs (calibration/llamacpp_multigpu.jsonl: RX7900X6, MI50X2, ORCAQ3) and the
per-GPU-boundary hand-off of a layer split they calibrate (performance.llama_cpp_split_boundary_s)."""

from __future__ import annotations

import statistics

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import decode_step, llama_cpp_split_boundary_s
from mlrig.estimators.resolved import resolve
from mlrig.validation.runner import check, load_rows
from mlrig.workload import Plan
from tests.calibration_lookup import row, rows_by_id

TAGS = ("RX7900X6-", "MI50X2-", "ORCAQ3-")


def new_rows() -> list:  # type: ignore[type-arg]
    return [r for r in rows_by_id().values() if r.id.startswith(TAGS)]


def test_every_new_row_is_a_multi_gpu_llama_cpp_plan_the_planner_evaluates() -> None:
    rows = new_rows()
    assert len(rows) == 46
    for r in rows:
        assert r.plan["workload"]["engine"] == "llama.cpp" and r.plan["hardware"]["count"] >= 2, r.id
        c = check(r)
        assert c.predicted is not None and c.predicted > 0, (r.id, c.error)


def test_whole_sources_are_held_out() -> None:
    split = {tag: {r.split for r in new_rows() if r.id.startswith(tag)} for tag in TAGS}
    assert split == {"RX7900X6-": {"fit"}, "MI50X2-": {"fit"}, "ORCAQ3-": {"holdout"}}


def test_rows_carry_the_published_figures() -> None:
    # BENCHMARK.md 'Comprehensive Performance Matrix': GPT-OSS 120B (MXFP4), 4 GPUs: 1,447.98 / 75.36 t/s
    assert row("RX7900X6-0009").value == 1447.98 and row("RX7900X6-0010").value == 75.36
    assert row("RX7900X6-0010").plan["hardware"] == {"gpu": "rx-7900-xtx", "count": 4}
    # ML-gfx906 llama.cpp/readme.md: rocm 6.4.1, gemma3 27B F16 tg128 10.41 t/s on the two gfx906 devices
    assert row("MI50X2-0020").value == 10.41 and row("MI50X2-0020").plan["hardware"]["count"] == 2
    # ORCA 4x L40S, the two ts=0 tg128 runs 102.81 and 102.70 t/s: their mean, on all 4 GPUs
    assert row("ORCAQ3-0010").value == pytest.approx((102.81 + 102.70) / 2, abs=0.006)
    assert row("ORCAQ3-0010").plan["hardware"] == {"gpu": "L40S", "count": 4}
    assert row("ORCAQ3-0010").plan["workload"]["cuda_graphs"] is False  # built with GGML_CUDA_GRAPHS=OFF


def test_amd_boundary_factor_is_the_median_of_the_fit_rows_published_differences() -> None:
    """(t_N - t_1) / (N - 1) from BENCHMARK.md's tg128 figures, each against the table's own single-GPU row:
    Gemma-3-1B 237.65 -> 196.18 (2 GPUs) / 141.94 (6); gpt-oss-20b 140.36 -> 114.90 / 97.44."""
    per_boundary = [(1 / 196.18 - 1 / 237.65) / 1, (1 / 141.94 - 1 / 237.65) / 5,
                    (1 / 114.90 - 1 / 140.36) / 1, (1 / 97.44 - 1 / 140.36) / 5]
    assert statistics.median(per_boundary) == pytest.approx(eff.LLAMA_CPP_SPLIT_BOUNDARY_S_AMD, abs=0.01e-3)


def _decode_s(gpu_id: str, count: int) -> float:
    gpu = resolve_gpu(gpu_id)
    p = Plan.model_validate({"model": {"name": "llama-3-8b"},
                             "workload": {"precision": "q4_k_m", "engine": "llama.cpp", "batch_size": 1,
                                          "prompt_tokens": 0, "output_tokens": 128},
                             "hardware": {"gpu": gpu_id, "count": count}})
    return float(decode_step(resolve(resolve_model("llama-3-8b"), p, gpu), 1, 64).seconds)


def test_layer_split_hand_off_is_priced_per_vendor() -> None:
    """One more GPU boundary costs a decode step the vendor's hand-off (plus ~10 us of wire time for the 8 KB
    hidden state): 0.76 ms on an AMD card, 0.25 ms on an NVIDIA one."""
    assert llama_cpp_split_boundary_s(resolve_gpu("rx-7900-xtx")) == eff.LLAMA_CPP_SPLIT_BOUNDARY_S_AMD
    assert llama_cpp_split_boundary_s(resolve_gpu("rtx-3090")) == eff.LLAMA_CPP_SPLIT_BOUNDARY_S
    amd = _decode_s("rx-7900-xtx", 3) - _decode_s("rx-7900-xtx", 2)
    nvidia = _decode_s("rtx-3090", 3) - _decode_s("rtx-3090", 2)
    assert 0.76e-3 < amd < 0.80e-3
    assert 0.25e-3 < nvidia < 0.29e-3


def test_gpus_added_for_the_rows_resolve_with_their_datasheet_figures() -> None:
    a30, mi50 = resolve_gpu("A30"), resolve_gpu("MI50 32GB")
    assert (a30.id, a30.memory_bandwidth_gb_s, a30.fp16_tflops_dense) == ("a30", 933, 165)
    assert (mi50.id, mi50.memory_bandwidth_gb_s, mi50.fp16_tflops_dense) == ("mi50-32gb", 1024, 26.5)
    assert mi50.vendor == "AMD"


def test_the_rows_ids_are_unique_across_the_calibration() -> None:
    ids = [r.id for r in load_rows()]
    assert len(ids) == len(set(ids))
