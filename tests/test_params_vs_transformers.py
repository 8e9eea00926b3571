"""The reader's parameter counts for the catalog's dialects against the transformers modelling code itself:
each config is instantiated on the meta device (no memory, no weights) and its parameters summed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mlrig.catalog.readers.hf_config import arch_from_hf_config

MODELS = Path(__file__).resolve().parent.parent / "mlrig" / "data" / "models"


def _transformers_count(model_type: str, cfg: dict[str, Any]) -> int:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    conf = transformers.AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(conf)
    return sum(p.numel() for p in model.parameters())  # a tied head is one tensor, as mlrig counts it


@pytest.mark.parametrize("stem", [
    "stabilityai--stablelm-base-alpha-3b",  # gpt_neox
    "EleutherAI--gpt-j-6b",  # gptj
    "google--gemma-7b",  # gemma, 16 heads of 256 on a 3072-wide model
    "ibm-granite--granite-3.1-2b-instruct",  # granite, tied
    "tiiuae--falcon-180B",  # falcon new decoder architecture
    "deepseek-ai--DeepSeek-V2",  # MLA + 160 experts + 2 shared
    "Qwen--Qwen1.5-72B",  # qwen2 with 64 KV heads
    "huggyllama--llama-30b",
])
def test_catalog_count_equals_transformers(stem: str) -> None:
    data = json.loads((MODELS / f"{stem}.json").read_text(encoding="utf-8"))
    cfg = {k: v for k, v in data.items() if not k.startswith("_")
           and k not in ("model_type", "architectures", "auto_map", "transformers_version", "torch_dtype")}
    arch = arch_from_hf_config(data, model_id=stem, hf_id=None, source=stem)
    assert arch.total_params == _transformers_count(data["model_type"], cfg)


def test_phi_dialect_equals_transformers_phi() -> None:
    """phi-1_5's remote-code (phi-msft) config read by mlrig == transformers' PhiForCausalLM of the same shape."""
    data = json.loads((MODELS / "microsoft--phi-1_5.json").read_text(encoding="utf-8"))
    arch = arch_from_hf_config(data, model_id="phi-1_5", hf_id=None, source="phi-1_5")
    n = _transformers_count("phi", dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=24,
                                        num_attention_heads=32, vocab_size=51200, partial_rotary_factor=0.5))
    assert arch.total_params == n
