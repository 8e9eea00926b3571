"""`mlrig fit` from its three sides, and the planner's defaults for multi-GPU inference."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.planner import evaluate

runner = CliRunner()


def _json(args: list[str]) -> list[dict]:
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_precisions_on_one_gpu_answer_which_quant() -> None:
    rows = _json(["fit", "llama-3.1-70b", "--gpu", "RTX 3090", "--count", "2"])
    by = {r["precision"]: r for r in rows}
    assert not by["bf16"]["fits"] and not by["q8_0"]["fits"]  # 70B at 8 bits is ~70 GB > 48 GB
    assert by["q4_k_m"]["fits"]
    # fewer bits never need more memory per GPU
    gib = [by[p]["memory"]["per_gpu_gib"] for p in ("q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k")]
    assert gib == sorted(gib, reverse=True)
    # the context left for the KV cache is reported and grows as the weights shrink
    assert 8_000 < by["q4_k_m"]["limits"]["max_context_tokens"] < by["q2_k"]["limits"]["max_context_tokens"]


def test_models_on_one_gpu_largest_first_with_best_fitting_precision() -> None:
    rows = _json(["fit", "--gpu", "RTX 3090", "--context", "8192", "--fits-only"])
    assert rows and all(r["fits"] for r in rows)
    names = [r["model"] for r in rows]
    assert "meta-llama/Llama-3.1-70B" not in names  # no 70B fits 24 GB at 8k context, even at q2_k
    small = next(r for r in rows if r["model"] == "meta-llama/Llama-3.1-8B")
    assert small["precision"] == "bf16"  # 16 GB of weights fit: no need to quantise
    big = next(r for r in rows if r["model"] == "Qwen/Qwen2.5-32B")
    assert big["precision"] not in ("bf16", "fp8", "q8_0")


def test_gpus_for_one_model() -> None:
    rows = _json(["fit", "qwen2.5-7b", "--precision", "q4_k_m", "--vendor", "NVIDIA"])
    assert {r["gpu"] for r in rows} >= {"rtx-3090", "rtx-4090", "h100-sxm-80gb"}
    fits = [r["fits"] for r in rows]
    assert fits == sorted(fits, reverse=True)  # fitting GPUs first


def test_fit_needs_model_or_gpu() -> None:
    res = runner.invoke(app, ["fit"])
    assert res.exit_code != 0


def test_llama_cpp_splits_layers_by_default() -> None:
    """llama.cpp's default split is by layer: two GPUs hold the model but decode no faster than one
    GPU with enough memory would (measured: 2x RTX 3090 70B Q4_K_M ~16-17 tok/s, XiongjieDai)."""
    split = evaluate({"model": "llama-3.1-70b", "workload": {"precision": "q4_k_m"},
                      "hardware": {"gpu": "RTX 3090", "count": 2}})
    assert split.fits and split.performance is not None
    assert any("splits layers" in n for n in split.notes)
    assert split.performance.decode_tok_s is not None and 12 < split.performance.decode_tok_s < 24
    tp = evaluate({"model": "llama-3.1-70b", "workload": {"precision": "q4_k_m", "engine": "vllm"},
                   "hardware": {"gpu": "RTX 3090", "count": 2}})
    assert any("tensor parallelism" in n for n in tp.notes)


def test_training_on_several_gpus_stays_data_parallel() -> None:
    r = evaluate({"model": "llama-3.2-3b", "workload": {"task": "finetune"},
                  "training": {"zero_stage": 3}, "hardware": {"gpu": "A100-SXM4-80GB", "count": 4}})
    assert not any("parallelism" in n for n in r.notes)
    one = evaluate({"model": "llama-3.2-3b", "workload": {"task": "finetune"},
                    "training": {"zero_stage": 3}, "hardware": {"gpu": "A100-SXM4-80GB", "count": 1}})
    assert r.memory is not None and one.memory is not None
    assert r.memory.per_gpu_gib < one.memory.per_gpu_gib  # ZeRO-3 shards over the 4 GPUs


def test_catalog_scan_builds_each_precisions_plan_as_parse_plan_does() -> None:
    """`fit --gpu G` validates each precision's workload once for the whole catalog (fit._ladder_workloads)
    and puts it into each model's plan; that plan must be the one parse_plan builds from the same fields,
    down to which fields were set (the planner's defaults look at them)."""
    from mlrig.commands._common import workload_fields
    from mlrig.commands.fit import _ladder, _ladder_workloads
    from mlrig.planner import parse_plan, plan_from_fields

    flags = [{}, {"context": 8192, "batch": 4}, {"engine": "vllm", "count": 4},
             {"task": "finetune", "method": "qlora"}, {"task": "finetune"}, {"count": 2, "tp": 2}]
    for flag in flags:
        fields = workload_fields(**flag)
        fields.pop("precision")
        ladder = _ladder(None, fields)  # training: no GGUF formats (workload.Plan._no_gguf_training)
        workloads = _ladder_workloads("h100-sxm-80gb", ladder, fields)
        for model in ("llama-3.1-8b", "qwen3-30b-a3b", "gemma-2-9b"):
            p0 = parse_plan(plan_from_fields(model, gpu="h100-sxm-80gb", **fields))
            for prec in ladder:
                got = p0.model_copy(update={"workload": workloads[prec]})
                want = parse_plan(plan_from_fields(model, gpu="h100-sxm-80gb", precision=prec, **fields))
                assert got == want and got.workload.precision == prec
                for part in ("", "workload", "hardware", "training"):
                    a, b = (getattr(x, part) if part else x for x in (got, want))
                    assert (a is None) == (b is None)
                    if a is not None:
                        assert a.model_fields_set == b.model_fields_set, (flag, model, prec, part)
