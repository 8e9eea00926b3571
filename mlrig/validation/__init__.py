"""Checking estimates against published measurements (the packaged mlrig/data/calibration/).

`runner` puts every calibration row through the planner; `scopes` turns the result into the
per-figure `validation` object a plan carries. Errors are |predicted / measured - 1|.
"""

from __future__ import annotations

import math
import os
from pathlib import Path


def quantile(values: list[float], q: float) -> float:
    """The q-quantile with linear interpolation (numpy's default method); NaN for no values."""
    xs = sorted(values)
    if not xs:
        return math.nan
    k = (len(xs) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


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
