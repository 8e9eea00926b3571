"""LMDeploy's PyTorch engine admits prompts only between blocks of decode iterations up to v0.11
(engines.lmdeploy_pytorch_decode_block, read in InternLM/lmdeploy's v0.2.3 to v0.12.3 sources): 15 iterations up
to v0.7.1, 16 from v0.7.2 to v0.11.x, every iteration from v0.12.0; TurboMind schedules every iteration.

Hand check: a Poisson arrival into a 15-iteration block of 27 ms iterations waits half the block,
0.5 x 15 x 27 = 202.5 ms, where an engine that schedules every iteration makes it wait half an iteration, 13.5 ms."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.engines import lmdeploy_pytorch_decode_block, lmdeploy_pytorch_max_prefill_tokens
from mlrig.estimators.resolved import ResolvedPlan, resolve
from mlrig.estimators.serving import iteration_wait_s, scheduler_block_steps, whole_prompt_pass_cap
from mlrig.planner import evaluate, parse_plan, resolve_arch


@pytest.mark.parametrize("engine,version,block", [
    ("lmdeploy", "0.2.3+pytorch", 15),   # v0.2.x: the engine loop's prefill counter (Engine.loop)
    ("lmdeploy", "0.5.0+pytorch", 15),   # loop_count = prefill_interval - 1
    ("lmdeploy", "0.7.1+pytorch", 15),
    ("lmdeploy", "0.7.2+pytorch", 16),   # num_loops = prefill_interval
    ("lmdeploy", "0.9.2+pytorch", 16),
    ("lmdeploy", "0.11+pytorch", 16),    # a series: its newest release, still blocks
    ("lmdeploy", "0.12.0+pytorch", 1),   # per-iteration scheduling (inputs_maker.do_prefill_default)
    ("lmdeploy", "0.12.3+pytorch", 1),
    ("lmdeploy-pytorch", None, 1),       # no version: the current release
    ("lmdeploy", "0.5.0", 1),            # TurboMind
    ("lmdeploy", None, 1),
    ("vllm", "0.5.0+pytorch", 1),
])
def test_decode_block_by_release(engine: str, version: str | None, block: int) -> None:
    assert lmdeploy_pytorch_decode_block(engine, version) == block


def _plan(version: str) -> dict[str, object]:
    return {"model": {"name": "meta-llama/Llama-2-13b-chat-hf"},
            "workload": {"task": "inference", "precision": "fp16", "engine": "lmdeploy", "engine_version": version,
                         "load": "rate", "request_rate": 4, "num_requests": 1000, "prompt_tokens": 242,
                         "output_tokens": 229},
            "hardware": {"gpu": "A100 SXM4 80GB", "count": 1}}


def _resolved(data: dict[str, object]) -> ResolvedPlan:
    p = parse_plan(data)
    return resolve(resolve_arch(p), p, resolve_gpu("A100 SXM4 80GB"))


def test_scheduler_block_and_arrival_wait() -> None:
    old = _resolved(_plan("0.5.0+pytorch"))
    new = _resolved(_plan("0.12.3+pytorch"))
    turbomind = _resolved(_plan("0.5.0"))
    assert scheduler_block_steps(old) == 15
    assert scheduler_block_steps(new) == 1
    assert scheduler_block_steps(turbomind) == 1
    assert iteration_wait_s(old, 0.027, others=10) == pytest.approx(0.2025)
    assert iteration_wait_s(new, 0.027, others=10) == pytest.approx(0.0135)
    assert iteration_wait_s(old, 0.027, others=0) == 0.0  # an idle engine starts at once


def test_rate_run_ttft_grows_by_about_half_a_block() -> None:
    """Llama-2-13B on an A100 at 4 req/s: the v0.5.0 PyTorch engine's median TTFT is the v0.12.3 engine's plus
    about half a block of 15 iterations (~0.5 x 15 x 24-27 ms, 180-200 ms), its TPOT within a fifth of it."""
    def perf(version: str):  # type: ignore[no-untyped-def]
        p = evaluate(_plan(version)).performance
        assert p is not None and p.ttft_ms is not None and p.tpot_ms is not None
        return p

    old, new = perf("0.5.0+pytorch"), perf("0.12.3+pytorch")
    assert 150.0 < old.ttft_ms - new.ttft_ms < 260.0
    assert old.tpot_ms == pytest.approx(new.tpot_ms, rel=0.2)


@pytest.mark.parametrize("version,tokens", [
    ("0.2.3+pytorch", 16384), ("0.2.4+pytorch", 8192), ("0.2.5+pytorch", 8192), ("0.2.6+pytorch", 4096),
    ("0.5.3+pytorch", 4096), ("0.6.0+pytorch", 8192), ("0.12.3+pytorch", 8192), (None, 8192)])
def test_prefill_pass_tokens_by_release(version: str | None, tokens: int) -> None:
    """PytorchEngineConfig.max_prefill_token_num at each tag; from v0.6.0 `lmdeploy serve` passes its 8,192."""
    assert lmdeploy_pytorch_max_prefill_tokens(version) == tokens


def test_prefill_pass_takes_prompts_up_to_the_release_default() -> None:
    """242-token prompts, a cap of 256: 16,384 // 242 = 67 per pass at v0.2.3, 4,096 // 242 = 16 at v0.5.3,
    8,192 // 242 = 33 at v0.12.3; a plan's max_num_batched_tokens overrides it."""
    def cap(version: str, budget: int | None = None) -> int:
        data = _plan(version)
        if budget is not None:
            data["workload"]["max_num_batched_tokens"] = budget  # type: ignore[index]
        return whole_prompt_pass_cap(parse_plan(data).workload, 242, 256)

    assert cap("0.2.3+pytorch") == 67
    assert cap("0.5.3+pytorch") == 16
    assert cap("0.12.3+pytorch") == 33
    assert cap("0.5.3+pytorch", 2048) == 8
