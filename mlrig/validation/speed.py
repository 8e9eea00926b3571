"""Speed estimates against published measurements (calibration/inference_speed.csv, training_speed.csv).

Run: `python -m mlrig.validation.speed` (prints median / p90 of |pred/meas - 1| per group).
Rows marked ANOMALY in their source note are skipped, as are rows whose model or hardware cannot
be mapped to the catalogs (counted in the `skipped` group note). Each row is predicted from its
own settings only (model, quant, engine, hardware, GPU count, batch, prompt/gen tokens).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache
from typing import TYPE_CHECKING

from mlrig.errors import AmbiguousNameError, MlrigError, UnknownNameError
from mlrig.validation import ValidationGroup, ValidationRow, read_calibration_csv, summarise

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch

THRESHOLDS = {"decode_tok_s": 0.10, "prefill_tok_s": 0.20, "tokens_per_s_per_gpu": 0.15}

# Two calibration models absent from model_configs, from their published HF config.json:
# EleutherAI/gpt-j-6b (n_embd 4096, n_layer 28, n_head 16, rotary_dim 64, n_inner 16384, vocab 50400)
# tiiuae/falcon-180B (hidden 14848, 80 layers, 232 heads, 8 KV groups, MLP 4x hidden, vocab 65024).
_HAND_ARCHS: dict[str, dict[str, object]] = {
    "gpt-j-6b": dict(
        hidden_size=4096,
        num_layers=28,
        num_heads=16,
        intermediate_size=16384,
        mlp="plain",
        vocab_size=50400,
        norm="layernorm",
        norms_per_layer=1,
        mlp_bias=True,
    ),
    "falcon-180b": dict(
        hidden_size=14848,
        num_layers=80,
        num_heads=232,
        num_kv_heads=8,
        intermediate_size=59392,
        mlp="plain",
        vocab_size=65024,
        tie_word_embeddings=True,
        norm="layernorm",
        norms_per_layer=2,
    ),
}
# MosaicML MPT configs (llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml): (n_layers, d_model)
_MPT_SHAPES = {
    "125m": (12, 768),
    "350m": (24, 1024),
    "760m": (24, 1536),
    "1b": (24, 2048),
    "3b": (32, 2560),
    "7b": (32, 4096),
    "13b": (40, 5120),
    "30b": (48, 7168),
    "70b": (80, 8192),
}

_QUANT = {"Q4_K_M": "q4_k_m", "F16": "fp16", "FP16": "fp16", "Q4_0": "q4_0", "FP8": "fp8", "Q8_0": "q8_0"}


@cache
def model_for(name: str) -> ModelArch | None:
    from mlrig.catalog.models import ModelArch, resolve_model

    try:
        return resolve_model(name)
    except MlrigError:
        pass
    if name in _HAND_ARCHS:
        return ModelArch(id=name, source="validation hand-built from HF config.json", **_HAND_ARCHS[name])
    return None


@cache
def gpu_for(hardware: str) -> GPU | None:
    """resolve_gpu on the calibration spelling; memory-size variants of one chip are equivalent for
    speed, so an ambiguity between them takes the first; '(variant unspecified)' A100/H100 rows come
    from SXM systems (TensorRT-LLM docs, llm-foundry, llama.cpp scoreboard cloud hosts)."""
    from mlrig.catalog.gpus import resolve_gpu

    name = hardware
    if "variant unspecified" in name or re.fullmatch(r"A100-(40|80)GB", name):
        name = re.sub(r"(A100|H100)[- ]", r"\1 SXM ", name)
    attempts = [name, re.sub(r"\s*\(.*\)", "", name), re.sub(r"\s*\(.*", "", name)]
    for cand in attempts:
        try:
            return resolve_gpu(cand)
        except AmbiguousNameError as exc:
            return resolve_gpu(exc.candidates[0])
        except UnknownNameError:
            continue
    return None


def _engine(e: str, note: str = "") -> str:
    """Engine family of a row; llama.cpp CUDA builds before ~b3000 (mid-2024) lack CUDA graphs;
    TensorRT-LLM before v0.8 lacks the XQA GQA decode kernel (efficiency.KV_READ_PER_QUERY_HEAD)."""
    e = e.lower()
    if "metal" in e:
        return "llama.cpp-metal"
    if "tensorrt" in e:
        m = re.search(r"v0\.(\d+)", e)
        return "trt-llm-2023" if m and int(m.group(1)) < 8 else "trt-llm"  # XQA arrived in v0.8
    m = re.search(r"build \w+ \((\d+)\)", note)
    if m and int(m.group(1)) < 3000:
        return "llama.cpp-2024"
    return "llama.cpp"


def _f(s: str) -> int:
    return int(float(s)) if s else 0


def predict_inference(row: dict[str, str]) -> float | None:
    """Predicted value of one inference_speed.csv row, None when not predictable."""
    from mlrig.estimators.performance import decode_step, prefill_pass
    from mlrig.workload import Plan

    arch, gpu = model_for(row["model"]), gpu_for(row["hardware"])
    if arch is None or gpu is None:
        return None
    engine = _engine(row["engine"], row["source_note"])
    n = max(1, _f(row["num_gpus"]))
    tp = n if engine.startswith("trt-llm") else 1
    batch, prompt, gen = max(1, _f(row["batch_size"])), _f(row["prompt_tokens"]), _f(row["gen_tokens"])
    fa = "flash-attn off" not in row["source_note"]
    precision = _QUANT.get(row["quant"], row["quant"].lower())
    # TensorRT-LLM's FP8 engines in its performance tables are built with `--enable_fp8
    # --fp8_kv_cache` (docs/source/performance.md, "Benchmarking per Model"): FP8 KV cache too.
    kv_precision = "fp8" if engine.startswith("trt-llm") and precision == "fp8" else None
    plan = Plan.model_validate(
        {
            "model": {"name": row["model"]},
            "workload": {
                "precision": precision,
                "kv_cache_precision": kv_precision,
                "engine": engine,
                "batch_size": batch,
                "prompt_tokens": prompt,
                "output_tokens": gen,
                "flash_attention": fa,
            },
            "hardware": {"gpu": gpu.id, "count": n, "tensor_parallel": tp},
        }
    )
    metric = row["metric"]
    if metric == "decode_tok_s":
        return 1.0 / decode_step(arch, plan, gpu, batch, max(1, prompt + gen // 2)).seconds
    pre = prefill_pass(arch, plan, gpu, batch, max(1, prompt))
    if not pre.compute_known:
        return None
    if metric == "prefill_tok_s":
        return batch * prompt / pre.seconds
    if metric == "ttft_ms":
        return pre.seconds * 1e3
    if metric == "total_throughput_tok_s":
        dec = decode_step(arch, plan, gpu, batch, prompt + gen // 2).seconds
        total = batch * gen / (pre.seconds + gen * dec)
        # H100 table is "out tok/s/GPU"; the A100/L40S tables do not say for TP > 1 (unit column)
        per_gpu = "tok/s/GPU" in row["unit"] or "tok/s/GPU" in row["source_note"] or "not stated" in row["unit"]
        return total / n if per_gpu else total
    return None


def predict_training(row: dict[str, str]) -> float | None:
    """Tokens/s per GPU of one MPT row of training_speed.csv."""
    from mlrig.estimators.performance import gpu_memory_class
    from mlrig.estimators.training_speed import train_tokens_per_s_per_gpu

    m = re.fullmatch(r"MPT-(\w+)", row["model"])
    gpu = gpu_for(row["hardware"])
    if m is None or m.group(1) not in _MPT_SHAPES or gpu is None:
        return None
    layers, d = _MPT_SHAPES[m.group(1)]
    peak = gpu.tensor_tflops("bf16")
    if not peak:
        return None
    ckpt = row["activation_ckpt"].lower() in ("true", "yes", "full recompute")
    return train_tokens_per_s_per_gpu(
        float(row["params_b"]) * 1e9, layers, d, _f(row["seq_len"]), peak, gpu_memory_class(gpu), ckpt
    )


def _hw_group(hardware: str) -> str:
    gpu = gpu_for(hardware)
    return gpu.hardware_class if gpu else "unmapped"


def run() -> list[ValidationGroup]:
    """Validation groups: per metric overall (with thresholds), and per engine x hardware class."""
    by_metric: dict[str, list[ValidationRow]] = defaultdict(list)
    by_group: dict[str, list[ValidationRow]] = defaultdict(list)
    skipped = anomalies = 0
    for row in read_calibration_csv("inference_speed.csv"):
        if "ANOMALY" in row["source_note"]:
            anomalies += 1
            continue
        try:
            pred = predict_inference(row)
        except MlrigError:
            pred = None
        if pred is None:
            skipped += 1
            continue
        vr = ValidationRow(
            id=row["id"],
            group=row["metric"],
            predicted=pred,
            measured=float(row["value"]),
            note=f"{row['model']} {row['quant']} {row['hardware']} x{row['num_gpus']}",
        )
        by_metric[row["metric"]].append(vr)
        by_group[
            f"{row['metric']} / {_engine(row['engine'], row['source_note'])} / {_hw_group(row['hardware'])}"
        ].append(vr)
    for row in read_calibration_csv("training_speed.csv"):
        if row["metric"] != "tokens_per_s_per_gpu":
            continue
        pred = predict_training(row)
        if pred is None:
            skipped += 1
            continue
        vr = ValidationRow(
            id=row["id"],
            group="tokens_per_s_per_gpu",
            predicted=pred,
            measured=float(row["value"]),
            note=f"{row['model']} s={row['seq_len']} {row['hardware']}",
        )
        by_metric["tokens_per_s_per_gpu"].append(vr)
        by_group[f"tokens_per_s_per_gpu / training / {_hw_group(row['hardware'])}"].append(vr)
    groups = [summarise(m, rows, THRESHOLDS.get(m)) for m, rows in sorted(by_metric.items())]
    groups += [summarise(g, rows) for g, rows in sorted(by_group.items())]
    groups.append(
        ValidationGroup(
            name=f"skipped: {skipped} unmappable rows, {anomalies} ANOMALY rows", n=0, median_error=0.0, p90_error=0.0
        )
    )
    return groups


def main() -> None:
    for g in run():
        if g.n == 0:
            print(g.name)
            continue
        flag = "" if g.threshold_median is None else ("  PASS" if g.passes else "  FAIL")
        print(f"{g.name:55s} n={g.n:4d}  median={g.median_error:6.1%}  p90={g.p90_error:6.1%}{flag}")


if __name__ == "__main__":
    main()
