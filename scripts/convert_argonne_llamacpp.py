"""Print the single-GPU llama.cpp `-b 1` rows of LLM-Inference-Bench's All_results.csv as decode rows.

ARGONNE (branch s24) took the CSV's TensorRT-LLM and vLLM rows; the same CSV holds llama.cpp runs on the same
machines (`llama.cpp/<GPU>/*.sh`: `llama-bench -m <model>_f16.gguf -p L -n L -pg L,L -b B -r 1 -o csv`). The
CSV's 'Throughput' of a llama.cpp row is the `-pg L,L` test: (L prompt + L generated tokens) / 'Latency'.

Only `-b 1` is a plan: llama-bench's `-b` is n_batch (the logical batch of a prompt, which also caps n_ubatch),
not a number of sequences, so with `-b 1` the L prompt tokens go through llama_decode one token at a time, each
a batch-1 step with its own logits, as the L generated tokens do: 2L batch-1 decode steps at contexts 0..2L.
On one GPU each step waits for the last (llama-bench's prompt loop reuses the one input buffer, which the backend
scheduler synchronises on), so the row is the decode speed of one sequence over 2L tokens from an empty cache.
On 2 or more GPUs the layer split pipelines the prompt's one-token batches (GGML_SCHED_MAX_COPIES in-flight
copies, llama.cpp PR #6017), so those rows are not a decode speed and are left out, as are `-b 16/32/64`
(a prompt in n_batch-token pieces: no plan key), MI250 (one GCD or a whole card is not stated) and Intel
GPUs (SYCL build). Lengths 128, 512 and 2048 of the five measured (128-2048) are taken, so that one source
does not outweigh the rest of the scope. Usage:
    python scripts/convert_argonne_llamacpp.py <LLM-Inference-Bench git dir> >> serving_argonne_inference_bench.jsonl
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
LENGTHS = (128, 512, 2048)
# the CSV's hardware names -> the GPUs ARGONNE's rows name (same machines; the variants inferred there)
GPUS = {"Nvidia A100 GPU": "NVIDIA A100 SXM4 40GB", "Nvidia H100 GPU": "NVIDIA H100 SXM",
        "Nvidia GH200 GPU": "NVIDIA GH200", "AMD MI300X GPU": "AMD Instinct MI300X"}
SETUP = {
    "Nvidia A100 GPU": "llama.cpp/A100/README.MD (git clone of llama.cpp master, cmake -DGGML_CUDA=ON, CUDA 12.2.91 "
                       "module, committed 2024-09-10)",
    "Nvidia H100 GPU": "llama.cpp/H100/README.MD and *.sh (git clone of master, cmake -DGGML_CUDA=ON, CUDA 12.3.0 "
                       "module; the README's nvidia-smi is dated 2024-09-10: H100 80GB HBM3, 700 W)",
    "Nvidia GH200 GPU": "llama.cpp/GH200 (Apptainer image llama-cpp-gh200.def built from master)",
    "AMD MI300X GPU": "llama.cpp/MI300X/run-benchmark.sh (HIP build; committed 2024-09-21)",
}


def main() -> None:
    text = subprocess.run(["git", "--git-dir", sys.argv[1], "show", f"{COMMIT}:Plots/All_results.csv"],
                          check=True, capture_output=True, text=True).stdout
    existing = [json.loads(line) for line in FILE.open()]
    n = max(int(r["id"].split("-")[1]) for r in existing)
    taken = {(r["plan"]["hardware"]["gpu"], r["plan"]["model"]["name"], r["plan"]["workload"]["output_tokens"])
             for r in existing if r["plan"]["workload"]["engine"] == "llama.cpp"}
    for x in csv.DictReader(text.splitlines()):
        if (x["Framework"] != "llama.cpp" or x["Hardware"] not in GPUS or x["Num of Hardware"] != "1"
                or x["Batch Size"] != "1" or int(x["Input Output Length"]) not in LENGTHS):
            continue
        length, latency, tput = int(x["Input Output Length"]), float(x["Latency"]), float(x["Throughput"])
        if (GPUS[x["Hardware"]], x["Model"], 2 * length) in taken:
            continue  # already in the file (the script prints only rows not yet taken)
        value = 2 * length / latency
        if abs(value / tput - 1) > 1e-3:
            raise SystemExit(f"{x}: Throughput is not 2L / Latency")
        n += 1
        note = " ".join((
            f"LLM-Inference-Bench (Argonne, arXiv 2411.00136) Plots/All_results.csv row: {x['Hardware']}, 1 GPU,",
            f"llama.cpp, {x['Model']}, input = output = {length}, 'Batch Size' 1: Latency {latency:.4f} s,",
            f"Throughput {tput:.2f} tok/s. Setup: {SETUP[x['Hardware']]}; command `llama-bench -m <model>_f16.gguf",
            f"-p {length} -n {length} -pg {length},{length} -b 1 -r 1 -o csv`: the Throughput is the -pg test,",
            f"({length} + {length}) tokens / latency. '-b' is llama-bench's n_batch, not a batch of sequences: with",
            f"n_batch 1 the {length} prompt tokens are decoded one per llama_decode call (each a batch-1 step",
            f"with logits), then {length} tokens are generated, so value = {2 * length} batch-1 decode steps",
            "from an empty cache = the plan's decode of 0 + "
            f"{2 * length} tokens. F16 GGUF (the scripts' *_f16.gguf), llama-bench defaults otherwise (flash",
            "attention off, f16 KV cache, all layers on the GPU), one repetition (-r 1) after llama-bench's",
            "warm-up. Build not pinned: master cloned in September 2024 (engine_version '2024-09', after CUDA",
            "graphs). GPU variant as ARGONNE's rows infer it. Added on branch s34-llamahbm."))
        print(json.dumps({"id": f"ARGONNE-{n:04d}",
                          "plan": {"model": {"name": x["Model"]},
                                   "workload": {"task": "inference", "precision": "fp16", "engine": "llama.cpp",
                                                "engine_version": "2024-09", "load": "static", "batch_size": 1,
                                                "prompt_tokens": 0, "output_tokens": 2 * length,
                                                "flash_attention": False},
                                   "hardware": {"gpu": GPUS[x["Hardware"]], "count": 1}},
                          "metric": "decode_tok_s", "value": round(value, 2),
                          "unit": "tokens/s (llama-bench -pg L,L with -b 1: 2L tokens / latency)", "source_url": URL,
                          "source_date": "2024-09-27",
                          "software": "llama.cpp master of September 2024 (build not stated), llama-bench",
                          "source_note": note, "split": "holdout"}))


if __name__ == "__main__":
    main()
