"""Memory estimates against published measurements (calibration/inference_memory.csv and
finetune_memory.csv).

Each row's settings (model, precision, engine, GPUs, parallelism, context, batch, optimizer,
checkpointing) become a Plan; the estimate is compared with the logged figure. Units are taken as
logged: vLLM's "GB" are GiB (its logs divide by 2^30); torchtune's README "GB" are GiB as well
(torchtune `get_memory_stats` divides by 1024**3). Rows whose model or GPU does not resolve in
the catalogs, or that lack a sequence length, are context only and skipped.

    python -c "from mlrig.validation.memory import run
    for g in run(): print(g.name, g.n, g.median_error, g.p90_error)"
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from mlrig.catalog.gpus import GPU, resolve_gpu
from mlrig.catalog.models import ModelArch, resolve_model
from mlrig.errors import AmbiguousNameError, MlrigError
from mlrig.estimators.memory import estimate_memory, weights_per_gpu_bytes
from mlrig.units import GiB
from mlrig.validation import ValidationGroup, ValidationRow, read_calibration_csv, summarise
from mlrig.workload import Plan

THRESHOLDS = {"weights": 0.02, "vllm_kv_tokens": 0.05, "inference_peak": 0.10, "finetune_peak": 0.15}


def _model(name: str) -> ModelArch | None:
    """Catalog architecture for a logged model name ("Llama2-7B", "Llama 3.1 8B [..]")."""
    clean = re.sub(r"\s*[\[(].*?[\])]", "", name).strip()
    clean = re.sub(r"(?i)^llama ?(\d)", r"llama-\1", clean).replace(" ", "-")
    for cand in (name, clean):
        try:
            return resolve_model(cand)
        except MlrigError:
            continue
    return None


def _gpu(hardware: str) -> GPU | None:
    """Catalog GPU for a logged hardware string; a logged total "(79.18 GiB)" overrides the
    catalog's capacity (vLLM budgets against what the device reported). Where the variant is
    unstated the largest-memory matching part is assumed (torchtune's A100s were 80 GB)."""
    reported = re.search(r"\(([\d.]+) GiB\)", hardware)
    clean = re.sub(r"\s*\(.*?\)", "", hardware).strip()
    try:
        gpu = resolve_gpu(clean)
    except AmbiguousNameError as e:
        gpu = max((resolve_gpu(c) for c in e.candidates), key=lambda g: (g.memory_gib, "sxm" in g.id))
    except MlrigError:
        return None
    if reported:
        gpu = gpu.model_copy(update={"memory_gib": float(reported.group(1)), "usable_memory_gib": None})
    return gpu


def _inference_precision(text: str) -> tuple[str, str | None]:
    t = text.lower()
    kv = "fp8" if "kv-cache-dtype fp8" in t else None
    for key, prec in (("mxfp4", "mxfp4"), ("float32", "fp32"), ("fp8", "fp8"), ("int4", "gptq"),
                      ("int8", "int8"), ("bf16", "bf16"), ("fp16", "fp16")):
        if key in t.split(" weights")[0] or (key == "fp8" and "quantization fp8" in t):
            return prec, kv
    return "bf16", kv


def _vllm_plan(r: dict[str, str]) -> Plan:
    tp = int(r["tp"] or 1)
    n = int(r["num_gpus"] or 1)
    prec, kv = _inference_precision(r["dtype_or_quant"])
    return Plan.model_validate({
        "model": {"name": r["model"]},
        "workload": {"engine": "vllm", "precision": prec, "kv_cache_precision": kv,
                     "context_tokens": int(r["max_model_len"]),
                     "gpu_memory_utilization": float(r["gpu_memory_utilization"] or 0.9)},
        "hardware": {"count": n, "tensor_parallel": tp, "pipeline_parallel": n // tp}})


def _inference_groups() -> list[ValidationGroup]:
    rows = [r for r in read_calibration_csv("inference_memory.csv") if r["engine"].lower().startswith("vllm")]
    groups: dict[str, list[ValidationRow]] = defaultdict(list)
    by_cfg: dict[tuple[str, ...], dict[str, float]] = defaultdict(dict)
    cfg: tuple[str, ...]
    for r in rows:
        arch, gpu = _model(r["model"]), _gpu(r["hardware"])
        if arch is None or gpu is None or not r["max_model_len"].isdigit():
            continue
        plan = _vllm_plan(r)
        est = estimate_memory(arch, plan, gpu)
        b = est.breakdown
        metric, value = r["metric"], float(r["value"])
        cfg = (r["model"], r["engine"], r["dtype_or_quant"], r["num_gpus"], r["tp"], r["max_model_len"],
               r["gpu_memory_utilization"])
        by_cfg[cfg][metric] = value
        by_cfg[cfg]["_pred_peak"] = b.weights_gib + b.activations_gib + b.overhead_gib
        note = f"{r['engine']} tp={r['tp']} gpus={r['num_gpus']} len={r['max_model_len']}"
        if metric == "weights_gb":
            w = weights_per_gpu_bytes(arch, plan.workload.precision, plan.hardware.tensor_parallel,
                                      plan.hardware.pipeline_parallel) / GiB
            groups["weights"].append(ValidationRow(id=r["id"], group="weights", predicted=w, measured=value,
                                                   note=note))
        elif metric == "kv_cache_tokens" and est.kv_cache_capacity_tokens:
            groups["vllm_kv_tokens"].append(ValidationRow(
                id=r["id"], group="vllm_kv_tokens", predicted=est.kv_cache_capacity_tokens, measured=value,
                note=note))
        elif metric == "kv_cache_gb" and value > 0:
            groups["vllm_kv_pool_gib"].append(ValidationRow(id=r["id"], group="vllm_kv_pool_gib",
                                                            predicted=b.kv_cache_gib, measured=value, note=note))
        elif metric == "activation_peak_gb":
            groups["vllm_activation_peak"].append(ValidationRow(
                id=r["id"], group="vllm_activation_peak", predicted=b.activations_gib, measured=value, note=note))
    # Profiled (non-KV) peak per GPU = weights + activation peak + non-torch, where all three are logged
    for cfg, m in by_cfg.items():
        if all(k in m for k in ("weights_gb", "activation_peak_gb", "non_torch_gb")):
            measured = m["weights_gb"] + m["activation_peak_gb"] + m["non_torch_gb"]
            groups["inference_peak"].append(ValidationRow(
                id="/".join(cfg[:1] + cfg[3:6]), group="inference_peak", predicted=m["_pred_peak"],
                measured=measured, note="vLLM weights + activation peak + non-torch"))
    return [summarise(name, rs, THRESHOLDS.get(name)) for name, rs in groups.items()]


def _finetune_plan(r: dict[str, str]) -> dict[str, Any] | None:
    if not r["seq_len"].isdigit() or not r["batch_size"].isdigit():
        return None
    text = (r["method"] + " " + r["offload"] + " " + r["source_note"]).lower()
    # Not modelled: activation offloading and chunked cross-entropy (torchtune cumulative rows
    # from "+ Chunked Cross Entropy" on); unpacked "Baseline" runs whose real lengths are unknown.
    if "activations to cpu" in text or "[baseline]" in text or re.search(r"\[\+ (chunked|activation|8-bit|fuse)", text):
        return None
    method_text = r["method"].lower()
    method = "qlora" if "qlora" in method_text else "lora" if "lora" in method_text else "full"
    opt_text = r["optimizer"].lower()
    paged = "paged-" if "paged" in opt_text else ""
    optimizer = paged + ("adamw-8bit" if "8bit" in opt_text or "8-bit" in opt_text
                 else "adafactor" if "adafactor" in opt_text else "adamw")
    torchtune = r["id"].startswith("M-torchtune")
    if torchtune:  # torchtune recipes keep params and optimizer states in bf16 (no fp32 master)
        optimizer += "-bf16"
    if "optimizer_in_bwd" in opt_text or "optimizer into backward" in method_text:
        optimizer += "-in-bwd"
    prec_text = r["precision"].lower()
    precision = "fp32" if prec_text == "fp32" else "fp16" if "fp16" in prec_text else "bf16"
    n = int(r["num_gpus"] or 1)
    ckpt = not r["grad_ckpt"].lower().startswith("no")
    offload = "params" if "fsdp cpu offload" in r["offload"].lower() else "none"
    return {
        "model": {"name": r["model"]},
        "workload": {"task": "finetune", "precision": precision, "batch_size": int(r["batch_size"]),
                     "context_tokens": int(r["seq_len"]),
                     # the HF Trainer guide (2021) ran eager attention; flash attention elsewhere
                     "flash_attention": not r["id"].startswith("M-hf")},
        "training": {"method": method, "optimizer": optimizer, "seq_len": int(r["seq_len"]),
                     "gradient_checkpointing": ckpt, "zero_stage": 3 if n > 1 else 0, "offload": offload,
                     "lora_rank": 8},
        "hardware": {"count": n},
    }


def _finetune_group() -> ValidationGroup:
    rows: list[ValidationRow] = []
    for r in read_calibration_csv("finetune_memory.csv"):
        if r["metric"] != "peak_gpu_mem_gb":
            continue
        spec = _finetune_plan(r)
        arch, gpu = _model(r["model"]), _gpu(r["hardware"])
        if spec is None or arch is None or gpu is None:
            continue
        est = estimate_memory(arch, Plan.model_validate(spec), gpu)
        # torchtune logs "peak memory active" (live tensors: allocated); the HF Trainer guide
        # logs nvidia-smi used memory (context + allocator reserve): per_gpu_gib.
        pred = est.allocated_gib if r["id"].startswith("M-torchtune") else est.breakdown.per_gpu_gib
        assert pred is not None
        rows.append(ValidationRow(id=r["id"], group="finetune_peak", predicted=pred,
                                  measured=float(r["value"]), note=f"{r['method']}; {r['optimizer']}"))
    return summarise("finetune_peak", rows, THRESHOLDS["finetune_peak"])


def run() -> list[ValidationGroup]:
    """All memory validation groups; thresholds (median error) in THRESHOLDS."""
    return [*_inference_groups(), _finetune_group()]
