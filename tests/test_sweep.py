from __future__ import annotations

import itertools

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.catalog.models import resolve_model
from mlrig.errors import MlrigError
from mlrig.estimators.performance import decode_step, kv_bytes, model_weight_bytes, prefill_pass
from mlrig.estimators.sweep import RUNTIME_OVERHEAD_BYTES, sweep
from mlrig.workload import Plan


@pytest.mark.parametrize("engine", ["vllm", "trt-llm-2023"])  # the latter re-reads the GQA cache per query head
def test_sweep_matches_scalar_path(engine: str) -> None:
    archs = [resolve_model("llama-3-8b"), resolve_model("mixtral-8x7b")]
    gpus = [resolve_gpu("rtx-4090"), resolve_gpu("h100-sxm-80gb")]
    precs, batches, ctxs, tps = ["bf16", "fp8", "awq"], [1, 16], [512, 8192], [1, 2]
    res = sweep(archs, gpus, precs, batches, ctxs, tps, engine=engine)
    assert res.size == 2 * 2 * 3 * 2 * 2 * 2
    for (i, a), (j, g), (k, p), (m, b), (n, c), (o, t) in itertools.product(
        enumerate(archs), enumerate(gpus), enumerate(precs), enumerate(batches), enumerate(ctxs), enumerate(tps)
    ):
        plan = Plan.model_validate(
            {
                "model": a.id,
                "workload": {"precision": p, "engine": engine, "batch_size": b},
                "hardware": {"gpu": g.id, "count": t, "tensor_parallel": t},
            }
        )
        dec = decode_step(a, plan, g, b, c).seconds
        assert res.decode_tok_s[i, j, k, m, n, o] == pytest.approx(1 / dec, rel=1e-9)
        pre = prefill_pass(a, plan, g, b, c).seconds
        assert res.prefill_tok_s[i, j, k, m, n, o] == pytest.approx(b * c / pre, rel=1e-9)
        kvp = p if p == "bf16" else "fp16"  # KV default: fp16 for quantised weights
        mem = model_weight_bytes(a, p) / t + b * kv_bytes(a, c, kvp) / t + RUNTIME_OVERHEAD_BYTES
        assert res.memory_per_gpu_bytes[i, j, k, m, n, o] == pytest.approx(mem, rel=1e-9)


@pytest.mark.parametrize("axis", ["precisions", "tps", "contexts"])
def test_empty_or_zero_axis_is_a_one_line_error(axis: str) -> None:
    args = {"archs": [resolve_model("llama-3-8b")], "gpus": [resolve_gpu("rtx-4090")], "precisions": ["bf16"],
            "batches": [1], "contexts": [512], "tps": [1]}
    args[axis] = [] if axis == "precisions" else [0]
    with pytest.raises(MlrigError, match=axis):
        sweep(**args)  # type: ignore[arg-type]
