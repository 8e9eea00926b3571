"""KV pools by release: TensorRT-LLM's activation buffer sized by the engine's max_num_tokens
(engines.trtllm_engine_max_num_tokens, memory.trtllm_engine_activation_bytes) and LMDeploy TurboMind's
cache_max_entry_count of free memory from v0.2.2 (engines.lmdeploy_kv_of_free_memory)."""

from __future__ import annotations

import pytest

from mlrig.estimators.engines import lmdeploy_kv_of_free_memory, trtllm_engine_max_num_tokens
from mlrig.estimators.memory import CAL, trtllm_engine_activation_bytes
from mlrig.planner import evaluate, resolve_plan
from mlrig.units import GiB

# zhjunqin's engine: Llama-3-8B fp16, TensorRT-LLM 0.9, max_batch_size 40, max_seq_len 2,048 on an RTX 3090
ZHJ = {"model": {"name": "meta-llama/Meta-Llama-3-8B-Instruct"},
       "workload": {"task": "inference", "precision": "fp16", "engine": "trt-llm", "engine_version": "0.9.0",
                    "max_num_seqs": 40, "max_model_len": 2048, "prompt_tokens": 214, "output_tokens": 169},
       "hardware": {"gpu": "NVIDIA GeForce RTX 3090", "count": 1}}
# TensorRT-LLM issue #224: Llama-2-7B fp16 under 0.5's build.py, max_batch_size 25, fraction 0.95, on an A10
ISSUE_224 = {"model": {"name": "meta-llama/Llama-2-7b-hf"},
             "workload": {"task": "inference", "precision": "fp16", "engine": "trt-llm", "engine_version": "0.5.0",
                          "max_num_seqs": 25, "max_model_len": 4096, "gpu_memory_utilization": 0.95},
             "hardware": {"gpu": "NVIDIA A10", "count": 1}}


def test_max_num_tokens_defaults_by_release() -> None:
    """Before 0.11 max_batch_size x max_input_len (2,048 in 0.5's build.py, 1,024 in trtllm-build), capped by
    max_seq_len; 8,192 from 0.11 and where the batch is not stated; a plan's own figure wins."""
    assert trtllm_engine_max_num_tokens("0.9.0", 40, 2048, None) == 40 * 1024
    assert trtllm_engine_max_num_tokens("0.5.0", 25, 4096, None) == 25 * 2048
    assert trtllm_engine_max_num_tokens("0.5.0", 25, 512, None) == 25 * 512
    assert trtllm_engine_max_num_tokens("0.10.0", 8, None, None) == 8 * 1024
    assert trtllm_engine_max_num_tokens("0.11.0", 40, 2048, None) == 8192
    assert trtllm_engine_max_num_tokens("0.9.0", None, None, None) == 8192
    assert trtllm_engine_max_num_tokens("0.9.0", 40, 2048, 4096) == 4096


def test_activation_buffer_hand_check() -> None:
    """Llama-3-8B at 40,960 tokens: (2 x 4,096 + 3 x 14,336) x 2 bytes = 102,400 B per token, 4.19e9 bytes
    (larger than the engine's fp32 logits for 40 rows of the 128,256-token vocabulary, 20.5 MB, which reuse
    that memory), plus the runtime's and decoder's buffers, 4.69 x those logits."""
    r, _ = resolve_plan(ZHJ)
    got = trtllm_engine_activation_bytes(r.arch, r.plan, 1)
    assert got == pytest.approx(40_960 * 102_400 + 4.69 * 40 * 128_256 * 4, rel=1e-9)


def test_logits_set_the_context_memory_at_a_large_batch() -> None:
    """TRTBENCH70's log (0.16, Llama-3.1-70B at TP 8, max_batch_size 2,048, 8,192 tokens): "Allocated 1013.01
    MiB for execution context memory": the fp32 logits, 2,048 x 128,256 x 4 B = 1,002 MiB, not the MLP's
    8,192 x (2 x 8,192 + 3 x 28,672 / 8) x 2 B = 424 MiB nor their sum; with the runtime's 1.63 GB and the
    decoder's 3.30 GB, 5.57 GiB in all."""
    plan = {"model": {"name": "meta-llama/Llama-3.1-70B-Instruct"},
            "workload": {"task": "inference", "precision": "fp8", "engine": "trt-llm", "engine_version": "0.16.0",
                         "max_num_seqs": 2048, "max_num_batched_tokens": 8192, "max_model_len": 25000},
            "hardware": {"gpu": "NVIDIA H100 SXM", "count": 8, "tensor_parallel": 8}}
    r, _ = resolve_plan(plan)
    logits = 2048 * 128_256 * 4
    got = trtllm_engine_activation_bytes(r.arch, r.plan, 8)
    assert got == pytest.approx(logits * (1 + 4.69), rel=1e-9)
    assert got / GiB == pytest.approx(5.57, abs=0.01)


def test_kv_pool_after_the_activation_buffer() -> None:
    """The pool is 0.9 (0.95) of what the weights and the engine's activations leave. Issue #224 logged 10,718
    tokens (fit row TRTKV224-0001); the vLLM profile proxy used before gave 17,920. zhjunqin's 0.9 engine logged
    31,616 (held out); the proxy gave 59,776."""
    kv_224 = evaluate(ISSUE_224).kv_cache_capacity_tokens
    assert kv_224 is not None and kv_224 == pytest.approx(10_718, rel=0.02)
    kv_zhj = evaluate(ZHJ).kv_cache_capacity_tokens
    assert kv_zhj is not None and kv_zhj < 40_000


def test_pytorch_backend_keeps_its_own_activation_estimate() -> None:
    """From 1.0 (PyTorch backend) the engine-buffer rule does not apply: a 1.2 run's pool is not the 0.9 one."""
    new = {**ZHJ, "workload": {**ZHJ["workload"], "engine_version": "1.2.0"}}
    old_act = evaluate(ZHJ).memory.activations_gib
    assert evaluate(new).memory.activations_gib < old_act / 2


def test_lmdeploy_kv_pool_of_free_memory_from_0_2_2() -> None:
    """v0.2.2 on: cache_max_entry_count 0.8 x (capacity - weights - CUDA context). Llama-3-8B bf16 on a 24 GiB
    RTX 3090: 0.8 x (24 - 14.96 - 0.45) GiB = 6.87 GiB = 56,304 tokens of 128 KiB, in 16-token blocks."""
    assert lmdeploy_kv_of_free_memory("0.4.0") and lmdeploy_kv_of_free_memory("0.2.2")
    assert lmdeploy_kv_of_free_memory(None)
    assert not lmdeploy_kv_of_free_memory("0.2.1") and not lmdeploy_kv_of_free_memory("0.1.0")
    plan = {"model": {"name": "meta-llama/Meta-Llama-3-8B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "lmdeploy", "engine_version": "0.4.0",
                         "prompt_tokens": 214, "output_tokens": 169},
            "hardware": {"gpu": "NVIDIA GeForce RTX 3090", "count": 1}}
    res = evaluate(plan)
    m = res.memory
    pool_gib = 0.8 * (24.0 - m.weights_gib - CAL.cuda_context_bytes / GiB)
    assert m.kv_cache_gib == pytest.approx(pool_gib, rel=1e-3)
    assert pool_gib == pytest.approx(6.874, abs=1e-3)
    assert res.kv_cache_capacity_tokens == 56_304


def test_an_engine_built_for_too_many_tokens_does_not_start() -> None:
    """NVIDIA/TensorRT-LLM issue #401 (2023-11-15): Llama-2-7B fp16 built with build.py --max_input_len 2048
    --max_output_len 2048 --max_batch_size 192 --remove_input_padding on an A100 40GB failed at load with
    'cudaMallocAsync ... out of memory' in TllmRuntime: its activation buffer is sized for 192 x 2,048 =
    393,216 tokens x 82,432 B = 30.2 GiB, which with 12.6 GiB of weights exceeds the card. With 32 (65,536
    tokens, 5.0 GiB) it starts."""
    plan = {"model": {"name": "meta-llama/Llama-2-7b-hf"},
            "workload": {"task": "inference", "precision": "fp16", "engine": "trt-llm", "engine_version": "0.5.0",
                         "max_num_seqs": 192, "max_model_len": 4096, "prompt_tokens": 512, "output_tokens": 128},
            "hardware": {"gpu": "NVIDIA A100 SXM4 40GB", "count": 1}}
    res = evaluate(plan)
    assert not res.fits
    assert res.memory.activations_gib == pytest.approx((393_216 * 82_432 + 4.69 * 192 * 32_000 * 4) / GiB, abs=0.01)
    assert any("refuses to start" in n for n in res.memory.notes)
    small = {**plan, "workload": {**plan["workload"], "max_num_seqs": 32}}
    assert evaluate(small).fits
