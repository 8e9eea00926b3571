"""Write the LLMSERVE rows (serving_gddr_llmserve_a10g.jsonl) from a local Subrahmanyam2305/LLM-serve git directory.

The repository's analysis/<model>/{vllm,triton}_server_results.json @ COMMIT hold, per concurrency N, the mean over 5
runs of one static wave of the first N ShareGPT prompts (benchmarks/benchmark_triton.py): the wave's wall time
(avg_latency_ms), output tok/s, mean TTFT and mean inter-token latency. Usage:
python scripts/convert_llmserve_a10g.py <LLM-serve git dir> > mlrig/data/calibration/serving_gddr_llmserve_a10g.jsonl
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

COMMIT = "d9cdb96"
SOURCE_DATE = "2026-02-07"
MODELS = {  # analysis dir: (HF id, chat-template tokens vLLM's chat endpoint adds (estimated))
    "gemma": ("google/gemma-3-1b-it", 10),
    "llama": ("meta-llama/Llama-3.2-3B-Instruct", 37),
    "phi": ("microsoft/phi-2", 0),
    "qwen": ("Qwen/Qwen2.5-3B-Instruct", 30),
}
SOFTWARE = {
    "trt-llm": (
        "TensorRT-LLM 1.1.0 TensorRT engines (engine_version 1.1.0+tensorrt: trtllm-build, not the PyTorch backend; "
        "fp16, --gemm_plugin float16, --max_batch_size 64; docs/ISSUES_FACED.md §15) served by Triton "
        "(nvcr.io/nvidia/tritonserver:25.12-trtllm-python-py3, in-flight batching), gRPC streaming client"),
    "vllm": (
        "vLLM (release not stated: vllm/requirements.txt says vllm>=0.4.0 with transformers>=4.56.0, i.e. a 2025-26 "
        "release), `python -m vllm.entrypoints.openai.api_server --dtype float16 --gpu-memory-utilization 0.9` "
        "(servers/vllm_backend_server.py defaults), streaming /v1/chat/completions, temperature 0"),
}
TTFT_NOTE = (
    " Value = ttft_ms (mean over the requests and runs). The vLLM runs' ttft_ms are not taken: 97-247 ms for one short "
    "prompt and ~2 s at 16 users, 10x Triton's on the same prompts and GPU, the client's first SSE chunk from the "
    "OpenAI server rather than the engine's prefill (not separable from the file). Anomaly (kept, not scored): at 32 "
    "and 64 users these TTFTs are below the prefill's own floor (64 x ~92 prompt tokens of a 3B model = ~35 TFLOP, "
    "280 ms at the A10G's full 125 TFLOPS fp16 peak; a wave prefilled one request after another would still average "
    "half that, yet 38-61 ms were measured), and at fewer users they cannot be told apart from the same artefact, so "
    "the client's first streamed response on Triton is not the first generated token of a prompt prefilled with the "
    "wave.")


def main() -> None:
    repo = sys.argv[1]
    full = subprocess.check_output(["git", "-C", repo, "rev-parse", COMMIT], text=True).strip()

    def show(path: str) -> dict[str, Any]:
        text = subprocess.check_output(["git", "-C", repo, "show", f"{COMMIT}:{path}"], text=True)
        data: dict[str, Any] = json.loads(text)
        return data

    rows: list[dict[str, Any]] = []
    for m, (hf, tmpl) in MODELS.items():
        # the Triton files do not list their prompts: the same loader's first 100, as the vLLM file lists them
        prompts = show(f"analysis/{m}/vllm_server_results.json")["config"]["prompts"]
        for eng_file, eng in (("vllm_server_results.json", "vllm"), ("triton_server_results.json", "trt-llm")):
            path = f"analysis/{m}/{eng_file}"
            url = f"https://github.com/Subrahmanyam2305/LLM-serve/blob/{full}/{path}"
            for r in show(path)["results"]:
                c = r["concurrency"]
                chars = sum(len(p) for p in prompts[:c]) / c
                ptoks = round(chars / 4) + (tmpl if eng == "vllm" else 1)
                wall_s = r["avg_latency_ms"] / 1000
                avg_out = r["avg_tokens_per_request"]
                wl: dict[str, Any] = {"task": "inference", "precision": "fp16", "engine": eng}
                if eng == "trt-llm":
                    wl.update({"engine_version": "1.1.0+tensorrt", "max_num_seqs": 64})
                else:
                    wl["gpu_memory_utilization"] = 0.9
                wl.update({"load": "static", "batch_size": c, "prompt_tokens": ptoks, "output_tokens": 512})
                plan = {"model": {"name": hf}, "workload": wl, "hardware": {"gpu": "NVIDIA A10G", "count": 1}}
                template = (f" + ~{tmpl} tokens of chat template" if eng == "vllm" else
                            " (raw text, no chat template, on Triton; the Triton file does not list its prompts: the "
                            "same loader's first 100, as listed in the vLLM file, are assumed) + BOS")
                base_note = (
                    f"{path} @ {COMMIT} (README analysis/{m}/BENCHMARK_RESULTS.md): {hf} fp16 on one NVIDIA A10G 24 GB "
                    f"(AWS, /home/ec2-user paths), benchmarks/benchmark_triton.py --concurrency 1 2 4 8 16 32 64 "
                    f"--sharegpt: each run sends the first {c} of 100 ShareGPT prompts at once on {c} threads (one "
                    f"static wave; 2 warm-up and 5 timed runs, means), max_tokens 512, no ignore_eos: {avg_out:g} "
                    f"output tokens per request on average, so the wave lasts as long as its longest request (512 "
                    f"tokens, the cap). Prompt tokens estimated, not stated: the {c} prompts average {chars:.0f} "
                    f"characters (/4){template} = {ptoks}. Result line: throughput_tokens_per_sec "
                    f"{r['throughput_tokens_per_sec']:.2f}, avg_latency_ms {r['avg_latency_ms']:.1f} (the wave's wall "
                    f"time), ttft_ms {r['ttft_ms']:.1f}, itl_ms {r['itl_ms']:.2f}.")
                common = {"source_url": url, "source_date": SOURCE_DATE, "software": SOFTWARE[eng]}
                # the wave's wall time is set by its 512-token requests: planned as 512 outputs, value c x 512 / wall
                rows.append({"plan": plan, "metric": "throughput_tok_s", "value": round(c * 512 / wall_s, 2),
                             "unit": "derived: concurrency x 512 (max_tokens) / the wave's wall time (avg_latency_ms)",
                             **common,
                             "source_note": base_note + (
                                 f" Value = {c} x 512 / {wall_s:.4f} s: the published throughput counts the tokens "
                                 f"generated ({c} x {avg_out:g}) over that wall time; planned as {c} requests of "
                                 "512 tokens, which is what sets the wall time (requests that stop early leave the "
                                 "batch)."),
                             "split": "fit"})
                rows.append({"plan": plan, "metric": "tpot_ms", "value": round(r["itl_ms"], 2),
                             "unit": "ms, mean over the wave's requests of (last token time - first token time) / "
                                     "(chunks - 1) ('itl_ms')",
                             **common,
                             "source_note": base_note + " Value = itl_ms (a per-request mean over streamed "
                                                        "chunks, averaged over the runs; compared with the static "
                                                        "batch's TPOT).",
                             "split": "fit"})
                if eng == "trt-llm":
                    rows.append({"plan": plan, "metric": "ttft_ms", "value": round(r["ttft_ms"], 2),
                                 "statistic": "mean", "anomaly": True,
                                 "unit": "ms, mean over the wave's requests of the first streamed token's arrival "
                                         "('ttft_ms')",
                                 **common, "source_note": base_note + TTFT_NOTE, "split": "fit"})
    for n, row in enumerate(rows, 1):
        print(json.dumps({"id": f"LLMSERVE-{n:04d}", **row}))


if __name__ == "__main__":
    main()
