"""SGLang's custom all-reduce on AMD Infinity Fabric (branch s38b-allreduce): its HIP port of vLLM's kernel from 0.4.3
(engines.sglang_custom_allreduce_on_amd, SGLang PR #3406), RCCL's ring before."""

from __future__ import annotations

import pytest

from mlrig.estimators.engines import sglang_custom_allreduce_on_amd
from mlrig.planner import evaluate


def test_sglang_rocm_custom_allreduce_from_0_4_3() -> None:
    assert not sglang_custom_allreduce_on_amd("0.4.2.post4")
    assert sglang_custom_allreduce_on_amd("0.4.3")
    assert sglang_custom_allreduce_on_amd("0.5")
    assert sglang_custom_allreduce_on_amd(None)


def _decode_tok_s(engine: str, version: str | None) -> float:
    workload: dict[str, object] = {"task": "inference", "precision": "bf16", "engine": engine, "batch_size": 1,
                                   "prompt_tokens": 512, "output_tokens": 128}
    if version is not None:
        workload["engine_version"] = version
    plan = {"model": {"name": "meta-llama/Llama-3.1-70B-Instruct"}, "workload": workload,
            "hardware": {"gpu": "AMD Instinct MI300X", "count": 8, "tensor_parallel": 8}}
    perf = evaluate(plan).performance
    assert perf is not None and perf.decode_tok_s is not None
    return float(perf.decode_tok_s)


def test_mi300x_sglang_decode_no_longer_half_of_vllm() -> None:
    """Llama-3.1-70B bf16 on 8 x MI300X, one sequence: with RCCL's ring (14 hops of 5 us + 10 us per all-reduce,
    160 of them a step: ~12.8 ms) SGLang came out at half of vLLM's speed (50.7 vs 97 tok/s on main 80d0521);
    with its own kernel (2 hops + 10 us: 3.2 ms) it is within a few per cent of vLLM's, and 0.4.2.post4 keeps RCCL."""
    vllm = _decode_tok_s("vllm", None)
    sglang = _decode_tok_s("sglang", None)
    old = _decode_tok_s("sglang", "0.4.2.post4")
    assert sglang == pytest.approx(vllm, rel=0.1)
    assert old < 0.6 * sglang
