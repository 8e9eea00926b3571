"""llama.cpp build numbers ("b5000") for the gates first written with month labels (efficiency.py LLAMA-CPP-BUILDS).

A build number is master's commit count; each gate takes the latest build known to predate its PR's merge (from
node-llama-cpp's release notes: b3887 on 2024-10-05, b4599 on 2025-01-30, b5593 on 2025-06-05; b5997 on 2025-08-08 from
AMD's blog) as its last old build. Later numbers, like no label, take the current code. Also: the CUDA build sorted a
MoE prompt pass's expert ids on the host from PR #13199 to PR #15525, as the HIP build did (efficiency.py 1-HIP-IDS)."""

from __future__ import annotations

import pytest
from llamacpp_moe_plans import moe_plan, prefill_tok_s, tile_factor

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.performance import (
    hip_dmmv_f16,
    hip_mmid_fallback,
    hip_moe_host_sort_s,
    llama_cpp_before_change,
    llama_cpp_host_id_sort,
    llama_cpp_moe_host_sync,
)
from mlrig.planner import evaluate, resolve_plan

DEEPSEEK_V3 = "deepseek-ai/DeepSeek-V3"
SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
GPT_OSS_20B = "openai/gpt-oss-20b"


def test_a_label_predates_a_change_up_to_its_last_old_month_or_build() -> None:
    assert llama_cpp_before_change("2025-04", (2025, 4), 4599)
    assert not llama_cpp_before_change("2025-05", (2025, 4), 4599)
    assert llama_cpp_before_change("b4599", (2025, 4), 4599)
    assert llama_cpp_before_change("b4599+rocm", (2025, 4), 4599)  # the backend suffix is not part of the number
    assert not llama_cpp_before_change("b4600", (2025, 4), 4599)  # not known to predate it: current code
    assert not llama_cpp_before_change(None, (2025, 4), 4599)
    assert not llama_cpp_before_change("0.5.7", (2025, 4), 4599)  # a front-end's release: not a llama.cpp date


def test_the_old_f16_mat_vec_takes_builds_up_to_b3887() -> None:
    """PR #10318 merged mid-November 2024; b3887 shipped on 2024-10-05, b4599 on 2025-01-30."""
    mi300x = resolve_gpu("mi300x")
    assert hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "b3600")
    assert hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "b3887")
    assert not hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "b3888")
    assert not hip_dmmv_f16(mi300x, "llama.cpp-hip", "fp16", "b4599")


def test_the_batch1_moe_fallback_takes_builds_up_to_b4599() -> None:
    assert hip_mmid_fallback("llama.cpp-hip", "b4500")
    assert not hip_mmid_fallback("llama.cpp-hip", "b5331")  # shipped 2025-05-09, after PR #13014
    assert not hip_mmid_fallback("llama.cpp", "b4500")  # CUDA builds: not priced


def test_a_build_number_moves_decode_as_its_month_does() -> None:
    """DeepSeek-V2-Lite Q4_0 on an RX 6800: b4599 is priced as the 2025-04 label (the PR's "master" column) and b5331
    as 2025-05: the same two speeds."""
    def tok_s(version: str) -> float:
        workload = {"task": "inference", "precision": "q4_0", "engine": "llama.cpp", "batch_size": 1,
                    "load": "static", "prompt_tokens": 0, "output_tokens": 128, "flash_attention": False,
                    "engine_version": version}
        r = evaluate({"model": {"name": "deepseek-ai/DeepSeek-V2-Lite"}, "workload": workload,
                      "hardware": {"gpu": "AMD Radeon RX 6800", "count": 1}})
        assert r.performance is not None
        return float(r.performance.decode_tok_s)

    assert tok_s("b4599") == pytest.approx(tok_s("2025-04"), rel=1e-12)
    assert tok_s("b5331") == pytest.approx(tok_s("2025-05"), rel=1e-12)
    assert tok_s("b4599") < tok_s("b5331")


@pytest.mark.parametrize(("model", "gpu", "precision", "old_build", "new_build", "factor"), [
    (DEEPSEEK_V3, "AMD Instinct MI300X", "q4_k_m", "b5593", "b5997", 8.0),  # CDNA 3: PR #14949, end of July 2025
    (SCOUT, "AMD Radeon Instinct MI50 32GB", "q3_k_m", "b4599", "b5331", 2.0),  # GCN: PR #13199, end of April 2025
    (DEEPSEEK_V3, "h100-sxm-80gb", "q4_k_m", "b4599", "b5331", 8.0),  # CUDA: PR #13199
])
def test_the_mmq_tiles_start_after_the_last_build_known_to_predate_their_pr(
        model: str, gpu: str, precision: str, old_build: str, new_build: str, factor: float) -> None:
    assert tile_factor(model, gpu, precision=precision, version=old_build) == 1.0
    assert tile_factor(model, gpu, precision=precision, version=new_build) == pytest.approx(factor, rel=2e-3)


@pytest.mark.parametrize(("version", "sorts"), [
    ("2025-04", False),  # before PR #13199: counted between the per-expert launches, not priced
    ("b4599", False),
    ("2025-05", True), ("b5331", True), ("2025-08", True), ("b5997", True),  # PR #13199 to PR #15525
    ("2025-09", False), ("b5998", False), (None, False),  # the device-side ids helper
])
def test_the_cuda_build_sorts_expert_ids_on_the_host_between_pr_13199_and_pr_15525(version: str | None,
                                                                                    sorts: bool) -> None:
    r, _ = resolve_plan(moe_plan(GPT_OSS_20B, "h100-sxm-80gb", precision="mxfp4", version=version))
    assert r.engine == "llama.cpp"
    assert llama_cpp_host_id_sort(r, r.engine) is sorts


def test_the_cuda_host_sort_is_e_t_k_comparisons_per_mul_mat_id() -> None:
    """gpt-oss-20b (32 experts, top 4, 24 MoE layers) at 512 tokens: 32 x 512 x 4 x 1 ns x 3 x 24 = 4.719 ms a pass,
    and the whole difference between a 2025-07 and a 2025-09 label (both after PR #13199: the same MMQ tiles)."""
    r, _ = resolve_plan(moe_plan(GPT_OSS_20B, "h100-sxm-80gb", precision="mxfp4", version="2025-07"))
    assert (r.arch.num_experts, r.arch.experts_per_token, r.arch.num_moe_layers) == (32, 4, 24)
    one = 32 * 512 * 4 * 1e-9 * 3 * 24
    assert float(hip_moe_host_sort_s(r, r.engine, 512)) == pytest.approx(one, rel=1e-9)
    old = prefill_tok_s(moe_plan(GPT_OSS_20B, "h100-sxm-80gb", precision="mxfp4", version="2025-07"))
    new = prefill_tok_s(moe_plan(GPT_OSS_20B, "h100-sxm-80gb", precision="mxfp4", version="2025-09"))
    assert 512 / old - 512 / new == pytest.approx(one, rel=1e-6)


def test_dense_models_and_other_vendors_on_the_cuda_engine_do_not_sort() -> None:
    r, _ = resolve_plan(moe_plan("meta-llama/Llama-3.1-8B-Instruct", "h100-sxm-80gb", version="2025-07"))
    assert not llama_cpp_host_id_sort(r, r.engine)


@pytest.mark.parametrize(("model", "gpu", "precision", "version", "syncs"), [
    (DEEPSEEK_V3, "AMD Instinct MI300X", "q4_k_m", "b5997", True),  # HIP, before PR #15525
    (DEEPSEEK_V3, "AMD Instinct MI300X", "q4_k_m", "2025-08", True),
    (DEEPSEEK_V3, "AMD Instinct MI300X", "q4_k_m", "b6652", False),  # after it
    (DEEPSEEK_V3, "AMD Instinct MI300X", "q4_k_m", None, False),
    (DEEPSEEK_V3, "AMD Instinct MI300X", "q4_k_m", "b5997+vulkan", False),  # the Vulkan build: not this code
    ("meta-llama/Llama-3.1-70B-Instruct", "AMD Instinct MI300X", "q4_k_m", "b5997", False),  # dense
    (GPT_OSS_20B, "h100-sxm-80gb", "mxfp4", "2024-09", True),  # CUDA: every MUL_MAT_ID synchronised until the PR
    (GPT_OSS_20B, "h100-sxm-80gb", "mxfp4", "b5998", False),
])
def test_moe_prompt_passes_synchronise_the_host_until_pr_15525(model: str, gpu: str, precision: str,
                                                               version: str | None, syncs: bool) -> None:
    r, _ = resolve_plan(moe_plan(model, gpu, precision=precision, version=version, count=8))
    assert llama_cpp_moe_host_sync(r, r.engine) is syncs


def test_a_host_synchronising_moe_build_gets_no_pipelining_over_a_layer_split() -> None:
    """AMD's DeepSeek-V3 llama-bench on 8 MI300X: b5997 measured 439.14 / 420.19 t/s at pp512 / pp4096 (flat: the
    micro-batches go through the GPUs one after another); b6652 514.07 / 1,650.33 (pipelined). Without pipelining
    each 512-token micro-batch costs what pp512's one does, plus its longer attention: pp4096 no faster than pp512."""
    def tok_s(version: str, prompt: int) -> float:
        return prefill_tok_s(moe_plan(DEEPSEEK_V3, "AMD Instinct MI300X", version=version, count=8, prompt=prompt))

    assert tok_s("b5997", 4096) <= tok_s("b5997", 512)
    assert tok_s("b5997", 4096) == pytest.approx(420.19, rel=0.15)
    assert tok_s("b6652", 4096) > 2.5 * tok_s("b6652", 512)
