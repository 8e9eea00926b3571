"""Checking estimates against published measurements (../shared/data/calibration/).

Each group reports the median and 90th percentile of |predicted / measured - 1| over its rows.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np
from pydantic import BaseModel, Field


class ValidationRow(BaseModel):
    id: str
    group: str
    predicted: float
    measured: float
    note: str = ""

    @property
    def rel_error(self) -> float:
        return abs(self.predicted / self.measured - 1.0)


class ValidationGroup(BaseModel):
    name: str
    n: int
    median_error: float  # fraction: 0.05 = 5 %
    p90_error: float
    threshold_median: float | None = None
    rows: list[ValidationRow] = Field(default_factory=list)

    @property
    def passes(self) -> bool:
        return self.threshold_median is None or self.median_error <= self.threshold_median


def summarise(name: str, rows: list[ValidationRow], threshold_median: float | None = None) -> ValidationGroup:
    """Median and p90 of the rows' relative errors (NaN for an empty group)."""
    errs = np.array([r.rel_error for r in rows]) if rows else np.array([np.nan])
    return ValidationGroup(name=name, n=len(rows), median_error=float(np.median(errs)),
                           p90_error=float(np.percentile(errs, 90)), threshold_median=threshold_median,
                           rows=rows)


def calibration_dir() -> Path:
    """Where the calibration CSVs are: $MLRIG_CALIBRATION_DIR, else ../shared/data/calibration
    beside the checkout (the project's layout)."""
    env = os.environ.get("MLRIG_CALIBRATION_DIR")
    if env:
        return Path(env)
    starts = [Path(__file__).resolve(), Path.cwd().resolve() / "x"]
    for parent in (p for start in starts for p in start.parents):
        cand = parent / "shared" / "data" / "calibration"
        if cand.is_dir():
            return cand
    from mlrig.errors import MlrigError

    raise MlrigError("calibration data not found; set MLRIG_CALIBRATION_DIR to ../shared/data/calibration")


def read_calibration_csv(name: str) -> list[dict[str, str]]:
    """The rows of one calibration CSV (`name` inside `calibration_dir()`)."""
    with (calibration_dir() / name).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
