"""Issue 14 §2: repo ids people copy map offline to the catalog base + format; Hub access is offline-first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlrig import quant
from mlrig.catalog.models import resolve_model
from mlrig.errors import MlrigError
from mlrig.planner import evaluate


@pytest.mark.parametrize(("repo", "base", "precision"), [
    ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M", "llama-3.1-8b", "q4_k_m"),
    ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF/Meta-Llama-3.1-8B-Instruct-IQ4_XS.gguf", "llama-3.1-8b", "iq4_xs"),
    ("Meta-Llama-3.1-8B-Instruct-Q5_K_M.gguf", "llama-3.1-8b", "q5_k_m"),
    ("unsloth/Qwen3-8B-GGUF:UD-Q4_K_XL", "qwen3-8b", "q4_k_l"),
    ("TheBloke/Llama-2-7B-Chat-GPTQ", "llama-2-7b", "gptq"),
    ("TheBloke/Llama-2-13B-chat-AWQ", "llama-2-13b", "awq"),
    ("Qwen/Qwen2.5-7B-Instruct-AWQ", "qwen2.5-7b-instruct", "awq"),
    ("Qwen/Qwen2.5-72B-Instruct-GPTQ-Int8", "qwen2.5-72b-instruct", "gptq-int8"),
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", "llama-3.1-70b", "fp8"),
    ("unsloth/Llama-3.2-3B-Instruct-bnb-4bit", "llama-3.2-3b", "nf4"),
    ("mlx-community/Meta-Llama-3.1-8B-Instruct-4bit", "llama-3.1-8b", "mlx-4bit"),
    ("mlc-ai/Llama-3.1-8B-Instruct-q4f16_1-MLC", "llama-3.1-8b", "q4f16_1"),
    ("turboderp/Llama-3.1-8B-Instruct-exl2:4.65bpw", "llama-3.1-8b", "exl2-4.65"),
])
def test_quantised_reuploads_map_to_base_and_format(repo: str, base: str, precision: str) -> None:
    arch = resolve_model(repo)
    assert (arch.id, arch.weight_format) == (base, precision)
    assert any("catalog architecture, offline" in n for n in arch.notes)


@pytest.mark.parametrize(("repo", "block"), [
    ("Qwen/Qwen3-30B-A3B-FP8", 128),  # Qwen's own FP8 repos: 128 x 128 blocks (model card)
    ("Qwen/Qwen3-8B-FP8", 128),
    ("RedHatAI/Qwen3-30B-A3B-FP8-dynamic", None),  # llm-compressor FP8_DYNAMIC: per-channel scales
    ("neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8", None),
])
def test_a_publishers_block_fp8_repo_keeps_its_weight_blocks(repo: str, block: int | None) -> None:
    arch = resolve_model(repo)
    assert arch.weight_format == "fp8" and arch.weight_block_size == block


def test_the_format_becomes_the_default_precision_with_a_note() -> None:
    res = evaluate({"model": "bartowski/Meta-Llama-3.1-8B-Instruct-GGUF:Q4_K_M", "hardware": {"gpu": "RTX 4090"}})
    assert res.precision == "q4_k_m" and res.engine == "llama.cpp"
    assert res.memory is not None and res.memory.weights_gib < 5  # not the 15 GiB of bf16
    bare = resolve_model("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF")
    assert bare.weight_format == "q4_k_m" and any("assumed Q4_K_M" in n for n in bare.notes)
    # an explicit --precision still wins
    res8 = evaluate({"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "workload": {"precision": "bf16"}})
    assert res8.precision == "bf16"


def test_mlx_bits_include_group_scales() -> None:
    assert quant.bits_per_weight("mlx-4bit") == 4.5  # group 64, fp16 scale + fp16 bias


def _fake_hf_cache(root: Path, repo: str, config: dict[str, object]) -> None:
    """The layout huggingface_hub writes: models--org--name/refs/main + snapshots/<commit>/config.json."""
    folder = root / ("models--" + repo.replace("/", "--"))
    commit = "0123456789abcdef0123456789abcdef01234567"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(commit)
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").write_text(json.dumps(config))


def test_offline_reads_the_local_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "num_hidden_layers": 4,
           "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 5632, "vocab_size": 32000,
           "torch_dtype": "bfloat16"}
    _fake_hf_cache(tmp_path / "hub", "someone/tiny-llama", cfg)
    arch = resolve_model("someone/tiny-llama")
    assert arch.hidden_size == 2048 and arch.num_layers == 4
    assert any("local Hugging Face cache" in n for n in arch.notes)


def test_offline_miss_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MlrigError, match="HF_HUB_OFFLINE") as e:
        resolve_model("someone/not-cached")
    assert "\n" not in str(e.value) and "check the id" not in str(e.value)


def test_no_network_is_blamed_on_the_network_not_the_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without HF_HUB_OFFLINE and without a reachable endpoint: one line naming the connection."""
    pytest.importorskip("huggingface_hub")
    from mlrig.catalog import hub

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(hub, "_endpoint_reachable", lambda: "huggingface.co:443 unreachable: no route")
    with pytest.raises(MlrigError, match=r"could not be reached .*unreachable") as e:
        resolve_model("someone/not-cached")
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(("name", "gid"), [
    ("llama-4-scout", "llama-4-scout-17b-16e"),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", "llama-4-maverick-17b-128e"),
    ("moonshotai/Kimi-K2-Instruct", "kimi-k2"), ("zai-org/GLM-4.5-Air", "glm-4.5-air"),
    ("qwen3-coder", "qwen3-coder-480b-a35b"),
    ("Qwen/Qwen2-7B-Instruct", "qwen2-7b"), ("allenai/OLMo-2-1124-13B", "olmo-2-1124-13b"),
    ("deepseek-ai/DeepSeek-V2-Lite-Chat", "deepseek-v2-lite"), ("microsoft/Phi-3.5-mini-instruct", "phi-3.5-mini"),
    ("CohereForAI/aya-23-8B", "aya-23-8b"), ("THUDM/chatglm3-6b", "chatglm3-6b"),
    ("Qwen/Qwen1.5-MoE-A2.7B", "qwen1.5-moe-a2.7b"),
])
def test_new_families_resolve(name: str, gid: str) -> None:
    assert resolve_model(name).id == gid


def test_new_dialects_count_like_their_reports() -> None:
    """Stated totals: Llama 4 Maverick 400B (17B active), Kimi K2 ~1T (32B active), Qwen1.5-MoE 14.3B / 2.7B,
    DeepSeek-V2-Lite 15.7B (DeepSeek-V2 paper)."""
    mav = resolve_model("llama-4-maverick")
    assert mav.total_params == pytest.approx(400e9, rel=0.01) and mav.active_params == pytest.approx(17e9, rel=0.03)
    assert mav.first_dense_layers == 24  # every 2nd layer is MoE
    kimi = resolve_model("kimi-k2")
    assert kimi.is_mla and kimi.num_experts == 384 and kimi.active_params == pytest.approx(32e9, rel=0.05)
    qmoe = resolve_model("qwen1.5-moe")
    assert qmoe.total_params == pytest.approx(14.3e9, rel=0.01) and qmoe.active_params == pytest.approx(2.7e9, rel=0.01)
    assert resolve_model("deepseek-v2-lite").total_params == pytest.approx(15.7e9, rel=0.005)
    scout = resolve_model("llama-4-scout")
    assert scout.num_sliding_layers == 36 and scout.sliding_window == 8192  # chunked attention, 3 of 4 layers
