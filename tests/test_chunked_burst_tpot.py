"""A one-wave offline burst under chunked prefill (`serving.chunked_burst_tpot_extra_s`): the median request decodes
inside the iterations that prefill the prompts behind it, so its TPOT carries their chunks, at most one budget-full
chunk per token. Priced as a plain decode step before, long-prompt bursts came out several times too fast."""

from __future__ import annotations

import json
import statistics
from typing import Any

from mlrig.estimators.performance import prefill_pass
from mlrig.estimators.serving import chunked_burst_tpot_extra_s, fused_prefill_s_per_token
from mlrig.planner import evaluate, resolve_plan
from mlrig.validation.runner import CalibrationRow, calibration_files, check


def _burst(n: int, prompt: int, out: int, engine: str = "vllm", version: str = "0.11.0") -> dict[str, Any]:
    return {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": engine, "engine_version": version,
                         "prompt_tokens": prompt, "output_tokens": out, "load": "offline", "num_requests": n},
            "hardware": {"gpu": "H100 SXM", "count": 1}}


def test_long_prompts_cap_the_extra_at_one_chunk() -> None:
    """16 prompts of 20,000 tokens and 10 outputs, vLLM V1 on an H100 (8,192-token budget; the 16 fit the KV pool, so
    they run as one wave): the 7.5 prompts behind the median request (150k tokens) outlast its 9 decode steps (at
    most 9 x 8,176 = 74k), so each of its tokens waits a whole chunk of 8,192 - 16 prompt tokens: hand-computed
    from the prompt's arithmetic per token."""
    r, _ = resolve_plan(_burst(16, 20_000, 10))
    t_f = fused_prefill_s_per_token(prefill_pass(r, 1, 20_000), 20_000, 8192)
    assert chunked_burst_tpot_extra_s(r, 16, 8192) == (8192 - 16) * t_f
    plan = _burst(16, 20_000, 10)
    burst = evaluate(plan).performance
    static = evaluate({**plan, "workload": {**plan["workload"], "load": "static", "batch_size": 16}}).performance
    assert burst.tpot_ms is not None and static.tpot_ms is not None
    assert abs(burst.tpot_ms - static.tpot_ms - (8192 - 16) * t_f * 1e3) < 1e-6


def test_short_tail_is_the_uncapped_share() -> None:
    """4 prompts of 2,000 tokens and 500 outputs: 1.5 prompts behind the median, 3,000 tokens over 499 steps."""
    r, _ = resolve_plan(_burst(4, 2000, 500))
    t_f = fused_prefill_s_per_token(prefill_pass(r, 1, 2000), 2000, 8192)
    assert abs(chunked_burst_tpot_extra_s(r, 4, 8192) - 1.5 * 2000 * t_f / 499) < 1e-12


def test_nothing_without_chunks_alone_or_on_sglang() -> None:
    r, _ = resolve_plan(_burst(16, 20_000, 100))
    assert chunked_burst_tpot_extra_s(r, 1, 8192) == 0.0
    assert chunked_burst_tpot_extra_s(r, 16, None) == 0.0
    rs, _ = resolve_plan(_burst(16, 20_000, 100, engine="sglang", version="0.5.3"))
    assert chunked_burst_tpot_extra_s(rs, 16, 8192) == 0.0  # SGLang prefills in passes of its own


def _fit_rows(path_name: str, ids: list[str]) -> list[CalibrationRow]:
    path = next(p for p in calibration_files() if p.name == path_name)
    rows = [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.id in ids]


def test_fit_bursts_of_vllm_063_on_mi300x() -> None:
    """LHLMI300X (fit; vLLM 0.6.3 on 8x MI300X, Llama-3.1-405B, sonnet bursts of 64-256 ~80-token prompts, V0 chunking
    at 512 tokens since max_model_len is 131,072): median |error| of these TPOT rows was 39 % as plain decode steps."""
    ids = [f"LHLMI300X-{i:04d}" for i in (18, 21, 24, 27, 54, 57, 60, 63, 90, 93, 96, 99)]
    rows = _fit_rows("serving_rocm_vllm063_lhl_mi300x.jsonl", ids)
    assert len(rows) == len(ids) and all(r.split == "fit" for r in rows)
    errors = [abs((c.predicted or 0.0) / c.measured - 1.0) for c in map(check, rows)]
    assert statistics.median(errors) < 0.20
