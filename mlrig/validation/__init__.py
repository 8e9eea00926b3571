"""Checking estimates against published measurements (the packaged mlrig/data/calibration/).

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
    """Where the calibration files are: $MLRIG_CALIBRATION_DIR when set (a folder of the same files,
    e.g. a newer copy), else the copy packaged with mlrig (mlrig/data/calibration/)."""
    from mlrig.errors import MlrigError

    env = os.environ.get("MLRIG_CALIBRATION_DIR")
    if env:
        path = Path(env).expanduser()
        if not path.is_dir():
            raise MlrigError(f"MLRIG_CALIBRATION_DIR={env!r} is not a folder; unset it to use the packaged "
                             "calibration data, or point it at a folder of calibration files")
        return path
    return Path(__file__).resolve().parent.parent / "data" / "calibration"


def read_calibration_csv(name: str) -> list[dict[str, str]]:
    """The rows of one calibration CSV (`name` inside `calibration_dir()`)."""
    from mlrig.errors import MlrigError

    path = calibration_dir() / name
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise MlrigError(f"cannot read calibration file {str(path)!r} ({exc}); "
                         "unset MLRIG_CALIBRATION_DIR or reinstall mlrig") from None
