"""A new user's second day (issue 10 §3, §4, session 38b): the same estimate read the same way by every command.
Each test runs the installed CLI (tests/cli_run.py) or the product path and fails on the behaviour it replaced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cli_run import mlrig


def _json(*args: str) -> Any:
    res = mlrig(*args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _notes(res: Any) -> str:
    return json.dumps(res.get("notes", [])) + json.dumps((res.get("memory") or {}).get("notes", []))


# ---- 1. MLC (and the other spellings of modelled engines) "not modelled specifically" -------------------------
# `plan --engine mlc` said "engine 'mlc' not modelled specifically: treated like HF transformers" although MLC has a
# speed model of its own (efficiency's mlc terms, 9 decode rows); and "turbomind" (LMDeploy's engine) and
# "text-generation-inference" (TGI), which the speed model takes as lmdeploy / tgi, were sized as HF transformers.

PLAN8 = ("plan", "llama-3.1-8b", "-q", "int4", "--gpu", "RTX 3090")


def test_mlc_note_says_only_its_memory_is_sized_like_transformers() -> None:
    notes = _notes(_json(*PLAN8, "--engine", "mlc"))
    assert "not modelled specifically" not in notes
    assert "no memory model of its own" in notes and "speed is modelled as mlc" in notes


@pytest.mark.parametrize(("alias", "family"), [("turbomind", "lmdeploy"), ("text-generation-inference", "tgi")])
def test_an_engine_alias_is_sized_by_its_familys_memory_rules(alias: str, family: str) -> None:
    a, f = _json(*PLAN8, "--engine", alias), _json(*PLAN8, "--engine", family)
    assert "treated like HF transformers" not in _notes(a) and "no memory model" not in _notes(a)
    assert a["memory"]["kv_cache_gib"] == f["memory"]["kv_cache_gib"]
    assert a["memory"]["per_gpu_gib"] == f["memory"]["per_gpu_gib"]


# ---- 2. One band for an unvalidated training speed ------------------------------------------------------------
# `plan` showed ±60 % (training_speed.TRAIN_ERROR_BAND_WIDE, or the nearest validated scope's p90 if wider) and
# `recommend` ×0.5-2 for the same Jetson LoRA estimate. Both now read the planner's band: hours = tokens / speed, so
# a ±60 % speed band is hours / 1.6 to hours / 0.4.

def test_recommend_shows_the_training_band_plan_shows() -> None:
    plan = _json("plan", "meta-llama/Llama-3.1-8B", "--task", "finetune", "--method", "lora", "--gpu",
                 "Jetson AGX Orin")
    band = plan["performance"]["error_band"]["train_tokens_per_s"]
    assert band >= 0.6
    rec = _json("recommend", "--local-only", "--gpu", "Jetson AGX Orin", "--model", "meta-llama/Llama-3.1-8B",
                "--task", "finetune", "--method", "lora")
    w = next(o for o in rec["options"] if o["feasible"])["workloads"][0]
    assert not w["speed_validated"]
    lo, hi = w["hours_per_run_range"]
    h = w["hours_per_run"]
    assert lo == pytest.approx(h / (1 + band), rel=1e-3) and hi == pytest.approx(h / (1 - band), rel=1e-3)
    assert f"±{band:.0%}" in json.dumps(rec, ensure_ascii=False)
    assert "0.5-2" not in json.dumps(rec)


# ---- 3. A Linux unified-memory device planned its whole memory as GPU memory -----------------------------------
# Apple keeps Metal's recommendedMaxWorkingSetSize (3/4 of 64 GB = 48 GiB); the Jetson AGX Orin 64GB and the DGX
# Spark planned against all 64 / 128 GiB although the OS, its desktop and the SoC's carveouts live there too. Now
# the smaller of the DGX Spark's measured 117 of 128 GiB left (x 0.914) and the total less a 2 GiB OS floor.

@pytest.mark.parametrize(("gpu", "capacity_gib"), [("Jetson AGX Orin", 58.49), ("DGX Spark", 116.99),
                                                    ("Jetson Orin Nano Super", 6.0), ("M2 Max 64GB", 48.0)])
def test_unified_memory_devices_keep_a_share_for_the_os(gpu: str, capacity_gib: float) -> None:
    res = _json("plan", "llama-3.2-1b", "-q", "q4_k_m", "--gpu", gpu, "-e", "llama.cpp")
    assert res["memory"]["gpu_capacity_gib"] == pytest.approx(capacity_gib, abs=0.01)
