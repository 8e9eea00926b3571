"""Training speed beyond compute: data-parallel gradient sync and ZeRO-Offload traffic."""

from __future__ import annotations

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
