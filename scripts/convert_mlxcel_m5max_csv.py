"""Write mlrig/data/calibration/apple_mlx_mlxcel_m5max_csv.jsonl (source tag MLXCELM5CSV).

    python scripts/convert_mlxcel_m5max_csv.py

Source: lablup/mlxcel benchmarks/pylm_m5max_2026-09-06.csv @ d653875: the Python mlx-lm 0.31.3 baseline sweep
(`build_type` python) on the same MacBook Pro M5 Max 128 GB as MLXCELM5MAX, 2026-09-06: one process per model,
`prompt_tokens` 512 (513 where the CSV says so), `generated_tokens` 128, and the CSV's `prefill_tok_s`
(prompt tokens / prefill_ms) and `decode_tok_s` (generated / decode_ms). Rows of models the catalog has; a model
with two checkpoints in the sweep keeps the one MLXCELM5MAX named. Values copied from the CSV, as printed.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "calibration" / "apple_mlx_mlxcel_m5max_csv.jsonl"
COMMIT = "d6538755b10639de8d2795189b4446e99a903feb"
URL = f"https://github.com/lablup/mlxcel/blob/{COMMIT}/benchmarks/pylm_m5max_2026-09-06.csv"
GPU = "Apple M5 Max 40-core GPU 128GB"
SOFTWARE = ("mlx-lm 0.31.3 (the CSV's baseline_version 'mlx-lm-0.31.3', build_type python; MLX version and macOS "
            "release not in the CSV)")

# Prefill rows are kept and not scored: whether MLX runs its prompt matmuls on the M5 GPU's Neural Accelerators
# (MLX from 0.30 on macOS 26.2+, Apple Machine Learning Research, "Exploring LLMs with MLX and the Neural
# Accelerators in the M5 GPU", 2025-11) hinges on the MLX and macOS releases, which the CSV does not state; mlrig
# prices MLX at the SIMD rate (efficiency.APPLE_NEURAL_ACCEL_GEMM_SPEEDUP has no "mlx" entry, fitted rows of the
# older setup: ZISKIND-0028..0035), and these rows measure 2-4x that (dense 8B: ~3.7x).
PREFILL_ANOMALY = (" Anomaly: the prediction hinges on whether MLX drives the M5 GPU's Neural Accelerators "
                   "(MLX 0.30+ on macOS 26.2+), and the CSV states neither the MLX nor the macOS release; measured "
                   "2-4x mlrig's SIMD-rate prediction.")

# (CSV model, catalog model, precision, prompt tokens, prefill tok/s, decode tok/s, note)
ROWS: list[tuple[str, str, str, int, float, float, str]] = [
    ("aya-expanse-8b-4bit", "CohereForAI/aya-23-8B", "mlx-4bit", 512, 3078.93, 112.28,
     "aya-expanse-8b through the catalog's aya-23-8B (same Cohere 8B architecture)."),
    ("deepseek-r1-distill-7b-4bit", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "mlx-4bit", 512, 3339.11, 123.23, ""),
    ("deepseek-v2-lite-4bit", "deepseek-ai/DeepSeek-V2-Lite", "mlx-4bit", 512, 5088.46, 207.27, "MoE."),
    ("gemma-2b-4bit", "google/gemma-2b", "mlx-4bit", 512, 8015.51, 209.37, ""),
    ("gemma2-2b-4bit", "google/gemma-2-2b-it", "mlx-4bit", 512, 8169.68, 222.09, ""),
    ("gemma3-1b-4bit", "google/gemma-3-1b-it", "mlx-4bit", 512, 10207.20, 375.08, ""),
    ("gemma3-4b-4bit", "google/gemma-3-4b-it", "mlx-4bit", 512, 5194.79, 175.42, ""),
    ("gpt-oss-120b-4bit", "openai/gpt-oss-120b", "mlx-4bit", 512, 1614.46, 110.82, "MLX 4-bit affine conversion. MoE."),
    ("llama-3.1-8b-4bit", "meta-llama/Llama-3.1-8B-Instruct", "mlx-4bit", 512, 3185.37, 115.82, ""),
    ("llama-3.1-8b-bf16", "meta-llama/Llama-3.1-8B-Instruct", "bf16", 512, 2715.49, 33.25, "Unquantised bf16."),
    ("llama-3.2-1b-4bit", "meta-llama/Llama-3.2-1B-Instruct", "mlx-4bit", 512, 17194.53, 537.29, ""),
    ("mistral-small-3.1-24b-4bit", "mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mlx-4bit", 512, 1046.97, 40.89,
     "Text path."),
    ("mixtral-8x7b-4bit", "mistralai/Mixtral-8x7B-v0.1", "mlx-4bit", 513, 1341.86, 65.85, "Instruct checkpoint. MoE."),
    ("olmo2-7b-4bit", "allenai/OLMo-2-1124-7B", "mlx-4bit", 512, 3311.65, 113.83, ""),
    ("phi-3-mini-4bit", "microsoft/Phi-3-mini-4k-instruct", "mlx-4bit", 512, 5589.12, 197.61, ""),
    ("phi-3.5-mini-4bit", "microsoft/Phi-3.5-mini-instruct", "mlx-4bit", 512, 5587.50, 194.13, ""),
    ("phi-4-4bit", "microsoft/phi-4", "mlx-4bit", 512, 1678.73, 62.56, ""),
    ("qwen1.5-moe-a2.7b-4bit", "Qwen/Qwen1.5-MoE-A2.7B", "mlx-4bit", 512, 5976.72, 232.03, "Chat checkpoint. MoE."),
    ("qwen2.5-0.5b-4bit", "Qwen/Qwen2.5-0.5B-Instruct", "mlx-4bit", 512, 28346.22, 602.24, ""),
    ("qwen2.5-0.5b-bf16", "Qwen/Qwen2.5-0.5B-Instruct", "bf16", 512, 31091.54, 391.22, "Unquantised bf16."),
    ("qwen2.5-1.5b-instruct-4bit", "Qwen/Qwen2.5-1.5B-Instruct", "mlx-4bit", 512, 12771.37, 366.82, ""),
    ("qwen2.5-7b-4bit", "Qwen/Qwen2.5-7B-Instruct", "mlx-4bit", 512, 3147.57, 123.67, ""),
    ("qwen2.5-7b-8bit", "Qwen/Qwen2.5-7B-Instruct", "mlx-8bit", 512, 2914.93, 67.66, "MLX 8-bit affine."),
    ("qwen3-0.6b-4bit", "Qwen/Qwen3-0.6B", "mlx-4bit", 512, 22777.19, 570.53, ""),
    ("qwen3-1.7b-4bit", "Qwen/Qwen3-1.7B", "mlx-4bit", 512, 11993.66, 365.56, ""),
    ("qwen3-30b-a3b-4bit", "Qwen/Qwen3-30B-A3B", "mlx-4bit", 512, 3037.60, 143.81, "MoE."),
    ("qwen3-4b-4bit", "Qwen/Qwen3-4B", "mlx-4bit", 512, 5452.34, 185.95, ""),
    ("qwen3-8b-4bit", "Qwen/Qwen3-8B", "mlx-4bit", 512, 3157.69, 112.38, ""),
    ("qwen3-vl-30b-a3b-4bit", "Qwen/Qwen3-VL-30B-A3B-Instruct", "mlx-4bit", 512, 3412.52, 145.32, "Text path. MoE."),
    ("qwen3-vl-8b-instruct-4bit", "Qwen/Qwen3-VL-8B-Instruct", "mlx-4bit", 512, 3171.42, 113.12, "Text path."),
]


def rows() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for name, model, precision, prompt, prefill, decode, extra in ROWS:
        for metric, value, column in (("decode_tok_s", decode, "decode_tok_s"),
                                      ("prefill_tok_s", prefill, "prefill_tok_s")):
            note = (f"CSV row '{name}', column {column}: {value:.2f} (prompt_tokens {prompt}, generated_tokens 128, "
                    f"date 2026-09-06, hardware Apple_M5_Max_128GB, baseline_version mlx-lm-0.31.3, prompt 'Hello, how "
                    f"are you today?' as the CSV names it, max_tokens 128). The GPU core count is not stated; Apple "
                    f"sells 128 GB only with the 40-core GPU. {extra}").strip()
            out.append({
                "id": f"MLXCELM5CSV-{len(out) + 1:04d}",
                "plan": {"model": {"name": model},
                         "workload": {"task": "inference", "precision": precision, "engine": "mlx",
                                      "engine_version": "mlx-lm 0.31.3", "batch_size": 1, "prompt_tokens": prompt,
                                      "output_tokens": 128 if metric == "decode_tok_s" else 0, "load": "static"},
                         "hardware": {"gpu": GPU, "count": 1, "tensor_parallel": 1}},
                "metric": metric, "value": value, "unit": f"tokens/s (the CSV's {column})",
                "source_url": URL, "source_date": "2026-09-06", "software": SOFTWARE, "source_note": note,
                "split": "holdout",
            })
            if metric == "prefill_tok_s":
                out[-1]["anomaly"] = True
                out[-1]["source_note"] += PREFILL_ANOMALY
    return out


def main() -> None:
    with OUT.open("w", encoding="utf-8") as f:
        for r in rows():
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"wrote {2 * len(ROWS)} rows to {OUT}")


if __name__ == "__main__":
    main()
