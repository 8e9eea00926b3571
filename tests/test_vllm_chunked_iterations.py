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
    64 iterations of one whole prompt each, so the prefill is 64 passes of one prompt, 64 x pass(1, 512) - pass(64,
    512) beyond the one pass; the TTFT grows by exactly that, and not at all with chunked prefill off (one pass,
    whole prompts). A prompt one token over the budget spans two iterations, its second attending to the first:
    one pass of the whole prompt plus a = 2 x pass(512) - pass(1,024)."""
    r, _ = resolve_plan(_plan())
    one = prefill_pass(r, 1, 512).seconds
    extra = 64 * one - prefill_pass(r, 64, 512).seconds
    assert extra > 0
    assert vllm_chunked_iterations_extra_s(r, 64, 512) == pytest.approx(extra, rel=1e-12)
    assert vllm_chunked_iterations_extra_s(r, 1, 512) == 0.0  # one iteration
    a = 2 * one - prefill_pass(r, 1, 1024).seconds
    assert a > 0
    assert vllm_chunked_iterations_extra_s(r, 1, 513) == pytest.approx(a, rel=1e-12)  # two
    chunked = evaluate(_plan()).performance
    whole = evaluate(_plan(enable_chunked_prefill=False)).performance
    assert chunked is not None and whole is not None and chunked.ttft_ms and whole.ttft_ms
    assert chunked.ttft_ms - whole.ttft_ms == pytest.approx(extra * 1e3, rel=1e-9)


def test_short_prompts_packed_by_hand() -> None:
    """16 prompts of 100 tokens at a 512-token budget: 1,600 tokens, 4 iterations; the first three hold 5.12 prompts'
    tokens each (FCFS packs them full, chunking the last prompt), the fourth the remaining 0.64 prompt's 64 tokens:
    3 x pass(5.12, 100) + pass(0.64, 100) - pass(16, 100) beyond the one pass."""
    r, _ = resolve_plan(_plan())
    want = (3 * prefill_pass(r, 5.12, 100).seconds + prefill_pass(r, 0.64, 100).seconds
            - prefill_pass(r, 16, 100).seconds)
    assert vllm_chunked_iterations_extra_s(r, 16, 100) == pytest.approx(want, rel=1e-12)
    assert vllm_chunked_iterations_extra_s(r, 5, 100) == 0.0  # 500 tokens: one iteration


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


def test_lhl_405b_bursts_of_8_prompts() -> None:
    """LHLMI300X-0011 (fit: vLLM 0.6.3 on 8x MI300X, Llama-3.1-405B at TP 8, an offline burst of 8 ~80-token prompts
    at V0's 512-token budget: 2 iterations): measured median TTFT 467.8 ms; one pass of all the tokens gave 270 ms."""
    c = check(row("LHLMI300X-0011"))
    assert c.measured == 467.79 and c.predicted is not None
    assert c.predicted == pytest.approx(467.79, rel=0.1)


@pytest.mark.parametrize("rid", ["LHLMI300X-0020", "LHLMI300X-0023", "LHLMI300X-0026"])
def test_lhl_host_bound_iterations_are_summed(rid: str) -> None:
    """LHLMI300X-0020 / -0023 / -0026 (fit: the same node, bursts of 64 / 128 / 256 ~80-token prompts at the
    512-token budget: 10 / 20 / 40 iterations, measured 2.0 / 3.7 / 8.3 s, ~185-210 ms an iteration). Each 512-token
    iteration is host-bound (V0's eager TP-8 pass, ~257 ms priced), which one GPU-bound pass of all the tokens hides:
    one pass plus (J - 1) x (2 x pass(512) - pass(1,024)) put them at +59 / +73 / +52 % (with the burst's first
    iteration, serving.burst_stagger_s); the sum of the iterations' passes at +39 / +46 / +27 %."""
    c = check(row(rid))
    assert c.predicted is not None
    r, _ = resolve_plan(row(rid).plan)
    n, prompt = row(rid).plan["workload"]["num_requests"], r.workload.prompt_tokens
    tokens = n * prompt
    further = -(-tokens // 512) - 1
    fixed = 2 * prefill_pass(r, 1, 512).seconds - prefill_pass(r, 1, 1024).seconds
    old_extra_ms = further * fixed * 1e3
    new_extra_ms = float(vllm_chunked_iterations_extra_s(r, n, prompt)) * 1e3
    assert new_extra_ms < old_extra_ms
    old_predicted = c.predicted - new_extra_ms + old_extra_ms
    assert abs(c.predicted / c.measured - 1) < 0.5 < abs(old_predicted / c.measured - 1)
