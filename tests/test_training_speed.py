"""Training speed beyond compute: data-parallel gradient sync and ZeRO-Offload traffic."""

from __future__ import annotations

import pytest

from mlrig.planner import evaluate


def _train(gpu: str = "RTX 4090", count: int = 1, **training: object) -> tuple[float, str, str]:
    r = evaluate({"model": "llama-3.2-3b", "workload": {"task": "finetune", "batch_size": 1},
                  "training": {"seq_len": 2048, "method": "full", **training},
                  "hardware": {"gpu": gpu, "count": count}})
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


def _tok_s(precision: str = "bf16", method: str = "full", gpu: str = "h100-sxm-80gb", model: str = "llama-3-8b",
           batch: int = 8, training: dict[str, object] | None = None,
           hardware: dict[str, object] | None = None) -> float:
    r = evaluate({"model": model, "workload": {"task": "finetune", "precision": precision, "batch_size": batch},
                  "training": {"method": method, "seq_len": 2048, **(training or {})},
                  "hardware": {"gpu": gpu, **(hardware or {})}})
    assert r.performance is not None and r.performance.train_tokens_per_s
    return r.performance.train_tokens_per_s


def test_fp8_spellings_train_faster_but_far_from_the_fp8_peak() -> None:
    """Only the linear GEMMs run in FP8 (Transformer Engine, torchao float8): published FP8 runs gain
    1.15-1.35x over bf16, not the 2x of the peak."""
    bf16, fp8 = _tok_s("bf16"), _tok_s("fp8")
    assert _tok_s("e4m3") == fp8
    assert 1.1 < fp8 / bf16 < 1.6


def test_lora_and_qlora_step_time() -> None:
    """LoRA skips the frozen weights' weight-gradient GEMMs (6N -> 4N, + 2N recompute): faster than full
    but not 1.5x; QLoRA adds de-quantisation and stays close to LoRA (not 0.6x)."""
    full, lora, qlora = _tok_s(method="full"), _tok_s(method="lora"), _tok_s(method="qlora")
    assert full < lora < 1.45 * full
    assert 0.7 * lora < qlora < lora


def test_fp32_runs_at_the_non_tensor_rate_on_a_v100() -> None:
    """PyTorch leaves TF32 matmuls off and a V100 has none: fp32 training is far slower than fp16 when
    compute bound (the tensor peak is 8x the FP32 rate)."""
    fp16 = _tok_s("fp16", gpu="v100-sxm2-32gb", model="llama-3.2-1b", batch=4)
    fp32 = _tok_s("fp32", gpu="v100-sxm2-32gb", model="llama-3.2-1b", batch=4)
    assert fp32 < fp16 / 2


def test_h100_mfu_below_a100_mfu() -> None:
    """The bandwidth-bound kernels and flash attention lose more on an H100 (half the A100's
    bandwidth:compute ratio; FA2 at ~35 % of its peak): published bf16 runs reach 40-48 % MFU on H100
    against 55-60 % on A100."""
    def mfu(gpu: str) -> float:
        r = evaluate({"model": "llama-3-8b", "workload": {"task": "pretrain", "batch_size": 4},
                      "training": {"seq_len": 4096, "activation_checkpointing": "none", "zero_stage": 3},
                      "hardware": {"gpu": gpu, "count": 8}})
        assert r.performance is not None and r.performance.mfu
        return r.performance.mfu
    a100, h100 = mfu("a100-sxm-80gb"), mfu("h100-sxm-80gb")
    assert h100 < a100
    assert 0.50 < a100 < 0.65 and 0.38 < h100 < 0.52


def test_pipeline_bubble_and_tensor_parallel_cost_time() -> None:
    gbt = {"global_batch_tokens": 2048 * 8 * 4}
    dp = _tok_s(model="llama-3.1-70b", batch=1, training={**gbt, "zero_stage": 3}, hardware={"count": 8})
    tp = _tok_s(model="llama-3.1-70b", batch=1, training=gbt, hardware={"count": 8, "tensor_parallel": 8})
    pp = _tok_s(model="llama-3.1-70b", batch=1, training=gbt, hardware={"count": 8, "pipeline_parallel": 8})
    assert tp < dp and pp < dp
    from mlrig.estimators.training_speed import pipeline_bubble
    assert pipeline_bubble(8, 4) == pytest.approx(7 / 11)


def test_full_checkpointing_repeats_the_forward_tensor_parallel_all_reduces() -> None:
    """Megatron's full recompute re-runs each layer's forward in backward, with its two row-parallel
    all-reduces: 6 per layer instead of 4 (selective recompute: 4). Hand check on the Megatron-LM 2020 8B
    case (h 4096, 42 layers) at TP 8 on a DGX-A100 (NVSwitch, 300 GB/s per direction, T-meg20-021): per token
    6 x 2 x 7/8 x 4096 x 2 B x 42 = 3.6 MB, x 16,384 tokens = 59 GB a step: 0.20 s at 300 GB/s."""
    from mlrig.estimators.training_speed import training_speed
    from mlrig.planner import resolve_plan

    def tp_s(ck: str) -> float:
        r, _ = resolve_plan({"model": {"name": "GPT-2 8B", "hidden_size": 4096, "num_layers": 42, "num_heads": 32,
                                       "intermediate_size": 16384, "mlp": "plain", "vocab_size": 51200,
                                       "tie_word_embeddings": True},
                             "workload": {"task": "pretrain", "precision": "fp16", "batch_size": 16,
                                          "engine": "megatron"},
                             "training": {"method": "full", "seq_len": 1024, "activation_checkpointing": ck,
                                          "global_batch_tokens": 16384},
                             "hardware": {"gpu": "a100-sxm-40gb", "count": 8, "tensor_parallel": 8}})
        return float(training_speed(r, 16, 1024).tp_s)

    full, selective = tp_s("full"), tp_s("selective")
    assert full == pytest.approx(1.5 * selective)
    hand = 6 * 2 * 7 / 8 * 4096 * 2 * 42 * 16384 / 300e9
    assert full == pytest.approx(hand, rel=0.02)  # + 252 link latencies of a few microseconds


def test_power_cap_scales_compute_by_the_cube_root() -> None:
    from mlrig.estimators.training_speed import power_capped_tflops
    assert power_capped_tflops(100.0, 280, 350) == pytest.approx(100 * 0.8 ** (1 / 3))
    assert power_capped_tflops(100.0, 400, 350) == 100.0
    capped = _tok_s(gpu="rtx-3090", model="llama-3.2-1b", batch=4, hardware={"power_limit_w": 280})
    free = _tok_s(gpu="rtx-3090", model="llama-3.2-1b", batch=4)
    assert 0.85 * free < capped < free


def test_a_geforce_power_cap_bites_only_below_what_training_draws() -> None:
    """A GeForce card training at full clocks draws ~400/450 of its board power (Answer.AI's 4090s): a
    3090 (350 W) capped at 280 W keeps (280 / 311)^(1/3) of its tensor rate, not (280 / 350)^(1/3); a cap at
    320 W, above the draw, costs nothing. Full-rate cards (A40) are taken to draw their board power."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.estimators.training_speed import _train_peak
    from mlrig.quant import BF16

    g3090 = resolve_gpu("RTX 3090")
    assert g3090.tdp_w == 350
    full = _train_peak(g3090, BF16, None)[0]
    assert _train_peak(g3090, BF16, 280)[0] == pytest.approx(full * (280 / (350 * 400 / 450)) ** (1 / 3))
    assert _train_peak(g3090, BF16, 320)[0] == pytest.approx(full)
    a40 = resolve_gpu("A40")
    assert _train_peak(a40, BF16, 280)[0] == pytest.approx(_train_peak(a40, BF16, None)[0] * (280 / 300) ** (1 / 3))
    # the RTX A6000 (GA102) capped at 280 W meets the GA10x board-power bound first (efficiency.BOARD_TFLOP_PER_J):
    # 0.42 x 280 / 0.80 = 147.0, below the cube law's 154.8 x (280 / 300)^(1/3) = 151.3
    a6000 = resolve_gpu("RTX A6000")
    assert _train_peak(a6000, BF16, 280)[0] == pytest.approx(147.0)


def _calibration_plan(row_id: str) -> tuple[dict[str, object], float]:
    import json
    from pathlib import Path

    import mlrig
    for f in (Path(mlrig.__file__).parent / "data" / "calibration").glob("*.jsonl"):
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip() and f'"{row_id}"' in line:
                row = json.loads(line)
                if row["id"] == row_id:
                    return row["plan"], float(row["value"])
    raise AssertionError(row_id)


def test_hf_llama4_runs_every_expert_on_every_token() -> None:
    """transformers' Llama4TextMoe multiplies the input by the router score and runs all 16 experts on
    all tokens, so under an HF-modelling framework (axolotl) Llama-4 Scout costs the GEMMs of its 108B
    parameters, not its 17B active ones; a framework with its own grouped-GEMM MoE (torchtune) does not."""
    from mlrig.catalog.models import resolve_model
    from mlrig.estimators import efficiency as eff

    def step_s(engine: str) -> float:
        r = evaluate({"model": "meta-llama/Llama-4-Scout-17B-16E",
                      "workload": {"task": "finetune", "precision": "bf16", "batch_size": 1, "engine": engine},
                      "training": {"method": "lora", "seq_len": 4096, "activation_checkpointing": "full"},
                      "hardware": {"gpu": "A100 SXM4 80GB", "count": 1}})
        assert r.performance is not None and r.performance.step_time_s
        return r.performance.step_time_s

    pb = resolve_model("meta-llama/Llama-4-Scout-17B-16E").params()
    extra = pb.experts_routed - pb.experts_routed_active  # 15 of 16 experts' weights, ~90.6e9
    # on an A100: no Hopper factor for the HF stack (`hf_stack_on_hopper`), the frameworks differ only here
    gemm_tflops = eff.TRAIN_GEMM_EFF["hbm"] * 5120 / (5120 + eff.TRAIN_GEMM_WIDTH_D0) * 312.0
    # LoRA: 4N (no weight gradients of frozen weights) + 2N recomputed under full checkpointing
    hand = 6.0 * extra * 4096 / (gemm_tflops * 1e12)
    assert abs((step_s("axolotl") - step_s("torchtune")) - hand) < 0.02 * hand


def test_axolotl_llama4_scout_qlora_against_its_readme() -> None:
    """axolotl's Llama-4 README: Scout QLoRA on one H100, 519 tokens/s (AXOLOTL-0001); mlrig said
    ~2,000 when it priced only the 17B active parameters."""
    plan, measured = _calibration_plan("AXOLOTL-0001")
    r = evaluate(plan)
    assert r.performance is not None and r.performance.train_tokens_per_s
    assert 0.6 < r.performance.train_tokens_per_s / measured < 1.6


def _qlora_70b(gpu: str, count: int, batch: int, engine: str = "fsdp_qlora") -> float:
    """Tokens/s per GPU of Answer.AI's fsdp_qlora Llama-2-70B QLoRA setup (FSDPQLORA-0047..0050)."""
    r = evaluate({"model": "meta-llama/Llama-2-70b-hf",
                  "workload": {"task": "finetune", "precision": "nf4", "batch_size": batch, "engine": engine},
                  "training": {"method": "qlora", "lora_rank": 64, "lora_targets": ["attention", "mlp"],
                               "seq_len": 2048, "activation_checkpointing": "full", "zero_stage": 3},
                  "hardware": {"gpu": gpu, "count": count}})
    assert r.performance is not None and r.performance.train_tokens_per_s
    return r.performance.train_tokens_per_s / count


def test_hf_qlora_on_h100_gains_1_9x_over_a100_not_the_3x_of_the_peaks() -> None:
    """Answer.AI's fsdp_qlora table: the same Llama-2-70B QLoRA script runs 414 tokens/s per GPU on 4x A100
    40GB SXM at batch 4 and 786 on 4x H100 SXM at batch 8 (FSDPQLORA-0048, -0050): 1.9x, where the bf16 peaks
    differ 3.2x. mlrig said 1,303 for the H100 (1.66x too fast) before `TRAIN_GEMM_REL_EFF_HF_HOPPER`. A stack
    with Transformer Engine (NeMo) keeps the full rate on the same H100."""
    from mlrig.estimators import efficiency as eff

    a100, h100 = _qlora_70b("A100 40GB SXM", 4, 4), _qlora_70b("H100 80GB SXM", 4, 8)
    assert abs(h100 / 786.0 - 1) < 0.10 and abs(a100 / 414.1 - 1) < 0.12
    assert 1.6 < h100 / a100 < 2.3
    # the factor scales the GEMMs only: NeMo (Transformer Engine) on the same H100 plan is faster by about
    # its inverse on the GEMM-bound part of the step, and the A100 is untouched by it
    nemo = _qlora_70b("H100 80GB SXM", 4, 8, engine="nemo")
    assert 1.4 < nemo / h100 < 1 / eff.TRAIN_GEMM_REL_EFF_HF_HOPPER
    assert _qlora_70b("A100 40GB SXM", 4, 4, engine="nemo") == pytest.approx(a100, rel=0.02)


def test_qlora_dequantisation_moves_nf4_in_and_bf16_out_per_gemm() -> None:
    """bitsandbytes de-quantises each NF4 weight into a bf16 copy before every GEMM that uses it: read 0.5 B
    + an fp32 absmax per 64 values (1/16 B), write 2 B; the GEMM's read of that copy is the GEMM's own (as in
    LoRA). Hand check on Llama-2-7B (6.74e9 parameters) on one RTX 4090 (1,008 GB/s at 80 %, the kernel at
    half of that), full checkpointing: forward, recompute and backward = 3 passes per micro-batch."""
    from mlrig.catalog.models import resolve_model
    from mlrig.estimators.training_speed import training_speed
    from mlrig.planner import resolve_plan

    r, _ = resolve_plan({"model": "meta-llama/Llama-2-7b-hf",
                         "workload": {"task": "finetune", "precision": "nf4", "batch_size": 2},
                         "training": {"method": "qlora", "lora_rank": 8, "seq_len": 2048,
                                      "activation_checkpointing": "full"},
                         "hardware": {"gpu": "RTX 4090", "count": 1}})
    n = float(resolve_model("meta-llama/Llama-2-7b-hf").params().total)
    hand = 3 * 2.5625 * n / (1008e9 * 0.80 * 0.5)
    assert float(training_speed(r, 2, 2048).qlora_s) == pytest.approx(hand, rel=1e-3)
    assert 0.12 < hand < 0.14


def test_geforce_fsdp_over_pcie_hides_none_of_its_all_gathers() -> None:
    """GeForce cards have no PCIe peer-to-peer, and Answer.AI's same-rig FSDP/DDP pairs show the whole
    all-gather on top of the step: 2x RTX 4090 FSDP LoRA of Llama-2-7B exposes all of it (hand check:
    ring over 2 ranks moves (2-1)/2 x (LoRA grads + 2 x 13.5 GB of bf16 weights) at NCCL's 24.5 GB/s over
    PCIe 4.0 x16, plus 2 latency steps); the same setup on RTX A6000s (workstation cards, with P2P) still
    hides 70 % of it: the bare 'pcie4-x16' takes each card's own transport (`interconnects.with_card_transport`),
    the rule inference's all-reduce follows too, and 'pcie4-x16-nop2p' (P2P off, e.g. a VM) exposes it all."""
    from mlrig.estimators.training_speed import DP_OVERLAP, _adapter_params, training_speed
    from mlrig.planner import resolve_plan

    def parts(gpu: str, link: str = "pcie4-x16") -> tuple[float, float, float]:
        r, _ = resolve_plan({"model": "meta-llama/Llama-2-7b-hf",
                          "workload": {"task": "finetune", "precision": "bf16", "batch_size": 4, "engine": "hf-peft"},
                          "training": {"method": "lora", "lora_rank": 64, "lora_targets": ["attention", "mlp"],
                                       "seq_len": 2048, "activation_checkpointing": "full", "zero_stage": 3},
                          "hardware": {"gpu": gpu, "count": 2, "interconnect": link}})
        f = training_speed(r, 4, 2048)
        volume = 0.5 * (2.0 * _adapter_params(r.arch, 64, ["attention", "mlp"]) + 2.0 * r.weight_bytes)
        return float(f.comm_s), volume / 24.5e9 + 2 * 12e-6, float(f.busy_s)

    comm, whole, _ = parts("RTX 4090")
    assert abs(comm - whole) < 1e-3 * whole and whole > 0.4
    comm_ws, whole_ws, busy = parts("RTX A6000")
    assert abs(comm_ws - (whole_ws - min(DP_OVERLAP * whole_ws, busy))) < 1e-3 * whole_ws
    comm_off, whole_off, _ = parts("RTX A6000", "pcie4-x16-nop2p")
    assert abs(comm_off - whole_off) < 1e-3 * whole_off and whole_off == pytest.approx(whole_ws)


def test_foreach_adamw_step_under_hf_costs_more_bandwidth_than_fused() -> None:
    """PyTorch's foreach AdamW + gradient clipping (HF-modelling frameworks) make ~8 passes over the
    parameters; bf16 weights and moments: 4x2 + 12x2 + 2x2 + 3x2 = 42 B/param against 30 fused
    (torchtune). Hand check on a full fine-tune of Llama-3.2-3B (3.2127e9 params) on an L40S
    (864 GB/s at 80 %): the step times differ by 12 B x 3.2127e9 / 691.2e9 = 0.0558 s."""
    from mlrig import quant
    from mlrig.estimators.training_speed import optimizer_step_bytes

    bf16 = quant.parse_precision("bf16")
    assert optimizer_step_bytes("adamw-bf16", bf16, "hf-peft") == 42.0
    assert optimizer_step_bytes("adamw-bf16", bf16, "torchtune") == 30.0
    assert optimizer_step_bytes("paged-adamw-8bit", bf16, "hf-trainer") == 30.0
    # AMP (fp32 weights, fp32 gradients, fp32 moments): 16 + 48 + 8 + 12
    assert optimizer_step_bytes("adamw", quant.parse_precision("bf16-mixed"), "hf-trainer") == 84.0

    def step_s(engine: str) -> float:
        r = evaluate({"model": "meta-llama/Llama-3.2-3B",
                      "workload": {"task": "finetune", "precision": "bf16", "batch_size": 4, "engine": engine},
                      "training": {"method": "full", "optimizer": "adamw-bf16", "seq_len": 210,
                                   "activation_checkpointing": "none", "chunked_loss": False},
                      "hardware": {"gpu": "L40S", "count": 1}})
        assert r.performance is not None and r.performance.step_time_s
        return r.performance.step_time_s

    assert abs((step_s("hf-peft") - step_s("torchtune")) - 12 * 3.2127e9 / (864e9 * 0.8)) < 2e-3


def test_nvfp4_trains_its_linear_gemms_at_the_fp4_rate_on_blackwell_only() -> None:
    """MLPerf Training v5.1 Llama-2-70B LoRA in NVFP4 on 8x B200: 7,803 tokens/s per GPU (MLPERF-FT51-0006),
    1.26x its FP8 run (MLPERF-FT51-0007); mlrig priced NVFP4 at the bf16 rate (0.44x the published figure).
    Without an FP4 tensor rate (H100) an FP4 precision trains at the bf16 rate."""
    plan, measured = _calibration_plan("MLPERF-FT51-0006")
    r = evaluate(plan)
    assert r.performance is not None and r.performance.train_tokens_per_s
    assert 0.65 < r.performance.train_tokens_per_s / 8 / measured < 1.35
    fp8_plan, _ = _calibration_plan("MLPERF-FT51-0007")
    fp8 = evaluate(fp8_plan).performance
    assert fp8 is not None and fp8.train_tokens_per_s
    assert 1.1 < r.performance.train_tokens_per_s / fp8.train_tokens_per_s < 2.0
    h100 = {"gpu": "H100 SXM5 80GB", "count": 8}
    nv, bf = ({**plan, "workload": {**plan["workload"], "precision": p}, "hardware": h100}  # type: ignore[dict-item]
              for p in ("nvfp4", "bf16"))
    pn, pb = evaluate(nv).performance, evaluate(bf).performance
    assert pn is not None and pb is not None and pn.train_tokens_per_s == pb.train_tokens_per_s


def test_qlora_parameter_offload_streams_the_nf4_weights_not_bf16() -> None:
    """FSDP-QLoRA with CPU offload moves the quantised shards: the per-step parameter traffic over each
    GPU's PCIe link is twice its NF4 shard (forward and backward; half the model on each of 2 GPUs),
    ~8x less than 4 B/param of bf16 weights."""
    from mlrig import quant
    from mlrig.catalog.models import resolve_model
    from mlrig.estimators.training_speed import training_speed
    from mlrig.planner import resolve_plan

    def offload_s(offload: str) -> float:
        r, _ = resolve_plan({"model": "meta-llama/Llama-2-70b-hf",
                             "workload": {"task": "finetune", "precision": "nf4", "batch_size": 2,
                                          "engine": "fsdp_qlora"},
                             "training": {"method": "qlora", "lora_rank": 64, "seq_len": 2048,
                                          "activation_checkpointing": "full", "zero_stage": 3, "offload": offload},
                             "hardware": {"gpu": "RTX 4090", "count": 2, "interconnect": "pcie4-x16"}})
        return float(training_speed(r, 2, 2048).offload_s)

    nf4_bytes = float(quant.weight_bytes(resolve_model("meta-llama/Llama-2-70b-hf"), quant.NF4))
    assert abs((offload_s("params") - offload_s("optimizer")) - 2 * nf4_bytes / 2 / 31.5e9) < 1e-6
    assert 2 * nf4_bytes / 2 / 31.5e9 < 1.5  # the whole model in bf16 would be ~8.9 s


def test_transformer_engine_cudnn_attention_on_hopper() -> None:
    """NVIDIA's cuDNN 9 post: NeMo + Transformer Engine Llama-2-70B LoRA on 8x H200 runs 1.11x faster end to
    end with cuDNN attention in bf16 than with FlashAttention-2. NeMo's plan against the same plan under
    a FlashAttention-2 framework (llm-foundry) gives that ratio; on an A100 (FA2 already near the GEMMs'
    efficiency) and on an MI300X (no cuDNN) the engines price attention alike."""
    plan, _ = _calibration_plan("MLPERF-FT41-0004")  # Llama-2-70B LoRA, 8x H200 SXM, 8192-token sequences

    def tok_s(engine: str, gpu: str | None = None) -> float:
        hardware = {**plan["hardware"], "gpu": gpu} if gpu else plan["hardware"]  # type: ignore[dict-item]
        r = evaluate({**plan, "workload": {**plan["workload"], "engine": engine},  # type: ignore[dict-item]
                      "hardware": hardware})
        assert r.performance is not None and r.performance.train_tokens_per_s
        return r.performance.train_tokens_per_s

    assert 1.08 < tok_s("nemo") / tok_s("llm-foundry") < 1.14
    assert tok_s("nemo", "A100 SXM4 80GB") == tok_s("llm-foundry", "A100 SXM4 80GB")
    assert tok_s("nemo", "MI300X") == tok_s("llm-foundry", "MI300X")


def test_collectives_over_pcie_run_at_nccls_measured_bus_bandwidth() -> None:
    """nccl-tests all_reduce_perf over PCIe 4.0 x16 measures 24.5 GB/s bus bandwidth (tinygrad's six-4090
    box), 78 % of the link: the tensor-parallel all-reduces of a TP-2 run over PCIe take 31.5 / 24.5 of the
    link-rate time (hand check for Llama-2-7B on 2x L40S without checkpointing: 4 all-reduces per layer of
    b s h 16-bit values, ring (2-1)/2 x 2, 32 layers, 2 x 2048 tokens)."""
    from mlrig.estimators.training_speed import training_speed
    from mlrig.planner import resolve_plan

    r, _ = resolve_plan({"model": "meta-llama/Llama-2-7b-hf",
                         "workload": {"task": "finetune", "precision": "bf16", "batch_size": 2, "engine": "nemo"},
                         "training": {"method": "full", "seq_len": 2048, "activation_checkpointing": "none"},
                         "hardware": {"gpu": "L40S", "count": 2, "tensor_parallel": 2}})
    f = training_speed(r, 2, 2048)
    bytes_ = 4 * 2.0 * 0.5 * 4096 * 2.0 * 32 * 2 * 2048
    assert abs(float(f.tp_s) - (bytes_ / 24.5e9 + 4 * 32 * 1 * 12e-6)) < 1e-3


def _fsdp_qlora_lora_7b(gpu: str, count: int, batch: int, seq: int, zero_stage: int, interconnect: str,
                        power_limit_w: float | None = None) -> float:
    """Whole-job tokens/s of Answer.AI's fsdp_qlora train.py setup (Llama-2-7B LoRA rank 64 on all linears,
    bf16, gradient checkpointing) as its benchmark note ran it."""
    r = evaluate({"model": "meta-llama/Llama-2-7b-hf",
                  "workload": {"task": "finetune", "precision": "bf16", "batch_size": batch, "engine": "fsdp_qlora"},
                  "training": {"method": "lora", "lora_rank": 64, "lora_targets": ["attention", "mlp"],
                               "seq_len": seq, "optimizer": "adamw", "activation_checkpointing": "full",
                               "zero_stage": zero_stage},
                  "hardware": {"gpu": gpu, "count": count, "interconnect": interconnect,
                               "power_limit_w": power_limit_w}})
    assert r.performance is not None and r.performance.train_tokens_per_s
    return r.performance.train_tokens_per_s


def test_geforce_training_gemms_reach_their_half_rate_peak() -> None:
    """GeForce cards' catalog rate is the half-rate FP32-accumulate one, which their GEMMs reach
    (efficiency.TRAIN_GEMM_EFF_GEFORCE); full-rate GDDR parts keep the memory class's figure. Published:
    Answer.AI's 2x RTX 4090 (PCIe 4.0 x16, DDP) Llama-2-7B LoRA at batch 4, context 2048, 4,799 tokens/s
    for the job (benchmarks_03_2024.md: 2,097,152 tokens in 437 s); with the GDDR figure mlrig said ~0.86x."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.estimators import efficiency as eff
    from mlrig.estimators.training_speed import train_gemm_eff

    assert train_gemm_eff(resolve_gpu("RTX 4090"), "gddr") == eff.TRAIN_GEMM_EFF_GEFORCE
    assert train_gemm_eff(resolve_gpu("RTX 6000 Ada"), "gddr") == eff.TRAIN_GEMM_EFF["gddr"]
    assert train_gemm_eff(resolve_gpu("L40S"), "gddr") == eff.TRAIN_GEMM_EFF["gddr"]
    tok_s = _fsdp_qlora_lora_7b("RTX 4090", 2, 4, 2048, 0, "pcie4-x16")
    assert abs(tok_s / 4799 - 1) < 0.10


def test_batch_one_fsdp_on_the_dual_3090_rig_is_bound_by_its_x4_link() -> None:
    """The 'basement rig' of Answer.AI's benchmark note: FSDP gathers the bf16 Llama-2-7B (13.5 GB) twice a
    step over a PCIe 3.0 x4 link: LoRA at batch 1, context 512 ran 2,597 s for 1,024 samples over 2 GPUs
    (202 tokens/s for the job; cards capped at 280 W). The link, not the GPUs, sets the speed: a x8 link
    would be ~1.8x faster."""
    x4 = _fsdp_qlora_lora_7b("RTX 3090", 2, 1, 512, 3, "pcie3-x4", power_limit_w=280)
    x8 = _fsdp_qlora_lora_7b("RTX 3090", 2, 1, 512, 3, "pcie3-x8", power_limit_w=280)
    assert abs(x4 / (1024 * 512 / 2597) - 1) < 0.15
    assert x8 > 1.6 * x4


@pytest.mark.parametrize(("gpu", "expected"), [
    ("H100 SXM", True), ("B200", True),  # datacentre Hopper / Blackwell: the H100 rows' factor applies
    ("RTX 5090", False), ("RTX PRO 6000", False), ("A100 80GB", False),  # GB20x and Ampere: it does not
])
def test_hf_hopper_factor_only_on_datacentre_hopper_and_newer(gpu: str, expected: bool) -> None:
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.estimators.training_speed import hf_stack_on_hopper

    assert hf_stack_on_hopper(resolve_gpu(gpu), "axolotl") is expected
    assert hf_stack_on_hopper(resolve_gpu(gpu), "nemo") is False  # Transformer Engine stacks never


def test_qlora_on_rtx_5090_is_not_slowed_by_the_hopper_factor() -> None:
    """The same axolotl QLoRA plan on an RTX 5090 is not priced at 0.57 of its GEMM rate."""
    def plan(engine: str) -> dict[str, object]:
        return {"model": {"name": "llama-3.1-8b"},
                "workload": {"task": "finetune", "precision": "nf4", "batch_size": 1, "engine": engine},
                "training": {"method": "qlora", "seq_len": 2048}, "hardware": {"gpu": "RTX 5090"}}
    hf = evaluate(plan("axolotl")).performance
    other = evaluate(plan("torchtune")).performance
    assert hf is not None and other is not None
    assert "HF-modelling stacks on Hopper" not in (hf.explanation or "")
    assert hf.train_tokens_per_s == pytest.approx(other.train_tokens_per_s, rel=0.2)


def _scicom_full_finetune(gpu: str) -> dict[str, object]:
    """Scicom small-ablation 'simple-throughput-multigpus' (commit 9d56463, 2025-11-25): Qwen3-0.6B-Base full
    training, bf16 weights and AdamW, DDP on 4 GPUs, 4,096-token rows, HF Trainer, gradient checkpointing;
    measured 292k tokens/s on 4x H100 SXM (micro-batch 8) and 90k on 4x L40S (micro-batch 16)."""
    return {"model": {"name": "Qwen/Qwen3-0.6B"},
            "workload": {"task": "finetune", "precision": "bf16", "engine": "hf-trainer",
                         "batch_size": 8 if "H100" in gpu else 16},
            "training": {"method": "full", "seq_len": 4096, "optimizer": "adamw-bf16",
                         "activation_checkpointing": "full"},
            "hardware": {"gpu": gpu, "count": 4}}


def test_hopper_factor_is_for_qlora_only() -> None:
    """The HF-on-Hopper factor came from bitsandbytes QLoRA rows; bf16 full fine-tuning through the same HF
    Trainer on H100s measured at the HBM class's own rate (SCICOM-0004: 292k tokens/s; with the factor
    mlrig said 129k, 0.44x)."""
    from mlrig.catalog.gpus import resolve_gpu
    from mlrig.estimators.training_speed import hf_stack_on_hopper

    h100 = resolve_gpu("H100 SXM")
    assert hf_stack_on_hopper(h100, "hf-trainer", "qlora") is True
    assert hf_stack_on_hopper(h100, "hf-trainer", "full") is False
    assert hf_stack_on_hopper(h100, "hf-peft", "lora") is False
    perf = evaluate(_scicom_full_finetune("H100 SXM")).performance
    assert perf is not None and perf.train_tokens_per_s is not None
    assert "HF-modelling stacks on Hopper" not in (perf.explanation or "")
    # No absolute band against SCICOM-0004 any more: the run's attention spans its packed documents, whose
    # lengths the source does not state (the row is `anomaly`; priced over 4,096-token spans it is 0.51x).


def test_l40s_to_h100_full_finetune_ratio() -> None:
    """The same Scicom script on 4x L40S (GDDR, full-rate workstation class) measured 90k tokens/s; the
    H100 / L40S ratio measured 3.2x (292k / 90k). Only the ratio is checked: both runs' attention spans
    their packed documents of unstated length (SCICOM-0003/-0004 are `anomaly`), which moves each absolute
    figure by up to 2x but both GPUs alike."""
    l40s = evaluate(_scicom_full_finetune("L40S")).performance
    h100 = evaluate(_scicom_full_finetune("H100 SXM")).performance
    assert l40s is not None and h100 is not None
    assert l40s.train_tokens_per_s is not None and h100.train_tokens_per_s is not None
    assert 1.8 < h100.train_tokens_per_s / l40s.train_tokens_per_s < 3.6
