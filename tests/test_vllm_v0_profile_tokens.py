"""vLLM V0's profile run with no --max-model-len (issue 10, branch s37c-v0kv): V0's SchedulerConfig sets
max_num_batched_tokens = max(max_model_len, 2048) with chunked prefill off, max_model_len defaulting to the model's
own maximum, and `profile_run` runs one forward of that many tokens (vllm 0.9.1 sdist: vllm/config.py,
vllm/worker/model_runner.py). The LIVINFLYVLLM Mistral runs (vLLM 0.9.1 V0 on one A100 PCIe 40GB, server started
with no --max-model-len) were profiled at the plan's context (2,048 tokens) instead of 32,768."""

from __future__ import annotations

import copy

import pytest

from mlrig.estimators.kv_limit import vllm_admissible_sequences, vllm_admission_pool_tokens
from mlrig.estimators.serving import running_output_tokens
from mlrig.planner import evaluate, parse_plan
from mlrig.units import GiB
from mlrig.validation.runner import CalibrationRow, load_rows

# vLLM's activation bytes per profiled token (memory.Calibration.vllm_act_per_token_factor = 3.85) x (hidden + MLP
# width) x 2 bytes; Mistral-7B-v0.3: 3.85 x (4,096 + 14,336) x 2 = 141,926.4 B per token
MISTRAL_PROFILE_BYTES_PER_TOKEN = 3.85 * (4096 + 14336) * 2


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith("LIVINFLYVLLM-")}


def _mistral_plan(**workload: object) -> dict[str, object]:
    plan = copy.deepcopy(_rows()["LIVINFLYVLLM-0013"].plan)  # 16 req/s, 4,800 requests, no --max-model-len
    plan["workload"].update(workload)  # type: ignore[union-attr]
    return plan


def test_unset_max_model_len_profiles_the_models_maximum() -> None:
    res = evaluate(_mistral_plan())
    # 32,768 x 141,926.4 B = 4,650,644,275 B = 4.3312 GiB, above the sampler warm-up (256 x 32,768 logits, 0.3164 GiB)
    assert res.memory.activations_gib == pytest.approx(32_768 * MISTRAL_PROFILE_BYTES_PER_TOKEN / GiB, abs=1e-4)
    assert res.memory.activations_gib == pytest.approx(4.3312, abs=1e-4)
    # the KV pool loses 4.3312 - 0.3164 = 4.0148 GiB against the 2,048-token profile: 4.0148 GiB / 128 KiB per token
    # (32 layers x 8 KV heads x 128 x 2 x 2 B) = 32,889 tokens; 175,888 -> 143,008 (32,880: whole-token rounding)
    assert res.kv_cache_capacity_tokens == 143_008


def test_a_stated_max_model_len_or_chunked_prefill_sets_the_profile() -> None:
    # --max-model-len 4096: 4,096 x 141,926.4 B = 0.5414 GiB
    res = evaluate(_mistral_plan(max_model_len=4096))
    assert res.memory.activations_gib == pytest.approx(4096 * MISTRAL_PROFILE_BYTES_PER_TOKEN / GiB, abs=1e-4)
    # --enable-chunked-prefill on 0.9.1 V0: a 2,048-token budget, 0.2707 GiB, under the sampler warm-up's 0.3164
    res = evaluate(_mistral_plan(enable_chunked_prefill=True))
    assert res.memory.activations_gib == pytest.approx(0.3164, abs=1e-4)
    assert res.kv_cache_capacity_tokens == 175_888


def test_the_long_context_model_that_v0_chunks_keeps_its_2048_token_profile() -> None:
    # DeepSeek-R1-0528-Qwen3-8B: 131,072 positions, above 32K, so V0 0.9.1 chunks at 2,048 tokens and profiles
    # 2,048 (not 131,072): the forward's 2,048 x 3.85 x (4,096 + 12,288) x 2 B is under the sampler warm-up of
    # 256 x 151,936 logits (1.3961 GiB), as before this change
    res = evaluate(_rows()["LIVINFLYVLLM-0056"].plan)
    assert res.memory.activations_gib == pytest.approx(1.3961, abs=1e-4)
    assert res.kv_cache_capacity_tokens == 135_696


def test_mistral_steady_batch_matches_the_measured_one() -> None:
    """The 16 req/s run holds the pool's steady batch: 143,008 tokens are 8,938 blocks, the 1 % watermark keeps 89,
    so admissions fill 8,849 blocks = 141,584 tokens; each running sequence holds its 508-token prompt, 344 output
    tokens (uniform lengths, E[L^2] / 2E[L]) and half a block, 859.5 tokens: 164.7 sequences. Measured: median TPOT
    71.21 ms x 2,355.12 output tok/s = 167.7 running (Little's law). With the 2,048-token profile the pool gave ~203
    and the model's TPOT came out 84 ms (+18 %)."""
    plan = parse_plan(_mistral_plan())
    pool = vllm_admission_pool_tokens(143_008, v1=False)
    assert pool == 141_584
    held = running_output_tokens(plan.workload)
    assert held == pytest.approx(344.0, abs=0.5)
    assert vllm_admissible_sequences(pool, 508, held) == pytest.approx(164.7, abs=0.1)


@pytest.mark.parametrize(("row_id", "tolerance"), [
    ("LIVINFLYVLLM-0012", 0.05),  # 8 req/s median TPOT 71.17 ms (was +18.8 %)
    ("LIVINFLYVLLM-0015", 0.05),  # 16 req/s median TPOT 71.21 ms (was +17.8 %)
    ("LIVINFLYVLLM-0013", 0.03),  # 16 req/s output 2,355.12 tok/s (was +2.6 %)
])
def test_mistral_saturated_runs_against_the_published_figures(row_id: str, tolerance: float) -> None:
    row = _rows()[row_id]
    got = getattr(evaluate(row.plan).performance, row.metric)
    assert got == pytest.approx(row.value, rel=tolerance)
