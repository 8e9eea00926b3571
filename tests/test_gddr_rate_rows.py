"""Rows added on branch s36-gddrrate: vLLM Poisson-rate serving on GDDR cards (fit). MOONCAKEA10: vLLM 0.6.2 (V0)
on one A10, Qwen2.5-7B-Instruct-GPTQ-Int4, sonnet prompts, 6 output tokens, 200 prompts at 2-8 req/s
(kvcache-ai/Mooncake doc/en/vllm-benchmark-results-v0.1.md @ c9fad6c). OPENINFER5090: vLLM 0.22.1 (V1) on one
RTX 5090, Qwen3-4B bf16, random 1,024 in / 128 out at 1-16 req/s, 60 x QPS prompts
(openinfer-project/openinfer docs/benchmarks/qwen3-4b-serving-vllm-rtx5090.md @ 6de4908).

Hand checks (numbers copied from the sources):
- Mooncake, input_len 256 at QPS 8, 'Non-disaggregated': total input 49,054 tokens over 200 requests = 245.3 per
  prompt (the rows' prompt_tokens 245), total generated 1,200 = 6 per request; median TTFT 88.21 ms.
- Mooncake, input_len 1024 at QPS 2: 202,314 / 200 = 1,011.6 (prompt_tokens 1,012); median TTFT 282.00 ms, and
  286.09 ms with --enable-chunked-prefill.
- openinfer, vLLM QPS 8: 7.88 req/s x 128 tokens = 1,008.6 tok/s, printed as 1008 out tok/s; num_prompts 60 x 8 = 480.
"""

from __future__ import annotations

import json

import pytest

from mlrig.planner import evaluate
from mlrig.validation.runner import CalibrationRow, calibration_files, check

FILES = {"serving_gddr_mooncake_a10.jsonl": ("MOONCAKEA10", 20),
         "serving_gddr_openinfer_rtx5090.jsonl": ("OPENINFER5090", 27)}


def _rows(name: str) -> list[CalibrationRow]:
    path = next(p for p in calibration_files() if p.name == name)
    return [CalibrationRow.model_validate(json.loads(line))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("name", sorted(FILES))
def test_rows_load_with_one_tag_fit_split_and_a_pinned_source(name: str) -> None:
    tag, count = FILES[name]
    rows = _rows(name)
    assert len(rows) == count
    assert {r.id.rsplit("-", 1)[0] for r in rows} == {tag}
    assert {r.split for r in rows} == {"fit"}
    for r in rows:
        w = r.plan["workload"]
        assert w["engine"] == "vllm" and w.get("engine_version"), r.id
        assert "/blob/" in r.source_url and len(r.source_url.split("/blob/")[1].split("/")[0]) == 40, r.id


def _find(name: str, metric: str, **workload: object) -> CalibrationRow:
    hits = [r for r in _rows(name) if r.metric == metric
            and all(r.plan["workload"].get(k) == v for k, v in workload.items())]
    assert len(hits) == 1, (metric, workload, [r.id for r in hits])
    return hits[0]


def test_published_figures_and_conversions() -> None:
    r = _find("serving_gddr_mooncake_a10.jsonl", "ttft_ms", request_rate=8, prompt_tokens=245,
              enable_chunked_prefill=None)
    assert r.value == pytest.approx(88.21)
    assert r.plan["workload"]["output_tokens"] == 6 and r.plan["workload"]["num_requests"] == 200
    assert r.plan["hardware"]["gpu"] == "NVIDIA A10"
    chunked = [x for x in _rows("serving_gddr_mooncake_a10.jsonl")
               if x.metric == "ttft_ms" and x.plan["workload"]["prompt_tokens"] == 1012]
    assert sorted((x.plan["workload"].get("enable_chunked_prefill", False), x.value) for x in chunked) == [
        (False, 282.0), (True, 286.09)]
    t = _find("serving_gddr_openinfer_rtx5090.jsonl", "throughput_tok_s", request_rate=8)
    assert t.value == 1008.0 and t.plan["workload"]["num_requests"] == 480
    assert t.value == pytest.approx(7.88 * 128, rel=0.01)


@pytest.mark.parametrize("name", sorted(FILES))
def test_every_plan_resolves_through_the_planner(name: str) -> None:
    for r in _rows(name):
        assert not r.anomaly, r.id
        evaluate(r.plan)  # a plan the product path rejects raises here
        result = check(r)
        assert result.predicted is not None and result.predicted > 0, (r.id, result)
