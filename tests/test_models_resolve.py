"""Model name resolution, explicit architectures, config parsing errors, the hub fallback, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mlrig.catalog import models as cm
from mlrig.catalog.models import load_model_catalog, resolve_model
from mlrig.catalog.readers.hf_config import arch_from_hf_config
from mlrig.errors import AmbiguousNameError, MlrigError, UnknownNameError


@pytest.mark.parametrize(("name", "expected"), [
    ("meta-llama--Meta-Llama-3.1-8B", "llama-3.1-8b"),
    ("meta-llama/Llama-3.1-8B", "llama-3.1-8b"),
    ("meta-llama/Meta-Llama-3.1-8B", "llama-3.1-8b"),
    ("Meta-Llama-3.1-8B", "llama-3.1-8b"),
    ("Llama-3.1-8B", "llama-3.1-8b"),
    ("llama-3.1-8b", "llama-3.1-8b"),
    ("LLAMA-3.1-8B", "llama-3.1-8b"),
    ("Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("qwen2.5-7b-instruct", "qwen2.5-7b-instruct"),  # its own entry: config.json caps it at 32,768 tokens
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b-instruct"),
    ("Qwen/Qwen2.5-3B-Instruct", "qwen2.5-3b"),  # same config as the base: resolved to it
    ("mistral-7b", "mistral-7b-v0.3"),
    ("mistralai/Mistral-7B-v0.1", "mistral-7b-v0.1"),
    ("gpt-oss-20b", "gpt-oss-20b"),
    ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("deepseek-v3", "deepseek-v3"),
    ("gemma-2-9b-it", "gemma-2-9b"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    ("gpt2", "gpt2"),
    ("t5-base", "t5-base"),
    ("tiiuae/falcon-7b", "falcon-7b"),
    ("Llama-3.2-1B", "llama-3.2-1b"),
])
def test_resolve_spellings(name: str, expected: str) -> None:
    assert resolve_model(name).id == expected


def test_resolution_to_base_is_noted() -> None:
    a = resolve_model("qwen2.5-3b-instruct")
    assert any("resolved to catalog entry qwen2.5-3b" in n for n in a.notes)
    assert not any("resolved" in n for n in resolve_model("qwen2.5-3b").notes)
    assert not any("resolved" in n for n in resolve_model("qwen2.5-7b-instruct").notes)


def test_resolve_returns_copies() -> None:
    a = resolve_model("llama-3.1-8b")
    a.notes.append("mutated")
    assert "mutated" not in resolve_model("llama-3.1-8b").notes


def test_catalog_ids_unique_and_sourced() -> None:
    cat = load_model_catalog()
    assert len({a.id for a in cat}) == len(cat) >= 59
    assert all(a.source and a.hf_id and a.catalog_id for a in cat)


def test_unknown_name_suggests() -> None:
    with pytest.raises(UnknownNameError) as e:
        resolve_model("llama-3.1-9b")
    assert "llama-3.1-8b" in e.value.candidates


def test_ambiguous_name(monkeypatch: pytest.MonkeyPatch) -> None:
    entries = cm._catalog_entries()
    a, keys = entries[0]
    b = a.model_copy(update={"id": a.id + "-copy"})
    monkeypatch.setattr(cm, "_catalog_entries", lambda: (*entries, (b, keys)))
    with pytest.raises(AmbiguousNameError):
        resolve_model(a.hf_id or "")


def test_unknown_hf_id_offline_goes_to_hub_and_fails_cleanly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(MlrigError, match="not in the built-in catalog nor in the local Hugging Face cache"):
        resolve_model("someorg/some-unlisted-model")


def test_hub_fetch_is_mocked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No network: fake huggingface_hub returns a config and safetensors metadata."""
    import sys
    import types

    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
                               "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100}))
    tensor = types.SimpleNamespace(dtype="BF16", shape=[100, 64])
    shard = types.SimpleNamespace(tensors={"w": tensor})
    meta = types.SimpleNamespace(files_metadata={"model.safetensors": shard})
    fake = types.SimpleNamespace(hf_hub_download=lambda repo_id, filename, **kw: str(cfg),
                                 get_safetensors_metadata=lambda repo_id, **kw: meta)
    monkeypatch.setitem(sys.modules, "huggingface_hub", fake)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    from mlrig.catalog import hub

    monkeypatch.setattr(hub, "_endpoint_reachable", lambda: None)  # no network in tests: pretend it is there
    a = resolve_model("someorg/tiny")
    assert a.hidden_size == 64 and a.hf_id == "someorg/tiny"
    assert a.weight_bytes == 100 * 64 * 2 and a.weight_format == "bf16"


def test_hub_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(MlrigError, match="huggingface_hub is not installed"):
        resolve_model("someorg/tiny2")


def test_arch_from_ref_checks_stated_params() -> None:
    from mlrig.workload import ModelRef

    ref = ModelRef(hidden_size=4096, num_layers=32, num_heads=32, num_kv_heads=8, intermediate_size=14336,
                   vocab_size=128256, params=8.03e9)
    a = cm.arch_from_ref(ref)
    assert a.total_params == 8_030_261_248 and not any("differ" in n for n in a.notes)
    off = cm.arch_from_ref(ref.model_copy(update={"params": 10e9}))
    assert any("differ" in n for n in off.notes)


def test_arch_from_ref_inconsistent() -> None:
    from mlrig.workload import ModelRef

    with pytest.raises(MlrigError, match="num_kv_heads"):
        cm.arch_from_ref(ModelRef(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=8,
                                  intermediate_size=128, vocab_size=100))


# ---- config parsing errors -------------------------------------------------------------------

BASE = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "intermediate_size": 128, "vocab_size": 100}


@pytest.mark.parametrize(("patch", "key"), [
    ({"hidden_size": None}, "hidden_size"),
    ({"hidden_size": -5}, "hidden_size"),
    ({"hidden_size": 0}, "hidden_size"),
    ({"hidden_size": "4096"}, "hidden_size"),
    ({"num_hidden_layers": 10**9}, "num_hidden_layers"),
    ({"vocab_size": 2.5}, "vocab_size"),
    ({"num_attention_heads": True}, "num_attention_heads"),
    ({"tie_word_embeddings": "yes"}, "tie_word_embeddings"),
    ({"num_key_value_heads": 8}, "num_kv_heads"),
    ({"model_type": "mixtral", "num_local_experts": -1}, "num_local_experts"),
    ({"model_type": "gemma3", "text_config": [1]}, "text_config"),
    ({"model_type": "deepseek_v3"}, "qk_rope_head_dim"),
])
def test_bad_configs_name_the_key(patch: dict, key: str) -> None:
    cfg = {k: v for k, v in {**BASE, **patch}.items() if v is not None}
    with pytest.raises(MlrigError, match=key):
        arch_from_hf_config(cfg, model_id="x", hf_id=None, source="test.json")


def test_non_dict_config(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    for text in ("[1, 2]", "not json", '"str"', "{" * 100000):
        p.write_text(text)
        with pytest.raises(MlrigError):
            resolve_model(str(p))


def test_generic_fallback_aliases() -> None:
    cfg = {"model_type": "brand-new", "n_embd": 256, "n_layer": 4, "n_head": 8, "vocab_size": 1000}
    a = arch_from_hf_config(cfg, model_id="x", hf_id=None, source="t")
    got = (a.hidden_size, a.num_layers, a.num_heads, a.intermediate_size, a.mlp)
    assert got == (256, 4, 8, 1024, "plain")
    assert any("generic" in n for n in a.notes)


def test_missing_path_is_clean() -> None:
    with pytest.raises(MlrigError, match="does not exist"):
        resolve_model("./nope/config.json")


# ---- CLI --------------------------------------------------------------------------------------

def test_models_cli_json_and_filters() -> None:
    from mlrig.cli import app

    r = CliRunner().invoke(app, ["models", "--json", "--family", "qwen", "--max-params", "10"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output)
    assert rows and all(x["params"] <= 10e9 and x["family"] == "qwen" for x in rows)
    assert {"id", "hf_id", "params", "active_params", "source"} <= set(rows[0])
    r = CliRunner().invoke(app, ["models", "--search", "gpt-oss"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "gpt-oss-20b" in r.output


def test_inspect_cli_json() -> None:
    from mlrig.cli import app

    r = CliRunner().invoke(app, ["inspect", "mixtral-8x7b", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.output)
    assert d["params"] == 46_702_792_704 and d["active_params"] == 12_879_925_248
