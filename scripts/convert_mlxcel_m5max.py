"""Write mlrig/data/calibration/apple_mlx_mlxcel_m5max.jsonl (source tag MLXCELM5MAX).

    python scripts/convert_mlxcel_m5max.py

Source: lablup/mlxcel docs/benchmark_results/model_tests_m5max.md @ 30a90ae, section 'Performance vs mlx-lm /
mlx-vlm baseline (2026-05-19 benchmark campaign)' > 'Text decode (tok/s)': the `mlx-lm` column, the Python
mlx-lm 0.31.3 baseline (dev checkout @ ed1fca4) that mlxcel compares itself with on the same MacBook Pro M5 Max
128 GB (macOS 26.4), prompt 'Hello, how are you today?', max 100 tokens, one process per model (load, warm-up,
measured pass). The same campaign's M1 Ultra page gave MLXCELM1U. The table has 66 comparable text pairs; the
rows below are those whose model the catalog has (the others are listed in SOURCES-inference.md).
output_tokens: the token count the same page's per-family table gives for the mlxcel pass of the same model and
prompt (the baseline's own count is not published; greedy decoding of the same checkpoint stops at the same
EOS in the cases the page compares, and decode speed at these < 200-token contexts barely depends on it).
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "calibration" / "apple_mlx_mlxcel_m5max.jsonl"
COMMIT = "30a90ae34930c712776d1d941cfe23a6dc63b3df"
URL = f"https://github.com/lablup/mlxcel/blob/{COMMIT}/docs/benchmark_results/model_tests_m5max.md"
GPU = "Apple M5 Max 40-core GPU 128GB"
SOFTWARE = ("mlx-lm 0.31.3 (dev checkout @ ed1fca4 'Thread local generation stream'; MLX version of the Python "
            "baseline not stated; mlxcel's own pin MLX 0.31.2), macOS 26.4")

# (table row, mlx-lm tok/s, catalog model, precision, output tokens (mlxcel pass, per-family table), family
#  table's Test Model, extra note)
ROWS: list[tuple[str, float, str, str, int, str, str]] = [
    ("aya-expanse-8b-4bit", 113.87, "CohereForAI/aya-23-8B", "mlx-4bit", 100, "aya-expanse-8b-4bit",
     "Model: aya-expanse-8b through the catalog's aya-23-8B (same Cohere 8B architecture), as MLXCELM1U-0030."),
    ("deepseek-r1-distill-7b-4bit", 125.63, "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", "mlx-4bit", 100,
     "DeepSeek-R1-Distill-Qwen-7B-4bit", ""),
    ("deepseek-v2-lite-4bit", 215.00, "deepseek-ai/DeepSeek-V2-Lite", "mlx-4bit", 44, "DeepSeek-V2-Lite-Chat-4bit",
     "Model: the Chat variant of the catalog's DeepSeek-V2-Lite (same architecture). MoE."),
    ("gemma-2b-4bit", 223.27, "google/gemma-2b", "mlx-4bit", 49, "gemma-2b-it-4bit",
     "Model: gemma-2b-it through the catalog's gemma-2b (same architecture), as MLXCELM1U-0017."),
    ("gemma2-2b-4bit", 241.76, "google/gemma-2-2b-it", "mlx-4bit", 18, "gemma-2-2b-it-4bit", ""),
    ("gemma3-1b-4bit", 388.52, "google/gemma-3-1b-it", "mlx-4bit", 30, "gemma-3-1b-it-4bit", ""),
    ("gemma3-4b-4bit", 181.66, "google/gemma-3-4b-it", "mlx-4bit", 81, "gemma-3-4b-it-4bit", ""),
    ("gpt-oss-120b-4bit", 110.35, "openai/gpt-oss-120b", "mlx-4bit", 78, "gpt-oss-120b-4bit",
     "MLX 4-bit affine conversion (the row's name; not the MXFP4 original). MoE."),
    ("llama-3.1-8b-4bit", 117.43, "meta-llama/Llama-3.1-8B-Instruct", "mlx-4bit", 100,
     "Llama-3.1-8B-Instruct-4bit", ""),
    ("llama-3.1-8b-bf16", 34.29, "meta-llama/Llama-3.1-8B-Instruct", "bf16", 87, "Llama-3.1-8B-Instruct (bf16)",
     "Unquantised bf16."),
    ("llama-3.2-1b-4bit", 578.64, "meta-llama/Llama-3.2-1B-Instruct", "mlx-4bit", 31, "Llama-3.2-1B-Instruct-4bit",
     ""),
    ("mistral-small-3.1-24b-4bit", 41.49, "mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mlx-4bit", 100,
     "mistral-small-3.1-24b-4bit", "Text path of the multimodal checkpoint."),
    ("mixtral-8x7b-4bit", 66.08, "mistralai/Mixtral-8x7B-v0.1", "mlx-4bit", 73, "Mixtral-8x7B-Instruct-v0.1-4bit",
     "Model: the instruct variant of the catalog's Mixtral-8x7B-v0.1 (same architecture). MoE."),
    ("olmo2-7b-4bit", 120.79, "allenai/OLMo-2-1124-7B", "mlx-4bit", 27, "OLMo2-7B-4bit", ""),
    ("phi-3-mini-4bit", 212.74, "microsoft/Phi-3-mini-4k-instruct", "mlx-4bit", 25, "Phi-3-mini-4k-instruct-4bit",
     ""),
    ("phi-3.5-mini-4bit", 207.79, "microsoft/Phi-3.5-mini-instruct", "mlx-4bit", 40, "Phi-3.5-mini-instruct-4bit",
     ""),
    ("phi-4-4bit", 62.28, "microsoft/phi-4", "mlx-4bit", 100, "Phi-4-4bit", ""),
    ("qwen1.5-moe-a2.7b-4bit", 237.50, "Qwen/Qwen1.5-MoE-A2.7B", "mlx-4bit", 100, "Qwen1.5-MoE-A2.7B-Chat-4bit",
     "Model: the Chat variant of the catalog's Qwen1.5-MoE-A2.7B (same architecture). MoE."),
    ("qwen2.5-0.5b-4bit", 637.17, "Qwen/Qwen2.5-0.5B-Instruct", "mlx-4bit", 100, "Qwen2.5-0.5B-Instruct-4bit", ""),
    ("qwen2.5-0.5b-bf16", 402.73, "Qwen/Qwen2.5-0.5B-Instruct", "bf16", 100, "Qwen2.5-0.5B-Instruct (bf16)",
     "Unquantised bf16."),
    ("qwen2.5-7b-4bit", 123.59, "Qwen/Qwen2.5-7B-Instruct", "mlx-4bit", 100, "Qwen2.5-7B-Instruct-4bit", ""),
    ("qwen2.5-7b-8bit", 67.44, "Qwen/Qwen2.5-7B-Instruct", "mlx-8bit", 100, "Qwen2.5-7B-Instruct-8bit",
     "MLX 8-bit affine."),
    ("qwen3-0.6b-4bit", 651.14, "Qwen/Qwen3-0.6B", "mlx-4bit", 9, "Qwen3-0.6B-4bit", ""),
    ("qwen3-1.7b-4bit", 384.84, "Qwen/Qwen3-1.7B", "mlx-4bit", 14, "Qwen3-1.7B-4bit", ""),
    ("qwen3-30b-a3b-4bit", 147.22, "Qwen/Qwen3-30B-A3B", "mlx-4bit", 34, "Qwen3-30B-A3B-4bit", "MoE."),
    ("qwen3-4b-4bit", 190.94, "Qwen/Qwen3-4B", "mlx-4bit", 41, "Qwen3-4B-4bit", ""),
    ("qwen3-8b-4bit", 113.40, "Qwen/Qwen3-8B", "mlx-4bit", 33, "Qwen3-8B-4bit", ""),
    ("qwen3-moe-4bit", 146.51, "Qwen/Qwen3-30B-A3B", "mlx-4bit", 34, "Qwen3-MoE-30B-4bit",
     "Model: a second 4-bit Qwen3-30B-A3B checkpoint of the sweep ('Qwen3-MoE-30B-4bit'; the 'qwen3-30b-a3b-4bit' "
     "row is MLXCELM5MAX-0025). MoE."),
    ("qwen3-vl-30b-a3b-4bit", 146.87, "Qwen/Qwen3-VL-30B-A3B-Instruct", "mlx-4bit", 35,
     "Qwen3-VL-30B-A3B-Instruct-4bit", "Qwen3-VL-30B-A3B-Instruct 4-bit through mlx-lm (text path). MoE."),
]

QUANT = {"mlx-4bit": "mlx-community MLX 4-bit (affine, group 64).", "mlx-8bit": "", "bf16": ""}


def row(i: int, r: tuple[str, float, str, str, int, str, str]) -> dict[str, object]:
    name, value, model, precision, out_tokens, family_name, extra = r
    note = (
        f"section 'Performance vs mlx-lm / mlx-vlm baseline (2026-05-19 benchmark campaign)' > 'Text decode "
        f"(tok/s)', row '{name}', column 'mlx-lm': {value:.2f} = the Python mlx-lm baseline's decode tok/s on the "
        f"same host (the 'mlxcel' column and ratio not used; baseline CSV benchmarks/pylm_m5max_2026-05-18.csv, "
        f"the campaign crossed midnight). {QUANT[precision]} output_tokens {out_tokens}: the count the page's "
        f"per-family table gives for the mlxcel pass of '{family_name}' on the same prompt (the baseline's own "
        f"count is not published). Prompt 'Hello, how are you today?' (length after the chat template not "
        f"stated: prompt_tokens left at the default), max 100 tokens, model load + warm-up + measured pass in "
        f"one process. MacBook Pro M5 Max 128 GB, macOS 26.4: the GPU core count is not stated, but Apple sells "
        f"128 GB only with the 40-core GPU (the catalog's M5 Max bins), so the plan names the 40-core 128 GB "
        f"entry. {extra}"
    ).strip()
    return {
        "id": f"MLXCELM5MAX-{i:04d}",
        "plan": {"model": {"name": model},
                 "workload": {"task": "inference", "precision": precision, "engine": "mlx",
                              "engine_version": "mlx-lm 0.31.3", "batch_size": 1, "output_tokens": out_tokens,
                              "load": "static"},
                 "hardware": {"gpu": GPU, "count": 1, "tensor_parallel": 1}},
        "metric": "decode_tok_s",
        "value": value,
        "unit": "tokens/s (mlx-lm decode, the 'mlx-lm' column of 'Text decode (tok/s)')",
        "source_url": URL,
        "source_date": "2026-05-19",
        "software": SOFTWARE,
        "source_note": note,
        "split": "fit",
    }


def main() -> None:
    with OUT.open("w", encoding="utf-8") as f:
        for i, r in enumerate(ROWS, 1):
            f.write(json.dumps(row(i, r), ensure_ascii=False) + "\n")
    print(f"wrote {len(ROWS)} rows to {OUT}")


if __name__ == "__main__":
    main()
