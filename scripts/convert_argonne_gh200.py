"""Print the GH200 rows of LLM-Inference-Bench's All_results.csv that ARGONNE (branch s24) did not take.

ARGONNE took Llama-3-8B at 128 / 1024 tokens and batch 1 / 16 / 64 on the GH200; the same CSV also has
Llama-2-7B, Mistral-7B-v0.1 and GPT-J-6B (models in the catalog) and 256 / 512 / 2048 tokens and batch 32,
measured by the same harness on the same machine. Each printed row follows the ARGONNE rows' mapping
(value = batch x output tokens / 'Latency'). Usage:
    python scripts/convert_argonne_gh200.py <LLM-Inference-Bench git dir> >> serving_argonne_inference_bench.jsonl
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

COMMIT = "ae7e7a41173badc99f7b59da1657a0172813e5e5"
URL = f"https://github.com/argonne-lcf/LLM-Inference-Bench/blob/{COMMIT}/Plots/All_results.csv"
CALIBRATION = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"
FILE = CALIBRATION / "serving_argonne_inference_bench.jsonl"
MODELS = ("meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-7b-hf", "mistralai/Mistral-7B-v0.1", "EleutherAI/gpt-j-6b")
ENGINES = {"vLLM": ("vllm", "0.5.3.post1"), "TensorRT-LLM": ("trt-llm", "0.12.0")}
SOFTWARE = {
    "vllm": "vLLM 0.5.3.post1 (vLLM/GH200 run-throughput-bench.sh), --dtype float16; the repository's "
            "benchmark_throughput.py (one batch, ignore_eos)",
    "trt-llm": "TensorRT-LLM v0.12.0 (TensorRT-LLM/GH200 README: git checkout v0.12.0, Apptainer container), "
               "fp16 engines, examples run.py --run_profiling",
}
GPTJ_MAX_POSITIONS = 2048  # EleutherAI/gpt-j-6b config.json n_positions
UNIT = ("derived: batch x output tokens / 'Latency' (s); the CSV's 'Throughput' = batch x (input + output) "
        "/ latency")


def main() -> None:
    text = subprocess.run(["git", "--git-dir", sys.argv[1], "show", f"{COMMIT}:Plots/All_results.csv"],
                          check=True, capture_output=True, text=True).stdout
    existing = [json.loads(line) for line in FILE.open()]
    taken = {(r["plan"]["model"]["name"], r["plan"]["workload"]["engine"], r["plan"]["workload"]["prompt_tokens"],
              r["plan"]["workload"]["batch_size"]) for r in existing if "GH200" in r["plan"]["hardware"]["gpu"]}
    n = max(int(r["id"].split("-")[1]) for r in existing)
    rows = [x for x in csv.DictReader(text.splitlines()) if "GH200" in x["Hardware"]]
    seen: dict[tuple[str, ...], int] = {}
    for x in rows:
        key = (x["Framework"], x["Model"], x["Input Output Length"], x["Batch Size"])
        seen[key] = seen.get(key, 0) + 1
    for x in rows:
        if x["Framework"] not in ENGINES or x["Model"] not in MODELS or x["Num of Hardware"] != "1":
            continue
        engine, version = ENGINES[x["Framework"]]
        length, batch, latency = int(x["Input Output Length"]), int(x["Batch Size"]), float(x["Latency"])
        key = (x["Framework"], x["Model"], x["Input Output Length"], x["Batch Size"])
        if (x["Model"], engine, length, batch) in taken or seen[key] > 1:
            continue
        if x["Model"] == "EleutherAI/gpt-j-6b" and 2 * length > GPTJ_MAX_POSITIONS:
            continue  # beyond GPT-J's 2,048 positions: vLLM refuses such a max_model_len, the row is doubtful
        workload: dict[str, object] = {"task": "inference", "precision": "fp16", "engine": engine,
                                       "engine_version": version, "load": "static", "batch_size": batch,
                                       "prompt_tokens": length, "output_tokens": length}
        if engine == "trt-llm":
            workload["max_num_seqs"] = batch
        value = batch * length / latency
        n += 1
        note = " ".join((
            "LLM-Inference-Bench (Argonne, arXiv 2411.00136) Plots/All_results.csv row: Nvidia GH200 GPU,",
            f"1 GPU(s) (tensor parallel 1), {x['Framework']}, {x['Model']}, input = output = {length} tokens,",
            f"batch {batch}: Latency {latency:.4f} s, Throughput {float(x['Throughput']):.1f} tok/s. The harness",
            f"generates one fixed batch of {batch} random prompts of {length} tokens with exactly {length} new",
            "tokens (ignore_eos) and times the whole call (prefill + decode), fp16 weights and KV cache;",
            f"value = {batch} x {length} / {latency:.4f} s = output tokens/s of the static batch, prefill",
            "included. GH200 memory size not stated (96 GB HBM3 assumed by the catalog). Settings the",
            "repository does not state are left at their defaults. Added on branch s28-dataserve (rows",
            "ARGONNE did not take)."))
        print(json.dumps({"id": f"ARGONNE-{n:04d}",
                          "plan": {"model": {"name": x["Model"]}, "workload": workload,
                                   "hardware": {"gpu": "NVIDIA GH200", "count": 1, "tensor_parallel": 1}},
                          "metric": "throughput_tok_s", "value": round(value, 2), "unit": UNIT, "source_url": URL,
                          "source_date": "2024-09-27", "software": SOFTWARE[engine], "source_note": note,
                          "split": "holdout"}))


if __name__ == "__main__":
    main()
