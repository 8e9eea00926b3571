"""The rows added on branch s28-dataserve restate their sources as their converters say.

ACCELMARKGD rows copy the plan of the ACCELMARK row of the same suite and scenario (only the card, the
GPU count and the vLLM version differ, and a vLLM V1 run takes the engine settings the 0.20.1 rows state);
the GH200 rows added to ARGONNE hold batch x tokens / latency.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

CALIBRATION = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "calibration"


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CALIBRATION / name).open()]


def _scenario(row: dict[str, Any]) -> tuple[Any, ...]:
    w = row["plan"]["workload"]
    return (row["plan"]["model"]["name"], row["metric"], w["load"], w.get("request_rate"), w["prompt_tokens"])


def _without_card(plan: dict[str, Any]) -> dict[str, Any]:
    plan = json.loads(json.dumps(plan))
    plan.pop("hardware")
    plan["workload"].pop("engine_version")
    return plan


def test_accelmark_gddr_rows_copy_their_template_plan() -> None:
    """V0 rows (vLLM 0.7.3) copy the H100 / 8x A100 V0 plan; the RTX 5090's V1 rows (0.19.1, the same runner)
    copy the plan of the A100 row run under vLLM 0.20.1, whose V1 defaults (max_num_seqs 128, 2048 tokens per
    step, cached prompts) were read from the runner and vLLM's source (ACCELMARK-0037..0048's notes)."""
    accelmark = _rows("serving_accelmark.jsonl")
    templates = {_scenario(r): r for r in accelmark
                 if "nvidia_h100_80gb_hbm3x1_suite" in r["source_url"]
                 or "nvidia_a100_sxm4_40gbx8_suite_B" in r["source_url"]}
    v1_templates = {_scenario(r): r for r in accelmark if r["plan"]["workload"].get("engine_version") == "0.20.1"}
    rows = [r for r in _rows("serving_accelmark_gddr.jsonl") if "s38-gddrdata" not in r["source_note"]]
    assert len(rows) == 85
    for row in rows:
        v1 = row["plan"]["workload"]["engine_version"] == "0.19.1"
        template = (v1_templates if v1 else templates)[_scenario(row)]
        assert _without_card(row["plan"]) == _without_card(template["plan"]), row["id"]
        assert row["split"] == "holdout"
        assert row["plan"]["hardware"]["count"] == row["plan"]["hardware"]["tensor_parallel"]
        blackwell = "5090" in row["plan"]["hardware"]["gpu"]
        assert row["plan"]["workload"]["engine_version"] == ("0.19.1" if blackwell else "0.7.3"), row["id"]


def test_added_gh200_rows_are_batch_times_tokens_over_latency() -> None:
    added = [r for r in _rows("serving_argonne_inference_bench.jsonl") if "s28-dataserve" in r["source_note"]]
    assert len(added) == 104
    for row in added:
        w = row["plan"]["workload"]
        latency_s = float(re.search(r"Latency ([0-9.]+) s", row["source_note"]).group(1))  # type: ignore[union-attr]
        assert abs(row["value"] - w["batch_size"] * w["output_tokens"] / latency_s) < 0.01 * row["value"], row["id"]
        assert w["prompt_tokens"] == w["output_tokens"]
        if row["plan"]["model"]["name"] == "EleutherAI/gpt-j-6b":
            assert w["prompt_tokens"] + w["output_tokens"] <= 2048, row["id"]


def test_accelmark_gddr_suite_cef_rows_restate_their_files() -> None:
    """Branch s38-gddrdata's suite C / E / F rows (no ACCELMARK template): held out with their source, each output
    mean is the prompt mean over (total / output throughput ratio - 1) with the ratio the note prints, a V1 run
    (the RTX 5090's vLLM 0.19.1) carries the runner's V1 streaming defaults on its streaming rows, and a suite E
    row runs one engine at TP = its GPU count."""
    rows = [r for r in _rows("serving_accelmark_gddr.jsonl") if "s38-gddrdata" in r["source_note"]]
    suites = {s: sum(f"[branch s38-gddrdata: suite_{s} rows]" in r["source_note"] for r in rows) for s in "CEF"}
    assert suites == {"C": 207, "E": 11, "F": 56}
    for row in rows:
        w, hw, note = row["plan"]["workload"], row["plan"]["hardware"], row["source_note"]
        assert row["split"] == "holdout" and row["id"].startswith("ACCELMARKGD-")
        ratio = re.search(r"throughput ratio ([0-9.]+)", note)
        if ratio and "no total throughput" not in note:
            # the note prints the ratio to 3 decimals: within a token; suite F's mean comes from the offline prompt
            offline_prompt = w["prompt_tokens"] if "suite_F" not in note else 104  # suite F: 74.2 raw + ~30 template
            expected = offline_prompt / (float(ratio.group(1)) - 1)
            assert abs(w["output_tokens"] - expected) <= 1, row["id"]
        v1 = w["engine_version"] == "0.19.1"
        assert v1 == ("5090" in hw["gpu"]), row["id"]
        if v1 and w["load"] != "offline":
            assert (w["max_num_seqs"], w["max_num_batched_tokens"]) == (128, 2048), row["id"]
        if "suite_E" in note:
            assert hw["tensor_parallel"] == hw["count"] and w["load"] == "offline", row["id"]
        else:
            assert hw["count"] == 1, row["id"]


def test_llmserve_rows_are_waves_of_512_tokens_over_their_wall_time() -> None:
    """LLMSERVE (A10G, branch s38-gddrdata): a throughput row is concurrency x 512 / the wave's wall time the note
    quotes (avg_latency_ms); TPOT is the file's itl_ms; Triton's TTFTs are kept as anomalies, vLLM's are not taken."""
    rows = _rows("serving_gddr_llmserve_a10g.jsonl")
    assert len(rows) == 140
    for row in rows:
        w = row["plan"]["workload"]
        note = row["source_note"]
        assert row["split"] == "fit" and w["load"] == "static" and w["output_tokens"] == 512
        if row["metric"] == "throughput_tok_s":
            wall_ms = float(re.search(r"avg_latency_ms ([0-9.]+)", note).group(1))  # type: ignore[union-attr]
            assert abs(row["value"] - w["batch_size"] * 512 / (wall_ms / 1000)) < 0.002 * row["value"], row["id"]
        elif row["metric"] == "tpot_ms":
            assert row["value"] == float(re.search(r"itl_ms ([0-9]+\.[0-9]+)", note).group(1)), row["id"]  # type: ignore[union-attr]
        else:
            assert row["metric"] == "ttft_ms" and w["engine"] == "trt-llm" and row["anomaly"], row["id"]
        assert (w["engine"] == "trt-llm") == (w.get("engine_version") == "1.1.0+tensorrt"), row["id"]
