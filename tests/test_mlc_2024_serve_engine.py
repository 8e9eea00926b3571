"""MLC-LLM serve's behaviour in its 2024 nightlies (engines.py has the commits): prompts as prefill steps of their
own before hybrid prefill (0.1.dev1405), and the GPU sampler's whole-vocabulary argsort for top-p from its GPU
sampler (0.1.dev988) to the pivot renormalization (0.1.dev1192)."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.estimators import efficiency as eff
from mlrig.estimators.engines import mlc_separate_prefill, mlc_sorts_for_top_p
from mlrig.estimators.performance import decode_step, mlc_top_p_sort_s
from mlrig.estimators.serving import prefill_budget, separate_prefill_passes
from mlrig.planner import parse_plan, resolve_plan


def _resolved(version: str | None, engine: str = "mlc") -> Any:
    workload: dict[str, Any] = {"engine": engine, "precision": "int4", "max_num_batched_tokens": 8192}
    if version is not None:
        workload["engine_version"] = version
    return resolve_plan(parse_plan({"model": "meta-llama/Meta-Llama-3-8B-Instruct",
                                    "hardware": {"gpu": "NVIDIA GeForce RTX 3090"}, "workload": workload}))[0]


def test_version_boundaries() -> None:
    """0.1.devN counts commits after v0.1.dev0 (0.1.dev1166 is 93c560b4, 2024-04-26); months stand for the month."""
    assert [mlc_sorts_for_top_p(v) for v in ("0.1.dev900", "0.1.dev988", "0.1.dev1166", "0.1.dev1192", "2024-03",
                                             "2024-05", "2023-08", "0.17.1", None)] == \
        [False, True, True, False, True, False, False, False, False]
    assert [mlc_separate_prefill(v) for v in ("0.1.dev1166", "0.1.dev1404", "0.1.dev1405", "2024-06", "2024-07",
                                              "0.18.1", None)] == [True, True, False, True, False, False, False]


def test_old_serve_prefills_in_steps_of_their_own() -> None:
    """Before hybrid prefill an engine step is one action, the waiting prompts' prefill first: whole prompts in
    passes of their own (as vLLM V0), the prefill chunk capping a pass; later releases fuse them (the chunk is the
    budget of the step the decodes ride in)."""
    old, new = _resolved("0.1.dev1166"), _resolved(None)
    assert prefill_budget(old.plan, "mlc", old.gpu, False) is None
    assert separate_prefill_passes(old, None)
    assert prefill_budget(new.plan, "mlc", new.gpu, False) == 8192
    assert not separate_prefill_passes(new, 8192)


def test_top_p_sort_by_hand() -> None:
    """48 running sequences of a 128,256-token vocabulary, ~320 bytes per element (efficiency.
    MLC_TOP_P_SORT_BYTES_PER_ELEMENT) at the RTX 3090's 936 GB/s x MLC's 0.80: 48 x 128,256 x 320 / 748.8e9 = 2.63 ms,
    added to the decode step; nothing for the current release or another engine."""
    old, new = _resolved("0.1.dev1166"), _resolved(None)
    by_hand = 48 * 128256 * eff.MLC_TOP_P_SORT_BYTES_PER_ELEMENT / (936e9 * eff.BW_EFF["mlc"]["gddr"])
    assert float(mlc_top_p_sort_s(old, "mlc", 48)) == pytest.approx(by_hand, rel=1e-9)
    assert by_hand == pytest.approx(2.63e-3, rel=0.01)
    assert mlc_top_p_sort_s(new, "mlc", 48) == 0.0
    assert mlc_top_p_sort_s(old, "vllm", 48) == 0.0
    step_gap = float(decode_step(old, 48, 300).seconds) - float(decode_step(new, 48, 300).seconds)
    assert step_gap == pytest.approx(by_hand, rel=1e-6)
