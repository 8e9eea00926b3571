"""vLLM's one-shot custom all-reduce (performance.vllm_one_shot_allreduce): below the kernel's size thresholds a decode
step's all-reduce on NVIDIA NVLink costs the two peer-to-peer hops alone, without efficiency.ALLREDUCE_SYNC_S, and the
WAYNETRT TP 2 H100 rows that chose it come out closer than before."""

from __future__ import annotations

import pytest

from mlrig.catalog.interconnects import allreduce_time_s, resolve_interconnect
from mlrig.estimators import efficiency as eff
from mlrig.estimators.performance import vllm_one_shot_allreduce
from mlrig.planner import evaluate


def test_size_thresholds_read_in_custom_all_reduce_cuh() -> None:
    """`REDUCE_CASE`: 2 ranks one-shot up to the 8 MiB registered buffer; <= 4 ranks below 512 KiB; <= 8 below
    256 KiB; 3 / 5 / 7 ranks are not the kernel's (NCCL); other engines never."""
    assert vllm_one_shot_allreduce("vllm", 2, 4 * 2**20)
    assert not vllm_one_shot_allreduce("vllm", 2, 8 * 2**20)
    assert vllm_one_shot_allreduce("vllm", 4, 512 * 1024 - 1)
    assert not vllm_one_shot_allreduce("vllm", 4, 512 * 1024)
    assert vllm_one_shot_allreduce("vllm", 8, 256 * 1024 - 1)
    assert not vllm_one_shot_allreduce("vllm", 8, 256 * 1024)
    assert not vllm_one_shot_allreduce("vllm", 3, 1024)
    assert not vllm_one_shot_allreduce("sglang", 2, 1024)
    assert not vllm_one_shot_allreduce("vllm", 1, 1024)


def test_v1_only() -> None:
    """V0's driver broadcasts each step's inputs to the TP workers, a cost the barrier figure stands for on its rows:
    the one-shot price is V1's (0.8 on, the current release, not a '+v0' label)."""
    assert vllm_one_shot_allreduce("vllm", 2, 8192, "0.18.0")
    assert vllm_one_shot_allreduce("vllm", 2, 8192, None)
    assert not vllm_one_shot_allreduce("vllm", 2, 8192, "0.7.3")
    assert not vllm_one_shot_allreduce("vllm", 2, 8192, "0.9.1+v0")


def test_two_h100_decode_allreduce_by_hand() -> None:
    """Llama-3.1-8B batch-1 decode at TP 2 on H100 SXM (NVLink 4, 5 us per hop, 450 GB/s): 8 KiB of hidden state,
    2 hops = 10.0 us plus 8192 / 450e9 x (2 x 1 / 2) = 0.02 us; the barrier-priced form was 20 us."""
    link = resolve_interconnect("nvlink4")
    hops = float(allreduce_time_s(8192.0, 2, link, peer_to_peer=True))
    assert hops == pytest.approx(10.02e-6, rel=0.005)
    assert hops + eff.ALLREDUCE_SYNC_S["nvlink"] == pytest.approx(20.02e-6, rel=0.005)


def _wayne_tp2_bf16_tpot_ms() -> float:
    """WAYNETRT-0057 as planned: Llama-3.1-8B-Instruct bf16 on 2 H100 SXM at TP 2, one user, 13-token prompt, 256
    outputs (measured median TPOT 4.04 ms)."""
    plan = {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
            "workload": {"task": "inference", "precision": "bf16", "engine": "vllm", "load": "concurrency",
                         "batch_size": 1, "num_requests": 8, "prompt_tokens": 13, "output_tokens": 256},
            "hardware": {"gpu": "NVIDIA H100 SXM", "count": 2, "tensor_parallel": 2}}
    perf = evaluate(plan).performance
    assert perf is not None and perf.tpot_ms is not None
    return float(perf.tpot_ms)


def test_tp2_decode_step_drops_by_the_barriers(monkeypatch: pytest.MonkeyPatch) -> None:
    """32 layers x 2 all-reduces x 10 us = 0.64 ms less per step than with the barrier priced; the step then sits
    nearer the measured 4.04 ms (5.88 ms before the change)."""
    with_kernel = _wayne_tp2_bf16_tpot_ms()
    monkeypatch.setattr(eff, "VLLM_CUSTOM_ALLREDUCE_MAX_BYTES", 0.0)  # every message above the buffer: NCCL's price
    without = _wayne_tp2_bf16_tpot_ms()
    assert without - with_kernel == pytest.approx(0.64, abs=0.02)
    assert abs(with_kernel / 4.04 - 1) < abs(without / 4.04 - 1)
