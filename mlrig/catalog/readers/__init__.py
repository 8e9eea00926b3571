"""Read model architectures from files: HF `config.json`, safetensors headers, GGUF headers; one
module per format (`hf_config`, `safetensors`, `gguf`) and `load_model_path`, which picks the reader.

Everything here treats its input as hostile: reads are bounded, lengths from a file are checked
against the file size and a cap before anything is allocated, nothing is unpickled or executed.
"""

from __future__ import annotations

from pathlib import Path

from mlrig.catalog.arch import ModelArch
from mlrig.catalog.readers.gguf import arch_from_gguf, read_gguf
from mlrig.catalog.readers.hf_config import arch_from_config_file
from mlrig.catalog.readers.safetensors import (
    SafetensorsInfo,
    merge_safetensors,
    read_safetensors_header,
    read_safetensors_index,
)
from mlrig.errors import MlrigError

_SAFETENSORS_FORMATS = {"BF16": "bf16", "F16": "fp16", "F32": "fp32", "F8_E4M3": "fp8", "F8_E5M2": "fp8",
                        "I8": "int8"}


def _with_safetensors(arch: ModelArch, st: SafetensorsInfo) -> ModelArch:
    arch.weight_bytes = st.tensor_bytes
    arch.weight_bytes_by_dtype = dict(st.bytes_by_dtype)
    arch.params_in_file = st.params
    dom = st.dominant_dtype
    arch.weight_format = arch.quant_method or (_SAFETENSORS_FORMATS.get(dom, dom.lower()) if dom else None)
    derived = arch.total_params
    msg = (f"safetensors: {st.params:,} stored elements in {st.num_tensors} tensors, "
           f"{st.tensor_bytes:,} bytes ({', '.join(sorted(st.bytes_by_dtype))})")
    if not arch.quant_method and st.params and abs(st.params - derived) > 0.01 * derived:
        msg += f"; differs from the {derived:,} derived from config.json (extra heads, tied copies?)"
    arch.notes.append(msg)
    return arch


def _safetensors_in(folder: Path) -> SafetensorsInfo | None:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return read_safetensors_index(index)
    files = sorted(folder.glob("*.safetensors"))[:10_000]
    return merge_safetensors([read_safetensors_header(f) for f in files]) if files else None


def load_model_path(path: str | Path) -> ModelArch:
    """A ModelArch from a config.json, a model folder, a .safetensors file or index, or a .gguf file."""
    p = Path(path).expanduser()
    if not p.exists():
        raise MlrigError(f"model path {str(p)!r} does not exist")
    if p.is_dir():
        cfg = p / "config.json"
        if cfg.is_file():
            arch = arch_from_config_file(cfg, model_id=p.name)
            st = _safetensors_in(p)
            return _with_safetensors(arch, st) if st else arch
        ggufs = sorted(p.glob("*.gguf"))
        if len(ggufs) == 1:
            return arch_from_gguf(read_gguf(ggufs[0]))
        raise MlrigError(f"folder {str(p)!r} has no config.json"
                         + (f" and {len(ggufs)} .gguf files; pass one of them" if ggufs else
                            "; pass a folder with config.json, a .gguf file or an explicit architecture"))
    name = p.name.lower()
    if name.endswith(".gguf"):
        return arch_from_gguf(read_gguf(p))
    if name.endswith(".safetensors") or name.endswith(".safetensors.index.json"):
        cfg = p.parent / "config.json"
        if not cfg.is_file():
            raise MlrigError(f"{str(p)!r} holds weights but no architecture: put its config.json beside it, "
                             "or pass a catalog name or an explicit architecture")
        st = read_safetensors_index(p) if name.endswith(".json") else read_safetensors_header(p)
        return _with_safetensors(arch_from_config_file(cfg, model_id=p.parent.name), st)
    if name.endswith(".json"):
        return arch_from_config_file(p)
    raise MlrigError(f"{str(p)!r} is not a config.json, model folder, .safetensors or .gguf file")
