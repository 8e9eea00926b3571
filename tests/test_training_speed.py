"""Training speed beyond compute: data-parallel gradient sync and ZeRO-Offload traffic."""

from __future__ import annotations

import pytest

from mlrig.planner import evaluate


def _train(gpu: str = "RTX 4090", count: int = 1, **training: object) -> tuple[float, str, str]:
    r = evaluate({"model": "llama-3.2-3b", "workload": {"task": "finetune", "batch_size": 1},
                  "training": {"seq_len": 2048, **training}, "hardware": {"gpu": gpu, "count": count}})
    p = r.performance
    assert p is not None and p.train_tokens_per_s and p.bound and p.explanation
    return p.train_tokens_per_s, p.bound, p.explanation


def test_offload_costs_speed_and_names_the_bound() -> None:
    base, bound, _ = _train()
    opt, opt_bound, expl = _train(offload="optimizer")
    par, _, _ = _train(offload="params")
    assert bound == "compute"
    assert par < opt < base
    assert opt_bound == "offload" and "offload traffic" in expl
    # hand check, optimizer offload of a 3.21e9-param model on PCIe 4.0 x16 (31.5 GB/s) and 76.8 GB/s
    # host RAM: 4 B/param over PCIe + 28 B/param of CPU Adam = 0.41 s + 1.17 s per step
    step_base = 2048 / base
    step_opt = 2048 / opt
    assert abs((step_opt - step_base) - (4 * 3.2127e9 / 31.5e9 + 28 * 3.2127e9 / 76.8e9)) < 0.05


def test_gradient_sync_over_pcie_is_not_free() -> None:
    one, _, _ = _train(count=1)
    two, _, expl = _train(count=2)
    assert one < two < 2 * one  # more GPUs help, but the all-reduce over PCIe is partly exposed
    assert "gradient sync" in expl


def test_nvlink_bridge_beats_x8_pcie_for_data_parallel() -> None:
    """Two RTX 3090s: NVLink bridge (56 GB/s per direction) against PCIe 4.0 x8/x8 (15.75 GB/s)."""
    def run(link: str) -> float:
        r = evaluate({"model": "llama-3.2-3b", "workload": {"task": "finetune"},
                      "training": {"seq_len": 2048, "zero_stage": 3},
                      "hardware": {"gpu": "RTX 3090", "count": 2, "interconnect": link}})
        assert r.performance is not None and r.performance.train_tokens_per_s
        return r.performance.train_tokens_per_s
    assert run("nvlink-3090-bridge") > run("pcie4-x8")


def test_fp8_spellings_train_at_the_fp8_rate_and_qlora_is_slower_than_lora() -> None:
    """Precision aliases reach the FP8 tensor rate; QLoRA pays QLORA_SPEED_FACTOR for de-quantising."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.catalog.models import resolve_model
    from mlrig.estimators.training_speed import QLORA_SPEED_FACTOR, estimate_training
    from mlrig.workload import Plan

    arch, gpu = resolve_model("llama-3-8b"), resolve_gpu("h100-sxm-80gb")

    def tok_s(precision: str, method: str = "full") -> float:
        plan = Plan.model_validate({"model": "llama-3-8b",
                                    "workload": {"task": "finetune", "precision": precision, "batch_size": 8},
                                    "training": {"method": method, "seq_len": 2048},
                                    "hardware": {"gpu": gpu.id}})
        t = estimate_training(arch, plan, gpu).train_tokens_per_s
        assert t is not None
        return t

    assert tok_s("e4m3") == tok_s("fp8") > tok_s("bf16")
    assert tok_s("bf16", "qlora") == pytest.approx(QLORA_SPEED_FACTOR * tok_s("bf16", "lora"))
