"""Generalisation spot checks (mlrig/data/spot_checks.csv): published speed figures for engines the
speed model is not fitted on. Data only from the repository; no network (catalog ids only).

Bounds, chosen after seeing the results (see the module docstring of mlrig.validation.spot_checks):
- the median |pred/meas - 1| over all rows (known misses included) stays <= 30 %;
- every row is within a factor of 2 of its measurement, except the rows in KNOWN_MISSES, which are
  strict xfails: they must keep failing until the model is changed for them, so a fix shows up.
"""

from __future__ import annotations

import math

import pytest

from mlrig.catalog.gpus import gpu_ids
from mlrig.catalog.models import load_model_catalog
from mlrig.estimators.efficiency import ENGINES
from mlrig.validation.spot_checks import METRICS, SpotCheckReport, read_spot_checks, resolve_row, run

COLUMNS = ["id", "source_url", "source_date", "engine", "model", "precision", "gpu", "num_gpus", "tensor_parallel",
           "batch_size", "prompt_tokens", "output_tokens", "metric", "value", "unit", "note"]
ROWS = read_spot_checks()
MAX_FACTOR = 2.0
OVERALL_MEDIAN = 0.30

# Rows mlrig misses by more than MAX_FACTOR, and why (a finding for the lead, not a tuned factor).
KNOWN_MISSES = {
    # Plain eager PyTorch on an A100 is CPU-launch bound (~39 ms/token for 7B against ~7 ms of weight
    # streaming). The transformers family adds 150 us/layer + 2 ms/step to the GPU time, which fits a
    # slow GPU (SC-13, A10G) but cannot reach a CPU floor that hides behind fast GPUs: predicted 2.1x
    # too fast.
    "SC-14": "eager PyTorch CPU-launch floor not modelled (transformers LAYER_OVERHEAD_S additive, ~8x too small)",
}


@pytest.fixture(scope="module")
def report() -> SpotCheckReport:
    return run()


def test_csv_shape_and_provenance() -> None:
    assert 8 <= len(ROWS) <= 20
    assert list(ROWS[0]) == COLUMNS
    ids = [r["id"] for r in ROWS]
    assert len(set(ids)) == len(ids)
    for r in ROWS:
        assert r["source_url"].startswith("https://"), r["id"]
        assert r["source_date"].strip() and r["note"].strip(), r["id"]
        assert r["metric"] in METRICS, r["id"]
        assert float(r["value"]) > 0, r["id"]
    assert set(KNOWN_MISSES) <= set(ids)


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_row_is_predictable(row: dict[str, str]) -> None:
    """Maps to a catalog model and GPU (no hub look-up) and to one of mlrig's engine families."""
    assert row["model"] in {m.id for m in load_model_catalog()}
    assert row["gpu"] in gpu_ids()
    _, _, plan, family = resolve_row(row)
    assert family in ENGINES
    assert family != "trt-llm-2023"  # a calibrated family
    if family.startswith("llama.cpp"):  # calibrated on CUDA, Metal and Vulkan builds: only other backends here
        assert "SYCL" in row["engine"], row["id"]
    assert plan.hardware.tensor_parallel <= plan.hardware.count


def test_engines_covered(report: SpotCheckReport) -> None:
    engines = {c.engine for c in report.checks}
    assert {"vllm", "sglang", "mlc", "exllamav2", "transformers"} <= engines


def test_overall_median_error(report: SpotCheckReport) -> None:
    overall = report.group("all")
    assert overall.n == len(ROWS)
    assert overall.median_error <= OVERALL_MEDIAN


@pytest.mark.parametrize(
    "row_id",
    [
        pytest.param(r["id"], marks=pytest.mark.xfail(reason=KNOWN_MISSES[r["id"]], strict=True))
        if r["id"] in KNOWN_MISSES
        else r["id"]
        for r in ROWS
    ],
)
def test_row_within_factor(report: SpotCheckReport, row_id: str) -> None:
    c = next(c for c in report.checks if c.id == row_id)
    assert math.isfinite(c.predicted) and c.predicted > 0
    assert 1 / MAX_FACTOR <= c.ratio <= MAX_FACTOR, f"{c.id}: predicted {c.predicted:.2f} vs measured {c.measured:.2f}"
