"""`mlrig trace` on fake tensors: hand-checked bytes on tiny models, one smoke test per architecture
family of the catalog, extrapolation against a direct trace, cache, CLI. Skipped without the extra."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from mlrig.trace.allocator import round_size
from mlrig.trace.engine import run_trace
from mlrig.trace.recipe import Recipe

MODELS = Path(__file__).resolve().parents[1] / "mlrig" / "data" / "models"
TINY = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 1000,
        "tie_word_embeddings": False, "max_position_embeddings": 4096}
# tiny Llama: embed + head 2 x 1000 x 64, per layer q,o 64x64, k,v 32x64, gate/up/down 64x128, 2 norms, final norm
N_PARAMS = [1000 * 64] * 2 + [64 * 64, 32 * 64, 32 * 64, 64 * 64, 128 * 64, 128 * 64, 64 * 128, 64, 64] * 2 + [64]


def _phase(run, name):
    return next(p for p in run.peaks if p.name == name)


@pytest.fixture(scope="module")
def tiny_foreach():
    recipe = Recipe(task="train", weights_dtype="bf16", optimizer_impl="foreach", seq_len=64, batch_size=2)
    return run_trace(TINY, recipe)


def test_exact_bytes_of_a_bf16_adamw_step(tiny_foreach):
    weights = sum(round_size(n * 2) for n in N_PARAMS)  # bf16, each in its own 512-byte-rounded block
    assert weights == 406016
    opt = _phase(tiny_foreach, "s2:optimizer").by_category
    assert opt["gradients"] == weights
    assert opt["optimizer_state"] == 2 * weights  # exp_avg + exp_avg_sq in bf16; step counters stay on the host
    assert opt["optimizer_temporaries"] == weights  # foreach: _foreach_sqrt(exp_avg_sq), one per parameter
    # + 2 rotary inv_freq buffers (fp32, one 512-byte block each)
    assert opt["parameters"] == weights + 2 * 512


def test_fused_adamw_has_no_temporaries_and_keeps_step_on_device():
    run = run_trace(TINY, Recipe(task="train", weights_dtype="bf16", optimizer_impl="fused", seq_len=64, batch_size=2))
    opt = _phase(run, "s2:optimizer").by_category
    assert "optimizer_temporaries" not in opt
    assert opt["optimizer_state"] == 2 * 406016 + len(N_PARAMS) * 512  # fused keeps a 0-dim fp32 step per param


def test_hf_loss_keeps_bf16_and_fp32_logits(tiny_foreach):
    b, s, v = 2, 64, 1000
    logits = _phase(tiny_foreach, "s2:forward.head").by_category["logits_loss"]
    # bf16 logits, their fp32 upcast and fp32 log-softmax saved for backward: b*s*V*(2+4+4) bytes
    assert b * s * v * 10 <= logits < b * s * v * 10 + 8192


def test_kv_cache_bytes_of_a_decode_step():
    run = run_trace(TINY, Recipe(task="inference", weights_dtype="bf16", seq_len=10, context=40, batch_size=3))
    per_tensor = round_size(3 * 2 * 40 * 16 * 2)  # batch x kv heads x tokens x head dim x 2 B
    assert _phase(run, "d:sample").by_category["kv_cache"] == 2 * 2 * per_tensor  # K and V, 2 layers
    assert run.kernels == ["flash"]


def test_extrapolated_peak_matches_a_direct_trace():
    from mlrig.trace.api import combine

    cfg = {**TINY, "num_hidden_layers": 8}
    recipe = Recipe(task="train", weights_dtype="fp32", autocast="bf16", gradient_checkpointing=True, seq_len=128)
    direct = run_trace(cfg, recipe)
    short = [run_trace(cfg, recipe, 2), run_trace(cfg, recipe, 4)]
    regions, _ = combine(short, 8)
    peak = max(v[0] for v in regions.values())
    assert peak == pytest.approx(max(p.peak_allocated for p in direct.peaks), rel=1e-3)


def _tiny_from_catalog(name: str, **over: object) -> dict:
    cfg = json.loads((MODELS / f"{name}.json").read_text())
    text = cfg.get("text_config", cfg)
    text.update({"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
                 "num_hidden_layers": 2, "vocab_size": 512, "head_dim": 16, **over})
    text.pop("layer_types", None)
    return cfg


FAMILIES = {
    "dense": ("meta-llama--Meta-Llama-3.1-8B", {}),
    "gqa+bias": ("Qwen--Qwen2.5-7B", {}),
    "moe": ("Qwen--Qwen3-30B-A3B", {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32}),
    "sliding": ("google--gemma-3-1b-it", {"sliding_window": 16, "num_hidden_layers": 6}),
    "mla": ("deepseek-ai--DeepSeek-V3", {"n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32,
                                        "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1, "q_lora_rank": 32,
                                        "kv_lora_rank": 16, "qk_rope_head_dim": 8, "qk_nope_head_dim": 8,
                                        "v_head_dim": 16, "head_dim": 8}),
    "encoder": ("google-bert--bert-base-uncased", {"num_attention_heads": 4}),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_smoke_per_architecture_family(family):
    name, over = FAMILIES[family]
    cfg = _tiny_from_catalog(name, **over)
    run = run_trace(cfg, Recipe(task="train", method="lora", weights_dtype="bf16", autocast="bf16",
                                lora_targets=("q", "v"), seq_len=32, gradient_checkpointing=True))
    phases = {p.name.split(":")[-1].split(".")[0] for p in run.peaks}
    assert {"forward", "backward", "optimizer"} <= phases
    assert 0 < run.trainable < run.params
    opt = _phase(run, "s2:optimizer").by_category
    assert opt["optimizer_state"] >= 2 * 4 * run.trainable  # fp32 adapters: two fp32 moments each


def test_qlora_stores_base_weights_in_4bit():
    lora = run_trace(TINY, Recipe(task="train", method="lora", weights_dtype="bf16", autocast="bf16",
                                  lora_targets=("q", "v"), seq_len=32))
    qlora = run_trace(TINY, Recipe(task="train", method="qlora", weights_dtype="bf16", autocast="bf16",
                                   lora_targets=("q", "v"), seq_len=32))
    assert qlora.trainable == lora.trainable
    p_l = _phase(lora, "setup").by_category["parameters"]
    p_q = _phase(qlora, "setup").by_category["parameters"]
    # QLoRA: the head and embeddings go to fp32 (prepare_model_for_kbit_training) while the layers' linears shrink
    assert p_q != p_l


def test_trace_plan_caches_and_compares(tmp_path, monkeypatch):
    from mlrig.commands.trace import run_trace_for_plan
    from mlrig.planner import plan_from_fields

    monkeypatch.setenv("MLRIG_HOME", str(tmp_path))
    plan = plan_from_fields("qwen2.5-0.5b", gpu="RTX 4090", task="finetune", method="lora", seq_len=256)
    _, first = run_trace_for_plan(plan, optimizer_impl=None, attention=None)
    _, second = run_trace_for_plan(plan, optimizer_impl=None, attention=None)
    assert not first.cached and second.cached
    assert second.peak_allocated_gib == first.peak_allocated_gib
    assert list((tmp_path / "trace-cache").glob("*.json"))
    assert first.comparison is not None and first.comparison.formula_per_gpu_gib > 0
    # the allocator line quotes the formula's own factors (memory.CAL), not a stale constant
    from mlrig.estimators.memory import CAL

    assert any(f"x{CAL.training_fragmentation:g} on per-step tensors" in e for e in first.comparison.explanations)
    assert first.peak_reserved_gib >= first.peak_allocated_gib
    assert first.nvidia_smi_gib > first.peak_reserved_gib


def test_cli_json_has_plan_result_and_trace():
    out = subprocess.run([sys.executable, "-m", "mlrig.cli", "trace", "qwen2.5-0.5b", "--task", "inference",
                          "--prompt", "256", "--output", "32", "--json"], capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    assert "memory" in data and "performance" in data  # the PLAN-FORMAT result
    assert data["trace"]["peak_phase"] in ("prefill", "decode")
    assert data["trace"]["by_category_gib"]["parameters"] > 0.9  # 494 M params in bf16


def test_remote_code_model_is_a_clear_error(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "my_custom_arch", "auto_map": {"AutoModel": "x.Y"}, "hidden_size": 8,
                               "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 16,
                               "vocab_size": 32}))
    out = subprocess.run([sys.executable, "-m", "mlrig.cli", "trace", str(cfg), "--task", "inference"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "mlrig: error:" in out.stderr and "Traceback" not in out.stderr
