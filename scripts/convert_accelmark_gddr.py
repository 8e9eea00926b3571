"""Write the AccelMark rows for GDDR/Blackwell cards (tag ACCELMARKGD) from a local AccelMark checkout.

The rows restate FreedomIntelligence/AccelMark `results/verified/<run>/result.json` @ ACCELMARK_COMMIT
for the cards the ACCELMARK rows (branch s24) left out: GeForce RTX 5090 / 4090 / 3090, L4, RTX 6000 Ada,
RTX A6000. Each row copies the plan of the matching ACCELMARK row (same suite, same scenario: the suites
fix model, dataset, lengths and engine settings) and swaps in the card, the GPU count and the vLLM
version the run printed. Usage: python scripts/convert_accelmark_gddr.py <AccelMark git dir> > out.jsonl

Suite F (consumer / edge: Qwen2.5-0.5B-Instruct on sharegpt_edge_v1, branch s38-gddrdata) has no ACCELMARK
template row: `suite_f_rows` writes its plans from suites/suite_F/suite.json and the dataset (RUNS_F). Suite C
(quantisation formats of Llama-3.1-8B-Instruct, RUNS_C) likewise (`suite_c_rows`), lengths as suite A's template, and
suite E (Llama-3-8B-Instruct offline at TP 1 / 2 / 4 / 8 on PCIe cards, RUNS_E, `suite_e_rows`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ACCELMARK_COMMIT = "5797fc42745be2494e6213938d9e5afa0c6c5bef"
BLOB = f"https://github.com/FreedomIntelligence/AccelMark/blob/{ACCELMARK_COMMIT}/"
CALIBRATION = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"

# run directory -> template rows of serving_accelmark.jsonl (same suite and runner)
RUNS: dict[str, str] = {
    "nvidia_geforce_rtx_5090x1_suite_A_nvidia_vllm_47f5d58e_b8f8ed0f": "A",
    "nvidia_geforce_rtx_5090x1_suite_D_nvidia_vllm_47f5d58e_e87e6c36": "D",
    "nvidia_l4x1_suite_A_nvidia_vllm_47f5d58e_b991b4c1": "A",
    "nvidia_geforce_rtx_4090x1_suite_A_nvidia_vllm_47f5d58e_675e325e": "A",
    "nvidia_geforce_rtx_4090x8_suite_B_nvidia_vllm_47f5d58e_cfd0bdc8": "B",
    "nvidia_geforce_rtx_3090x1_suite_A_nvidia_vllm_47f5d58e_e95e2caa": "A",
    "nvidia_rtx_6000_ada_generationx1_suite_A_nvidia_vllm_47f5d58e_bd3b5d27": "A",
    "nvidia_rtx_6000_ada_generationx1_suite_D_nvidia_vllm_47f5d58e_42ab3af7": "D",
    "nvidia_rtx_a6000x1_suite_A_nvidia_vllm_47f5d58e_7cd0b745": "A",
    "nvidia_rtx_a6000x1_suite_D_nvidia_vllm_47f5d58e_f2197473": "D",
    "nvidia_rtx_a6000x8_suite_B_nvidia_vllm_47f5d58e_0981ecf7": "B",
}
# template run per suite (rows already in serving_accelmark.jsonl)
TEMPLATE_RUN = {
    "A": "nvidia_h100_80gb_hbm3x1_suite_A_nvidia_vllm_47f5d58e_831c95a7",
    "D": "nvidia_h100_80gb_hbm3x1_suite_D_nvidia_vllm_47f5d58e_02748da4",
    "B": "nvidia_a100_sxm4_40gbx8_suite_B_nvidia_vllm_47f5d58e_14410aea",
}


def _result(repo: Path, run: str) -> dict[str, Any]:
    text = subprocess.run(
        ["git", "--git-dir", str(repo), "show", f"{ACCELMARK_COMMIT}:results/verified/{run}/result.json"],
        check=True, capture_output=True, text=True).stdout
    data: dict[str, Any] = json.loads(text)
    return data


def _engine_version(framework_version: str) -> str:
    """'0.19.1rc1.dev339+gedc364896' -> '0.19.1' (the release the dev build precedes is named in the note)."""
    head = framework_version.split("+")[0]
    for cut in ("rc", ".dev"):
        head = head.split(cut)[0]
    return head


def _value(result: dict[str, Any], row: dict[str, Any]) -> tuple[float, str]:
    """The figure the template row reads, from this run's result.json, and where it was read."""
    metrics = result["metrics"]
    load = row["plan"]["workload"]["load"]
    metric = row["metric"]
    if load == "offline":
        first = metrics["offline"]["results_by_concurrency"][0]
        if first["oom"]:
            raise ValueError("offline run out of memory")
        total = first.get("throughput_tokens_per_sec_total")
        ratio = (f"total/output throughput ratio {total / first['throughput_tokens_per_sec']:.3f}, the "
                 "template's lengths" if total else "no total throughput in this file")
        return float(first["throughput_tokens_per_sec"]), (
            f"offline output throughput {first['throughput_tokens_per_sec']} tok/s over "
            f"{first['elapsed_seconds_median']} s (median of 3 runs; {ratio})")
    key = "ttft_ms_p50" if metric == "ttft_ms" else "tpot_ms_p50"
    if load == "concurrency":
        inter = metrics["interactive"]
        return float(inter[key]), f"interactive (one request at a time) {key} {inter[key]}"
    rate = row["plan"]["workload"]["request_rate"]
    for point in metrics["online"]["results_by_qps"]:
        if float(point["target_qps"]) == float(rate):
            return float(point[key]), (
                f"online Poisson {rate} req/s (achieved {point['achieved_qps']}): {key} {point[key]}, "
                f"run {point['elapsed_seconds_median']} s")
    raise KeyError(f"no online point at {rate} req/s")


# vLLM V1 engine settings the runner leaves at their defaults, as the ACCELMARK rows of vLLM 0.20.1 (ACCELMARK-0037
# ..0048) state them: the streaming scenarios build AsyncEngineArgs without max_num_seqs and start
# AsyncLLMEngine.from_engine_args (usage context ENGINE_CONTEXT), which `get_batch_defaults`
# (vllm/engine/arg_utils.py) does not list, so SchedulerConfig's DEFAULT_MAX_NUM_SEQS 128 and
# DEFAULT_MAX_NUM_BATCHED_TOKENS 2048 apply; V1's prefix cache is on by default and suite A sends the same prompts
# again in every scenario (cached_prompt_tokens 247, ACCELMARK-0038's note). The H100 template rows are vLLM 0.7.3
# (V0), whose defaults differ, so a V1 run (the RTX 5090's 0.19.1) takes these instead.
V1_STREAMING = {"max_num_seqs": 128, "max_num_batched_tokens": 2048}
V1_SUITE_A_CACHED_PROMPT_TOKENS = 247
V1_NOTE = (" [mlrig 2026-11-24: vLLM V1 defaults of this runner, as ACCELMARK-0037..0048 (vLLM 0.20.1) state them: "
           "{keys}. The copied H100 plan is vLLM 0.7.3 (V0) and had none of them.]")


def v1_engine_settings(plan: dict[str, Any], suite: str) -> str:
    """Set the V1 defaults above on a copied plan (in place); the note saying so ('' where none apply)."""
    from mlrig.estimators.engines import vllm_v1

    w = plan["workload"]
    if not vllm_v1(w["engine_version"]):
        return ""
    set_keys: dict[str, int] = {}
    if w["load"] != "offline":
        set_keys.update(V1_STREAMING)
    if suite == "A":
        set_keys["cached_prompt_tokens"] = V1_SUITE_A_CACHED_PROMPT_TOKENS
    w.update(set_keys)
    return V1_NOTE.format(keys=", ".join(f"{k} = {v}" for k, v in set_keys.items())) if set_keys else ""


# suite F runs of the same runner on GDDR cards in the catalog (the RTX 4090 D run is left out: no catalog entry)
RUNS_F = (
    "nvidia_geforce_rtx_3090x1_suite_F_nvidia_vllm_47f5d58e_faf550ec",
    "nvidia_geforce_rtx_4090x1_suite_F_nvidia_vllm_47f5d58e_b228454f",
    "nvidia_geforce_rtx_5090x1_suite_F_nvidia_vllm_47f5d58e_776d2702",
    "nvidia_l4x1_suite_F_nvidia_vllm_47f5d58e_d58fa923",
    "nvidia_rtx_4000_ada_generationx1_suite_F_nvidia_vllm_47f5d58e_125c6b61",
    "nvidia_rtx_6000_ada_generationx1_suite_F_nvidia_vllm_47f5d58e_2b905f5e",
    "nvidia_rtx_a6000x1_suite_F_nvidia_vllm_47f5d58e_a33d6eb3",
    "tesla_t4x1_suite_F_nvidia_vllm_47f5d58e_4660bc0b",
)
# suites/suite_F/suite.json @ ACCELMARK_COMMIT: request_count 200 (offline), online_request_count 300 (Poisson 10 and
# 40 req/s), interactive_request_count 150 (one at a time), output_tokens_max 256, max_model_len 2048.
# datasets/sharegpt_edge_v1/requests.jsonl 'input_tokens' (raw prompt) means over the first 200 / 150 / 300 requests:
F_RAW_INPUT = {"offline": 74.215, "interactive": 72.567, "online": 70.23}
# the runner formats every prompt with the tokenizer's chat template (runner.py `_format_prompt`); Qwen2.5's template
# adds its default system message and the role markers: ~30 tokens (an estimate, not printed by the run)
F_TEMPLATE_TOKENS = 30


def suite_f_rows(repo: Path, run: str, first_id: int) -> list[dict[str, Any]]:
    """The suite F rows of one run: offline output tok/s, one-at-a-time p50 TTFT / TPOT, Poisson p50 TTFT / TPOT."""
    result = _result(repo, run)
    chip, software, m = result["chip"], result["software"], result["metrics"]
    date = result["environment"]["collected_at"][:10]
    version = _engine_version(software["framework_version"])
    precision = "fp16" if result["model"]["precision"] == "FP16" else "bf16"
    off = m["offline"]["results_by_concurrency"][0]
    total = off.get("throughput_tokens_per_sec_total")
    ratio = total / off["throughput_tokens_per_sec"] if total else 1.493  # the other runs' median ratio
    offline_in = round(F_RAW_INPUT["offline"] + F_TEMPLATE_TOKENS)
    out_mean = round(offline_in / (ratio - 1.0))  # total/output = (in + out)/out
    base = {"task": "inference", "precision": precision, "engine": "vllm", "engine_version": version,
            "max_output_tokens": 256, "lengths": "varied", "max_model_len": 2048}
    head = (f"AccelMark (verified tier) suite_F, runner nvidia_vllm_47f5d58e on {chip['name']} x{chip['count']} "
            f"({chip['memory_gb']} GB), {date}; vLLM {software['framework_version']}, {software['runtime_version']}; "
            f"Qwen/Qwen2.5-0.5B-Instruct {result['model']['precision']}, sharegpt_edge_v1 (short ShareGPT-GPT4 turns), "
            "chat template applied by the runner (~30 tokens, estimated), greedy, max_tokens 256 (outputs stop at EOS: "
            f"lengths vary), max_model_len 2048. Output mean {out_mean} tokens from the offline run's total/output "
            f"throughput ratio {ratio:.3f}" + ("" if total else " (this file prints no total throughput: the other "
                                                                  "suite_F runs' 1.493 is used)") +
            f" and {offline_in} prompt tokens; ")
    plans: list[tuple[dict[str, Any], str, float, str, str]] = []
    w = {**base, "load": "offline", "batch_size": 200, "num_requests": 200, "prompt_tokens": offline_in,
         "output_tokens": out_mean, "max_num_seqs": 512, "gpu_memory_utilization": 0.9}
    plans.append((w, "throughput_tok_s", float(off["throughput_tokens_per_sec"]),
                  "tok/s (offline 'throughput_tokens_per_sec', output tokens only, median of 3 runs)",
                  f"offline: the first 200 requests at once (LLM.generate; max_num_seqs 512, "
                  f"gpu_memory_utilization 0.9): "
                  f"{off['throughput_tokens_per_sec']} tok/s over {off['elapsed_seconds_median']} s"))
    inter = m["interactive"]
    for key, metric in (("ttft_ms_p50", "ttft_ms"), ("tpot_ms_p50", "tpot_ms")):
        w = {**base, "load": "concurrency", "batch_size": 1, "num_requests": 150,
             "prompt_tokens": round(F_RAW_INPUT["interactive"] + F_TEMPLATE_TOKENS), "output_tokens": out_mean}
        plans.append((w, metric, float(inter[key]), f"ms ('{key}')",
                      f"interactive: 150 requests one at a time (streaming AsyncLLMEngine): {key} {inter[key]}"))
    for point in m["online"]["results_by_qps"]:
        for key, metric in (("ttft_ms_p50", "ttft_ms"), ("tpot_ms_p50", "tpot_ms")):
            w = {**base, "load": "rate", "batch_size": 1, "request_rate": float(point["target_qps"]),
                 "num_requests": 300, "prompt_tokens": round(F_RAW_INPUT["online"] + F_TEMPLATE_TOKENS),
                 "output_tokens": out_mean}
            plans.append((w, metric, float(point[key]), f"ms ('{key}')",
                          f"online: 300 requests, Poisson {point['target_qps']} req/s "
                          f"(achieved {point['achieved_qps']}): {key} {point[key]}, "
                          f"run {point['elapsed_seconds_median']} s"))
    rows = []
    for i, (w, metric, value, unit, where) in enumerate(plans):
        plan = {"model": {"name": "Qwen/Qwen2.5-0.5B-Instruct"}, "workload": w,
                "hardware": {"gpu": chip["name"], "count": int(chip["count"]), "tensor_parallel": 1}}
        v1_note = v1_engine_settings(plan, "F")
        rows.append({"id": f"ACCELMARKGD-{first_id + i:04d}", "plan": plan, "metric": metric, "value": value,
                     "unit": unit, "source_url": f"{BLOB}results/verified/{run}/result.json", "source_date": date,
                     "software": f"vLLM {software['framework_version']}, {software['runtime_version']}",
                     "source_note": head + where + "." + v1_note + " [branch s38-gddrdata: suite_F rows]",
                     "split": "holdout"})
    return rows


RUNS_C = (
    "nvidia_geforce_rtx_3090x1_suite_C_nvidia_vllm_47f5d58e_4955fbb1",
    "nvidia_geforce_rtx_4090x1_suite_C_nvidia_vllm_47f5d58e_6d7e1d48",
    "nvidia_geforce_rtx_5090x1_suite_C_nvidia_vllm_47f5d58e_d1baa050",
    "nvidia_rtx_6000_ada_generationx1_suite_C_nvidia_vllm_47f5d58e_e60276e9",
    "nvidia_rtx_a6000x1_suite_C_nvidia_vllm_47f5d58e_b87c1621",
)
# suites/suite_C/suite.json precision_model_map -> the plan's precision: BF16 the original checkpoint; FP8
# RedHatAI/...-FP8 (static per-tensor FP8 weights and activations); W8A8 RedHatAI/...-quantized.w8a8 (int8 weights and
# activations, compressed-tensors); W8A16 ...-quantized.w8a16 (int8 weight-only, compressed-tensors); W4A16
# ...-quantized.w4a16 (int4 weight-only, group 128, loaded with quantization=gptq: vLLM's gptq_marlin kernel)
C_PRECISION = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "w8a8": "int8", "w8a16": "gptq-int8",
               "w4a16": "gptq-marlin"}
# suite A's template (ACCELMARK-0001's note): the first 100 sharegpt_standard_v1 requests, 245.4 raw input tokens
# mean + ~10 Llama-3 chat-template tokens
C_PROMPT_TOKENS = 255
C_OUTPUT_TOKENS_MEDIAN = 320


def suite_c_rows(repo: Path, run: str, first_id: int) -> list[dict[str, Any]]:
    """Per format of one suite C run: offline output tok/s (100 requests at once), Poisson p50 TTFT / TPOT."""
    rows: list[dict[str, Any]] = []
    listing = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "--name-only", ACCELMARK_COMMIT,
                              f"results/verified/{run}/"], check=True, capture_output=True, text=True).stdout.split()
    formats = [p.rsplit("/", 1)[-1] for p in listing if p.rsplit("/", 1)[-1] in C_PRECISION]
    for fmt in formats:
        path = f"results/verified/{run}/{fmt}/result.json"
        text = subprocess.run(["git", "--git-dir", str(repo), "show", f"{ACCELMARK_COMMIT}:{path}"],
                              check=True, capture_output=True, text=True).stdout
        result = json.loads(text)
        chip, software, m, model = result["chip"], result["software"], result["metrics"], result["model"]
        date = result["environment"]["collected_at"][:10]
        version = _engine_version(software["framework_version"])
        off = m["offline"]["results_by_concurrency"][0]
        if off.get("oom"):
            continue
        total = off.get("throughput_tokens_per_sec_total")
        if total:
            ratio = total / off["throughput_tokens_per_sec"]
            out_mean = round(C_PROMPT_TOKENS / (ratio - 1.0))
            lengths_note = (f"output mean {out_mean} tokens from the offline run's total/output throughput ratio "
                            f"{ratio:.3f}")
        else:  # older files print no total: the median output mean of the suite C runs that do (310-330 tokens)
            out_mean = C_OUTPUT_TOKENS_MEDIAN
            lengths_note = (f"output mean {out_mean} tokens assumed (this file prints no total throughput: the median "
                            "of the suite C formats and cards whose files do, 310-330)")
        base = {"task": "inference", "precision": C_PRECISION[fmt], "engine": "vllm", "engine_version": version,
                "prompt_tokens": C_PROMPT_TOKENS, "output_tokens": out_mean, "max_output_tokens": 512,
                "lengths": "varied", "max_model_len": 4096}
        head = (f"AccelMark (verified tier) suite_C, format {fmt.upper()}, runner nvidia_vllm_47f5d58e on "
                f"{chip['name']} x{chip['count']} ({chip['memory_gb']} GB), {date}; "
                f"vLLM {software['framework_version']}, "
                f"{software['runtime_version']}; checkpoint {model['model_id']} (quantization_method "
                f"{model['quantization_method']}, effective dtype {model['effective_dtype']}); sharegpt_standard_v1 as "
                f"suite A (ACCELMARK-0001: {C_PROMPT_TOKENS} prompt tokens with the Llama-3 chat template), greedy, "
                f"max_tokens 512 (outputs stop at EOS: lengths vary); {lengths_note}; ")
        plans: list[tuple[dict[str, Any], str, float, str, str]] = []
        plans.append(({**base, "load": "offline", "batch_size": 100, "num_requests": 100, "max_num_seqs": 512,
                       "gpu_memory_utilization": 0.9}, "throughput_tok_s", float(off["throughput_tokens_per_sec"]),
                      "tok/s (offline 'throughput_tokens_per_sec', output tokens only, median of 3 runs)",
                      f"offline: the first 100 requests at once (LLM.generate; max_num_seqs 512, "
                      f"gpu_memory_utilization 0.9): "
                      f"{off['throughput_tokens_per_sec']} tok/s over {off['elapsed_seconds_median']} s"))
        for point in (m.get("online") or {}).get("results_by_qps", []):
            for key, metric in (("ttft_ms_p50", "ttft_ms"), ("tpot_ms_p50", "tpot_ms")):
                plans.append(({**base, "load": "rate", "batch_size": 1, "request_rate": float(point["target_qps"]),
                               "num_requests": 300}, metric, float(point[key]), f"ms ('{key}')",
                              f"online: 300 requests, Poisson {point['target_qps']} req/s (achieved "
                              f"{point['achieved_qps']}): {key} {point[key]}, run {point['elapsed_seconds_median']} s"))
        for w, metric, value, unit, where in plans:
            plan = {"model": {"name": "meta-llama/Llama-3.1-8B-Instruct"}, "workload": w,
                    "hardware": {"gpu": chip["name"], "count": int(chip["count"]), "tensor_parallel": 1}}
            v1_note = v1_engine_settings(plan, "C")
            rows.append({"id": f"ACCELMARKGD-{first_id + len(rows):04d}", "plan": plan, "metric": metric,
                         "value": value, "unit": unit, "source_url": f"{BLOB}{path}", "source_date": date,
                         "software": f"vLLM {software['framework_version']}, {software['runtime_version']}",
                         "source_note": head + where + "." + v1_note + " [branch s38-gddrdata: suite_C rows]",
                         "split": "holdout"})
    return rows


RUNS_E = (
    "nvidia_geforce_rtx_3090x4_suite_E_nvidia_vllm_47f5d58e_81ca6d0e",
    "nvidia_geforce_rtx_4090x8_suite_E_nvidia_vllm_47f5d58e_54dccbd0",
    "nvidia_rtx_a6000x8_suite_E_nvidia_vllm_47f5d58e_334507e5",
)
# suites/suite_E/suite.json: request_count 150 (offline only), output_tokens_max 512, max_model_len 4096; the first
# 150 sharegpt_standard_v1 requests average 236.1 raw input tokens (+ ~10 Llama-3 chat-template tokens)
E_PROMPT_TOKENS = 246


def suite_e_rows(repo: Path, run: str, first_id: int) -> list[dict[str, Any]]:
    """Offline output tok/s of one suite E run at each GPU count it ran (one vLLM engine at TP = GPU count)."""
    rows: list[dict[str, Any]] = []
    listing = subprocess.run(["git", "--git-dir", str(repo), "ls-tree", "--name-only", ACCELMARK_COMMIT,
                              f"results/verified/{run}/"], check=True, capture_output=True, text=True).stdout.split()
    counts = sorted((p.rsplit("/", 1)[-1] for p in listing if p.rsplit("/", 1)[-1].rstrip("x").isdigit()),
                    key=lambda c: int(c.rstrip("x")))
    for sub in counts:
        path = f"results/verified/{run}/{sub}/result.json"
        result = json.loads(subprocess.run(["git", "--git-dir", str(repo), "show", f"{ACCELMARK_COMMIT}:{path}"],
                                           check=True, capture_output=True, text=True).stdout)
        chip, software = result["chip"], result["software"]
        tp = int(result["task"]["parallelism"]["tensor_parallel_size"])
        date = result["environment"]["collected_at"][:10]
        off = result["metrics"]["offline"]["results_by_concurrency"][0]
        if off.get("oom"):
            continue
        total = off.get("throughput_tokens_per_sec_total")
        if total:
            ratio = total / off["throughput_tokens_per_sec"]
            out_mean = round(E_PROMPT_TOKENS / (ratio - 1.0))
            lengths_note = f"output mean {out_mean} tokens from the total/output throughput ratio {ratio:.3f}"
        else:
            out_mean = 343  # suite A's first 100 requests (ACCELMARK-0001), same dataset and cap
            lengths_note = "output mean 343 tokens assumed (no total throughput in this file: suite A's figure)"
        w = {"task": "inference", "precision": "bf16", "engine": "vllm",
             "engine_version": _engine_version(software["framework_version"]), "load": "offline", "batch_size": 150,
             "num_requests": 150, "prompt_tokens": E_PROMPT_TOKENS, "output_tokens": out_mean,
             "max_output_tokens": 512, "lengths": "varied", "max_model_len": 4096, "max_num_seqs": 512,
             "gpu_memory_utilization": 0.9}
        plan = {"model": {"name": "meta-llama/Meta-Llama-3-8B-Instruct"}, "workload": w,
                "hardware": {"gpu": chip["name"], "count": int(chip["count"]), "tensor_parallel": tp}}
        topo = result["environment"].get("accelerator_topology") or ""
        link = "PCIe (nvidia-smi topo: " + ("PXB" if "PXB" in topo else "NODE/SYS" if "SYS" in topo or "NODE" in topo
                                            else "not printed") + ", no NVLink)"
        note = (f"AccelMark (verified tier) suite_E (multi-chip scaling), {sub} of run {run}: {chip['name']} "
                f"x{chip['count']} at TP {tp} over {link}, {date}; vLLM {software['framework_version']}, "
                f"{software['runtime_version']}; Meta-Llama-3-8B-Instruct bf16, sharegpt_standard_v1's first 150 "
                f"requests at once (LLM.generate, max_num_seqs 512, gpu_memory_utilization 0.9), "
                f"{E_PROMPT_TOKENS} prompt tokens (236.1 raw + ~10 chat-template tokens), greedy, max_tokens 512 "
                f"(outputs stop at EOS: lengths "
                f"vary), {lengths_note}; offline output throughput {off['throughput_tokens_per_sec']} tok/s over "
                f"{off['elapsed_seconds_median']} s (median of 3 runs; the 'client_concurrency' levels send the same "
                "burst). [branch s38-gddrdata: suite_E rows]")
        rows.append({"id": f"ACCELMARKGD-{first_id + len(rows):04d}", "plan": plan, "metric": "throughput_tok_s",
                     "value": float(off["throughput_tokens_per_sec"]),
                     "unit": "tok/s (offline 'throughput_tokens_per_sec', output tokens only, median of 3 runs)",
                     "source_url": f"{BLOB}{path}", "source_date": date,
                     "software": f"vLLM {software['framework_version']}, {software['runtime_version']}",
                     "source_note": note, "split": "holdout"})
    return rows


def main() -> None:
    repo = Path(sys.argv[1])
    templates = [json.loads(line) for line in (CALIBRATION / "serving_accelmark.jsonl").open()]
    n = 0
    for run, suite in RUNS.items():
        result = _result(repo, run)
        chip = result["chip"]
        software = result["software"]
        date = result["environment"]["collected_at"][:10]
        version = _engine_version(software["framework_version"])
        for tpl in templates:
            if f"/{TEMPLATE_RUN[suite]}/" not in tpl["source_url"]:
                continue
            value, where = _value(result, tpl)
            plan = json.loads(json.dumps(tpl["plan"]))
            plan["workload"]["engine_version"] = version
            plan["hardware"] = {"gpu": chip["name"], "count": int(chip["count"]),
                                "tensor_parallel": int(result["task"]["parallelism"]["tensor_parallel_size"])}
            v1_note = v1_engine_settings(plan, suite)
            n += 1
            note = (
                f"AccelMark (verified tier) suite_{suite}, runner nvidia_vllm_47f5d58e on {chip['name']} "
                f"x{chip['count']} ({chip['memory_gb']} GB, TP {plan['hardware']['tensor_parallel']}), {date}; "
                f"vLLM {software['framework_version']}, {software['runtime_version']}. Same suite, dataset, "
                f"lengths and engine settings as {tpl['id']} (its plan is copied; see that row for the "
                f"dataset means and scenario details); {where}.{v1_note}")
            row = {
                "id": f"ACCELMARKGD-{n:04d}", "plan": plan, "metric": tpl["metric"], "value": value,
                "unit": tpl["unit"], "source_url": f"{BLOB}results/verified/{run}/result.json",
                "source_date": date,
                "software": f"vLLM {software['framework_version']}, {software['runtime_version']}",
                "source_note": note, "split": "holdout"}
            print(json.dumps(row))
    for run in RUNS_F:
        for row in suite_f_rows(repo, run, n + 1):
            n += 1
            print(json.dumps(row))
    for run in RUNS_C:
        for row in suite_c_rows(repo, run, n + 1):
            n += 1
            print(json.dumps(row))
    for run in RUNS_E:
        for row in suite_e_rows(repo, run, n + 1):
            n += 1
            print(json.dumps(row))


if __name__ == "__main__":
    main()
