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
    """Llama-2-13B on an A100 at 1 req/s: the v0.7.3 PyTorch engine (blocks of 16, CUDA graphs, no per-sequence host
    time) has the v0.12.3 engine's TPOT and a median TTFT larger by about half a block, 0.5 x 16 x ~18 ms = ~144 ms."""
    def perf(version: str):  # type: ignore[no-untyped-def]
        data = _plan(version)
        data["workload"]["request_rate"] = 1  # type: ignore[index]
        p = evaluate(data).performance
        assert p is not None and p.ttft_ms is not None and p.tpot_ms is not None
        return p

    old, new = perf("0.7.3+pytorch"), perf("0.12.3+pytorch")
    assert old.tpot_ms == pytest.approx(new.tpot_ms, rel=0.05)
    assert old.ttft_ms - new.ttft_ms == pytest.approx(0.5 * 16 * new.tpot_ms, rel=0.2)


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


def test_old_pytorch_engine_pays_a_host_time_per_sequence_per_step() -> None:
    """Before v0.6.0 the PyTorch engine handles every running sequence in Python each step
    (efficiency.LMDEPLOY_PYTORCH_OLD_SEQ_STEP_S, 0.8 ms); TurboMind and the refactored engine (v0.6.0 on) pay none."""
    from mlrig.estimators import efficiency as eff
    from mlrig.estimators.performance import host_seq_step_s

    assert host_seq_step_s("lmdeploy", "0.2.3+pytorch") == pytest.approx(eff.LMDEPLOY_PYTORCH_OLD_SEQ_STEP_S)
    assert host_seq_step_s("lmdeploy", "0.5.3+pytorch") == pytest.approx(0.8e-3)
    assert host_seq_step_s("lmdeploy", "0.6.0+pytorch") == 0.0
    assert host_seq_step_s("lmdeploy", "0.12.3+pytorch") == 0.0
    assert host_seq_step_s("lmdeploy", "0.2.3") == 0.0  # TurboMind


def test_published_pytorch_engine_throughput_at_128_sequences() -> None:
    """InternLM/lmdeploy issue #1165 (v0.2.3, Llama-2-13B-chat fp16 on an A100-SXM4-80GB, ShareGPT, 128 users,
    profile_throughput): 705.3 output tok/s, where TurboMind measured 1,627 on the same setup. At 128 sequences
    0.8 ms each add ~102 ms to a ~76 ms GPU iteration: 1,687 x 76 / 178 = ~720 tok/s, within 5 % of it."""
    from mlrig.validation.runner import load_rows

    rows = {r.id: r for r in load_rows()}
    row = rows["LMDI1165-0003"]
    p = evaluate(row.plan).performance
    assert p is not None and p.throughput_tok_s is not None
    assert p.throughput_tok_s == pytest.approx(705.288, rel=0.05)
    turbomind = rows["LMDI1165-0001"]
    q = evaluate(turbomind.plan).performance
    assert q is not None and q.throughput_tok_s is not None
    assert q.throughput_tok_s > 2.0 * p.throughput_tok_s
