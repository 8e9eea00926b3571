"""Check the inference calibration rows (mlrig/data/calibration/*.jsonl) against CALIBRATION-FORMAT.

Usage: python scripts/check_calibration_inference.py [FILE.jsonl ...]
(no arguments: every *.jsonl under mlrig/data/calibration; ids are checked for uniqueness across all of them).

Checks, per row: valid JSON object; required fields present and typed; id is ``<TAG>-<NNNN>`` and unique;
plan sections and keys spelled as in PLAN-FORMAT (including the "Keys published runs need"); enum values
(task, load, split, memory_measure, metric); numbers positive; dates ISO; one split per source tag (whole sources
are held out). Prints one line per problem and a per-file summary; exit status 1 when any problem is found.
Only the standard library is used so it runs anywhere.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

CAL_DIR = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"

REQUIRED: dict[str, type | tuple[type, ...]] = {
    "id": str, "plan": dict, "metric": str, "value": (int, float), "unit": str, "source_url": str, "source_date": str,
    "software": str, "source_note": str, "split": str}
OPTIONAL: dict[str, type] = {"memory_measure": str, "anomaly": bool}

# PLAN-FORMAT: the starting contract plus "Keys published runs need".
PLAN_KEYS = {
    "id": None, "model": None, "workload": None, "training": None, "hardware": None,
}
MODEL_KEYS = {"name", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_dim", "intermediate_size", "mlp",
              "vocab_size", "tie_word_embeddings", "num_experts", "experts_per_token", "params"}
WORKLOAD_KEYS = {"task", "precision", "kv_cache_precision", "engine", "batch_size", "prompt_tokens", "output_tokens",
                 "context_tokens", "gpu_memory_utilization", "load", "request_rate", "num_requests", "max_num_seqs",
                 "max_num_batched_tokens", "max_model_len", "engine_version"}
TRAINING_KEYS = {"method", "lora_rank", "optimizer", "seq_len", "global_batch_tokens", "gradient_checkpointing",
                 "zero_stage", "offload", "tokens_to_train", "activation_checkpointing", "lora_targets", "chunked_loss",
                 "activation_offload", "context_parallel", "expert_parallel", "sequence_parallel"}
HARDWARE_KEYS = {"gpu", "count", "nodes", "tensor_parallel", "pipeline_parallel", "interconnect", "power_limit_w"}

METRICS = {"decode_tok_s", "prefill_tok_s", "ttft_ms", "tpot_ms", "throughput_tok_s", "total_throughput_tok_s",
           "throughput_tok_s_per_gpu", "requests_per_s", "train_tokens_per_s", "train_tokens_per_s_per_gpu", "mfu",
           "step_time_s", "time_to_train_s", "per_gpu_gib", "host_ram_gib", "kv_cache_capacity_tokens", "weights_gib"}
MEMORY_METRICS = {"per_gpu_gib", "host_ram_gib"}
MEMORY_MEASURES = {"torch_allocated", "torch_reserved", "nvidia_smi", "unknown"}
LOADS = {"static", "concurrency", "offline", "rate"}
TASKS = {"inference", "finetune", "pretrain"}
ID_RE = re.compile(r"^([A-Z0-9]+)-(\d{4})$")
POSITIVE_INTS = ("batch_size", "prompt_tokens", "output_tokens", "context_tokens", "num_requests", "max_num_seqs",
                 "max_num_batched_tokens", "max_model_len")


def check_plan(plan: dict, where: str) -> list[str]:
    """Problems with one row's plan: unknown sections/keys, bad enums, non-positive sizes."""
    out = [f"{where}: unknown plan section {k!r}" for k in plan if k not in PLAN_KEYS]
    for sec, keys in (("model", MODEL_KEYS), ("workload", WORKLOAD_KEYS), ("training", TRAINING_KEYS),
                      ("hardware", HARDWARE_KEYS)):
        body = plan.get(sec)
        if body is None:
            if sec in ("model", "workload", "hardware"):
                out.append(f"{where}: plan has no [{sec}] section")
            continue
        if not isinstance(body, dict):
            out.append(f"{where}: plan[{sec!r}] is not an object")
            continue
        out += [f"{where}: plan[{sec!r}] has unknown key {k!r}" for k in body if k not in keys]
    model = plan.get("model") or {}
    if not isinstance(model.get("name"), str) or not model.get("name"):
        out.append(f"{where}: model.name missing")
    wl = plan.get("workload") or {}
    if wl.get("task") not in TASKS:
        out.append(f"{where}: workload.task {wl.get('task')!r} not one of {sorted(TASKS)}")
    for k in ("precision", "engine"):
        if not isinstance(wl.get(k), str) or not wl.get(k):
            out.append(f"{where}: workload.{k} missing")
    if "load" in wl and wl["load"] not in LOADS:
        out.append(f"{where}: workload.load {wl['load']!r} not one of {sorted(LOADS)}")
    if wl.get("load") == "rate" and not isinstance(wl.get("request_rate"), (int, float)):
        out.append(f"{where}: load 'rate' without request_rate")
    for k in POSITIVE_INTS:
        if k in wl and not (isinstance(wl[k], int) and wl[k] > 0):
            out.append(f"{where}: workload.{k} must be a positive integer, got {wl[k]!r}")
    util = wl.get("gpu_memory_utilization")
    if util is not None and not (isinstance(util, (int, float)) and 0 < util <= 1):
        out.append(f"{where}: gpu_memory_utilization {util!r} outside (0, 1]")
    hw = plan.get("hardware") or {}
    if not isinstance(hw.get("gpu"), str) or not hw.get("gpu"):
        out.append(f"{where}: hardware.gpu missing")
    for k in ("count", "nodes", "tensor_parallel", "pipeline_parallel"):
        if k in hw and not (isinstance(hw[k], int) and hw[k] > 0):
            out.append(f"{where}: hardware.{k} must be a positive integer, got {hw[k]!r}")
    tp, pp, count, nodes = (hw.get("tensor_parallel", 1), hw.get("pipeline_parallel", 1), hw.get("count", 1),
                            hw.get("nodes", 1))
    if all(isinstance(x, int) for x in (tp, pp, count, nodes)) and tp * pp > count * nodes:
        out.append(f"{where}: tensor_parallel x pipeline_parallel ({tp}x{pp}) exceeds the GPUs ({count}x{nodes} nodes)")
    return out


def check_row(row: object, where: str) -> list[str]:
    """Problems with one JSON line."""
    if not isinstance(row, dict):
        return [f"{where}: not a JSON object"]
    out = []
    for k, typ in REQUIRED.items():
        if k not in row:
            out.append(f"{where}: missing field {k!r}")
        elif not isinstance(row[k], typ) or isinstance(row[k], bool):
            out.append(f"{where}: field {k!r} has type {type(row[k]).__name__}")
    for k in row:
        if k not in REQUIRED and k not in OPTIONAL:
            out.append(f"{where}: unknown field {k!r}")
    if out:
        return out
    if not ID_RE.match(row["id"]):
        out.append(f"{where}: id {row['id']!r} is not <TAG>-<NNNN>")
    if row["metric"] not in METRICS:
        out.append(f"{where}: metric {row['metric']!r} not in the format's list")
    if not row["value"] > 0:
        out.append(f"{where}: value {row['value']!r} is not positive")
    if row["metric"] == "mfu" and row["value"] > 1:
        out.append(f"{where}: mfu must be a fraction")
    if row["metric"] in MEMORY_METRICS and row.get("memory_measure") not in MEMORY_MEASURES:
        out.append(f"{where}: {row['metric']} row needs memory_measure in {sorted(MEMORY_MEASURES)}")
    if "memory_measure" in row and row["memory_measure"] not in MEMORY_MEASURES:
        out.append(f"{where}: memory_measure {row['memory_measure']!r} unknown")
    if row["split"] not in ("fit", "holdout"):
        out.append(f"{where}: split {row['split']!r} is not fit/holdout")
    try:
        dt.date.fromisoformat(row["source_date"])
    except ValueError:
        out.append(f"{where}: source_date {row['source_date']!r} is not an ISO date")
    if not row["source_url"].startswith("https://"):
        out.append(f"{where}: source_url is not an https URL")
    if len(row["source_note"]) < 20:
        out.append(f"{where}: source_note too short to say what was measured")
    return out + check_plan(row["plan"], where)


def main(argv: list[str]) -> int:
    files = [Path(a) for a in argv] if argv else sorted(CAL_DIR.glob("*.jsonl"))
    problems: list[str] = []
    ids: Counter[str] = Counter()
    split_by_tag: dict[str, set[str]] = defaultdict(set)
    for f in files:
        n = 0
        for i, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{f.name}:{i}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{where}: invalid JSON ({e.msg})")
                continue
            n += 1
            problems += check_row(row, where)
            if isinstance(row, dict) and isinstance(row.get("id"), str):
                ids[row["id"]] += 1
                m = ID_RE.match(row["id"])
                if m and isinstance(row.get("split"), str):
                    split_by_tag[m.group(1)].add(row["split"])
        print(f"{f.name}: {n} rows")
    problems += [f"duplicate id {k} ({v} times)" for k, v in ids.items() if v > 1]
    problems += [f"source {t} mixes fit and holdout rows" for t, s in split_by_tag.items() if len(s) > 1]
    for p in problems:
        print(p)
    print(f"{sum(ids.values())} rows, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
