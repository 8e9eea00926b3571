"""A large, varied `mlrig eval` input, for proving that a change to the batch path leaves its output
byte for byte as it was: run `mlrig eval` on this file before and after, and `cmp` the two outputs.

The file holds every calibration row's plan (mlrig/data/calibration/*.jsonl: the setups published runs
used, with their serving loads, engines, parallel layouts and training options), then variations of
them, drawn from a seeded generator so the same arguments always write the same file:
- the calibration plans again with other numbers (batch, context, prompt, output; micro-batch and
  sequence length), ids of every kind (none, text, numbers, objects) and duplicates with new ids;
- a grid over models x GPUs x precisions x engines x loads (static, concurrency, offline, rate),
  with tensor / pipeline parallelism and several GPUs;
- training plans over methods (full, LoRA, QLoRA), tasks (fine-tune, pre-train), ZeRO stages,
  offload, checkpointing and context / expert / sequence parallelism;
- bad lines: blank, not JSON, not an object, unknown model or GPU, invalid numbers, NaN, huge
  integers, deep nesting, unknown keys, contexts beyond the model's maximum.
Lines are shuffled in blocks, so eval's chunks meet both runs of one shape and mixed lines.

Run: python benchmarks/eval_corpus.py OUT.jsonl [--lines N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-32b", "mistral-7b", "gemma-2-9b",
          "llama-3.2-1b", "llama-3.2-3b", "phi-3-mini-4k", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b",
          "meta-llama/Llama-2-7b-hf", "gpt2", "deepseek-v2-lite"]
GPUS = ["rtx-4090", "rtx-3090", "rtx-5090", "l40s", "a100-sxm-80gb", "h100-sxm-80gb", "mi300x",
        "apple-m2-ultra-76c-192gb", "RTX 3060", "A10G", "t4", "H200", "b200", "rtx-4060"]
PRECISIONS = ["bf16", "fp16", "fp8", "int8", "q4_k_m", "q8_0", "awq", "gptq", "nf4", "fp32", "q5_k_m"]
ENGINES = [None, "vllm", "llama.cpp", "sglang", "tensorrt-llm", "transformers", "mlx", "exllamav2", "ollama"]
LOADS = ["static", "static", "static", "concurrency", "offline", "rate"]
BATCHES = [1, 1, 2, 4, 8, 16, 32, 64, 128, 256]
CONTEXTS = [None, 512, 2048, 4096, 8192, 32768, 131072, 262144]


def calibration_plans() -> list[dict[str, Any]]:
    """Every calibration row's plan with the row's id, in file order."""
    out = []
    for path in sorted((ROOT / "mlrig" / "data" / "calibration").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                out.append({"id": row.get("id"), **row["plan"]})
    return out


def vary_numbers(plan: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The plan with other numbers (a deep copy)."""
    p = json.loads(json.dumps(plan))
    w = p.setdefault("workload", {})
    if w.get("task", "inference") == "inference":
        w["batch_size"] = rng.choice(BATCHES)
        ctx = rng.choice(CONTEXTS)
        if ctx is None:
            w.pop("context_tokens", None)
        else:
            w["context_tokens"] = ctx
        w["prompt_tokens"] = rng.choice([0, 1, 128, 512, 1024, 4096])
        w["output_tokens"] = rng.choice([0, 1, 64, 256, 1024])
    else:
        w["batch_size"] = rng.choice([1, 2, 4, 8, 16])
        t = p.setdefault("training", {})
        t["seq_len"] = rng.choice([256, 512, 1024, 2048, 4096, 8192, 32768])
    return p


def an_id(rng: random.Random, n: int) -> Any:
    kind = rng.random()
    if kind < 0.6:
        return f"v{n}"
    if kind < 0.7:
        return None
    if kind < 0.8:
        return n
    if kind < 0.85:
        return n + 0.5
    if kind < 0.9:
        return {"run": n, "tags": ["a", None, 1.25]}
    if kind < 0.95:
        return f"ünï-{n}-\u2603"
    return [n, str(n)]


def grid_plan(rng: random.Random) -> dict[str, Any]:
    engine = rng.choice(ENGINES)
    load = rng.choice(LOADS)
    w: dict[str, Any] = {"precision": rng.choice(PRECISIONS), "batch_size": rng.choice(BATCHES),
                         "prompt_tokens": rng.choice([128, 512, 1024, 2048]),
                         "output_tokens": rng.choice([1, 64, 256, 512])}
    if engine:
        w["engine"] = engine
    ctx = rng.choice(CONTEXTS)
    if ctx:
        w["context_tokens"] = ctx
    if load != "static":
        w["load"] = load
        if load == "rate":
            w["request_rate"] = rng.choice([0.5, 2.0, 10.0])
        if load in ("offline", "rate"):
            w["num_requests"] = rng.choice([100, 1000])
    if rng.random() < 0.2:
        w["kv_cache_precision"] = rng.choice(["fp8", "q8_0", "bf16"])
    if rng.random() < 0.1:
        w["max_model_len"] = rng.choice([4096, 32768])
    if rng.random() < 0.1:
        w["gpu_memory_utilization"] = rng.choice([0.5, 0.8, 0.95])
    if rng.random() < 0.05:
        w["gpu_layers"] = rng.choice([0, 10, 40])
    if rng.random() < 0.05:
        w["allow_long_context"] = True
    hw: dict[str, Any] = {"gpu": rng.choice(GPUS)}
    r = rng.random()
    if r < 0.15:
        hw["count"] = 2
        hw["tensor_parallel"] = 2
    elif r < 0.22:
        hw["count"] = 8
        hw["tensor_parallel"] = rng.choice([2, 4, 8])
        hw["pipeline_parallel"] = 8 // hw["tensor_parallel"]
    elif r < 0.25:
        hw["count"] = 3
        hw["tensor_parallel"] = 3
    plan: dict[str, Any] = {"model": rng.choice(MODELS), "workload": w}
    if rng.random() < 0.9:
        plan["hardware"] = hw
    return plan


def training_plan(rng: random.Random) -> dict[str, Any]:
    task = rng.choice(["finetune", "finetune", "finetune", "pretrain"])
    t: dict[str, Any] = {"method": rng.choice(["full", "lora", "qlora"]) if task == "finetune" else "full",
                         "seq_len": rng.choice([512, 1024, 2048, 4096, 8192])}
    if rng.random() < 0.3:
        t["zero_stage"] = rng.choice([0, 1, 2, 3])
    if rng.random() < 0.15:
        t["offload"] = rng.choice(["optimizer", "params"])
    if rng.random() < 0.2:
        t["activation_checkpointing"] = rng.choice(["none", "selective", "full"])
    if rng.random() < 0.2:
        t["optimizer"] = rng.choice(["adamw", "adamw-8bit", "sgd", "adafactor"])
    if rng.random() < 0.2:
        t["lora_rank"] = rng.choice([8, 64])
    if rng.random() < 0.1:
        t["context_parallel"] = 2
    if rng.random() < 0.1:
        t["expert_parallel"] = 2
    if rng.random() < 0.1:
        t["sequence_parallel"] = True
    if rng.random() < 0.2:
        t["tokens_to_train"] = rng.choice([1e9, 2.5e10])
    if rng.random() < 0.1:
        t["global_batch_tokens"] = 1_048_576
    hw: dict[str, Any] = {"gpu": rng.choice(GPUS[:8])}
    if rng.random() < 0.4:
        hw["count"] = rng.choice([2, 4, 8])
        if rng.random() < 0.5:
            hw["tensor_parallel"] = 2
        if rng.random() < 0.2:
            hw["nodes"] = 2
            hw["count"] = 16
    return {"model": rng.choice(MODELS[:12]), "hardware": hw,
            "workload": {"task": task, "batch_size": rng.choice([1, 2, 4, 8]),
                         "precision": rng.choice(["bf16", "fp16", "fp8", "nf4"])},
            "training": t}


BAD_LINES = [
    "", "   ", "not json", "{", "[1, 2, 3]", "42", "null", '"text"', "{}", '{"model": 5}',
    '{"model": "no-such-model-xyz"}', '{"model": "llama-3.1-8b", "hardware": {"gpu": "no-such-gpu"}}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": 0}}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": -3}}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": NaN}}',
    '{"model": "llama-3.1-8b", "workload": {"prompt_tokens": Infinity}}',
    '{"model": "llama-3.1-8b", "id": ' + "9" * 30 + "}",
    '{"model": "llama-3.1-8b", "workload": {"context_tokens": 10000000}}',
    '{"model": "llama-3.1-8b", "workload": {"precision": "q3_weird"}}',
    '{"model": "llama-3.1-8b", "workload": {"engine": "not-an-engine"}}',
    '{"model": "llama-3.1-8b", "workload": {"load": "rate"}}',
    '{"model": "llama-3.1-8b", "surprise": 1}',
    '{"model": "llama-3.1-8b", "hardware": {"gpu": "rtx-4090", "tensor_parallel": 3, "count": 3}}',
    '{"model": "/dev/zero"}', '{"model": "llama-3.1-8b", "id": ""}', '{"model": "llama-3.1-8b", "id": "x"',
    "[" * 5000 + "]" * 5000, '{"a": ' * 3000 + "1" + "}" * 3000, "\ufeff{}", '{"id": null, "model": null}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": 1e400}}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": 2.0}}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": "4"}}',
    '{"model": "llama-3.1-8b", "workload": {"batch_size": true}}',
]


def corpus(lines: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    cal = calibration_plans()
    out: list[str] = [json.dumps(p) for p in cal]
    n = len(out)
    while len(out) < lines:
        r = rng.random()
        if r < 0.3:  # a run of one calibration plan's variations (nested loops in a script)
            base = rng.choice(cal)
            for _ in range(rng.choice([1, 3, 8, 30])):
                p = vary_numbers(base, rng)
                p["id"] = an_id(rng, len(out))
                if p["id"] is None:
                    del p["id"]
                out.append(json.dumps(p))
        elif r < 0.6:  # a run of one grid setup over batch and context
            base = grid_plan(rng)
            for _ in range(rng.choice([1, 4, 16, 49])):
                p = json.loads(json.dumps(base))
                p["workload"]["batch_size"] = rng.choice(BATCHES)
                ctx = rng.choice(CONTEXTS)
                if ctx:
                    p["workload"]["context_tokens"] = ctx
                p["id"] = an_id(rng, len(out))
                out.append(json.dumps(p))
        elif r < 0.85:
            base = training_plan(rng)
            for _ in range(rng.choice([1, 5, 20])):
                p = json.loads(json.dumps(base))
                p["workload"]["batch_size"] = rng.choice([1, 2, 4, 8])
                p["training"]["seq_len"] = rng.choice([512, 1024, 2048, 4096, 8192])
                p["id"] = an_id(rng, len(out))
                out.append(json.dumps(p))
        elif r < 0.93:  # identical plans but for the id (and plain duplicates)
            base = json.loads(rng.choice(out[:n] + out[-50:]))
            for k in range(rng.choice([2, 6, 12])):
                if isinstance(base, dict) and k % 3:
                    base["id"] = an_id(rng, len(out))
                out.append(json.dumps(base) if rng.random() < 0.9 else json.dumps(base, indent=None,
                                                                                   separators=(",", ":")))
        else:
            out.append(rng.choice(BAD_LINES))
    out = out[:lines]
    # shuffle blocks of 64 lines: runs stay together within a block, blocks land anywhere
    blocks = [out[i:i + 64] for i in range(len(cal), len(out), 64)]
    rng.shuffle(blocks)
    return out[:len(cal)] + [x for b in blocks for x in b]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--lines", type=int, default=60_000)
    ap.add_argument("--seed", type=int, default=15)
    args = ap.parse_args()
    args.out.write_text("".join(x + "\n" for x in corpus(args.lines, args.seed)), encoding="utf-8")
    print(f"wrote {args.lines:,} lines to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
