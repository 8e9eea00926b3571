"""The caching-allocator model, the recipe and the layer plan of `mlrig trace` (no torch needed)."""

from __future__ import annotations

import pytest

from mlrig.errors import MlrigError
from mlrig.trace.allocator import CachingAllocator, round_size, segment_size
from mlrig.trace.api import layer_plan
from mlrig.trace.recipe import recipe_from_plan
from mlrig.workload import Plan

MiB = 2**20


def test_round_and_segment_sizes_follow_the_cuda_allocator():
    assert round_size(1) == 512 and round_size(512) == 512 and round_size(513) == 1024
    assert segment_size(512) == 2 * MiB  # small pool: 2 MiB segments
    assert segment_size(MiB) == 2 * MiB
    assert segment_size(MiB + 512) == 20 * MiB  # large request under 10 MiB: a 20 MiB segment
    assert segment_size(12 * MiB + 512) == 14 * MiB  # 10 MiB and up: rounded to 2 MiB


def test_split_reuse_and_merge_by_hand():
    a = CachingAllocator()
    assert a.malloc(1, 3 * MiB) == 3 * MiB  # 20 MiB segment split: 3 MiB used, 17 MiB cached
    assert a.stats.reserved == 20 * MiB and a.stats.allocated == 3 * MiB
    # best fit: the 17 MiB remainder; 1 MiB would be left, not more than 1 MiB, so no split: counts 17 MiB
    assert a.malloc(2, 16 * MiB) == 17 * MiB
    assert a.stats.reserved == 20 * MiB and a.stats.allocated == 20 * MiB
    a.free(1)
    a.free(2)  # merges with its free neighbours into the whole segment again
    assert a.stats.allocated == 0 and a.stats.reserved == 20 * MiB
    assert a.malloc(3, 20 * MiB) == 20 * MiB and a.stats.reserved == 20 * MiB  # reused, no new segment
    assert a.stats.peak_allocated == 20 * MiB


def test_unsplit_large_block_counts_whole():
    a = CachingAllocator()
    a.malloc(1, 19 * MiB + 512)  # 20 MiB segment; the 0.5 MiB left is not split off (<= 1 MiB)
    assert a.stats.allocated == 20 * MiB
    assert a.stats.requested == 19 * MiB + 512


def test_small_requests_share_a_2mib_segment():
    a = CachingAllocator()
    for h in range(4):
        a.malloc(h, 1000)  # 1024 bytes each
    assert a.stats.reserved == 2 * MiB and a.stats.allocated == 4 * 1024 and a.stats.segments == 1


def _plan(**workload: object) -> Plan:
    training = workload.pop("training", None)
    data: dict[str, object] = {"model": "llama-3.2-1b", "workload": workload}
    if training is not None:
        data["training"] = training
    return Plan.model_validate(data)


def test_recipe_maps_the_optimizer_to_a_program():
    amp = recipe_from_plan(_plan(task="finetune"))
    assert (amp.weights_dtype, amp.autocast, amp.optimizer_impl) == ("fp32", "bf16", "fused")
    pure = recipe_from_plan(_plan(task="finetune", training={"optimizer": "adamw-bf16"}), optimizer_impl="foreach")
    assert (pure.weights_dtype, pure.autocast, pure.optimizer_impl) == ("bf16", None, "foreach")
    lora = recipe_from_plan(_plan(task="finetune", training={"method": "lora", "lora_targets": ["q", "v"]}))
    assert (lora.weights_dtype, lora.autocast, lora.lora_targets) == ("bf16", "bf16", ("q", "v"))
    inf = recipe_from_plan(_plan(task="inference", prompt_tokens=100, output_tokens=20))
    assert (inf.task, inf.seq_len, inf.context) == ("inference", 100, 120)


@pytest.mark.parametrize("training", [{"optimizer": "adamw-8bit"}, {"zero_stage": 2}, {"offload": "optimizer"}])
def test_recipe_rejects_what_cannot_be_traced(training):
    with pytest.raises(MlrigError):
        recipe_from_plan(_plan(task="finetune", training=training))


def test_layer_plan_keeps_whole_periods():
    assert layer_plan([""] * 32, 0, 32) == [2, 4]
    gemma = (["sliding"] * 5 + ["full"]) * 5
    assert layer_plan(gemma, 0, 30) == [6, 12]
    assert layer_plan(["dense"] * 3 + ["moe"] * 58, 3, 61) == [5, 7]
    assert layer_plan([""] * 4, 0, 4) == [4]  # too short to extend: traced whole


def test_help_and_plan_do_not_import_torch():
    import subprocess
    import sys

    code = ("import sys\nfrom mlrig.cli import build_app\nfrom typer.testing import CliRunner\n"
            "r = CliRunner().invoke(build_app('plan'), ['plan', 'llama-3.2-1b', '--json', '--no-limits'])\n"
            "assert r.exit_code == 0, r.output\nCliRunner().invoke(build_app(None), ['--help'])\n"
            "print(sorted(m for m in ('torch', 'transformers', 'peft') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_extra_is_one_line_naming_the_install(monkeypatch):
    import importlib.util

    from mlrig.trace import api

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(MlrigError, match=r"pip install 'mlrig\[trace\]'"):
        api.require_torch()
