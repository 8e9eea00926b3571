"""Training keys published runs need, added by branch s37b-trainkeys: `training.fp8_dot_product_attention` (Transformer
Engine's FP8 attention, cuDNN's FP8 fused attention; eff.TRAIN_FP8_ATTN_SPEEDUP) and `training.enable_cuda_graph`
(micro-batches replayed from CUDA graphs: no per-micro-batch launch cost, training_speed.graphed_microbatches), and the
MLPerf rows whose logs / launch configs state them."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from mlrig.catalog.gpus import resolve_gpu
from mlrig.cli import app
from mlrig.estimators import efficiency as eff
from mlrig.estimators.training_speed import fp8_attention_applies
from mlrig.planner import evaluate

CALIBRATION = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "calibration"

# Llama-3.1-8B: 32 layers, d_model 4096, 32 query heads of 128 (query width 4096). H100 SXM: 989.4 TFLOPS dense
# bf16 (catalog); HBM training GEMMs 0.72 x 4096 / (4096 + 220); NeMo's cuDNN attention on Hopper at 0.29 of that.
LAYERS, Q_WIDTH, SEQ = 32, 4096, 8192
GEMM_EFF = 0.72 * 4096 / (4096 + 220)
PEAK_BF16_FLOPS = 989.4e12


def _plan(engine: str = "nemo", gpu: str = "H100 SXM", count: int = 1, gbt: int = SEQ,
          **training: Any) -> dict[str, Any]:
    return {"model": {"name": "meta-llama/Llama-3.1-8B"},
            "workload": {"task": "pretrain", "precision": "bf16", "batch_size": 1, "engine": engine},
            "training": {"method": "full", "seq_len": SEQ, "activation_checkpointing": "none",
                         "global_batch_tokens": gbt, **training},
            "hardware": {"gpu": gpu, "count": count}}


def _step_s(plan: dict[str, Any]) -> float:
    r = evaluate(plan)
    assert r.performance is not None and r.performance.step_time_s
    return r.performance.step_time_s


def test_fp8_attention_shortens_the_step_by_the_attention_time_it_saves() -> None:
    """Hand check: causal flash attention executes 4 x 4096 x (32 x 8192 / 2) = 2.147 GFLOP per token forward, x 3
    with its backward = 6.442 GFLOP; 8192 tokens in the step = 5.277e13 FLOP, at 0.29 x 0.68328 x 989.4 TFLOPS =
    196.05 TFLOPS: 0.2692 s in BF16; FP8 runs it 1.1x faster (0.2447 s), 0.0245 s less."""
    assert eff.TRAIN_FP8_ATTN_SPEEDUP == 1.1
    assert eff.TRAIN_ATTN_REL_EFF["cudnn-hopper+"] == 0.29
    flops = 3 * 4 * Q_WIDTH * LAYERS * SEQ / 2 * SEQ
    bf16_s = flops / (0.29 * GEMM_EFF * PEAK_BF16_FLOPS)
    assert bf16_s == pytest.approx(0.2692, abs=1e-4)
    saved = _step_s(_plan()) - _step_s(_plan(fp8_dot_product_attention=True))
    assert saved == pytest.approx(bf16_s * (1 - 1 / 1.1), rel=1e-6)
    assert saved == pytest.approx(0.0245, abs=1e-4)


def test_fp8_attention_only_where_cudnn_fp8_attention_runs() -> None:
    """cuDNN's FP8 fused attention: Hopper and datacentre Blackwell with the cuDNN kernel (NeMo's default there);
    not an A100 (no FP8 tensor cores), an L40S (Ada: cuDNN SDPA has no FP8 there), FlashAttention-2, nor a GeForce
    Blackwell card. Where it does not run the step is the BF16 one and a note says so."""
    assert fp8_attention_applies(resolve_gpu("H100 SXM"), "nemo", None)
    assert fp8_attention_applies(resolve_gpu("B200"), "megatron", None)
    assert not fp8_attention_applies(resolve_gpu("H100 SXM"), "nemo", "flash_attention_2")
    assert not fp8_attention_applies(resolve_gpu("H100 SXM"), "hf", None)  # FlashAttention-2 by default
    assert not fp8_attention_applies(resolve_gpu("L40S"), "nemo", None)
    assert not fp8_attention_applies(resolve_gpu("RTX 5090"), "nemo", None)
    a100 = _plan(gpu="A100 80GB")
    assert _step_s({**a100, "training": {**a100["training"], "fp8_dot_product_attention": True}}) == _step_s(a100)
    notes = evaluate({**a100, "training": {**a100["training"], "fp8_dot_product_attention": True}}).notes
    assert any("fp8_dot_product_attention" in n and "priced in BF16" in n for n in notes)
    assert not any("fp8_dot_product_attention" in n for n in evaluate(_plan(fp8_dot_product_attention=True)).notes)


def test_fp8_attention_end_to_end_as_the_cudnn_blog_measured() -> None:
    """NVIDIA's cuDNN 9 blog measured a Llama-2-70B LoRA fine-tune in NeMo + TE on an 8-GPU H200 node at 1.11x with
    cuDNN SDPA in BF16 and 1.15x in FP8: 1.036x from switching attention to FP8. On MLPERF-FT40-0004's setup (that
    task, model and node) the switch gives the same, not the 1.5x of the kernels alone (1.14x end to end)."""
    row = next(json.loads(line) for line in (CALIBRATION / "finetune_mlperf_llama2_70b_lora.jsonl").open()
               if '"MLPERF-FT40-0004"' in line)
    plan = row["plan"]
    assert "fp8_dot_product_attention" not in plan["training"]  # its config: attention not in FP8
    on = {**plan, "training": {**plan["training"], "fp8_dot_product_attention": True}}
    gain = _step_s(plan) / _step_s(on)
    assert gain == pytest.approx(1.15 / 1.11, abs=0.005)


def test_cuda_graphs_drop_the_per_micro_batch_launch_cost_not_the_per_step_one() -> None:
    """Four micro-batches of 8192 tokens per step on one GPU: eager pays 0.05 s per step + 4 x 0.01 s of launches;
    replayed from CUDA graphs only the 0.05 s (the optimizer and host work outside the graphs)."""
    assert (eff.TRAIN_STEP_OVERHEAD_S, eff.TRAIN_MICROBATCH_OVERHEAD_S) == (0.05, 0.01)
    eager, graphed = _plan(gbt=4 * SEQ), _plan(gbt=4 * SEQ, enable_cuda_graph=True)
    assert _step_s(eager) - _step_s(graphed) == pytest.approx(0.04, abs=1e-9)
    # NeMo's default is eager; Surogate's whole-step graph is the default there and can be turned off
    assert _step_s(_plan(gbt=4 * SEQ, enable_cuda_graph=False)) == _step_s(eager)
    sur, sur_eager = _plan("surogate", gbt=4 * SEQ), _plan("surogate", gbt=4 * SEQ, enable_cuda_graph=False)
    assert _step_s(sur_eager) - _step_s(sur) == pytest.approx(0.04, abs=1e-9)


def test_plan_flags_set_the_training_keys() -> None:
    args = ["plan", "meta-llama/Llama-3.1-8B", "--gpu", "H100 SXM", "--task", "pretrain", "--engine", "nemo",
            "--seq-len", "8192", "--no-checkpointing", "--json"]
    base = json.loads(CliRunner().invoke(app, args).stdout)
    both = json.loads(CliRunner().invoke(app, [*args, "--fp8-dot-product-attention", "--enable-cuda-graph"]).stdout)
    assert both["performance"]["train_tokens_per_s"] > base["performance"]["train_tokens_per_s"]


GRAPHED_ROWS = 27  # rows with enable_cuda_graph = true in the two MLPerf files


def _mlperf_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for name in ("pretrain_mlperf.jsonl", "finetune_mlperf_llama2_70b_lora.jsonl")
            for line in (CALIBRATION / name).open()]


def test_mlperf_rows_state_fp8_attention_where_their_logs_or_configs_do() -> None:
    """A row whose note quotes FP8 attention on (FP8_DPA=1, fp8_dot_product_attention=True, the config's FP8
    attention) says fp8_dot_product_attention; one whose note quotes it off does not."""
    on = re.compile(r"FP8_DPA=1|fp8_dot_product_attention=True|FP8 attention|FP8 delayed-scaling attention")
    off = re.compile(r"FP8_DPA=(0|False)|fp8_dot_product_attention=False|attention not (in )?FP8")
    stated = 0
    for row in _mlperf_rows():
        note, given = row["source_note"], bool(row["plan"]["training"].get("fp8_dot_product_attention"))
        if off.search(note):
            assert not given, row["id"]
        elif on.search(note):
            assert given, row["id"]
            stated += 1
    assert stated == 21


def test_mlperf_rows_state_cuda_graphs_where_their_configs_do() -> None:
    """A row whose launch config is a '_cg' one, whose note says CUDA graphs, or whose note quotes its run's log
    dump 'enable_cuda_graph: 1' (or a launch config sourcing config_common_cg.sh) gives enable_cuda_graph = true;
    "no CUDA graphs" or a quoted 'enable_cuda_graph: 0' false; any other row leaves it unset."""
    graphed = 0
    for row in _mlperf_rows():
        note, given = row["source_note"], row["plan"]["training"].get("enable_cuda_graph")
        if "no CUDA graphs" in note or "enable_cuda_graph: 0" in note:
            assert given is False, row["id"]
        elif re.search(r"_cg[_.]|\(_cg\)|CUDA graphs[;,)]|enable_cuda_graph: 1|sources config_common_cg\.sh", note):
            assert given is True, row["id"]
            graphed += 1
        else:
            assert given is None, row["id"]
    # s38: MLPERF-PT51-0010, -0011, -0015..-0021, -0023, -0024 (their logs print enable_cuda_graph: 1) and -0006
    # (its launch config) joined the '_cg' rows; -0022's log prints enable_cuda_graph: 0
    assert graphed == GRAPHED_ROWS
