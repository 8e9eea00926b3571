"""A new user's hour (issue 10 §3, session 37): the rough edges found walking docs USER-STORIES with the CLI.
Each test runs the installed CLI (tests/cli_run.py) and fails on the behaviour it replaced."""

from __future__ import annotations

import json
from typing import Any

from cli_run import mlrig


def _json(*args: str) -> Any:
    res = mlrig(*args, "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# ---- 1. one default request for plan and serve -------------------------------------------------------------
# `plan` priced 512 prompt + 128 output tokens and `serve` 512 + 256, so the same setup's decode speed at one user
# differed between the two commands; `serve --context 8k` sized the KV cache for 8k but priced a 512-token prompt.

def test_serve_prices_the_request_plan_prices_by_default() -> None:
    serve = _json("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1")
    plan = _json("plan", "llama-3.1-8b", "--gpu", "L40S", "--engine", "vllm", "--load", "concurrency", "--batch", "1")
    assert (serve["prompt_tokens"], serve["output_tokens"]) == (512, 128)
    assert (plan["performance"]["prompt_tokens"], plan["performance"]["output_tokens"]) == (512, 128)
    assert serve["curve"][0]["tpot_ms"] == plan["performance"]["tpot_ms"]
    assert serve["curve"][0]["ttft_ms"] == plan["performance"]["ttft_ms"]


def test_serve_with_a_context_alone_fills_it_as_plan_does() -> None:
    serve = _json("serve", "llama-3.1-8b", "--gpu", "L40S", "--context", "8k", "--concurrency", "1")
    plan = _json("plan", "llama-3.1-8b", "--gpu", "L40S", "--engine", "vllm", "--context", "8k", "--load",
                 "concurrency", "--batch", "1")
    assert (serve["prompt_tokens"], serve["output_tokens"]) == (8192 - 128, 128)
    assert serve["curve"][0]["ttft_ms"] == plan["performance"]["ttft_ms"]
    short = _json("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1")
    assert serve["curve"][0]["ttft_ms"] > 5 * short["curve"][0]["ttft_ms"]  # an 8k prompt, not 512 tokens


def test_serve_headline_states_the_request() -> None:
    res = mlrig("serve", "llama-3.1-8b", "--gpu", "L40S", "--concurrency", "1")
    assert res.returncode == 0, res.stderr
    assert "512-token prompt, 128 out (640 tokens per sequence)" in " ".join(res.stdout.split())


# ---- 2. which AdamW a training plan prices, and saying otherwise ---------------------------------------------
# A custom training loop (no engine) was priced with foreach temporaries in memory but a fused AdamW's step
# time, and `--optimizer adamw-fused` under HF Trainer still got the foreach step time.

FT = ("plan", "mistral-7b", "--gpu", "A100 80GB", "-n", "8", "--task", "finetune", "--method", "full")


def test_a_custom_loop_is_priced_with_torch_adamw_default_and_says_so() -> None:
    default, fused = _json(*FT), _json(*FT, "--optimizer", "adamw-fused")
    note = next(n for n in default["memory"]["notes"] if n.startswith("optimizer adamw"))
    assert "foreach" in note and "--optimizer adamw-fused" in note
    # foreach: its temporaries at the step (memory) and ~42 against 30 B per parameter moved (speed)
    assert default["memory"]["per_gpu_gib"] > fused["memory"]["per_gpu_gib"]
    assert default["performance"]["train_tokens_per_s"] < fused["performance"]["train_tokens_per_s"]


def test_fused_adamw_named_under_hf_trainer_is_priced_fused() -> None:
    hf = _json(*FT, "--engine", "hf-trainer")
    fused = _json(*FT, "--engine", "hf-trainer", "--optimizer", "adamw-fused")
    assert fused["performance"]["train_tokens_per_s"] > hf["performance"]["train_tokens_per_s"]
    assert fused["memory"]["per_gpu_gib"] < hf["memory"]["per_gpu_gib"]


# ---- 3. a broken optional user file: one warning line, the answer from the built-in data ----------------------
# (tests/test_bad_input_cli.py::test_broken_user_file_is_a_warning holds the other files and faults)

def test_compare_goes_on_past_a_broken_user_price_file(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    (tmp_path / "mlrig").mkdir()
    (tmp_path / "mlrig" / "prices.toml").write_text("[gpu.rtx-4090\nprice_usd = 1600\n")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    res = subprocess.run([sys.executable, "-m", "mlrig.cli", "compare", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu",
                          "RTX 3090"], capture_output=True, text=True, env=env, timeout=240)
    assert res.returncode == 0, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlrig: warning: ignoring ") and "prices.toml" in lines[0]
    assert "not valid TOML" in lines[0] and "RTX 3090" in res.stdout and "RTX 4090" in res.stdout


# ---- 4. a fine-tune that names no method: what its GPUs run, said at once ------------------------------------

def test_finetune_on_a_24gb_card_defaults_to_lora_and_says_so() -> None:
    res = mlrig("plan", "mistral-7b", "--gpu", "RTX 3090", "--task", "finetune")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[1].startswith("note: method: lora (default for one 24 GiB card")  # under the headline
    assert "--method full for full fine-tuning" in " ".join(res.stdout.split())
    assert "✔ fits" in res.stdout
    d = _json("plan", "mistral-7b", "--gpu", "RTX 3090", "--task", "finetune")
    lora = _json("plan", "mistral-7b", "--gpu", "RTX 3090", "--task", "finetune", "--method", "lora")
    assert d["memory"] == lora["memory"] and d["performance"] == lora["performance"]
    assert d["training"]["method"] == lora["training"]["method"] == "lora"  # as evaluated, for scripts


def test_finetune_default_method_by_what_fits() -> None:
    # a 0.5B full fine-tune fits a 24 GB card: full stays; a 70B fits neither full nor LoRA: QLoRA (NF4 base)
    small = _json("plan", "qwen2.5-0.5b", "--gpu", "RTX 4090", "--task", "finetune")
    assert any(n.startswith("method: full (default") for n in small["notes"])
    big = _json("plan", "llama-3.1-70b", "--gpu", "RTX 4090", "--task", "finetune")
    assert big["base_weights_precision"] == "nf4" and any(n.startswith("method: qlora (default") for n in big["notes"])
    # 8 x A100 80GB: a full fine-tune of a 7B fits with ZeRO 3, what multi-GPU recipes run
    dc = _json("plan", "mistral-7b", "--gpu", "A100 80GB", "-n", "8", "--task", "finetune")
    assert any(n.startswith("method: full (default") for n in dc["notes"]) and dc["fits"]
    # knobs only a full fine-tune has (ZeRO, offload) keep it full; a named method is never changed or noted
    zero = _json("plan", "mistral-7b", "--gpu", "RTX 3090", "--task", "finetune", "--offload", "optimizer")
    named = _json("plan", "mistral-7b", "--gpu", "RTX 3090", "--task", "finetune", "--method", "full")
    assert not any(n.startswith("method: ") for n in zero["notes"] + named["notes"])
    assert zero["memory"]["gradients_gib"] > 10 and not named["fits"]  # every parameter trained: full


def test_finetune_default_method_does_not_move_with_batch_or_sequence() -> None:
    # one method per setup (mlrig eval prices plans differing only in batch / sequence together): the probe is
    # fixed at one 512-token sequence, so a long sequence keeps LoRA and says whether it fits
    long = _json("plan", "mistral-7b", "--gpu", "RTX 3090", "--task", "finetune", "--seq-len", "16k", "--batch", "8")
    assert any(n.startswith("method: lora (default") for n in long["notes"])


def test_compare_shows_each_rows_default_method() -> None:
    res = mlrig("compare", "mistral-7b", "--task", "finetune", "--gpu", "RTX 4090,8x A100 80GB")
    assert res.returncode == 0, res.stderr
    assert "RTX 4090 · lora" in res.stdout and "8x A100 80GB · full" in res.stdout
    assert "method: full where it fits, else LoRA, else QLoRA" in " ".join(res.stdout.split())


# ---- 5. compare takes comma lists, as sweep does --------------------------------------------------------------

def test_compare_reads_comma_lists() -> None:
    listed = _json("compare", "llama-3.1-8b", "--gpu", "RTX 4090,RTX 3090", "-q", "q4_k_m,q8_0")
    repeated = _json("compare", "llama-3.1-8b", "--gpu", "RTX 4090", "--gpu", "RTX 3090", "-q", "q4_k_m",
                     "-q", "q8_0")
    assert listed == repeated and len(listed) == 4
    methods = _json("compare", "mistral-7b", "--task", "finetune", "-m", "full,lora", "--gpu", "RTX 4090")
    assert [r["method"] for r in methods] == ["full", "lora"]


def test_serve_with_no_output_tokens_is_a_one_line_error() -> None:
    from cli_run import one_line_error

    line = one_line_error(mlrig("serve", "llama-3.1-8b", "--gpu", "L40S", "--output", "0"))
    assert "--output 1 or more" in line


def test_a_misspelt_optimizer_is_an_error_not_a_guess() -> None:
    from cli_run import one_line_error

    line = one_line_error(mlrig("plan", "llama-3.1-8b", "--task", "finetune", "--optimizer", "adamw-fusedd"))
    assert "'fusedd'" in line and "adamw-fused" in line
    hf = _json("plan", "llama-3.1-8b", "--gpu", "A100 80GB", "--task", "finetune", "--optimizer", "adamw_torch_fused")
    ours = _json("plan", "llama-3.1-8b", "--gpu", "A100 80GB", "--task", "finetune", "--optimizer", "adamw-fused")
    # Hugging Face's optim name reads as the same fused AdamW (the notes name each as given)
    assert hf["memory"]["per_gpu_gib"] == ours["memory"]["per_gpu_gib"]
    assert hf["performance"]["train_tokens_per_s"] == ours["performance"]["train_tokens_per_s"]


def test_adamw_note_reads_the_name_as_the_rule_does() -> None:
    """The note says the implementation only where the name does not; Hugging Face's underscore spellings are read
    as mlrig's hyphenated ones (an 'adamw_in_bwd' step is fused, and its note must not claim a framework default)."""
    from mlrig.estimators.memory import adamw_implementation, adamw_implementation_text

    for name in ("adamw_in_bwd", "adamw-in-bwd", "adamw_torch_fused", "paged_adamw_8bit", "adamw_foreach"):
        assert adamw_implementation(name, None) in ("fused", "foreach"), name
        assert adamw_implementation_text(name, None) == "", name
    assert "foreach implementation" in adamw_implementation_text("adamw", None)
    assert adamw_implementation_text("sgd", None) == ""
