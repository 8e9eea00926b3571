"""MLPerf Inference v5.1 Offline rows (serving_mlperf_v5.jsonl) and the W4A4 NVFP4 GEMMs they exposed.

Rows: one engine instance per plan, value = the system's 'Tokens per second' / its GPU count, output_tokens =
'Tokens per second' / 'Samples per second' of the same mlperf_log_summary.txt (mean generated tokens).
W4A4: NVIDIA's submission quantises the linear layers' inputs as well as their weights to FP4 on accelerators
with FP4 (closed/NVIDIA/documentation/calibration.md), so TensorRT-LLM's NVFP4 GEMMs run at the FP4 rate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import gemm_dtype_on
from mlrig.planner import evaluate
from mlrig.quant import parse_precision

CALIBRATION = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"

# (id, system 'Tokens per second', 'Samples per second', GPUs in the system), read off the logs
SUMMARIES = [
    ("MLPERF51-0010", 101253.0, 370.449, 8),  # Dell XE9680L B200 llama2-70b-99
    ("MLPERF51-0003", 34555.0, 114.852, 8),  # AMD 8xMI325X_2 llama2-70b-99
    ("MLPERF51-0044", 1642.22, 12.8299, 1),  # RedHat L40S llama3.1-8b
]


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CALIBRATION / "serving_mlperf_v5.jsonl").open()]


def test_rows_are_held_out_offline_runs_with_permalinks() -> None:
    rows = _rows()
    assert len(rows) >= 40
    for row in rows:
        assert row["split"] == "holdout"
        assert row["metric"] == "throughput_tok_s_per_gpu"
        assert row["source_url"].startswith(
            "https://github.com/mlcommons/inference_results_v5.1/blob/965182b03376a00fcae415c54e560e1c83937932/closed/")
        assert "v4.1" not in row["source_url"]
        w = row["plan"]["workload"]
        assert (w["load"], w["lengths"]) == ("offline", "varied")
        assert "prompt_tokens" not in w  # the datasets' mean input length is not published
        hw = row["plan"]["hardware"]
        assert hw["count"] == hw["tensor_parallel"]  # one engine instance; value is per GPU


@pytest.mark.parametrize(("row_id", "tokens_s", "samples_s", "gpus"), SUMMARIES)
def test_value_and_output_length_restate_the_summary(row_id: str, tokens_s: float, samples_s: float,
                                                     gpus: int) -> None:
    row = next(r for r in _rows() if r["id"] == row_id)
    assert row["value"] == pytest.approx(tokens_s / gpus, abs=0.06)
    assert row["plan"]["workload"]["output_tokens"] == round(tokens_s / samples_s)


def test_nvfp4_runs_fp4_gemms_only_in_engines_with_w4a4_kernels_on_fp4_gpus() -> None:
    nvfp4 = parse_precision("nvfp4")
    b200, h100 = resolve_gpu("b200-180gb"), resolve_gpu("h100-sxm-80gb")
    assert gemm_dtype_on(b200, nvfp4, "trt-llm") == "fp4"
    assert gemm_dtype_on(h100, nvfp4, "trt-llm") == "fp16"  # no FP4 tensor rate: weight-only
    assert gemm_dtype_on(b200, nvfp4, "vllm") == "fp4"  # ModelOptNvFp4LinearMethod: cutlass_scaled_fp4_mm
    assert gemm_dtype_on(b200, nvfp4, "vllm", "0.8.4") == "fp16"  # before quant.FP4_GEMM_FROM
    assert gemm_dtype_on(h100, nvfp4, "vllm") == "fp16"
    assert gemm_dtype_on(b200, nvfp4, "sglang") == "fp16"
    assert gemm_dtype_on(b200, parse_precision("fp8"), "trt-llm") == "fp8"
    assert b200.tensor_tflops("fp4") == pytest.approx(2 * b200.tensor_tflops("fp8"))


def _prefill(precision: str, gpu: str) -> float:
    plan = {"model": {"name": "meta-llama/Llama-2-70b-hf"},
            "workload": {"task": "inference", "precision": precision, "engine": "trt-llm", "batch_size": 1,
                         "prompt_tokens": 2048, "output_tokens": 16},
            "hardware": {"gpu": gpu, "count": 1}}
    result = evaluate(plan)
    assert result.performance is not None and result.performance.prefill_tok_s is not None
    return float(result.performance.prefill_tok_s)


def test_blackwell_nvfp4_prefill_outruns_fp8() -> None:
    # FP4 tensor rate = 2x FP8 on B200 (attention and fixed costs dilute it); priced as de-quantised 16-bit
    # (the old pricing) it came out below FP8
    assert _prefill("nvfp4", "b200-180gb") > 1.25 * _prefill("fp8", "b200-180gb")
    # without FP4 tensor cores nothing changes: NVFP4 stays below FP8 on an H200
    assert _prefill("nvfp4", "h200-sxm-141gb") < _prefill("fp8", "h200-sxm-141gb")
