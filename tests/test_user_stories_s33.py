"""Second user-facing pass (issue 10), the leftovers tests/test_user_stories_s32.py noticed: each test here failed
before its fix."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "250", "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)


# ---- 1. three cards and 40 heads: a serving engine runs pipeline parallelism, not a refused TP 3

def test_a_gpu_count_tp_cannot_split_the_heads_over_defaults_to_pipeline_parallel() -> None:
    from mlrig.planner import evaluate

    r = evaluate({"model": "qwen2.5-32b", "workload": {"precision": "awq"},
                  "hardware": {"gpu": "RTX 3090", "count": 3}})
    assert r.fits and r.performance is not None and (r.performance.decode_tok_s or 0) > 0
    assert any("--tensor-parallel-size 1 --pipeline-parallel-size 3" in n for n in r.notes), r.notes
    # six cards: TP 2 (divides 40 heads / 8 KV heads) x PP 3
    six = evaluate({"model": "qwen2.5-32b", "hardware": {"gpu": "RTX 3090", "count": 6}})
    assert any("--tensor-parallel-size 2 --pipeline-parallel-size 3" in n for n in six.notes), six.notes


def test_tp_given_that_does_not_divide_the_heads_is_still_refused() -> None:
    import pytest

    from mlrig.errors import MlrigError
    from mlrig.planner import evaluate

    with pytest.raises(MlrigError, match="tensor_parallel 3 does not divide"):
        evaluate({"model": "qwen2.5-32b", "hardware": {"gpu": "RTX 3090", "count": 3, "tensor_parallel": 3}})


def test_recommend_evaluates_three_cards_instead_of_refusing_them() -> None:
    res = mlrig("recommend", "--local-only", "--gpu", "RTX 3090", "--model", "qwen2.5-32b", "--precision", "awq",
                "--min-tok-s", "15", "--json")
    assert res.returncode == 0, res.stderr
    three = [o for o in json.loads(res.stdout)["options"] if o["gpus"] == 3]
    assert three and all("does not divide" not in (o["excluded_reason"] or "") for o in three), three
    assert any(o["fits"] for o in three)


# ---- 2. a 7B full fine-tune on 8 GPUs: sharded (ZeRO 3 / FSDP) by default, said in a note, so it fits

def test_multi_gpu_full_finetune_defaults_to_zero3_with_a_note() -> None:
    from mlrig.planner import evaluate

    r = evaluate({"model": "mistral-7b", "workload": {"task": "finetune"},
                  "hardware": {"gpu": "A100 80GB", "count": 8}})
    assert r.fits, r.memory
    assert any(n.startswith("no ZeRO stage given: ZeRO 3 / FSDP full shard assumed over the 8 GPUs") for n in r.notes)
    # what was given stays: --zero 0 is plain DDP (16 B per parameter: 7B does not fit 80 GB), LoRA, one GPU
    ddp = evaluate({"model": "mistral-7b", "workload": {"task": "finetune"}, "training": {"zero_stage": 0},
                    "hardware": {"gpu": "A100 80GB", "count": 8}})
    assert not ddp.fits and not any("no ZeRO stage" in n for n in ddp.notes)
    for plan in ({"training": {"method": "lora"}, "hardware": {"gpu": "A100 80GB", "count": 8}},
                 {"hardware": {"gpu": "A100 80GB", "count": 1}},
                 {"workload": {"task": "pretrain"}, "hardware": {"gpu": "A100 80GB", "count": 8}}):
        p = {"model": "mistral-7b", "workload": {"task": "finetune"}, **plan}
        assert not any("no ZeRO stage" in n for n in evaluate(p).notes), plan


def test_plan_headline_and_compare_say_the_sharding_assumed() -> None:
    res = mlrig("plan", "mistral-7b", "--task", "finetune", "--gpu", "A100 80GB", "-n", "8")
    assert res.returncode == 0, res.stderr
    assert "· ZeRO 3 (FSDP full shard)" in res.stdout and "✔ fits" in res.stdout
    cmp = mlrig("compare", "mistral-7b", "--task", "finetune", "--gpu", "8x A100 80GB", "--gpu", "RTX 4090")
    assert cmp.returncode == 0 and "ZeRO 3 / FSDP assumed; --zero 0: DDP" in cmp.stdout


# ---- 3. plan in the terminal gives a static load's TTFT / TPOT / throughput band, as --markdown does

def test_plan_terminal_shows_the_ttft_and_tpot_bands_markdown_shows() -> None:
    import re

    args = ("plan", "llama-3.1-8b", "--gpu", "RTX 4090")
    term, md = mlrig(*args), mlrig(*args, "--markdown")
    assert term.returncode == 0 and md.returncode == 0, term.stderr + md.stderr
    for label, key in (("TTFT", "TTFT"), ("TPOT", "TPOT"), ("throughput", "throughput")):
        row = re.search(rf"^\| {key} \| [^|]+ \| (±\d+%) \|", md.stdout, re.M)
        assert row is not None, md.stdout
        assert re.search(rf"{label} [\d,.]+ (ms|tok/s) \({re.escape(row.group(1))}\)", term.stdout), label


# ---- 4. a token stream's read rate in kB/s wherever a rate is printed, not "0.018 MB/s"

def test_small_read_rates_are_printed_in_kilobytes() -> None:
    from mlrig.units import read_rate_text

    assert read_rate_text(17_800) == "17.8 kB/s" and read_rate_text(2.5e9) == "2.5 GB/s"
    assert read_rate_text(350e6) == "350 MB/s" and read_rate_text(12) == "12 B/s"
    res = mlrig("build", "suggest", "-g", "RTX 3090", "-n", "4", "-m", "llama-3.2-3b", "--method", "full")
    assert res.returncode == 0, res.stderr
    assert "the data pipeline reads ~" in res.stdout and " kB/s" in res.stdout and "0.0" not in res.stdout.split(
        "the data pipeline reads ~")[1][:8]


def test_web_plan_page_gives_the_data_rate_in_kilobytes() -> None:
    import pytest

    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1:8765")
    page = client.get("/plan?model=mistral-7b&gpu=A100+80GB&count=8&task=finetune")
    assert page.status_code == 200
    # 21,050 tokens/s x 2 B (a custom loop: torch.optim.AdamW foreach, session 37; 43.5 kB/s priced fused)
    assert "data rate needed: 42.1 kB/s of 2 GB/s storage" in page.text, page.text[:2000]


# ---- 5. fit -m full: every precision a full fine-tune runs at, and a line for those left out

def test_fit_full_finetune_lists_the_precisions_it_trains_at_and_says_what_is_left_out() -> None:
    res = mlrig("fit", "llama-3.2-1b", "-m", "full", "--gpu", "RTX 4090")
    assert res.returncode == 0, res.stderr
    rows = [line.split()[0] for line in res.stdout.splitlines() if line.split()[:1] and
            line.split()[0] in ("bf16", "fp16", "fp8", "fp32", "q4_k_m", "awq")]
    assert rows == ["bf16", "fp16", "fp8", "fp32"], res.stdout
    assert "not listed: GGUF/AWQ/GPTQ/NF4" in " ".join(res.stdout.split())
    ampere = mlrig("fit", "llama-3.2-1b", "-m", "full", "--gpu", "A100 80GB")  # no FP8 tensor cores: no fp8 row
    assert ampere.returncode == 0 and "\nfp8 " not in ampere.stdout and "\nfp32 " in ampere.stdout, ampere.stdout
    lora = mlrig("fit", "llama-3.2-1b", "-m", "lora", "--gpu", "RTX 4090")
    assert "not listed: 8-bit (--precision int8) and 4-bit (--method qlora)" in " ".join(lora.stdout.split())


# ---- 6. an Instruct HF id stored as its base's alias: the note says why, and fit (which titles the base) shows it

def test_an_instruct_name_resolved_to_its_base_says_it_shares_the_architecture() -> None:
    from mlrig.catalog.models import resolve_model

    arch = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    assert arch.hf_id == "meta-llama/Llama-3.1-8B"
    assert any("instruct / chat fine-tune shares its base's architecture" in n for n in arch.notes), arch.notes
    assert not any("fine-tune shares" in n for n in resolve_model("mistral-7b").notes)  # an -Instruct entry
    res = mlrig("fit", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "RTX 4090")
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    assert "'meta-llama/Llama-3.1-8B-Instruct' resolved to catalog entry llama-3.1-8b" in text, text


# ---- 7. an ambiguous Apple name: one line giving the names to type; compare still prices the other rows

def test_an_ambiguous_gpu_whose_memory_differs_lists_names_to_give() -> None:
    import pytest

    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.errors import AmbiguousNameError

    with pytest.raises(AmbiguousNameError) as e:
        resolve_gpu("M2 Max")
    assert "give one: 'M2 Max 32GB', 'M2 Max 64GB', 'M2 Max 96GB'" in str(e.value)
    with pytest.raises(AmbiguousNameError) as h100:
        resolve_gpu("H100")  # two 80 GB variants: one spelling, which takes the common one with its note
    assert "give one: 'H100 80GB', 'H100 94GB'" in str(h100.value)
    for typed in ("M2 Max 32GB", "M2 Max 96GB", "H100 94GB"):
        resolve_gpu(typed)
    res = mlrig("compare", "llama-3.1-8b", "--gpu", "M2 Max", "--gpu", "RTX 4090")
    assert res.returncode == 1  # a row could not be priced: not a success
    assert "give one: 'M2 Max 32GB'" in " ".join(res.stdout.split()) and "RTX 4090  vllm" in res.stdout


# ---- 8. recommend's aggregate line: the load priced (the fewest users reaching the target), not a capacity

def test_recommend_words_the_users_as_the_load_that_reaches_the_target() -> None:
    res = mlrig("recommend", "--cloud-only", "--model", "llama-3.1-8b", "--min-throughput", "500", "--top", "2")
    assert res.returncode == 0, res.stderr
    out = " ".join(res.stdout.split())
    assert "tok/s aggregate at a load of" in out and "(the fewest that reach it; closed loop)" in out
    assert "users at once" not in out


def test_fp8_training_on_a_gpu_without_fp8_tensor_cores_is_priced_and_said_as_bf16() -> None:
    """An A100 has no FP8 tensor cores: fp8 training there runs its GEMMs in bf16, so it is no faster than
    bf16 (it was: the FP8 cast traffic made it 5 % slower while the text said "FP8 linear GEMMs")."""
    from mlrig.planner import evaluate

    def run(precision: str, gpu: str) -> tuple[float, str]:
        res = evaluate({"model": "meta-llama/Llama-3.1-8B", "workload": {"task": "finetune", "precision": precision},
                        "training": {"method": "lora"}, "hardware": {"gpu": gpu}})
        perf = res.performance
        assert perf is not None and perf.train_tokens_per_s is not None
        return perf.train_tokens_per_s, perf.explanation or ""

    fp8, text = run("fp8", "a100-sxm-80gb")
    bf16, _ = run("bf16", "a100-sxm-80gb")
    assert fp8 == pytest.approx(bf16, rel=1e-9)
    assert "no FP8 tensor cores" in text and "FP8 linear GEMMs" not in text
    h100_fp8, h100_text = run("fp8", "h100-sxm")
    assert "FP8 linear GEMMs" in h100_text and h100_fp8 > run("bf16", "h100-sxm")[0]
