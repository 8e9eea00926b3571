"""Convert the spot-check table (published figures of engines never used to fit a factor) into held-out
calibration rows: mlrig/data/calibration/spot_checks.jsonl, `"split": "holdout"`.

    python scripts/convert_spot_checks.py

Rows from sources in the project's reserved list (kept for independent testing: mlc-ai/llm-perf-bench,
turboderp/exllamav2 tables, ...) are not used; six such rows (MLC and ExLlamaV2 on RTX 4090/3090 Ti)
were removed from the table on 2026-11-23.

Mapping: the engine as published -> mlrig's engine name (its version kept in `software`);
`e2e_output_tok_s` (generate() wall time: output / (prefill + output x step)) is the result's
`throughput_tok_s` at batch 1; the serving rows at --max-concurrency 4 are four concurrent users.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "scripts" / "data" / "spot_checks.csv"
OUT = ROOT / "mlrig" / "data" / "calibration" / "spot_checks.jsonl"

ENGINES = (("vllm", "vllm"), ("sglang", "sglang"), ("tensorrt", "trt-llm"), ("mlc", "mlc"),
           ("exllama", "exllamav2"), ("transformers", "transformers"), ("pytorch", "transformers"),
           ("llama.cpp", "llama.cpp"))
METRICS = {"e2e_output_tok_s": "throughput_tok_s"}


def engine_of(published: str) -> str:
    low = published.lower()
    return next(name for key, name in ENGINES if low.startswith(key))


def main() -> None:
    out = []
    with SRC.open(newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            batch = int(r["batch_size"] or 1)
            workload = {"task": "inference", "precision": r["precision"], "engine": engine_of(r["engine"]),
                        "batch_size": batch, "prompt_tokens": int(r["prompt_tokens"] or 0),
                        "output_tokens": int(r["output_tokens"] or 0)}
            if "flash-attn off" in r["note"]:
                workload["flash_attention"] = False
            plan = {"model": {"name": r["model"]}, "workload": workload,
                    "hardware": {"gpu": r["gpu"], "count": int(r["num_gpus"] or 1),
                                 "tensor_parallel": int(r["tensor_parallel"] or 1)}}
            out.append({"id": r["id"].replace("SC-", "SPOT-00"), "plan": plan,
                        "metric": METRICS.get(r["metric"], r["metric"]), "value": float(r["value"]),
                        "unit": r["unit"], "source_url": r["source_url"], "source_date": r["source_date"],
                        "software": r["engine"], "source_note": r["note"], "split": "holdout"})
    OUT.write_text("".join(json.dumps(row) + "\n" for row in out), encoding="utf-8")
    print(f"wrote {len(out)} rows to {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
