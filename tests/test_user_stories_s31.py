"""User-facing leftovers found walking through docs USER-STORIES (issue 10): a "fits" headline that vLLM's default
--max-model-len would not start; recommend on a local budget that finds nothing at bf16 tries GGUF Q4_K_M on
llama.cpp; `fit -m` given twice; a QLoRA result naming its NF4 base."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mlrig.planner import evaluate

ROOT = Path(__file__).resolve().parents[1]


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)


QWEN32_A100_40 = {"model": {"name": "Qwen/Qwen2.5-32B-Instruct"},
                  "workload": {"task": "inference", "precision": "fp8", "engine": "vllm"},
                  "hardware": {"gpu": "A100 40GB"}}


# ---- 1. vLLM's default --max-model-len (the model's 32,768) does not fit the pool: the headline says so

def test_max_model_len_limit_is_the_pool_when_the_default_would_not_start() -> None:
    res = evaluate(QWEN32_A100_40)
    assert res.fits and res.kv_cache_capacity_tokens is not None
    assert res.kv_cache_capacity_tokens < 32_768  # Qwen2.5-32B's max_position_embeddings
    assert res.max_model_len_limit_tokens == res.kv_cache_capacity_tokens


def test_max_model_len_limit_is_null_when_given_or_when_the_default_fits() -> None:
    given = {**QWEN32_A100_40, "workload": {**QWEN32_A100_40["workload"], "max_model_len": 8192}}
    assert evaluate(given).max_model_len_limit_tokens is None
    roomy = {**QWEN32_A100_40, "hardware": {"gpu": "H100 SXM"}}
    assert evaluate(roomy).max_model_len_limit_tokens is None


def test_plan_headline_says_the_default_would_not_start() -> None:
    r = mlrig("plan", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "A100 40GB", "-q", "fp8")
    assert r.returncode == 0, r.stderr
    cap = evaluate(QWEN32_A100_40).kv_cache_capacity_tokens
    head = r.stdout.splitlines()[1]
    assert f"✔ fits with --max-model-len {cap} or less" in head and "would not start" in head, head
    md = mlrig("plan", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "A100 40GB", "-q", "fp8", "--markdown").stdout
    assert f"✔ fits with --max-model-len {cap} or less" in md
    js = mlrig("plan", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "A100 40GB", "-q", "fp8", "--json").stdout
    assert f'"max_model_len_limit_tokens": {cap}' in js


# ---- 2. "$2,000, 30B-class models locally": nothing fits at bf16, so recommend tries GGUF Q4_K_M on llama.cpp

def _recommend_json(*args: str) -> dict[str, Any]:
    r = mlrig("recommend", "--budget", "2000", "--local-only", "--json", *args)
    assert r.returncode == 0, r.stderr
    out: dict[str, Any] = json.loads(r.stdout)
    return out


def test_recommend_falls_back_to_q4_k_m_locally_and_says_so() -> None:
    from mlrig.commands.advisor import LOCAL_QUANT_NOTE

    rec = _recommend_json("--model", "qwen2.5-32b")
    assert any(o["feasible"] for o in rec["options"])
    assert rec["summary"][0] == LOCAL_QUANT_NOTE
    assert rec["workloads"] == ["qwen2.5-32b inference at q4_k_m (llama.cpp)"]


def test_recommend_keeps_a_precision_the_user_gave() -> None:
    rec = _recommend_json("--model", "qwen2.5-32b", "-q", "bf16")
    assert not any(o["feasible"] for o in rec["options"])
    assert rec["workloads"] == ["qwen2.5-32b inference"]


def test_local_quantised_only_for_16_bit_inference_with_no_precision() -> None:
    from mlrig.advisor.evaluation import Workload
    from mlrig.commands.advisor import local_quantised

    def wl(plan: dict[str, Any]) -> Workload:
        return Workload(label="x", plan=plan)

    got = local_quantised([wl({"model": {"name": "qwen2.5-32b"}})])
    assert got is not None and got[0].plan["workload"] == {"precision": "q4_k_m", "engine": "llama.cpp"}
    assert local_quantised([wl({"model": {"name": "qwen2.5-32b"}, "workload": {"engine": "vllm"}})]) is None
    assert local_quantised([wl({"model": {"name": "qwen2.5-32b"}, "workload": {"task": "finetune"}})]) is None
    assert local_quantised([wl({"model": {"name": "Qwen/Qwen2.5-32B-Instruct-AWQ"}})]) is None


# ---- 3. `mlrig fit -m lora -m qlora` kept the last silently: now one line naming `compare`, exit 2

def test_fit_method_given_twice_is_one_line_naming_compare() -> None:
    r = mlrig("fit", "mistral-7b", "--gpu", "RTX 4090", "-m", "lora", "--method", "qlora")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--method given 2 times" in lines[0], r.stderr
    assert "mlrig compare mistral-7b --gpu 'RTX 4090' -m lora -m qlora" in lines[0]


def test_fit_one_method_still_runs() -> None:
    r = mlrig("fit", "mistral-7b", "--gpu", "RTX 4090", "-m", "qlora", "--json")
    assert r.returncode == 0, r.stderr


# ---- 4. a QLoRA plan's JSON says its base is NF4 next to "precision" (the compute dtype, kept for compatibility)

def _qlora(precision: str | None = None, method: str = "qlora") -> dict[str, Any]:
    wl: dict[str, Any] = {"task": "finetune", **({"precision": precision} if precision else {})}
    return {"model": {"name": "mistral-7b"}, "workload": wl, "training": {"method": method, "seq_len": 2048},
            "hardware": {"gpu": "RTX 4090"}}


def test_qlora_result_names_its_nf4_base() -> None:
    res = evaluate(_qlora())
    assert (res.precision, res.base_weights_precision) == ("bf16", "nf4")
    nodq = evaluate(_qlora("nf4-nodq"))
    assert (nodq.precision, nodq.base_weights_precision) == ("nf4-nodq", "nf4-nodq")
    assert evaluate(_qlora(method="lora")).base_weights_precision is None
    assert evaluate(QWEN32_A100_40).base_weights_precision is None


def test_plan_json_has_base_weights_precision() -> None:
    r = mlrig("plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["precision"] == "bf16" and out["base_weights_precision"] == "nf4"


def test_web_plan_page_says_the_max_model_len_vllm_needs() -> None:
    """The web plan page printed a plain "✔ fits" for Qwen2.5-32B FP8 on an A100 40GB, where `vllm serve` with its
    default --max-model-len (the model's 32,768) would not start; the CLI headline says so from
    `max_model_len_limit_tokens`, and the page now does too. (14,352 tokens: vLLM's 0.92 default from 0.20, of the
    CUDA driver's total.)"""
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1:8765")
    page = client.get("/plan?model=Qwen/Qwen2.5-32B-Instruct&gpu=A100+40GB&precision=fp8")
    assert page.status_code == 200 and "fits with --max-model-len 14352 or less" in page.text
    plain = client.get("/plan?model=llama-3.1-8b&gpu=h100-sxm-80gb&precision=fp8")
    assert plain.status_code == 200 and "--max-model-len" not in plain.text.split('id="verdict"')[1][:300]
