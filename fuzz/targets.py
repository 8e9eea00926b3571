"""Fuzz targets: one function per reader of user input, each taking raw bytes.

A target returns normally or raises `MlrigError` (a clean, one-line rejection). Anything else that
escapes, and an `eval` result whose error says "internal error", is a crash. Each target calls the
same functions the CLI calls on a file's bytes, so what is fuzzed is what users run.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

Target = Callable[[bytes], None]
SEEDS = Path(__file__).resolve().parent / "seeds"

_tmp = Path(tempfile.mkdtemp(prefix="mlrig-fuzz-"))


class InternalError(Exception):
    """A reader reported a bug (an 'internal error' result) instead of raising one."""


def hf_config(data: bytes) -> None:
    """config.json: the loader's JSON parse, then the config → architecture normaliser."""
    from mlrig.catalog.readers.hf_config import arch_from_hf_config
    from mlrig.userfiles import parse_json

    cfg = parse_json(data, "config.json", max_items=1_000_000)
    arch = arch_from_hf_config(cfg, model_id="fuzz", hf_id=None, source="config.json")
    _ = arch.total_params


def safetensors(data: bytes) -> None:
    """A safetensors file: the header reader over the bytes as an open file."""
    from mlrig.catalog.readers.safetensors import parse_safetensors_header

    parse_safetensors_header(io.BytesIO(data), len(data), "model.safetensors")


_shard_dir = _tmp / "sharded"


def _shards() -> None:
    _shard_dir.mkdir(exist_ok=True)
    seed = (SEEDS / "safetensors" / "tiny-bf16.safetensors").read_bytes()
    for name in ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"):
        (_shard_dir / name).write_bytes(seed)


def safetensors_index(data: bytes) -> None:
    """model.safetensors.index.json beside two real shards: the full file path (read, parse, shards)."""
    from mlrig.catalog.readers.safetensors import read_safetensors_index

    path = _shard_dir / "model.safetensors.index.json"
    path.write_bytes(data)
    read_safetensors_index(path)


def gguf(data: bytes) -> None:
    """A GGUF file: the header parser over the bytes as an open file, then the architecture."""
    from mlrig.catalog.readers.gguf import arch_from_gguf, parse_gguf

    info = parse_gguf(io.BytesIO(data), len(data), "model.gguf")
    arch = arch_from_gguf(info)
    _ = arch.total_params, info.params, info.tensor_bytes, info.dominant_type


def _plan(data: object) -> None:
    from mlrig.planner import evaluate, limits, parse_plan

    plan = parse_plan(data)  # type: ignore[arg-type]
    evaluate(plan)
    limits(plan)


def plan_toml(data: bytes) -> None:
    """A TOML plan file: the plan-file reader, then what `mlrig plan --file` runs (evaluate + limits)."""
    from mlrig.planner import load_plan_file

    path = _tmp / "plan.toml"
    path.write_bytes(data)
    _plan(load_plan_file(path))


def plan_json(data: bytes) -> None:
    """A JSON plan file, as `plan_toml`."""
    from mlrig.planner import load_plan_file

    path = _tmp / "plan.json"
    path.write_bytes(data)
    _plan(load_plan_file(path))


def eval_line(data: bytes) -> None:
    """An `mlrig eval` input, read and evaluated as the command does: `mlrig.batch.read_chunks`, each
    chunk through `results_for_lines` (plans of one shape share an array pass, `grid.evaluate_cases`),
    each result encoded as its output line. No result may be missing or report an internal error, and
    every line must be strict JSON."""
    import json

    from mlrig.batch import encode_line, read_chunks, results_for_lines

    for chunk in read_chunks(io.BytesIO(data)):
        results = results_for_lines(chunk)
        if len(results) != len(chunk):
            raise InternalError(f"{len(results)} results for {len(chunk)} lines")
        for result in results:
            err = result.get("error")
            if isinstance(err, str) and err.startswith("internal error"):
                raise InternalError(err)
            json.loads(encode_line(result), parse_constant=_no_constant)


def _no_constant(token: str) -> None:
    raise InternalError(f"non-standard JSON token {token} in an eval result")


def prices(data: bytes) -> None:
    """A price file (`--prices` / the user file): read, merge and validate every entry."""
    from mlrig.advisor.prices import load_prices

    path = _tmp / "prices.toml"
    path.write_bytes(data)
    book = load_prices([], include_user=False, builtin=path)
    book.used_summary()
    book.estimate_keys()


def build(data: bytes) -> None:
    """A build file: read and validate, then `build check` on it."""
    from mlrig.advisor.build import check_build, load_build

    path = _tmp / "build.toml"
    path.write_bytes(data)
    check_build(load_build(path))


TARGETS: dict[str, Target] = {
    "hf_config": hf_config, "safetensors": safetensors, "safetensors_index": safetensors_index, "gguf": gguf,
    "plan_toml": plan_toml, "plan_json": plan_json, "eval_line": eval_line, "prices": prices, "build": build,
}


def setup() -> None:
    """Per-process set-up: no network (an unknown org/name must not reach the Hub), shard files."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["MLRIG_HOME"] = str(_tmp / "home")
    os.environ["XDG_CONFIG_HOME"] = str(_tmp / "config")
    _shards()


def cleanup() -> None:
    shutil.rmtree(_tmp, ignore_errors=True)
