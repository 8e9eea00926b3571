"""vLLM V0's chunked-prefill default for long-context models, by release (engines.vllm_v0_chunks_by_default,
serving.vllm_v0_default_budget). Figures read in vLLM's sdists (vllm/engine/arg_utils.py, vllm/config.py)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from mlrig.catalog.gpus import resolve_gpu
from mlrig.cli import app
from mlrig.estimators import engines
from mlrig.estimators.serving import prefill_budget
from mlrig.planner import evaluate, parse_plan, resolve_arch

LONG = 131_072  # Llama 3.1's max_position_embeddings, vLLM's default max_model_len for it


@pytest.mark.parametrize(("version", "max_len", "kw", "on"), [
    ("0.5.2", LONG, {}, False),  # before the default (added in 0.5.3)
    ("0.5.3", LONG, {}, True),
    ("0.6.3", 32_768, {}, False),  # "max_model_len > 32768", not >=
    ("0.6.3", 32_769, {}, True),
    ("0.6.4", LONG, {"rocm": True}, True),  # AMD kept it up to 0.6.4 (device_type "cuda" on ROCm)
    ("0.6.5", LONG, {"rocm": True}, False),  # `not current_platform.is_rocm()` from 0.6.5
    ("0.7.0", LONG, {"mla": True}, True),
    ("0.7.3", LONG, {"mla": True}, False),  # VllmConfig forces chunked prefill off for MLA (0.7.1 - 0.7.3)
    ("0.6.3", LONG, {"sliding_window": True}, False),
    ("0.6.0", LONG, {"prefix_caching": True}, False),  # prefix caching excluded 0.5.3 - 0.6.0
    ("0.6.1", LONG, {"prefix_caching": True}, True),
])
def test_v0_turns_chunked_prefill_on_by_release(version: str, max_len: int, kw: dict[str, bool], on: bool) -> None:
    args = {"rocm": False, "mla": False, "sliding_window": False, "prefix_caching": False, **kw}
    assert engines.vllm_v0_chunks_by_default(version, max_len, **args) is on


@pytest.mark.parametrize(("version", "steps", "budget"), [
    ("0.5.3", None, 512), ("0.6.4", 1, 512),  # SchedulerConfig: 512 ("best balance between ITL and TTFT on A100")
    ("0.6.5", None, 2048), ("0.7.3", None, 2048),  # 2,048 from 0.6.5
    ("0.6.2", 8, None),  # 0.6.0 - 0.6.2 refuse chunked prefill with multi-step (ValueError)
    ("0.6.3", 8, 91_680),  # from 0.6.3 multi-step takes max(max_model_len, 2048): prompts not chunked
])
def test_v0_default_budget_by_release(version: str, steps: int | None, budget: int | None) -> None:
    assert engines.vllm_v0_chunked_budget(version, 91_680, steps) == budget


def _plan(gpu: str = "a100-sxm-80gb", model: str = "llama-3.1-8b", **w: object) -> dict[str, object]:
    wl: dict[str, object] = {"precision": "bf16", "engine": "vllm", "engine_version": "0.6.3", "load": "concurrency",
                             "batch_size": 16, "prompt_tokens": 2000, "output_tokens": 200}
    wl.update(w)
    return {"model": model, "workload": wl, "hardware": {"gpu": gpu}}


def _budget(plan: dict[str, object]) -> int | None:
    p = parse_plan(plan)
    arch = resolve_arch(p)
    return prefill_budget(p, "vllm", resolve_gpu(p.hardware.gpu), engines.vllm_v1(p.workload.engine_version),
                          arch.max_position_embeddings, arch)


def test_plan_budget_by_release_context_and_switch() -> None:
    assert _budget(_plan()) == 512  # 0.6.3, Llama 3.1's 131,072-token default max_model_len
    assert _budget(_plan(engine_version="0.6.6")) == 2048
    assert _budget(_plan(max_model_len=32_768)) is None  # the plan's max_model_len wins over the model's
    assert _budget(_plan(model="llama-3-8b")) is None  # 8,192-token model: whole prompts
    assert _budget(_plan(model="llama-3-8b", enable_chunked_prefill=True)) == 512
    assert _budget(_plan(enable_chunked_prefill=False)) is None
    assert _budget(_plan(enable_chunked_prefill=False, max_num_batched_tokens=4096)) is None
    assert _budget(_plan(max_num_batched_tokens=1024)) == 1024
    assert _budget(_plan(gpu="mi300x")) == 512
    assert _budget(_plan(gpu="mi300x", engine_version="0.6.5")) is None
    assert _budget(_plan(engine_version="0.5.2")) is None
    assert _budget(_plan(engine_version="0.8.0")) == 2048  # V1 (A100: 2,048), unchanged
    assert _budget(_plan(model="deepseek-v3", engine_version="0.7.3", gpu="h200-sxm-141gb")) is None  # MLA


def test_the_default_is_what_the_switch_on_gives_and_differs_from_off() -> None:
    default = evaluate(_plan()).performance
    on = evaluate(_plan(enable_chunked_prefill=True)).performance
    off = evaluate(_plan(enable_chunked_prefill=False)).performance
    assert default is not None and on is not None and off is not None
    assert default.ttft_ms == on.ttft_ms and default.tpot_ms == on.tpot_ms
    assert default.ttft_ms != off.ttft_ms and default.tpot_ms != off.tpot_ms
    assert "chunks prefills by default" in (default.explanation or "")


def test_a_static_batch_changes_by_its_further_iterations_only() -> None:
    """A static batch (benchmark_latency-style, the offline `LLM` class's one batch) goes through the same scheduler:
    chunked at 512 tokens its 4 x 2,000 prompt tokens take 16 iterations, each beyond the first paying a pass's fixed
    costs (performance.vllm_chunked_iterations_extra_s); the decode is not changed."""
    from mlrig.estimators.performance import prefill_pass
    from mlrig.planner import resolve_plan

    a = evaluate(_plan(load="static", batch_size=4)).performance
    b = evaluate(_plan(load="static", batch_size=4, enable_chunked_prefill=False)).performance
    assert a is not None and b is not None and a.ttft_ms is not None and b.ttft_ms is not None
    assert a.tpot_ms == b.tpot_ms and a.decode_tok_s == b.decode_tok_s
    r, _ = resolve_plan(_plan(load="static", batch_size=4))
    fixed_ms = (2 * prefill_pass(r, 1, 512).seconds - prefill_pass(r, 1, 1024).seconds) * 1e3
    assert a.ttft_ms - b.ttft_ms == pytest.approx(15 * fixed_ms, rel=1e-9)


def test_cli_flag_sets_the_plan_key() -> None:
    args = ["plan", "llama-3.1-8b", "--gpu", "a100-sxm-80gb", "--engine", "vllm", "--engine-version", "0.6.3",
            "--load", "concurrency", "--batch", "16", "--prompt", "2000", "--output", "200", "--json"]
    runner = CliRunner()
    default = json.loads(runner.invoke(app, args).stdout)["performance"]
    off = json.loads(runner.invoke(app, [*args, "--no-enable-chunked-prefill"]).stdout)["performance"]
    on = json.loads(runner.invoke(app, [*args, "--enable-chunked-prefill"]).stdout)["performance"]
    assert default["ttft_ms"] == on["ttft_ms"] != off["ttft_ms"]
