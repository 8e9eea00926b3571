"""GGUF headers (llama.cpp model files): metadata and exact per-tensor sizes, with bounded reads.

Every count and length read from the file is checked against the bytes left and a cap before it
is used; a malformed file raises `MlrigError`.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from mlrig.catalog.arch import ModelArch, validation_message
from mlrig.catalog.readers.safetensors import MAX_ELEMENTS
from mlrig.errors import MlrigError
from mlrig.quant import GGML_TYPES

GGUF_FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S",
    12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K",
    19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL",
    26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
    36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}
# GGUF metadata value types (ggml/docs gguf.md): id -> struct format of a scalar
_GGUF_SCALARS: dict[int, str] = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
                                 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9
# Caps far above any published GGUF (DeepSeek-V3/R1 and Kimi K2 hold ~1,100 tensors and ~50 metadata keys;
# the largest vocabularies ~260,000 tokens) and low enough that a crafted header cannot take seconds
# or gigabytes: every count is checked against these and against the bytes left before any loop.
_GGUF_MAX_TENSORS = 100_000
_GGUF_MAX_KV = 65_536
_GGUF_MAX_ARRAY_STRINGS = 4_000_000
_GGUF_MAX_STRING = 64 * 2**20
_GGUF_KEEP_STRING = 4096  # metadata strings are kept up to this many bytes; the rest is skipped unread
_GGUF_MAX_DIMS = 4  # GGML_MAX_DIMS
_WINDOW = 1 << 20  # bytes read from the file at a time


class GGUFTensor(NamedTuple):
    """One tensor's info record (a tuple, not a model: a file may list 100,000 of them)."""

    name: str
    shape: tuple[int, ...]
    ggml_type: str
    n_elements: int
    n_bytes: int
    offset: int


class GGUFInfo(BaseModel):
    """The header of a GGUF file: architecture metadata and exact per-tensor sizes."""

    model_config = ConfigDict(defer_build=True, arbitrary_types_allowed=True)  # GGUF files only

    path: str
    version: int
    architecture: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict, description="scalar metadata (arrays summarised)")
    vocab_size: int | None = None
    tensors: list[GGUFTensor] = Field(default_factory=list)
    file_bytes: int = 0
    data_offset: int = 0
    file_type: str | None = None  # from general.file_type, e.g. "Q4_K_M"

    @property
    def params(self) -> int:
        return sum(t.n_elements for t in self.tensors)

    @property
    def tensor_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def bytes_by_type(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for t in self.tensors:
            out[t.ggml_type] = out.get(t.ggml_type, 0) + t.n_bytes
        return out

    @property
    def dominant_type(self) -> str | None:
        by = self.bytes_by_type
        return max(by, key=lambda k: by[k]) if by else None


class _Reader:
    """Bounded little-endian reader over an open binary file: every read checks the remaining size.

    Reads go through a window of at most `_WINDOW` bytes (plus one field), so memory stays bounded
    whatever the file claims, and a skip past data never reads it."""

    def __init__(self, f: BinaryIO, size: int, where: str) -> None:
        self.f = f
        self.size = size
        self.pos = 0
        self.where = where
        self._buf = b""
        self._buf_at = 0

    def fail(self, what: str) -> MlrigError:
        return MlrigError(f"GGUF file {self.where!r}: {what} at byte {self.pos}; the file is corrupt, "
                          "truncated or not GGUF")

    @property
    def remaining(self) -> int:
        return self.size - self.pos

    def _window(self, n: int) -> int:
        """Make bytes [pos, pos+n) available in the window; returns their offset in it."""
        if n < 0 or n > self.remaining:
            raise self.fail(f"a {n}-byte field runs past the end of the file")
        off = self.pos - self._buf_at
        if off < 0 or off + n > len(self._buf):
            self.f.seek(self.pos)
            self._buf = self.f.read(max(n, min(_WINDOW, self.remaining)))
            self._buf_at = self.pos
            off = 0
            if len(self._buf) < n:
                raise self.fail("short read")
        return off

    def read(self, n: int) -> bytes:
        off = self._window(n)
        self.pos += n
        return self._buf[off:off + n]

    def skip(self, n: int) -> None:
        if n < 0 or n > self.remaining:
            raise self.fail(f"skipping {n} bytes runs past the end of the file")
        self.pos += n

    def unpack(self, fmt: str) -> Any:
        st = _STRUCTS[fmt]
        off = self._window(st.size)
        self.pos += st.size
        return st.unpack_from(self._buf, off)[0]

    def string(self, cap: int = _GGUF_MAX_STRING, keep: bool = True) -> str:
        n = self.unpack("<Q")
        if n > cap:
            raise self.fail(f"string of {n} bytes exceeds the {cap}-byte limit")
        if not keep:
            self.skip(n)
            return ""
        kept = min(n, _GGUF_KEEP_STRING)
        text = self.read(kept).decode("utf-8", errors="replace")
        self.skip(n - kept)
        return text

    def skip_strings(self, count: int) -> None:
        """Skip `count` length-prefixed strings (the hot loop of a tokenizer vocabulary: kept tight)."""
        u64 = _STRUCTS["<Q"].unpack_from
        buf, at, pos, size = self._buf, self._buf_at, self.pos, self.size
        for _ in range(count):
            off = pos - at
            if off < 0 or off + 8 > len(buf):
                self.pos = pos
                off = self._window(8)
                buf, at = self._buf, self._buf_at
            n = u64(buf, off)[0]
            pos += 8 + n
            if n > _GGUF_MAX_STRING or pos > size:
                self.pos = pos - 8 - n
                raise self.fail(f"string of {n} bytes runs past the end of the file or the limit")
        self.pos = pos

    def value(self, vtype: int, depth: int = 0) -> Any:
        """A metadata value; arrays are returned as ('array', elem_type, count[, scalar values if short])."""
        if vtype in _GGUF_SCALARS:
            return self.unpack(_GGUF_SCALARS[vtype])
        if vtype == _GGUF_STRING:
            return self.string()
        if vtype == _GGUF_ARRAY:
            if depth > 2:
                raise self.fail("arrays nested too deeply")
            etype = self.unpack("<I")
            count = self.unpack("<Q")
            if etype in _GGUF_SCALARS:
                width = _STRUCTS[_GGUF_SCALARS[etype]].size
                if count > self.remaining // width:
                    raise self.fail(f"array of {count} elements runs past the end of the file")
                if count <= 4096:  # short numeric arrays (per-layer head counts...) are kept
                    raw = self.read(count * width)
                    return list(struct.unpack(f"<{count}{_GGUF_SCALARS[etype][1]}", raw))
                self.skip(count * width)
                return ("array", etype, count)
            if etype == _GGUF_STRING:
                if count > self.remaining // 8 or count > _GGUF_MAX_ARRAY_STRINGS:
                    raise self.fail(f"array of {count} strings runs past the end of the file or the "
                                    f"{_GGUF_MAX_ARRAY_STRINGS:,}-string limit")
                self.skip_strings(count)  # read the lengths, skip the content (tokenizer vocab)
                return ("array", etype, count)
            if etype == _GGUF_ARRAY:
                if count > self.remaining // 12 or count > _GGUF_MAX_KV:
                    raise self.fail(f"array of {count} arrays runs past the end of the file or the "
                                    f"{_GGUF_MAX_KV:,}-array limit")
                for _ in range(count):
                    self.value(_GGUF_ARRAY, depth + 1)
                return ("array", etype, count)
            raise self.fail(f"unknown array element type {etype}")
        raise self.fail(f"unknown metadata value type {vtype}")


_STRUCTS = {fmt: struct.Struct(fmt) for fmt in ("<B", "<b", "<H", "<h", "<I", "<i", "<f", "<?", "<Q", "<q", "<d")}


def read_gguf(path: str | Path) -> GGUFInfo:
    """Parse a GGUF v2/v3 header with bounded reads (format: ggml docs/gguf.md).

    Layout: magic 'GGUF', u32 version, u64 tensor count, u64 metadata count, metadata key/values,
    tensor infos (name, u32 n_dims, u64 dims, u32 ggml type, u64 offset), padding to
    `general.alignment` (default 32), tensor data. Tensor bytes = ceil(elements / block) x block
    bytes for the ggml type (mlrig.quant.GGML_TYPES). A regular file only (never a pipe or device).
    """
    from mlrig.userfiles import parse_open_file

    return parse_open_file(path, "GGUF file", parse_gguf)


def parse_gguf(f: BinaryIO, size: int, where: str) -> GGUFInfo:
    """The header of the GGUF file open as `f` (`size` bytes long); see `read_gguf`."""
    return _parse_gguf(_Reader(f, size, where), where)


def _parse_gguf(r: _Reader, where: str) -> GGUFInfo:
    if r.size < 24 or r.read(4) != b"GGUF":
        raise MlrigError(f"{where!r} is not a GGUF file (bad magic); give a .gguf model file")
    version = r.unpack("<I")
    if version not in (2, 3):
        raise MlrigError(f"GGUF file {where!r} has version {version}; only GGUF v2/v3 are supported")
    n_tensors = r.unpack("<Q")
    n_kv = r.unpack("<Q")
    if n_tensors > r.remaining // 24:
        raise r.fail(f"tensor count {n_tensors} is impossible for the file size")
    if n_tensors > _GGUF_MAX_TENSORS:
        raise r.fail(f"tensor count {n_tensors:,} exceeds the {_GGUF_MAX_TENSORS:,} limit")
    if n_kv > r.remaining // 12:
        raise r.fail(f"metadata count {n_kv} is impossible for the file size")
    if n_kv > _GGUF_MAX_KV:
        raise r.fail(f"metadata count {n_kv:,} exceeds the {_GGUF_MAX_KV:,} limit")
    meta: dict[str, Any] = {}
    vocab: int | None = None
    for _ in range(n_kv):
        key = r.string(cap=65_536)
        vtype = r.unpack("<I")
        val = r.value(vtype)
        if key == "tokenizer.ggml.tokens":
            vocab = val[2] if isinstance(val, tuple) else len(val) if isinstance(val, list) else None
        elif not isinstance(val, tuple):
            meta[key] = val
    tensors: list[GGUFTensor] = []
    for _ in range(n_tensors):
        name = r.string(cap=65_536)
        n_dims = r.unpack("<I")
        if n_dims > _GGUF_MAX_DIMS:
            raise r.fail(f"tensor {name[:60]!r} has {n_dims} dimensions (max {_GGUF_MAX_DIMS})")
        shape = tuple(r.unpack("<Q") for _ in range(n_dims))
        numel = 1
        for d in shape:
            numel *= d
        if numel > MAX_ELEMENTS:
            raise r.fail(f"tensor {name[:60]!r} has an absurd shape {list(shape)}")
        gtype = r.unpack("<I")
        if gtype not in GGML_TYPES:
            raise r.fail(f"tensor {name[:60]!r} has unknown ggml type {gtype}")
        tname, block, block_bytes = GGML_TYPES[gtype]
        if shape and shape[0] % block:
            raise r.fail(f"tensor {name[:60]!r} row of {shape[0]} is not a multiple of the {tname} block")
        offset = r.unpack("<Q")
        tensors.append(GGUFTensor(name, shape, tname, numel, numel // block * block_bytes, offset))
    align = meta.get("general.alignment", 32)
    if not isinstance(align, int) or isinstance(align, bool) or align <= 0 or align > 2**20:
        raise r.fail(f"general.alignment {align!r} is invalid")
    data_offset = -(-r.pos // align) * align
    data_len = r.size - data_offset
    for t in tensors:
        if t.offset + t.n_bytes > data_len:
            raise MlrigError(f"GGUF file {where!r}: tensor {t.name[:60]!r} data runs past the end of the "
                             f"file ({t.offset}+{t.n_bytes} > {data_len}); the file is truncated")
    ft = meta.get("general.file_type")
    arch = meta.get("general.architecture")
    # Built without re-validating: every field was checked above, and validating 100,000 tensor
    # records would cost more than parsing them.
    return GGUFInfo.model_construct(
        path=where, version=version, architecture=arch if isinstance(arch, str) else None, metadata=meta,
        vocab_size=vocab, tensors=tensors, file_bytes=r.size, data_offset=data_offset,
        file_type=GGUF_FILE_TYPES.get(ft) if isinstance(ft, int) else None)


def _gguf_int(info: GGUFInfo, key: str, *, required: bool = True, reduce_max: bool = True) -> int | None:
    """An integer metadata value `{arch}.{key}`; per-layer arrays give their maximum."""
    full = f"{info.architecture}.{key}"
    v = info.metadata.get(full)
    if isinstance(v, list) and v and all(isinstance(x, int) for x in v):
        v = max(v) if reduce_max else v[0]
    if v is None or isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        if required:
            raise MlrigError(f"GGUF file {info.path!r} lacks a positive {full!r}; "
                             "cannot derive the architecture")
        return None
    return v


def arch_from_gguf(info: GGUFInfo) -> ModelArch:
    """ModelArch from GGUF metadata (llama.cpp key names, gguf-py constants Keys.LLM/Attention)."""
    if not info.architecture:
        raise MlrigError(f"GGUF file {info.path!r} lacks general.architecture")
    hidden = _gguf_int(info, "embedding_length")
    heads = _gguf_int(info, "attention.head_count")
    assert hidden is not None and heads is not None
    kv = _gguf_int(info, "attention.head_count_kv", required=False)
    head_dim = _gguf_int(info, "attention.key_length", required=False)
    names = {t.name for t in info.tensors}
    vocab = info.vocab_size or _gguf_int(info, "vocab_size", required=False)
    if vocab is None:
        emb = next((t for t in info.tensors if t.name == "token_embd.weight"), None)
        vocab = emb.shape[1] if emb is not None and len(emb.shape) == 2 else None
    if not vocab:
        raise MlrigError(f"GGUF file {info.path!r}: cannot tell the vocabulary size")
    n_exp = _gguf_int(info, "expert_count", required=False) or 0
    ffn = _gguf_int(info, "feed_forward_length", required=bool(not n_exp))
    expert_ffn = _gguf_int(info, "expert_feed_forward_length", required=False)
    window = _gguf_int(info, "attention.sliding_window", required=False)
    name = info.metadata.get("general.name")
    fmt = info.file_type or info.dominant_type
    notes = [f"from GGUF v{info.version} metadata; {info.params:,} weights in {len(info.tensors)} tensors, "
             f"{info.tensor_bytes:,} bytes ({fmt})"]
    if window:
        notes.append(f"GGUF declares a {window}-token sliding window; the layer layout is not read from GGUF")
    try:
        return ModelArch(
            id=Path(info.path).stem, name=name if isinstance(name, str) else None,
            architecture=info.architecture, model_type=info.architecture,
            hidden_size=hidden, num_layers=_gguf_int(info, "block_count"), num_heads=heads, num_kv_heads=kv,
            head_dim=head_dim, intermediate_size=ffn or expert_ffn or 4 * hidden, vocab_size=vocab,
            tie_word_embeddings="output.weight" not in names,
            num_experts=n_exp, experts_per_token=_gguf_int(info, "expert_used_count", required=False) or 0,
            moe_intermediate_size=expert_ffn,
            max_position_embeddings=_gguf_int(info, "context_length", required=False),
            torch_dtype="bfloat16", weight_bytes=info.tensor_bytes, weight_format=fmt, gguf_packaged=True,
            weight_bytes_by_dtype=info.bytes_by_type, params_in_file=info.params,
            source=f"GGUF file {info.path}", notes=notes,
        )
    except ValueError as exc:
        raise MlrigError(f"GGUF file {info.path!r}: inconsistent metadata "
                         f"({validation_message(exc)})") from None
