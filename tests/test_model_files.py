"""Safetensors / GGUF readers: exact round trips, and hostile bytes that must raise MlrigError fast."""

from __future__ import annotations

import contextlib
import json
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlrig.catalog.models import resolve_model
from mlrig.catalog.readers import load_model_path
from mlrig.catalog.readers.gguf import GGUF_FILE_TYPES, read_gguf
from mlrig.catalog.readers.safetensors import read_safetensors_header, read_safetensors_index
from mlrig.errors import MlrigError
from mlrig.quant import GGML_TYPES

TINY_CFG = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "torch_dtype": "bfloat16"}


def write_safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]], *, pad: int = 0) -> int:
    """A valid safetensors file (header via json+struct, zero data); returns the data bytes."""
    sizes = {"BF16": 2, "F16": 2, "F32": 4, "U8": 1, "F8_E4M3": 1}
    header: dict = {"__metadata__": {"format": "pt"}}
    off = 0
    for name, (dtype, shape) in tensors.items():
        n = int(np.prod(shape)) * sizes[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * (off + pad))
    return off


def tiny_tensors(cfg: dict) -> dict[str, tuple[str, list[int]]]:
    h, i, v, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    kv = h // cfg["num_attention_heads"] * cfg["num_key_value_heads"]
    t: dict[str, tuple[str, list[int]]] = {"model.embed_tokens.weight": ("BF16", [v, h]),
                                           "lm_head.weight": ("BF16", [v, h]), "model.norm.weight": ("BF16", [h])}
    for n in range(layers):
        p = f"model.layers.{n}."
        t |= {p + "q": ("BF16", [h, h]), p + "k": ("BF16", [kv, h]), p + "v": ("BF16", [kv, h]),
              p + "o": ("BF16", [h, h]), p + "gate": ("BF16", [i, h]), p + "up": ("BF16", [i, h]),
              p + "down": ("BF16", [h, i]), p + "ln1": ("F32", [h]), p + "ln2": ("F32", [h])}
    return t


def test_safetensors_round_trip_dir(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CFG))
    tensors = tiny_tensors(TINY_CFG)
    data = write_safetensors(tmp_path / "model.safetensors", tensors)
    info = read_safetensors_header(tmp_path / "model.safetensors")
    assert info.num_tensors == len(tensors) and info.tensor_bytes == data
    assert info.bytes_by_dtype == {"BF16": data - 4 * 64 * 4, "F32": 4 * 64 * 4}
    arch = load_model_path(tmp_path)
    assert arch.params_in_file == arch.total_params  # tensor shapes == derived formula
    assert arch.weight_bytes == data and arch.weight_format == "bf16"
    assert resolve_model(str(tmp_path)).weight_bytes == data
    assert load_model_path(tmp_path / "model.safetensors").weight_bytes == data


def test_safetensors_sharded_index(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(TINY_CFG))
    t = tiny_tensors(TINY_CFG)
    names = list(t)
    a = write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {k: t[k] for k in names[:5]})
    b = write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {k: t[k] for k in names[5:]})
    wmap = {k: ("model-00001-of-00002.safetensors" if j < 5 else "model-00002-of-00002.safetensors")
            for j, k in enumerate(names)}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": wmap}))
    info = read_safetensors_index(tmp_path / "model.safetensors.index.json")
    assert info.tensor_bytes == a + b and len(info.paths) == 2
    assert load_model_path(tmp_path).weight_bytes == a + b


def test_safetensors_index_path_traversal(tmp_path: Path) -> None:
    (tmp_path / "idx.safetensors.index.json").write_text(json.dumps({"weight_map": {"w": "../evil.safetensors"}}))
    with pytest.raises(MlrigError, match="outside"):
        read_safetensors_index(tmp_path / "idx.safetensors.index.json")


def test_safetensors_without_config(tmp_path: Path) -> None:
    write_safetensors(tmp_path / "w.safetensors", {"a": ("BF16", [2, 2])})
    with pytest.raises(MlrigError, match=r"config\.json"):
        load_model_path(tmp_path / "w.safetensors")


@pytest.mark.parametrize("header", [
    {"a": {"dtype": "BF16", "shape": [-1, 2], "data_offsets": [0, 0]}},
    {"a": {"dtype": "XX", "shape": [2], "data_offsets": [0, 4]}},
    {"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 10**12]}},
    {"a": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 3]}},
    {"a": {"dtype": "BF16", "shape": [2**40, 2**40], "data_offsets": [0, 4]}},
    {"a": [1, 2]},
    [1, 2],
])
def test_safetensors_bad_headers(tmp_path: Path, header: object) -> None:
    raw = json.dumps(header).encode()
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 4)
    with pytest.raises(MlrigError):
        read_safetensors_header(p)


def test_safetensors_huge_header_length(tmp_path: Path) -> None:
    p = tmp_path / "x.safetensors"
    p.write_bytes(struct.pack("<Q", 2**62) + b"{}")
    with pytest.raises(MlrigError, match="header"):
        read_safetensors_header(p)


FAST = settings(max_examples=150, deadline=2000, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FAST
@given(st.binary(max_size=512))
def test_safetensors_random_bytes(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "r.safetensors"
    p.write_bytes(data)
    with contextlib.suppress(MlrigError):
        read_safetensors_header(p)


@FAST
@given(st.integers(min_value=0, max_value=2**64 - 1), st.binary(max_size=256))
def test_safetensors_hostile_length(tmp_path: Path, n: int, rest: bytes) -> None:
    p = tmp_path / "h.safetensors"
    p.write_bytes(struct.pack("<Q", n) + rest)
    with contextlib.suppress(MlrigError):
        read_safetensors_header(p)


# ---- GGUF ----------------------------------------------------------------------------------------

def write_gguf(path: Path, *, quant: bool = True, vocab: int = 100) -> dict[str, int]:
    """A tiny llama GGUF via gguf-py's GGUFWriter; returns expected bytes per ggml type."""
    import gguf

    h, i, layers = 256, 512, 2
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_block_count(layers)
    w.add_embedding_length(h)
    w.add_feed_forward_length(i)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_context_length(4096)
    w.add_file_type(15)
    w.add_token_list([f"t{j}" for j in range(vocab)])
    expected: dict[str, int] = {}

    def add(name: str, shape: tuple[int, ...], qtype: gguf.GGMLQuantizationType) -> None:
        block, nbytes = gguf.GGML_QUANT_SIZES[qtype]
        n = int(np.prod(shape)) // block * nbytes
        if qtype == gguf.GGMLQuantizationType.F32:
            w.add_tensor(name, np.zeros(shape, dtype=np.float32))
        else:
            byte_shape = (*shape[:-1], shape[-1] // block * nbytes)  # gguf-py takes the byte shape
            w.add_tensor(name, np.zeros(byte_shape, dtype=np.uint8), raw_dtype=qtype)
        tname = GGML_TYPES[int(qtype)][0]
        expected[tname] = expected.get(tname, 0) + n

    q = gguf.GGMLQuantizationType.Q4_K if quant else gguf.GGMLQuantizationType.F16
    add("token_embd.weight", (vocab, h), gguf.GGMLQuantizationType.Q8_0 if quant else q)
    for n in range(layers):
        for name, shape in (("attn_q", (h, h)), ("attn_k", (h // 2, h)), ("attn_v", (h // 2, h)),
                            ("attn_output", (h, h)), ("ffn_gate", (i, h)), ("ffn_up", (i, h)),
                            ("ffn_down", (h, i))):
            add(f"blk.{n}.{name}.weight", shape, q)
        add(f"blk.{n}.attn_norm.weight", (h,), gguf.GGMLQuantizationType.F32)
        add(f"blk.{n}.ffn_norm.weight", (h,), gguf.GGMLQuantizationType.F32)
    add("output_norm.weight", (h,), gguf.GGMLQuantizationType.F32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return expected


def test_gguf_round_trip(tmp_path: Path) -> None:
    p = tmp_path / "tiny.gguf"
    expected = write_gguf(p)
    info = read_gguf(p)
    assert info.architecture == "llama" and info.vocab_size == 100 and info.file_type == "Q4_K_M"
    assert info.bytes_by_type == expected and info.dominant_type == "Q4_K"
    arch = load_model_path(p)
    assert (arch.num_layers, arch.hidden_size, arch.num_heads, arch.kv_heads) == (2, 256, 4, 2)
    assert arch.tie_word_embeddings  # no output.weight tensor
    assert arch.params_in_file == arch.total_params == info.params
    assert arch.weight_bytes == sum(expected.values()) and arch.weight_format == "Q4_K_M"


def test_ggml_tables_match_gguf_package() -> None:
    import gguf

    for t in gguf.GGMLQuantizationType:
        if int(t) in GGML_TYPES:
            name, block, nbytes = GGML_TYPES[int(t)]
            assert (name, block, nbytes) == (t.name, *gguf.GGML_QUANT_SIZES[t])
    for ft in gguf.LlamaFileType:
        if int(ft) in GGUF_FILE_TYPES:
            assert ft.name.removeprefix("MOSTLY_").removeprefix("ALL_") == GGUF_FILE_TYPES[int(ft)]


def _header(n_tensors: int, n_kv: int, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_kv)


@pytest.mark.parametrize("data", [
    _header(2**60, 0) + b"\0" * 64,  # tensor count 2^60
    _header(0, 2**60) + b"\0" * 64,  # kv count 2^60
    _header(0, 1) + struct.pack("<Q", 2**40) + b"key",  # key length beyond the file
    _header(0, 1) + struct.pack("<Q", 3) + b"key" + struct.pack("<IIQ", 9, 8, 2**50),  # string array
    _header(0, 1) + struct.pack("<Q", 3) + b"key" + struct.pack("<IIQ", 9, 4, 2**50),  # u32 array
    _header(0, 1) + struct.pack("<Q", 3) + b"key" + struct.pack("<I", 99) + b"\0" * 16,  # bad type
    _header(1, 0) + struct.pack("<Q", 1) + b"t" + struct.pack("<I", 9) + b"\0" * 80,  # 9 dims
    _header(1, 0) + struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 64, 0, 2**40),  # data past EOF
    _header(1, 0) + struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 64, 77, 0),  # unknown ggml type
    _header(0, 0, version=1) + b"\0" * 16,
    b"GGML" + b"\0" * 40,
    b"GG",
])
def test_gguf_hostile(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "h.gguf"
    p.write_bytes(data)
    with pytest.raises(MlrigError):
        read_gguf(p)


@FAST
@given(st.binary(max_size=1024))
def test_gguf_random_bytes_after_magic(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "r.gguf"
    p.write_bytes(b"GGUF" + data)
    with contextlib.suppress(MlrigError):
        read_gguf(p)


@FAST
@given(st.data())
def test_gguf_truncated_and_mutated(tmp_path: Path, data: st.DataObject) -> None:
    src = tmp_path / "valid.gguf"
    if not src.exists():
        write_gguf(src, quant=False, vocab=20)
    raw = bytearray(src.read_bytes())
    cut = data.draw(st.integers(0, len(raw)))
    raw = raw[:cut]
    for _ in range(data.draw(st.integers(0, 4))):
        if raw:
            pos = data.draw(st.integers(0, len(raw) - 1))
            raw[pos] = data.draw(st.integers(0, 255))
    p = tmp_path / "m.gguf"
    p.write_bytes(bytes(raw))
    with contextlib.suppress(MlrigError):
        load_model_path(p)
