"""Turn the seed calibration tables (mlrig/data/calibration/*.csv) into plan rows.

    python scripts/convert_seed_calibration.py              # compare with the committed seed_*.jsonl
    python scripts/convert_seed_calibration.py --overwrite  # write them afresh (drops later corrections)

The seed tables (published measurements, each row with its source URL and a note on the settings)
describe each measurement in free-form columns. Validation must run exactly the code path users run,
so every row becomes a plan (docs/PLAN-FORMAT.md) plus the metric it measured, in the JSON Lines
format of mlrig/data/calibration/README.md. The mapping decisions live here, once, with their reasons;
rows whose settings cannot be stated as a plan are left out and counted, with the reason, in the
summary this script prints.

The committed seed_*.jsonl are the maintained copy: rows were corrected by hand since the first
conversion (a plan that misstated the measured run, an anomaly found later; each says why in its
`source_note`). So by default this script only reports which committed rows differ from a fresh
conversion, and writes nothing; `--overwrite` would discard those corrections.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "mlrig" / "data" / "calibration"
OUT = ROOT / "mlrig" / "data" / "calibration"
GIB = 2**30

Row = dict[str, Any]


class Skip(Exception):
    """A seed row that cannot be stated as a plan; the message says why."""


def _int(text: str) -> int | None:
    text = text.strip()
    return int(float(text)) if re.fullmatch(r"\d+(\.0+)?", text) else None


def _row(r: dict[str, str], plan: dict[str, Any], metric: str, value: float, *, unit: str,
         software: str, source_date: str, split: str = "fit", **extra: Any) -> Row:
    out: Row = {"id": r["id"], "plan": plan, "metric": metric, "value": value, "unit": unit,
                "source_url": r["source_url"], "source_date": source_date, "software": software,
                "source_note": r["source_note"], "split": split}
    if "ANOMALY" in r["source_note"]:
        out["anomaly"] = True
    out.update(extra)
    return out


# ---------------------------------------------------------------------------------------------
# shared vocabulary
# ---------------------------------------------------------------------------------------------

# Published architectures of models the built-in catalog does not hold, as explicit plan fields
# (docs/PLAN-FORMAT.md "explicit architecture"). Values from each model's config.json on the Hub.
EXPLICIT_ARCHS: dict[str, dict[str, Any]] = {
    # EleutherAI/gpt-j-6b config.json: n_embd 4096, n_layer 28, n_head 16, n_inner 16384 (4 x n_embd),
    # vocab 50400, untied lm_head; GELU MLP.
    "gpt-j-6b": {"name": "EleutherAI/gpt-j-6b", "hidden_size": 4096, "num_layers": 28, "num_heads": 16,
                 "intermediate_size": 16384, "mlp": "plain", "vocab_size": 50400},
    # tiiuae/falcon-180B config.json: hidden 14848, 80 layers, 232 heads, num_kv_heads 8, MLP 4 x hidden,
    # vocab 65024, lm_head tied to the embedding.
    "falcon-180b": {"name": "tiiuae/falcon-180B", "hidden_size": 14848, "num_layers": 80, "num_heads": 232,
                    "num_kv_heads": 8, "intermediate_size": 59392, "mlp": "plain", "vocab_size": 65024,
                    "tie_word_embeddings": True},
    # Qwen (1.0) config.json files: the MLP's w1/w2 are intermediate_size / 2 wide (QWenMLP), so the
    # gated width is half the config value; untied head. The derived totals match the official sizes
    # (1.84B, 7.72B, 14.17B, 72.3B).
    "Qwen/Qwen-1_8B-Chat": {"name": "Qwen/Qwen-1_8B-Chat", "hidden_size": 2048, "num_layers": 24,
                            "num_heads": 16, "intermediate_size": 5504, "vocab_size": 151936},
    "Qwen/Qwen-7B-Chat": {"name": "Qwen/Qwen-7B-Chat", "hidden_size": 4096, "num_layers": 32, "num_heads": 32,
                          "intermediate_size": 11008, "vocab_size": 151936},
    "Qwen/Qwen-14B-Chat": {"name": "Qwen/Qwen-14B-Chat", "hidden_size": 5120, "num_layers": 40, "num_heads": 40,
                           "intermediate_size": 13696, "vocab_size": 152064},
    "Qwen/Qwen-72B-Chat": {"name": "Qwen/Qwen-72B-Chat", "hidden_size": 8192, "num_layers": 80, "num_heads": 64,
                           "intermediate_size": 24576, "vocab_size": 152064},
}


def model_ref(name: str) -> dict[str, Any]:
    """A plan's [model]: the HF id of a catalog model, or the explicit architecture above."""
    if name in EXPLICIT_ARCHS:
        return dict(EXPLICIT_ARCHS[name])
    return {"name": name}


# Seed spellings of hardware -> catalog ids. Memory-size variants of one chip are equivalent for
# speed; where the seed does not say SXM or PCIe, the source's systems were SXM (TensorRT-LLM docs,
# llm-foundry, cloud hosts of the llama.cpp tables), as each note says.
def gpu_id(hardware: str) -> str:
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import AmbiguousNameError, UnknownNameError

    name = re.sub(r"\s*\((?:\d[\d.]* GiB)\)", "", hardware)
    if "variant unspecified" in name or re.fullmatch(r"A100-(40|80)GB", name):
        name = re.sub(r"(A100|H100)[- ]", r"\1 SXM ", name)
    attempts = [name, re.sub(r"\s*\(.*\)", "", name), re.sub(r"\s*\(.*", "", name)]
    for cand in attempts:
        try:
            return resolve_gpu(cand).id
        except AmbiguousNameError as exc:
            return resolve_gpu(exc.candidates[0]).id
        except UnknownNameError:
            continue
    raise Skip(f"hardware {hardware!r} is not in the GPU catalog")


def apple_gpu_id(hardware: str, note: str) -> str:
    """An Apple chip comes in several memory sizes and the size decides what fits (a 70B Q4_K_M needs a
    64 GB Mac, a 7B F16 a 16 GB one). The note's "[hardware detail: machine: 64GB]" picks the variant;
    where the source does not say, the largest variant stands in: the run was measured, so it fitted
    (the smallest would turn a measured all-GPU run into a predicted offload)."""
    m = re.search(r"machine: (\d+) ?GB", note)
    if m:
        return gpu_id(f"{hardware} {m.group(1)}GB")
    from mlrig.catalog.gpus import builtin_gpus

    chip = re.sub(r"-\d+gb$", "", gpu_id(hardware))
    variants = [g for g in builtin_gpus() if re.sub(r"-\d+gb$", "", g.id) == chip]
    return max(variants, key=lambda g: g.memory_gib).id


# ---------------------------------------------------------------------------------------------
# inference_speed.csv
# ---------------------------------------------------------------------------------------------

SPEED_MODELS = {
    "llama-3-8b": "meta-llama/Meta-Llama-3-8B-Instruct",
    "llama-3-70b": "meta-llama/Meta-Llama-3-70B-Instruct",
    "llama-2-7b": "meta-llama/Llama-2-7b-hf",
    "llama-2-70b": "meta-llama/Llama-2-70b-hf",
    "gpt-j-6b": "gpt-j-6b",
    "falcon-180b": "falcon-180b",
}
SPEED_PRECISION = {"Q4_K_M": "q4_k_m", "F16": "fp16", "FP16": "fp16", "Q4_0": "q4_0", "FP8": "fp8", "Q8_0": "q8_0"}
# Source tag -> (engine_version when the row names no build, source date). llama.cpp discussion #4167
# (Apple, reference build 8e672ef of Nov 2023), the CUDA scoreboard #15013 (2025) and the Vulkan
# scoreboard #10879 (Dec 2024) are tables of many builds: the table's start month stands in.
SPEED_SOURCES = {
    "XD": ("", "2024-05-01"),
    "A4167": ("2023-11", "2023-11-25"),
    "C15013": ("2025-08", "2025-08-01"),
    "V10879": ("2024-12", "2024-12-18"),
    "TRT061": ("", "2023-12-01"),
}


def _llama_cpp_version(r: dict[str, str], default: str) -> str:
    """'b2824' from the build number in the note (llama-bench prints `build <hash> (<number>)`)."""
    m = re.search(r"build \w+ \((\d+)\)", r["source_note"])
    return f"b{m.group(1)}" if m else default


def speed_row(r: dict[str, str]) -> Row:
    tag = r["id"].split("-")[0]
    default_version, date = SPEED_SOURCES[tag]
    engine_text = r["engine"]
    n = _int(r["num_gpus"]) or 1
    batch = _int(r["batch_size"]) or 1
    prompt, gen = _int(r["prompt_tokens"]) or 0, _int(r["gen_tokens"]) or 0
    precision = SPEED_PRECISION[r["quant"]]
    workload: dict[str, Any] = {"precision": precision, "batch_size": batch, "prompt_tokens": prompt,
                                "output_tokens": gen, "load": "static"}
    gpu = apple_gpu_id(r["hardware"], r["source_note"]) if r["hardware"].startswith("Apple") else gpu_id(r["hardware"])
    hardware: dict[str, Any] = {"gpu": gpu, "count": n}
    if "flash-attn off" in r["source_note"]:
        workload["flash_attention"] = False
    if engine_text.startswith("TensorRT-LLM"):
        version = re.search(r"v(\d+\.\d+(?:\.\d+)?)", engine_text)
        assert version
        workload |= {"engine": "trt-llm", "engine_version": version.group(1)}
        # The tables' engines are built with --enable_fp8 --fp8_kv_cache for FP8 (performance.md).
        if precision == "fp8":
            workload["kv_cache_precision"] = "fp8"
        hardware["tensor_parallel"] = n
        software = engine_text
    else:
        version_str = _llama_cpp_version(r, default_version)
        workload |= {"engine": "llama.cpp", "engine_version": version_str}
        backend = re.search(r"\((\w+)\)", engine_text)
        software = f"llama.cpp {version_str} ({backend.group(1) if backend else 'CUDA'} backend), llama-bench"
    plan = {"model": model_ref(SPEED_MODELS[r["model"]]), "workload": workload, "hardware": hardware}
    metric = r["metric"]
    value = float(r["value"])
    if metric == "total_throughput_tok_s":
        per_gpu = "tok/s/GPU" in r["unit"] or "tok/s/GPU" in r["source_note"] or "not stated" in r["unit"]
        metric = "throughput_tok_s_per_gpu" if per_gpu else "throughput_tok_s"
    return _row(r, plan, metric, value, unit=r["unit"], software=software, source_date=date)


# ---------------------------------------------------------------------------------------------
# inference_memory.csv
# ---------------------------------------------------------------------------------------------

MEMORY_METRICS = {"weights_gb": "weights_gib", "activation_peak_gb": "activations_gib",
                  "non_torch_gb": "overhead_gib", "kv_cache_gb": "kv_cache_gib",
                  "kv_cache_tokens": "kv_cache_capacity_tokens", "peak_total_gb": "per_gpu_gib"}


def _vllm_precision(text: str) -> tuple[str, str | None]:
    t = text.lower()
    kv = "fp8" if "kv-cache-dtype fp8" in t else None
    for key, prec in (("mxfp4", "mxfp4"), ("float32", "fp32"), ("fp8", "fp8"), ("bf16", "bf16"),
                      ("fp16", "fp16")):
        if key in t.split(" weights")[0] or (key == "fp8" and "quantization fp8" in t):
            return prec, kv
    return "bf16", kv


def memory_row(r: dict[str, str]) -> Row:
    metric = MEMORY_METRICS.get(r["metric"])
    if metric is None:
        raise Skip(f"metric {r['metric']} has no field in a plan result")
    value = float(r["value"])
    engine = r["engine"]
    n = _int(r["num_gpus"]) or 1
    if engine.startswith("vLLM"):
        max_len = _int(r["max_model_len"])
        if max_len is None:
            raise Skip("no max_model_len")
        tp = _int(r["tp"]) or 1
        prec, kv = _vllm_precision(r["dtype_or_quant"])
        version = re.search(r"v(\d+\.\d+\.\d+)", engine)
        assert version
        workload: dict[str, Any] = {"engine": "vllm", "engine_version": version.group(1), "precision": prec,
                                    "max_model_len": max_len, "context_tokens": max_len,
                                    "gpu_memory_utilization": float(r["gpu_memory_utilization"] or 0.9)}
        if kv:
            workload["kv_cache_precision"] = kv
        plan = {"model": model_ref(r["model"]), "workload": workload,
                "hardware": {"gpu": gpu_id(r["hardware"]), "count": n, "tensor_parallel": tp,
                             "pipeline_parallel": n // tp}}
        # vLLM logs print GiB (it divides by 2^30) although they say "GB"
        return _row(r, plan, metric, value, unit=r["unit"] + " (vLLM log, 2^30 bytes)",
                    software=f"vLLM {version.group(1)} (V1 engine)", source_date=_memory_date(r),
                    memory_measure="vllm_log")
    # QwenLM/Qwen README: HF transformers generate(), peak memory of a whole generation.
    if r["model"] not in EXPLICIT_ARCHS:
        raise Skip(f"model {r['model']} not expressible")
    q = r["dtype_or_quant"].lower()
    precision = "int8" if "int8 (gptq)" in q else "gptq" if "int4 (gptq)" in q else "bf16"
    kv = "int8" if "int8 kv" in q else None
    gen_m = re.match(r"(\d+)", r["max_model_len"])
    assert gen_m
    gen = int(gen_m.group(1))
    batch = _int(r["batch_or_concurrency"]) or 1
    workload = {"engine": "transformers", "engine_version": "4.32", "precision": precision, "batch_size": batch,
                "prompt_tokens": 1, "output_tokens": gen, "load": "static",
                "flash_attention": "no flash-attn" not in engine}
    if kv:
        workload["kv_cache_precision"] = kv
    if precision == "int8":
        workload["precision"] = "gptq-int8"
    plan = {"model": model_ref(r["model"]), "workload": workload,
            "hardware": {"gpu": gpu_id(r["hardware"]), "count": n}}
    # The table's "GB" with two decimals; profile.py reports torch.cuda.max_memory_allocated / 1024^3
    # per its README ("GPU memory usage"); taken as GiB of allocated memory summed over the GPUs.
    return _row(r, plan, "per_gpu_gib", value / n, unit="GB as printed (torch max_memory_allocated, GiB), "
                "divided by the GPU count", software=engine, source_date="2023-12-01",
                memory_measure="torch_allocated")


def _memory_date(r: dict[str, str]) -> str:
    return "2025-10-15" if "v0.11.0" in r["engine"] else "2026-04-01"


# ---------------------------------------------------------------------------------------------
# finetune_memory.csv
# ---------------------------------------------------------------------------------------------

FINETUNE_MODELS = {
    "bert-large-uncased (fine-tune, seq-cls)": "google-bert/bert-large-uncased",
    "Llama 3.1 8B": "meta-llama/Llama-3.1-8B", "Llama 3.2 3B": "meta-llama/Llama-3.2-3B",
    "Llama2-7B": "meta-llama/Llama-2-7b-hf", "Llama2-70B": "meta-llama/Llama-2-70b-hf",
    "Llama 3.1 70B": "meta-llama/Llama-3.1-70B", "Llama 3.1 405B": "meta-llama/Llama-3.1-405B",
}


def _finetune_source(r: dict[str, str]) -> tuple[str, str, str]:
    """(software, source date, memory measure) per seed source."""
    if r["id"].startswith("M-hf"):
        return "HF transformers Trainer 4.27", "2023-03-01", "nvidia_smi"
    if r["id"].startswith("M-torchtune"):
        # torchtune logs peak memory active/allocated (get_memory_stats); the seed rows say "peak memory
        # active" for the Nov-2024 table; the older tables give "peak memory" from the same logger.
        return "torchtune", "2024-09-01", "torch_allocated"
    return "unknown", "", "unknown"


def finetune_row(r: dict[str, str]) -> Row:
    metric_map = {"peak_gpu_mem_gb": "per_gpu_gib", "cpu_mem_gb": "host_ram_gib", "tokens_per_s": "train_tokens_per_s"}
    model = FINETUNE_MODELS.get(r["model"])
    if model is None:
        raise Skip(f"model {r['model']!r} not in the catalog")
    seq, batch = _int(r["seq_len"]), _int(r["batch_size"])
    if seq is None or batch is None:
        raise Skip("batch or sequence length not stated (variable-length, unpacked data)")
    if r["metric"] not in metric_map:
        raise Skip(f"metric {r['metric']} is not a figure of a plan result")
    text = (r["method"] + " " + r["offload"] + " " + r["source_note"]).lower()
    if "[baseline]" in text:
        raise Skip("unpacked 'Baseline' run: real sequence lengths unknown")
    method_text = r["method"].lower()
    method = "qlora" if "qlora" in method_text else "lora" if "lora" in method_text else "full"
    opt_text = r["optimizer"].lower()
    optimizer = ("paged-" if "paged" in opt_text else "") + (
        "adamw-8bit" if ("8bit" in opt_text or "8-bit" in opt_text) else
        "adafactor" if "adafactor" in opt_text else "adamw")
    torchtune = r["id"].startswith("M-torchtune")
    if torchtune and method == "full":  # torchtune full fine-tunes keep params and states in bf16
        optimizer += "-bf16"
    if "optimizer_in_bwd" in opt_text or "optimizer into backward" in method_text:
        optimizer += "-in-bwd"
    prec_text = r["precision"].lower()
    precision = "fp32" if prec_text == "fp32" else "fp16" if "fp16" in prec_text else "bf16"
    n = _int(r["num_gpus"]) or 1
    ckpt = "none" if r["grad_ckpt"].lower().startswith("no") else "full"
    offload_text = r["offload"].lower()
    training: dict[str, Any] = {"method": method, "optimizer": optimizer, "seq_len": seq,
                                "activation_checkpointing": ckpt, "zero_stage": 3 if n > 1 else 0,
                                "offload": "params" if "fsdp cpu offload" in offload_text else "none"}
    if method != "full":
        training["lora_rank"] = 8  # torchtune's recipe default (the seed rows are torchtune's)
    if "activations to cpu" in offload_text:
        training["activation_offload"] = True
    if re.search(r"chunked cross.entropy|\+ chunked", text):
        training["chunked_loss"] = True
    software, date, measure = _finetune_source(r)
    plan = {"model": {"name": model},
            "workload": {"task": "finetune", "precision": precision, "batch_size": batch,
                         "engine": "torchtune" if torchtune else "hf-trainer",
                         # the HF Trainer guide (2021-23) ran eager attention; torchtune uses SDPA flash
                         "flash_attention": torchtune},
            "training": training,
            "hardware": {"gpu": gpu_id(r["hardware"]), "count": n}}
    value = float(r["value"])
    metric = metric_map[r["metric"]]
    unit = r["unit"]
    note = r["source_note"]
    extra: dict[str, Any] = {}
    if torchtune and r["hardware"].startswith("A100 (variant unstated)"):
        # torchtune's README tables name only "A100"; the same tables print peaks of 42.9-70.4 GB, so 80 GB
        plan["hardware"]["gpu"] = TORCHTUNE_A100
        note += (" [mlrig: GPU read as A100 80GB: the same README tables give peaks above 40 GB (44.8 GB 405B"
                 " QLoRA, 70.4 GB 70B full, 60.0 GiB packed 3B); the README says only 'A100', SXM assumed]")
    if metric == "train_tokens_per_s" and torchtune and n == 1:
        metric = "train_tokens_per_s_per_gpu"  # torchtune logs tokens_per_second_per_gpu
        if r["id"] in TORCHTUNE_OVER_PEAK:
            extra["anomaly"] = True
            note += (f" [mlrig: excluded (anomaly): at {value:g} tokens/s the linear GEMMs alone of the recipe's"
                     " default configuration (activation checkpointing on: 6N LoRA / 8N full FLOPs per token)"
                     f" need {TORCHTUNE_OVER_PEAK[r['id']]} of the GPU's dense bf16 peak; the row cannot be the"
                     " configuration it names (what the figure counts is not stated)]")
    elif metric == "train_tokens_per_s" and torchtune:
        # whole job: per GPU, the 8x A100 rows of these tables would need 2.8-5.1x the A100's peak
        note += (" [mlrig: metric read as tokens/s of the whole job, summed over the GPUs: per GPU, the 8x A100"
                 " figures of this README's tables would need 2.8-5.1x the A100's 312 TFLOPS dense bf16 peak at"
                 " the recipes' 6N-8N FLOPs per token (e.g. 70B LoRA 3,497 x 6 x 70.6e9 = 1.5 PFLOP/s), so a"
                 " table row's tokens/sec can only be the sum over its GPUs; the same reading is applied to every"
                 " multi-GPU row of the table. The recipes themselves log tokens_per_second_per_gpu from the"
                 " local rank's token count.]")
    elif unit == "GB" and not torchtune:
        value = value * 1e9 / GIB
    out = _row({**r, "source_note": note}, plan, metric, value, unit=unit, software=software, source_date=date,
               **({"memory_measure": measure} if metric == "per_gpu_gib" else {}))
    out.update(extra)
    return out


# torchtune README A100 rows (see finetune_row) and the single-GPU speed rows whose figure exceeds the
# card's dense bf16 peak in the recipe's default configuration (RTX A6000, 154.8 TFLOPS: 8B full 2,579
# and LoRA 4,699 tokens/s at 8N / 6N FLOPs per token).
TORCHTUNE_A100 = "a100-sxm-80gb"
TORCHTUNE_OVER_PEAK = {"M-torchtune-004": "107 %", "M-torchtune-008": "146 %"}


# ---------------------------------------------------------------------------------------------
# training_speed.csv
# ---------------------------------------------------------------------------------------------

# MosaicML MPT shapes (llm-foundry scripts/train/yamls/pretrain/mpt-*.yaml): layers, d_model, heads;
# MLP expansion 4 (GELU), vocab 50368, tied embeddings.
MPT_SHAPES = {"125m": (12, 768, 12), "350m": (24, 1024, 16), "760m": (24, 1536, 12), "1b": (24, 2048, 16),
              "3b": (32, 2560, 20), "7b": (32, 4096, 32), "13b": (40, 5120, 40), "30b": (48, 7168, 56),
              "70b": (80, 8192, 64)}


def _gpt_arch(name: str, note: str) -> dict[str, Any]:
    """Megatron GPT shapes from the note ('hidden=2304 layers=24', heads where given), vocab 51200,
    MLP 4 x hidden, tied embeddings. Narayanan 2021 Table 1 uses 128-dim heads."""
    h = int(re.search(r"hidden=(\d+)", note).group(1))  # type: ignore[union-attr]
    layers = int(re.search(r"layers=(\d+)", note).group(1))  # type: ignore[union-attr]
    heads_m = re.search(r"heads=(\d+)", note)
    heads = int(heads_m.group(1)) if heads_m else h // 128
    return {"name": name, "hidden_size": h, "num_layers": layers, "num_heads": heads, "intermediate_size": 4 * h,
            "mlp": "plain", "vocab_size": 51200, "tie_word_embeddings": True}


def training_row(r: dict[str, str]) -> Row:
    metric_map = {"tokens_per_s_per_gpu": ("train_tokens_per_s_per_gpu", 1.0), "mfu_pct": ("mfu", 0.01),
                  "hfu_pct": ("hfu", 0.01), "step_time_s": ("step_time_s", 1.0)}
    if r["metric"] not in metric_map:
        raise Skip(f"metric {r['metric']} (achieved TFLOP/s per GPU) is given as hfu where the row has it")
    seq = _int(r["seq_len"])
    n = _int(r["num_gpus"])
    if seq is None or n is None:
        raise Skip("sequence length or GPU count not stated")
    m = re.fullmatch(r"MPT-(\w+)", r["model"])
    note = r["source_note"]
    if m:
        layers, d, heads = MPT_SHAPES[m.group(1)]
        model: dict[str, Any] = {"name": f"mosaicml/mpt-{m.group(1)} (llm-foundry yaml)", "hidden_size": d,
                                 "num_layers": layers, "num_heads": heads, "intermediate_size": 4 * d,
                                 "mlp": "plain", "vocab_size": 50368, "tie_word_embeddings": True}
        software, date, engine = "llm-foundry (Composer, FSDP)", "2023-06-01", "llm-foundry"
    elif "hidden=" in note:
        model = _gpt_arch(r["model"].split(" (")[0], note)
        software = "Megatron-LM"
        date = "2021-04-09" if "nar21" in r["id"] else "2020-06-01"
        engine = "megatron"
    else:
        raise Skip("architecture not stated")
    tp, pp = _int(r["tp"]) or 1, _int(r["pp"]) or 1
    gbt = _int(r["global_batch_tokens"])
    micro = _int(r["micro_batch"])
    extra_note = ""
    if micro is None:
        # Megatron tables give the global batch only. Without pipeline stages the micro-batch changes
        # memory, not speed: take the whole per-replica batch. With pipeline stages it sets the bubble:
        # Narayanan et al. 2021 (sec. 3.4, Fig. 13) run PTD-P at micro-batch 1-2; 1 is taken.
        dp = _int(r["dp"]) or max(1, n // (tp * pp))
        if gbt is None:
            raise Skip("neither micro-batch nor global batch stated")
        micro = 1 if pp > 1 else max(1, gbt // seq // dp)
        extra_note = f" [mlrig: micro-batch not stated; {micro} assumed]"
    zero = 3 if "FULL_SHARD" in r["sharding"] or "ZeRO-3" in r["sharding"] else 0
    ckpt_text = r["activation_ckpt"].lower()
    ckpt = "full" if ckpt_text in ("true", "full recompute") or ckpt_text.startswith("yes") else "none"
    precision = "fp16" if "fp16" in r["precision"] else "bf16"
    training: dict[str, Any] = {"method": "full", "seq_len": seq, "zero_stage": zero,
                                "activation_checkpointing": ckpt}
    if gbt:
        training["global_batch_tokens"] = gbt
    hardware = {"gpu": gpu_id(r["hardware"]), "count": min(n, 8), "nodes": max(1, n // 8),
                "tensor_parallel": tp, "pipeline_parallel": pp}
    if n % 8 and n > 8:
        raise Skip(f"{n} GPUs is not whole 8-GPU nodes")
    plan = {"model": model, "workload": {"task": "pretrain", "precision": precision, "batch_size": micro,
                                         "engine": engine},
            "training": training, "hardware": hardware}
    metric, scale = metric_map[r["metric"]]
    row = _row(r, plan, metric, float(r["value"]) * scale, unit=r["unit"], software=software, source_date=date)
    row["source_note"] += extra_note
    return row


def _tflops_as_hfu(r: dict[str, str]) -> Row:
    """Megatron's 'achieved teraFLOP/s per GPU' counts the recomputed forward (its formula, in the
    note): hardware FLOPs utilisation = value / the GPU's dense fp16 peak (312 TFLOPS on A100, 125 on
    V100)."""
    from mlrig.catalog.gpus import resolve_gpu

    row = training_row({**r, "metric": "hfu_pct", "value": "0"})
    peak = resolve_gpu(row["plan"]["hardware"]["gpu"]).tensor_tflops("fp16") or 0.0
    row["value"] = float(r["value"]) / peak
    row["unit"] = f"TFLOP/s per GPU as published, divided by the {peak:g} TFLOPS dense fp16 peak"
    return row


# ---------------------------------------------------------------------------------------------

FILES = {
    "inference_speed.csv": ("seed_inference_speed.jsonl", speed_row),
    "inference_memory.csv": ("seed_inference_memory.jsonl", memory_row),
    "finetune_memory.csv": ("seed_finetune.jsonl", finetune_row),
    "training_speed.csv": ("seed_training_speed.jsonl", training_row),
}


def _config_key(r: dict[str, str]) -> tuple[str, ...]:
    return (r.get("model", ""), r.get("num_gpus", ""), r.get("seq_len", ""), r.get("hardware", ""))


def convert() -> tuple[dict[str, list[Row]], Counter[str]]:
    """Every seed file's rows as plan rows, and the reasons rows were left out."""
    out: dict[str, list[Row]] = {}
    skipped: Counter[str] = Counter()
    for csv_name, (jsonl_name, fn) in FILES.items():
        rows: list[Row] = []
        with (SEED / csv_name).open(newline="", encoding="utf-8") as f:
            seed = list(csv.DictReader(f))
        # Megatron's Table 1 gives each run's TFLOP/s and its percentage of peak: one measurement twice
        with_hfu = {_config_key(r) for r in seed if r["metric"] == "hfu_pct"}
        for r in seed:
            if r["metric"] == "tflops_per_gpu" and _config_key(r) in with_hfu:
                skipped[f"{csv_name}: TFLOP/s duplicates the row's own hfu_pct"] += 1
                continue
            try:
                if csv_name == "training_speed.csv" and r["metric"] == "tflops_per_gpu":
                    rows.append(_tflops_as_hfu(r))
                else:
                    rows.append(fn(r))
            except Skip as exc:
                skipped[f"{csv_name}: {exc}"] += 1
        out[jsonl_name] = rows
    return out, skipped


def _committed(name: str) -> dict[str, Row]:
    path = OUT / name
    if not path.exists():
        return {}
    with path.open(encoding="utf-8") as f:
        return {row["id"]: row for row in map(json.loads, filter(str.strip, f))}


def main() -> None:
    out, skipped = convert()
    overwrite = "--overwrite" in sys.argv[1:]
    for name, rows in out.items():
        if overwrite:
            with (OUT / name).open("w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
            print(f"{name}: wrote {len(rows)} rows")
            continue
        committed = _committed(name)
        fresh = {row["id"]: row for row in rows}
        changed = sorted(i for i in fresh.keys() & committed.keys() if fresh[i] != committed[i])
        print(f"{name}: {len(rows)} rows converted; committed copy: {len(changed)} corrected, "
              f"{len(committed.keys() - fresh.keys())} only there, {len(fresh.keys() - committed.keys())} missing")
    for reason, n in skipped.most_common():
        print(f"  left out {n:4d}: {reason}")


if __name__ == "__main__":
    main()
