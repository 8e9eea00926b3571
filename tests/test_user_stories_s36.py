"""A new user's hour (issue 10 §3), docs USER-STORIES walked again: a machine written as people write it
('2x RTX 3090') was refused by `plan`, `fit` and `serve` although `compare` and `recommend --have` read it; one
GPU compared over two interconnects ("does NVLink matter?") was an error."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from cli_run import mlrig, one_line_error

# ---- 1. "Can I run Llama 3.1 70B on two 3090s?": --gpu '2x RTX 3090' is two RTX 3090s, as compare reads it

def test_plan_reads_a_count_in_the_gpu_name_as_the_same_plan_as_n() -> None:
    args = ("meta-llama/Llama-3.1-70B-Instruct", "-q", "q4_k_m", "-c", "8k", "--json")
    written = mlrig("plan", *args, "--gpu", "2x RTX 3090")
    assert written.returncode == 0, written.stderr
    flagged = mlrig("plan", *args, "--gpu", "RTX 3090", "-n", "2")
    same = json.loads(written.stdout)
    assert same == json.loads(flagged.stdout)
    assert same["fits"] and same["memory"]["per_gpu_gib"] < 24  # 70B Q4_K_M over two cards, not one


@pytest.mark.parametrize("cmd", [("plan",), ("fit",), ("serve",)])
def test_commands_taking_one_gpu_accept_a_counted_name(cmd: tuple[str, ...]) -> None:
    res = mlrig(*cmd, "llama-3.1-8b", "--gpu", "2x RTX 3090")
    assert res.returncode == 0, res.stderr
    assert "2 × " in res.stdout or "2 x " in res.stdout, res.stdout[:300]


def test_a_counted_name_with_a_different_count_is_one_line_naming_both() -> None:
    line = one_line_error(mlrig("plan", "llama-3.1-8b", "--gpu", "2x RTX 3090", "-n", "4"))
    assert "holds a count of 2 and --count says 4" in line and "--gpu 'RTX 3090' -n 4" in line
    same = mlrig("plan", "llama-3.1-8b", "--gpu", "2x RTX 3090", "-n", "2", "--json")  # agreeing: fine
    assert same.returncode == 0 and json.loads(same.stdout)["fits"]


def test_a_count_with_no_gpu_after_it_is_refused_not_matched_to_a_cpu() -> None:
    """'--gpu 2x' (the name forgotten) matched the CPU entry 'cpu-ddr5-2ch' by its '2' token and planned on it."""
    for typed in ("2x", "4 × ", "8*"):
        line = one_line_error(mlrig("plan", "llama-3.1-8b", "--gpu", typed))
        assert "a count needs its GPU" in line and "RTX 3090" in line, line


def test_plan_from_fields_takes_the_count_apart_and_a_plan_file_is_left_as_written() -> None:
    from mlrig.planner import plan_from_fields

    assert plan_from_fields("llama-3.1-8b", gpu="8x A100 80GB")["hardware"] == {"gpu": "A100 80GB", "count": 8}
    assert plan_from_fields("llama-3.1-8b", gpu="RTX 3090")["hardware"] == {"gpu": "RTX 3090"}
    # a bad count keeps resolve_gpu's own message ('0 is no GPU count'), and a bad GPU its suggestions
    assert plan_from_fields("m", gpu="0x RTX 4090")["hardware"] == {"gpu": "0x RTX 4090"}
    assert "did you mean: NVIDIA GeForce RTX 4090" in one_line_error(mlrig("plan", "llama-3.1-8b", "--gpu",
                                                                           "2x RTX 4099"))


# ---- 2. "Does NVLink matter for my training?": one GPU, two interconnects, one row each

def test_compare_one_gpu_over_several_interconnects_is_a_row_each() -> None:
    from mlrig.commands.compare import compare_rows

    rows = compare_rows("mistral-7b", ["2x RTX 3090"], task="finetune", method="lora",
                        interconnect=["nvlink", "pcie4"])
    assert [r["variant"] for r in rows] == ["nvlink", "pcie4"]
    assert [r["interconnect"] for r in rows] == ["nvlink", "pcie4"]
    res = mlrig("compare", "mistral-7b", "--task", "finetune", "-m", "lora", "--gpu", "2x RTX 3090",
                "--interconnect", "nvlink", "--interconnect", "pcie4")
    assert res.returncode == 0, res.stderr
    assert " nvlink " in res.stdout and " pcie4 " in res.stdout
    # several GPUs still pair one link each, and a count that matches neither rule is still the error
    bad = one_line_error(mlrig("compare", "mistral-7b", "--gpu", "RTX 3090", "--gpu", "RTX 4090", "--gpu", "L40S",
                               "--interconnect", "nvlink", "--interconnect", "pcie4"))
    assert "2 --interconnect for 3 --gpu" in bad and "any number for one --gpu" in bad


# ---- 3. "$2,000 for 30B-class models: a 3090, a 4090 or a Mac?": an uncertain option's cost is not read as a price

def test_recommend_uncertain_line_names_the_up_front_price_beside_the_total() -> None:
    """The total over the horizon nets resale, so it sits below the price: 'mac-mini-m4-pro-64gb ($1,297)' read as
    a $1,297 Mac where the price book says $1,999. The line now names both."""
    res = mlrig("recommend", "Qwen/Qwen2.5-32B-Instruct", "--budget", "2000", "--local-only", "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    lines = [u for u in out["uncertainty"] if "would come first" in u]
    assert lines, out["uncertainty"]
    by_name = {o["name"]: o for o in out["options"]}
    for line in lines:
        o = by_name[line.split()[1]]
        assert f"(${o['total_cost_usd']:,.0f} over the horizon, ${o['upfront_usd']:,.0f} up front)" in line, line


# ---- 4. "We fine-tune twice a week and serve a 70B: buy or rent?": the two cost lines no longer disagree silently

def test_buy_beats_rent_only_by_resale_says_so_beside_the_payback_line() -> None:
    """Buying came out cheaper over 3 years while the next line said it takes 7.6 years to pay back: the first nets
    the resale of used A100s (12 %/year decline, an estimate), the second ignores it. The first now says so."""
    res = mlrig("recommend", "--model", "llama-3.1-8b", "--task", "finetune", "--method", "lora", "--runs-per-week",
                "2", "--hours-per-run", "4", "--model", "meta-llama/Llama-3.1-70B-Instruct", "--hours-per-day", "8",
                "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    best_buy = next(s for s in out["summary"] if s.startswith("best buy"))
    payback = next(s for s in out["summary"] if s.startswith("payback"))
    assert "buying is cheaper" in best_buy and "longer than the 3-year horizon" in payback  # the scenario
    m = re.search(r"only by reselling it for ~\$([\d,]+) after 3 years", best_buy)
    assert m is not None, best_buy
    name = best_buy.split("best buy ")[1].split(" $")[0]
    buy = next(o for o in out["options"] if o["name"] == name)
    resale = float(m.group(1).replace(",", ""))
    assert 0 < resale < buy["upfront_usd"]
    by_hand = buy["upfront_usd"] + buy["running_usd_per_month"] * 36 - buy["total_cost_usd"]
    assert abs(resale - by_hand) <= 1


# ---- 5. "Two 3090s on a 1000 W PSU, 64 GB RAM": --psu 1000 --ram 64 and --gpu '2x RTX 3090' as typed

def test_build_check_reads_psu_and_ram_as_typed_and_a_counted_gpu() -> None:
    spelled = mlrig("build", "check", "--gpu", "RTX 3090", "-n", "2", "--psu-w", "1000", "--ram-gib", "64", "--json")
    typed = mlrig("build", "check", "--gpu", "2x NVIDIA GeForce RTX 3090", "--psu", "1000", "--ram", "64", "--json")
    assert typed.returncode == spelled.returncode == 1, typed.stderr  # the 1000 W ATX 2.x unit trips: an error
    a, b = json.loads(spelled.stdout), json.loads(typed.stdout)
    assert b["gpus"] == a["gpus"] == ["2× rtx-3090"] and b["psu_w"] == 1000
    assert [f["check"] for f in b["findings"]] == [f["check"] for f in a["findings"]]
    assert "--psu-w given 2 times" in one_line_error(mlrig("build", "check", "--gpu", "RTX 3090", "--psu", "1000",
                                                           "--psu-w", "850", "--ram", "64"))


# ---- 6. "a table they can paste into an issue": plan --markdown keeps the other engines' line the terminal shows

def test_plan_markdown_shows_the_other_engines_as_the_terminal_does() -> None:
    args = ("plan", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "RTX 4090 24GB")
    md = mlrig(*args, "--markdown")
    assert md.returncode == 0, md.stderr
    others = json.loads(mlrig(*args, "--json").stdout)["performance"]["other_engines"]
    assert "llama.cpp" in others  # the default is vllm: llama.cpp is one of the others
    line = next(x for x in md.stdout.splitlines() if x.startswith("Other engines (decode / prefill tok/s): "))
    for name, figs in others.items():
        assert f"{name} {figs['decode_tok_s']:,.1f} / " in line, line


# ---- 7. "How many users at >= 20 tok/s each?": serve's per-user speed says it counts TTFT, beside plan's decode

def test_serve_names_the_decode_speed_plan_shows_beside_its_per_request_speed() -> None:
    """70B Q4_K_M on 2x RTX 3090: `plan` says decode 19.0 tok/s, `serve` said 'a single user gets 17.8 tok/s'
    (256 output tokens over TTFT + 256 TPOTs). The same figure in two commands: serve now names both."""
    model = "meta-llama/Llama-3.1-70B-Instruct"
    plan = json.loads(mlrig("plan", model, "--gpu", "2x RTX 3090", "-q", "q4_k_m", "--json").stdout)
    decode = plan["performance"]["decode_tok_s"]
    res = mlrig("serve", model, "--gpu", "2x RTX 3090", "-q", "q4_k_m")
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    m = re.search(r"a single user gets ([\d.]+) tok/s over a request, TTFT included; ([\d.]+) while decoding", text)
    assert m is not None, text
    assert float(m.group(1)) < float(m.group(2))
    assert abs(float(m.group(2)) - decode) <= 0.1 + 0.01 * decode
    assert "tok/s/user: output tokens over the whole request (TTFT included)" in text


# ---- 8. flags other tools spell differently: the error names mlrig's spelling, not click's nearest strings

@pytest.mark.parametrize(("args", "spelled"), [
    (("plan", "mistral-7b", "--task", "finetune", "--lora"), "--method lora"),  # click offered --load, --lora-rank
    (("plan", "mistral-7b", "--task", "finetune", "--qlora"), "--method qlora"),
    (("plan", "mistral-7b", "--task", "finetune", "--lora-r", "16"), "--lora-rank N"),
    (("plan", "mistral-7b", "--batch-size", "4"), "--batch N"),
    (("plan", "mistral-7b", "--ctx-size", "8k"), "--context N"),  # click offered nothing
    (("plan", "mistral-7b", "--tensor-parallel-size", "2"), "--tp N"),  # vLLM's spelling; click offered nothing
    (("plan", "mistral-7b", "--num-gpus", "2"), "-n N (--count)"),
    (("compare", "mistral-7b", "--dtype", "bf16"), "--precision X"),
    (("plan", "mistral-7b", "--task", "finetune", "--deepspeed", "3"), "--zero 3"),
    (("plan", "mistral-7b", "--task", "finetune", "--8bit-adam"), "--optimizer adamw-8bit"),
])
def test_a_flag_other_tools_spell_names_mlrigs_spelling(args: tuple[str, ...], spelled: str) -> None:
    line = one_line_error(mlrig(*args))
    assert f"No such option: {args[-1] if args[-1].startswith('--') else args[-2]}; mlrig spells it {spelled}" in line
    assert f"`mlrig {args[0]} --help`" in line


def test_a_foreign_flag_the_command_has_no_counterpart_for_keeps_clicks_words() -> None:
    line = one_line_error(mlrig("build", "check", "--lora"))  # build check has no --method: no false lead
    assert "No such option: --lora" in line and "--method" not in line


def test_every_foreign_flag_points_at_an_option_plan_has() -> None:
    import typer

    from mlrig.cli import FOREIGN_FLAGS, build_app

    group: Any = typer.main.get_command(build_app("plan"))
    opts = {o for p in group.commands["plan"].params for o in p.opts}
    assert {needs for needs, _ in FOREIGN_FLAGS.values()} <= opts
    assert not set(FOREIGN_FLAGS) & opts  # none shadows a real option


# ---- 9. "Full fine-tune of a 3B on 24 GB: ... checkpointing?": the default that moves memory and speed is said

def test_training_says_checkpointing_is_assumed_when_not_given() -> None:
    from mlrig.planner import evaluate

    base = {"model": "llama-3.2-3b", "hardware": {"gpu": "RTX 3090"},
            "workload": {"task": "finetune"}, "training": {"method": "full"}}
    said = [n for n in evaluate(base).notes if n.startswith("no --checkpointing given")]
    assert len(said) == 1 and "--no-checkpointing" in said[0]
    for given in ({"gradient_checkpointing": True}, {"gradient_checkpointing": False},
                  {"activation_checkpointing": "selective"}):
        plan = {**base, "training": {"method": "full", **given}}
        assert not any(n.startswith("no --checkpointing given") for n in evaluate(plan).notes), given
    inference = {"model": "llama-3.2-3b", "hardware": {"gpu": "RTX 3090"}}
    assert not any("checkpointing" in n for n in evaluate(inference).notes)
    # the note states what the number priced: HFU above MFU (the recomputed forward) by default, equal without
    on, off = (evaluate({**base, "training": {"method": "full", "gradient_checkpointing": g}}).performance
               for g in (True, False))
    default = evaluate(base).performance
    assert on is not None and off is not None and default is not None
    assert default.hfu == on.hfu and on.hfu is not None and on.mfu is not None and on.hfu > on.mfu
    assert off.hfu == off.mfu


# ---- 10. "With QLoRA? Full?": compare's caption gives the range of the rows' bands, not the widest as everyone's

def test_band_caption_gives_the_range_when_rows_differ() -> None:
    from mlrig.commands._common import band_caption

    val = {"train_tokens_per_s": {"validated": True, "runs": 30, "p90_error": 0.29}}
    mixed = band_caption([({"train_tokens_per_s": 0.14}, val), ({"train_tokens_per_s": 0.29}, val)]) or ""
    assert "training ±14% to ±29% by row (widest: p90)" in mixed, mixed
    same = band_caption([({"train_tokens_per_s": 0.29}, val), ({"train_tokens_per_s": 0.29}, val)]) or ""
    assert "training ±29% (p90)" in same and "by row" not in same
    res = mlrig("compare", "mistralai/Mistral-7B-v0.1", "--task", "finetune", "-m", "lora", "-m", "qlora", "-c", "4k",
                "--json")
    bands = sorted(r["result"]["performance"]["error_band"]["train_tokens_per_s"] for r in json.loads(res.stdout))
    shown = " ".join(mlrig("compare", "mistralai/Mistral-7B-v0.1", "--task", "finetune", "-m", "lora", "-m", "qlora",
                           "-c", "4k").stdout.split())
    if bands[0] != bands[-1]:  # LoRA's and QLoRA's scopes differ (14 % / 29 % when written)
        assert f"±{bands[0]:.0%} to ±{bands[-1]:.0%} by row" in shown, shown


# ---- 11. `mlrig cost`: its own help, not recommend's; the GPU to buy as people write a machine

def test_cost_unknown_flag_points_to_cost_and_reads_a_counted_buy() -> None:
    line = one_line_error(mlrig("cost", "--gpu", "2x RTX 3090"))
    assert "`mlrig cost` takes the GPU to buy as --buy NAME" in line and "recommend" not in line
    assert "see `mlrig cost --help`" in one_line_error(mlrig("cost", "--buy", "RTX 3090", "--foo", "1"))
    assert "see `mlrig recommend --help`" in one_line_error(mlrig("recommend", "--foo", "1"))
    counted = mlrig("cost", "--buy", "2x RTX 3090", "--hours-per-month", "100", "--json")
    flagged = mlrig("cost", "--buy", "RTX 3090", "-n", "2", "--hours-per-month", "100", "--json")
    assert counted.returncode == 0, counted.stderr
    assert json.loads(counted.stdout) == json.loads(flagged.stdout)
    line = one_line_error(mlrig("cost", "--buy", "2x RTX 3090", "-n", "3", "--hours-per-month", "100"))
    assert "holds a count of 2 and --count says 3" in line
