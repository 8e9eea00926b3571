"""Write the seed corpora under fuzz/seeds/<target>/: small valid inputs for each reader.

Seeds are kept small on purpose (a few KiB): the fuzzer mutates them byte by byte, and a 250 KiB
example model would make every execution copy and parse mostly tensor data. Sources:
- config.json: examples/tiny-llama/config.json and one catalog config per model_type
  (mlrig/data/models/, the published Hugging Face configs);
- safetensors and GGUF: tiny Llama-shaped files written here by hand from the format specs
  (safetensors README; ggml docs/gguf.md), with real tensor data so they parse to the end;
- plans, eval lines, price and build files: examples/ and small variants covering every section.

    python fuzz/make_seeds.py
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SEEDS = Path(__file__).resolve().parent / "seeds"
MODELS = ROOT / "mlrig" / "data" / "models"

H, INTER, LAYERS, HEADS, KV, VOCAB = 8, 16, 1, 2, 1, 8


def _shapes() -> dict[str, list[int]]:
    """Llama tensor names and shapes for `_config()`: the README example's own table
    (examples/make_tiny_models.py `tensor_shapes`), loaded from its file (examples is no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_tiny_models", ROOT / "examples" / "make_tiny_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shapes: dict[str, list[int]] = module.tensor_shapes(_config())
    return shapes


def _config() -> dict[str, Any]:
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
            "intermediate_size": INTER, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
            "num_key_value_heads": KV, "vocab_size": VOCAB, "max_position_embeddings": 512,
            "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def safetensors_bytes(dtype: str = "BF16", width: int = 2) -> bytes:
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in _shapes().items():
        n = width
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def _gguf_str(s: str) -> bytes:
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_bytes(with_tokens: bool = True) -> bytes:
    """GGUF v3: metadata (u32/string/array values), F32 tensors, data aligned to 32 bytes."""
    kv: list[bytes] = []

    def add(key: str, vtype: int, payload: bytes) -> None:
        kv.append(_gguf_str(key) + struct.pack("<I", vtype) + payload)

    add("general.architecture", 8, _gguf_str("llama"))
    add("general.name", 8, _gguf_str("fuzz-tiny"))
    add("general.file_type", 4, struct.pack("<I", 0))
    for key, val in (("context_length", 512), ("embedding_length", H), ("block_count", LAYERS),
                     ("feed_forward_length", INTER), ("attention.head_count", HEADS),
                     ("attention.head_count_kv", KV)):
        add(f"llama.{key}", 4, struct.pack("<I", val))
    add("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5))
    add("llama.rope.dimension_sections", 9, struct.pack("<IQ", 5, 4) + struct.pack("<4i", 1, 2, 3, 4))
    if with_tokens:
        tokens = b"".join(_gguf_str(f"t{i}") for i in range(VOCAB))
        add("tokenizer.ggml.tokens", 9, struct.pack("<IQ", 8, VOCAB) + tokens)
    else:
        add("llama.vocab_size", 4, struct.pack("<I", VOCAB))
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    infos, offset = [], 0
    for name, shape in _shapes().items():
        if name not in names:
            _, _, layer, rest = name.split(".", 3)
            names[name] = f"blk.{layer}.{parts[rest.removesuffix('.weight')]}.weight"
        dims = list(reversed(shape))  # GGUF lists the fastest-moving dimension first
        n = 4
        for d in dims:
            n *= d
        infos.append(_gguf_str(names[name]) + struct.pack("<I", len(dims))
                     + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack("<IQ", 0, offset))
        offset += n + (-n % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(kv)) + b"".join(kv) + b"".join(infos)
    head += bytes(-len(head) % 32)
    return head + bytes(offset)


def main() -> None:
    if SEEDS.exists():
        shutil.rmtree(SEEDS)

    def put(target: str, name: str, data: bytes | str) -> None:
        d = SEEDS / target
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data.encode() if isinstance(data, str) else data)

    put("hf_config", "tiny-llama.json", json.dumps(_config(), indent=2))
    put("hf_config", "example-tiny-llama.json", (ROOT / "examples/tiny-llama/config.json").read_bytes())
    seen: set[str] = set()
    for path in sorted(MODELS.glob("*.json")):
        cfg = json.loads(path.read_text())
        mt = cfg.get("model_type")
        if mt not in seen:
            seen.add(mt)
            put("hf_config", path.name, path.read_bytes())
    moe = {**_config(), "model_type": "qwen3_moe", "num_experts": 4, "num_experts_per_tok": 2,
           "moe_intermediate_size": 8, "mlp_only_layers": [0], "decoder_sparse_step": 1,
           "use_sliding_window": True, "sliding_window": 64, "max_window_layers": 1}
    put("hf_config", "qwen3-moe-tiny.json", json.dumps(moe))
    put("hf_config", "gemma3-layer-types.json", json.dumps(
        {**_config(), "model_type": "gemma3_text", "sliding_window": 32, "layer_types": ["sliding_attention"]}))

    put("safetensors", "tiny-bf16.safetensors", safetensors_bytes())
    put("safetensors", "tiny-f32.safetensors", safetensors_bytes("F32", 4))
    put("safetensors_index", "index.json", json.dumps(
        {"metadata": {"total_size": 1}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                        "b": "model-00002-of-00002.safetensors"}}))
    put("safetensors_index", "index-one.json", json.dumps({"weight_map": {"x": "model-00001-of-00002.safetensors"}}))

    put("gguf", "tiny-f32.gguf", gguf_bytes())
    put("gguf", "tiny-vocab-key.gguf", gguf_bytes(with_tokens=False))

    put("plan_toml", "example.toml", (ROOT / "examples/plan.toml").read_bytes())
    put("plan_toml", "finetune.toml", 'model = "llama-3.1-8b"\n[workload]\ntask = "finetune"\n'
        'precision = "bf16"\n[training]\nmethod = "qlora"\nlora_rank = 16\nseq_len = 2048\nzero_stage = 2\n'
        'offload = "optimizer"\n[hardware]\ngpu = "H100 SXM"\ncount = 2\nnodes = 1\n')
    put("plan_toml", "explicit.toml", '[model]\nhidden_size = 64\nnum_layers = 2\nnum_heads = 4\n'
        'intermediate_size = 128\nvocab_size = 256\n[workload]\nprecision = "q4_k_m"\nengine = "llama.cpp"\n'
        'gpu_layers = 1\n[hardware]\ngpu = "RTX 3090"\n')
    cases = (ROOT / "examples/cases.jsonl").read_text().splitlines()
    for i, line in enumerate(cases):
        put("plan_json", f"case{i}.json", line)
        put("eval_line", f"case{i}.jsonl", line)
    put("eval_line", "explicit.jsonl", json.dumps(
        {"id": "x", "model": {"hidden_size": 64, "num_layers": 2, "num_heads": 4, "intermediate_size": 128,
                              "vocab_size": 256}, "workload": {"task": "pretrain"},
         "training": {"tokens_to_train": 1e9}, "hardware": {"gpu": "H100 SXM", "count": 8, "tensor_parallel": 2,
                                                              "storage_gb_s": 5.0}}))

    put("prices", "builtin-slice.toml", _price_slice())
    put("prices", "override.toml", '[meta]\nas_of = "2026-01-01"\n[assumptions]\nelectricity_usd_per_kwh = 0.3\n'
        '[gpu.rtx-3090-used]\ngpu = "RTX 3090"\ncondition = "used"\nprice_usd = 650\nsource = "me"\n'
        'date = "2026-01-01"\n')
    for path in sorted((ROOT / "examples").glob("build-*.toml")):
        put("build", path.name, path.read_bytes())
    print("wrote", SEEDS)


def _price_slice() -> str:
    """The built-in price file's first entry of each section (a realistic, complete price file)."""
    import tomllib

    data = tomllib.loads((ROOT / "mlrig/data/prices.toml").read_text())
    lines = ['[meta]\nas_of = "2026-02-01"\n', "[assumptions]"]
    lines += [f"{k} = {json.dumps(v)}" for k, v in data.get("assumptions", {}).items()]
    for section in ("platform", "gpu", "system", "cloud"):
        key, entry = next(iter(data.get(section, {}).items()))
        lines.append(f"\n[{section}.{key}]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
