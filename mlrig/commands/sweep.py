"""`mlrig sweep`: the planner over every combination of ranges, one row per configuration.

    mlrig sweep llama-3.1-8b --gpu 'RTX*' --precision bf16,q4_k_m --context 4k..128k --batch 1..64 -o out.csv

Each row is exactly what `mlrig plan` gives for that configuration: rows come from the same
formulas run on arrays of contexts (training: sequence lengths) and batches (`mlrig.grid`, checked equal
to `evaluate` by tests/test_batch.py); the model and each GPU resolved once.
Ranges `A..B` step by powers of two; lists are comma-separated; GPU names may be shell-style patterns
over the catalog's ids and names. Output is CSV (default), JSON Lines or Parquet (with pyarrow
installed), chosen by `--format` or the file's suffix.
A bad configuration is a row with its error; the sweep goes on.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from mlrig.commands._common import setup_options

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch

COLUMNS = ("model", "gpu", "count", "precision", "engine", "task", "context", "batch", "fits", "per_gpu_gib",
           "gpu_capacity_gib", "prefill_tok_s", "decode_tok_s", "ttft_ms", "throughput_tok_s",
           "train_tokens_per_s", "bound", "error")
MAX_CONFIGS = 5_000_000  # a typo in a range should not start a day-long run


def parse_count(text: str, what: str) -> int:
    """'4096', '4k' (4,096: context sizes are powers of two, as model cards write them), '1M', '128'."""
    from mlrig.errors import MlrigError

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*", text)
    if not m:
        raise MlrigError(f"{what}: {text!r} is not a count; write e.g. 4096, 8k or 1M")
    scale = 1_024 if m.group(2) in ("k", "K") else 1_048_576 if m.group(2) in ("m", "M") else 1
    value = int(float(m.group(1)) * scale)
    if value <= 0:
        raise MlrigError(f"{what}: {text!r} must be > 0")
    return value


def parse_range(text: str, what: str) -> list[int]:
    """'1..64' -> 1, 2, 4, ..., 64 (powers of two from A, then B itself); '1,3,8' -> a list; '512'."""
    from mlrig.errors import MlrigError

    values: list[int] = []
    for part in text.split(","):
        if ".." in part:
            lo_s, _, hi_s = part.partition("..")
            lo, hi = parse_count(lo_s, what), parse_count(hi_s, what)
            if hi < lo:
                raise MlrigError(f"{what}: range {part!r} goes down; write LOW..HIGH")
            v = lo
            while v < hi:
                values.append(v)
                v *= 2
            values.append(hi)
        elif part.strip():
            values.append(parse_count(part, what))
    if not values:
        raise MlrigError(f"{what}: empty; give a value, a list (1,2,4) or a range (1..64)")
    return sorted(set(values))


def match_gpus(patterns: str) -> list[GPU]:
    """GPU names or shell-style patterns ('RTX*', 'h100*', '*4090*') over catalog ids and names; a plain
    name resolves as in `mlrig plan` (nearest names suggested when unknown)."""
    import fnmatch

    from mlrig.catalog.gpus import load_gpus, resolve_gpu
    from mlrig.errors import MlrigError

    out: list[GPU] = []
    for pat in (p.strip() for p in patterns.split(",") if p.strip()):
        if any(ch in pat for ch in "*?["):
            low = pat.lower()
            found = [g for g in load_gpus() if fnmatch.fnmatch(g.id.lower(), low)
                     or fnmatch.fnmatch(g.name.lower(), low)
                     or fnmatch.fnmatch(g.name.lower().removeprefix("nvidia ").removeprefix("geforce "), low)]
            if not found:
                raise MlrigError(f"--gpu: no catalog GPU matches {pat!r}; `mlrig gpus` lists them")
            out += found
        else:
            out.append(resolve_gpu(pat))
    return list({g.id: g for g in out}.values())  # in order, each GPU once


def sweep_rows(models: list[str], gpus: list[GPU], precisions: list[str], engines: list[str | None],
               contexts: list[int], batches: list[int], counts: list[int], task: str,
               setup: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Every combination through the planner; the model and GPU objects resolved once. The models are
    resolved here, before the rows are produced, so a misspelt one fails before any row is written.
    `setup`: the serving-setup flags (`_common.SETUP_OPTIONS` names), the same in every row."""
    from mlrig.catalog.models import resolve_model
    from mlrig.commands._common import setup_fields

    archs = [resolve_model(m) for m in models]
    fields = {k: v for k, v in setup_fields(**(setup or {})).items() if v is not None}
    return _combinations(list(zip(models, archs, strict=True)), gpus, precisions, engines, contexts, batches,
                         counts, task, fields)


def _combinations(models: list[tuple[str, ModelArch]], gpus: list[GPU], precisions: list[str],
                  engines: list[str | None], contexts: list[int], batches: list[int], counts: list[int],
                  task: str, setup: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """Each (model, GPU, count, precision, engine) through `mlrig.grid.evaluate_grid`: all its contexts x
    batches at once (the same formulas as `plan`, on arrays; for training, sequence lengths x micro-batches).
    `setup` are plan fields (`_common.setup_fields`) put into every plan."""
    import numpy as np

    from mlrig.errors import MlrigError
    from mlrig.grid import Grid, evaluate_grid
    from mlrig.planner import plan_from_fields

    ctx_b = list(itertools.product(contexts, batches))
    ctx = np.array([c for c, _ in ctx_b], dtype=np.int64)
    bat = np.array([b for _, b in ctx_b], dtype=np.int64)
    out = np.minimum(128, ctx // 4)
    prompt = np.maximum(1, ctx - out)
    for model, arch in models:
        for gpu, count, precision, engine in itertools.product(gpus, counts, precisions, engines):
            workload: dict[str, Any] = {"task": task, "precision": precision}
            if engine:
                workload["engine"] = engine
            plan: dict[str, Any] = {"model": {"name": model}, "workload": workload,
                                    "hardware": {"gpu": gpu.id, "count": count}}
            if task != "inference":
                plan["training"] = {}
            try:
                if setup:
                    plan = plan_from_fields(None, base=plan, **setup)
                grid = evaluate_grid(plan, bat, ctx, prompt, out, arch=arch, gpu=gpu)
            except MlrigError as exc:  # the plan itself is invalid: every row says so
                grid = Grid.empty(len(ctx_b))
                grid.error[:] = str(exc)
            for i, (context, batch) in enumerate(ctx_b):
                yield _grid_row(grid, i, model, gpu, count, precision, engine, task, context, batch)


def _grid_row(grid: Any, i: int, model: str, gpu: GPU, count: int, precision: str, engine: str | None, task: str,
              context: int, batch: int) -> dict[str, Any]:
    """The grid's i-th configuration as a row: GiB to 3 decimals, speeds to 4 significant digits."""
    import math

    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(model=model, gpu=gpu.id, count=count, precision=precision, engine=grid.engine[i] or engine,
               task=task, context=context, batch=batch, error=grid.error[i])
    if grid.error[i] is None:
        row.update(fits=bool(grid.fits[i]), per_gpu_gib=round(float(grid.per_gpu_gib[i]), 3),
                   gpu_capacity_gib=round(float(grid.gpu_capacity_gib[i]), 3))
    if grid.bound[i] is not None:
        for k in ("prefill_tok_s", "decode_tok_s", "ttft_ms", "throughput_tok_s", "train_tokens_per_s"):
            v = float(getattr(grid, k)[i])
            row[k] = None if math.isnan(v) else float(f"{v:.4g}")
        row["bound"] = grid.bound[i]
    return row


def _writer(path: Path | None, fmt: str) -> tuple[Any, Any]:
    """(write(row), close()) for the format; Parquet buffers and writes at the end."""
    import csv
    import json

    from mlrig.errors import MlrigError

    if fmt == "parquet":
        import importlib

        try:  # optional: not a dependency of mlrig
            pa = importlib.import_module("pyarrow")
            pq = importlib.import_module("pyarrow.parquet")
        except ImportError:
            raise MlrigError("Parquet output needs pyarrow (pip install pyarrow); or use CSV / JSON Lines") from None
        if path is None:
            raise MlrigError("Parquet output needs a file: -o sweep.parquet")
        rows: list[dict[str, Any]] = []
        return rows.append, lambda: pq.write_table(pa.Table.from_pylist(rows), str(path))
    f = path.open("w", encoding="utf-8", newline="") if path else sys.stdout
    if fmt == "jsonl":
        return (lambda r: f.write(json.dumps(r) + "\n")), (lambda: f.close() if path else f.flush())
    w = csv.DictWriter(f, fieldnames=COLUMNS)
    w.writeheader()
    return w.writerow, (lambda: f.close() if path else f.flush())


@setup_options
def sweep_cmd(
    models: Annotated[list[str], typer.Argument(help="model(s): catalog names, HF ids or local paths")],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="GPU names or patterns, comma-separated: 'RTX*,h100*'")],
    precision: Annotated[str, typer.Option(
        "--precision", "--quant", "-q", help="comma-separated: bf16,q4_k_m")] = "bf16",
    engine: Annotated[str | None, typer.Option("--engine", "-e", help="comma-separated; default: as plan")] = None,
    context: Annotated[str, typer.Option("--context", "-c", help="tokens per sequence: 4k..128k, 2048,8192")] = "4k",
    batch: Annotated[str, typer.Option("--batch", "-b", help="sequences (inference) or micro-batch: 1..64")] = "1",
    count: Annotated[str, typer.Option("--count", "-n", help="GPUs: 1,2,4,8 or 1..8")] = "1",
    task: Annotated[str, typer.Option("--task", "-t", help="inference | finetune | pretrain")] = "inference",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="file (default: standard output)")] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="csv | jsonl | parquet (default: from -o)")] = None,
    *, setup: dict[str, Any],
) -> None:
    """Sweep the planner over ranges of GPUs, precisions, engines, contexts, batches and GPU counts."""
    from mlrig.errors import MlrigError

    if task not in ("inference", "finetune", "pretrain"):
        raise MlrigError(f"--task takes inference, finetune or pretrain, got {task!r}")
    if output is not None and output.exists() and not output.is_file():
        raise MlrigError(f"--output {str(output)!r} is not a regular file; give a file name such as sweep.csv")
    fmt = (fmt or (output.suffix.lstrip(".").lower() if output else "csv")).replace("json", "jsonl") \
        .replace("jsonll", "jsonl")
    if fmt not in ("csv", "jsonl", "parquet"):
        raise MlrigError(f"--format takes csv, jsonl or parquet, got {fmt!r}")
    gpus = match_gpus(gpu)
    precisions = [p.strip() for p in precision.split(",") if p.strip()]
    engines: list[str | None] = [e.strip() for e in engine.split(",") if e.strip()] if engine else [None]
    for flag, values in (("--gpu", gpus), ("--precision", precisions), ("--engine", engines), ("MODEL", models)):
        if not values:
            raise MlrigError(f"{flag} is empty; give at least one (e.g. --gpu 'RTX 4090', --precision bf16)")
    contexts, batches = parse_range(context, "--context"), parse_range(batch, "--batch")
    counts = parse_range(count, "--count")
    total = len(models) * len(gpus) * len(precisions) * len(engines) * len(contexts) * len(batches) * len(counts)
    if total > MAX_CONFIGS:
        raise MlrigError(f"{total:,} configurations is over the {MAX_CONFIGS:,} limit; narrow a range")
    rows = sweep_rows(models, gpus, precisions, engines, contexts, batches, counts, task, setup)
    write, close = _writer(output, fmt)
    errors = 0
    show = sys.stderr.isatty() and total > 200
    try:
        if show:
            from rich.progress import Progress

            with Progress(transient=True) as bar:
                job = bar.add_task(f"{total:,} configurations", total=total)
                for r in rows:
                    errors += r["error"] is not None
                    write(r)
                    bar.advance(job)
        else:
            for r in rows:
                errors += r["error"] is not None
                write(r)
    finally:
        close()
    if output is not None:
        typer.echo(f"wrote {total:,} configurations to {output} ({errors:,} with an error)", err=True)


def register(app: typer.Typer) -> None:
    app.command("sweep")(sweep_cmd)
