"""A plan that gives only its context prices its speed at that context (issue 10 follow-up): the request
fills the context (`workload.lengths_filling`), as memory is priced there, and the result says which
prompt, output and KV length its speed figures assume."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mlrig.cli import app
from mlrig.planner import evaluate, limits, parse_plan
from mlrig.workload import WorkloadSpec, lengths_filling, request_lengths

H100 = {"gpu": "h100-sxm-80gb"}


def _plan(**workload: object) -> dict:
    return {"model": "llama-3.1-8b", "workload": {"engine": "vllm", **workload}, "hardware": H100}


def test_only_a_context_fills_it() -> None:
    """--context 32k alone: a 32,640-token prompt and 128 output tokens (32,640 + 128 = 32,768); decode at
    the mean KV length 32,640 + 64 = 32,704 (hand-checked); the figures are those of the same lengths given
    explicitly, and slower than the 512-token default prompt (the KV read grows 64x)."""
    w = WorkloadSpec(context_tokens=32768)
    assert (w.prompt_tokens, w.output_tokens, w.context) == (32640, 128, 32768)
    filled = evaluate(_plan(context_tokens=32768)).performance
    explicit = evaluate(_plan(context_tokens=32768, prompt_tokens=32640, output_tokens=128)).performance
    short = evaluate(_plan(context_tokens=32768, prompt_tokens=512, output_tokens=128)).performance
    assert filled is not None and explicit is not None and short is not None
    assert (filled.prompt_tokens, filled.output_tokens, filled.decode_context_tokens) == (32640, 128, 32704)
    assert filled.decode_tok_s == explicit.decode_tok_s and filled.ttft_ms == explicit.ttft_ms
    assert filled.decode_tok_s < 0.9 * short.decode_tok_s  # 8B, 32k of GQA KV: ~4 GB more read per token
    assert filled.ttft_ms > 20 * short.ttft_ms
    assert (short.prompt_tokens, short.decode_context_tokens) == (512, 576)


def test_given_lengths_win_and_short_contexts_follow_the_sweep() -> None:
    """A prompt given is kept (the 512 default stays a default only without a context); an output given
    leaves the rest of the context to the prompt; a short context takes a quarter of itself as output,
    the rule `mlrig sweep` rows use (docs/PLAN-FORMAT.md "Sweeps")."""
    assert (WorkloadSpec(context_tokens=32768, prompt_tokens=1000).prompt_tokens,
            WorkloadSpec(context_tokens=32768, prompt_tokens=1000).output_tokens) == (1000, 128)
    w = WorkloadSpec(context_tokens=8192, output_tokens=1000)
    assert (w.prompt_tokens, w.output_tokens) == (7192, 1000)
    assert lengths_filling(256) == (192, 64) and lengths_filling(1) == (1, 0)
    with pytest.raises(ValueError, match="longer than its context"):  # an output longer than the context: refused
        WorkloadSpec(context_tokens=100, output_tokens=200)
    assert (WorkloadSpec().prompt_tokens, WorkloadSpec().output_tokens) == (512, 128)
    train = WorkloadSpec(task="finetune", context_tokens=4096)  # training reads seq_len, not prompt lengths
    assert (train.prompt_tokens, train.follows_context) == (512, False)
    assert request_lengths({"context_tokens": 4096}) == (3968, 128) and request_lengths({"batch_size": 0}) == (512, 128)


def test_the_sweep_and_plan_agree_at_a_context() -> None:
    """`mlrig sweep` fills each context the same way, so its decode figure is plan's for that context."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.commands.sweep import sweep_rows

    rows = list(sweep_rows(["llama-3.1-8b"], [resolve_gpu("h100-sxm-80gb")], ["bf16"], ["vllm"], [16384], [1], [1],
                           "inference"))
    perf = evaluate(_plan(context_tokens=16384, precision="bf16")).performance
    assert perf is not None and perf.decode_tok_s is not None and perf.ttft_ms is not None
    assert rows[0]["decode_tok_s"] == float(f"{perf.decode_tok_s:.4g}")
    assert rows[0]["ttft_ms"] == float(f"{perf.ttft_ms:.4g}")


def test_a_shorter_context_fix_and_the_limit_fill_the_context_they_name() -> None:
    """The "context -> N" fix leaves the lengths to follow N (not a prompt longer than N), and the largest
    context is searched with the prompt filling each context tried (`WorkloadSpec.prompt_at`)."""
    from mlrig.fixes import make_it_fit
    from mlrig.planner import resolve_arch, resolve_hardware

    data = {"model": "llama-3.1-8b", "workload": {"engine": "transformers", "context_tokens": 131072},
            "hardware": {"gpu": "rtx-4090"}}
    plan = parse_plan(data)
    assert plan.workload.prompt_at(10_000) == 9872 and plan.workload.follows_context
    result = evaluate(plan)
    assert result.fits is False
    lims = limits(plan)
    fixes = make_it_fit(plan, resolve_arch(plan), resolve_hardware(plan), result, lims)
    ctx_fix = next(f for f in fixes if f.flags.startswith("--context"))
    n = int(ctx_fix.flags.split()[1].removesuffix("k")) * 1024
    again = evaluate({**data, "workload": {**data["workload"], "context_tokens": n}})
    assert again.memory is not None and again.memory.per_gpu_gib == ctx_fix.per_gpu_gib and again.fits
    assert lims["max_context_tokens"] is not None and n <= lims["max_context_tokens"]


def test_plan_says_which_lengths_its_speed_assumes() -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--engine", "vllm", "--context", "32k"],
                        env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "32,640-token prompt, 128 out; decode at ~32,704 tokens of context" in out.output
    assert "only the context given: the request fills its 32,768 tokens" in out.output
    given = runner.invoke(app, ["plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--engine", "vllm", "--context", "32k",
                                "--prompt", "512"], env={"COLUMNS": "200"})
    assert "512-token prompt, 128 out; decode at ~576 tokens" in given.output
    assert "only the context given" not in given.output
    js = runner.invoke(app, ["plan", "llama-3.1-8b", "--gpu", "H100 SXM", "--context", "8k", "--json"])
    perf = json.loads(js.output)["performance"]
    assert (perf["prompt_tokens"], perf["output_tokens"], perf["decode_context_tokens"]) == (8064, 128, 8128)


def test_mean_decode_context_is_the_prompt_and_half_the_output() -> None:
    """The one place the decode figures' mean context is worked out (serving, performance, planner, web)."""
    from mlrig.workload import WorkloadSpec

    assert WorkloadSpec(prompt_tokens=1000, output_tokens=101).mean_decode_context == 1050
    assert WorkloadSpec(prompt_tokens=0, output_tokens=1).mean_decode_context == 1  # at least one token


def test_a_default_output_shrinks_to_what_the_context_leaves() -> None:
    """`--context 8k --prompt 8100`: only the default 128-token output overflows, so it takes the 92 tokens left;
    a given output, or a prompt that fills the context, is still refused."""
    import pytest

    w = WorkloadSpec.model_validate({"task": "inference", "context_tokens": 8192, "prompt_tokens": 8100})
    assert (w.prompt_tokens, w.output_tokens) == (8100, 92)
    assert "output_tokens" not in w.model_fields_set
    for bad in ({"prompt_tokens": 8100, "output_tokens": 128}, {"prompt_tokens": 8192}):
        with pytest.raises(ValueError, match="longer than its context"):
            WorkloadSpec.model_validate({"task": "inference", "context_tokens": 8192, **bad})
