"""Calibration rows by id for tests that check named published rows: the files are read and validated once
per test session (`load_rows` reads all ~5,500 rows), not once per lookup."""

from __future__ import annotations

import functools

from mlrig.validation.runner import CalibrationRow, check, load_rows


@functools.cache
def rows_by_id() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows()}


def row(row_id: str) -> CalibrationRow:
    return rows_by_id()[row_id]


def ratio(row_id: str) -> float:
    """predicted / measured for one row, through the product path (`validation.runner.check`)."""
    c = check(row(row_id))
    assert c.predicted is not None, c.error
    return c.predicted / c.measured
