"""Property checks over the catalog: invariants every `mlrig plan` answer should keep, on setups nobody calibrated.

Run: python benchmarks/invariants.py [--quick]. Sweeps popular models x GPUs x precisions x engines through
mlrig.planner.evaluate (the product path) and prints every violation, one a line, then `violations=<N>`.
tests/test_invariants.py runs a small sample of the same checks.

Invariants (each a function below):
- no NaN / inf / negative figure; every performance and memory figure has its validation entry;
- no exception other than a clean MlrigError;
- more batch never needs less memory per GPU;
- longer context never needs less KV memory and never decodes faster per sequence;
- more GPUs with ZeRO-3 never need more memory per GPU (fine-tuning); more batch or longer sequences never
  need less training memory; LoRA never needs more than full fine-tuning, QLoRA never more than LoRA;
- more GPUs (tensor parallel) never need more memory per GPU; more concurrent users or a higher request rate
  never give a shorter TTFT or a faster per-sequence decode;
- a faster GPU of the same family never decodes slower at batch 1 (H200 vs H100, 4090 vs 3090, ...);
- lower-bit weights never need more weight memory;
- prefill tok/s >= decode tok/s at batch 1; TTFT grows with prompt length;
- throughput <= batch x per-sequence decode rate.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from mlrig.errors import MlrigError
from mlrig.planner import evaluate
from mlrig.results import PlanResult

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-72b", "qwen3-8b", "qwen3-30b-a3b",
          "mistral-7b", "mixtral-8x7b", "gemma-2-9b", "gemma-3-27b", "deepseek-v2-lite", "deepseek-v3",
          "gpt-oss-20b", "gpt-oss-120b"]
GPUS = ["rtx-3090", "rtx-4090", "rtx-5090", "rtx-3060", "rtx-a6000", "rtx-6000-ada", "rtx-pro-6000",
        "a100-sxm-80gb", "h100-sxm-80gb", "h200", "b200", "l4", "l40s", "mi300x", "apple-m2-ultra-76c-192gb",
        "apple-m4-max-40c-128gb", "cpu"]
PRECISIONS = ["bf16", "fp8", "awq", "gptq", "q4_k_m", "q8_0"]
ENGINES: list[str | None] = [None, "vllm", "sglang", "trt-llm", "lmdeploy", "tgi", "llama.cpp", "ollama", "mlx",
                             "transformers", "exllamav2", "mlc"]
# same family, (slower, faster): a batch-1 decode on the faster one should never be slower
FASTER = [("h100-sxm-80gb", "h200"), ("rtx-3090", "rtx-4090"), ("rtx-4090", "rtx-5090"),
          ("a100-sxm-80gb", "h100-sxm-80gb")]
# bits per weight, high to low: weight memory must not grow down each ladder
LOWER_BITS = [["bf16", "q8_0", "q4_k_m"], ["bf16", "fp8", "awq"], ["bf16", "fp8", "gptq"]]

Plan = dict[str, Any]
STATS: dict[str, int] = {"plans": 0, "clean MlrigError": 0, "series dropped: engine switched": 0}
Violation = str


def plan(model: str, gpu: str, precision: str, engine: str | None, batch: int = 1, context: int = 4096,
         count: int = 1, **workload: Any) -> Plan:
    w: dict[str, Any] = {"precision": precision, "batch_size": batch, "context_tokens": context, **workload}
    if engine is not None:
        w["engine"] = engine
    return {"model": model, "hardware": {"gpu": gpu, "count": count}, "workload": w}


def run(p: Plan) -> tuple[PlanResult | None, Violation | None]:
    """The planner's answer, None for a clean MlrigError, or a violation for any other exception."""
    try:
        return evaluate(p), None
    except MlrigError:
        return None, None
    except Exception as exc:
        return None, f"exception {type(exc).__name__}: {exc} for {p}"


def figures(r: PlanResult) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in (r.performance, r.memory):
        if part is None:
            continue
        for k, v in part.model_dump().items():
            if isinstance(v, float | int) and not isinstance(v, bool):
                out[k] = float(v)
    return out


def check_sane(p: Plan, r: PlanResult) -> list[Violation]:
    """No NaN/inf/negative figure (headroom may be negative: it says the plan does not fit); every figure
    the validation table knows carries its validation entry."""
    bad = []
    for k, v in figures(r).items():
        if not math.isfinite(v) or (v < 0 and k != "headroom_gib"):
            bad.append(f"{k}={v} in {p}")
    perf = r.performance
    for k in ("prefill_tok_s", "decode_tok_s", "ttft_ms", "tpot_ms", "throughput_tok_s"):
        if perf is not None and getattr(perf, k) is not None and k not in r.validation:
            bad.append(f"{k} has no validation entry in {p}")
    if r.memory is not None and r.fits is not None and r.memory.per_gpu_gib > 0 \
            and r.fits and r.memory.headroom_gib < -1e-6:
        bad.append(f"fits=True with headroom {r.memory.headroom_gib:.3f} GiB in {p}")
    for k in ("per_gpu_gib", "weights_gib"):
        if r.memory is not None and k not in r.validation:
            bad.append(f"{k} has no validation entry in {p}")
    return bad


def check_single(p: Plan, r: PlanResult) -> list[Violation]:
    """Prefill >= decode at batch 1; throughput <= batch x decode rate."""
    bad = check_sane(p, r)
    perf = r.performance
    if perf is None:
        return bad
    batch = p["workload"]["batch_size"]
    if batch == 1 and perf.prefill_tok_s is not None and perf.decode_tok_s is not None \
            and perf.prefill_tok_s < perf.decode_tok_s * 0.999:
        bad.append(f"prefill {perf.prefill_tok_s:.1f} < decode {perf.decode_tok_s:.1f} tok/s at batch 1 in {p}")
    if perf.throughput_tok_s is not None and perf.decode_tok_s is not None:
        replicas = r.data_parallel_replicas or 1
        if perf.throughput_tok_s > batch * replicas * perf.decode_tok_s * 1.001:
            bad.append(f"throughput {perf.throughput_tok_s:.1f} > batch {batch} x replicas {replicas} x decode "
                       f"{perf.decode_tok_s:.1f} tok/s in {p}")
    return bad


def xqa_blocks(r: PlanResult) -> int | None:
    """TensorRT-LLM's XQA multi_block count per KV head for this plan's decode context (NVIDIA, trt-llm; None
    elsewhere): the heuristic mlrig prices (performance.xqa_cta_bw_rel, from decoderXQAImplCommon.h
    `computeMultiBlockCount`)."""
    from mlrig.estimators.efficiency import XQA_MIN_HISTORY_PER_BLOCK

    if r.engine != "trt-llm" or r.performance is None or r.performance.decode_context_tokens is None:
        return None
    blocks = r.performance.decode_context_tokens // XQA_MIN_HISTORY_PER_BLOCK
    return max(min(blocks, round((8 * blocks) ** 0.5)), 1)


def exempt(label: str, r0: PlanResult, r1: PlanResult) -> bool:
    """Pairs where the move against the invariant is physically right, each with its reason:
    - longer context, faster decode on TensorRT-LLM: XQA splits each KV head's history over more thread blocks
      as the history grows (multi_block = history // 512, capped at sqrt(8 x that)), so a longer context reads its
      KV cache with more CTAs in flight: a 1,984-token decode reads 661 tokens per CTA, a 4,032-token one 576
      (Gemma 2 9B on an H100: 105 -> 107 tok/s). The kernel changes its launch, not a pricing bug; only pairs
      whose block counts differ are let through.
    - a faster GPU of the same family decoding slower: only when both are offload-bound and the faster one has
      less memory (RTX 4090 23.99 GiB vs RTX 3090 24.0 GiB, as nvidia-smi reports), so it offloads more."""
    if label == "longer context, faster decode":
        b0, b1 = xqa_blocks(r0), xqa_blocks(r1)
        return b0 is not None and b1 is not None and b0 != b1
    if label.endswith("decodes slower than") or " decodes slower than " in label:
        perf0, perf1, m0, m1 = r0.performance, r1.performance, r0.memory, r1.memory
        return (perf0 is not None and perf1 is not None and m0 is not None and m1 is not None
                and perf0.bound == perf1.bound == "offload" and m1.gpu_capacity_gib < m0.gpu_capacity_gib)
    return False


def monotone(label: str, pairs: list[tuple[Plan, PlanResult]], key: Callable[[PlanResult], float | None],
             direction: int, rel: float = 1e-6) -> list[Violation]:
    """Successive results must not move against `direction` (+1: non-decreasing, -1: non-increasing), except
    the physically right moves `exempt` lists."""
    bad = []
    for (p0, r0), (p1, r1) in itertools.pairwise(pairs):
        a, b = key(r0), key(r1)
        if a is None or b is None or exempt(label, r0, r1):
            continue
        if direction * (b - a) < -rel * max(abs(a), abs(b)):
            bad.append(f"{label}: {a:.4g} -> {b:.4g} from {p0} to {p1}")
    return bad


def mem(r: PlanResult) -> float | None:
    return r.memory.per_gpu_gib if r.memory else None


def kv(r: PlanResult) -> float | None:
    return r.memory.kv_cache_gib if r.memory else None


def weights(r: PlanResult) -> float | None:
    return r.memory.weights_gib if r.memory else None


def decode(r: PlanResult) -> float | None:
    return r.performance.decode_tok_s if r.performance else None


def tpot_rate(r: PlanResult) -> float | None:
    """Per-sequence decode rate under load, 1000 / TPOT."""
    return 1000 / r.performance.tpot_ms if r.performance and r.performance.tpot_ms else None


def ttft(r: PlanResult) -> float | None:
    return r.performance.ttft_ms if r.performance else None


def series(plans: list[Plan], bad: list[Violation]) -> list[tuple[Plan, PlanResult]]:
    """Evaluate each plan; a series keeps only the plans that evaluate. The engine must not change along it
    (a defaulted engine may switch, which is a different product answer, not a monotonicity bug)."""
    out = []
    for p in plans:
        r, exc = run(p)
        STATS["plans"] += 1
        STATS["clean MlrigError"] += r is None and exc is None
        if exc:
            bad.append(exc)
        if r is not None:
            bad.extend(check_single(p, r))
            out.append((p, r))
    engines = {r.engine for _, r in out}
    if len(engines) > 1:
        STATS["series dropped: engine switched"] += 1
        return []
    return out


def sweep(models: list[str], gpus: list[str], precisions: list[str], engines: list[str | None]) -> Iterator[Violation]:
    for model, gpu, precision, engine in itertools.product(models, gpus, precisions, engines):
        bad: list[Violation] = []
        by_batch = series([plan(model, gpu, precision, engine, batch=b) for b in (1, 2, 8, 32, 128)], bad)
        bad += monotone("more batch, less memory", by_batch, mem, +1)
        bad += monotone("more batch, faster decode per sequence", by_batch, decode, -1)
        by_ctx = series([plan(model, gpu, precision, engine, context=c) for c in (1024, 2048, 8192, 32768, 131072)],
                        bad)
        bad += monotone("longer context, less KV", by_ctx, kv, +1)
        bad += monotone("longer context, faster decode", by_ctx, decode, -1)
        by_prompt = series([plan(model, gpu, precision, engine, context=8192, prompt_tokens=n, output_tokens=64)
                            for n in (256, 2048, 8000)], bad)
        bad += monotone("longer prompt, shorter TTFT", by_prompt, ttft, +1)
        yield from bad
    for model, gpu, engine in itertools.product(models, ("h100-sxm-80gb", "rtx-4090", "mi300x", "l40s"),
                                                ("vllm", "sglang", "trt-llm", None)):
        bad = []
        users = series([plan(model, gpu, "fp8", engine, batch=b, load="concurrency", prompt_tokens=1024,
                             output_tokens=256) for b in (1, 4, 16, 64, 256)], bad)
        bad += monotone("more concurrent users, shorter TTFT", users, ttft, +1)
        bad += monotone("more concurrent users, faster decode per sequence", users, tpot_rate, -1)
        rates = series([plan(model, gpu, "fp8", engine, batch=256, load="rate", request_rate=r, num_requests=500,
                             prompt_tokens=1024, output_tokens=256) for r in (0.5, 2, 8, 32)], bad)
        bad += monotone("higher request rate, shorter TTFT", rates, ttft, +1)
        yield from bad
    for model, (slow, fast), precision, engine in itertools.product(models, FASTER, precisions, engines):
        bad = []
        pair = series([plan(model, g, precision, engine) for g in (slow, fast)], bad)
        bad += monotone(f"{fast} decodes slower than {slow}", pair, decode, +1)
        yield from bad
    for model, gpu, engine, ladder in itertools.product(models, gpus, engines, LOWER_BITS):
        bad = []
        by_bits = series([plan(model, gpu, pr, engine) for pr in ladder], bad)
        bad += monotone("lower-bit weights, more weight memory", by_bits, weights, -1)
        yield from bad
    for model, gpu, method in itertools.product(models, ("rtx-4090", "a100-sxm-80gb", "h100-sxm-80gb", "mi300x"),
                                                ("full", "lora")):
        bad = []
        plans = [{"model": model, "hardware": {"gpu": gpu, "count": n},
                  "workload": {"task": "finetune", "batch_size": 1, "precision": "bf16"},
                  "training": {"method": method, "zero_stage": 3}} for n in (1, 2, 8, 16)]
        bad += monotone("ZeRO-3: more GPUs, more memory per GPU", series(plans, bad), mem, -1)
        yield from bad
    for model, gpu in itertools.product(models, ("rtx-3090", "rtx-4090", "a100-sxm-80gb", "h100-sxm-80gb", "mi300x")):
        bad = []

        def train(batch: int = 1, seq: int = 2048, method: str = "lora", model: str = model,
                  gpu: str = gpu) -> Plan:
            return {"model": model, "hardware": {"gpu": gpu},
                    "workload": {"task": "finetune", "batch_size": batch, "precision": "bf16"},
                    "training": {"method": method, "seq_len": seq}}
        bad += monotone("training: more batch, less memory", series([train(batch=b) for b in (1, 2, 8)], bad), mem, +1)
        bad += monotone("training: longer sequences, less memory",
                        series([train(seq=n) for n in (512, 2048, 8192)], bad), mem, +1)
        bad += monotone("training: full -> LoRA -> QLoRA needs more memory",
                        series([train(method=m) for m in ("full", "lora", "qlora")], bad), mem, -1)
        yield from bad
    for model, gpu, precision, engine in itertools.product(models, ("h100-sxm-80gb", "rtx-4090", "mi300x"),
                                                           ("bf16", "fp8", "awq"), ("vllm", None)):
        bad = []
        by_count = series([plan(model, gpu, precision, engine, count=n) for n in (1, 2, 4, 8)], bad)
        bad += monotone("tensor parallel: more GPUs, more memory per GPU", by_count, mem, -1)
        yield from bad


def main() -> int:
    quick = "--quick" in sys.argv
    models = MODELS[::3] if quick else MODELS
    gpus = GPUS[::3] if quick else GPUS
    n = 0
    for v in sweep(models, gpus, PRECISIONS, ENGINES):
        print(v)
        n += 1
    for name, count in STATS.items():
        print(f"{name}: {count}")
    print(f"violations={n}")
    return 1 if n else 0


if __name__ == "__main__":
    raise SystemExit(main())
