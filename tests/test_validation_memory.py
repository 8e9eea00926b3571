"""Memory estimates against the packaged calibration data (median |pred/meas - 1| per group)."""

from __future__ import annotations

import pytest

from mlrig.validation.memory import THRESHOLDS, run


@pytest.fixture(scope="module")
def groups(request: pytest.FixtureRequest) -> dict[str, object]:
    return {g.name: g for g in run()}


@pytest.mark.parametrize("name", sorted(THRESHOLDS))
def test_group_meets_threshold(groups: dict[str, object], name: str) -> None:
    g = groups[name]
    assert g.n >= 5, f"{name}: only {g.n} rows"  # type: ignore[attr-defined]
    assert g.median_error <= THRESHOLDS[name], (name, g.median_error)  # type: ignore[attr-defined]
