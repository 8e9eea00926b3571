"""AMD Infinity Fabric: a full mesh, and vLLM's own all-reduce over it where the build runs one."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.interconnects import default_link, group_bandwidth_gb_s, resolve_interconnect
from mlrig.estimators.engines import vllm_custom_allreduce_on_amd
from mlrig.estimators.hardware import plan_link
from mlrig.estimators.performance import decode_step
from mlrig.planner import evaluate, parse_plan, resolve_plan


def _tp8_70b(version: str | None) -> dict[str, object]:
    """ROCMVLLM-0009's setup: Llama-3.1-70B FP8 (FP8 KV), TP 8 on 8 x MI300X, batch 1, 128 in / 2,048 out."""
    return {"model": {"name": "meta-llama/Llama-3.1-70B-Instruct"},
            "workload": {"task": "inference", "precision": "fp8", "kv_cache_precision": "fp8", "engine": "vllm",
                         "engine_version": version, "load": "static", "batch_size": 1, "prompt_tokens": 128,
                         "output_tokens": 2048, "gpu_memory_utilization": 0.9},
            "hardware": {"gpu": "AMD Instinct MI300X", "count": 8, "tensor_parallel": 8}}


def test_mesh_bandwidth_grows_with_the_group() -> None:
    """AMD data sheet: 7 links of 128 GB/s bidirectional (64 per direction) to the 7 peers. A TP group of N
    uses N - 1 of them: 64 / 192 / 448 GB/s at TP 2 / 4 / 8. NVSwitch gives every GPU its full 450."""
    mi300x = resolve_gpu("MI300X")
    fabric = default_link(mi300x.pcie_gen, mi300x.nvlink_gb_s, 8, vendor=mi300x.vendor)
    assert fabric.kind == "xgmi" and fabric.mesh_peers == 7
    assert [group_bandwidth_gb_s(fabric, n) for n in (2, 4, 8)] == pytest.approx([64.0, 192.0, 448.0])
    nvswitch = resolve_interconnect("nvswitch-h100")
    assert [group_bandwidth_gb_s(nvswitch, n) for n in (2, 8)] == [450.0, 450.0]
    h100 = resolve_gpu("H100 SXM")
    h100_plan = parse_plan({"model": "llama-3-8b", "hardware": {"gpu": "H100 SXM", "count": 8}})
    assert plan_link(h100_plan, h100).kind == "nvlink"


def test_which_vllm_builds_run_their_own_allreduce_on_amd() -> None:
    """Upstream vLLM disabled its custom all-reduce on AMD GPUs before 0.8.3; AMD's fork had it since 2024-05."""
    assert not vllm_custom_allreduce_on_amd("0.6.1")
    assert not vllm_custom_allreduce_on_amd("0.6.6")
    assert vllm_custom_allreduce_on_amd("rocm/vllm-dev 0.6.6")
    assert vllm_custom_allreduce_on_amd("0.8.3") and vllm_custom_allreduce_on_amd("0.10.0")
    assert vllm_custom_allreduce_on_amd(None)  # the current release


def test_tp8_decode_all_reduce_cost_hand_checked() -> None:
    """160 all-reduces of a 16 KiB hidden state per token (80 layers x 2). RCCL's ring: 14 hops x 5 us +
    10 us barrier = 80 us each, 12.8 ms; vLLM's peer kernel: 2 hops x 5 us + 10 us = 20 us each, 3.2 ms
    (the wire time, 1.75 x 16 KiB at 448 GB/s, is 0.06 us)."""
    ring, _ = resolve_plan(_tp8_70b("0.6.6"))
    peer, _ = resolve_plan(_tp8_70b("rocm/vllm-dev 0.6.6"))
    assert float(decode_step(ring, 1, 1152).comm_s) == pytest.approx(160 * 80.06e-6, rel=2e-3)
    assert float(decode_step(peer, 1, 1152).comm_s) == pytest.approx(160 * 20.06e-6, rel=2e-3)


def test_tp8_decode_on_mi300x_near_the_published_latency() -> None:
    """ROCm/vllm's dev-docker README (held-out ROCMVLLM-0009, checked, not fitted): 2,048 tokens in 19.09 s at
    batch 1, 9.3 ms per token. mlrig said ~18 ms (interconnect bound) with RCCL's ring."""
    res = evaluate(_tp8_70b("rocm/vllm-dev 0.6.6"))
    assert res.performance is not None and res.performance.tpot_ms is not None
    assert 0.75 < res.performance.tpot_ms / 9.32 < 1.25


def test_trt_llm_from_0_12_uses_its_own_nvlink_allreduce() -> None:
    """TensorRT-LLM picks its custom all-reduce automatically from 0.12 (issue #1601): Llama-3-70B TP 8 on
    H100 SXM pays 2 NVLink hops per all-reduce: a batch-1 message (16 KiB) goes through its one-shot kernel, whose
    one flag barrier is the first hop, with no further hand-shake (engines.trtllm_one_shot_allreduce; 160 x ~10 us =
    1.6 ms a token; 3.2 ms with efficiency.ALLREDUCE_SYNC_S before branch s38-trt); TensorRT-LLM 0.6.1 (NCCL's ring,
    the TRT061-* fit rows) 14 hops + 10 us (12.8 ms)."""
    def plan(version: str) -> dict[str, object]:
        return {"model": "llama-3-70b", "hardware": {"gpu": "H100 SXM", "count": 8, "tensor_parallel": 8},
                "workload": {"precision": "fp16", "engine": "trt-llm", "engine_version": version,
                             "prompt_tokens": 128, "output_tokens": 128}}
    new, _ = resolve_plan(plan("0.12.0"))
    old, _ = resolve_plan(plan("0.6.1"))
    assert float(decode_step(new, 1, 192).comm_s) == pytest.approx(160 * 10.0e-6, rel=1e-2)
    assert float(decode_step(old, 1, 192).comm_s) == pytest.approx(160 * 80.0e-6, rel=5e-3)
