"""The rest of the Livinfly/MLsys-Learning-Record-2 A100 PCIe runs (issue 10, branch s37b-dsqwen): the catalog's
DeepSeek-R1-0528-Qwen3-8B, its SGLang rows (LIVINFLYDSQ), the vLLM 0.9.1 V0 rows of both models (LIVINFLYVLLM),
checked against the figures of their result files, and the "+v0" version label those rows need."""

from __future__ import annotations

import copy

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators import engines
from mlrig.estimators.serving import prefill_budget
from mlrig.planner import evaluate, parse_plan, resolve_arch
from mlrig.validation.runner import CalibrationRow, load_rows


def _rows() -> dict[str, CalibrationRow]:
    return {r.id: r for r in load_rows() if r.id.startswith(("LIVINFLYDSQ-", "LIVINFLYVLLM-"))}


def test_deepseek_r1_0528_qwen3_8b_is_qwen3_8b_with_a_131k_context() -> None:
    ds = resolve_arch(parse_plan({"model": {"name": "deepseek-ai/DeepSeek-R1-0528-Qwen3-8B"}}))
    qwen = resolve_arch(parse_plan({"model": {"name": "Qwen/Qwen3-8B"}}))
    assert (ds.num_layers, ds.hidden_size, ds.num_heads, ds.num_kv_heads, ds.head_dim) == (36, 4096, 32, 8, 128)
    assert ds.total_params == qwen.total_params  # the same weights' shapes: 8,190,735,360
    # YaRN factor 4 over 32,768 (the config's max_position_embeddings); Qwen3-8B's own config says 40,960
    assert (ds.max_position_embeddings, qwen.max_position_embeddings) == (131_072, 40_960)


def test_new_rows_quote_their_sources() -> None:
    rows = _rows()
    assert len(rows) == 43 + 86
    # @ f7b9c79, sglang_online_DeepSeek-R1-0528-Qwen3-8B_no.jsonl line 1 (rate 1): median_ttft_ms 78.1898,
    # totals 152,612 in / 160,347 out over 300 requests (means 508.7 / 534.5)
    r = rows["LIVINFLYDSQ-0002"]
    w = r.plan["workload"]
    assert r.metric == "ttft_ms" and r.value == pytest.approx(78.19)
    assert (w["engine"], w["engine_version"], w["load"], w["request_rate"], w["num_requests"],
            w["prompt_tokens"], w["output_tokens"]) == ("sglang", "0.4.7.post1", "rate", 1.0, 300, 509, 534)
    # line 4 (rate 8, past capacity): median TTFT 67,016.07 ms, output 2,645.26 tok/s
    assert rows["LIVINFLYDSQ-0011"].value == pytest.approx(67016.07)
    assert rows["LIVINFLYDSQ-0010"].value == pytest.approx(2645.26)
    # sglang_offline_..._no.jsonl line 9: 1,000 random 4096/4096, 1,023.32 output tok/s, median TTFT 999,418 ms
    assert rows["LIVINFLYDSQ-0032"].value == pytest.approx(1023.32)
    assert rows["LIVINFLYDSQ-0033"].value == pytest.approx(999418.24)
    # vllm_online_DeepSeek-R1-0528-Qwen3-8B.jsonl line 3 (rate 4): 1,197 of 1,200 completed, median TTFT
    # 7,100.45 ms, median TPOT 74.71 ms (614,161 / 607,936 tokens: means 513.1 / 507.9)
    r = rows["LIVINFLYVLLM-0051"]
    w = r.plan["workload"]
    assert r.metric == "ttft_ms" and r.value == pytest.approx(7100.45)
    assert (w["num_requests"], w["prompt_tokens"], w["output_tokens"]) == (1200, 513, 508)
    assert rows["LIVINFLYVLLM-0052"].value == pytest.approx(74.71)
    # vllm_offline_Mistral-7B-Instruct.jsonl line 5 (the first of the two 1000 x 1024/1024 runs): 2,406.2 tok/s
    assert rows["LIVINFLYVLLM-0024"].value == pytest.approx(2406.2)
    assert rows["LIVINFLYVLLM-0024"].plan["model"]["name"] == "mistralai/Mistral-7B-Instruct-v0.3"
    assert {r.plan["workload"]["engine_version"] for i, r in rows.items() if i.startswith("LIVINFLYVLLM")} == {
        "0.9.1+v0"}


def test_new_rows_are_fit_and_the_first_sglang_burst_is_flagged() -> None:
    rows = _rows()
    assert {r.split for r in rows.values()} == {"fit"}
    # the SGLang file's first run after the server's start: +23 % median TTFT against the radix-on file's same run
    assert {i for i, r in rows.items() if r.anomaly} == {"LIVINFLYDSQ-0016", "LIVINFLYDSQ-0017"}


@pytest.mark.parametrize(("version", "v1"), [
    ("0.9.1+v0", False), ("0.9.1", True), ("v0.8.0", True), ("0.7.3", False),
    ("0.9.1+flashinfer", True), ("0.9.1+v0+flashinfer", False), (None, True),
])
def test_v0_label_selects_the_v0_engine(version: str | None, v1: bool) -> None:
    assert engines.vllm_v1(version) is v1


def test_v0_label_reaches_the_product_path() -> None:
    rows = _rows()
    ds = parse_plan(rows["LIVINFLYVLLM-0056"].plan)
    mistral = parse_plan(rows["LIVINFLYVLLM-0013"].plan)
    gpu = resolve_gpu("NVIDIA A100-PCIE-40GB")

    def budget(p: object) -> int | None:
        plan = parse_plan(p)
        arch = resolve_arch(plan)
        return prefill_budget(plan, "vllm", gpu, engines.vllm_v1(plan.workload.engine_version),
                              arch.max_position_embeddings, arch)

    # V0 chunks the 131,072-token config at 2,048 tokens per step and prefills Mistral's 32,768 whole; V1 (no
    # label) chunks both at 2,048 on an A100
    assert budget(ds) == 2048 and budget(mistral) is None
    v1_plan = copy.deepcopy(rows["LIVINFLYVLLM-0013"].plan)
    v1_plan["workload"]["engine_version"] = "0.9.1"
    assert budget(v1_plan) == 2048
    assert evaluate(v1_plan).performance != evaluate(rows["LIVINFLYVLLM-0013"].plan).performance
