"""Check the training / fine-tuning calibration rows (issue 10) and print their coverage.

Reads ``mlrig/data/calibration/{finetune,pretrain,train}_*.jsonl`` (the files listed in
``mlrig/data/calibration/SOURCES-training.md``) and checks each row against the row format in
CALIBRATION-FORMAT.md: required fields, a unique ``<TAG>-<NNNN>`` id, a known metric with a positive
value, ``memory_measure`` on memory rows, an ISO ``source_date``, a plan with model / workload /
hardware, and whole-source hold-outs (every row of one id tag has the same split).

It then prints row counts per file and per group (engine family x hardware class x metric x method)
and the fit/holdout split. Exit status 1 when any row is malformed. Standard library only.

Usage: python scripts/check_calibration_training.py [CALIBRATION_DIR]
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import re
import sys
from pathlib import Path
from typing import Any

METRICS = {
    "train_tokens_per_s",
    "train_tokens_per_s_per_gpu",
    "mfu",
    "step_time_s",
    "time_to_train_s",
    "per_gpu_gib",
    "host_ram_gib",
}
FAMILIES = (
    "nemo",
    "litgpt",
    "fsdp_qlora",
    "fms-fsdp",
    "olmo-core",
    "atorch",
    "hf-peft",
    "hf-trainer",
    "hai-llm",
    "axolotl",
    "meta-internal",
)
MEMORY_MEASURES = {"torch_allocated", "torch_reserved", "nvidia_smi", "unknown"}
REQUIRED = ("id", "plan", "metric", "value", "unit", "source_url", "source_date", "software", "source_note", "split")
ID_RE = re.compile(r"^(?P<tag>[A-Z0-9]+(?:-[A-Z0-9]+)*)-(?P<num>\d{4})$")
FILE_GLOBS = ("finetune_*.jsonl", "pretrain_*.jsonl", "train_*.jsonl")

# Hardware classes used for the coverage summary (substring match on the plan's GPU name, lower case).
CONSUMER = ("rtx 3090", "rtx 4090", "rtx 5090", "rtx 3080", "rtx 4080")
WORKSTATION = ("a10g", "l4", "l40s", "a5000", "a6000", "rtx 6000")
HBM = ("a100", "h100", "h200", "h800", "b200", "mi300x", "mi325x", "mi355x")


def hardware_class(gpu: str) -> str:
    """Coarse hardware class of a GPU name: consumer GDDR, workstation/inference GDDR, or HBM datacentre."""
    g = gpu.lower()
    if any(k in g for k in CONSUMER):
        return "consumer"
    if any(k in g for k in WORKSTATION):
        return "workstation"
    if any(k in g for k in HBM):
        return "datacentre-hbm"
    return "other"


def engine_family(engine: str) -> str:
    """Group framework names into the families the calibration fits factors for."""
    e = engine.lower()
    for fam in FAMILIES:
        if fam in e:
            return fam
    return e or "unstated"


def check_row(row: Any, where: str) -> list[str]:
    """Return the problems found in one row (empty when it is well formed)."""
    if not isinstance(row, dict):
        return [f"{where}: not a JSON object"]
    errs = [f"{where}: missing field {k!r}" for k in REQUIRED if k not in row]
    if errs:
        return errs
    if not ID_RE.match(str(row["id"])):
        errs.append(f"{where}: id {row['id']!r} is not <TAG>-<NNNN>")
    if row["metric"] not in METRICS:
        errs.append(f"{where}: unknown metric {row['metric']!r}")
    value = row["value"]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        errs.append(f"{where}: value must be a positive number, got {value!r}")
    elif row["metric"] == "mfu" and value > 1:
        errs.append(f"{where}: mfu is a fraction, got {value}")
    if row["metric"] == "per_gpu_gib" and row.get("memory_measure") not in MEMORY_MEASURES:
        errs.append(f"{where}: per_gpu_gib row needs memory_measure in {sorted(MEMORY_MEASURES)}")
    if row["split"] not in ("fit", "holdout"):
        errs.append(f"{where}: split must be fit or holdout")
    try:
        dt.date.fromisoformat(str(row["source_date"]))
    except ValueError:
        errs.append(f"{where}: source_date {row['source_date']!r} is not ISO (YYYY-MM-DD)")
    if not str(row["source_url"]).startswith("https://"):
        errs.append(f"{where}: source_url must be an https URL")
    plan = row["plan"]
    if not isinstance(plan, dict):
        return [*errs, f"{where}: plan is not an object"]
    model = plan.get("model") or {}
    workload = plan.get("workload") or {}
    hardware = plan.get("hardware") or {}
    if not model.get("name"):
        errs.append(f"{where}: plan.model.name missing")
    if workload.get("task") not in ("finetune", "pretrain"):
        errs.append(f"{where}: plan.workload.task must be finetune or pretrain")
    if not hardware.get("gpu"):
        errs.append(f"{where}: plan.hardware.gpu missing")
    count = hardware.get("count", 1)
    if not isinstance(count, int) or count < 1:
        errs.append(f"{where}: plan.hardware.count must be a positive integer")
    return errs


def main(argv: list[str]) -> int:
    """Check every training calibration file, print the coverage, return the exit status."""
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parents[1] / "mlrig/data/calibration"
    files = sorted({p for pattern in FILE_GLOBS for p in root.glob(pattern)})
    if not files:
        print(f"no training calibration files under {root}; pass the calibration folder as the argument")
        return 2
    errors: list[str] = []
    ids: dict[str, str] = {}
    tag_split: dict[str, set[str]] = collections.defaultdict(set)
    per_file: dict[str, collections.Counter[str]] = {}
    groups: collections.Counter[tuple[str, str, str, str]] = collections.Counter()
    splits: collections.Counter[str] = collections.Counter()
    models: set[str] = set()
    gpus: set[str] = set()
    for path in files:
        counter: collections.Counter[str] = collections.Counter()
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.name}:{lineno}"
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                errors.append(f"{where}: invalid JSON ({exc.msg})")
                continue
            problems = check_row(row, where)
            errors.extend(problems)
            if problems:
                continue
            if row["id"] in ids:
                errors.append(f"{where}: duplicate id {row['id']} (also in {ids[row['id']]})")
            ids[row["id"]] = where
            match = ID_RE.match(row["id"])
            if match:
                tag_split[match.group("tag")].add(row["split"])
            plan = row["plan"]
            training = plan.get("training") or {}
            hw = plan["hardware"]["gpu"]
            key = (
                engine_family(str(plan["workload"].get("engine", ""))),
                hardware_class(hw),
                row["metric"],
                str(training.get("method", "full")),
            )
            groups[key] += 1
            counter[row["split"]] += 1
            splits[row["split"]] += 1
            models.add(str(plan["model"]["name"]))
            gpus.add(hw)
        per_file[path.name] = counter
    for tag, seen in sorted(tag_split.items()):
        if len(seen) > 1:
            errors.append(f"source tag {tag}: rows split across fit and holdout (hold out whole sources)")
    print("rows per file (fit / holdout):")
    for name, counter in per_file.items():
        print(f"  {name:45s} {sum(counter.values()):4d}  ({counter['fit']} / {counter['holdout']})")
    total = sum(splits.values())
    share = splits["holdout"] / max(total, 1)
    print(f"total {total} rows: fit {splits['fit']}, holdout {splits['holdout']} ({share:.0%})")
    print("rows per group (engine family x hardware class x metric x method):")
    for (fam, hwc, metric, method), n in sorted(groups.items()):
        print(f"  {fam:12s} {hwc:15s} {metric:28s} {method:6s} {n:4d}")
    print(f"{len(models)} models, {len(gpus)} GPU names")
    if errors:
        print(f"{len(errors)} problem(s):")
        for err in errors:
            print("  " + err)
        return 1
    print("all rows well formed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
