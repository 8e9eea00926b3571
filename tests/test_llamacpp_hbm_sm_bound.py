"""llama.cpp's batch-1 CUDA mat-vecs on NVIDIA HBM cards stream at an SM-bound rate (efficiency.py 1'': bytes per
SM per cycle x SMs x clock, beside the DRAM roof), and the held-out ARGONNE llama.cpp rows that show it: the same
F16 model decodes at the same speed on an A100 SXM4 40GB and 80GB, and an H100 SXM and a GH200 differ by ~4 %,
where one fraction of the peak bandwidth made them differ by 29 % and 17 % (now 11 % and 5 %)."""

from __future__ import annotations

import re

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import bandwidth_efficiency, llama_cpp_sm_bound_fraction, sm_cycles_per_s
from mlrig.planner import evaluate
from tests.calibration_lookup import ratio, row, rows_by_id


def test_sm_cycles_follow_from_the_fp32_peak_and_the_architecture() -> None:
    """NVIDIA's whitepapers: A100 108 SMs at 1.41 GHz (64 FP32 lanes each: 19.5 TFLOPS), H100 SXM 132 at 1.98 GHz
    (128 lanes: 67 TFLOPS), A30 56 at 1.44 GHz (10.3 TFLOPS)."""
    assert sm_cycles_per_s(resolve_gpu("a100-sxm-80gb")) == pytest.approx(108 * 1.41e9, rel=0.002)
    assert sm_cycles_per_s(resolve_gpu("h100-sxm-80gb")) == pytest.approx(132 * 1.98e9, rel=0.002)
    assert sm_cycles_per_s(resolve_gpu("A30")) == pytest.approx(56 * 1.44e9, rel=0.005)  # 10.3 of 10.32
    assert sm_cycles_per_s(resolve_gpu("h100-pcie-80gb")) == pytest.approx(114 * 1.755e9, rel=0.005)
    # GA102 (GDDR), AMD and Blackwell: lanes per SM not in the table, no SM roof
    for name in ("rtx-3090", "mi300x", "b200"):
        assert sm_cycles_per_s(resolve_gpu(name)) is None, name


def test_the_fraction_is_the_two_roofs_combined_by_hand() -> None:
    """A100 SXM4 80GB: DRAM roof 0.90 x 2,039 GB/s = 1,835 GB/s, SM roof 8.75 B x 152.3 G SM-cycles/s = 1,333 GB/s;
    p-norm (p = 2) of the per-byte times: 1 / sqrt(1/1835^2 + 1/1333^2) = 1,078 GB/s = 0.529 of the peak."""
    a100 = resolve_gpu("a100-sxm-80gb")
    dram, sm = 0.90 * 2039e9, eff.LLAMA_CPP_MATVEC_BYTES_PER_SM_CYCLE * 19.5e12 / 128
    expected = (1 / ((1 / dram) ** 2 + (1 / sm) ** 2) ** 0.5) / 2039e9
    assert llama_cpp_sm_bound_fraction(a100) == pytest.approx(expected, rel=1e-9)
    assert 0.52 < expected < 0.54
    assert bandwidth_efficiency(a100, "llama.cpp") == pytest.approx(expected, rel=1e-9)
    assert bandwidth_efficiency(a100, "llama.cpp-2024") == pytest.approx(expected, rel=1e-9)


def test_other_engines_and_memory_classes_keep_their_figures() -> None:
    assert bandwidth_efficiency(resolve_gpu("rtx-3090"), "llama.cpp") == eff.BW_EFF["llama.cpp"]["gddr"]
    assert bandwidth_efficiency(resolve_gpu("h100-sxm-80gb"), "vllm") == eff.BW_EFF["vllm"]["hbm"]
    assert bandwidth_efficiency(resolve_gpu("mi300x"), "llama.cpp-hip") == eff.BW_EFF["llama.cpp-hip"]["hbm"]
    assert bandwidth_efficiency(resolve_gpu("b200"), "llama.cpp") == eff.BW_EFF["llama.cpp"]["hbm"]


def _decode_tok_s(gpu: str) -> float:
    r = evaluate({"model": {"name": "meta-llama/Meta-Llama-3-8B"},
                  "workload": {"task": "inference", "precision": "fp16", "engine": "llama.cpp",
                               "engine_version": "2024-09", "batch_size": 1, "load": "static",
                               "prompt_tokens": 0, "output_tokens": 256},
                  "hardware": {"gpu": gpu, "count": 1}})
    assert r.performance is not None
    return float(r.performance.decode_tok_s)


def test_bigger_hbm_on_the_same_sms_does_not_decode_faster() -> None:
    """Measured (llama-bench, Llama-3-8B F16, batch 1): A100 SXM4 40GB 53.1 tok/s (ARGONNE-0289), A100 SXM4 80GB
    52.0-53.5 (XD-0421..0423); H100 SXM 101.6 (ARGONNE-0298), GH200 105.5 (ARGONNE-0322)."""
    assert row("ARGONNE-0289").value == 53.13 and row("ARGONNE-0298").value == 101.57
    assert row("ARGONNE-0322").value == 105.54
    # one fraction of the peak (BW_EFF's 0.60) predicted 1.29 and 1.17; the SM roof 1.11 and 1.05 (the DRAM roof
    # still weighs in the p-norm, so the 80GB stays a little ahead)
    a100_40, a100_80 = _decode_tok_s("NVIDIA A100 SXM4 40GB"), _decode_tok_s("a100-sxm-80gb")
    assert 1.0 < a100_80 / a100_40 < 1.15
    h100, gh200 = _decode_tok_s("NVIDIA H100 SXM"), _decode_tok_s("NVIDIA GH200")
    assert 1.0 < gh200 / h100 < 1.08


def test_argonne_llama_cpp_rows_are_single_gpu_b1_decode_runs() -> None:
    """The CSV's llama.cpp Throughput with `-b 1` is (L + L) / latency of `llama-bench -pg L,L`: 2L one-token
    llama_decode calls from an empty cache. A100 Llama-3-8B, L = 128: 256 / 4.818052 s = 53.13 tok/s."""
    added = [r for r in rows_by_id().values() if r.id.startswith("ARGONNE-") and "s34-llamahbm" in r.source_note]
    assert len(added) == 45
    for r in added:
        w = r.plan["workload"]
        assert r.metric == "decode_tok_s" and r.split == "holdout"
        assert w["engine"] == "llama.cpp" and w["prompt_tokens"] == 0 and w["batch_size"] == 1
        assert r.plan["hardware"]["count"] == 1 and w["output_tokens"] in (256, 1024, 4096)
        latency_s = float(re.search(r"Latency ([0-9.]+) s", r.source_note).group(1))  # type: ignore[union-attr]
        assert r.value == pytest.approx(w["output_tokens"] / latency_s, abs=0.006), r.id
    assert row("ARGONNE-0289").value == pytest.approx(256 / 4.818052, abs=0.006)


def test_llama_cpp_turns_its_cuda_graphs_off_below_ampere() -> None:
    """ggml-cuda.cu disables the graphs for compute capability < 8.0: a V100 launches each kernel (the per-layer
    time of the graph-less builds), an A100 replays; build b10042 (commit 3f08ef2, "Enable CUDA graphs on
    volta+turing (#25749)") and month labels from 2026-07 give Volta/Turing their graphs, and so does the current
    build assumed with no version (b12429); Pascal never gets them."""
    from mlrig.estimators.engines import llama_cpp_graphs_on_gpu

    v100, a100, p100 = resolve_gpu("Tesla V100-PCIE-16GB"), resolve_gpu("a100-sxm-80gb"), resolve_gpu("p100-pcie-16gb")
    t4 = resolve_gpu("t4")
    assert not llama_cpp_graphs_on_gpu(v100, "b4275") and not llama_cpp_graphs_on_gpu(t4, "b10041")
    assert llama_cpp_graphs_on_gpu(v100, "b10042") and llama_cpp_graphs_on_gpu(t4, "b10042+cuda")
    assert llama_cpp_graphs_on_gpu(v100, None) and not llama_cpp_graphs_on_gpu(p100, None)
    assert not llama_cpp_graphs_on_gpu(p100, "b12000") and not llama_cpp_graphs_on_gpu(v100, "2026-06")
    assert llama_cpp_graphs_on_gpu(a100, "b4275") and llama_cpp_graphs_on_gpu(resolve_gpu("rtx-3090"), None)
    assert llama_cpp_graphs_on_gpu(v100, "2026-08") and not llama_cpp_graphs_on_gpu(p100, "2026-08")
    assert llama_cpp_graphs_on_gpu(resolve_gpu("mi50-32gb"), None)  # HIP: not this rule


def test_a_b_number_past_the_volta_change_prices_a_t4_with_graphs() -> None:
    """Through the product path: a T4 decode at b10041 launches each kernel, at b10042 replays the graph (faster),
    the same as a month label after the change and as no version (the current build)."""
    from mlrig.planner import evaluate

    def decode(version: str | None) -> float:
        w = {"engine": "llama.cpp", "precision": "q4_k_m", **({"engine_version": version} if version else {})}
        perf = evaluate({"model": "llama-3.1-8b", "workload": w, "hardware": {"gpu": "t4"}}).performance
        assert perf is not None and perf.decode_tok_s is not None
        return perf.decode_tok_s

    before, after = decode("b10041"), decode("b10042")
    assert after > before * 1.03
    assert decode("2026-08") == after and decode(None) == after and decode("2026-06") == before


def test_ci_v100_rows_carry_the_logged_eval_speed() -> None:
    """ggml-org/ci, build 4275 on the V100 runner: pythia-2.8b Q4_0 'eval time = 1614.44 ms / 255 runs' = 157.95
    tok/s; F16 2605.59 ms = 97.87. Held out with the source's memory rows (LCPPMEMCI)."""
    q4, f16 = row("LCPPMEMCI-0013"), row("LCPPMEMCI-0008")
    assert q4.value == pytest.approx(255 / 1.61444, abs=0.01) and f16.value == pytest.approx(255 / 2.60559, abs=0.01)
    assert {r.split for r in rows_by_id().values() if r.id.startswith("LCPPMEMCI-")} == {"holdout"}
    # the graph-less per-layer time is what brings the Q4_0 row near its measure (with graphs it came out 1.7x)
    assert ratio("LCPPMEMCI-0013") < 1.2
