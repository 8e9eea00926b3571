"""What a new user hits first (issue 10 §3, docs USER-STORIES): the QLoRA headline, GGUF with training, money and
token counts written as people write them, model names without hyphens, one power cap per build report, and band
captions that say what the band is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlrig.errors import MlrigError

ROOT = Path(__file__).resolve().parents[1]


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True,
                          timeout=240, env=env, cwd=ROOT)


# ---- 1. a QLoRA headline says the base is 4-bit NF4

def test_qlora_headline_names_the_nf4_base() -> None:
    r = mlrig("plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", "--seq-len", "2k")
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[0]
    assert "nf4 base + bf16 compute" in head, head
    assert "· bf16 ·" not in head


def test_precision_text() -> None:
    from mlrig.commands._common import precision_text

    assert precision_text("bf16", "nf4") == "nf4 base + bf16 compute"
    assert precision_text("fp16", "nf4") == "nf4 base + fp16 compute"
    assert precision_text("nf4-nodq", "nf4-nodq") == "nf4-nodq base + bf16 compute"
    assert precision_text("bf16", None) == "bf16"  # LoRA: no base format of its own
    assert precision_text("q4_k_m", None) == "q4_k_m"


def test_qlora_markdown_headline() -> None:
    r = mlrig("plan", "mistral-7b", "--gpu", "RTX 4090", "--method", "qlora", "--seq-len", "2k", "--markdown")
    assert r.returncode == 0, r.stderr
    assert "nf4 base + bf16 compute" in r.stdout.splitlines()[0]


# ---- 2. a GGUF precision with a training method is one line, exit 2

def test_qlora_with_gguf_precision_is_refused() -> None:
    r = mlrig("plan", "llama-3.1-8b", "--method", "qlora", "--precision", "q4_k_m")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert "GGUF" in lines[0] and "--precision bf16" in lines[0]


def test_gguf_training_refused_in_plan_files_and_kept_for_gptq() -> None:
    from mlrig.planner import parse_plan

    with pytest.raises(Exception, match="GGUF"):
        parse_plan({"model": "llama-3.1-8b", "workload": {"task": "finetune", "precision": "q8_0"}})
    # QLoRA on a GPTQ base (LLaMA-Factory) and NF4 stay plans; inference with GGUF too
    parse_plan({"model": "llama-3.1-8b", "workload": {"task": "finetune", "precision": "gptq"},
                "training": {"method": "qlora"}})
    parse_plan({"model": "llama-3.1-8b", "workload": {"task": "finetune", "precision": "nf4"},
                "training": {"method": "qlora"}})
    parse_plan({"model": "llama-3.1-8b", "workload": {"precision": "q4_k_m"}})


def test_fit_training_ladder_has_no_gguf() -> None:
    from mlrig.commands.fit import fit_rows

    rows, _ = fit_rows("llama-3.2-1b", "RTX 3090", method="lora")
    assert [r["precision"] for r in rows] == ["bf16", "fp16"]  # a 16-bit frozen base (fp16 where bf16 is absent)


# ---- 3. --budget 2k, $2,000

@pytest.mark.parametrize("text, usd", [("2000", 2000.0), ("2k", 2000.0), ("$2,000", 2000.0), ("1.5M", 1.5e6),
                                       ("$ 2K", 2000.0), ("2500usd", 2500.0)])
def test_parse_usd(text: str, usd: float) -> None:
    from mlrig.units import parse_usd

    assert parse_usd(text, "--budget") == usd


@pytest.mark.parametrize("junk", ["2kk", "-5", "two grand", "€2000", ""])
def test_parse_usd_junk(junk: str) -> None:
    from mlrig.units import parse_usd

    with pytest.raises(MlrigError, match="--budget"):
        parse_usd(junk, "--budget")


def test_budget_flag_takes_suffixes() -> None:
    ok = mlrig("recommend", "--model", "llama-3.1-8b", "--min-tok-s", "30", "--budget", "2k", "--json")
    assert ok.returncode == 0, ok.stderr
    bad = mlrig("recommend", "--model", "llama-3.1-8b", "--budget", "2kk")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "--budget" in bad.stderr


# ---- 4. model names as people type them

@pytest.mark.parametrize("name, catalog_id", [
    ("llama3-8b", "llama-3-8b"), ("llama3.1-8b", "llama-3.1-8b"), ("llama3.1:8b", "llama-3.1-8b"),
    ("Llama3-8B-Instruct", "llama-3-8b"), ("qwen-2.5-7b", "qwen2.5-7b"), ("gemma2-9b", "gemma-2-9b"),
    ("mistral7b", "mistral-7b-v0.3"),
])
def test_names_without_hyphens_resolve(name: str, catalog_id: str) -> None:
    from mlrig.catalog.models import resolve_model

    arch = resolve_model(name)
    assert arch.id == catalog_id
    assert any("resolved to catalog entry" in n for n in arch.notes)  # said, not silent


def test_unknown_name_still_suggests() -> None:
    from mlrig.catalog.models import resolve_model

    with pytest.raises(MlrigError, match="did you mean"):
        resolve_model("llama9-8b")


def test_no_two_catalog_ids_differ_only_in_separators() -> None:
    """The hyphen-free lookup is unambiguous only while this holds."""
    from mlrig.catalog.models import _catalog_entries, _compact

    ids = [a.id for a, _ in _catalog_entries()]
    assert len({_compact(i) for i in ids}) == len(ids)


# ---- 5. one power cap per build report

def test_build_check_one_power_cap() -> None:
    import re

    from mlrig.advisor.build import check_build, load_build

    report = check_build(load_build(ROOT / "examples" / "build-2x3090-1000w-b650.toml"))
    caps = {int(m) for x in report.findings for m in re.findall(r"nvidia-smi -pl (\d+)", x.fix)}
    assert caps == {240}, caps  # the PSU's cap; the cooling advice names the same one
    cooling = next(x for x in report.findings if x.check == "cooling")
    assert "PSU" in cooling.fix


def test_build_check_without_psu_cap_keeps_the_cooling_cap() -> None:
    import re

    from mlrig.advisor.build import check_build, load_build

    report = check_build(load_build(ROOT / "examples" / "build-2x3090.toml"))
    caps = {int(m) for x in report.findings for m in re.findall(r"nvidia-smi -pl (\d+)", x.fix)}
    assert caps == {280}


# ---- 6. token counts in plan files as on the command line

def test_plan_file_accepts_suffixed_token_counts(tmp_path: Path) -> None:
    from mlrig.planner import parse_plan

    p = parse_plan({"model": "llama-3.1-8b",
                    "workload": {"task": "finetune", "context_tokens": "8k", "max_model_len": "32k"},
                    "training": {"method": "lora", "seq_len": "4k", "tokens_to_train": "100M",
                                 "global_batch_tokens": "1M"}})
    assert p.workload.context_tokens == 8192 and p.workload.max_model_len == 32768
    assert p.training is not None
    assert p.training.seq_len == 4096 and p.training.global_batch_tokens == 1024**2
    assert p.training.tokens_to_train == 100e6  # totals are decimal, as --tokens


def test_plan_file_bad_token_count_is_one_line(tmp_path: Path) -> None:
    f = tmp_path / "p.toml"
    f.write_text('model = "llama-3.1-8b"\n[workload]\ntask = "finetune"\n[training]\nseq_len = "4kk"\n')
    r = mlrig("plan", "-f", str(f))
    assert r.returncode == 2 and "training.seq_len" in r.stderr and "8k" in r.stderr
    assert "Traceback" not in r.stderr


# ---- 7. band captions say what the band is

def test_band_kind() -> None:
    from mlrig.commands._common import band_caption, band_kind

    small = {"validated": True, "rows": 5, "p90_error": 0.02, "scope": "s"}
    large = {"validated": True, "rows": 93, "p90_error": 0.2, "scope": "s"}
    assert band_kind(0.2, small) == "default band: only 5 runs in its scope"
    assert band_kind(0.2, large) == "p90"
    assert band_kind(0.3, {"validated": False, "nearest_p90_error": 0.3}) == "p90 of nearest scope"
    assert band_kind(0.3, {"validated": False, "nearest_p90_error": 0.1}) == "default band: not validated"
    assert band_kind(0.2, "not validated") == "default band: not validated"  # a hand-written result's oddity
    caption = band_caption([({"decode_tok_s": 0.2}, {"decode_tok_s": small})])
    assert caption is not None and "p90" not in caption and "default band: only 5 runs in its scope" in caption


# ---- the user stories, one command each (USER-STORIES.md)

def test_compare_methods_side_by_side() -> None:
    """"How much VRAM to fine-tune Mistral 7B with LoRA r=16 at 4k? With QLoRA? Full?": -m repeats, one row
    each (before, typer kept the last -m and showed one row)."""
    from mlrig.commands.compare import compare_rows

    rows = compare_rows("mistral-7b", ["RTX 4090"], method=["full", "lora", "qlora"], lora_rank=16, seq_len=4096)
    assert [r["variant"] for r in rows] == ["full", "lora", "qlora"]
    gib = [r["result"]["memory"]["per_gpu_gib"] for r in rows]
    assert gib[0] > gib[1] > gib[2]


def test_compare_gpu_with_count_and_time_to_train() -> None:
    """"How long to fine-tune a 7B on 100M tokens on 8xA100? On one 4090?" in one command."""
    r = mlrig("compare", "llama-2-7b", "--gpu", "8x A100 80GB", "--gpu", "RTX 4090", "-m", "qlora",
              "--tokens", "100M")
    assert r.returncode == 0, r.stderr
    assert "train" in r.stdout and "8x A100 80GB" in r.stdout
    from mlrig.commands.compare import compare_rows

    rows = compare_rows("llama-2-7b", ["8x A100 80GB", "A100 80GB"], method="qlora", tokens=100_000_000)
    many, one = (x["result"]["performance"] for x in rows)
    assert many["train_tokens_per_s"] > 4 * one["train_tokens_per_s"]  # 8 GPUs, not 1
    assert one["time_to_train_s"] > many["time_to_train_s"] > 0


def test_gpu_name_with_count_says_how_to_give_it() -> None:
    from mlrig.catalog.gpus import resolve_gpu, split_gpu_count

    assert split_gpu_count("8x A100 80GB") == (8, "A100 80GB")
    assert split_gpu_count("2 × RTX 3090") == (2, "RTX 3090")
    assert split_gpu_count("RTX 3090") is None
    with pytest.raises(MlrigError, match="-n 8"):
        resolve_gpu("8x A100 80GB")


def test_offload_fix_names_host_ram() -> None:
    """"Full fine-tune of a 3B on 24 GB: ... how much system RAM?": the offload fix says."""
    from mlrig.fixes import make_it_fit
    from mlrig.planner import evaluate, parse_plan, resolve_arch, resolve_hardware

    plan = parse_plan({"model": "llama-3.2-3b", "workload": {"task": "finetune"}, "training": {"method": "full"},
                       "hardware": {"gpu": "RTX 4090"}})
    arch, gpu = resolve_arch(plan), resolve_hardware(plan)
    fixes = make_it_fit(plan, arch, gpu, evaluate(plan, arch=arch, gpu=gpu))
    offload = next(f for f in fixes if f.flags.startswith("--offload"))
    assert offload.note is not None and "GiB host RAM" in offload.note


def test_serve_caption_says_what_the_band_is() -> None:
    r = mlrig("serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "20", "--json")
    assert r.returncode == 0, r.stderr
    import json

    out = json.loads(r.stdout)
    assert out["decode_band_kind"] in ("p90", "p90 of nearest scope") or out["decode_band_kind"].startswith(
        "default band")


def test_recommend_takes_plan_short_flags() -> None:
    from mlrig.commands.advisor import parse_workload_args

    (w,) = parse_workload_args(["--model", "llama-3.1-8b", "-q", "q4_k_m", "-c", "8k", "-e", "llama.cpp"])
    assert w.plan["workload"] == {"precision": "q4_k_m", "context_tokens": 8192, "engine": "llama.cpp"}
    (t,) = parse_workload_args(["--model", "llama-3.1-8b", "-m", "lora", "--zero", "2"])
    assert t.plan["training"] == {"method": "lora", "zero_stage": 2}


def test_help_lists_the_new_users_path_first() -> None:
    """`mlrig --help` starts with plan, fit, compare, serve (the questions people come with), and lists every
    module's commands."""
    from mlrig.cli import COMMAND_MODULES, HELP_ORDER

    assert set(HELP_ORDER) == set(COMMAND_MODULES.values())
    r = mlrig("--help")
    names = [line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert names[:4] == ["plan", "fit", "compare", "serve"]


def test_family_name_suggests_its_members() -> None:
    """'llama3' is a family: the suggestions are Llama 3 models, not llama-30b (difflib's first pick)."""
    from mlrig.catalog.models import resolve_model

    with pytest.raises(MlrigError) as exc:
        resolve_model("llama3")
    suggested = str(exc.value).split("did you mean: ")[1].split("?")[0].split(", ")
    assert suggested[0] == "llama-3-70b" or suggested[0] == "llama-3-8b"
    assert "llama-30b" not in suggested
    assert all(s.startswith("llama-3") for s in suggested)


def test_web_queries_take_token_counts_as_flags_do() -> None:
    pytest.importorskip("fastapi")
    from mlrig.web.schemas import CompareQuery, PlanQuery

    q = PlanQuery(model="llama-3.1-8b", context="8k", seq_len="4k", tokens="100B")
    assert (q.context, q.seq_len, q.tokens) == (8192, 4096, 1e11)
    assert CompareQuery(model="llama-3.1-8b", prompt="1k").prompt == 1024
    with pytest.raises(ValueError, match="token count"):
        PlanQuery(model="llama-3.1-8b", context="8kk")


def test_web_plan_page_headline_names_the_nf4_base() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1:8765")
    page = client.get("/plan?model=mistral-7b&gpu=RTX+4090&method=qlora&task=finetune")
    assert page.status_code == 200 and "nf4 base + bf16 compute" in page.text


def test_web_pages_say_what_the_band_is() -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from mlrig.web import create_app

    client = TestClient(create_app(), base_url="http://127.0.0.1:8765")
    serve = client.get("/serve?model=llama-3.1-8b&gpu=L40S&min_tok_s=20")
    assert serve.status_code == 200 and "± = p90 error" not in serve.text and "validation band" in serve.text
    plan = client.get("/plan?model=llama-3.1-8b&gpu=L40S")
    assert plan.status_code == 200 and "band (p90)" not in plan.text


def test_compare_markdown_has_time_to_train() -> None:
    from mlrig.commands.compare import compare_rows
    from mlrig.commands.markdown import compare_markdown

    rows = compare_rows("mistral-7b", ["RTX 4090"], method=["lora", "qlora"], seq_len=4096, tokens=100_000_000)
    text = compare_markdown("mistral-7b", rows, training=True)
    header = text.splitlines()[2]
    assert "time to train h" in header
    hours = [line.split("|")[8].strip() for line in text.splitlines()[4:6]]
    want = [r["result"]["performance"]["time_to_train_s"] / 3600 for r in rows]
    assert [float(h) for h in hours] == pytest.approx(want, abs=0.06)


def test_a_fix_that_changes_the_default_engine_says_so() -> None:
    """No engine given: a GGUF precision fix moves the default engine to llama.cpp, and the fix says so."""
    from mlrig.fixes import make_it_fit
    from mlrig.planner import evaluate, parse_plan, resolve_arch, resolve_hardware

    plan = parse_plan({"model": "deepseek-v3", "hardware": {"gpu": "H100 SXM", "count": 8}})
    arch, gpu = resolve_arch(plan), resolve_hardware(plan)
    result = evaluate(plan, arch=arch, gpu=gpu)
    assert result.engine == "vllm" and not result.fits
    fixes = make_it_fit(plan, arch, gpu, result)
    gguf = next(f for f in fixes if f.flags.startswith("--precision q"))
    assert gguf.note is not None and "runs on llama.cpp, not vllm" in gguf.note
    assert all("runs on" not in (f.note or "") for f in fixes if not f.flags.startswith("--precision"))


def test_quant_is_an_alias_of_precision() -> None:
    """Users type `--quant q4_k_m` (llama.cpp's word); every command that takes --precision takes it."""
    from typer.testing import CliRunner

    from mlrig.cli import app
    from mlrig.commands.advisor import parse_workload_args

    (w,) = parse_workload_args(["--model", "llama-3.1-8b", "--quant", "q4_k_m"])
    assert w.plan["workload"] == {"precision": "q4_k_m"}
    runner = CliRunner()
    for args in (["plan", "llama-3.1-8b", "--gpu", "rtx-4070", "--quant", "q4_k_m"],
                 ["compare", "llama-3.1-8b", "--gpu", "rtx-4070", "--quant", "q4_k_m"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, result.output
        assert "q4_k_m" in result.output


def test_recommend_takes_the_model_as_plan_does() -> None:
    """`mlrig recommend qwen2.5-32b --budget 2000` (a bare model, as `plan MODEL`) is `--model qwen2.5-32b`;
    before it was 'unknown option'."""
    from mlrig.commands.advisor import parse_workload_args

    (w,) = parse_workload_args(["qwen2.5-32b", "-q", "q4_k_m"])
    assert w.plan["model"] == {"name": "qwen2.5-32b"} and w.plan["workload"] == {"precision": "q4_k_m"}
    first, second = parse_workload_args(["llama-3.1-8b", "--min-tok-s", "20", "--model", "qwen2.5-32b"])
    assert (first.plan["model"]["name"], second.plan["model"]["name"]) == ("llama-3.1-8b", "qwen2.5-32b")
    assert first.usage.min_tok_s == 20 and second.usage.min_tok_s != 20
