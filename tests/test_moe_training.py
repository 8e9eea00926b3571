"""MoE training physics: expert-parallel all-to-all bytes and links, DualPipe overlap, expert memory under
EP / expert-TP, and the memory floor of the routed-expert GEMMs at few tokens per expert."""

from __future__ import annotations

import math

import pytest

from mlrig.estimators.training_speed import (
    all_to_all_bytes_per_token,
    default_scale_out_link,
    expert_all_to_all_s,
    expert_weight_floor_s,
    training_speed,
)
from mlrig.planner import evaluate, resolve_plan

# Qwen3-30B-A3B (config.json): hidden 2048, 48 layers all MoE, 128 routed experts, top-8, no shared expert
QWEN3_30B = "Qwen/Qwen3-30B-A3B"


def _plan(gpu: str = "H100 SXM", nodes: int = 4, ep: int = 32, tp: int = 1, engine: str = "megatron",
          network: str | None = None, ck: str = "selective", seq: int = 4096, gbt: int | None = None,
          method: str = "full", etp: int | None = None) -> dict[str, object]:
    hw: dict[str, object] = {"gpu": gpu, "count": 8, "nodes": nodes, "tensor_parallel": tp}
    if network:
        hw["interconnect"] = network
    training: dict[str, object] = {"method": method, "seq_len": seq, "zero_stage": 1, "expert_parallel": ep,
                                   "activation_checkpointing": ck, "sequence_parallel": tp > 1,
                                   "global_batch_tokens": gbt or 8 * nodes // tp * seq}
    if etp is not None:
        training["expert_tensor_parallel"] = etp
    return {"model": QWEN3_30B, "workload": {"task": "pretrain", "precision": "bf16", "batch_size": 1,
                                             "engine": engine},
            "training": training, "hardware": hw}


def test_all_to_all_bytes_per_token_by_hand() -> None:
    """Each token's bf16 hidden state (2048 x 2 B) to each of its 8 experts, dispatch + combine in forward and
    backward (4 passes), in all 48 MoE layers: 4 x 8 x 4096 B x 48 = 6,291,456 B; full recomputation re-runs
    the forward's two: 6 passes, 9,437,184 B."""
    r, _ = resolve_plan(_plan())
    assert all_to_all_bytes_per_token(r.arch, "selective") == 6_291_456
    assert all_to_all_bytes_per_token(r.arch, "none") == 6_291_456
    assert all_to_all_bytes_per_token(r.arch, "full") == 9_437_184


def test_cross_node_expert_group_without_a_named_network_uses_the_reference_adapter() -> None:
    """EP32 over 4 nodes of 8 H100s, no network named: 3/4 of each token's all-to-all bytes go to other nodes
    through the GPU's own 400 Gb/s adapter (50 GB/s, DGX H100), not NVLink; the same as naming '8x ib-ndr'.
    4096 tokens per GPU: 6,291,456 x 4096 x 0.75 / 50e9 = 0.3866 s (the in-node quarter over NVLink runs
    alongside), plus one 5 us network latency per pass, layer and micro-batch."""
    r, _ = resolve_plan(_plan())
    tokens, micro = 4096.0, 1
    expected = 6_291_456 * tokens * 0.75 / 50e9 + 4 * 48 * micro * 5e-6
    assert expert_all_to_all_s(r, tokens, micro) == pytest.approx(expected, rel=1e-6)
    named, _ = resolve_plan(_plan(network="8x ib-ndr"))
    assert expert_all_to_all_s(named, tokens, micro) == pytest.approx(expected, rel=1e-9)
    # an A100 node's adapter is 200 Gb/s HDR (DGX A100): the network part takes twice as long
    a100, _ = resolve_plan(_plan(gpu="A100 SXM 80GB"))
    assert default_scale_out_link(a100.gpu).bandwidth_gb_s == 25
    assert default_scale_out_link(r.gpu).bandwidth_gb_s == 50
    assert expert_all_to_all_s(a100, tokens, micro) == pytest.approx(
        6_291_456 * tokens * 0.75 / 25e9 + 4 * 48 * micro * 5e-6, rel=1e-6)


def test_an_expert_group_that_leaves_the_node_never_trains_faster_than_one_inside_it() -> None:
    inside = evaluate(_plan(ep=8)).performance
    across = evaluate(_plan(ep=32)).performance
    assert inside is not None and across is not None
    assert inside.train_tokens_per_s is not None and across.train_tokens_per_s is not None
    assert across.train_tokens_per_s < inside.train_tokens_per_s


def test_dualpipe_hides_the_all_to_all_behind_computation() -> None:
    """HAI-LLM's DualPipe overlaps dispatch and combine with another micro-batch's computation (DeepSeek-V3
    report sec. 3.2.1): where the all-to-all takes less than the computation it costs nothing; Megatron's
    plain 1F1B pays it in full."""
    for ep in (8, 32):  # inside a node (NVLink: hidden whole), across nodes (the adapter: partly exposed)
        hai, _ = resolve_plan(_plan(engine="hai-llm", ep=ep))
        meg, _ = resolve_plan(_plan(ep=ep))
        f_hai, f_meg = training_speed(hai, 1, 4096), training_speed(meg, 1, 4096)
        raw = float(expert_all_to_all_s(hai, 4096.0, 1))  # 4096 tokens per GPU, one micro-batch
        assert float(f_meg.ep_s) == pytest.approx(raw, rel=1e-9) and raw > 0.0
        compute = float(f_hai.busy_s) - float(f_hai.ep_s) - float(f_hai.tp_s) - float(f_hai.qlora_s)
        assert float(f_hai.ep_s) == pytest.approx(max(0.0, raw - compute), abs=1e-12)
        assert float(f_hai.tokens_per_s) > float(f_meg.tokens_per_s)
        if ep == 8:
            assert float(f_hai.ep_s) == 0.0


@pytest.mark.parametrize("tp", [1, 2])
def test_more_expert_parallel_never_needs_more_expert_memory_per_gpu(tp: int) -> None:
    """Training memory of Qwen3-30B-A3B on 2 nodes of 8 H100s: weights, gradients and optimizer states per GPU
    never grow with the expert-parallel size, and the weights are the dense share plus routed / (ep x etp)."""
    last = math.inf
    for ep in (1, 2, 4, 8):
        plan = _plan(nodes=2, ep=ep, tp=tp, ck="full", etp=1)
        r, _ = resolve_plan(plan)
        m = evaluate(plan).memory
        assert m is not None
        states = m.weights_gib + m.gradients_gib + m.optimizer_gib
        assert states <= last + 1e-9
        last = states
        pb = r.arch.params()
        dense, routed = pb.total - pb.experts_routed, pb.experts_routed
        assert m.weights_gib == pytest.approx((dense / tp + routed / ep) * 2 / 2**30, rel=1e-3)


def test_expert_tensor_parallel_splits_each_expert() -> None:
    """Megatron-Core parallel folding: at TP2 x EP4, expert-TP 2 halves each expert that expert-TP 1 keeps whole."""
    whole = evaluate(_plan(nodes=2, ep=4, tp=2, ck="full", etp=1)).memory
    split = evaluate(_plan(nodes=2, ep=4, tp=2, ck="full", etp=2)).memory
    assert whole is not None and split is not None
    r, _ = resolve_plan(_plan(nodes=2, ep=4, tp=2, ck="full", etp=1))
    routed = r.arch.params().experts_routed
    assert whole.weights_gib - split.weights_gib == pytest.approx(routed / 4 / 2 * 2 / 2**30, rel=1e-3)


def test_expert_weight_floor_by_hand() -> None:
    """LoRA on one H100 with full recomputation: forward, recompute and input-gradient GEMMs each read every
    routed expert the micro-batch touches (3 x 2 B x 28.99e9 parameters); 256 tokens x top-8 of 128 experts
    touch 1 - (1 - 8/128)^256 of them; at 0.8 x 3,350 GB/s."""
    plan = {"model": QWEN3_30B, "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1},
            "training": {"method": "lora", "seq_len": 256, "activation_checkpointing": "full"},
            "hardware": {"gpu": "H100 SXM", "count": 1}}
    r, _ = resolve_plan(plan)
    bw = 3350e9 * 0.8
    touched = 1 - (1 - 8 / 128) ** 256
    expected = 3 * 2 * r.arch.params().experts_routed * touched / bw
    assert expert_weight_floor_s(r, 256, 6.0, bw) == pytest.approx(expected, rel=1e-6)


def test_few_tokens_per_expert_are_weight_bandwidth_bound() -> None:
    """At 256 tokens a micro-batch (16 per expert) the routed experts' weights, not their FLOPs, set the pace:
    throughput per token is well below that at 2,048 tokens (128 per expert), where the FLOPs do."""
    def tok_s(seq: int) -> float:
        plan = {"model": QWEN3_30B, "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1},
                "training": {"method": "lora", "seq_len": seq, "activation_checkpointing": "full"},
                "hardware": {"gpu": "H100 SXM", "count": 1}}
        r, _ = resolve_plan(plan)
        return float(training_speed(r, 1, seq).tokens_per_s)
    assert tok_s(256) < 0.6 * tok_s(2048)


def test_megatron_moe_layers_wait_on_the_host_once_per_micro_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Megatron-Core's dropless dispatcher synchronises with the host in every MoE layer's forward: 4 ms per MoE
    layer and micro-batch on each GPU (`MOE_LAYER_HOST_SYNC_S`, 6.3 ms). Qwen3-30B-A3B, 48 MoE layers, PP 2 x EP 4,
    global batch of 16 micro-batches per data-parallel rank: 0.0063 x 24 x 16 = 2.4192 s more per step."""
    import mlrig.estimators.efficiency as eff

    plan = _plan(nodes=1, ep=4)
    hw = plan["hardware"]
    assert isinstance(hw, dict)
    hw["pipeline_parallel"] = 2
    plan["training"]["global_batch_tokens"] = 4 * 16 * 4096  # type: ignore[index]
    r, _ = resolve_plan(plan)
    with_sync = training_speed(r, 1, 4096)
    monkeypatch.setattr(eff, "MOE_LAYER_HOST_SYNC_S", 0.0)
    without = training_speed(r, 1, 4096)
    assert float(with_sync.micro) == 16
    assert float(with_sync.busy_s) - float(without.busy_s) == pytest.approx(0.0063 * 24 * 16, rel=1e-9)
    # engines outside Megatron-Core pay nothing for it (DeepSeek's HAI-LLM here)
    monkeypatch.setattr(eff, "MOE_LAYER_HOST_SYNC_S", 0.004)
    plan["workload"]["engine"] = "hai-llm"  # type: ignore[index]
    r2, _ = resolve_plan(plan)
    a = training_speed(r2, 1, 4096)
    monkeypatch.setattr(eff, "MOE_LAYER_HOST_SYNC_S", 0.0)
    assert float(training_speed(r2, 1, 4096).busy_s) == pytest.approx(float(a.busy_s), rel=1e-12)
