"""Reading what a page or API call sends: uploads (size-capped), and errors turned into one line that
names the input it is about. Shared by the API routes (app.py) and the pages (pages.py)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from fastapi import UploadFile

from mlrig.errors import AmbiguousNameError, MlrigError, UnknownNameError
from mlrig.web import service

HERE = Path(__file__).resolve().parent


# Plan field -> query parameter, for errors the planner raises about a plan field.
_PLAN_TO_QUERY = {"batch_size": "batch", "prompt_tokens": "prompt", "output_tokens": "output",
                  "context_tokens": "context", "kv_cache_precision": "kv_precision", "gradient_checkpointing":
                  "checkpointing", "zero_stage": "zero", "tensor_parallel": "tp", "pipeline_parallel": "pp",
                  "tokens_to_train": "tokens", "mtbf_hours": "mtbf_h"}


def error_field(exc: MlrigError) -> str | None:
    """The input an error is about, when it can be told: the explicit field, a name's kind, a plan field
    ('invalid plan: workload.batch_size: ...') or a CLI flag ('--min-tok-s must be > 0')."""
    if isinstance(exc, service.FieldError):
        return exc.field
    if isinstance(exc, UnknownNameError | AmbiguousNameError):
        return "gpu" if exc.kind.lower() == "gpu" else exc.kind.lower().replace(" ", "_")
    msg = str(exc)
    if msg.startswith(("invalid plan: ", "invalid input: ")):
        fields = _plan_fields()
        for word in re.findall(r"[a-z_]+", msg.split(": ", 1)[1]):
            if word in fields:
                return _PLAN_TO_QUERY.get(word, word)
        return None
    m = re.search(r"--([a-z][a-z0-9-]*)", msg)
    if m:
        return m.group(1).replace("-", "_")
    m = re.match(r"(?:usage )?(?:\w+\.)*(\w+): ", msg)  # advisor models: 'years: Input should be ...'
    return m.group(1) if m else None


def _plan_fields() -> set[str]:
    from mlrig.workload import HardwareSpec, ModelRef, TrainingSpec, WorkloadSpec

    return {f for spec in (WorkloadSpec, TrainingSpec, HardwareSpec, ModelRef) for f in spec.model_fields}


def validation_error(errors: list[Any]) -> tuple[str, str | None]:
    """One line and the parameter from FastAPI's / pydantic's error list."""
    if not errors:
        return "invalid request", None
    e = errors[0]
    loc = [str(x) for x in e.get("loc", ()) if x not in ("query", "body", "form", "path")]
    field = ".".join(x for x in loc if not x.isdigit()) or None
    if e.get("type") == "extra_forbidden":
        return f"unknown parameter {field!r}; the parameters are the CLI's flags (see /openapi.json)", field
    if e.get("type") == "missing":
        return f"{field} is required", field
    given = e.get("input")
    shown = f" (got {str(given)[:80]!r})" if isinstance(given, str | int | float) else ""
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{field}: {e.get('msg', 'invalid')}{shown}{more}", field


async def read_upload(f: UploadFile, cap: int, field: str) -> bytes:
    """An upload's bytes, refused past `cap` (read in chunks; never more than cap + 1 bytes held)."""
    chunks, n = [], 0
    while chunk := await f.read(2**20):
        n += len(chunk)
        if n > cap:
            raise service.FieldError(field, f"{field} is over {cap:,} bytes; send a smaller file (or its header)")
        chunks.append(chunk)
    return b"".join(chunks)


async def upload_arch(config: UploadFile | None, weights: UploadFile | None, weights_size: int | None) -> Any:
    cfg = await read_upload(config, service.MAX_CONFIG_BYTES, "config") if config and config.filename else None
    wts = (await read_upload(weights, service.MAX_WEIGHTS_HEADER_BYTES, "weights")
           if weights and weights.filename else None)
    return service.arch_from_upload(cfg, config.filename if config else None, wts,
                                    weights.filename if weights else None, weights_size)
