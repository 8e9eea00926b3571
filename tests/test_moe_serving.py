"""MoE and tensor-parallel serving terms: KV copies per rank, routed-expert reads, FP8 attention rate.

Hand-checked values and invariants for `performance.kv_read_replication`, `performance.expert_read_bytes`,
efficiency.MOE_EXPERT_BW_REL and the 16-bit attention rate under FP8 weights."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.models import resolve_model
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import (
    _decode_cost,
    bandwidth_efficiency,
    decode_step,
    expert_read_bytes,
    format_efficiency,
    kv_read_replication,
    mla_decode_attention_bw_rel,
    prefill_cost,
    prefill_pass,
)
from mlrig.estimators.resolved import ResolvedPlan
from mlrig.planner import resolve_plan

DEEPSEEK = "deepseek-ai/DeepSeek-R1"
QWEN_MOE = "Qwen/Qwen3-235B-A22B-Instruct-2507"


def resolved(model: str, gpu: str, tp: int = 1, **workload: Any) -> ResolvedPlan:
    """The plan as `evaluate` resolves it (planner.resolve_plan): FP8 under vLLM, one 1000-token prompt."""
    w = {"task": "inference", "precision": "fp8", "engine": "vllm", "batch_size": 1, "prompt_tokens": 1000,
         "output_tokens": 100, **workload}
    return resolve_plan({"model": model, "workload": w,
                         "hardware": {"gpu": gpu, "count": tp, "tensor_parallel": tp}})[0]


def test_kv_copies_per_rank_hand_checked() -> None:
    # MLA: one latent per token and layer shared by all heads, every rank keeps all of it
    assert kv_read_replication(resolve_model(DEEPSEEK), 8) == 8.0
    # Qwen3-235B-A22B: 4 KV heads; on 8 ranks each keeps one, every head held twice
    qwen = resolve_model(QWEN_MOE)
    assert qwen.kv_heads == 4
    assert kv_read_replication(qwen, 8) == 2.0
    assert kv_read_replication(qwen, 4) == 1.0
    # Llama-3-8B: 8 KV heads split over 8 ranks, one copy
    assert kv_read_replication(resolve_model("llama-3-8b"), 8) == 1.0
    assert kv_read_replication(resolve_model(DEEPSEEK), 1) == 1.0


def _kv_time_per_rank(r: ResolvedPlan) -> float:
    """Decode memory time added by 2,000 more tokens of context (same batch: same weights read)."""
    return decode_step(r, 64, 4000).memory_s - decode_step(r, 64, 2000).memory_s


def test_mla_cache_read_per_rank_does_not_shrink_with_tensor_parallelism() -> None:
    # Each of 8 ranks reads the whole latent cache: the per-rank time of the extra KV equals one GPU's.
    one = _kv_time_per_rank(resolved(DEEPSEEK, "H200 SXM", 1))
    eight = _kv_time_per_rank(resolved(DEEPSEEK, "H200 SXM", 8))
    assert one > 0
    assert eight == pytest.approx(one, rel=1e-9)
    # a GQA cache with enough heads is split: 1/8 of it per rank (Llama-3-70B: 8 KV heads)
    g1 = _kv_time_per_rank(resolved("llama-3-70b", "H200 SXM", 1, precision="bf16"))
    g8 = _kv_time_per_rank(resolved("llama-3-70b", "H200 SXM", 8, precision="bf16"))
    assert g8 == pytest.approx(g1 / 8, rel=1e-9)
    # 4 KV heads on 8 ranks: 1/4 per rank
    q1 = _kv_time_per_rank(resolved(QWEN_MOE, "H200 SXM", 1))
    q8 = _kv_time_per_rank(resolved(QWEN_MOE, "H200 SXM", 8))
    assert q8 == pytest.approx(q1 / 4, rel=1e-9)


def test_expert_bytes_hand_checked() -> None:
    arch = resolve_model(DEEPSEEK)
    pb = arch.params()
    assert (arch.num_experts, arch.experts_per_token) == (256, 8)
    w = 1e12
    share = pb.experts_routed / pb.total
    # one token touches 8 of 256 experts per layer
    assert expert_read_bytes(arch, w, 1) == pytest.approx(w * share * 8 / 256, rel=1e-12)
    # 32 tokens: 1 - (1 - 8/256)^32 = 0.6377 of them
    assert expert_read_bytes(arch, w, 32) == pytest.approx(w * share * (1 - (1 - 8 / 256) ** 32), rel=1e-12)
    assert expert_read_bytes(resolve_model("llama-3-8b"), w, 32) == 0.0
    # a prefill of 1,000 tokens reads practically every expert
    cost = prefill_cost(arch, w, 2.0, 1, 1000)
    assert cost.expert_bytes == pytest.approx(w * share, rel=1e-9)


def test_routed_experts_stream_at_the_fused_moe_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    assert eff.MOE_EXPERT_BW_REL["vllm"] == 0.5
    r = resolved(DEEPSEEK, "H200 SXM", 8)
    batch, ctx = 32, 2000
    with_rel = decode_step(r, batch, ctx).memory_s
    monkeypatch.setitem(eff.MOE_EXPERT_BW_REL, "vllm", 1.0)
    dense_rate = decode_step(r, batch, ctx).memory_s
    # hand check: the expert bytes take 1 / 0.5 - 1 = 1x longer, on each of 8 ranks
    experts = _decode_cost(r, "vllm", batch, ctx).expert_bytes
    w_bw = r.gpu.memory_bandwidth_gb_s * 1e9 * bandwidth_efficiency(r.gpu, "vllm") * format_efficiency(
        "vllm", r.precision.family, r.gpu)
    assert with_rel - dense_rate == pytest.approx(experts * (1 / 0.5 - 1) / w_bw / 8, rel=1e-9)
    assert with_rel > 1.3 * dense_rate


def test_fused_moe_rate_only_where_those_kernels_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # vLLM's XPU build on Intel runs its own MoE kernels; a dense model has no experts
    for model, gpu, precision in (("openai/gpt-oss-20b", "Intel Arc Pro B60", "mxfp4"),
                                  ("llama-3-8b", "H100 SXM", "bf16")):
        r = resolved(model, gpu, 1, precision=precision)
        before = decode_step(r, 16, 2000).seconds
        monkeypatch.setitem(eff.MOE_EXPERT_BW_REL, "vllm", 1.0)
        assert decode_step(r, 16, 2000).seconds == before
        monkeypatch.setitem(eff.MOE_EXPERT_BW_REL, "vllm", 0.5)


def test_fp8_weights_keep_16_bit_attention_unless_the_cache_is_fp8() -> None:
    # Qwen3-14B FP8 on an H100, a 32k prompt: the attention FLOPs run at the 16-bit rate with a bf16 cache
    # and at the FP8 rate with an FP8 cache; the linear GEMMs at the FP8 rate either way.
    model, prompt = "Qwen/Qwen3-14B", 32000
    bf16_kv = resolved(model, "H100 SXM", 1, prompt_tokens=prompt, kv_cache_precision="bf16")
    fp8_kv = resolved(model, "H100 SXM", 1, prompt_tokens=prompt, kv_cache_precision="fp8")
    a = prefill_pass(bf16_kv, 1, prompt).compute_s
    b = prefill_pass(fp8_kv, 1, prompt).compute_s
    attn = prefill_cost(bf16_kv.arch, bf16_kv.weight_bytes, 2.0, 1, prompt).attn_flops
    gpu = bf16_kv.gpu
    ce = eff.COMPUTE_EFF["vllm"]["hbm"]
    fp16, fp8 = gpu.tensor_tflops("fp16"), gpu.tensor_tflops("fp8")
    assert fp16 is not None and fp8 is not None and fp8 == pytest.approx(2 * fp16, rel=0.01)
    assert a - b == pytest.approx(attn / (ce * 1e12) * (1 / fp16 - 1 / fp8), rel=1e-9)
    assert a > 1.2 * b  # attention is a large share of a 32k prompt's FLOPs


def test_trtllm_fp8_checkpoint_runs_prompt_attention_fp8_only_on_an_fp8_cache() -> None:
    # TensorRT-LLM's default (pass_time's docstring: trtllm-bench build -q FP8 sets use_fp8_context_fmha with an
    # FP8 cache; builder.py drops it without one): MKTRTLAT-0059's setup, Qwen2.5-0.5B FP8 on an RTX PRO 6000,
    # 1.2.0 TensorRT engine, a 9,192-token prompt. The FP8 cache's prompt attention runs at the FP8 rate, a bf16
    # cache's at the 16-bit rate; the linear GEMMs at the FP8 rate either way.
    model, gpu_name, prompt = "Qwen/Qwen2.5-0.5B-Instruct", "NVIDIA RTX PRO 6000 Blackwell Server Edition", 9192
    common: dict[str, Any] = {"engine": "trt-llm", "engine_version": "1.2.0+tensorrt", "prompt_tokens": prompt}
    fp8_kv = resolved(model, gpu_name, 1, kv_cache_precision="fp8", **common)
    bf16_kv = resolved(model, gpu_name, 1, kv_cache_precision="bf16", **common)
    attn = prefill_cost(bf16_kv.arch, bf16_kv.weight_bytes, 2.0, 1, prompt).attn_flops
    gpu = bf16_kv.gpu
    fp16, fp8 = gpu.tensor_tflops("fp16"), gpu.tensor_tflops("fp8")
    assert fp16 is not None and fp8 is not None and fp8 == pytest.approx(2 * fp16, rel=0.01)
    ce = eff.COMPUTE_EFF["trt-llm"]["gddr"]
    a = prefill_pass(bf16_kv, 1, prompt).compute_s
    b = prefill_pass(fp8_kv, 1, prompt).compute_s
    assert a - b == pytest.approx(attn / (ce * 1e12) * (1 / fp16 - 1 / fp8), rel=1e-6)


def _kv_memory_s(r: ResolvedPlan) -> float:
    """Decode memory time of 64 sequences added by 1,600 more tokens of context (the weights' read cancels)."""
    return decode_step(r, 64, 3600).memory_s - decode_step(r, 64, 2000).memory_s


def test_early_rocm_mla_decode_reads_the_latent_cache_at_a_fifth_of_the_rate() -> None:
    # SGLang 0.4.2 on MI300X decoded MLA with the Triton split-KV kernel (efficiency.MLA_DECODE_ATTN_BW_REL):
    # the latent cache's read takes 1 / 0.2 = 5x as long as under a release with AITER's MLA decode
    early = resolved(DEEPSEEK, "MI300X", 8, engine="sglang", engine_version="0.4.2.post4")
    aiter = resolved(DEEPSEEK, "MI300X", 8, engine="sglang", engine_version="0.4.5")
    assert mla_decode_attention_bw_rel(early, "sglang") == pytest.approx(0.2)
    assert mla_decode_attention_bw_rel(aiter, "sglang") == 1.0
    assert _kv_memory_s(early) == pytest.approx(5.0 * _kv_memory_s(aiter), rel=1e-9)
    # DSTACKR1-0084 / -0087 (SGLang 0.4.2, 8x MI300X, ~3,600 tokens held): TPOT grows 0.80 ms per extra sequence
    # from 64 to 128 users; the full-rate read gives a decode step ~0.14 ms per sequence, the early kernel > 2x that
    def per_seq_ms(r: ResolvedPlan) -> float:
        return (decode_step(r, 128, 3600).seconds - decode_step(r, 64, 3600).seconds) / 64 * 1e3
    assert per_seq_ms(aiter) < 0.2
    assert 0.3 < per_seq_ms(early) < 0.9


def test_early_rocm_mla_decode_rate_leaves_nvidia_gqa_and_current_releases_alone() -> None:
    # DSTACKR1's H200 rows (SGLang 0.4.3.post2 on CUDA: FlashInfer / Triton MLA) are not priced with it
    h200 = resolved(DEEPSEEK, "H200 SXM", 8, engine="sglang", engine_version="0.4.3.post2")
    assert mla_decode_attention_bw_rel(h200, "sglang") == 1.0
    # GQA models on the same release and GPU: no latent cache
    assert mla_decode_attention_bw_rel(
        resolved("llama-3-70b", "MI300X", 8, precision="bf16", engine="sglang", engine_version="0.4.2.post4"),
        "sglang") == 1.0
    # no version stated: the current release (AITER); vLLM's own figure: tests/test_vllm_rocm_mla.py
    assert mla_decode_attention_bw_rel(resolved(DEEPSEEK, "MI300X", 8, engine="sglang"), "sglang") == 1.0
