"""Expert parallelism for inference (`hardware.expert_parallel`, `--ep`): whole experts per GPU, the busiest
GPU's experts in decode, and the dispatch / combine all-to-alls of data-parallel attention
(mlrig/estimators/expert_parallel.py)."""

from __future__ import annotations

import itertools
import math

import pytest

from mlrig import quant
from mlrig.catalog.models import resolve_model
from mlrig.estimators.expert_parallel import busiest_rank_experts, expert_parallel_cost, expert_weight_bytes_per_gpu
from mlrig.planner import evaluate, parse_plan, resolve_plan

H200 = "h200-sxm-141gb"


def _ds(**hw: object) -> dict:
    return {"model": "deepseek-v3", "workload": {"engine": "vllm", "precision": "fp8"},
            "hardware": {"gpu": H200, "count": 8, **hw}}


def test_mixtral_expert_bytes_by_hand() -> None:
    """Mixtral-8x7B: 8 experts x 32 layers x 3 x 4096 x 14336 = 45.1 B routed parameters, 90.19 GB in bf16;
    EP 2 puts 4 whole experts (45.10 GB) on each GPU, EP 8 one (11.27 GB), as TP's slices do when E divides."""
    arch = resolve_model("mixtral-8x7b")
    routed = quant.routed_expert_bytes(arch, "bf16")
    assert routed == pytest.approx(8 * 32 * 3 * 4096 * 14336 * 2, rel=1e-3)
    assert expert_weight_bytes_per_gpu(arch, routed, 2, 1, 2) == pytest.approx(4 * 32 * 3 * 4096 * 14336 * 2, rel=1e-3)
    assert expert_weight_bytes_per_gpu(arch, routed, 8, 1, 8) == pytest.approx(routed / 8)
    assert expert_weight_bytes_per_gpu(arch, routed, 8, 1, 4) == pytest.approx(routed / 8)  # 2 experts, TP 2 each


def test_uneven_experts_put_a_whole_one_more_on_the_busiest_gpu() -> None:
    """6 experts over 4 GPUs: 2 whole experts on the busiest (TP's slices: 1.5); the plan's weights grow by
    half an expert, hand-checked from the architecture."""
    model = {"hidden_size": 1024, "num_layers": 4, "num_heads": 8, "intermediate_size": 512, "vocab_size": 1000,
             "num_experts": 6, "experts_per_token": 2}
    base = {"model": model, "workload": {"engine": "vllm", "precision": "bf16"},
            "hardware": {"gpu": H200, "count": 4, "tensor_parallel": 4}}
    tp = evaluate(base).memory
    ep = evaluate({**base, "hardware": {**base["hardware"], "expert_parallel": 4}}).memory
    assert tp is not None and ep is not None
    half_expert = 0.5 * 4 * 3 * 1024 * 512 * 2  # layers x gated MLP (3 matrices) x bf16
    assert (ep.weights_gib - tp.weights_gib) * 2**30 == pytest.approx(half_expert, abs=2 * 2**20)  # 3-decimal GiB


@pytest.mark.parametrize("model", ["deepseek-v3", "mixtral-8x7b", "qwen3-30b-a3b"])
def test_more_expert_parallel_gpus_never_need_more_expert_memory(model: str) -> None:
    arch = resolve_model(model)
    routed = quant.routed_expert_bytes(arch, "bf16")
    for tp in (1, 2, 8):
        per = [expert_weight_bytes_per_gpu(arch, routed, tp, 1, ep) for ep in (2, 4, 8, 16, 32, 64)]
        assert all(a >= b for a, b in itertools.pairwise(per)), (model, tp, per)


def test_ep_inside_tp_keeps_memory_and_waits_for_the_busiest_gpu() -> None:
    """DeepSeek-V3 on 8 H200s: 256 experts split evenly, so EP 8 holds what TP 8 does; one token's 8 experts
    land ~3 on the busiest GPU (mean 1), so batch-1 decode is slower, and the gap closes at large batches
    (every GPU's experts all touched)."""
    tp8, ep8 = evaluate(_ds()), evaluate(_ds(expert_parallel=8))
    assert tp8.memory is not None and ep8.memory is not None
    assert ep8.memory.weights_gib == tp8.memory.weights_gib
    assert tp8.performance is not None and ep8.performance is not None
    assert ep8.performance.decode_tok_s < 0.85 * tp8.performance.decode_tok_s
    arch = resolve_model("deepseek-v3")
    one = float(busiest_rank_experts(arch, 1, 8))
    assert 2.5 < one < 3.5  # mean 1 + sd 0.98 x sqrt(2 ln 8) = 3.0
    assert float(busiest_rank_experts(arch, 4096, 8)) == pytest.approx(32.0, rel=1e-6)
    from mlrig.estimators.expert_parallel import experts_touched_fraction

    # 8 of 256 experts per token: one token touches 8/256; two touch 1 - (248/256)^2 (uniform routing)
    assert float(experts_touched_fraction(arch, 1)) == pytest.approx(8 / 256)
    assert float(experts_touched_fraction(arch, 2)) == pytest.approx(1 - (248 / 256) ** 2)


def test_dp_attention_all_to_all_by_hand() -> None:
    """--tp 1 --ep 8: each MoE layer sends a token's hidden state (7168 x 2 B) to its 8 experts' ranks and back,
    7/8 of it off the GPU: 58 MoE layers x (2 x 8 x 7168 x 2 x 7/8 B / link + 2 latencies) for one token; the
    dense weights are copied in each group, so more weights per GPU than TP 8."""
    r, _ = resolve_plan(_ds(tensor_parallel=1, expert_parallel=8))
    assert r.plan.hardware.tensor_parallel == 1 and r.link is not None
    from mlrig.estimators.performance import _decode_cost

    cost = _decode_cost(r, "vllm", 1, 640)
    _, a2a = expert_parallel_cost(r, cost, 1, 1)
    link = r.link
    per_layer = 2 * 8 * 7168 * 2 * 7 / 8 / (link.bandwidth_gb_s * 1e9) + 2 * link.latency_us * 1e-6
    assert r.arch.num_moe_layers == 58
    assert float(a2a) == pytest.approx(58 * per_layer)
    dp = evaluate(_ds(tensor_parallel=1, expert_parallel=8))
    tp8 = evaluate(_ds())
    assert dp.memory is not None and tp8.memory is not None and dp.memory.weights_gib > tp8.memory.weights_gib
    assert any("attention data-parallel over 8 groups" in n for n in dp.notes)


def test_expert_parallel_is_said_the_same_way_everywhere() -> None:
    """--ep (which lands in [training]), [hardware] expert_parallel and eval's JSON give one plan; a training
    plan's [hardware] expert_parallel goes to [training]."""
    a = parse_plan({**_ds(), "training": {"expert_parallel": 8}})
    b = parse_plan(_ds(expert_parallel=8))
    assert a.hardware.expert_parallel == b.hardware.expert_parallel == 8
    assert evaluate(a).model_dump() == evaluate(b).model_dump()
    t = parse_plan({"model": "mixtral-8x7b", "workload": {"task": "pretrain"},
                    "hardware": {"gpu": H200, "count": 8, "expert_parallel": 4}})
    assert t.training is not None and t.training.expert_parallel == 4 and t.hardware.expert_parallel == 1
    dense = evaluate({"model": "llama-3.1-8b", "workload": {"engine": "vllm"},
                      "hardware": {"gpu": H200, "count": 2, "expert_parallel": 2}})
    assert "expert_parallel ignored: the model has no routed experts" in dense.notes


@pytest.mark.parametrize(("args", "needle"), [
    (["-n", "4", "--ep", "3"], "expert_parallel 3 must divide the 4 GPU(s)"),
    (["-n", "2", "--ep", "2", "--engine", "llama.cpp"], "expert_parallel needs a serving engine"),
])
def test_bad_expert_parallel_is_one_line(args: list[str], needle: str) -> None:
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "mlrig.cli", "plan", "mixtral-8x7b", "--gpu", "H100 SXM", *args],
                         capture_output=True, text=True, timeout=120, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not out.stdout


def test_limits_and_fixes_keep_the_experts_split() -> None:
    """The fewest-GPUs search of an EP plan splits the experts across each count it tries (no refused layout)."""
    from mlrig.planner import limits

    lims = limits(_ds(expert_parallel=8))
    assert lims["min_gpus"] is not None and lims["min_gpus"] <= 8
    assert math.isfinite(float(lims["min_gpus"]))


def test_eval_groups_give_expert_parallel_plans_what_plan_gives() -> None:
    """`mlrig eval`'s array pass (plans of one shape over batches and contexts) equals each plan alone."""
    from mlrig.grid import evaluate_cases
    from mlrig.planner import evaluate_case

    cases = [{**_ds(tensor_parallel=tp, expert_parallel=8), "id": f"{tp}-{b}-{c}",
              "workload": {"engine": "vllm", "precision": "fp8", "batch_size": b, "context_tokens": c}}
             for tp in (1, 8) for b in (1, 16, 64) for c in (2048, 16384)]
    together = evaluate_cases(cases)
    for case, result in zip(cases, together, strict=True):
        assert result.model_dump() == evaluate_case(case).model_dump(), case["id"]
    assert together[0].performance is not None and together[0].performance.decode_tok_s
