"""Fetch a model's architecture from the Hugging Face Hub: config.json and safetensors metadata only.

`huggingface_hub` is optional (extra `mlrig[hub]`) and imported lazily. We download config.json
(into the normal HF cache) and read the safetensors headers through `get_safetensors_metadata`
(HTTP range requests; no weights). Remote code is never downloaded or run (no trust_remote_code).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mlrig.catalog.models import ModelArch
from mlrig.errors import MlrigError


def _unreachable(repo_id: str, why: str) -> MlrigError:
    return MlrigError(
        f"{repo_id} is not in the built-in catalog and the Hugging Face Hub could not be reached "
        f"(offline?) [{why}]; pass a local config.json or model directory, a .gguf or .safetensors file, "
        "or an explicit architecture")


def fetch_hf_config(repo_id: str) -> ModelArch:
    """ModelArch for a Hub repo: its config.json, plus exact weight bytes when it ships safetensors."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise _unreachable(repo_id, "HF_HUB_OFFLINE is set")
    try:
        import huggingface_hub as hfh
    except ImportError:
        raise _unreachable(repo_id, "huggingface_hub is not installed; pip install 'mlrig[hub]'") from None

    try:
        path = hfh.hf_hub_download(repo_id=repo_id, filename="config.json")
    except Exception as exc:  # network, 404, gated repo, ...: all map to one actionable line
        name = type(exc).__name__
        if "NotFound" in name or "Gated" in name:
            raise MlrigError(f"Hugging Face repo {repo_id!r} has no accessible config.json ({name}); "
                             "check the id (or log in for gated repos)") from None
        raise _unreachable(repo_id, name) from None

    from mlrig.catalog.readers.hf_config import arch_from_config_file

    arch = arch_from_config_file(Path(path), model_id=repo_id, hf_id=repo_id)
    arch.source = f"https://huggingface.co/{repo_id}/blob/main/config.json"
    try:
        meta: Any = hfh.get_safetensors_metadata(repo_id)
    except Exception as exc:  # no safetensors (e.g. GGUF-only repo) or network trouble: config suffices
        arch.notes.append(f"no safetensors metadata from the Hub ({type(exc).__name__}); "
                          "weights sized from the architecture")
        return arch
    _apply_safetensors_metadata(arch, meta)
    return arch


def _apply_safetensors_metadata(arch: ModelArch, meta: Any) -> None:
    """Sum exact tensor bytes per dtype from huggingface_hub's SafetensorsRepoMetadata."""
    from mlrig.catalog.readers.safetensors import SAFETENSORS_DTYPE_BYTES

    by_dtype: dict[str, int] = {}
    params = 0
    for file_meta in getattr(meta, "files_metadata", {}).values():
        for info in getattr(file_meta, "tensors", {}).values():
            n = 1
            for d in info.shape:
                n *= int(d)
            dtype = str(info.dtype)
            nbytes = SAFETENSORS_DTYPE_BYTES.get(dtype)
            if nbytes is None:
                continue
            by_dtype[dtype] = by_dtype.get(dtype, 0) + int(n * nbytes)
            params += n
    if by_dtype:
        arch.weight_bytes_by_dtype = by_dtype
        arch.weight_bytes = sum(by_dtype.values())
        arch.weight_format = max(by_dtype, key=lambda k: by_dtype[k]).lower()
        arch.notes.append(f"safetensors on the Hub: {params:,} stored elements, {arch.weight_bytes:,} bytes")
