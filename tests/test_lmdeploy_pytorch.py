"""LMDeploy's PyTorch engine: expressible as "+pytorch" / `lmdeploy-pytorch`, its own validation scope, and
its scheduler's prefill passes of their own (engines.lmdeploy_pytorch_engine)."""

from __future__ import annotations

import pytest

from mlrig.catalog.gpus import resolve_gpu
from mlrig.estimators.engines import lmdeploy_pytorch_engine
from mlrig.estimators.serving import prefill_budget, whole_prompt_pass_cap
from mlrig.planner import evaluate
from mlrig.validation.scopes import PRICED_AS, plan_scope
from mlrig.workload import Plan


def _plan(engine: str, version: str | None = None) -> Plan:
    w: dict[str, object] = {"task": "inference", "precision": "bf16", "engine": engine, "load": "concurrency",
                            "batch_size": 64, "prompt_tokens": 221, "output_tokens": 204}
    if version is not None:
        w["engine_version"] = version
    return Plan.model_validate({"model": "Qwen/Qwen3-30B-A3B", "workload": w,
                                "hardware": {"gpu": "H200", "count": 1}})


@pytest.mark.parametrize("engine,version,expected", [
    ("lmdeploy", "0.12.3+pytorch", True), ("lmdeploy", "0.12.3+torch", True), ("lmdeploy-pytorch", None, True),
    ("LMDeploy PyTorch", "0.12.3", True), ("lmdeploy_pt", None, True), ("lmdeploy", "0.12.3", False),
    ("lmdeploy", None, False), ("turbomind", "0.12.3", False), ("lmdeploy", "0.12.3+turbomind", False),
    ("trt-llm", "0.20.0+pytorch", False), ("vllm", "0.10.1+pytorch", False)])
def test_backend_is_named_by_the_version_label_or_the_engine_name(engine: str, version: str | None,
                                                                  expected: bool) -> None:
    assert lmdeploy_pytorch_engine(engine, version) is expected


def test_pytorch_engine_is_its_own_scope_priced_as_lmdeploy() -> None:
    h200 = resolve_gpu("H200")
    assert plan_scope(_plan("lmdeploy", "0.12.3+pytorch"), h200) == ("lmdeploy-pytorch", "hbm")
    assert plan_scope(_plan("lmdeploy-pytorch"), h200) == ("lmdeploy-pytorch", "hbm")
    assert plan_scope(_plan("lmdeploy", "0.12.3"), h200) == ("lmdeploy", "hbm")  # TurboMind
    assert PRICED_AS["lmdeploy-pytorch"] == "lmdeploy"
    res = evaluate(_plan("lmdeploy", "0.12.3+pytorch"))
    tpot = res.validation["tpot_ms"]
    assert "lmdeploy-pytorch" in tpot.scope and not tpot.validated  # TurboMind's runs do not vouch for it


def test_both_spellings_give_the_same_answer() -> None:
    named = evaluate(_plan("lmdeploy-pytorch", "0.12.3"))
    labelled = evaluate(_plan("lmdeploy", "0.12.3+pytorch"))
    turbomind = evaluate(_plan("lmdeploy", "0.12.3"))
    assert named.engine == "lmdeploy"
    assert named.performance is not None and labelled.performance is not None and turbomind.performance is not None
    assert named.performance.ttft_ms == labelled.performance.ttft_ms
    assert named.performance.ttft_ms != turbomind.performance.ttft_ms  # prefill passes of their own
    unversioned = evaluate(_plan("lmdeploy-pytorch"))
    assert any("PyTorch engine" in n for n in unversioned.notes)
    assert not any("no engine given" in n for n in unversioned.notes)


def test_pytorch_engine_prefills_whole_prompts_in_passes_up_to_8192_tokens() -> None:
    """do_prefill_default / paging/scheduler.py (v0.12.3): no unified iteration budget as TurboMind's; one prefill
    pass takes waiting prompts up to max_prefill_token_num = 8,192 tokens."""
    h200 = resolve_gpu("H200")
    torch_plan, turbomind_plan = _plan("lmdeploy", "0.12.3+pytorch"), _plan("lmdeploy", "0.12.3")
    assert prefill_budget(torch_plan, "lmdeploy", h200, True, 40960) is None
    assert prefill_budget(turbomind_plan, "lmdeploy", h200, True, 40960) == 8192 + 1024  # + max_batch_size on H200
    assert whole_prompt_pass_cap(torch_plan.workload, 1000, 64) == 8  # 8,192 // 1,000
    assert whole_prompt_pass_cap(torch_plan.workload, 100, 64) == 64  # the batch cap


def test_pytorch_engine_decodes_eagerly_before_v0_6() -> None:
    """CUDA graphs came to the PyTorch engine with PR #2104 (v0.6.0): an older release, or eager_mode, pays the
    per-kernel launch time; TurboMind and a graph-replaying release do not."""
    from mlrig.estimators.engines import lmdeploy_pytorch_decode_eager

    assert lmdeploy_pytorch_decode_eager("lmdeploy", "0.2.3+pytorch", True)
    assert not lmdeploy_pytorch_decode_eager("lmdeploy", "0.6.0+pytorch", True)
    assert lmdeploy_pytorch_decode_eager("lmdeploy", "0.12.3+pytorch", False)
    assert not lmdeploy_pytorch_decode_eager("lmdeploy", "0.2.3", True)  # TurboMind
    old, new = evaluate(_plan("lmdeploy", "0.5.3+pytorch")), evaluate(_plan("lmdeploy", "0.6.0+pytorch"))
    assert old.performance is not None and new.performance is not None
    assert old.performance.decode_tok_s < new.performance.decode_tok_s


def test_unversioned_pytorch_plan_is_priced_as_the_current_release() -> None:
    """With no engine_version the PyTorch engine is priced as LMDeploy's current release, 0.18 (PyPI, 2026-09), and
    so by v0.10.0's device table (lmdeploy/utils.py get_max_batch_size, PR #3921): H200 1,024 running sequences. The
    former "0.10" read as older than 0.10.0 and got the v0.6 table's fallback of 128."""
    from mlrig.estimators.engines import CURRENT
    from mlrig.estimators.serving import batch_cap
    from mlrig.planner import parse_plan

    res = evaluate(_plan("lmdeploy-pytorch"))
    assert CURRENT["lmdeploy"] == "0.18"
    assert any("~0.18" in n for n in res.notes)
    plan = parse_plan({"model": "Qwen/Qwen3-30B-A3B",
                       "workload": {"engine": "lmdeploy", "engine_version": "0.18+pytorch"},
                       "hardware": {"gpu": "H200"}})
    assert batch_cap(plan, "lmdeploy", resolve_gpu("H200"), True) == 1024
