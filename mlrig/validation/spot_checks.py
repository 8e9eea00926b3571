"""Generalisation spot checks: published speed figures for engines the speed model is NOT fitted on.

The efficiency factors (mlrig/estimators/efficiency.py) are fitted only on
mlrig/data/calibration (llama.cpp and 2023 TensorRT-LLM tables). The rows of
mlrig/data/spot_checks.csv are other published measurements (vLLM, SGLang, TensorRT-LLM 1.x, MLC,
ExLlamaV2, HF transformers / eager PyTorch, and llama.cpp's SYCL backend on Intel Arc, where the
calibration has only Vulkan rows), kept aside to see how well the model generalises: they are
NEVER used to fit anything. Each row states its source, date and exact configuration.

Run: `python -m mlrig.validation.spot_checks` (table of measured vs predicted, then median / p90 of
|pred/meas - 1| per engine family).

Metrics (per sequence unless stated):
- decode_tok_s      1 / decode step time at batch `batch_size`, context prompt + output/2.
- tpot_ms           time per output token after the first. At batch 1 one decode step; at a
                    concurrency > 1 the continuous-batching step of `serving_curve`, which spreads
                    the other requests' prefills over the decode steps (as a serving benchmark sees).
- e2e_output_tok_s  output tokens / (prefill + output x decode step): generate() wall time.
- ttft_ms           the prefill pass.
- output_throughput_tok_s  batch x e2e_output_tok_s (all sequences).
"""

from __future__ import annotations

import csv
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from mlrig.errors import MlrigError
from mlrig.validation import ValidationGroup, ValidationRow, summarise
from mlrig.validation.speed import gpu_for, model_for

if TYPE_CHECKING:
    from mlrig.catalog.gpus import GPU
    from mlrig.catalog.models import ModelArch
    from mlrig.workload import Plan

METRICS = ("decode_tok_s", "tpot_ms", "e2e_output_tok_s", "ttft_ms", "output_throughput_tok_s")


def data_path() -> Path:
    """The packaged spot-check table (mlrig/data/spot_checks.csv)."""
    return Path(str(resources.files("mlrig").joinpath("data/spot_checks.csv")))


def read_spot_checks(path: Path | None = None) -> list[dict[str, str]]:
    """The rows of the spot-check CSV (the packaged one unless `path` is given)."""
    with (path or data_path()).open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


class SpotCheck(BaseModel):
    """One published figure next to mlrig's prediction of it."""

    id: str
    engine: str  # mlrig engine family (performance.engine_family of the row's engine name)
    engine_name: str  # as published, with version
    model: str
    gpu: str
    config: str
    metric: str
    unit: str
    measured: float
    predicted: float

    @property
    def ratio(self) -> float:
        return self.predicted / self.measured

    @property
    def error(self) -> float:
        return abs(self.ratio - 1.0)


class SpotCheckReport(BaseModel):
    checks: list[SpotCheck]
    groups: list[ValidationGroup]  # "all", then one per engine family

    def group(self, name: str) -> ValidationGroup:
        return next(g for g in self.groups if g.name == name)


def _int(row: dict[str, str], key: str, default: int = 0) -> int:
    s = row.get(key, "").strip()
    return int(float(s)) if s else default


def resolve_row(row: dict[str, str]) -> tuple[ModelArch, GPU, Plan, str]:
    """Architecture, GPU, plan and engine family of a row; MlrigError when it cannot be mapped."""
    from mlrig.estimators.performance import engine_family
    from mlrig.workload import Plan

    arch, gpu = model_for(row["model"]), gpu_for(row["gpu"])
    if arch is None:
        raise MlrigError(f"{row['id']}: model {row['model']!r} is not in the catalog")
    if gpu is None:
        raise MlrigError(f"{row['id']}: GPU {row['gpu']!r} is not in the catalog")
    n = max(1, _int(row, "num_gpus", 1))
    plan = Plan.model_validate(
        {
            "model": {"name": row["model"]},
            "workload": {
                "precision": row["precision"],
                "engine": row["engine"],
                "batch_size": max(1, _int(row, "batch_size", 1)),
                "prompt_tokens": _int(row, "prompt_tokens"),
                "output_tokens": _int(row, "output_tokens"),
                "flash_attention": "flash-attn off" not in row.get("note", ""),
            },
            "hardware": {"gpu": gpu.id, "count": n, "tensor_parallel": max(1, _int(row, "tensor_parallel", 1))},
        }
    )
    return arch, gpu, plan, engine_family(row["engine"], row["precision"], gpu)


def predict_row(row: dict[str, str]) -> float:
    """mlrig's prediction of one row's metric, from the row's own settings only."""
    from mlrig.estimators.performance import decode_step, prefill_pass, serving_curve

    arch, gpu, plan, _ = resolve_row(row)
    w = plan.workload
    batch, prompt, out = w.batch_size, max(1, w.prompt_tokens), max(1, w.output_tokens)
    ctx = prompt + out // 2
    metric = row["metric"]
    if metric not in METRICS:
        raise MlrigError(f"{row['id']}: unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    if metric == "decode_tok_s":
        return 1.0 / decode_step(arch, plan, gpu, batch, ctx).seconds
    if metric == "tpot_ms":
        if batch == 1:
            return decode_step(arch, plan, gpu, 1, ctx).seconds * 1e3
        return serving_curve(arch, plan, gpu, [batch])[0].tpot_ms
    pre = prefill_pass(arch, plan, gpu, batch, prompt)
    if not pre.compute_known:
        raise MlrigError(f"{row['id']}: the catalog has no compute figure for {gpu.id}")
    if metric == "ttft_ms":
        return pre.seconds * 1e3
    per_seq = out / (pre.seconds + out * decode_step(arch, plan, gpu, batch, ctx).seconds)
    return per_seq if metric == "e2e_output_tok_s" else batch * per_seq


def _config(row: dict[str, str]) -> str:
    tp = _int(row, "tensor_parallel", 1)
    par = f" TP{tp}" if tp > 1 else (f" x{row['num_gpus']}" if _int(row, "num_gpus", 1) > 1 else "")
    return f"{row['precision']}{par} b{row['batch_size']} {row['prompt_tokens']}/{row['output_tokens']}"


def check(row: dict[str, str]) -> SpotCheck:
    _, _, _, family = resolve_row(row)
    return SpotCheck(
        id=row["id"],
        engine=family,
        engine_name=row["engine"],
        model=row["model"],
        gpu=row["gpu"],
        config=_config(row),
        metric=row["metric"],
        unit=row["unit"],
        measured=float(row["value"]),
        predicted=predict_row(row),
    )


def run(path: Path | None = None) -> SpotCheckReport:
    """Every row predicted; groups 'all' and one per engine family (median / p90 of |pred/meas - 1|)."""
    checks = [check(r) for r in read_spot_checks(path)]
    by_engine: dict[str, list[ValidationRow]] = defaultdict(list)
    rows = []
    for c in checks:
        vr = ValidationRow(id=c.id, group=c.engine, predicted=c.predicted, measured=c.measured,
                           note=f"{c.model} {c.config} {c.gpu}")
        rows.append(vr)
        by_engine[c.engine].append(vr)
    groups = [summarise("all", rows)] + [summarise(e, r) for e, r in sorted(by_engine.items())]
    return SpotCheckReport(checks=checks, groups=groups)


def main() -> None:
    report = run()
    mw = max(len("model"), *(len(c.model) for c in report.checks))
    gw = max(len("GPU"), *(len(c.gpu) for c in report.checks))
    head = f"{'id':6s} {'engine (as published)':34s} {'model':{mw}s} {'GPU':{gw}s} {'config':22s} {'metric':17s}"
    print(f"{head} {'measured':>9s} {'predicted':>9s} {'ratio':>6s}")
    for c in report.checks:
        print(f"{c.id:6s} {c.engine_name[:34]:34s} {c.model:{mw}s} {c.gpu:{gw}s} {c.config:22s} {c.metric:17s}"
              f" {c.measured:9.2f} {c.predicted:9.2f} {c.ratio:6.2f}")
    print()
    print("|pred/meas - 1| per engine family (ratio > 1: mlrig predicts more than measured;"
          " for tpot_ms / ttft_ms that means slower)")
    for g in report.groups:
        print(f"  {g.name:14s} n={g.n:3d}  median={g.median_error:6.1%}  p90={g.p90_error:6.1%}")


if __name__ == "__main__":
    main()
