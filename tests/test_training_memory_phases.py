"""Training memory: the step's phases (issue 13's trace), parallelism keys, invariants."""

from __future__ import annotations

from typing import Any

import pytest

from mlrig.catalog.models import resolve_model
from mlrig.estimators.memory import lora_full_params, lora_params
from mlrig.planner import evaluate
from mlrig.units import GiB


def _mem(model: str = "llama-3.1-8b", gpu: str = "h100-sxm-80gb", batch: int = 1, count: int = 1,
         nodes: int = 1, workload: dict[str, Any] | None = None, **training: Any) -> Any:
    hw: dict[str, Any] = {"gpu": gpu, "count": count, "nodes": nodes}
    for k in ("tensor_parallel", "pipeline_parallel", "power_limit_w"):
        if k in training:
            hw[k] = training.pop(k)
    training.setdefault("seq_len", 2048)
    training.setdefault("method", "full")  # what these tests measure (a fine-tune naming none: its GPUs' method)
    r = evaluate({"model": model, "workload": {"task": "finetune", "batch_size": batch, **(workload or {})},
                  "training": training, "hardware": hw})
    assert r.memory is not None
    return r.memory


def test_foreach_adamw_temporary_is_one_state_sized_buffer() -> None:
    """Pure-bf16 AdamW on an 8B: the trace (docs/trace-findings.md) peaks at the step with params, grads,
    two bf16 moments and one bf16 temporary: 2 + 2 + 4 + 2 = 10 B/param (74.8 GiB allocated);
    fused AdamW has no temporary (59.9 GiB, at the end of backward)."""
    n = resolve_model("llama-3.1-8b").total_params
    foreach = _mem(optimizer="adamw-bf16", activation_checkpointing="full")
    fused = _mem(optimizer="adamw-bf16-fused", activation_checkpointing="full")
    assert foreach.allocated_gib == pytest.approx(10 * n / GiB, rel=0.01)
    assert foreach.allocated_gib == pytest.approx(74.79, rel=0.02)
    assert fused.allocated_gib == pytest.approx(59.85, rel=0.03)


def test_checkpointing_saves_little_at_the_backward_peak_of_a_full_finetune() -> None:
    """Trace, 8B AMP fused: checkpointing saves only 1.8 GiB at the peak (gradients replace the freed
    activations); the old sum credited it with -9.4 GiB."""
    on = _mem(optimizer="adamw-fused", activation_checkpointing="full")
    off = _mem(optimizer="adamw-fused", activation_checkpointing="none")
    assert abs(off.allocated_gib - on.allocated_gib) < 4


def test_logits_are_twelve_bytes_each_unless_chunked() -> None:
    """Gemma-3-1B at 8k: the trace's logits+loss is 24.0 GiB at the head of backward (V = 262,144)."""
    plain = _mem("google/gemma-3-1b-it", seq_len=8192, optimizer="adamw-bf16-fused")
    chunked = _mem("google/gemma-3-1b-it", seq_len=8192, optimizer="adamw-bf16-fused", chunked_loss=True)
    assert plain.activations_gib >= 8192 * 262_144 * 12 / GiB
    assert plain.allocated_gib - chunked.allocated_gib == pytest.approx(8192 * 262_144 * 8 / GiB, rel=0.01)


def test_sequence_parallel_shards_the_activations_of_a_70b_at_tp8() -> None:
    """Issue 10: a 70B at TP8 with SP, no recomputation, measured 67-72 GiB per GPU."""
    kw: dict[str, Any] = dict(model="llama-3.1-70b", count=8, nodes=8, tensor_parallel=8, seq_len=4096,
                              activation_checkpointing="none", zero_stage=1, workload={"task": "pretrain"})
    sp = _mem(sequence_parallel=True, **kw)
    no_sp = _mem(sequence_parallel=False, **kw)
    assert sp.per_gpu_gib < no_sp.per_gpu_gib
    assert 60 < sp.per_gpu_gib < 75


@pytest.mark.parametrize("ckpt", ["none", "selective", "full"])
def test_invariants(ckpt: str) -> None:
    def per_gpu(**kw: Any) -> float:
        return float(_mem(activation_checkpointing=ckpt, **kw).per_gpu_gib)
    assert per_gpu(batch=1) <= per_gpu(batch=2) <= per_gpu(batch=8)  # more batch, never less memory
    assert per_gpu(count=2, zero_stage=3) >= per_gpu(count=4, zero_stage=3) >= per_gpu(count=8, zero_stage=3)
    # SP never more than without; CP never more than without
    tp = dict(count=8, tensor_parallel=8)
    assert per_gpu(sequence_parallel=True, **tp) <= per_gpu(**tp)
    assert per_gpu(count=4, context_parallel=4, zero_stage=3) <= per_gpu(count=4, zero_stage=3)
    assert per_gpu(activation_offload=True) <= per_gpu()


def test_selective_checkpointing_sits_between_none_and_full_without_flash() -> None:
    kw: dict[str, Any] = dict(model="llama-3.2-1b", workload={"flash_attention": False}, optimizer="adamw-fused",
                              seq_len=4096, batch=2)
    none_, sel, full = (_mem(activation_checkpointing=c, **kw).allocated_gib for c in ("none", "selective", "full"))
    assert full <= sel < none_


def test_lora_targets_groups_and_fully_trained_matrices() -> None:
    arch = resolve_model("llama-3.1-8b")
    assert lora_params(arch, 16, ["attention", "mlp"]) == lora_params(arch, 16, ["q", "k", "v", "o", "gate", "up",
                                                                               "down"])
    head = lora_full_params(arch, ["attention", "lm_head"])
    assert head == 128_256 * 4096  # untied head: V x h
    assert lora_params(arch, 16, ["attention", "lm_head"]) == lora_params(arch, 16, ["attention"]) + head
    with_head = _mem(method="lora", lora_targets=["attention", "lm_head"])
    without = _mem(method="lora", lora_targets=["attention"])
    # the head's gradient (2 B) and AdamW state (12 B) come on top
    assert with_head.gradients_gib + with_head.optimizer_gib - without.gradients_gib - without.optimizer_gib == \
        pytest.approx(head * 14 / GiB, rel=0.01)


def test_expert_parallel_splits_the_experts() -> None:
    kw: dict[str, Any] = dict(model="mixtral-8x7b", count=8, zero_stage=1, activation_checkpointing="full")
    assert _mem(expert_parallel=8, **kw).weights_gib < 0.4 * _mem(**kw).weights_gib


def test_checkpointing_keys_agree() -> None:
    assert _mem(gradient_checkpointing=True).per_gpu_gib == _mem(activation_checkpointing="full").per_gpu_gib
    assert _mem(gradient_checkpointing=False).per_gpu_gib == _mem(activation_checkpointing="none").per_gpu_gib


def test_contradicting_checkpointing_keys_are_refused() -> None:
    from mlrig.errors import MlrigError
    with pytest.raises(MlrigError, match="contradicts"):
        evaluate({"model": "llama-3.2-1b", "workload": {"task": "finetune"},
                  "training": {"gradient_checkpointing": False, "activation_checkpointing": "full"}})


def test_parallel_sizes_must_fit_the_gpus() -> None:
    from mlrig.errors import MlrigError
    with pytest.raises(MlrigError, match="context parallel"):
        evaluate({"model": "llama-3.2-1b", "workload": {"task": "pretrain"},
                  "training": {"context_parallel": 4}, "hardware": {"count": 2}})


def test_litgpt_fsdp_lora_accumulating_keeps_unsharded_block_gradients() -> None:
    """FSDP1 with LoRA blocks wrapped whole and no_sync while accumulating (LitGPT): every block weight,
    frozen or not, gets a 16-bit gradient that stays unsharded, so 2 A100s need about the one-GPU
    peak. lit-gpt Resource Tables (LITGPT-0063): Llama-2-7B LoRA on 2 x A100-40GB, micro-batch 1,
    1,304 tokens, global batch 128: 22.18 GB = 20.66 GiB per GPU (one GPU: 21.3 GB)."""
    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-SXM4-40GB", count=2,
                              workload={"engine": "litgpt", "precision": "bf16"}, method="lora", lora_rank=8,
                              lora_targets=["q", "v"], seq_len=1304, optimizer="adamw-bf16",
                              activation_checkpointing="full", zero_stage=3)
    acc = _mem(global_batch_tokens=128 * 1304, **kw)
    per_step = _mem(**kw)
    arch = resolve_model("meta-llama/Llama-2-7b-hf")
    pb = arch.params()
    blocks = arch.total_params - pb.embedding - pb.lm_head
    assert acc.gradients_gib == pytest.approx(2 * blocks / GiB, rel=0.01)  # unsharded, frozen included
    assert per_step.gradients_gib == pytest.approx(blocks / GiB, rel=0.01)  # reduce-scattered: shards
    assert acc.allocated_gib == pytest.approx(20.66, rel=0.10)
    # DeepSpeed ZeRO-3 reduce-scatters every micro-batch and keeps adapter gradients only
    ds = _mem(global_batch_tokens=128 * 1304, **{**kw, "workload": {"engine": "deepspeed", "precision": "bf16"}})
    assert ds.gradients_gib < 0.1


def test_first_recomputed_layer_is_counted_at_the_head_of_backward() -> None:
    """Full recomputation: when the loss is chunked, the last layer's rebuilt working set outweighs the
    logits, on top of every layer's checkpoint (Chen et al. 2016). Llama-2-7B, one 4,096-token sequence:
    checkpoints 32 x 4096 x 4096 x 2 B = 1.0 GiB; one layer's working set 4096 x (4h + 2(3h + 2kv) + 2h + 8i)
    = 4096 x 153,600 B = 0.586 GiB; chunked logits 4096 x 32,000 x 4 B = 0.488 GiB."""
    m = _mem("meta-llama/Llama-2-7b-hf", method="lora", lora_rank=8, lora_targets=["q", "v"], seq_len=4096,
             optimizer="adamw-fused", activation_checkpointing="full", chunked_loss=True)
    assert m.activations_gib == pytest.approx((32 * 4096 * 4096 * 2 + 4096 * 153_600) / GiB, rel=0.005)


def test_litgpt_lora_dropout_keeps_a_copy_of_each_adapted_input() -> None:
    """LitGPT's LoRA (lora_dropout 0.05 by default) drops the adapters' input out: a 16-bit copy and a
    1-byte mask per element. q and v share LitGPT's fused QKV input: 3 x 4096 B per token and layer on
    Llama-2-7B, x 1,024 tokens x 32 layers = 0.375 GiB; PEFT's default has no dropout."""
    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", batch=2, method="lora", lora_rank=32,
                              lora_targets=["q", "v"], seq_len=512, optimizer="adamw-fused",
                              activation_checkpointing="none", chunked_loss=True)
    lit = _mem(workload={"engine": "litgpt"}, **kw)
    peft = _mem(workload={"engine": "hf-peft"}, **kw)
    assert lit.allocated_gib - peft.allocated_gib == pytest.approx(3 * 4096 * 1024 * 32 / GiB, rel=0.01)
    # with q, k, v, o, the MLP's gate/up and down: h + h + 2h + i dropped inputs
    full = dict(kw, lora_targets=["attention", "mlp"])
    gap = _mem(workload={"engine": "litgpt"}, **full).allocated_gib - _mem(workload={"engine": "hf-peft"},
                                                                             **full).allocated_gib
    assert gap == pytest.approx(3 * (4 * 4096 + 11008) * 1024 * 32 / GiB, rel=0.01)


def test_litgpt_computes_its_loss_in_chunks() -> None:
    """LitGPT's fine-tuning scripts call model(..., lm_head_chunk_size=128) and chunked_cross_entropy:
    ~4 B per logit, not the 12 B of a whole-batch fp32 loss (Gemma-2B: 1,024 x 256,000 x 8 B saved)."""
    kw: dict[str, Any] = dict(model="google/gemma-2b", batch=2, seq_len=512, method="lora", lora_rank=8,
                              lora_targets=["q", "v"], optimizer="adamw-fused", activation_checkpointing="none")
    lit = _mem(workload={"engine": "litgpt"}, **kw)
    plain = _mem(workload={"engine": "litgpt"}, chunked_loss=False, **kw)
    assert plain.allocated_gib - lit.allocated_gib == pytest.approx(1024 * 256_000 * 8 / GiB, rel=0.01)


def test_autocast_keeps_16_bit_weight_copies_and_fp32_layer_inputs() -> None:
    """bf16-mixed (fp32 weights under autocast): every matmul keeps the 16-bit cast of its weight for the
    backward, 2 B per matmul parameter when nothing is recomputed (Llama-2-7B: all but the embedding);
    under full recomputation only the head's copy stays, but the fp32 residual stream makes each kept
    layer input 4 B per element instead of 2."""
    arch = resolve_model("meta-llama/Llama-2-7b-hf")
    pb = arch.params()
    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", method="lora", lora_rank=8, lora_targets=["q", "v"],
                              seq_len=1024, optimizer="adamw-fused", chunked_loss=True)
    for ck, extra in (("none", 2 * (arch.total_params - pb.embedding)),
                      ("full", 32 * 2 * 1024 * 4096 + 2 * pb.lm_head)):
        amp = _mem(workload={"precision": "bf16-mixed"}, activation_checkpointing=ck, **kw)
        half = _mem(workload={"precision": "bf16"}, activation_checkpointing=ck, **kw)
        assert amp.activations_gib - half.activations_gib == pytest.approx(extra / GiB, rel=0.01), ck


def test_qlora_keeps_the_inputs_of_its_4bit_projections() -> None:
    """bitsandbytes' MatMul4Bit up to 0.43.1 keeps its input (`ctx.tensors = (A, B)`) even for a frozen weight;
    PyTorch's linear does not. With LitGPT's dropout adapters every quantised projection's input stays: attention
    input, o_proj input, MLP input (h each) and down-projection input (i): 2 x (3 x 4096 + 11,008) B per token and
    layer on Llama-2-7B, 1.42 GiB for 2 x 512 tokens. lit-gpt of 2023 (bitsandbytes 0.41, longest sample first):
    one copy; LitGPT 0.2-0.5.4 (bitsandbytes 0.42.0, shuffled batches): the previous micro-batch's copy is still
    held by its graph, two; bitsandbytes >= 0.43.2 (LitGPT 0.5.5 on, the current release): none. PEFT adapters
    without dropout on all seven projections keep those inputs already, so QLoRA adds none there."""
    from mlrig.estimators.memory import qlora_kept_input_copies

    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", batch=2, lora_rank=8, seq_len=512,
                              optimizer="adamw-fused", activation_checkpointing="none", chunked_loss=True)
    one = 2 * (3 * 4096 + 11008) * 1024 * 32 / GiB
    assert one == pytest.approx(1.42, abs=0.01)

    def act(method: str, version: str | None, engine: str = "litgpt", targets: tuple[str, ...] = ("q", "v")) -> float:
        wl: dict[str, Any] = {"engine": engine, "precision": "bf16"}
        if version:
            wl["engine_version"] = version
        return float(_mem(workload=wl, method=method, lora_targets=list(targets), **kw).activations_gib)

    lora = act("lora", None)
    assert act("qlora", "lit-gpt 8641822 (2023-10-16)") - lora == pytest.approx(one, rel=0.01)
    assert act("qlora", "2024-04") - lora == pytest.approx(2 * one, rel=0.01)
    assert act("qlora", "0.4.5") - lora == pytest.approx(2 * one, rel=0.01)
    assert act("qlora", "0.5.5") == pytest.approx(lora, rel=0.001)
    assert act("qlora", None) == pytest.approx(lora, rel=0.001)
    assert act("qlora", "2024-03", engine="hf-peft") - act("lora", None, engine="hf-peft") == pytest.approx(
        2 * (2 * 4096 + 11008) * 1024 * 32 / GiB, rel=0.01)  # one copy (HF's loop drops the graph each step);
    # PEFT's q/v adapters have no dropout, so their lora_A keeps the attention input already: o, MLP and down only
    assert act("qlora", "2024-03", engine="hf-peft", targets=("all-linear",)) == pytest.approx(
        act("lora", None, engine="hf-peft", targets=("all-linear",)), rel=0.001)
    assert qlora_kept_input_copies("torchtune", "2024-03") == 0  # torchao's linear_nf4 keeps only the weight
    assert qlora_kept_input_copies("litgpt", "2024-04", "full") == 1  # recomputation: one layer's worth at a time
    assert qlora_kept_input_copies("hf-trainer", None) == 0


def test_litgpt_and_bitsandbytes_eras_from_versions_and_months() -> None:
    """LitGPT 0.2.0 (2024-03-15) moved to a shuffled DataLoader and pinned bitsandbytes 0.42.0; 0.5.5 (2025-01-08)
    moved to bitsandbytes >= 0.44. bitsandbytes 0.43.2 (2024-07-23) stopped keeping the 4-bit matmul's input.
    A commit hash says nothing: the current release is assumed."""
    from mlrig.estimators.engines import bnb_keeps_4bit_input, litgpt_era

    assert litgpt_era("0.1.0") == litgpt_era("2023-10") == litgpt_era("lit-gpt 8641822 (2023-10-16)") == "lit-gpt"
    assert litgpt_era("0.2.0") == litgpt_era("0.5.4") == litgpt_era("2024-03") == litgpt_era("2024-12") == "bnb-0.42"
    assert litgpt_era("0.5.5") == litgpt_era("2025-01") == litgpt_era(None) == litgpt_era("43c44323b9") == "current"
    assert bnb_keeps_4bit_input("2024-06") and not bnb_keeps_4bit_input("2024-07")
    assert not bnb_keeps_4bit_input("4.38") and not bnb_keeps_4bit_input(None)  # a transformers release: not a date


def test_parallel_block_with_one_norm_keeps_the_shared_input_once() -> None:
    """Falcon-7B runs attention and MLP in parallel on one `input_layernorm` output, so its 4-bit q/k/v and
    MLP-up projections keep the same tensor: bitsandbytes keeps h + h (o input) + 4h (MLP down input) per token
    and layer, (2 x 4,544 + 18,176) x 2 B, not the 3h + i of a sequential block (Llama's separate MLP input)."""
    from mlrig.estimators.memory import qlora_kept_input_bytes_per_token

    falcon = resolve_model("tiiuae/falcon-7b")
    assert falcon.norms_per_layer == 1
    assert qlora_kept_input_bytes_per_token(falcon, ["q", "v"], dropout=True) == (2 * 4544 + 18_176) * 2
    llama = resolve_model("meta-llama/Llama-2-7b-hf")
    assert qlora_kept_input_bytes_per_token(llama, ["q", "v"], dropout=True) == (3 * 4096 + 11_008) * 2
    # an adapter without dropout on the MLP's up projection keeps the shared input already
    assert qlora_kept_input_bytes_per_token(falcon, ["up"], dropout=False) == (4544 + 18_176) * 2


def test_litgpt_qlora_matches_its_config_hub_peaks() -> None:
    """LitGPT config_hub (commit 43c44323b9, 1 x A10G, bitsandbytes 0.42.0, bnb.nf4 without double quantisation):
    llama-2-7b/qlora.yaml 13.68 GB and mistral-7b/qlora.yaml 14.29 GB peak (torch max_memory_allocated). Before
    the previous micro-batch's kept inputs, the fp16 dequantised head copy and the plan's NF4 variant were
    counted, mlrig said 0.84 and 0.87 of these."""
    for model, gb in (("meta-llama/Llama-2-7b-hf", 13.68), ("mistralai/Mistral-7B-v0.1", 14.29)):
        m = _mem(model=model, gpu="A10G", batch=2, seq_len=512, method="qlora", lora_rank=32, lora_targets=["q", "v"],
                 optimizer="paged-adamw", activation_checkpointing="none", global_batch_tokens=4096,
                 workload={"engine": "litgpt", "engine_version": "2024-04", "precision": "nf4-nodq"})
        assert m.allocated_gib == pytest.approx(gb * 1e9 / GiB, rel=0.06), model


def test_qlora_stores_the_plans_nf4_variant() -> None:
    """NF4 without double quantisation keeps an fp32 absmax per 64 weights (4.5 bits), with it 4.127 (QLoRA paper
    sec. 3): 0.373 / 8 B more per quantised weight. LitGPT's Resource Tables measured Llama-2-7B QLoRA at 14.14 GB
    (bnb.nf4) and 13.84 GB (bnb.nf4-dq): 0.28 GiB apart (LITGPT-0051/0052)."""
    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", gpu="A100-SXM4-40GB", seq_len=1304, method="qlora",
                              lora_rank=8, lora_targets=["q", "v"], optimizer="paged-adamw",
                              activation_checkpointing="none")
    wl = {"engine": "litgpt", "engine_version": "lit-gpt 8641822 (2023-10-16)"}
    nodq = _mem(workload={**wl, "precision": "nf4-nodq"}, **kw)
    dq = _mem(workload={**wl, "precision": "nf4"}, **kw)
    assert nodq.allocated_gib - dq.allocated_gib == pytest.approx((14.14 - 13.84) * 1e9 / GiB, rel=0.1)
    # any other precision given with QLoRA is stored as the paper's NF4 with double quantisation
    assert _mem(workload={**wl, "precision": "bf16"}, **kw).allocated_gib == pytest.approx(dq.allocated_gib, rel=1e-6)


def test_litgpt_keeps_its_own_output_head_for_tied_models() -> None:
    """LitGPT's GPT has its own lm_head beside the embedding, even for Gemma, whose checkpoint ties them:
    Gemma-2B LoRA on LitGPT carries 256,000 x 2,048 more 16-bit weights than on PEFT; full fine-tuning
    also trains that copy (its 2 B gradient and 4 B of bf16 AdamW moments)."""
    arch = resolve_model("google/gemma-2b")
    head = arch.params().embedding
    assert head == 256_000 * 2048
    kw: dict[str, Any] = dict(model="google/gemma-2b", seq_len=512, optimizer="adamw-bf16-fused",
                              activation_checkpointing="none", chunked_loss=True)
    lit = _mem(workload={"engine": "litgpt"}, method="lora", lora_rank=8, lora_targets=["q", "v"], **kw)
    peft = _mem(workload={"engine": "hf-peft"}, method="lora", lora_rank=8, lora_targets=["q", "v"], **kw)
    assert lit.weights_gib - peft.weights_gib == pytest.approx(2 * head / GiB, rel=0.01)
    full_lit = _mem(workload={"engine": "litgpt"}, method="full", **kw)
    full_tt = _mem(workload={"engine": "torchtune"}, method="full", **kw)
    assert full_lit.optimizer_gib - full_tt.optimizer_gib == pytest.approx(4 * head / GiB, rel=0.01)


def test_fsdp_cpu_offload_keeps_two_gathered_layers_not_two_shards() -> None:
    """FSDP with parameter offload copies a unit's shard to the GPU and all-gathers it: the resident set is
    two whole layers whatever the GPU count (Llama-3.1-70B in bf16: 2 x 131.4 GiB / 80 layers = 3.3 GiB)."""
    from mlrig import quant

    arch = resolve_model("llama-3.1-70b")
    full = quant.weight_bytes(arch, "bf16") / GiB
    for n in (2, 8):
        m = _mem("llama-3.1-70b", gpu="a100-sxm-80gb", count=n, method="full", optimizer="adamw-bf16-fused",
                 zero_stage=3, offload="params", activation_checkpointing="full", workload={"engine": "torchtune"})
        assert m.weights_gib == pytest.approx(2 * full / 80, rel=0.01), n


def test_hf_model_checkpointed_from_outside_keeps_its_kv_cache() -> None:
    """atorch's FSDP recipe checkpoints HF LlamaDecoderLayer with torch's apply_activation_checkpointing, so
    transformers leaves use_cache on and every layer's post-RoPE K and V stay in past_key_values: Llama-2-7B,
    4 x 4,096 tokens, 32 layers x 2 x 4,096 x 2 B = 8 GiB more than the same run under a framework that turns
    the cache off. The dlrover README's FSDP rows (ATORCH-0002 LoRA 32.57 GiB, ATORCH-0004 full 38.67 GiB on
    8 x A100-80GB) need it; atorch's DeepSpeed 3D pipeline path and runs without recomputation do not."""
    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", gpu="A100 SXM4 80GB", batch=4, count=8, seq_len=4096,
                              method="lora", lora_rank=16, lora_targets=["attention"], optimizer="adamw",
                              zero_stage=3, activation_checkpointing="full")
    amp = {"precision": "bf16-mixed"}
    atorch = _mem(workload={**amp, "engine": "atorch (FSDP via auto_accelerate)"}, **kw)
    other = _mem(workload={**amp, "engine": "deepspeed"}, **kw)
    pipeline = _mem(workload={**amp, "engine": "atorch + DeepSpeed 3D"}, **kw)
    assert atorch.activations_gib - other.activations_gib == pytest.approx(8.0, rel=0.001)
    assert pipeline.activations_gib == pytest.approx(other.activations_gib, rel=0.001)
    no_ck = dict(kw, activation_checkpointing="none")
    assert _mem(workload={**amp, "engine": "atorch"}, **no_ck).activations_gib == pytest.approx(
        _mem(workload={**amp, "engine": "deepspeed"}, **no_ck).activations_gib, rel=0.001)
    assert atorch.allocated_gib == pytest.approx(32.57, rel=0.20)


def test_litgpt_qlora_dequantises_its_4bit_output_head() -> None:
    """bitsandbytes dequantises a whole 4-bit matrix for each GEMM; LitGPT quantises the output head too, so its
    transient 16-bit copy is vocab x hidden, not the widest MLP projection. Lightning's plugin quantises from
    fp16, so the dequantised fp16 copy and its bf16 cast are alive together: 4 B per weight. Llama-2-7B:
    32,000 x 4,096 x 4 B against 4,096 x 11,008 x 2 B under torchtune (whose output projection stays bf16), and
    the head itself stored at 4.127 bits instead of 16; Gemma-2B 1.95 GiB."""
    from mlrig.estimators.memory import qlora_dequant_buffer_bytes

    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", batch=2, seq_len=512, method="qlora", lora_rank=8,
                              lora_targets=["q", "v"], optimizer="adamw-fused", activation_checkpointing="none",
                              chunked_loss=True)
    lit = _mem(workload={"engine": "litgpt", "precision": "bf16"}, **kw)
    tt = _mem(workload={"engine": "torchtune", "precision": "bf16"}, **kw)
    head = 32_000 * 4096
    nf4_bits = 4 + 8 / 64 + 32 / (64 * 256)
    expected = head * 4 - 4096 * 11_008 * 2 - head * (16 - nf4_bits) / 8
    assert lit.weights_gib - tt.weights_gib == pytest.approx(expected / GiB, rel=0.01)
    gemma = resolve_model("google/gemma-2b")
    assert qlora_dequant_buffer_bytes(gemma, "litgpt") / GiB == pytest.approx(256_000 * 2048 * 4 / GiB, rel=1e-6)
    assert qlora_dequant_buffer_bytes(gemma, "hf-peft") == 2048 * 16_384 * 2


def test_fsdp_root_unit_stays_gathered_where_only_blocks_are_wrapped() -> None:
    """PyTorch FSDP does not reshard the root unit after forward; frameworks that wrap only the decoder blocks
    (LitGPT, atorch, fsdp_qlora, an HF Trainer named as FSDP) leave the embedding and the head there, so both are
    whole on every rank at the head of backward: Llama-2-7B in bf16, 2 x 32,000 x 4,096 x 2 B = 0.49 GiB
    (fp32 under AMP: twice that). DeepSpeed ZeRO-3 releases them after use (an HF Trainer not named as FSDP may
    be either); torchtune is left out (its full configs shard them as units of their own); one GPU has no FSDP."""
    kw: dict[str, Any] = dict(model="meta-llama/Llama-2-7b-hf", gpu="a100-sxm-80gb", count=8, seq_len=2048,
                              method="lora", lora_rank=8, lora_targets=["q", "v"], optimizer="adamw-fused",
                              zero_stage=3, activation_checkpointing="full", chunked_loss=True)
    ends = 2 * 32_000 * 4096

    def alloc(engine: str, precision: str = "bf16", **over: Any) -> float:
        return float(_mem(workload={"engine": engine, "precision": precision}, **{**kw, **over}).allocated_gib)

    assert alloc("hf-trainer (FSDP)") - alloc("deepspeed") == pytest.approx(ends * 2 / GiB, rel=0.01)
    for engine in ("torchtune", "hf-trainer", "hf-trainer + DeepSpeed ZeRO-3 (not FSDP)"):
        assert alloc(engine) == pytest.approx(alloc("deepspeed"), rel=1e-6), engine
    assert alloc("hf-trainer (FSDP)", "bf16-mixed") - alloc("deepspeed", "bf16-mixed") == pytest.approx(
        ends * 4 / GiB, rel=0.01)
    assert alloc("hf-trainer (FSDP)", count=1, zero_stage=0) == pytest.approx(
        alloc("deepspeed", count=1, zero_stage=0), rel=1e-6)


def test_lora_target_names_are_read_once_per_list() -> None:
    """The LoRA target names are read once per list (`memory._read_lora_targets`): a training batch
    asks for the same few lists several times a plan. The answers stay those of the names: Llama-3.1-8B
    at rank 16 on q and v has 16 x (4096 + 4096) + 16 x (4096 + 1024) per layer over 32 layers
    (6,815,744: PEFT's count), and an unknown name is refused every time it is asked."""
    from mlrig.catalog.models import resolve_model
    from mlrig.errors import MlrigError
    from mlrig.estimators.memory import _lora_target_keys, _read_lora_targets, lora_params

    arch = resolve_model("llama-3.1-8b")
    targets = ["q_proj", "v_proj", "Q_PROJ"]
    before = _read_lora_targets.cache_info()
    assert lora_params(arch, 16, targets) == lora_params(arch, 16, list(targets)) == 6_815_744
    assert _read_lora_targets.cache_info().hits > before.hits
    assert _lora_target_keys(["attention", "lm_head", "q"]) == (("q", "k", "v", "o"), frozenset({"lm_head"}))
    for _ in range(2):
        with pytest.raises(MlrigError, match="unknown LoRA target 'qq'"):
            _lora_target_keys(["q", "qq"])
