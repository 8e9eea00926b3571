"""Issue 15's command-level speed goals, measured: `mlrig eval` lines/s, `fit` over the catalog,
`recommend`.

- eval: a 100,000-line file (`--lines`) of the kind a script writes to sweep a design space: 12
  models x 8 GPUs x 4 precisions x 3 engine choices (none given / vLLM / llama.cpp), each over
  batch 1..64 x context 2k..128k (tokens), plus fine-tuning plans over micro-batch x sequence length;
  written in loop order (one setup's numbers on consecutive lines, as nested loops write them) and
  shuffled (the worst order for eval's chunks: few plans of one shape meet in 1,024 lines). Timed as
  `mlrig eval FILE -o OUT` in a subprocess, end to end, and with the start-up (a 1-line file)
  taken off; in one process (`-j 1`) and with the default worker processes (the CPUs, at most 8).
  Error lines (a plan beyond a model's context, an engine the GPU cannot run) are
  counted: they are results too.
- fit: `mlrig.commands.fit.fit_rows(None, GPU)` in-process after start-up (every catalog model, the
  best precision that fits, limits included), and `mlrig fit --gpu GPU --json` as a subprocess.
- recommend: `mlrig recommend --model llama-3.1-8b --json` as a subprocess.

An installed package has its bytecode compiled (pip writes .pyc files), so, as benchmarks/startup.py
does, the runs drop PYTHONDONTWRITEBYTECODE and the first one writes mlrig's own __pycache__
(git-ignored); `--no-bytecode` keeps the variable, and where no __pycache__ was written before
(delete mlrig's), every start (and every worker, for the modules it imports itself) compiles mlrig
from source, ~60 ms more each here.

Run: python benchmarks/commands.py [--lines N] [--repeats R] [--no-bytecode]. Medians of R runs. The LAST line is
`eval_lines_per_s=<N>` (loop order, start-up taken off). Goals (issue 15): eval >= 20,000 lines/s,
fit < 100 ms after start-up, recommend < 1 s.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable
CLI = [PY, "-c", "import sys; from mlrig.cli import main; sys.argv[0] = 'mlrig'; sys.exit(main())"]
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-32b", "mistral-7b", "gemma-2-9b",
          "llama-3.2-1b", "llama-3.2-3b", "phi-3-mini-4k", "mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-20b"]
GPUS = ["rtx-4090", "rtx-3090", "rtx-5090", "l40s", "a100-sxm-80gb", "h100-sxm-80gb", "mi300x",
        "apple-m2-ultra-76c-192gb"]
PRECISIONS = ["bf16", "fp8", "q4_k_m", "awq"]
ENGINES = [None, "vllm", "llama.cpp"]
BATCHES = [1, 2, 4, 8, 16, 32, 64]
CONTEXTS = [2048, 4096, 8192, 16384, 32768, 65536, 131072]


def plans(n: int) -> list[dict]:
    """n plans in loop order: inference setups x (batch, context), then fine-tuning setups x (micro-batch,
    sequence length), cycling until n."""
    out: list[dict] = []
    setups = itertools.cycle(itertools.product(MODELS, GPUS, PRECISIONS, ENGINES))
    while len(out) < n * 9 // 10:
        model, gpu, precision, engine = next(setups)
        w = {"precision": precision, **({"engine": engine} if engine else {})}
        for batch, context in itertools.product(BATCHES, CONTEXTS):
            out.append({"id": f"i{len(out)}", "model": model, "hardware": {"gpu": gpu},
                        "workload": {**w, "batch_size": batch, "context_tokens": context,
                                     "prompt_tokens": min(1024, context // 2), "output_tokens": 256}})
    tune = itertools.cycle(itertools.product(MODELS[:6], GPUS[:6], ["full", "lora", "qlora"]))
    while len(out) < n:
        model, gpu, method = next(tune)
        for batch, seq in itertools.product([1, 2, 4, 8], [512, 1024, 2048, 4096, 8192]):
            out.append({"id": f"t{len(out)}", "model": model, "hardware": {"gpu": gpu},
                        "workload": {"task": "finetune", "batch_size": batch},
                        "training": {"method": method, "seq_len": seq}})
    return out[:n]


def wall(cmd: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - t)
        if r.returncode not in (0, 1):  # 1: some lines were errors
            raise SystemExit(f"{' '.join(cmd[3:])} failed ({r.returncode}): {r.stderr.decode()[-400:]}")
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-bytecode", action="store_true",
                    help="keep PYTHONDONTWRITEBYTECODE as it is (default: allow .pyc, as an install has)")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.no_bytecode:
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the subprocesses' environment
    rows = plans(args.lines)
    with tempfile.TemporaryDirectory() as tmp:
        ordered, shuffled, one, out = (Path(tmp) / n for n in ("ordered.jsonl", "shuffled.jsonl", "one.jsonl",
                                                                "out.jsonl"))
        ordered.write_text("".join(json.dumps(r) + "\n" for r in rows))
        mixed = rows[:]
        random.Random(0).shuffle(mixed)
        shuffled.write_text("".join(json.dumps(r) + "\n" for r in mixed))
        one.write_text(json.dumps(rows[0]) + "\n")
        warm = Path(tmp) / "warm.jsonl"  # every kind of line: the run that writes the bytecode, untimed
        warm.write_text("".join(json.dumps(r) + "\n" for r in mixed[:2000]))
        wall([*CLI, "eval", str(warm), "-o", str(out), "-j", "1"], 1)
        start = wall([*CLI, "eval", str(one), "-o", str(out)], args.repeats)
        t_one = wall([*CLI, "eval", str(ordered), "-o", str(out), "-j", "1"], args.repeats)
        t_ordered = wall([*CLI, "eval", str(ordered), "-o", str(out)], args.repeats)
        errors = sum(json.loads(x)["error"] is not None for x in out.read_text().splitlines())
        t_shuffled = wall([*CLI, "eval", str(shuffled), "-o", str(out)], 1)
    n = len(rows)
    del rows, mixed  # 100,000 plan dicts alive would slow every garbage collection in the fit timing below
    gc.collect()
    from mlrig.batch import default_jobs

    cached = "PYTHONDONTWRITEBYTECODE" not in os.environ
    print(f"mlrig eval, {n:,} lines ({errors:,} error lines), median of {args.repeats}; start-up "
          f"(a 1-line file) {start * 1e3:.0f} ms; default --jobs here {default_jobs()}; mlrig bytecode "
          f"{'cached' if cached else 'NOT cached'}")
    for label, t in (("loop order, -j 1", t_one), ("loop order", t_ordered), ("shuffled (1 run)", t_shuffled)):
        print(f"  {label:18s} {t:6.2f} s end to end = {n / t:8,.0f} lines/s; start-up taken off "
              f"{n / (t - start):8,.0f} lines/s")

    from mlrig.catalog.gpus import load_gpus
    from mlrig.catalog.models import load_model_catalog
    from mlrig.commands.fit import fit_rows

    load_model_catalog()
    load_gpus()
    for gpu in ("rtx-4090", "h100-sxm-80gb"):
        fit_rows(None, gpu)  # warm: catalog parsed, lazy imports done (what start-up pays)
        times = []
        for _ in range(max(5, args.repeats)):
            t = time.perf_counter()
            rows_shown, _ = fit_rows(None, gpu)
            times.append(time.perf_counter() - t)
        print(f"fit --gpu {gpu}: {len(rows_shown)} models, {statistics.median(times) * 1e3:.0f} ms after start-up "
              f"(median of {len(times)}, in-process); `mlrig fit --gpu {gpu} --json` "
              f"{wall([*CLI, 'fit', '--gpu', gpu, '--json'], args.repeats) * 1e3:.0f} ms wall")
    t_rec = wall([*CLI, "recommend", "--model", "llama-3.1-8b", "--json"], args.repeats)
    print(f"recommend --model llama-3.1-8b --json: {t_rec * 1e3:.0f} ms wall")
    print(f"eval_lines_per_s={n / (t_ordered - start):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
