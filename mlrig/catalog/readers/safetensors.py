"""safetensors headers: exact element counts and bytes per dtype, with bounded reads.

The header length is checked against the file size and a cap before anything is allocated; tensor
offsets and shapes are checked against each other. A malformed file raises `MlrigError`.
"""

from __future__ import annotations

import math
import struct
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from mlrig.catalog.readers.hf_config import read_json_file
from mlrig.errors import MlrigError
from mlrig.userfiles import path_exists

# Bytes per element of the safetensors dtypes (huggingface/safetensors safetensors/src/tensor.rs
# `Dtype::bitsize`); F4/F6 are packed sub-byte formats.
SAFETENSORS_DTYPE_BYTES: dict[str, float] = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1, "I16": 2, "U16": 2, "F16": 2,
    "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8, "C64": 8,
    "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75,
}
_SAFETENSORS_HEADER_CAP = 100 * 2**20  # the Rust reader refuses headers over 100 MB too
# JSON values in a header: ~8 per tensor, so room for ~250,000 tensors (the largest single-file
# checkpoints hold a few thousand); bounds the Python objects a crafted header can expand into.
_SAFETENSORS_MAX_ITEMS = 2_000_000
MAX_ELEMENTS = 2**50


class SafetensorsInfo(BaseModel):
    """What one safetensors file (or a sharded set) holds: exact element counts and bytes per dtype."""

    model_config = ConfigDict(defer_build=True)  # built on first use: a config.json never needs it

    paths: list[str]
    num_tensors: int = Field(ge=0)
    params: int = Field(ge=0, description="stored elements (packed quantized tensors count as stored)")
    params_by_dtype: dict[str, int] = Field(default_factory=dict)
    bytes_by_dtype: dict[str, int] = Field(default_factory=dict)
    tensor_bytes: int = Field(ge=0, description="sum of tensor data bytes")
    file_bytes: int = Field(ge=0)
    metadata: dict[str, str] = Field(default_factory=dict)

    @property
    def dominant_dtype(self) -> str | None:
        return max(self.bytes_by_dtype, key=lambda k: self.bytes_by_dtype[k]) if self.bytes_by_dtype else None


def read_safetensors_header(path: str | Path) -> SafetensorsInfo:
    """Parse a safetensors header: u64 little-endian header length, JSON {name: {dtype, shape,
    data_offsets}, "__metadata__": {...}} (format spec: github.com/huggingface/safetensors README).
    Bounded: a regular file only; the length is checked against the file size and a 100 MiB cap
    before reading, and the JSON against a budget of values before parsing."""
    from mlrig.userfiles import parse_open_file

    return parse_open_file(path, "safetensors file", parse_safetensors_header)


def parse_safetensors_header(f: BinaryIO, size: int, where: str) -> SafetensorsInfo:
    """The header of the safetensors file open as `f` (`size` bytes long); see `read_safetensors_header`."""
    from mlrig.userfiles import parse_json

    p = where
    head = f.read(8)
    if len(head) < 8:
        raise MlrigError(f"safetensors file {p!r} is truncated ({size} bytes); re-download it")
    (n,) = struct.unpack("<Q", head)
    if n > _SAFETENSORS_HEADER_CAP or n > size - 8:
        raise MlrigError(f"safetensors file {p!r} declares a {n}-byte header but holds "
                         f"{size} bytes; the file is corrupt or not safetensors")
    raw = f.read(n)
    if len(raw) != n:
        raise MlrigError(f"safetensors file {p!r} is truncated in its header")
    header = parse_json(raw, f"safetensors file {p!r} header", max_items=_SAFETENSORS_MAX_ITEMS)
    if not isinstance(header, dict):
        raise MlrigError(f"safetensors file {p!r}: header must be a JSON object")
    data_len = size - 8 - n
    meta_raw = header.pop("__metadata__", None) or {}
    if not isinstance(meta_raw, dict):
        raise MlrigError(f"safetensors file {p!r}: __metadata__ must be an object")
    metadata = {str(k): str(v)[:1000] for k, v in list(meta_raw.items())[:1000]}
    params_by: dict[str, int] = {}
    bytes_by: dict[str, int] = {}
    for name, t in header.items():
        where = f"safetensors file {p!r}, tensor {str(name)[:80]!r}"
        if not isinstance(t, dict):
            raise MlrigError(f"{where}: entry must be an object")
        dtype = t.get("dtype")
        if not isinstance(dtype, str) or dtype not in SAFETENSORS_DTYPE_BYTES:
            raise MlrigError(f"{where}: unknown dtype {str(dtype)[:20]!r}")
        shape = t.get("shape")
        if not isinstance(shape, list) or len(shape) > 16:
            raise MlrigError(f"{where}: shape must be a list of at most 16 dimensions")
        numel = 1
        for d in shape:
            if isinstance(d, bool) or not isinstance(d, int) or d < 0:
                raise MlrigError(f"{where}: shape {str(shape)[:60]} must hold non-negative integers")
            numel *= d
            if numel > MAX_ELEMENTS:
                raise MlrigError(f"{where}: absurd shape {str(shape)[:60]}")
        offs = t.get("data_offsets")
        if (not isinstance(offs, list) or len(offs) != 2
                or not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise MlrigError(f"{where}: data_offsets must be [begin, end]")
        begin, end = offs
        if not 0 <= begin <= end <= data_len:
            raise MlrigError(f"{where}: data_offsets {str(offs)[:60]} fall outside the {data_len}-byte data section; "
                             "the file is truncated or corrupt")
        expected = math.ceil(numel * SAFETENSORS_DTYPE_BYTES[dtype])
        if end - begin != expected:
            raise MlrigError(f"{where}: holds {end - begin} bytes but {dtype}{str(shape)[:60]} needs {expected}")
        params_by[dtype] = params_by.get(dtype, 0) + numel
        bytes_by[dtype] = bytes_by.get(dtype, 0) + expected
    return SafetensorsInfo(
        paths=[p], num_tensors=len(header), params=sum(params_by.values()), params_by_dtype=params_by,
        bytes_by_dtype=bytes_by, tensor_bytes=sum(bytes_by.values()), file_bytes=size, metadata=metadata)


def read_safetensors_index(path: str | Path) -> SafetensorsInfo:
    """A sharded checkpoint: `model.safetensors.index.json` names the shards; read each header."""
    p = Path(path)
    shards = index_shards(read_json_file(p, "safetensors index"), str(p))
    infos = []
    for s in shards:
        shard = p.parent / s
        if not path_exists(shard):  # not Path.is_file: an over-long shard name raised ENAMETOOLONG
            raise MlrigError(f"shard {s[:80]!r} named by {str(p)!r} is missing; download all shards")
        infos.append(read_safetensors_header(shard))
    return merge_safetensors(infos)


def index_shards(idx: object, where: str) -> list[str]:
    """The shard file names an index's `weight_map` points at (sorted, unique, inside its folder)."""
    wmap = idx.get("weight_map") if isinstance(idx, dict) else None
    if not isinstance(wmap, dict) or not wmap:
        raise MlrigError(f"safetensors index {where!r} lacks a 'weight_map' object")
    if not all(isinstance(v, str) for v in wmap.values()):
        raise MlrigError(f"safetensors index {where!r}: weight_map values must be shard file names")
    shards = sorted(set(wmap.values()))
    if len(shards) > 100_000:
        raise MlrigError(f"safetensors index {where!r} names {len(shards):,} shards (limit 100,000); "
                         "the index is corrupt")
    for s in shards:
        if "/" in s or "\\" in s or "\0" in s or s in (".", "..") or not s or not s.isprintable():
            raise MlrigError(f"safetensors index {where!r} names shard {s[:80]!r} outside its folder")
    return shards


def merge_safetensors(infos: list[SafetensorsInfo]) -> SafetensorsInfo:
    params_by: dict[str, int] = {}
    bytes_by: dict[str, int] = {}
    for i in infos:
        for k, v in i.params_by_dtype.items():
            params_by[k] = params_by.get(k, 0) + v
        for k, v in i.bytes_by_dtype.items():
            bytes_by[k] = bytes_by.get(k, 0) + v
    return SafetensorsInfo(
        paths=[x for i in infos for x in i.paths], num_tensors=sum(i.num_tensors for i in infos),
        params=sum(params_by.values()), params_by_dtype=params_by, bytes_by_dtype=bytes_by,
        tensor_bytes=sum(bytes_by.values()), file_bytes=sum(i.file_bytes for i in infos),
        metadata=infos[0].metadata if infos else {})
