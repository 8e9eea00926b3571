"""Performance model: hand-checked roofline values and invariants."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.errors import MlrigError
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import (
    ERROR_BAND,
    cpu_decode_tok_s,
    decode_cost,
    decode_kv_read_factor,
    decode_step,
    llama_cpp_pipeline_speedup,
    llama_cpp_sm_bound_fraction,
    lm_head_params,
    prefill_cost,
    prefill_pass,
    speculative_speedup,
)
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.estimators.serving import max_concurrency_for_latency, serving_curve
from mlrig.estimators.speed import estimate_performance
from mlrig.estimators.training_speed import (
    GPU_HOURS_PER_INTERRUPTION,
    attention_width,
    checkpoint_bytes,
    chinchilla_tokens,
    data_parallel_comm_s,
    estimate_training_run,
    pipeline_bubble,
    tokenised_bytes_per_token,
    train_flops_per_token,
    young_daly_interval_s,
)
from mlrig.quant import default_kv_precision
from mlrig.results import Performance
from mlrig.workload import Plan


def plan(**kw: object) -> Plan:
    w: dict[str, object] = {
        "precision": "bf16",
        "engine": "vllm",
        "batch_size": 1,
        "prompt_tokens": 512,
        "output_tokens": 128,
    }
    h: dict[str, object] = {"gpu": "rtx-4090"}
    for k, v in kw.items():
        (h if k in ("gpu", "count", "tensor_parallel", "interconnect") else w)[k] = v
    return Plan.model_validate({"model": "llama-3-8b", "workload": w, "hardware": h})


ARCH = resolve_model("llama-3-8b")


def test_hand_checked_8b_bf16_decode_on_1008_gb_s() -> None:
    # Llama-3-8B: 8,030,261,248 params, input embedding 128256 x 4096 = 525,336,576 not streamed.
    # bf16 weights read per token: 7,504,924,672 x 2 B = 15.0098 GB; KV at 576 tokens held:
    # 32 layers x 2 x 8 heads x 128 x 2 B x 576 = 0.0755 GB. vLLM on GDDR: 90 % of 1008 GB/s
    # (efficiency.VLLM_GDDR_BW_EFF).
    gpu = resolve_gpu("rtx-4090")
    assert gpu.memory_bandwidth_gb_s == 1008
    bytes_per_tok = 7_504_924_672 * 2 + 32 * 2 * 8 * 128 * 2 * 576
    t = bytes_per_tok / (0.90 * 1008e9) + 32 * 25e-6 + 1.0e-3
    assert eff.BW_EFF["vllm"]["gddr"] == 0.90
    perf = estimate_performance(resolve(ARCH, plan(), gpu), None)
    assert perf.decode_tok_s == pytest.approx(1 / t, rel=0.01)  # ~54.4 tok/s
    assert perf.bound == "memory-bandwidth"
    assert "GB per token" in (perf.explanation or "")
    assert perf.error_band == ERROR_BAND  # the validation p90s (tests/test_validation_speed.py)


def test_prefill_compute_bound_and_ttft() -> None:
    perf = estimate_performance(resolve(ARCH, plan(prompt_tokens=4096), resolve_gpu("h100-sxm-80gb")), None)
    assert perf.prefill_tok_s is not None and perf.ttft_ms is not None
    # 2 x 7.5e9 FLOPs per token at 55 % of 989 TFLOPS -> at most ~36k tok/s
    assert 10_000 < perf.prefill_tok_s < 40_000
    assert perf.ttft_ms == pytest.approx(4096 / perf.prefill_tok_s * 1e3, rel=1e-6)


@pytest.mark.parametrize(
    "slow,fast", [("rtx-3060-12gb", "rtx-3090"), ("rtx-3090", "rtx-4090"), ("a100-pcie-80gb", "h100-sxm-80gb")]
)
def test_more_bandwidth_never_slower_decode(slow: str, fast: str) -> None:
    a = estimate_performance(resolve(ARCH, plan(gpu=slow), resolve_gpu(slow)), None).decode_tok_s
    b = estimate_performance(resolve(ARCH, plan(gpu=fast), resolve_gpu(fast)), None).decode_tok_s
    assert a is not None and b is not None and b >= a


def test_more_batch_never_lower_throughput() -> None:
    gpu = resolve_gpu("h100-sxm-80gb")
    last = 0.0
    for b in (1, 2, 4, 8, 16, 32, 64, 128):
        thr = b / decode_step(resolve(ARCH, plan(gpu="h100-sxm-80gb", batch_size=b), gpu), b, 1024).seconds
        assert thr >= last
        last = thr


@pytest.mark.parametrize("q", ["fp8", "int8", "q8_0", "q4_k_m", "q4_0", "awq"])
def test_quantisation_never_slows_decode_at_batch_1(q: str) -> None:
    gpu = resolve_gpu("rtx-4090")
    eng = "llama.cpp" if q.startswith("q") else "vllm"
    base = estimate_performance(resolve(ARCH, plan(engine=eng), gpu), None).decode_tok_s
    quant = estimate_performance(resolve(ARCH, plan(engine=eng, precision=q), gpu), None).decode_tok_s
    assert base is not None and quant is not None and quant > base


def test_tp_on_nvlink_faster_than_pcie() -> None:
    arch = resolve_model("llama-3-70b")
    gpu = resolve_gpu("h100-sxm-80gb")
    nv = estimate_performance(resolve(arch, plan(gpu=gpu.id, count=4, tensor_parallel=4, interconnect="nvlink"), gpu))
    pc = estimate_performance(resolve(arch, plan(gpu=gpu.id, count=4, tensor_parallel=4, interconnect="pcie4"), gpu))
    assert nv.decode_tok_s is not None and pc.decode_tok_s is not None
    assert nv.decode_tok_s > pc.decode_tok_s


def test_pre_xqa_trt_llm_reads_gqa_cache_once_per_query_head() -> None:
    """TensorRT-LLM < v0.8 ("trt-llm-2023"): GQA decode reads each KV head once per query head, so
    its KV bytes scale with the group size (8 for Llama-3-70B's 64/8 heads); MHA models and the
    current engine are unaffected; long-context batched decode then slows, batch 1 short context
    barely."""
    big = resolve_model("llama-3-70b")
    mha = resolve_model("llama-2-7b")
    assert decode_kv_read_factor(big, "trt-llm-2023") == 8.0
    assert decode_kv_read_factor(big, "trt-llm") == 1.0
    assert decode_kv_read_factor(mha, "trt-llm-2023") == 1.0
    gpu = resolve_gpu("h100-sxm-80gb")
    kw = {"gpu": gpu.id, "count": 4, "tensor_parallel": 4, "precision": "fp8"}
    old = decode_step(resolve(big, plan(engine="trt-llm-2023", **kw), gpu), 256, 2048).seconds
    # 0.11: after XQA (0.8), before TensorRT-LLM picks its own all-reduce (0.12): both pay NCCL's ring,
    # so only the KV reads differ
    new = decode_step(resolve(big, plan(engine="trt-llm", engine_version="0.11", **kw), gpu), 256, 2048).seconds
    assert 2.0 < old / new < 8.0
    old1 = decode_step(resolve(big, plan(engine="trt-llm-2023", **kw), gpu), 1, 128).seconds
    new1 = decode_step(resolve(big, plan(engine="trt-llm", engine_version="0.11", **kw), gpu), 1, 128).seconds
    assert old1 / new1 < 1.1


def test_llama_cpp_without_flash_attention_reads_gqa_cache_once_per_query_head() -> None:
    """llama.cpp with -fa 0 broadcasts each KV head over its query heads in ggml_mul_mat: the cache is
    read group-size times (4 for Llama-3-8B's 32/8 heads); with flash attention once. On an RTX 3090 the
    XD-* rows measure tg512 / tg4096 (mean context ~256 vs ~2300) at 115.42 / 97.31 = 1.19 for Q4_K_M;
    one read of the cache gives ~4 %, the per-query-head reads ~15 %."""
    assert decode_kv_read_factor(ARCH, "llama.cpp", flash_attention=False) == 4.0
    assert decode_kv_read_factor(ARCH, "llama.cpp-metal", flash_attention=False) == 4.0
    assert decode_kv_read_factor(ARCH, "llama.cpp", flash_attention=True) == 1.0
    assert decode_kv_read_factor(ARCH, "vllm", flash_attention=False) == 1.0
    gpu = resolve_gpu("rtx-3090")
    kw = {"gpu": gpu.id, "engine": "llama.cpp", "precision": "q4_k_m", "engine_version": "b2824"}
    off = resolve(ARCH, plan(flash_attention=False, **kw), gpu)
    on = resolve(ARCH, plan(flash_attention=True, **kw), gpu)
    slow_down_off = decode_step(off, 1, 2304).seconds / decode_step(off, 1, 256).seconds
    slow_down_on = decode_step(on, 1, 2304).seconds / decode_step(on, 1, 256).seconds
    assert 1.06 < slow_down_off < 1.25  # measured 115.42 / 97.31 = 1.19 (XD-* README, 3090 8B Q4_K_M)
    assert slow_down_on < 1.05


def test_transformers_dynamic_cache_copies_the_whole_cache_every_decode_step() -> None:
    """HF transformers' dynamic cache grows by torch.cat: each decode step reads the cache for attention
    and reads + writes it once more for the concatenation (efficiency.KV_EXTRA_PASSES_PER_STEP), so its
    KV bytes are 3x vLLM's. Llama-2-7B fp16 (512 KiB of cache per token) on an A100 80GB at batch 16 and
    1,024 tokens: 8 GiB of cache, three passes = 25.8 GB more memory traffic than at 1 token, at the
    engine's HBM bandwidth (0.60 x 2,039 GB/s) ~21 ms; optimum's benchmark measured ~30 ms per step for
    this much growth on Llama-2-13B (OPTGPTQ-0026 vs -0080)."""
    mha = resolve_model("llama-2-7b")
    assert decode_kv_read_factor(mha, "transformers") == 3.0
    assert decode_kv_read_factor(mha, "vllm") == 1.0
    gpu = resolve_gpu("a100-sxm-80gb")
    r = resolve(mha, plan(engine="transformers", precision="fp16", gpu=gpu.id), gpu)
    grown = decode_step(r, 16, 1024).memory_s - decode_step(r, 16, 1).memory_s
    kv_bytes = 16 * 1023 * 32 * 2 * 4096 * 2
    bw = eff.BW_EFF["transformers"]["hbm"] * gpu.memory_bandwidth_gb_s * 1e9
    assert grown == pytest.approx(3 * kv_bytes / bw, rel=0.01)
    assert decode_step(r, 16, 1024).seconds > decode_step(r, 16, 1).seconds + 0.5 * grown


def test_old_transformers_prefill_runs_the_lm_head_on_every_prompt_token() -> None:
    """transformers < 4.45 returns logits for every prompt position: the head's 2 x params FLOPs per
    prompt token, not once per sequence (Llama-2-7B: 4096 x 32000 head parameters)."""
    arch = resolve_model("llama-2-7b")
    last = prefill_cost(arch, 13.5e9, 2.0, 4, 512)
    every = prefill_cost(arch, 13.5e9, 2.0, 4, 512, all_logits=True)
    assert every.flops - last.flops == pytest.approx(4 * 2.0 * 4096 * 32000 * 511, rel=1e-6)


def test_transformers_quantised_prefill_at_the_fp16_gemm_rate_with_launches_hidden() -> None:
    """HF transformers' GPTQ prefill runs its GEMMs at the 16-bit rate (efficiency.DEQUANT_TO_FP16_GEMM_ENGINES)
    and its host time is hidden behind a prefill's long GEMMs (HOST_LAUNCH_OVERLAPPED): Llama-2-13B GPTQ
    512-token prompts on an A100 take as long as fp16 (OPTGPTQ-0033 95 ms vs -0031 99 ms). NF4 adds
    bitsandbytes' de-quantised copy (4 bytes per quantised parameter) as a kernel of its own: ~50 ms at
    batch 1 (OPTGPTQ-0034: +42 ms)."""
    arch = resolve_model("meta-llama/Llama-2-13b-chat-hf")
    gpu = resolve_gpu("a100-sxm-80gb")

    def r(precision: str, engine: str = "transformers") -> ResolvedPlan:
        return resolve(arch, plan(engine=engine, precision=precision, gpu=gpu.id, engine_version="4.37.2"), gpu)
    fp16, gptq, nf4 = r("fp16"), r("gptq"), r("nf4")
    assert prefill_pass(gptq, 1, 512).seconds <= prefill_pass(fp16, 1, 512).seconds
    assert prefill_pass(gptq, 16, 512).seconds == pytest.approx(prefill_pass(fp16, 16, 512).seconds, rel=0.02)
    # vLLM's quantised prefill keeps the MMQ-style discount
    assert prefill_pass(r("gptq", "vllm"), 16, 512).seconds > 1.15 * prefill_pass(r("fp16", "vllm"), 16, 512).seconds
    copy_s = (13.0e9 - 5120 * 32000) * 4.0 / (eff.DEQUANT_COPY_BW_EFF * gpu.memory_bandwidth_gb_s * 1e9)
    extra = prefill_pass(nf4, 1, 512).seconds - prefill_pass(gptq, 1, 512).seconds
    assert extra == pytest.approx(copy_s, rel=0.1)


def test_bitsandbytes_4bit_linears_cost_more_per_call_than_gptq_kernels() -> None:
    """Batch-1 decode under HF transformers: bitsandbytes' Linear4bit pays efficiency.BNB4_LINEAR_S per
    call, the GPTQ kernels TRANSFORMERS_QUANT_LINEAR_S; NF4 then decodes Llama-2-13B at ~0.7x fp16 on an
    A100 (measured 22.2 vs 32.9 tok/s, OPTGPTQ-0054/-0051; 0.75x for Mistral-7B in bitsandbytes issue #611)
    and GPTQ at about fp16's speed (31.6-34.5 tok/s, OPTGPTQ-0052/-0053)."""
    arch = resolve_model("meta-llama/Llama-2-13b-chat-hf")
    gpu = resolve_gpu("a100-sxm-80gb")

    def step(precision: str) -> float:
        r = resolve(arch, plan(engine="transformers", precision=precision, gpu=gpu.id), gpu)
        return float(decode_step(r, 1, 257).seconds)
    nf4, gptq, fp16 = step("nf4-nodq"), step("gptq"), step("fp16")
    assert 0.6 < fp16 / nf4 < 0.8
    assert 0.9 < fp16 / gptq < 1.1


def test_transformers_batch1_decode_is_host_bound_and_scales_with_layers_not_bytes() -> None:
    """Eager PyTorch launches asynchronously: a decode step takes about the longer of the host's Python time
    (efficiency.LAYER_OVERHEAD_S per layer, ~0.75 ms for HF transformers) and the GPU's, not their sum
    (HOST_LAUNCH_OVERLAPPED). At batch 1 on an A100 the host is the longer, so Llama-2-13B (40 layers, 26 GB)
    decodes ~1.25x slower than Llama-2-7B (32 layers, 13.5 GB), not ~1.9x as the bytes would say; vLLM
    (CUDA graphs) follows the bytes. The optimum benchmark measures Llama-2-13B fp16 at 30.4 ms per token
    (OPTGPTQ-0051), host-bound at ~0.7 ms per layer."""
    gpu = resolve_gpu("a100-sxm-80gb")

    def step(model: str, engine: str) -> float:
        arch = resolve_model(model)
        r = resolve(arch, plan(engine=engine, precision="fp16", gpu=gpu.id), gpu)
        return float(decode_step(r, 1, 256).seconds)
    hf = step("meta-llama/Llama-2-13b-chat-hf", "transformers") / step("llama-2-7b", "transformers")
    vllm = step("meta-llama/Llama-2-13b-chat-hf", "vllm") / step("llama-2-7b", "vllm")
    assert 1.1 < hf < 1.45 < 1.6 < vllm
    r13 = resolve(resolve_model("meta-llama/Llama-2-13b-chat-hf"), plan(engine="transformers", precision="fp16",
                                                                        gpu=gpu.id), gpu)
    assert decode_step(r13, 1, 256).bound == "host" and decode_step(r13, 64, 256).bound != "host"
    assert step("meta-llama/Llama-2-13b-chat-hf", "transformers") == pytest.approx(30.4e-3, rel=0.1)


def test_transformers_eager_attention_adds_host_time_per_layer_in_decode() -> None:
    """Unfused attention in eager transformers launches ~6 kernels per layer where SDPA launches one:
    efficiency.EAGER_ATTENTION_LAYER_S of host time per layer (Llama-2-13B: 40 x 150 us = 6 ms; the optimum
    benchmark's 4.32 eager runs are ~6 ms slower per token than its 4.37 SDPA ones). Batch-1 decode is
    host-bound, so nearly all of it shows; engines with fused attention are unaffected."""
    arch = resolve_model("meta-llama/Llama-2-13b-chat-hf")
    gpu = resolve_gpu("a100-sxm-80gb")

    def r(flash: bool, engine: str = "transformers") -> ResolvedPlan:
        return resolve(arch, plan(engine=engine, precision="fp16", gpu=gpu.id, flash_attention=flash), gpu)
    extra = decode_step(r(False), 1, 768).seconds - decode_step(r(True), 1, 768).seconds
    host = 40 * eff.EAGER_ATTENTION_LAYER_S["transformers"]
    assert 0.8 * host < extra <= host
    assert 4e-3 < extra < 7e-3
    assert decode_step(r(False, "vllm"), 1, 768).seconds == decode_step(r(True, "vllm"), 1, 768).seconds


def test_llama_cpp_layer_split_gives_no_decode_speedup() -> None:
    gpu = resolve_gpu("rtx-3090")
    kw = {"gpu": "rtx-3090", "engine": "llama.cpp", "precision": "q4_k_m"}
    one = estimate_performance(resolve(ARCH, plan(**kw), gpu))
    two = estimate_performance(resolve(ARCH, plan(count=2, **kw), gpu))
    assert one.decode_tok_s is not None and two.decode_tok_s is not None
    assert two.decode_tok_s <= one.decode_tok_s


def test_llama_cpp_layer_split_pays_a_synchronisation_per_gpu_boundary() -> None:
    """Each GPU boundary of a layer split costs ggml's scheduler a copy + synchronise (~0.25 ms,
    efficiency.LLAMA_CPP_SPLIT_BOUNDARY_S), far more than the 8 KB hidden state's wire time: XD-* tg512
    of Llama-3-8B Q4_K_M on 1 and 4 RTX 3090s is 115.42 and 108.66 tok/s, 0.54 ms more per token over
    3 boundaries; on 4 A6000s 0.87 ms."""
    gpu = resolve_gpu("rtx-3090")
    kw = {"gpu": "rtx-3090", "engine": "llama.cpp", "precision": "q4_k_m", "engine_version": "b2824"}
    one = decode_step(resolve(ARCH, plan(**kw), gpu), 1, 256).seconds
    four = decode_step(resolve(ARCH, plan(count=4, **kw), gpu), 1, 256).seconds
    assert 0.5e-3 < four - one < 1.2e-3


def test_llama_cpp_prefill_gemms_stream_weights_at_the_serving_engines_hbm_figure() -> None:
    """llama.cpp's HBM decode bandwidth figure (its batch-1 mat-vecs' SM-bound rate on an H100 PCIe, 0.63 of the
    peak: performance.llama_cpp_sm_bound_fraction) is its mat-vec shortfall; a prefill's GEMMs stream their weights
    at efficiency.LLAMA_CPP_PREFILL_GEMM_BW_EFF_HBM (0.80). GDDR keeps its figure."""
    for gpu_id, fraction in (("h100-pcie-80gb", 0.80), ("rtx-a6000", eff.BW_EFF["llama.cpp-2024"]["gddr"])):
        gpu = resolve_gpu(gpu_id)
        r = resolve(ARCH, plan(gpu=gpu_id, engine="llama.cpp", engine_version="b2843", precision="fp16"), gpu)
        cost = prefill_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 512)
        assert prefill_pass(r, 1, 512).memory_s == pytest.approx(
            cost.bytes / (gpu.memory_bandwidth_gb_s * 1e9 * fraction), rel=1e-6)
    gpu = resolve_gpu("h100-pcie-80gb")
    r = resolve(ARCH, plan(gpu=gpu.id, engine="llama.cpp", engine_version="b2843", precision="fp16"), gpu)
    dec = decode_cost(r.arch, r.weight_bytes, r.kv_bytes_per_element, 1, 512)
    assert decode_step(r, 1, 512).memory_s == pytest.approx(
        dec.bytes / (gpu.memory_bandwidth_gb_s * 1e9 * llama_cpp_sm_bound_fraction(gpu)), rel=1e-6)


def test_llama_cpp_layer_split_pipelines_long_prompts_only() -> None:
    """llama.cpp PR #6017: micro-batches of 512 tokens overlap across the split's GPUs. One micro-batch
    gains nothing; 4096 tokens on 4 GPUs ideally gain 32/11 (8 micro-batches: llama_decode does not
    synchronise between the prompt's two 2048-token batches), of which 0.6 is credited
    (efficiency.LLAMA_CPP_PIPELINE_EFF)."""
    assert llama_cpp_pipeline_speedup(512, 4) == 1.0
    assert llama_cpp_pipeline_speedup(4096, 1) == 1.0
    assert llama_cpp_pipeline_speedup(4096, 4) == pytest.approx(1 + eff.LLAMA_CPP_PIPELINE_EFF * (32 / 11 - 1))
    assert llama_cpp_pipeline_speedup(2048, 4) == pytest.approx(1 + eff.LLAMA_CPP_PIPELINE_EFF * (16 / 7 - 1))
    assert llama_cpp_pipeline_speedup(1024, 4) < llama_cpp_pipeline_speedup(4096, 4)
    gpu = resolve_gpu("rtx-3090")
    kw = {"gpu": "rtx-3090", "engine": "llama.cpp", "precision": "f16"}
    one = prefill_pass(resolve(ARCH, plan(**kw), gpu), 1, 4096).seconds
    four = prefill_pass(resolve(ARCH, plan(count=4, **kw), gpu), 1, 4096).seconds
    assert one / four == pytest.approx(llama_cpp_pipeline_speedup(4096, 4), rel=0.05)
    short_one = prefill_pass(resolve(ARCH, plan(**kw), gpu), 1, 512).seconds
    short_four = prefill_pass(resolve(ARCH, plan(count=4, **kw), gpu), 1, 512).seconds
    assert short_four >= short_one


def test_moe_reads_only_active_experts(monkeypatch: pytest.MonkeyPatch) -> None:
    # the bytes read, at the dense rate (the fused MoE kernels' own rate: tests/test_moe_serving.py)
    monkeypatch.setitem(eff.MOE_EXPERT_BW_REL, "vllm", 1.0)
    moe = resolve_model("mixtral-8x7b")
    gpu = resolve_gpu("h100-sxm-80gb")
    p = Plan.model_validate(
        {"model": "mixtral-8x7b", "workload": {"precision": "bf16", "engine": "vllm"}, "hardware": {"gpu": gpu.id}}
    )
    t = decode_step(resolve(moe, p, gpu), 1, 512)
    total_bytes_t = moe.params().total * 2 / (gpu.memory_bandwidth_gb_s * 1e9 * 0.8)
    assert t.memory_s < 0.5 * total_bytes_t  # ~13B of 47B params read


def test_speculative_speedup_leviathan() -> None:
    # alpha = 0.8, k = 4: (1 - 0.8^5) / 0.2 = 3.3616 tokens per step; draft 5 % of target cost.
    assert speculative_speedup(4, 0.8, 0.05) == pytest.approx(3.3616 / 1.2, rel=1e-4)
    assert speculative_speedup(0, 0.5, 0.1) == pytest.approx(1.0)
    with pytest.raises(MlrigError):
        speculative_speedup(3, 1.5, 0.1)


def test_serving_curve_and_latency_target() -> None:
    gpu = resolve_gpu("h100-sxm-80gb")
    p = plan(gpu=gpu.id, prompt_tokens=1000, output_tokens=200)
    pts = serving_curve(resolve(ARCH, p, gpu), [1, 8, 64], kv_capacity_tokens=400_000)
    assert pts[0].throughput_tok_s < pts[1].throughput_tok_s < pts[2].throughput_tok_s
    assert pts[0].tok_s_per_user > pts[2].tok_s_per_user
    n = max_concurrency_for_latency(resolve(ARCH, p, gpu), 30.0, kv_capacity_tokens=400_000)
    assert 1 <= n <= 400_000 // 1200
    assert serving_curve(resolve(ARCH, p, gpu), [n], 400_000)[0].tok_s_per_user >= 30.0


def test_cpu_decode_and_offload_bound() -> None:
    # 8B Q4_K_M (4.58 GiB) on 76.8 GB/s dual-channel DDR5 at 65 %: ~10 tok/s
    assert 8 < cpu_decode_tok_s(ARCH, "q4_k_m") < 12


def _ngl(layers: int | None, engine: str = "llama.cpp") -> tuple[object, Performance]:
    from mlrig.estimators.memory import estimate_memory

    arch = resolve_model("llama-3.1-70b")
    gpu = resolve_gpu("rtx-4090")
    p = Plan.model_validate({"model": "llama-3.1-70b", "hardware": {"gpu": gpu.id}, "workload": {
        "precision": "q4_k_m", "engine": engine, "gpu_layers": layers, "prompt_tokens": 512, "output_tokens": 128}})
    mem = estimate_memory(resolve(arch, p, gpu))
    return mem, estimate_performance(resolve(arch, p, gpu), mem)


def test_llama_cpp_partial_offload_ngl() -> None:
    """-ngl N: N/L of the weights and KV on the GPU, the rest in host RAM and run by the CPU."""
    (all_mem, _), (half_mem, half), (cpu_mem, cpu), (_, quarter) = (
        _ngl(None), _ngl(40), _ngl(0), _ngl(20))
    assert _ngl(80)[0].breakdown == all_mem.breakdown and _ngl(99)[0].offload_fraction == 0.0  # -ngl 99: all
    assert half_mem.offload_fraction == 0.5 and half_mem.fits and not all_mem.fits
    assert half_mem.breakdown.weights_gib == pytest.approx(all_mem.breakdown.weights_gib / 2)
    assert half_mem.breakdown.host_ram_gib > all_mem.breakdown.weights_gib / 2
    assert cpu_mem.breakdown.weights_gib == 0.0 and cpu_mem.breakdown.host_ram_gib > all_mem.breakdown.weights_gib
    # more layers on the GPU never decodes slower; all on the CPU is host-bandwidth bound (~40 GB at ~50 GB/s)
    assert cpu.decode_tok_s < quarter.decode_tok_s < half.decode_tok_s
    assert 0.8 < cpu.decode_tok_s < 1.6 and cpu.bound == "offload"


def test_ngl_needs_llama_cpp() -> None:
    with pytest.raises(MlrigError, match=r"llama\.cpp"):
        _ngl(20, engine="vllm")


def test_training_flops_and_helpers() -> None:
    model, hw = train_flops_per_token(7e9, 32, 4096, 2048, recompute=True)
    assert model == pytest.approx(6 * 7e9 + 12 * 32 * 4096 * 2048)
    assert hw == pytest.approx(model + 2 * 7e9 + 4 * 32 * 4096 * 2048)
    # a frozen base (LoRA/QLoRA) has no weight gradients: 4N of linear work, attention's backward unchanged
    lora_model, lora_hw = train_flops_per_token(7e9, 32, 4096, 2048, recompute=True, frozen_base=True)
    assert lora_model == pytest.approx(model - 2 * 7e9)
    assert lora_hw == pytest.approx(lora_model + 2 * 7e9 + 4 * 32 * 4096 * 2048)
    assert chinchilla_tokens(70e9) == pytest.approx(1.4e12)
    assert checkpoint_bytes(7e9) == pytest.approx(7e9 * 14)
    assert young_daly_interval_s(60.0, 24 * 3600.0) == pytest.approx((2 * 60 * 86400) ** 0.5)
    assert pipeline_bubble(4, 12) == pytest.approx(3 / 15)
    assert data_parallel_comm_s(1e9, 8, 50.0, 5.0, overlap=0.0) == pytest.approx(2 * 7 / 8 * 0.02 + 14 * 5e-6)
    # ZeRO-3 / FSDP: reduce-scatter of the grads + two all-gathers of the (stored) parameters. FSDP-QLoRA on
    # two GPUs: 10 MB of adapter grads, 3.8 GB of NF4 weights gathered twice, over 8 GB/s, nothing to hide behind
    t = data_parallel_comm_s(1e7, 2, 8.0, 0.0, zero_stage=3, overlap=0.7, param_bytes=3.8e9, hide_s=0.0)
    assert t == pytest.approx(0.5 * (1e7 + 2 * 3.8e9) / 8e9)
    # the hidden part is at most the computation there is to hide behind
    assert data_parallel_comm_s(1e7, 2, 8.0, 0.0, zero_stage=3, param_bytes=3.8e9, hide_s=0.1) == \
        pytest.approx(t - 0.1)
    assert data_parallel_comm_s(1e9, 8, 50.0, 0.0, zero_stage=3) == pytest.approx(3 * 7 / 8 * 0.02 * 0.3)


def test_training_performance_fields() -> None:
    gpu = resolve_gpu("h100-sxm-80gb")
    p = Plan.model_validate(
        {
            "model": "llama-3-8b",
            "workload": {"task": "pretrain", "batch_size": 4},
            "training": {"seq_len": 4096, "tokens_to_train": 1e12},
            "hardware": {"gpu": gpu.id, "count": 8},
        }
    )
    perf = estimate_performance(resolve(ARCH, p, gpu), None)
    assert perf.train_tokens_per_s and perf.mfu and perf.time_to_train_s and perf.step_time_s
    assert 0.3 < perf.mfu < 0.65
    assert perf.time_to_train_s == pytest.approx(1e12 / perf.train_tokens_per_s)


def _pretrain(count: int, **hardware: object) -> tuple[Plan, Performance]:
    gpu = resolve_gpu("h100-sxm-80gb")
    p = Plan.model_validate({
        "model": "llama-3-8b", "workload": {"task": "pretrain", "batch_size": 4},
        "training": {"seq_len": 4096, "tokens_to_train": 1e12},
        "hardware": {"gpu": gpu.id, "count": count, **hardware}})
    return p, estimate_performance(resolve(ARCH, p, gpu), None)


def test_hfu_counts_the_recomputed_forward() -> None:
    p, perf = _pretrain(8)
    assert p.training and p.training.gradient_checkpointing
    model, hw = train_flops_per_token(ARCH.params().active, ARCH.num_layers, attention_width(ARCH), 4096,
                                      recompute=True)
    assert perf.hfu == pytest.approx(perf.mfu * hw / model)
    q = p.model_copy(update={"training": p.training.model_copy(update={"gradient_checkpointing": False})})
    assert estimate_performance(resolve(ARCH, q, resolve_gpu("h100-sxm-80gb")), None).hfu == pytest.approx(
        estimate_performance(resolve(ARCH, q, resolve_gpu("h100-sxm-80gb")), None).mfu)


def test_training_run_hand_checked() -> None:
    """Llama-3-8B full AdamW on 8 H100s, storage 2.5 GB/s, MTBF 100 h: checkpoint 14 B/param, written
    in bytes / 2.5e9 s; Young/Daly interval sqrt(2 C M); tokenised data at 4 B/token (128k vocab)."""
    p, perf = _pretrain(8, storage_gb_s=2.5, mtbf_hours=100.0)
    run = estimate_training_run(resolve(ARCH, p, resolve_gpu("h100-sxm-80gb")), perf)
    n = ARCH.params().total
    assert run.checkpoint_gib == pytest.approx(n * 14 / 2**30)
    assert run.checkpoint_write_s == pytest.approx(n * 14 / 2.5e9)
    assert run.checkpoint_interval_s == pytest.approx((2 * run.checkpoint_write_s * 100 * 3600) ** 0.5)
    assert run.checkpoint_overhead == pytest.approx((2 * run.checkpoint_write_s / (100 * 3600)) ** 0.5)
    assert run.data_bytes_per_token == 4.0 and tokenised_bytes_per_token(32_000) == 2.0
    assert run.data_read_mb_s == pytest.approx(perf.train_tokens_per_s * 4 / 1e6)
    assert run.compute_optimal_tokens == pytest.approx(20 * n) and run.data_pipeline_ok
    assert run.notes == []  # nothing assumed: storage and MTBF were given


def test_more_gpus_fail_more_often_and_checkpoint_more_often() -> None:
    h100 = resolve_gpu("h100-sxm-80gb")
    runs = [estimate_training_run(resolve(ARCH, p, h100), perf) for p, perf in (_pretrain(n) for n in (1, 8, 64))]
    # Meta RSC-1 (arXiv 2410.21680): 6.50 failures per 1000 node-days of 8 GPUs ~ 29,500 GPU-hours
    assert runs[0].mtbf_hours == pytest.approx(GPU_HOURS_PER_INTERRUPTION)
    assert pytest.approx(29_538, rel=1e-3) == GPU_HOURS_PER_INTERRUPTION
    # the paper's own projection for a 16,384-GPU job: 1.8 h
    assert pytest.approx(1.8, abs=0.05) == GPU_HOURS_PER_INTERRUPTION / 16_384
    assert runs[0].mtbf_hours > runs[1].mtbf_hours > runs[2].mtbf_hours
    assert runs[0].checkpoint_interval_s > runs[1].checkpoint_interval_s > runs[2].checkpoint_interval_s
    assert any("MTBF" in note for note in runs[1].notes) and any("storage assumed" in n for n in runs[1].notes)


def test_slow_storage_makes_the_run_data_bound() -> None:
    p, perf = _pretrain(8, storage_gb_s=0.001)
    p = p.model_copy(update={"training": p.training.model_copy(update={"data_bytes_per_token": 1000.0})})
    # ~60k tok/s x 1 kB (e.g. image patches) >> 1 MB/s
    run = estimate_training_run(resolve(ARCH, p, resolve_gpu("h100-sxm-80gb")), perf)
    assert not run.data_pipeline_ok and any("data bound" in note for note in run.notes)


def test_bad_engine_is_one_line_error() -> None:
    with pytest.raises(MlrigError, match="unknown engine"):
        estimate_performance(resolve(ARCH, plan(engine="warp-drive"), resolve_gpu("rtx-4090")), None)


def test_lm_head_params_untied_tied_and_encoder() -> None:
    # Llama-3-8B: untied 128256 x 4096 head; Gemma-2 ties the head to its embedding table.
    assert lm_head_params(ARCH) == 128_256 * 4096
    gemma = resolve_model("gemma-2-27b")
    assert gemma.tie_word_embeddings
    assert lm_head_params(gemma) == gemma.params().embedding


@pytest.mark.parametrize(
    "precision,kv", [("bf16", "bf16"), ("fp16", "fp16"), ("fp32", "fp32"), ("q4_k_m", "fp16"), ("awq", "fp16")]
)
def test_default_kv_precision(precision: str, kv: str) -> None:
    assert default_kv_precision(precision) == kv


def test_intel_arc_under_llama_cpp_is_capped_at_the_vector_rate() -> None:
    """V10879-0015/0017: llama.cpp's Vulkan prefill on Arc reaches ~60-75% of the FP32 *vector* rate,
    so the XMX figure (7x higher on the A770) is not the ceiling there; other engines keep XMX."""
    from mlrig.estimators.performance import peak_tflops

    arc = resolve_gpu("arc-a770-16gb")
    assert arc.fp16_tflops_dense and arc.fp32_tflops and arc.fp16_tflops_dense > 5 * arc.fp32_tflops
    assert peak_tflops(arc, "fp16", "llama.cpp") == arc.fp32_tflops
    assert peak_tflops(arc, "fp16", "vllm") == arc.fp16_tflops_dense


def test_intel_arc_decode_bandwidth_is_capped_but_not_gaudi() -> None:
    """V10879-0016/0018: llama.cpp (Vulkan) streams weights at ~36-59 % of an Arc card's peak; the cap
    applies to llama.cpp on GDDR Arc only. vLLM's XPU build keeps its GDDR figure (VLLMARC-*: the cap
    made its TPOT ~2x too slow); NVIDIA GDDR and Intel's HBM Gaudi stay on the engine's table."""
    from mlrig.estimators.performance import bandwidth_efficiency

    assert bandwidth_efficiency(resolve_gpu("arc-b580"), "llama.cpp") == eff.INTEL_GDDR_BW_EFF_CAP
    vllm_gddr = eff.BW_EFF["vllm"]["gddr"]
    assert bandwidth_efficiency(resolve_gpu("arc-b580"), "vllm") == vllm_gddr > eff.INTEL_GDDR_BW_EFF_CAP
    for engine in ("llama.cpp", "vllm"):
        assert bandwidth_efficiency(resolve_gpu("rtx-4090"), engine) == eff.BW_EFF[engine]["gddr"]
        assert bandwidth_efficiency(resolve_gpu("gaudi2"), engine) == eff.BW_EFF[engine]["hbm"]
    # hand check: Llama-2-7B Q4_0 (3.56 GiB + KV) on the A770's 560 GB/s at <= 50 % -> <= 73 tok/s
    a770 = Plan.model_validate({"model": "llama-2-7b", "hardware": {"gpu": "arc-a770-16gb"}, "workload": {
        "precision": "q4_0", "engine": "llama.cpp", "batch_size": 1, "prompt_tokens": 0, "output_tokens": 128}})
    decode = estimate_performance(resolve(resolve_model("llama-2-7b"), a770, resolve_gpu("arc-a770-16gb"))).decode_tok_s
    assert 52.56 < decode <= 560e9 * 0.50 / (3.56 * 2**30)  # above the Vulkan row, below the cap's ceiling


def test_every_engine_family_has_every_factor() -> None:
    """A family missing from one table would be a KeyError at plan time, not a one-line error."""
    tables = (eff.BW_EFF, eff.COMPUTE_EFF, eff.LAYER_OVERHEAD_S, eff.PREFILL_TOKEN_LAYER_S, eff.STEP_OVERHEAD_S)
    for table in tables:
        assert set(table) == set(eff.ENGINES)
    assert eff.BW_EFF["trt-llm-2023"] == eff.BW_EFF["trt-llm"]


@pytest.mark.parametrize(("row_id", "gpu", "published_tok_s"), [
    # llama.cpp discussion #4167 (Metal, llama-bench tg128, Llama-2-7B Q4_0), via the calibration rows named
    ("A4167-0048", "Apple M2 8-core GPU 24GB", 21.7),  # 100 GB/s: ~90 % of the figure reached
    ("A4167-0066", "Apple M2 Pro 19-core GPU 32GB", 38.86),  # 200 GB/s
    ("A4167-0090", "Apple M2 Ultra 76-core GPU 192GB", 94.27),  # 800 GB/s: far less of it
    ("A4167-0078", "Apple M2 Max 38-core GPU 96GB", 65.95),  # 400 GB/s
    # (the M1 Ultra 48-core, A4167-0038 at 74.93, stays ~20 % fast: its GPU falls further short)
])
def test_apple_decode_narrow_and_wide_chips_near_published(row_id: str, gpu: str, published_tok_s: float) -> None:
    """One Apple bandwidth factor left the narrow chips ~17 % slow and the Ultras ~20 % fast
    (efficiency.UNIFIED_BW_EFF_BY_WIDTH; the M2 8-core row was 17 % under); through the planner each
    lands within 15 % of its row."""
    from mlrig.planner import evaluate

    result = evaluate({"model": "meta-llama/Llama-2-7b-hf", "hardware": {"gpu": gpu},
                       "workload": {"precision": "q4_0", "engine": "llama.cpp", "prompt_tokens": 0,
                                    "output_tokens": 128, "batch_size": 1}})
    assert result.performance is not None and result.performance.decode_tok_s is not None
    assert result.performance.decode_tok_s == pytest.approx(published_tok_s, rel=0.15), row_id


def test_apple_narrow_chip_reaches_more_of_its_bandwidth_than_a_wide_one() -> None:
    from mlrig.estimators.performance import bandwidth_efficiency

    narrow, wide = resolve_gpu("Apple M2 Pro 19-core GPU 32GB"), resolve_gpu("Apple M2 Ultra 76-core GPU 192GB")
    assert bandwidth_efficiency(narrow, "llama.cpp-metal") > bandwidth_efficiency(wide, "llama.cpp-metal")
    # engines without their own split keep the one unified figure
    assert bandwidth_efficiency(narrow, "mlx") == bandwidth_efficiency(wide, "mlx") == eff.BW_EFF["mlx"]["unified"]


def _metal_decode_tok_s(model: str, gpu: str, precision: str, **gpu_overrides: float) -> float:
    from mlrig.planner import evaluate

    result = evaluate({"model": model, "hardware": {"gpu": gpu},
                       "workload": {"precision": precision, "engine": "llama.cpp", "prompt_tokens": 0,
                                    "output_tokens": 512, "batch_size": 1, "flash_attention": False}},
                      gpu_overrides=gpu_overrides or None)
    assert result.performance is not None and result.performance.decode_tok_s is not None
    return result.performance.decode_tok_s


def test_metal_kquant_matvec_dequantisation_time_hand_checked() -> None:
    """ggml-metal's Q4_K mat-vec spends efficiency.MATVEC_DEQUANT_OPS ALU operations per weight at the
    GPU's FP32 rate: Llama-3-8B (7.50 G weights in its GEMMs, the LM head's 0.53 G included) on an M1 Max
    32-core (10.4 TFLOPS) takes 7.50e9 x 20 / 10.4e12 = 14.4 ms per token; an M3 Max (Metal family
    Apple9, dual-issue ALUs) divides its 14.13 TFLOPS-rate time by 1.8. F16 weights take none; up to 8
    tokens each column unpacks again, beyond that ggml's mat-mat kernel does it once (the time stays at
    8 columns')."""
    from mlrig.estimators.performance import apple_alu_speedup, matmul_params, matvec_dequant_s
    from mlrig.quant import parse_precision

    arch = resolve_model("meta-llama/Meta-Llama-3-8B-Instruct")
    m1, m3 = resolve_gpu("Apple M1 Max 32-core GPU 64GB"), resolve_gpu("Apple M3 Max 40-core GPU 64GB")
    assert apple_alu_speedup(m1) == 1.0 and apple_alu_speedup(m3) == 1.8
    weights = matmul_params(arch)
    assert weights == pytest.approx(7.50e9, rel=0.01)

    def dequant_s(gpu: object, precision: str, batch: int) -> float:
        cost = decode_cost(arch, 5e9, 2.0, batch, 256)
        return float(matvec_dequant_s(cost, gpu, "llama.cpp-metal", parse_precision(precision).family, batch))

    assert dequant_s(m1, "q4_k_m", 1) == pytest.approx(weights * 20 / 10.4e12, rel=1e-6)
    assert dequant_s(m1, "q4_k_m", 1) == pytest.approx(14.4e-3, rel=0.01)
    assert dequant_s(m3, "q4_k_m", 1) == pytest.approx(weights * 20 / (14.13e12 * 1.8), rel=1e-6)
    assert dequant_s(m1, "fp16", 1) == 0.0
    assert dequant_s(m1, "q4_k_m", 4) == pytest.approx(4 * dequant_s(m1, "q4_k_m", 1), rel=1e-6)
    assert dequant_s(m1, "q4_k_m", 32) == pytest.approx(dequant_s(m1, "q4_k_m", 8), rel=1e-6)
    # only llama.cpp's Metal kernels: CUDA's mat-vecs (int8 dot products) and MLX keep none
    cost = decode_cost(arch, 5e9, 2.0, 1, 256)
    assert matvec_dequant_s(cost, m1, "mlx", "kquant", 1) == 0.0
    assert matvec_dequant_s(cost, resolve_gpu("RTX 3090"), "llama.cpp", "kquant", 1) == 0.0


def test_metal_kquant_decode_slows_with_less_alu_f16_does_not() -> None:
    """Invariant of the ALU-bound de-quantisation: halving an M1 Max's FP32 rate (same bandwidth) slows
    its Q4_K_M decode by more than a fifth, while F16 decode (bandwidth-bound, no unpacking) moves < 2 %."""
    m1 = "Apple M1 Max 32-core GPU 64GB"
    model = "meta-llama/Meta-Llama-3-8B-Instruct"
    half = {"fp32_tflops": 5.2, "fp16_tflops_dense": 5.2}
    assert _metal_decode_tok_s(model, m1, "q4_k_m", **half) < 0.8 * _metal_decode_tok_s(model, m1, "q4_k_m")
    assert _metal_decode_tok_s(model, m1, "fp16", **half) == pytest.approx(_metal_decode_tok_s(model, m1, "fp16"),
                                                                           rel=0.02)


@pytest.mark.parametrize(("row_id", "model", "gpu", "precision", "published_tok_s"), [
    # XiongjieDai/GPU-Benchmarks-on-LLM-Inference (llama-bench tg512, b2795/b2797), via the calibration rows
    ("XD-0187", "meta-llama/Meta-Llama-3-8B-Instruct", "Apple M1 Max 32-core GPU 64GB", "q4_k_m", 35.73),
    ("XD-0199", "meta-llama/Meta-Llama-3-70B-Instruct", "Apple M1 Max 32-core GPU 64GB", "q4_k_m", 4.34),
    ("XD-0229", "meta-llama/Meta-Llama-3-8B-Instruct", "Apple M3 Max 40-core GPU 64GB", "q4_k_m", 48.97),
    ("XD-0241", "meta-llama/Meta-Llama-3-70B-Instruct", "Apple M3 Max 40-core GPU 64GB", "q4_k_m", 7.65),
    ("XD-0235", "meta-llama/Meta-Llama-3-8B-Instruct", "Apple M3 Max 40-core GPU 64GB", "fp16", 22.04),
    # llama.cpp discussion #4167 (tg128, Llama-2-7B F16): the two-die Ultra reaches less of its figure
    ("A4167-0086", "meta-llama/Llama-2-7b-hf", "Apple M2 Ultra 76-core GPU 192GB", "fp16", 41.02),
])
def test_metal_decode_near_published_across_generations(row_id: str, model: str, gpu: str, precision: str,
                                                        published_tok_s: float) -> None:
    """A flat k-quant bandwidth factor (0.65) put the M3 Max's Q4_K_M rows 25-42 % slow while fitting the
    M1 Max's; with the de-quantisation as ALU time (Apple9's dual-issue ALUs on the M3) and the one-die
    Max at 0.85 of its bandwidth, every one lands within 15 %."""
    assert _metal_decode_tok_s(model, gpu, precision) == pytest.approx(published_tok_s, rel=0.15), row_id


def test_metal_explanation_names_the_unpacking_time() -> None:
    """The decode line says what the figure is made of: on an M1 Max a Q4_K_M decode is ALU-bound, so
    the bandwidth arithmetic alone (4.67 GB at 85 % of 400 GB/s: ~56 tok/s) would not add up to ~39."""
    from mlrig.planner import evaluate

    def explanation(precision: str, gpu: str = "Apple M1 Max 32-core GPU 64GB") -> str:
        perf = evaluate({"model": "meta-llama/Meta-Llama-3-8B-Instruct", "hardware": {"gpu": gpu},
                         "workload": {"precision": precision, "engine": "llama.cpp"}}).performance
        assert perf is not None and perf.explanation is not None
        return perf.explanation

    assert "14.4 ms of ALU time unpacking q4_k_m weights (20 ops each at 10.4 FP32 TFLOPS)" in explanation("q4_k_m")
    assert "compute bound" in explanation("q4_k_m")
    assert "x 1.8 dual issue" in explanation("q4_k_m", "Apple M3 Max 40-core GPU 64GB")
    assert "ALU time" not in explanation("fp16") and "ALU time" not in explanation("q4_k_m", "RTX 3090")


def test_apple_two_die_ultra_reaches_less_bandwidth_than_one_die_max() -> None:
    """Narrow (<= 300 GB/s) > one-die Max > two-die Ultra (UltraFusion) in llama.cpp Metal decode."""
    from mlrig.estimators.performance import bandwidth_efficiency

    pro, mx, ultra = (resolve_gpu(n) for n in ("Apple M2 Pro 19-core GPU 32GB", "Apple M2 Max 38-core GPU 96GB",
                                               "Apple M2 Ultra 76-core GPU 192GB"))
    effs = [bandwidth_efficiency(g, "llama.cpp-metal") for g in (pro, mx, ultra)]
    assert effs == sorted(effs, reverse=True) and len(set(effs)) == 3


def test_bitsandbytes_nf4_batched_decode_pays_for_its_dequantised_copy() -> None:
    """HF transformers + bitsandbytes NF4 (OPTGPTQ-0054..0086, Llama-2-13B on an A100): one sequence decodes
    through the fused 4-bit gemv (45 ms a step), but from batch 2 each linear is de-quantised to a 16-bit
    copy first, so a step costs more than fp16's (68-82 ms against 30-40 ms)."""
    from mlrig.planner import evaluate

    def tpot(precision: str, batch: int) -> float:
        plan = {"model": "llama-2-13b", "hardware": {"gpu": "A100 SXM4 80GB"},
                "workload": {"engine": "transformers", "engine_version": "4.37.2", "precision": precision,
                             "batch_size": batch, "prompt_tokens": 1, "output_tokens": 512}}
        perf = evaluate(plan).performance
        assert perf is not None and perf.tpot_ms is not None
        return perf.tpot_ms

    assert tpot("nf4-nodq", 1) < tpot("nf4-nodq", 2)
    for batch, measured in ((2, 68.0), (16, 82.29)):
        assert tpot("nf4-nodq", batch) > 1.8 * tpot("fp16", batch)
        assert 0.8 < tpot("nf4-nodq", batch) / measured < 1.25


def test_batched_decode_adds_the_gemm_and_attention_kernels_rooflines() -> None:
    """A decode step runs its GEMMs and its attention kernels one after another, each bound by its own
    roofline: at batch 256 and 2,048 tokens held on an A100, Llama-3-8B's GEMMs are compute-bound and
    its KV reads memory-bound, so the step is the sum of the two, not one max over the totals (that
    would let GEMM arithmetic hide the KV reads). At batch 1 both are memory-bound: the two agree.
    Within a group compute and memory combine as a p-norm (efficiency.ROOFLINE_SMOOTHING_P)."""
    from mlrig.estimators.performance import decode_cost, pass_time

    p = eff.ROOFLINE_SMOOTHING_P

    def soft(a: float, b: float) -> float:
        return float((a**p + b**p) ** (1 / p))

    gpu = resolve_gpu("a100-sxm-80gb")
    r = resolve(ARCH, plan(gpu=gpu.id, batch_size=256), gpu)
    bw = gpu.memory_bandwidth_gb_s * 1e9 * eff.BW_EFF["vllm"]["hbm"]
    peak = gpu.tensor_tflops("bf16") * 1e12 * eff.COMPUTE_EFF["vllm"]["hbm"]
    for batch in (1, 256):
        cost = decode_cost(ARCH, r.weight_bytes, r.kv_bytes_per_element, batch, 2048)
        t = pass_time(cost, gpu, "vllm", r.precision, layers=32)
        gemm = soft((cost.flops - cost.attn_flops) / peak, cost.weight_bytes / bw)
        attn = soft(cost.attn_flops / peak, cost.kv_bytes / bw)
        overhead = 32 * eff.LAYER_OVERHEAD_S["vllm"] + eff.STEP_OVERHEAD_S["vllm"]
        assert t.seconds == pytest.approx(gemm + attn + overhead, rel=1e-9)
        single_max = max(cost.flops / peak, cost.bytes / bw) + overhead
        if batch == 1:
            assert t.seconds == pytest.approx(single_max, rel=0.005)
        else:  # GEMMs compute-bound (256 x 15 GFLOP), 256 x 2,048 x 128 KiB of KV read: well above one max
            assert (cost.flops - cost.attn_flops) / peak > cost.weight_bytes / bw
            assert t.seconds > 1.2 * single_max


def test_soft_roofline_is_the_max_when_one_side_dominates() -> None:
    from mlrig.estimators.performance import _soft_max

    assert _soft_max(1.0, 0.0) == 1.0 and _soft_max(0.0, 0.0) == 0.0
    assert _soft_max(1.0, 0.05) == pytest.approx(1.0, rel=0.002)  # batch-1 decode: compute 5 % of memory
    assert _soft_max(2.0, 2.0) == pytest.approx(2.0 * 2 ** (1 / eff.ROOFLINE_SMOOTHING_P))
    assert 4.0 < _soft_max(3.0, 4.0) < 7.0  # between the max and the sum


def test_gpt_fast_on_an_intel_gpu_launches_every_kernel_without_a_graph() -> None:
    """torch.compile's reduce-overhead mode captures no graph on Intel GPUs (Inductor's cudagraph trees
    accept CUDA devices only), so gpt-fast / torchao pays the host's launches per layer there
    (efficiency.NO_GRAPH_LAYER_OVERHEAD_S_INTEL, ~180 us from SGLang's XPU-graph PR) instead of its graph
    replay's 25 us. Hand check, Llama-2-7B bf16 at batch 1 on a Max 1100 (1228.8 GB/s): the step is the
    same roofline plus 32 x (180 - 25) us. Other engines there, and gpt-fast on an A100, are unchanged."""
    from mlrig.estimators.hardware import graph_replay_missing
    from mlrig.estimators.performance import layer_overhead_s

    max1100, a100 = resolve_gpu("Intel Data Center GPU Max 1100"), resolve_gpu("a100-sxm-80gb")
    assert graph_replay_missing("gpt-fast", max1100) and not graph_replay_missing("gpt-fast", a100)
    assert not graph_replay_missing("vllm", max1100)
    assert layer_overhead_s("gpt-fast", max1100) == eff.NO_GRAPH_LAYER_OVERHEAD_S_INTEL == 180e-6
    assert layer_overhead_s("gpt-fast", a100) == eff.LAYER_OVERHEAD_S["gpt-fast"]
    assert layer_overhead_s("vllm", max1100) == eff.LAYER_OVERHEAD_S["vllm"]

    arch = resolve_model("meta-llama/Llama-2-7b-chat-hf")
    p = Plan.model_validate({"model": "meta-llama/Llama-2-7b-chat-hf", "hardware": {"gpu": max1100.id},
                             "workload": {"precision": "bf16", "engine": "gpt-fast", "batch_size": 1,
                                          "prompt_tokens": 6, "output_tokens": 200}})
    r = resolve(arch, p, max1100)
    step = decode_step(r, 1, 106)
    cost = decode_cost(arch, r.weight_bytes, r.kv_bytes_per_element, 1, 106)
    roofline = cost.bytes / (1228.8e9 * eff.BW_EFF["gpt-fast"]["hbm"])
    expected = roofline + 32 * 180e-6 + eff.STEP_OVERHEAD_S["gpt-fast"]
    assert step.seconds == pytest.approx(expected, rel=1e-3)
    # the held-out torchao XPU row (TORCHAO-0027: 42.2 tok/s) was 55 % slower than the graph-replay figure
    assert 1 / step.seconds == pytest.approx(42.2, rel=0.20)


def test_transformers_gptq_kernels_pay_per_block_of_rows() -> None:
    """HF transformers' GPTQ kernels at batch > 1 (efficiency.GPTQ_KERNEL_ROWS): ExLlama v1 (the default
    kernel of transformers 4.32) reads and de-quantises the weights once per input row below 8 rows and
    reconstructs a 16-bit copy from 8; ExLlamaV2 takes 8 rows per pass; Marlin one pass for all. Hand check
    of the step's bytes, then the optimum benchmark's Llama-2-13B rows on an A100 SXM4: ExLlamaV2 at batch 16
    48.1 ms per step against Marlin's 31.7 (OPTGPTQ-0082 / -0084); ExLlama v1 at batch 8 108.73 tok/s
    (OPTGPTQ-0022, 1.85x too fast before)."""
    from mlrig.estimators.performance import _decode_cost, matmul_params, transformers_gptq_kernel
    from mlrig.planner import evaluate
    from mlrig.quant import GROUP128_INT4_BPW

    gpu = resolve_gpu("a100-sxm-80gb")
    arch = resolve_model("llama-2-13b")

    def resolved(precision: str, version: str) -> ResolvedPlan:
        p = Plan.model_validate({"model": "llama-2-13b", "hardware": {"gpu": gpu.id}, "workload": {
            "engine": "transformers", "engine_version": version, "precision": precision, "batch_size": 1,
            "prompt_tokens": 1, "output_tokens": 512}})
        return resolve(arch, p, gpu)

    v1, v2, marlin = resolved("gptq", "4.32"), resolved("gptq_exllamav2", "4.37.2"), resolved("gptq-marlin", "4.37.2")
    assert [transformers_gptq_kernel(r.precision, r.workload.engine_version) for r in (v1, v2, marlin)] == [
        "exllama", "exllamav2", None]
    assert transformers_gptq_kernel(resolved("gptq", "4.49.0").precision, "4.49.0") is None
    quantised = matmul_params(arch) - lm_head_params(arch)
    q_bytes = quantised * GROUP128_INT4_BPW / 8
    plain = _decode_cost(marlin, "transformers", 4, 256)
    rel = eff.GPTQ_FUSED_PASS_REL_EFF
    # v1 at 4 rows: 4 passes; at 8 rows: one 4-bit read + a reconstructed 16-bit copy written and read
    assert _decode_cost(v1, "transformers", 4, 256).weight_bytes == pytest.approx(
        plain.weight_bytes + 4 * q_bytes / rel - q_bytes)
    eight = _decode_cost(v1, "transformers", 8, 256)
    assert eight.other_bytes == pytest.approx(quantised * eff.GPTQ_RECONS_BYTES_PER_PARAM)
    assert eight.weight_bytes == _decode_cost(marlin, "transformers", 8, 256).weight_bytes
    # ExLlamaV2: one pass up to 8 rows, two at 16
    assert _decode_cost(v2, "transformers", 16, 256).weight_bytes == pytest.approx(
        _decode_cost(marlin, "transformers", 16, 256).weight_bytes + 2 * q_bytes / rel - q_bytes)

    def figure(precision: str, version: str, batch: int, prompt: int, field: str) -> float:
        perf = evaluate({"model": "meta-llama/Llama-2-13b-chat-hf", "hardware": {"gpu": "A100 SXM4 80GB"},
                         "workload": {"engine": "transformers", "engine_version": version, "precision": precision,
                                      "batch_size": batch, "prompt_tokens": prompt, "output_tokens": 512,
                                      "flash_attention": version != "4.32"}}).performance
        assert perf is not None
        value = getattr(perf, field)
        assert value is not None
        return float(value)

    exllamav2_b16 = figure("gptq-exllamav2", "4.37.2", 16, 1, "tpot_ms")
    assert exllamav2_b16 > 1.2 * figure("gptq-marlin", "4.37.2", 16, 1, "tpot_ms")
    assert exllamav2_b16 == pytest.approx(48.1, rel=0.20)
    assert figure("gptq", "4.32", 8, 512, "throughput_tok_s") == pytest.approx(108.73, rel=0.10)


def _apple_plan(model: str, precision: str, engine: str = "mlx") -> dict[str, object]:
    return {"model": {"name": model},
            "workload": {"task": "inference", "precision": precision, "engine": engine, "batch_size": 1,
                         "load": "static"},
            "hardware": {"gpu": "Apple M4 Max 40-core GPU 48GB", "count": 1, "tensor_parallel": 1}}


def test_mlx_moe_layers_cost_a_fixed_time_per_moe_layer_per_gpu_core() -> None:
    """MLX's routed experts add a fixed time per MoE layer that grows with the GPU's cores
    (efficiency.MLX_MOE_LAYER_S_PER_GPU_CORE): Qwen3-30B-A3B (48 MoE layers) gets it, a dense model and llama.cpp
    do not; 40 cores x 2.1 us = 84 us per layer on an M4 Max, 21 us on a 10-core M5, 126 us on a 60-core M3 Ultra.
    Published decode (hand-checked against the rows): LM Studio on a 48 GB M4 Max 93 / 70 tok/s at 4 / 8-bit
    (NEXVER-0012/-0014), on a 96 GB M3 Ultra 87.4 / 72.0 tok/s (ZISKINDLMS-0015/-0022), mlx-lm on an M5 61.3 tok/s
    (ZISKIND-0036): each within 10 %; a flat 100 us per layer had the M5 at 48.5 (-21 %) and the M3 Ultra at +34 %."""
    from mlrig.estimators.performance import apple_gpu_cores, mlx_moe_layer_s
    from mlrig.planner import evaluate

    m4max = resolve_gpu("Apple M4 Max 40-core GPU 48GB")

    def resolved(model: str) -> ResolvedPlan:
        return resolve(resolve_model(model), Plan.model_validate(_apple_plan(model, "mlx-4bit")), m4max)

    moe = resolved("Qwen/Qwen3-30B-A3B")
    assert apple_gpu_cores(m4max) == 40.0
    assert apple_gpu_cores(resolve_gpu("Apple M5 10-core GPU 32GB")) == 10.0
    assert mlx_moe_layer_s(moe, "mlx") == pytest.approx(84e-6)  # every layer is MoE
    assert mlx_moe_layer_s(moe, "llama.cpp") == 0.0
    assert mlx_moe_layer_s(resolved("Qwen/Qwen2.5-14B-Instruct"), "mlx") == 0.0
    ultra = "Apple M3 Ultra 60-core GPU 96GB"
    cases = (("mlx-4bit", "Apple M4 Max 40-core GPU 48GB", 93.0), ("mlx-8bit", "Apple M4 Max 40-core GPU 48GB", 70.0),
             ("mlx-4bit", ultra, 87.4), ("mlx-8bit", ultra, 72.0), ("mlx-4bit", "Apple M5 10-core GPU 32GB", 61.3))
    for precision, gpu, measured in cases:
        plan = _apple_plan("Qwen/Qwen3-30B-A3B", precision)
        plan["hardware"] = {"gpu": gpu, "count": 1, "tensor_parallel": 1}
        perf = evaluate(plan).performance
        assert perf is not None
        assert perf.decode_tok_s == pytest.approx(measured, rel=0.10), gpu


def test_apple_expert_gemm_tiles_in_moe_prefill() -> None:
    """The Metal engines compute each expert's prompt rows in whole tiles (performance.apple_expert_gemm_rows_factor).
    Qwen3-30B-A3B (128 experts, 8 routed), hand-checked: llama.cpp at 128 tokens routes 1,024 rows to ~all 128
    experts, 8 each, computed as one 32-row tile each: 4,096 / 1,024 = 4.0; at 512 tokens 32 each, ~48 computed
    (max(32, 32 + 16)): 1.5; a 4,096-token prompt runs in 512-token micro-batches: 1.5 again; below 32 tokens the
    mat-vec path: 1. MLX at 128 tokens: 1,024 + 16 x 128 = 3,072 rows: 3.0; at 2,048 tokens 1 + 16 x 128 / 16,384 =
    1.125; at 16 tokens (128 rows, 1 per expert) the per-pair mat-vec path: 1. A dense model, an NVIDIA GPU: 1.
    Published (llama-bench pp128 on an M4 Max, ZISKIND-0001, 765.6 tok/s): within 25 %, where without tiles the
    prefill came out 1.9x the measurement."""
    from mlrig.estimators.performance import apple_expert_gemm_rows_factor
    from mlrig.planner import evaluate

    def resolved(model: str, engine: str, gpu: str = "Apple M4 Max 40-core GPU 128GB") -> ResolvedPlan:
        return resolve(resolve_model(model), Plan.model_validate(_apple_plan(model, "q4_k_m", engine)),
                       resolve_gpu(gpu))

    moe = resolved("Qwen/Qwen3-30B-A3B", "llama.cpp")
    assert apple_expert_gemm_rows_factor(moe, "llama.cpp-metal", 128) == pytest.approx(4.0, rel=0.01)
    assert apple_expert_gemm_rows_factor(moe, "llama.cpp-metal", 512) == pytest.approx(1.5, rel=0.01)
    assert apple_expert_gemm_rows_factor(moe, "llama.cpp-metal", 4096) == pytest.approx(1.5, rel=0.01)
    assert apple_expert_gemm_rows_factor(moe, "llama.cpp-metal", 16) == 1.0
    assert apple_expert_gemm_rows_factor(moe, "mlx", 128) == pytest.approx(3.0, rel=0.01)
    assert apple_expert_gemm_rows_factor(moe, "mlx", 2048) == pytest.approx(1.125, rel=0.01)
    assert apple_expert_gemm_rows_factor(moe, "mlx", 16) == 1.0
    dense = resolved("Qwen/Qwen2.5-14B-Instruct", "llama.cpp")
    assert apple_expert_gemm_rows_factor(dense, "llama.cpp-metal", 128) == 1.0
    assert apple_expert_gemm_rows_factor(resolved("Qwen/Qwen3-30B-A3B", "llama.cpp", "RTX 4090"), "llama.cpp-metal",
                                         128) == 1.0
    plan = _apple_plan("Qwen/Qwen3-30B-A3B", "q4_k_m", "llama.cpp")
    plan["hardware"] = {"gpu": "Apple M4 Max 40-core GPU 128GB", "count": 1, "tensor_parallel": 1}
    plan["workload"] = {**plan["workload"], "prompt_tokens": 128, "output_tokens": 0, "flash_attention": False}  # type: ignore[dict-item]
    perf = evaluate(plan).performance
    assert perf is not None
    assert perf.prefill_tok_s == pytest.approx(765.6, rel=0.25)


def test_m5_neural_accelerators_speed_llama_cpp_prefill_only() -> None:
    """An M5 (Metal family Apple10) runs llama.cpp's mat-mat kernels on its GPU cores' Neural Accelerators
    (Metal 4 tensor API): the prefill GEMM rate is efficiency.APPLE_NEURAL_ACCEL_GEMM_SPEEDUP (2.6) times the
    SIMD figure, which M4 chips and MLX (no fit row with the accelerators on) keep. Published: Qwen3-Coder-30B-A3B
    Q4_K_M, llama-bench pp512 on a 10-core M5 = 837 tok/s (ZISKIND-0013); at the SIMD rate alone mlrig said
    ~451 (~360 with the expert GEMMs' 32-token tiles, `apple_expert_gemm_rows_factor`), now within 15 %. Decode
    (bandwidth-bound) is untouched."""
    from mlrig.estimators.performance import apple_neural_accel_speedup, peak_tflops
    from mlrig.planner import evaluate

    m5, m4 = resolve_gpu("Apple M5 10-core GPU 32GB"), resolve_gpu("Apple M4 10-core GPU 32GB")
    assert apple_neural_accel_speedup(m5, "llama.cpp") == eff.APPLE_NEURAL_ACCEL_GEMM_SPEEDUP["llama.cpp"] == 2.6
    assert apple_neural_accel_speedup(m5, "llama.cpp-metal") == 2.6
    assert apple_neural_accel_speedup(m5, "mlx") == apple_neural_accel_speedup(m4, "llama.cpp") == 1.0
    assert peak_tflops(m5, "fp16", "llama.cpp") == pytest.approx(2.6 * 4.04)
    assert peak_tflops(m5, "fp16", "mlx") == pytest.approx(4.04)

    def speed(prompt: int, output: int) -> tuple[float | None, float | None]:
        result = evaluate({"model": "Qwen/Qwen3-30B-A3B", "hardware": {"gpu": "Apple M5 10-core GPU 32GB"},
                           "workload": {"precision": "q4_k_m", "engine": "llama.cpp", "batch_size": 1,
                                        "prompt_tokens": prompt, "output_tokens": output, "load": "static",
                                        "flash_attention": False}})
        assert result.performance is not None
        return result.performance.prefill_tok_s, result.performance.decode_tok_s

    prefill, _ = speed(512, 0)
    assert prefill == pytest.approx(837.08, rel=0.15)


def test_mlx_quantised_prefill_pays_less_than_llama_cpp_mmq() -> None:
    """MLX's qmm de-quantises a weight tile once per block of tokens: its 4-bit prefill runs at
    efficiency.QUANT_PREFILL_EFF_BY_ENGINE["mlx"] (0.92) of the 16-bit rate, not llama.cpp's MMQ 0.80.
    Published (fit row MLXCHIGKIM-0009): Llama-3.3-70B 4-bit on a 64 GB M3 Max 40-core, 2,173-token prompt,
    83.1 tok/s; at 0.80 mlrig said 67.3 (19 % slow), at 0.92 within 10 %."""
    from mlrig.planner import evaluate

    assert eff.QUANT_PREFILL_EFF_BY_ENGINE["mlx"] == 0.92 > eff.QUANT_PREFILL_EFF
    assert "llama.cpp" not in eff.QUANT_PREFILL_EFF_BY_ENGINE

    def prefill(precision: str) -> float:
        result = evaluate({"model": "meta-llama/Llama-3.3-70B-Instruct",
                           "hardware": {"gpu": "Apple M3 Max 40-core GPU 64GB"},
                           "workload": {"precision": precision, "engine": "mlx", "batch_size": 1,
                                        "prompt_tokens": 2173, "output_tokens": 300, "load": "static"}})
        assert result.performance is not None and result.performance.prefill_tok_s is not None
        return result.performance.prefill_tok_s

    assert prefill("mlx-4bit") == pytest.approx(83.1, rel=0.10)


def test_mlx_serving_engines_add_a_host_step_per_token() -> None:
    """vllm-mlx / Rapid-MLX run MLX models from their own engine loop: engine family mlx (not vLLM's, which
    would be refused on Apple), plus efficiency.MLX_SERVER_SEQ_STEP_S (0.9 ms) per token over mlx-lm's own
    generate loop. Published (fit row RAPIDMLX-0001): Qwen3-8B 4-bit, M3 Ultra 60-core, Rapid-MLX 0.7.26,
    ~531-token prompt, 112.9 tok/s; plain mlx gives ~124 (10 % fast), rapid-mlx within 5 %."""
    from mlrig.estimators.engines import engine_family
    from mlrig.planner import evaluate

    m3u = resolve_gpu("Apple M3 Ultra 60-core GPU 256GB")
    for name in ("rapid-mlx", "vllm-mlx", "Rapid-MLX"):
        assert engine_family(name, "mlx-4bit", m3u) == "mlx"
    with pytest.raises(MlrigError):
        engine_family("rapid-mlx", "mlx-4bit", resolve_gpu("rtx-4090"))

    def decode_tpot_s(engine: str) -> float:
        result = evaluate({"model": "Qwen/Qwen3-8B", "hardware": {"gpu": "Apple M3 Ultra 60-core GPU 256GB"},
                           "workload": {"precision": "mlx-4bit", "engine": engine, "batch_size": 1,
                                        "prompt_tokens": 531, "output_tokens": 128, "load": "static"}})
        assert result.performance is not None and result.performance.decode_tok_s is not None
        return 1.0 / result.performance.decode_tok_s

    assert decode_tpot_s("rapid-mlx") - decode_tpot_s("mlx") == pytest.approx(eff.MLX_SERVER_SEQ_STEP_S, rel=0.02)
    assert 1.0 / decode_tpot_s("rapid-mlx") == pytest.approx(112.89, rel=0.05)


def test_mlx_layers_take_longer_on_gpus_before_apple9(monkeypatch: pytest.MonkeyPatch) -> None:
    """MLX's fixed time per layer is 90 us on the M1 / M2 GPUs (Metal families Apple7 / Apple8:
    efficiency.MLX_PRE_APPLE9_LAYER_OVERHEAD_S, fitted on MLXCELM1U-*) and stays 40 us from the M3 on; llama.cpp's
    Metal figure does not move. Hand-checked: Qwen2.5-0.5B (24 layers) on an M1 Ultra gains 24 x 50 us = 1.2 ms per
    token over the Apple9 figure; published (MLXCELM1U-0004, mlx-lm 0.31.3, lablup/mlxcel's baseline) 315.48 tok/s,
    predicted ~347 (+10 %; 594 with 40 us), and Llama-3.1-8B 4-bit 110.66 tok/s (MLXCELM1U-0003), predicted ~105."""
    from mlrig.estimators.performance import apple_gpu_family, layer_overhead_s
    from mlrig.planner import evaluate

    m1u = resolve_gpu("Apple M1 Ultra 128GB")
    families = {"Apple M1 Ultra 128GB": 7, "Apple M2 Max 38-core GPU 96GB": 8, "Apple M3 Ultra 60-core GPU 96GB": 9,
                "Apple M4 Max 40-core GPU 128GB": 9, "Apple M5 10-core GPU 32GB": 10}
    for name, family in families.items():
        gpu = resolve_gpu(name)
        assert apple_gpu_family(gpu) == family, name
        expected = 90e-6 if family < 9 else 40e-6 if family == 9 else 20e-6  # Apple10 (M5): half, below
        assert layer_overhead_s("mlx", gpu) == pytest.approx(expected), name
    assert apple_gpu_family(resolve_gpu("rtx-4090")) is None
    assert layer_overhead_s("llama.cpp-metal", m1u) == eff.LAYER_OVERHEAD_S["llama.cpp-metal"]

    def decode_tok_s(model: str) -> float:
        plan = _apple_plan(model, "mlx-4bit")
        plan["hardware"] = {"gpu": "Apple M1 Ultra 128GB", "count": 1, "tensor_parallel": 1}
        perf = evaluate(plan).performance
        assert perf is not None and perf.decode_tok_s is not None
        return perf.decode_tok_s

    slow = decode_tok_s("Qwen/Qwen2.5-0.5B-Instruct")
    assert slow == pytest.approx(315.48, rel=0.12)
    assert decode_tok_s("meta-llama/Llama-3.1-8B-Instruct") == pytest.approx(110.66, rel=0.08)
    monkeypatch.setattr(eff, "MLX_PRE_APPLE9_LAYER_OVERHEAD_S", eff.LAYER_OVERHEAD_S["mlx"])
    assert 1.0 / slow - 1.0 / decode_tok_s("Qwen/Qwen2.5-0.5B-Instruct") == pytest.approx(24 * 50e-6, rel=0.02)


def test_mlx_dispatch_halves_on_the_m5_generation() -> None:
    """From Metal family Apple10 (M5, M5 Pro, M5 Max) MLX's dependent-dispatch times are half the Apple9 figures
    (efficiency.MLX_APPLE10_DISPATCH_SCALE, fitted on MLXCELM5MAX-* and ZISKIND-0036..0040): 20 us per layer, and
    1.05 us per GPU core per MoE layer. Hand-checked: Qwen3-30B-A3B (48 layers, all MoE) on the 40-core M5 Max
    takes 40 x 1.05 = 42 us per MoE layer (84 on the 40-core M4 Max). Published (lablup/mlxcel's mlx-lm 0.31.3
    baseline on an M5 Max 128 GB): Llama-3.2-1B 4-bit 578.64 tok/s (MLXCELM5MAX-0011; predicted ~500, -14 %; 431 with
    the Apple9 figures, -26 %), Llama-3.1-8B bf16 34.29 (MLXCELM5MAX-0010, bandwidth-bound: within 5 % either way),
    Qwen3-30B-A3B 4-bit 147.22 (MLXCELM5MAX-0025; predicted ~149; 103 with the Apple9 figures, -30 %)."""
    from calibration_lookup import ratio

    from mlrig.estimators.performance import layer_overhead_s, mlx_apple_dispatch_scale, mlx_moe_layer_s

    m5max, m4max = resolve_gpu("Apple M5 Max 128GB"), resolve_gpu("Apple M4 Max 40-core GPU 128GB")
    assert mlx_apple_dispatch_scale(m5max) == eff.MLX_APPLE10_DISPATCH_SCALE == 0.5
    assert mlx_apple_dispatch_scale(m4max) == 1.0
    assert layer_overhead_s("mlx", m5max) == pytest.approx(20e-6)
    assert layer_overhead_s("llama.cpp-metal", m5max) == eff.LAYER_OVERHEAD_S["llama.cpp-metal"]
    for gpu, per_layer in ((m5max, 42e-6), (m4max, 84e-6)):
        moe = resolve(resolve_model("Qwen/Qwen3-30B-A3B"),
                      Plan.model_validate(_apple_plan("Qwen/Qwen3-30B-A3B", "mlx-4bit")), gpu)
        assert mlx_moe_layer_s(moe, "mlx") == pytest.approx(per_layer), gpu.name
    assert 0.80 < ratio("MLXCELM5MAX-0011") < 1.0
    assert ratio("MLXCELM5MAX-0010") == pytest.approx(1.0, abs=0.05)
    assert ratio("MLXCELM5MAX-0025") == pytest.approx(1.0, abs=0.10)
