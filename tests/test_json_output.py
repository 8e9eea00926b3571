"""`--json` output is always valid JSON (RFC 8259 has no NaN/Infinity) and the plan model's bounds hold."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import BaseModel, ValidationError

from mlrig.commands._common import print_json
from mlrig.workload import MAX_TOTAL_GPUS, HardwareSpec, TrainingSpec, WorkloadSpec


class _M(BaseModel):
    x: float
    xs: list[float]


def test_non_finite_floats_become_null(capsys: pytest.CaptureFixture[str]) -> None:
    print_json({"a": math.inf, "b": [1.5, -math.inf, math.nan], "m": _M(x=math.nan, xs=[2.0, math.inf])})
    out = capsys.readouterr().out
    # strict parse: json.loads would otherwise accept the non-standard NaN/Infinity tokens
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-standard JSON token {c}"))
    assert data == {"a": None, "b": [1.5, None, None], "m": {"x": None, "xs": [2.0, None]}}


@pytest.mark.parametrize(("model", "field", "value"), [
    (WorkloadSpec, "gpu_memory_utilization", 1e-300),
    (TrainingSpec, "tokens_to_train", 0.5),
    (TrainingSpec, "data_bytes_per_token", 1e-9),
    (HardwareSpec, "host_ram_gib", 1e-300),
    (HardwareSpec, "storage_gb_s", 1e-9),
    (HardwareSpec, "mtbf_hours", 1e-9),
])
def test_vanishing_values_rejected(model: type[BaseModel], field: str, value: float) -> None:
    """Positive but absurdly small values made divisions blow up to inf further down: refused by name."""
    with pytest.raises(ValidationError, match=field):
        model(**{field: value})


def test_cluster_size_capped() -> None:
    HardwareSpec(count=1000, nodes=1000)  # 1,000,000: the limit itself is accepted
    with pytest.raises(ValidationError, match=f"{MAX_TOTAL_GPUS:,}"):
        HardwareSpec(count=1001, nodes=1000)
