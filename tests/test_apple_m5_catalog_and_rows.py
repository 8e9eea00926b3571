"""The Apple M5 Pro / M5 Max catalog entries (Apple's 2026-03-03 press-release figures as reported; the lower
bins' unverified figures are flagged) and lablup/mlxcel's M5 Max mlx-lm baseline rows (MLXCELM5MAX) against
the figures printed in docs/benchmark_results/model_tests_m5max.md @ 30a90ae ('Text decode (tok/s)', mlx-lm)."""

from __future__ import annotations

import pytest
from calibration_lookup import row, rows_by_id

from mlrig.catalog.gpus import load_gpus, resolve_gpu
from mlrig.estimators.performance import apple_gpu_cores, apple_gpu_family


def test_m5_pro_and_max_bins_carry_apples_bandwidths() -> None:
    """614 GB/s (M5 Max 40-core), 307 GB/s (M5 Pro), Apple's figures; the M4 Max's 546 GB/s is not an M5 Max
    figure. The 32-core M5 Max's ~460 GB/s is a secondary figure and says so."""
    expected = {"Apple M5 Max 40-core GPU 128GB": 614.0, "Apple M5 Max 40-core GPU 64GB": 614.0,
                "Apple M5 Max 40-core GPU 48GB": 614.0, "Apple M5 Max 32-core GPU 36GB": 460.0,
                "Apple M5 Pro 20-core GPU 64GB": 307.0, "Apple M5 Pro 16-core GPU 24GB": 307.0,
                "Apple M4 Max 40-core GPU 128GB": 546.0, "Apple M4 Max 32-core GPU 36GB": 410.0,
                "Apple M5 10-core GPU 32GB": 153.0}
    for name, bandwidth in expected.items():
        gpu = resolve_gpu(name)
        assert gpu.memory_bandwidth_gb_s == bandwidth, name
        assert apple_gpu_cores(gpu) == float(name.split("-core")[0].split()[-1]), name
    for name in ("Apple M5 Max 128GB", "Apple M5 Max 40-core GPU 128GB", "Apple M5 Pro 64GB",
                 "Apple M5 Max 36GB 32-core"):
        gpu = resolve_gpu(name)
        assert apple_gpu_family(gpu) == 10, name
    assert resolve_gpu("Apple M5 Max 128GB").id == "apple-m5-max-40c-128gb"
    assert resolve_gpu("Apple M5 Max 128GB").usable_memory_gib == pytest.approx(96.0)
    m5x = [g for g in load_gpus() if g.id.startswith(("apple-m5-pro-", "apple-m5-max-"))]
    assert len(m5x) == 10
    for g in m5x:
        assert "614" in (g.notes or "") or "307" in (g.notes or ""), g.id
        assert g.verification and g.verification.startswith("partial"), g.id
    assert "UNVERIFIED" in (resolve_gpu("Apple M5 Max 32-core GPU 36GB").notes or "")


# (row, the page's mlx-lm figure, model) hand-copied from the source table
PUBLISHED = (("MLXCELM5MAX-0001", 113.87, "CohereForAI/aya-23-8B"),
             ("MLXCELM5MAX-0010", 34.29, "meta-llama/Llama-3.1-8B-Instruct"),
             ("MLXCELM5MAX-0011", 578.64, "meta-llama/Llama-3.2-1B-Instruct"),
             ("MLXCELM5MAX-0013", 66.08, "mistralai/Mixtral-8x7B-v0.1"),
             ("MLXCELM5MAX-0022", 67.44, "Qwen/Qwen2.5-7B-Instruct"),
             ("MLXCELM5MAX-0023", 651.14, "Qwen/Qwen3-0.6B"),
             ("MLXCELM5MAX-0029", 146.87, "Qwen/Qwen3-VL-30B-A3B-Instruct"))


def test_mlxcel_m5max_rows_restate_the_page() -> None:
    rows = [r for i, r in rows_by_id().items() if i.startswith("MLXCELM5MAX-")]
    assert len(rows) == 29
    for r in rows:
        assert r.split == "fit" and r.metric == "decode_tok_s" and not r.anomaly
        assert r.plan["hardware"]["gpu"] == "Apple M5 Max 40-core GPU 128GB"
        assert r.plan["workload"]["engine"] == "mlx" and r.plan["workload"]["engine_version"] == "mlx-lm 0.31.3"
        assert "30a90ae34930c712776d1d941cfe23a6dc63b3df" in r.source_url
        assert f"{r.value:.2f}" in r.source_note
    for row_id, value, model in PUBLISHED:
        r = row(row_id)
        assert r.value == value and r.plan["model"]["name"] == model, row_id
    assert row("MLXCELM5MAX-0010").plan["workload"]["precision"] == "bf16"
    assert row("MLXCELM5MAX-0022").plan["workload"]["precision"] == "mlx-8bit"


def test_mlxcel_m5max_csv_rows_restate_the_csv() -> None:
    """MLXCELM5CSV: the 2026-09-06 CSV's decode_tok_s / prefill_tok_s columns as printed; a held-out source; the
    prefill rows are anomalies (the MLX / macOS releases that decide the Neural-Accelerator path are not stated)."""
    rows = [r for i, r in rows_by_id().items() if i.startswith("MLXCELM5CSV-")]
    assert len(rows) == 60
    for r in rows:
        assert r.split == "holdout" and r.plan["hardware"]["gpu"] == "Apple M5 Max 40-core GPU 128GB"
        assert r.anomaly == (r.metric == "prefill_tok_s")
        assert f"{r.value:.2f}" in r.source_note
    published = {"MLXCELM5CSV-0019": ("decode_tok_s", 33.25, "bf16"),  # llama-3.1-8b-bf16
                 "MLXCELM5CSV-0018": ("prefill_tok_s", 3185.37, "mlx-4bit"),  # llama-3.1-8b-4bit
                 "MLXCELM5CSV-0051": ("decode_tok_s", 143.81, "mlx-4bit"),  # qwen3-30b-a3b-4bit
                 "MLXCELM5CSV-0025": ("decode_tok_s", 65.85, "mlx-4bit")}  # mixtral-8x7b-4bit, 513-token prompt
    for row_id, (metric, value, precision) in published.items():
        r = row(row_id)
        assert (r.metric, r.value, r.plan["workload"]["precision"]) == (metric, value, precision), row_id
    assert row("MLXCELM5CSV-0025").plan["workload"]["prompt_tokens"] == 513
