"""An unknown precision's error starts with the closest names (as an unknown GPU or model does), before the list."""

from __future__ import annotations

import pytest

from mlrig.errors import MlrigError
from mlrig.quant import normalise_precision


@pytest.mark.parametrize(("typed", "first"), [("q4", "q4_k_m"), ("Q4KM", "q4_k_m"), ("bfloat", "bf16"),
                                              ("awq4", "awq")])
def test_unknown_precision_suggests_the_closest(typed: str, first: str) -> None:
    with pytest.raises(MlrigError) as e:
        normalise_precision(typed)
    assert f"did you mean {first}" in str(e.value)
    assert "use one of: fp32, bf16" in str(e.value)  # the full list still follows
