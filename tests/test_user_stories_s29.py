"""User stories (../shared/docs/USER-STORIES.md) tried as a new user would type them, session 29: each test
is a command whose answer was missing, wrong or unclear, checked through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from typer.testing import CliRunner


def invoke(*args: str) -> Any:
    from mlrig.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def mlrig(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point (errors become one line and exit status 2 there)."""
    return subprocess.run([sys.executable, "-m", "mlrig.cli", *args], capture_output=True, text=True, timeout=120)


def run(*args: str) -> str:
    res = invoke(*args)
    assert res.exit_code == 0, res.output
    return str(res.stdout)


def test_compare_finetune_shows_training_speed_as_plan_gives_it() -> None:
    """"How long to fine-tune on a 3090 vs a 4090?": compare showed decode/prefill/TTFT dashes for a training
    plan and had no --method; the rows now carry plan's training tokens/s, step time and MFU."""
    args = ("mistral-7b", "--method", "qlora", "--seq-len", "4k")
    out = run("compare", *args, "--gpu", "RTX 3090", "--gpu", "RTX 4090")
    assert "train" in out and "MFU" in out and "decode" not in out and "qlora" in out.splitlines()[0]
    for gpu, label in (("RTX 3090", "RTX 3090"), ("RTX 4090", "RTX 4090")):
        perf = json.loads(run("plan", *args, "--gpu", gpu, "--json"))["performance"]
        row = next(line for line in out.splitlines() if line.strip().startswith(label))
        assert f"{perf['train_tokens_per_s']:,.0f}" in row and f"{perf['step_time_s']:.2f}" in row
    md = run("compare", *args, "--gpu", "RTX 3090", "--gpu", "RTX 4090", "--markdown")
    header = next(line for line in md.splitlines() if line.startswith("| variant"))
    assert "training tokens/s" in header and "decode" not in header.split("validated")[0]
    assert "(training-qlora train_tokens_per_s" in md


def test_training_flags_on_an_inference_plan_are_a_one_line_error() -> None:
    """`--seq-len 4k` where `--context` was meant, or `--task inference --method lora`, were dropped without a
    word (the answer was an inference plan that ignored them): exit 2, one line naming both ways out."""
    for args in (("--seq-len", "4k"), ("--task", "inference", "--method", "lora")):
        res = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", *args)
        assert res.returncode == 2 and res.stdout == "", res.stderr
        lines = res.stderr.strip().splitlines()
        assert len(lines) == 1 and "inference plan" in lines[0] and "--task finetune" in lines[0], res.stderr
    # what stays accepted: --method alone means fine-tuning, --ep on an inference plan moves to [hardware]
    assert json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--method", "lora", "--json"))["fits"]
    run("plan", "qwen3-30b-a3b", "--gpu", "H100 SXM", "-n", "2", "--ep", "2", "--json")


def test_finetune_without_seq_len_says_which_sequences_it_priced() -> None:
    """"How long to fine-tune ...?" without --seq-len was priced at 640-token sequences (inference's default
    512 + 128 request) and nothing said so; the speed line now states micro-batch x tokens per GPU and a note
    names the default and the flag. Step time x tokens/s = micro-batch x seq x GPUs (the line is the truth).
    The default is now 2,048 (planner.default_seq_len: LLaMA-Factory's cutoff_len; tests/test_s29_defaults.py)."""
    out = run("plan", "llama-3.2-3b", "--gpu", "RTX 4090", "--method", "lora")
    assert "micro-batch 1 × 2,048 tokens per GPU" in out and "no --seq-len given" in out
    data = json.loads(run("plan", "llama-3.2-3b", "--gpu", "RTX 4090", "--method", "lora", "--json"))
    assert any(n.startswith("no --seq-len given: training sequences of 2,048 tokens") for n in data["notes"])
    perf = data["performance"]
    assert abs(perf["train_tokens_per_s"] * perf["step_time_s"] / 2048 - 1) < 0.01
    given = run("plan", "llama-3.2-3b", "--gpu", "RTX 4090", "--method", "lora", "--seq-len", "2k", "--batch", "4",
                "-n", "2")
    assert "micro-batch 4 × 2,048 tokens per GPU" in given and "no --seq-len given" not in given


def test_small_figures_are_not_printed_as_zero_and_large_ones_have_separators() -> None:
    """A LoRA fine-tune reads a few kB/s of data ("reads 0.00 MB/s"); a tiny model's batch limit printed
    "69808" beside "2,048 tokens"."""
    out = run("plan", "llama-3.2-3b", "--gpu", "RTX 4090", "--method", "lora")
    data_line = next(line for line in out.splitlines() if line.startswith("Data: reads"))
    assert "0.00" not in data_line and "kB/s" in data_line
    from mlrig.commands._common import limits_line

    assert "largest batch at this context: 69,808;" in limits_line({"max_batch_size": 69808, "min_gpus": 1})


def test_engine_refusal_suggests_only_precisions_smaller_than_the_plans_own() -> None:
    """DeepSeek-V3 at FP8 on 8 H100s (671 GB of weights): the note told an FP8 plan to "use a smaller
    --precision (fp8, awq, ...)". Only formats with fewer bits per weight than the plan's are named."""
    data = json.loads(run("plan", "deepseek-v3", "--gpu", "h100-sxm-80gb", "-n", "8", "-q", "fp8", "--json"))
    note = next(n for n in data["notes"] if "would refuse to start" in n)
    assert "--precision (awq, gptq)" in note and "fp8" not in note.split("--precision")[1]


def test_fit_on_two_gpus_says_two_in_its_title() -> None:
    """"Can I run Llama 3.1 70B on two 3090s?": `fit ... -n 2` answered per GPU of two under a title naming one
    3090, which reads as a single card holding 70B at Q4_K_M."""
    out = run("fit", "llama-3.1-70b", "--gpu", "RTX 3090", "-n", "2")
    assert "on 2 × NVIDIA GeForce RTX 3090: every precision" in " ".join(out.split())
    one = run("fit", "--gpu", "RTX 3090", "--context", "8k")
    assert "catalog models on NVIDIA GeForce RTX 3090:" in " ".join(one.split())


def test_engine_refusal_for_weights_names_fixes_that_can_work() -> None:
    """Qwen2.5-32B bf16 (65.5 GB of weights) on an A100 40GB: vLLM cannot start, and the note advised "Lower
    the context / --max-model-len", which cannot shrink the weights. A reservation just too small is told the
    --gpu-memory-utilization that holds weights + activations (Llama 3.1 8B: 15.6 GiB of a 24 GiB card)."""
    data = json.loads(run("plan", "Qwen/Qwen2.5-32B-Instruct", "--gpu", "A100 40GB", "--engine", "vllm", "--json"))
    note = next(n for n in data["notes"] if "would refuse to start" in n)
    assert "weights" in note and "context" not in note and "--precision" in note
    assert "--gpu-memory-utilization" not in note  # 61 GiB of weights exceed the whole 39.8 GiB card
    low = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "vllm",
                         "--gpu-memory-utilization", "0.6", "--json"))
    note = next(n for n in low["notes"] if "would refuse to start" in n)
    mem = low["memory"]
    # vLLM's share is of the CUDA driver's total (the card less CUDA_DRIVER_RESERVED_GIB), so the share told must
    # hold the weights + activations of that total (0.66 of the board's 23.99 GiB would still refuse); at it the
    # engine starts, with a small pool (~1.3k tokens here)
    from mlrig.estimators.memory import driver_total_gib

    fixed = mem["weights_gib"] + mem["activations_gib"] + mem["overhead_gib"]
    share = fixed / driver_total_gib(mem["gpu_capacity_gib"], "NVIDIA")
    assert f"--gpu-memory-utilization to {share + 0.01:.2f} or more" in note and "context" not in note
    told = float(note.split("--gpu-memory-utilization to ")[1].split()[0])
    started = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "vllm", "--context", "1024",
                             "--gpu-memory-utilization", f"{told}", "--json"))
    assert not any("would refuse to start" in n for n in started["notes"])


def test_a_plan_file_with_a_misnamed_key_says_which_key_was_meant(tmp_path: Any) -> None:
    """A plan file typed from memory ("precison", "gpus = 2", "rank = 16", "context = 8192") was refused
    naming the key but not the right one; the one-line error now names it."""
    plan = tmp_path / "plan.toml"
    plan.write_text('model = "llama-3.1-8b"\n[workload]\nprecison = "q4_k_m"\ncontext = 8192\n'
                    '[hardware]\ngpu = "RTX 4090"\ngpus = 2\n')
    res = mlrig("plan", "--file", str(plan))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    for wrong, right in (("workload.precison", "workload.precision"), ("workload.context", "workload.context_tokens"),
                         ("hardware.gpus", "hardware.count")):
        assert f"unknown field '{wrong}'; did you mean '{right}'?" in res.stderr
    from mlrig.planner import field_hint

    assert field_hint("training.rank") == "training.lora_rank"
    assert field_hint("workload.method") == "training.method"  # the right name in another section
    assert field_hint("workload.foo") is None


def test_gpus_min_memory_keeps_the_cards_of_that_size() -> None:
    """`mlrig gpus --min-memory 24` left out the RTX 4090 (the driver reports 23.99 GiB) and the README's
    `--vendor NVIDIA --min-memory 40` both A100 40GB cards (39.82 GiB); "24GB" (a shop's spelling) was a
    usage error, and `--class tpu`, listed in the help, was refused."""
    ids = {g["id"] for g in json.loads(run("gpus", "--min-memory", "24", "--json"))}
    assert {"rtx-4090", "rtx-3090"} <= ids and "rtx-4080" not in ids
    ids = {g["id"] for g in json.loads(run("gpus", "--vendor", "NVIDIA", "--min-memory", "40", "--json"))}
    assert {"a100-sxm-40gb", "a100-pcie-40gb", "h100-sxm-80gb"} <= ids
    # GB are 10^9 bytes: the L40S's 44.99 GiB are 48.3 GB, so it has "48GB" but not 48 GiB
    assert "l40s" in {g["id"] for g in json.loads(run("gpus", "--min-memory", "48GB", "--json"))}
    assert "l40s" not in {g["id"] for g in json.loads(run("gpus", "--min-memory", "48", "--json"))}
    bad = mlrig("gpus", "--min-memory", "lots")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "24GB" in bad.stderr
    assert {g["hardware_class"] for g in json.loads(run("gpus", "--class", "tpu", "--json"))} == {"tpu"}


def test_gpu_memory_utilization_takes_per_cent_and_names_the_fix_for_90() -> None:
    """vLLM's flag is a fraction; people type 90 or 90%. '90%' was a usage panel and '90' an error about
    'workload.gpu_memory_utilization ... less than or equal to 1' that named no fix."""
    frac = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu-memory-utilization", "0.95", "--json"))
    pct = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu-memory-utilization", "95%", "--json"))
    assert pct["memory"] == frac["memory"] and pct["kv_cache_capacity_tokens"] == frac["kv_cache_capacity_tokens"]
    res = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu-memory-utilization", "95")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "--gpu-memory-utilization" in res.stderr and "give 0.95 (or 95%)" in res.stderr


def test_a_second_gpu_on_a_one_gpu_command_is_an_error_not_dropped() -> None:
    """`fit llama-3.1-8b --gpu 'RTX 3090' --gpu 'RTX 4090'` answered for the 4090 alone (click keeps the last
    value of a one-value option), the 3090 the user asked about dropped without a word."""
    res = mlrig("fit", "llama-3.1-8b", "--gpu", "RTX 3090", "--gpu", "RTX 4090")
    assert res.returncode == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert "--gpu given 2 times" in res.stderr and "mlrig compare" in res.stderr
    both = mlrig("fit", "llama-3.1-8b", "-g", "RTX 3090", "--gpu=RTX 4090")
    assert both.returncode == 2 and "--gpu given 2 times" in both.stderr  # either spelling counts
    # other one-value options given twice are errors too (tests/test_user_stories_s32.py)
    sweep = mlrig("sweep", "llama-3.1-8b", "--gpu", "RTX 3090", "--gpu", "RTX 4090")
    assert sweep.returncode == 2 and "--gpu A,B" in sweep.stderr  # sweep takes a comma-separated list
    # options that collect values, and words after `--`, are not this check's business
    from mlrig.cli import build_app, repeated_option

    assert repeated_option(build_app("compare"), ["compare", "m", "--gpu", "A", "--gpu", "B"]) is None
    assert repeated_option(build_app("diagnose"), ["diagnose", "--", "x", "--gpu", "a", "--gpu", "b"]) is None


def test_a_model_named_as_people_say_it_resolves() -> None:
    """"Can I run Llama 3.1 70B on two 3090s?" - `fit 'Llama 3.1 70B' ...` was an unknown model, with
    llama-3.1-70b first among the suggestions."""
    from mlrig.catalog.models import resolve_model

    assert resolve_model("Llama 3.1 70B").id == resolve_model("llama-3.1-70b").id
    assert resolve_model("Qwen2.5 32B Instruct").id == resolve_model("qwen2.5-32b").id
    out = run("fit", "Llama 3.1 70B", "--gpu", "RTX 3090", "-n", "2")
    assert "meta-llama/Llama-3.1-70B on 2 ×" in " ".join(out.split())


def test_serve_curve_is_what_plan_gives_for_the_same_closed_loop() -> None:
    """"How many concurrent users can one L40S serve?": serve's curve priced every loop as users who drift
    apart, whatever --lengths said, while `plan --load concurrency --batch 64` priced the default fixed lengths
    in lock-step: TTFT 128 against 1,199 ms for one setup, and `serve --lengths fixed` changed nothing. Each
    point is now the plan's figures, for either lengths."""
    for lengths in ("fixed", "varied"):
        curve = json.loads(run("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1,8,64",
                               "--lengths", lengths, "--json"))["curve"]
        for pt in curve:
            perf = json.loads(run("plan", "llama-3.1-8b", "--gpu", "L40S", "--engine", "vllm", "--load", "concurrency",
                                  "--batch", str(pt["concurrency"]), "--lengths", lengths, "--json"))["performance"]
            assert pt["ttft_ms"] == perf["ttft_ms"] and pt["tpot_ms"] == perf["tpot_ms"], (lengths, pt)
            assert pt["throughput_tok_s"] == perf["throughput_tok_s"]
    out = run("serve", "llama-3.1-8b", "--gpu", "L40S", "--min-tok-s", "20")
    assert "fixed lengths" in out and "--lengths varied" in out  # the TTFT column's assumption is said


def test_recommend_aggregate_line_adds_up() -> None:
    """"Cheapest cloud instance that serves Llama 3.1 70B FP8 at 1,000 tok/s aggregate?" was answered
    "29 users × 61 tok/s = 1,017 tok/s aggregate": 29 x 61 is 1,769. The 61 is the decode rate; the aggregate
    also pays each batch's prefill. The line now gives the per-user share that multiplies out."""
    import re

    out = " ".join(run("recommend", "--model", "llama-3.1-70b", "--precision", "fp8", "--min-throughput", "1000",
                       "--cloud-only", "--top", "3").split())
    found = re.findall(r"([\d,]+) tok/s aggregate at a load of (\d+) users \(the fewest that reach it; closed loop\):"
                       r" (\d+) each with prefill", out)
    assert found
    for agg, users, each in found:
        assert abs(int(users) * int(each) / float(agg.replace(",", "")) - 1) < 0.03, (users, agg, each)
    assert "users ×" not in out and "while decoding" in out


def test_a_serving_reservation_given_to_llama_cpp_is_said_to_do_nothing() -> None:
    """`--engine llama.cpp --gpu-memory-utilization 0.5` gave the same answer as without it and said nothing:
    llama.cpp has no such reservation. The answer stays (a compare across engines may carry the flag for its
    vLLM rows) and a note says the flag had no effect; vLLM's plan takes it, without the note."""
    base = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "llama.cpp", "--json"))
    given = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "llama.cpp",
                           "--gpu-memory-utilization", "0.5", "--json"))
    assert given["memory"] == base["memory"]
    assert any(n.startswith("gpu_memory_utilization has no effect on llama.cpp") for n in given["notes"])
    vllm = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "vllm",
                          "--gpu-memory-utilization", "0.5", "--json"))
    assert not any("no effect" in n for n in vllm["notes"])


def test_recommend_workload_flags_raise_a_user_error_not_an_exit() -> None:
    """recommend (and `mlrig web`'s /api/recommend) parse the setup flags themselves with the options' parsers,
    whose command-line form exits: under the web app a bad --gpu-memory-utilization or --max-model-len was a
    server error (SystemExit). They now raise the one-line MlrigError the CLI and the API report."""
    import pytest

    from mlrig.commands.advisor import parse_workload_args
    from mlrig.errors import MlrigError

    for flag, bad in (("--gpu-memory-utilization", "95"), ("--max-model-len", "8q")):
        with pytest.raises(MlrigError, match=flag):
            parse_workload_args(["--model", "llama-3.1-8b", flag, bad])
    w = parse_workload_args(["--model", "llama-3.1-8b", "--gpu-memory-utilization", "90%", "--max-model-len", "8k"])
    assert w[0].plan["workload"]["gpu_memory_utilization"] == 0.9 and w[0].plan["workload"]["max_model_len"] == 8192


def test_keywords_in_any_case_and_searches_by_words() -> None:
    """People write "QLoRA" and "LoRA" (the papers' spelling): `--method QLoRA` was refused as not 'qlora'.
    `models --search "llama 3.1"` found nothing (the ids have hyphens)."""
    assert json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--method", "QLoRA", "--json")) == json.loads(
        run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--method", "qlora", "--json"))
    ids = {m["id"] for m in json.loads(run("models", "--search", "llama 3.1", "--json"))}
    assert "llama-3.1-8b" in ids and "llama-3.1-70b" in ids and not any("qwen" in i for i in ids)


def test_too_much_parallelism_names_the_flags() -> None:
    """`plan MODEL --gpu 'RTX 4090' --tp 2` (the -n forgotten) said "raise hardware.count", a plan-file name."""
    res = mlrig("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--tp", "2")
    assert res.returncode == 2 and "hardware.count (-n)" in res.stderr and "(--tp, --pp)" in res.stderr


def test_serve_assumes_the_engine_plan_assumes() -> None:
    """`serve` fixed vLLM when no --engine was given: on a Mac it refused ("vllm needs a CUDA/ROCm GPU ... use
    --engine llama.cpp or mlx") and GGUF weights went to vLLM where plan and compare give them to llama.cpp."""
    mac = json.loads(run("serve", "llama-3.1-8b", "--gpu", "M2 Max 64GB", "--json"))
    # a bf16 HF checkpoint on a Mac: mlx-lm, as plan assumes (s35: llama.cpp needs it converted to GGUF)
    assert mac["engine"] == json.loads(run("plan", "llama-3.1-8b", "--gpu", "M2 Max 64GB", "--json"))["engine"] == "mlx"
    gguf = json.loads(run("serve", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q4_k_m", "--json"))
    planned = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4090", "--precision", "q4_k_m", "--json"))
    assert gguf["engine"] == planned["engine"] == "llama.cpp"
    assert json.loads(run("serve", "llama-3.1-8b", "--gpu", "L40S", "--json"))["engine"] == "vllm"


def test_compare_of_one_setup_fits_80_columns_and_says_the_gpu_count() -> None:
    """"Does a second GPU help llama.cpp decode?" tried as `compare ... --gpu 3090 --count 2`: the row label
    repeated the title ("3090 / q4_k_m / llama.cpp"), which squeezed every column to "prefi…", "fi…",
    "bandwid…" in 80 columns, and nothing said 2 GPUs."""
    from mlrig.cli import app

    res = CliRunner().invoke(app, ["compare", "llama-3.1-8b", "--precision", "q4_k_m", "--engine", "llama.cpp",
                                   "--gpu", "RTX 3090", "--count", "2"], env={"COLUMNS": "80"})
    assert res.exit_code == 0 and "…" not in res.stdout, res.stdout
    assert "2 GPUs" in res.stdout.splitlines()[0]


def test_step_up_says_why_it_was_chosen_truthfully() -> None:
    """The summary's step up read "for $6,338 more (+241%): ... the most added speed per added dollar within
    +50%" - the option is the cheapest faster one because none was within +50%."""
    import re

    out = " ".join(run("recommend", "--model", "llama-3.1-70b", "--precision", "q4_k_m", "--budget", "5000").split())
    m = re.search(r"step up: .*? \(\+(\d+)%\): [\d.]+× the speed, ([^•\n]*?)(?: •|$)", out)
    assert m is not None, out
    pct, why = int(m.group(1)), m.group(2)
    assert ("within +50%" in why) == (pct <= 50) or "none is within +50%" in why, (pct, why)


def test_cost_payback_beyond_the_horizon_is_not_never() -> None:
    """"Buy or rent at 60 h/month?": a cloud whose monthly bill exceeds the box's running cost is repaid, only
    after the 3-year horizon; the table said "never" there, beside "owning pays off > 51 h/month" at 60."""
    from mlrig.advisor.cost import payback_months  # noqa: F401 (the figure the cell shows)

    out = run("cost", "--buy", "RTX 4090", "--hours-per-month", "60", "--plan", "examples/advice/60h-month.toml")
    l40s = next(line for line in out.splitlines() if "RunPod L40S pod " in line)
    assert "> 36" in l40s and "never" not in l40s, l40s
    vast = next(line for line in out.splitlines() if "Vast.ai RTX 3090" in line)
    assert "never" in vast  # its bill is below the box's power and upkeep: no saving to repay with


def test_a_setup_vllm_refuses_to_start_does_not_fit() -> None:
    """`--max-model-len 8k` on a pool of 3,856 tokens: the answer read "✔ fits" and, further down, "vllm would
    refuse to start ... no speed is given". A setup its engine will not start does not fit (plan, sweep).
    (0.68 since vLLM's share is taken of the CUDA driver's total, 23.53 GiB: a pool of 3,264 tokens.)"""
    args = ("llama-3.1-8b", "--gpu", "RTX 4090", "--engine", "vllm", "--gpu-memory-utilization", "0.68",
            "--max-model-len", "8k")
    data = json.loads(run("plan", *args, "--json"))
    assert data["kv_cache_capacity_tokens"] < 8192 and data["fits"] is False and data["performance"] is None
    assert "✘ the engine would not start" in run("plan", *args)
    fine = json.loads(run("plan", *args[:-1], "2k", "--json"))
    assert fine["fits"] is True and fine["performance"] is not None


def test_the_8gb_rtx_4060_ti_is_its_own_card() -> None:
    """"Will Llama 3.1 8B at Q4_K_M run on my 8 GB 4060 Ti?": the catalog had only the 16 GB card, so the 8 GB one
    (same chip and bandwidth, half the memory, 160 W) could not be named. Bare "RTX 4060 Ti" stays the 16 GB card,
    as "RTX 5060 Ti" does."""
    data = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 4060 Ti 8GB", "-q", "q4_k_m", "--json"))
    assert data["memory"]["gpu_capacity_gib"] < 8.0 < json.loads(
        run("plan", "llama-3.1-8b", "--gpu", "RTX 4060 Ti", "-q", "q4_k_m", "--json"))["memory"]["gpu_capacity_gib"]


def test_a_lora_run_counts_no_weight_gradients_in_its_utilisation() -> None:
    """LoRA of Llama 3.1 8B on 2 x RTX 3090 showed "MFU 69 % (HFU 92 % with recompute)": the frozen base's weight
    gradients, which LoRA never computes, were counted. Same speed; the utilisation now counts 4N of linear work,
    so a full fine-tune at the same tokens/s would show 2N more per token."""
    lora = json.loads(run("plan", "llama-3.1-8b", "--gpu", "RTX 3090", "-n", "2", "--method", "lora", "--json"))
    perf = lora["performance"]
    assert perf["hfu"] < 0.8
    n = 8.03e9  # Llama 3.1 8B's parameters
    flops_per_token = perf["mfu"] * 2 * 71e12 / perf["train_tokens_per_s"]  # 71 TFLOPS bf16 per 3090
    assert 4 * n < flops_per_token < 5 * n
