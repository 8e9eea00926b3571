"""Training at scale: data-parallel sync across nodes (network adapters, gradient accumulation, InternEvo's
all-reduce + broadcast ZeRO-1) and per-GPU memory of pipeline stages."""

from __future__ import annotations

import pytest

from mlrig.catalog.interconnects import resolve_interconnect, split_nic_count
from mlrig.estimators.training_speed import (
    accumulation_hide_s,
    all_to_all_passes,
    data_parallel_comm_s,
    data_parallel_link,
    expert_all_to_all_s,
    training_speed,
)
from mlrig.planner import evaluate, resolve_plan

INTERNLM_7B = {"name": "internlm/internlm-7b", "hidden_size": 4096, "num_layers": 32, "num_heads": 32,
               "intermediate_size": 11008, "vocab_size": 103168, "mlp": "gated"}


def _plan(nodes: int = 16, tp: int = 1, network: str | None = "4x roce-100g", engine: str = "internevo",
          micro_num: int = 4, zero: int = 1) -> dict[str, object]:
    hw: dict[str, object] = {"gpu": "NVIDIA A100-SXM4-80GB", "count": 8, "nodes": nodes, "tensor_parallel": tp}
    if network:
        hw["interconnect"] = network
    mb = 2 * tp
    return {"model": INTERNLM_7B, "workload": {"task": "pretrain", "precision": "bf16", "batch_size": mb,
                                               "engine": engine},
            "training": {"method": "full", "seq_len": 2048, "zero_stage": zero,
                         "global_batch_tokens": 8 * nodes // tp * mb * 2048 * micro_num},
            "hardware": hw}


def _tgs(plan: dict[str, object]) -> float:
    p = evaluate(plan).performance
    assert p is not None and p.train_tokens_per_s
    hw = plan["hardware"]
    assert isinstance(hw, dict)
    return p.train_tokens_per_s / (hw["count"] * hw["nodes"])


def test_nic_count_prefix_names_the_network_link() -> None:
    assert split_nic_count("4x roce-100g") == (4, "roce-100g")
    assert split_nic_count("8 x ib-ndr") == (8, "ib-ndr")
    assert split_nic_count("pcie4-x16") == (None, "pcie4-x16")
    assert resolve_interconnect("4x roce-100g").id == "roce-100g"


def test_data_parallel_ring_across_nodes_runs_at_the_nodes_adapters() -> None:
    """NCCL: one ring per adapter, so a group spanning nodes gets the node's adapters together (4 x 12.5 GB/s),
    shared by the groups on that node; inside a node, NVLink (300 GB/s on an A100)."""
    def link(**kw: object) -> tuple[float, float]:
        r, _ = resolve_plan(_plan(**kw))  # type: ignore[arg-type]
        hw = r.plan.hardware
        return data_parallel_link(r, hw.total_gpus // hw.tensor_parallel)
    bw, lat = link()
    assert bw == pytest.approx(4 * 12.5) and lat == pytest.approx(8.0)  # roce-100g: 12.5 GB/s, 8 us
    assert link(tp=2)[0] == pytest.approx(4 * 12.5 / 2)  # two DP groups per node share the adapters
    assert link(network="8x ib-ndr")[0] == pytest.approx(300.0)  # 400 GB/s of adapters: NVLink bounds the ring
    assert link(network="roce-100g")[0] == pytest.approx(8 * 12.5)  # one adapter per GPU when no count is given
    assert link(network=None)[0] == pytest.approx(300.0)  # no network named: the intra-node link, as before
    assert link(tp=8, network=None)[0] == pytest.approx(300.0)
    assert link(tp=8)[0] == pytest.approx(4 * 12.5 / 8)  # one rank per node in each of 8 groups


def test_a_slower_network_never_trains_faster() -> None:
    rates = [_tgs(_plan(nodes=32, network=n)) for n in ("1x roce-100g", "4x roce-100g", "8x roce-400g", None)]
    assert rates == sorted(rates)
    assert rates[0] < 0.8 * rates[-1]


def test_internevo_zero1_all_reduces_then_broadcasts() -> None:
    """hand check: 1 GB of gradients and parameters over 2 ranks at 1 GB/s, nothing hidden: ZeRO's
    reduce-scatter + all-gather move 2 x 1/2 GB (1 s); InternEvo's all-reduce + broadcast 3 x 1/2 GB (1.5 s)."""
    zero = data_parallel_comm_s(1e9, 2, 1.0, 0.0, zero_stage=1, overlap=0.0)
    bcast = data_parallel_comm_s(1e9, 2, 1.0, 0.0, zero_stage=1, overlap=0.0, broadcast_params=True)
    assert zero == pytest.approx(1.0) and bcast == pytest.approx(1.5)
    # DDP (stage 0) keeps the whole model on every rank: no broadcast
    assert data_parallel_comm_s(1e9, 2, 1.0, 0.0, zero_stage=0, overlap=0.0, broadcast_params=True) \
        == pytest.approx(1.0)
    assert _tgs(_plan(nodes=32)) < _tgs(_plan(nodes=32, engine="deepspeed"))


def test_gradient_accumulation_leaves_only_the_last_micro_batch_to_hide_the_sync() -> None:
    assert accumulation_hide_s(4.0, 4) == pytest.approx(1.0)
    assert accumulation_hide_s(4.0, 1) == pytest.approx(4.0)
    assert accumulation_hide_s(4.0, 8, stages=4) == pytest.approx(2.0)  # pipeline cool-down: 4 slots
    assert accumulation_hide_s(4.0, 2, stages=4) == pytest.approx(4.0)  # never more than the step
    # the same tokens per step in one micro-batch of 8 sequences or four of 2: the once-per-step sync of the same
    # bytes hides behind the whole step in the first case, behind a quarter of it in the second
    r, _ = resolve_plan(_plan(nodes=32, network="1x roce-100g", micro_num=4))  # type: ignore[arg-type]
    one, four = training_speed(r, 8, 2048), training_speed(r, 2, 2048)
    assert one.micro == 1 and four.micro == 4
    assert float(four.busy_s) == pytest.approx(float(one.busy_s), rel=0.02)
    t = float(one.comm_s) / (1 - 0.7)  # one micro-batch: DP_OVERLAP (0.7) of the sync hides
    assert t == pytest.approx(3 * 255 / 256 * 2 * 7.32e9 / 12.5e9, rel=0.02)  # all-reduce + broadcast, 1 NIC
    assert float(four.comm_s) == pytest.approx(t - float(four.busy_s) / 4, rel=0.01)


def _memory(pp: int = 1, tp: int = 1, zero: int = 1, model: object = None) -> tuple[float, float, float]:
    gpus = pp * tp
    r = evaluate({"model": model or INTERNLM_7B, "workload": {"task": "pretrain", "precision": "bf16", "batch_size": 1,
                                                         "engine": "internevo"},
                  "training": {"method": "full", "seq_len": 2048, "zero_stage": zero,
                               "activation_checkpointing": "full", "global_batch_tokens": 4 * 2048},
                  "hardware": {"gpu": "NVIDIA A800-SXM4-80GB", "count": gpus, "tensor_parallel": tp,
                               "pipeline_parallel": pp}})
    m = r.memory
    assert m is not None and m.optimizer_gib is not None
    return m.weights_gib, m.optimizer_gib, m.per_gpu_gib


def test_the_busiest_pipeline_stage_holds_its_layers_and_the_embedding() -> None:
    """InternLM-7B (32 layers of 202,383,488 parameters with their norms, embedding and head 422,576,128 each) on
    6 stages: the first holds ceil(32/6) = 6 layers and the embedding, 1,636,877,056 parameters: 3.049 GiB of bf16
    weights and 12 B/param of fp32 master + moments (ZeRO-1 over one data-parallel rank), not 7.32e9 / 6."""
    w, opt, _ = _memory(pp=6)
    assert w == pytest.approx(1_636_877_056 * 2 / 2**30, rel=1e-3)
    assert opt == pytest.approx(1_636_877_056 * 12 / 2**30, rel=1e-3)


@pytest.mark.parametrize("tp", [1, 2])
def test_more_pipeline_stages_never_need_more_weight_memory_per_gpu(tp: int) -> None:
    prev = (float("inf"), float("inf"), float("inf"))
    for pp in range(1, 17):
        w, opt, _ = _memory(pp=pp, tp=tp)
        assert w <= prev[0] + 1e-9 and opt <= prev[1] + 1e-9, pp
        prev = (w, opt, 0.0)


def test_internevo_step_holds_fp32_copies_of_the_gradient_shard() -> None:
    """InternLM-7B (7,321,423,872 parameters) at TP4 on 4 GPUs, ZeRO-1 over one data-parallel rank: bf16 weights
    (2 B) + fp32 master and moments (12 B) + at the step the fp32 gradient copy (4 B) and torch's foreach AdamW
    temporary (4 B): 22 B per parameter of the quarter, 37.50 GiB allocated. DeepSpeed's fused step keeps the
    16-bit gradients only: 16 B per parameter plus the backward's working set and ZeRO-1's 1e9-byte reduction
    bucket (`memory.deepspeed_ipg_bucket_bytes`)."""
    def allocated(engine: str, zero: int = 1) -> float:
        r = evaluate({"model": INTERNLM_7B, "workload": {"task": "pretrain", "precision": "bf16", "batch_size": 1,
                                                         "engine": engine},
                      "training": {"method": "full", "seq_len": 2048, "zero_stage": zero,
                                   "activation_checkpointing": "full", "global_batch_tokens": 8192},
                      "hardware": {"gpu": "NVIDIA A800-SXM4-80GB", "count": 4, "tensor_parallel": 4}})
        m = r.memory
        assert m is not None and m.allocated_gib is not None
        assert m.allocated_gib == pytest.approx(m.weights_gib + m.optimizer_gib + (m.gradients_gib or 0)
                                                + (m.activations_gib or 0), abs=1e-3)  # the parts add up
        return m.allocated_gib
    assert allocated("internevo") == pytest.approx(7_321_423_872 / 4 * 22 / 2**30, rel=1e-3)
    assert allocated("deepspeed") < 7_321_423_872 / 4 * 17 / 2**30 + 1e9 / 2**30
    # FSDP: the fp32 copies sit beside the 16-bit gradient shards: 24 B
    assert allocated("internevo", zero=3) == pytest.approx(7_321_423_872 / 4 * 24 / 2**30, rel=1e-3)


@pytest.mark.parametrize("ep", [1, 2, 4, 8, 16])
def test_zero1_with_expert_parallelism_keeps_one_copy_of_every_state(ep: int) -> None:
    """ZeRO-1 over 16 GPUs (TP1): dense parameters' fp32 states are split 16 ways; each routed expert lives on
    16/ep ranks (its expert-data-parallel group), which split its states. Summed over the GPUs that is one copy
    of the whole model's 12 B/param, whatever the expert parallelism (before: the experts' share shrank by ep)."""
    plan = {"model": "Qwen/Qwen3-30B-A3B", "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1,
                                                        "engine": "megatron"},
            "training": {"method": "full", "seq_len": 4096, "zero_stage": 1, "expert_parallel": ep,
                         "activation_checkpointing": "full"},
            "hardware": {"gpu": "H100 SXM5 80GB", "count": 8, "nodes": 2}}
    r, _ = resolve_plan(plan)  # type: ignore[arg-type]
    m = evaluate(plan).memory
    assert m is not None and m.optimizer_gib is not None
    assert m.optimizer_gib * 16 == pytest.approx(12 * r.arch.params().total / 2**30, rel=1e-3)


def test_expert_states_follow_their_expert_data_parallel_group() -> None:
    """Qwen3-30B-A3B at TP2 x EP8 on 16 GPUs (SWIFTMEG-0013's layout): every GPU holds 16 of 128 experts, halved
    by TP, and no other GPU holds them (expert data-parallel group of 16 / (8 x 2) = 1), so their fp32 states stay
    whole; the dense parameters' states are split over the 8 data-parallel ranks."""
    plan = {"model": "Qwen/Qwen3-30B-A3B", "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1,
                                                        "engine": "megatron"},
            "training": {"method": "full", "seq_len": 8192, "zero_stage": 1, "expert_parallel": 8,
                         "sequence_parallel": True, "activation_checkpointing": "full"},
            "hardware": {"gpu": "NVIDIA A800-SXM4-80GB", "count": 8, "nodes": 2, "tensor_parallel": 2}}
    r, _ = resolve_plan(plan)  # type: ignore[arg-type]
    pb = r.arch.params()
    m = evaluate(plan).memory
    assert m is not None and m.optimizer_gib is not None
    routed, dense = pb.experts_routed, pb.total - pb.experts_routed
    assert m.optimizer_gib == pytest.approx(12 * (routed / 16 + dense / 2 / 8) / 2**30, rel=1e-3)


def _moe_plan(network: str | None = None, ck: str = "full") -> dict[str, object]:
    hw: dict[str, object] = {"gpu": "NVIDIA A800-SXM4-80GB", "count": 8, "nodes": 2, "tensor_parallel": 2}
    if network:
        hw["interconnect"] = network
    return {"model": "Qwen/Qwen3-30B-A3B", "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1,
                                                        "engine": "megatron"},
            "training": {"method": "full", "seq_len": 8192, "global_batch_tokens": 16 * 8192, "zero_stage": 1,
                         "expert_parallel": 8, "sequence_parallel": True, "activation_checkpointing": ck},
            "hardware": hw}


def test_expert_all_to_all_across_nodes_goes_through_the_adapters() -> None:
    """TP2 x EP8 on 2 nodes of 8: each EP group spans both nodes, 4 of its 8 ranks on each; half of every token's
    dispatch / combine bytes leave the node, at one adapter per GPU. Full recomputation re-runs the forward's
    dispatch and combine: 6 all-to-alls per MoE layer instead of 4."""
    assert all_to_all_passes("full") == 6 and all_to_all_passes("selective") == 4 == all_to_all_passes("none")
    r, _ = resolve_plan(_moe_plan("roce-200g"))  # type: ignore[arg-type]
    a = r.arch
    tokens = 16 * 8192 / 8 / 2  # per GPU: the step's tokens over 8 data-parallel ranks, split by TP (SP)
    micro = 2
    per_token = 6 * a.experts_per_token * a.hidden_size * 2 * a.num_moe_layers
    expected = per_token * tokens * 0.5 / 25e9 + 6 * a.num_moe_layers * micro * 8e-6
    assert expert_all_to_all_s(r, tokens, micro) == pytest.approx(expected, rel=1e-6)
    times = [expert_all_to_all_s(resolve_plan(_moe_plan(n))[0], tokens, micro)  # type: ignore[arg-type]
             for n in ("1x roce-100g", "roce-100g", None, "8x ib-ndr")]  # None: an A800 node's 200 Gb/s HDR
    assert times == sorted(times, reverse=True)
    rates = [_tgs(_moe_plan(n)) for n in ("1x roce-100g", "roce-100g", None)]
    assert rates == sorted(rates)
    assert _tgs(_moe_plan(ck="selective")) > _tgs(_moe_plan(ck="full"))


def test_an_expert_group_inside_one_node_never_touches_the_network() -> None:
    """TP1 x EP8 on nodes of 8: every EP group is one node; naming a slow network changes only the gradient
    sync across nodes, not the all-to-alls, which stay at NVLink's rate (200 GB/s a direction on an A800, 5 us)."""
    def a2a(network: str | None) -> float:
        plan = _moe_plan(network)
        hw = plan["hardware"]
        assert isinstance(hw, dict)
        hw["tensor_parallel"] = 1
        r, _ = resolve_plan(plan)  # type: ignore[arg-type]
        return float(expert_all_to_all_s(r, 8192.0, 2))
    assert a2a("1x roce-100g") == pytest.approx(a2a(None), rel=1e-6)
    r, _ = resolve_plan(_moe_plan())  # type: ignore[arg-type]
    a = r.arch
    wire = 6 * a.experts_per_token * a.hidden_size * 2 * a.num_moe_layers * 8192 * 7 / 8 / 200e9
    assert a2a(None) == pytest.approx(wire + 6 * a.num_moe_layers * 2 * 5e-6, rel=1e-3)


def test_megatron_keeps_fp32_gradients_for_bf16_weights() -> None:
    """Megatron-LM accumulates and reduces bf16 training's gradients in fp32 (`main_grad`): Llama-2-7B
    (6,738,415,616 parameters) at TP2 holds 4 B x 3,369,207,808 = 12.55 GiB of gradients per GPU; DeepSpeed's
    bf16 gradients are half that."""
    def grads(engine: str) -> float:
        m = evaluate({"model": "meta-llama/Llama-2-7b-hf",
                      "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1, "engine": engine},
                      "training": {"method": "full", "seq_len": 4096, "zero_stage": 1},
                      "hardware": {"gpu": "H100 SXM5 80GB", "count": 8, "tensor_parallel": 2}}).memory
        assert m is not None and m.gradients_gib is not None
        return m.gradients_gib
    assert grads("megatron") == pytest.approx(4 * 6_738_415_616 / 2 / 2**30, rel=1e-3)
    assert grads("deepspeed") == pytest.approx(grads("megatron") / 2, rel=1e-3)
