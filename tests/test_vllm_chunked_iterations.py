"""A static batch's prefill under vLLM's chunked prefill runs as ceil(tokens / budget) passes, each paying a pass's
fixed costs (performance.vllm_chunked_iterations_extra_s), not one pass of all the tokens."""

from __future__ import annotations

import pytest
from calibration_lookup import row

from mlrig.estimators.performance import prefill_pass, vllm_chunked_iterations_extra_s
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import check


def _plan(**workload: object) -> dict:
    w: dict = {"engine": "vllm", "engine_version": "0.6.3", "batch_size": 64, "prompt_tokens": 512,
               "output_tokens": 128, **workload}
    return {"model": "llama-3.1-8b", "workload": w, "hardware": {"gpu": "h100-sxm-80gb"}}


def test_extra_iterations_by_hand() -> None:
    """64 prompts of 512 tokens at V0 0.6.3's long-context budget of 512 (llama-3.1-8b's 131,072-token context):
    64 iterations, 63 beyond the one pass, each a = 2 x pass(512) - pass(1,024); the TTFT grows by exactly that,
    and not at all with chunked prefill off (one pass, whole prompts)."""
    r, _ = resolve_plan(_plan())
    a = 2 * prefill_pass(r, 1, 512).seconds - prefill_pass(r, 1, 1024).seconds
    assert a > 0
    assert vllm_chunked_iterations_extra_s(r, 64, 512) == pytest.approx(63 * a, rel=1e-12)
    assert vllm_chunked_iterations_extra_s(r, 1, 512) == 0.0  # one iteration
    assert vllm_chunked_iterations_extra_s(r, 1, 513) == pytest.approx(a, rel=1e-12)  # two
    chunked = evaluate(_plan()).performance
    whole = evaluate(_plan(enable_chunked_prefill=False)).performance
    assert chunked is not None and whole is not None and chunked.ttft_ms and whole.ttft_ms
    assert chunked.ttft_ms - whole.ttft_ms == pytest.approx(63 * a * 1e3, rel=1e-9)


def test_no_extra_without_a_budget_or_for_other_engines() -> None:
    short, _ = resolve_plan(_plan(max_model_len=4096))  # V0 below 32k context: whole prompts
    assert vllm_chunked_iterations_extra_s(short, 64, 512) == 0.0
    sglang, _ = resolve_plan(_plan(engine="sglang", engine_version="0.4.6"))
    assert vllm_chunked_iterations_extra_s(sglang, 64, 512) == 0.0


def test_arrays_as_numbers() -> None:
    """Sweeps pass arrays (mlrig.grid): the same figures element by element."""
    import numpy as np

    r, _ = resolve_plan(_plan())
    got = vllm_chunked_iterations_extra_s(r, np.array([1.0, 8.0, 64.0]), np.array([512.0, 512.0, 512.0]))
    want = [vllm_chunked_iterations_extra_s(r, b, 512) for b in (1, 8, 64)]
    assert list(got) == pytest.approx(want, rel=1e-12)


def test_lhl_405b_bursts_of_8_and_16_prompts() -> None:
    """LHLMI300X-0011 / -0014 (fit: vLLM 0.6.3 on 8x MI300X, Llama-3.1-405B at TP 8, offline bursts of 8 / 16
    ~80-token prompts at V0's 512-token budget: 2 / 3 iterations): measured median TTFT 467.8 / 748.9 ms; one pass
    of all the tokens gave 270 / 391 ms, with each further iteration's fixed costs 447 / 745 ms."""
    for rid, measured in (("LHLMI300X-0011", 467.79), ("LHLMI300X-0014", 748.85)):
        c = check(row(rid))
        assert c.measured == measured and c.predicted is not None
        assert c.predicted == pytest.approx(measured, rel=0.1)
