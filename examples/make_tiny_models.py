"""Write the tiny model files the README tour uses: a 2-layer Llama-shaped toy model (hidden 64,
4 heads, 2 KV heads, MLP 192, vocab 256; 131,392 weights) as

  examples/tiny-llama/config.json + model.safetensors   (bf16, all zeros)
  examples/tiny-llama-q8_0.gguf                          (Q8_0 linear layers, F32 norms)

They are real files in each format (headers and data), small enough to keep in git, so
`mlrig plan`, `mlrig inspect` and the tests can read them without a download.

    python examples/make_tiny_models.py     # needs numpy and gguf (both in the `dev` extra)
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CONFIG: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 192,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 2048,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def tensor_shapes(config: dict[str, Any] = CONFIG) -> dict[str, list[int]]:
    """HF Llama parameter names and shapes (out_features, in_features) for a Llama config.json
    (CONFIG by default; fuzz/make_seeds.py passes its own, smaller one)."""
    h, i, v = config["hidden_size"], config["intermediate_size"], config["vocab_size"]
    kv = config["num_key_value_heads"] * h // config["num_attention_heads"]
    shapes = {"model.embed_tokens.weight": [v, h], "model.norm.weight": [h], "lm_head.weight": [v, h]}
    for n in range(config["num_hidden_layers"]):
        p = f"model.layers.{n}."
        shapes |= {p + "self_attn.q_proj.weight": [h, h], p + "self_attn.k_proj.weight": [kv, h],
                   p + "self_attn.v_proj.weight": [kv, h], p + "self_attn.o_proj.weight": [h, h],
                   p + "mlp.gate_proj.weight": [i, h], p + "mlp.up_proj.weight": [i, h],
                   p + "mlp.down_proj.weight": [h, i], p + "input_layernorm.weight": [h],
                   p + "post_attention_layernorm.weight": [h]}
    return shapes


def write_safetensors(path: Path) -> None:
    """safetensors layout: u64 header length, JSON header, then the tensors' bytes (bf16 zeros)."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, shape in tensor_shapes().items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


def write_gguf(path: Path) -> None:
    import gguf
    import numpy as np

    h, heads = CONFIG["hidden_size"], CONFIG["num_attention_heads"]
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tiny-llama")
    w.add_context_length(CONFIG["max_position_embeddings"])
    w.add_embedding_length(h)
    w.add_block_count(CONFIG["num_hidden_layers"])
    w.add_feed_forward_length(CONFIG["intermediate_size"])
    w.add_head_count(heads)
    w.add_head_count_kv(CONFIG["num_key_value_heads"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(CONFIG["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    parts = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
             "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
             "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    for name, shape in tensor_shapes().items():
        if name not in names:
            _, _, layer, rest = name.split(".", 3)
            names[name] = f"blk.{layer}.{parts[rest.removesuffix('.weight')]}.weight"
        data = np.zeros(shape, dtype=np.float32)
        if len(shape) == 1:
            w.add_tensor(names[name], data)
        else:
            q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
            w.add_tensor(names[name], q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main() -> None:
    folder = HERE / "tiny-llama"
    folder.mkdir(exist_ok=True)
    (folder / "config.json").write_text(json.dumps(CONFIG, indent=2) + "\n")
    write_safetensors(folder / "model.safetensors")
    write_gguf(HERE / "tiny-llama-q8_0.gguf")
    print("wrote", folder, "and", HERE / "tiny-llama-q8_0.gguf")


if __name__ == "__main__":
    main()
