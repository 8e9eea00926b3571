"""MLPerf Training rows added in s37 (pretrain_mlperf.jsonl, finetune_mlperf_llama2_70b_lora.jsonl): GPT-3 175B on H100
from rounds v3.0 / v3.1, partner re-runs from v4.0 (Llama-2-70B LoRA) and v5.1 (Llama-3.1-8B / 405B), and the
MLPERF-PT51-0010 precision correction. Values restate the MLLOG readings (median logged step time or block rate)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlrig.planner import evaluate

CALIBRATION = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"
NEW_PREFIXES = ("MLPERF-PT30-", "MLPERF-PT31-")
NEW_IDS = {f"MLPERF-PT51-{i:04d}" for i in range(15, 27)} | {f"MLPERF-FT40-{i:04d}" for i in range(7, 16)}


def _rows() -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for name in ("pretrain_mlperf.jsonl", "finetune_mlperf_llama2_70b_lora.jsonl"):
        for line in (CALIBRATION / name).open():
            row = json.loads(line)
            assert row["id"] not in rows, row["id"]
            rows[row["id"]] = row
    return rows


def _new_rows() -> list[dict[str, Any]]:
    return [r for i, r in _rows().items() if i.startswith(NEW_PREFIXES) or i in NEW_IDS]


def test_s37_rows_are_fit_permalinked_and_layouts_add_up() -> None:
    """34 rows; each global batch is DP x micro-batch x an integer accumulation (DP = GPUs / (TP x PP x CP))."""
    rows = _new_rows()
    assert len(rows) == 34
    for row in rows:
        assert row["split"] == "fit" and row["metric"] == "train_tokens_per_s_per_gpu"
        assert row["source_url"].startswith("https://github.com/mlcommons/training_results_v")
        assert "/tree/" in row["source_url"]  # pinned to a commit
        hw, tr, w = row["plan"]["hardware"], row["plan"]["training"], row["plan"]["workload"]
        gpus = hw["count"] * hw["nodes"]
        dp = gpus // (hw["tensor_parallel"] * hw["pipeline_parallel"] * tr["context_parallel"])
        sequences = tr["global_batch_tokens"] // tr["seq_len"]
        assert sequences % (dp * w["batch_size"]) == 0, row["id"]


@pytest.mark.parametrize(("row_id", "sequences", "seq_len", "step_s", "gpus"), [
    # v3.1 NVIDIA eos_n64: global batch 2048, train_step_timing median 11.0539 s, 512 H100
    ("MLPERF-PT31-0007", 2048, 2048, 11.0539, 512),
    # v3.0 NVIDIA+CoreWeave n448: 2688 sequences, 2.6004 s, 3,584 H100
    ("MLPERF-PT30-0004", 2688, 2048, 2.6004, 3584),
    # v5.1 Dell 2x XE9680L (16 B200): 32 sequences of 8,192, train_step_time median 0.5818 s
    ("MLPERF-PT51-0015", 32, 8192, 0.5818, 16),
    # v5.1 Nebius 64 x 8 H200, Llama-3.1-405B: 1,152 sequences, 50.0137 s
    ("MLPERF-PT51-0025", 1152, 8192, 50.0137, 512),
])
def test_value_restates_the_logged_step_time(row_id: str, sequences: int, seq_len: int, step_s: float,
                                             gpus: int) -> None:
    """Hand-checked: PT31-0007 = 2048 x 2048 / 11.0539 / 512 = 741.1 tokens/s per GPU."""
    row = _rows()[row_id]
    assert row["value"] == pytest.approx(sequences * seq_len / step_s / gpus, rel=2e-3)
    assert row["plan"]["training"]["global_batch_tokens"] == sequences * seq_len
    assert row["plan"]["hardware"]["count"] * row["plan"]["hardware"]["nodes"] == gpus
    if row_id == "MLPERF-PT31-0007":
        assert row["value"] == pytest.approx(741.1, abs=0.1)


def test_precision_is_what_each_run_logged() -> None:
    """The runs whose own NeMo config dump prints fp4='e2m1' are NVFP4, those printing fp8='hybrid' FP8; Oracle's
    single-node B200 8B run (MLPERF-PT51-0010) logs fp4='e2m1' and was corrected from fp8."""
    rows = _rows()
    for row_id in ("MLPERF-PT51-0010", "MLPERF-PT51-0018", "MLPERF-PT51-0019", "MLPERF-PT51-0020",
                   "MLPERF-PT51-0021", "MLPERF-PT51-0023"):
        assert rows[row_id]["plan"]["workload"]["precision"] == "nvfp4", row_id
        assert "fp4='e2m1'" in rows[row_id]["source_note"]
    for row_id in ("MLPERF-PT51-0015", "MLPERF-PT51-0016", "MLPERF-PT51-0017", "MLPERF-PT51-0022",
                   "MLPERF-PT51-0024"):
        assert rows[row_id]["plan"]["workload"]["precision"] == "fp8", row_id
        assert "fp8='hybrid'" in rows[row_id]["source_note"]


def test_nvfp4_and_fp8_single_node_b200_rows_rank_as_measured() -> None:
    """Same plan but the precision: the NVFP4 run (MLPERF-PT51-0018, 35,935 tokens/s per GPU) is faster than the FP8
    one (MLPERF-PT51-0012, 30,112), and mlrig predicts the same order."""
    rows = _rows()
    fp4, fp8 = rows["MLPERF-PT51-0018"], rows["MLPERF-PT51-0012"]
    assert fp4["value"] > fp8["value"]
    p4 = evaluate(fp4["plan"]).performance
    p8 = evaluate(fp8["plan"]).performance
    assert p4 is not None and p8 is not None
    assert p4.train_tokens_per_s is not None and p8.train_tokens_per_s is not None
    assert p4.train_tokens_per_s > p8.train_tokens_per_s
