"""Fetch a model's architecture from the Hugging Face Hub: config.json and safetensors metadata only.

Offline first: the local Hugging Face cache (huggingface_hub's `try_to_load_from_cache`) is read before
any network access, `HF_HUB_OFFLINE=1` stops there, and without a network the lookup fails after one
1.5 s connection probe with one line (not after huggingface_hub's retries).

`huggingface_hub` is optional (extra `mlrig[hub]`) and imported lazily. We download config.json
(into the normal HF cache) and read the safetensors headers through `get_safetensors_metadata`
(HTTP range requests; no weights). Remote code is never downloaded or run (no trust_remote_code).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mlrig.catalog.arch import ModelArch
from mlrig.errors import MlrigError

_CONNECT_TIMEOUT_S = 1.5  # a Hub lookup without network must fail in <= 2 s, not after retries
_HTTP_TIMEOUT_S = 5.0


def _unreachable(repo_id: str, why: str) -> MlrigError:
    return MlrigError(
        f"{repo_id} is not in the built-in catalog nor in the local Hugging Face cache, and the Hub could not be "
        f"reached [{why}]; pass a local config.json or model directory, a .gguf or .safetensors file, "
        "or an explicit architecture")


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache as huggingface_hub computes it: $HF_HUB_CACHE, else $HF_HOME/hub, else
    ~/.cache/huggingface/hub (read from the environment on each call, not at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "huggingface")
    return Path(home).expanduser() / "hub"


def cached_config(repo_id: str) -> Path | None:
    """config.json of `repo_id` from the local Hugging Face cache, without any network access
    (huggingface_hub.try_to_load_from_cache: refs/main -> snapshots/<commit>/config.json)."""
    try:
        import huggingface_hub as hfh
    except ImportError:
        return None
    try:
        found = hfh.try_to_load_from_cache(repo_id, "config.json", cache_dir=hf_cache_dir())
    except Exception:  # a malformed id or cache entry: treat as not cached
        return None
    return Path(found) if isinstance(found, str) else None


def _endpoint_reachable() -> str | None:
    """None when the Hub endpoint accepts a TCP connection within _CONNECT_TIMEOUT_S, else why not.
    One quick probe instead of huggingface_hub's retries (which took ~23 s to give up offline)."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"{host}:{port} unreachable: {exc.strerror or type(exc).__name__}"


def fetch_hf_config(repo_id: str) -> ModelArch:
    """ModelArch for a Hub repo: config.json from the local HF cache when it is there (no network), else
    from the Hub (unless HF_HUB_OFFLINE is set), plus exact weight bytes when the repo ships safetensors."""
    from mlrig.catalog.readers.hf_config import arch_from_config_file

    local = cached_config(repo_id)
    if local is not None:
        arch = arch_from_config_file(local, model_id=repo_id, hf_id=repo_id)
        arch.source = f"{local} (local Hugging Face cache of {repo_id})"
        arch.notes.append(f"config.json of {repo_id} read from the local Hugging Face cache ({hf_cache_dir()})")
        return arch
    if _offline():
        raise _unreachable(repo_id, "HF_HUB_OFFLINE is set")
    try:
        import huggingface_hub as hfh
    except ImportError:
        raise _unreachable(repo_id, "huggingface_hub is not installed; pip install 'mlrig[hub]'") from None
    why = _endpoint_reachable()
    if why is not None:
        raise _unreachable(repo_id, why)
    try:
        path = hfh.hf_hub_download(repo_id=repo_id, filename="config.json", etag_timeout=_HTTP_TIMEOUT_S)
    except Exception as exc:  # network, 404, gated repo, ...: all map to one actionable line
        name = type(exc).__name__
        # LocalEntryNotFoundError = "could not connect and not cached": the network, not the id
        if name != "LocalEntryNotFoundError" and ("NotFound" in name or "Gated" in name):
            raise MlrigError(f"Hugging Face repo {repo_id!r} has no accessible config.json ({name}); "
                             "check the id (or log in for gated repos)") from None
        raise _unreachable(repo_id, name) from None

    arch = arch_from_config_file(Path(path), model_id=repo_id, hf_id=repo_id)
    arch.source = f"https://huggingface.co/{repo_id}/blob/main/config.json"
    try:
        meta: Any = hfh.get_safetensors_metadata(repo_id, timeout=_HTTP_TIMEOUT_S)
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
