"""LMDeploy TurboMind's NVLink all-reduce (efficiency.NVLINK_NCCL_RING_ENGINES): one ncclAllReduce per call, whose
message NCCL moves with the protocol its own tuning model picks (LL at a quarter of the link, LL128, Simple:
efficiency.NCCL_NVLINK_RING_PROTOCOLS, NVIDIA/nccl v2.18.3-1 src/graph/tuning.cc). The fixed part per call stays
what LMDeploy's batch-1 TP rows pinned; the growth with the batch is NCCL's."""

from __future__ import annotations

import pytest
from calibration_lookup import ratio, row

from mlrig.catalog.interconnects import default_link, nccl_ring_allreduce_excess_s
from mlrig.estimators import efficiency as eff
from mlrig.planner import evaluate


def _a100_excess_us(n_bytes: float, ranks: int) -> float:
    link = default_link(4, 300.0, ranks)  # A100 SXM4 NVLink 3, 300 GB/s
    return float(nccl_ring_allreduce_excess_s(n_bytes, ranks, link, eff.NCCL_NVLINK_RING_PROTOCOLS)) * 1e6


def test_excess_by_hand() -> None:
    """4 ranks, 6 ring steps; empty message = LL's 6.6 + 6 x 0.6 = 10.2 us. 16 KiB: LL, 16384 B at 300 x 0.25 x 4/6
    = 50 GB/s = 0.33 us. 1 MiB: LL would be 10.2 + 20.97; LL128 14.0 + 6 x 1.9 + 1048576 / (300 x 0.92 x 4/6 GB/s)
    = 25.4 + 5.70 = 31.10 us, so 20.90 over the empty message. 2 ranks, 1 MiB (2 steps, N / 2(N-1) = 1): LL
    7.8 + 13.98, LL128 17.8 + 3.80, Simple 8.4 + 2 x 3.4 + 1048576 / 300 GB/s = 15.2 + 3.50 = 18.70 us, less LL's 7.8
    = 10.90."""
    assert _a100_excess_us(16384, 4) == pytest.approx(0.328, rel=0.01)
    assert _a100_excess_us(2**20, 4) == pytest.approx(20.90, rel=0.005)
    assert _a100_excess_us(2**20, 2) == pytest.approx(10.90, rel=0.005)
    assert _a100_excess_us(0, 4) == 0.0
    assert _a100_excess_us(2**20, 1) == 0.0


def test_only_turbomind_is_listed() -> None:
    """vLLM / SGLang / gpt-fast run their own peer-to-peer kernel on NVLink (PEER_ALLREDUCE_ENGINES); TensorRT-LLM
    before 0.12 also calls NCCL but its rows were not checked, so it keeps the whole-link price."""
    assert "lmdeploy" in eff.NVLINK_NCCL_RING_ENGINES and "trt-llm" not in eff.NVLINK_NCCL_RING_ENGINES
    assert not eff.NVLINK_NCCL_RING_ENGINES & eff.PEER_ALLREDUCE_ENGINES


def test_tp4_decode_grows_with_the_batch_as_measured() -> None:
    """Llama-2-70B on 4 x A100 SXM4, LMDeploy 0.1.0a1: TPOT 29 ms at batch 1 (LMDEPLOY-0124) and 37 ms at 64 users of
    1 + 128 tokens (LMDEPLOY-0162), +8 ms. At the whole link's bandwidth the model grew 3.7 ms (TPOT 32.8 ms, -11.5 %);
    with NCCL's protocols each of the 160 all-reduces of a 1 MiB message costs ~16 us more, and batch 1 stays."""
    assert ratio("LMDEPLOY-0124") == pytest.approx(1.0, abs=0.02)
    assert ratio("LMDEPLOY-0162") > 0.93  # was 0.885
    one = evaluate(row("LMDEPLOY-0124").plan).performance
    many = evaluate(row("LMDEPLOY-0162").plan).performance
    assert one is not None and many is not None
    assert many.tpot_ms - one.tpot_ms > 5.5


def test_tp1_rows_do_not_move() -> None:
    """No all-reduce at TP 1: LMDEPLOY-0032 (Llama-2-7B, 64 users, 128 + 2,048) keeps its TPOT (33.11 ms)."""
    perf = evaluate(row("LMDEPLOY-0032").plan).performance
    assert perf is not None
    assert perf.tpot_ms == pytest.approx(33.11, abs=0.01)
